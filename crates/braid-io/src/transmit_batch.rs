//! Datagrams on their way out, coalesced into GSO sends.
//!
//! A core emits datagrams one at a time. Those for one socket and
//! destination, of one size (the last may be shorter), leave in one
//! `sendmsg` with `UDP_SEGMENT`: the kernel routes and builds the packet
//! once for the whole run, and a device or peer that takes GSO packets (a
//! veth, a NIC) never splits it into single packets at all. At a Gbit/s
//! that is the difference between one system call per packet and one per
//! few dozen.
//!
//! A scheduler spreads consecutive datagrams over its paths, so the batch
//! keeps a run open per destination (up to `MAX_OPEN_RUNS`): datagrams
//! for one destination leave in the order they were written; those for
//! different destinations may leave in another order within one flush,
//! which is the same to the receiver (the paths reorder them anyway).
//!
//! A run never holds a datagram larger than `max_segment`: the kernel
//! refuses a GSO send whose segments exceed the device's MTU (rather than
//! fragmenting, as it does for one datagram), so only sizes known to fit go
//! into runs. A GSO send that fails anyway (a device without checksum
//! offload, a smaller MTU than expected) is sent again datagram by
//! datagram, and `quinn-udp` stops offering GSO on that socket.

use std::io;
use std::net::SocketAddr;

use crate::path_socket::PathSocket;

/// Largest run of one GSO send: an IP packet's 16-bit length, less the
/// IPv6 and UDP headers and some room.
const MAX_RUN_BYTES: usize = 65_000;
/// Room after a run for the next datagram a core writes.
const MAX_ONE_DATAGRAM: usize = 2048;

/// Datagrams of one send that did not go out, and why.
#[derive(Debug)]
pub struct SendFailure {
    pub to: SocketAddr,
    pub datagrams: usize,
    pub error: io::Error,
}

/// Datagrams for up to `MAX_OPEN_RUNS` destinations, written by a core
/// into [`space`](Self::space) and handed over with [`push`](Self::push).
pub struct TransmitBatch {
    runs: Vec<Run>,
    /// The run whose tail [`space`](Self::space) lent out last.
    last: usize,
    max_segment: usize,
    sends: u64,
    datagrams: u64,
}

/// Destinations with a run open at once: a client's paths, or a server's
/// busiest clients. A datagram for one more sends a run first.
const MAX_OPEN_RUNS: usize = 8;

/// Datagrams for one socket and destination, back to back in `buf`.
struct Run {
    buf: Box<[u8]>,
    socket: usize,
    to: SocketAddr,
    /// Size of every datagram of the run but the last.
    segment: usize,
    count: usize,
    len: usize,
    /// The last datagram was shorter than `segment`: nothing may follow.
    closed: bool,
}

impl Run {
    fn new() -> Run {
        Run {
            buf: vec![0; MAX_RUN_BYTES + MAX_ONE_DATAGRAM].into_boxed_slice(),
            socket: 0,
            to: SocketAddr::from(([0, 0, 0, 0], 0)),
            segment: 0,
            count: 0,
            len: 0,
            closed: false,
        }
    }

    fn is_for(&self, socket: usize, to: SocketAddr) -> bool {
        self.count > 0 && self.socket == socket && self.to == to
    }

    /// Whether a datagram of `len` bytes may follow the run's datagrams in
    /// one GSO send on `target`.
    fn takes(&self, len: usize, max_segment: usize, target: &PathSocket) -> bool {
        !self.closed
            && len <= self.segment
            && self.segment <= max_segment
            && self.count < target.max_gso_segments()
            && self.len + len <= MAX_RUN_BYTES
    }

    /// Appends the datagram that sits at the end of `buf`.
    fn extend(&mut self, len: usize) {
        self.len += len;
        self.count += 1;
        self.closed = len < self.segment;
    }

    /// Starts the run afresh with the datagram at the start of `buf`.
    fn start(&mut self, socket: usize, to: SocketAddr, len: usize) {
        *self = Run {
            buf: std::mem::take(&mut self.buf),
            socket,
            to,
            segment: len,
            count: 1,
            len,
            closed: false,
        };
    }
}

impl TransmitBatch {
    /// A batch that coalesces datagrams of at most `max_segment` bytes.
    pub fn new(max_segment: usize) -> TransmitBatch {
        TransmitBatch {
            runs: vec![Run::new()],
            last: 0,
            max_segment,
            sends: 0,
            datagrams: 0,
        }
    }

    /// Where the next datagram goes: `MAX_ONE_DATAGRAM` bytes behind the
    /// run last written to (where it stays if it joins that run).
    pub fn space(&mut self) -> &mut [u8] {
        let run = &mut self.runs[self.last];
        &mut run.buf[run.len..][..MAX_ONE_DATAGRAM]
    }

    /// Send calls made, and the datagrams they carried (sent or not).
    pub fn counts(&self) -> (u64, u64) {
        (self.sends, self.datagrams)
    }

    /// The datagram of `len` bytes just written into [`space`](Self::space)
    /// goes to `to` on `sockets[socket]`. It joins that destination's open
    /// run if it can; otherwise that run (or, with no room for another,
    /// some other destination's) is sent, and its failure returned, and the
    /// datagram starts a run. A socket index out of range fails the
    /// datagram at once.
    pub fn push(
        &mut self,
        sockets: &[PathSocket],
        socket: usize,
        to: SocketAddr,
        len: usize,
    ) -> Result<(), SendFailure> {
        let refused = |error| {
            Err(SendFailure {
                to,
                datagrams: 1,
                error,
            })
        };
        if len > MAX_ONE_DATAGRAM {
            return refused(io::Error::new(
                io::ErrorKind::InvalidInput,
                "datagram longer than the space given for it",
            ));
        }
        let Some(target) = sockets.get(socket) else {
            return refused(no_socket());
        };
        let from = self.last;
        let at = self.runs[from].len;
        let open = self.runs.iter().position(|r| r.is_for(socket, to));
        if let Some(i) = open {
            if self.runs[i].takes(len, self.max_segment, target) {
                if i != from {
                    self.move_datagram(from, at, len, i, self.runs[i].len);
                }
                self.runs[i].extend(len);
                self.last = i;
                return Ok(());
            }
        }
        // A run to start: this destination's (sent first), an empty one,
        // a new one, or the fullest (sent first).
        let i = open
            .or_else(|| self.runs.iter().position(|r| r.count == 0))
            .unwrap_or_else(|| {
                if self.runs.len() < MAX_OPEN_RUNS {
                    self.runs.push(Run::new());
                    self.runs.len() - 1
                } else {
                    (0..self.runs.len())
                        .max_by_key(|&k| self.runs[k].len)
                        .unwrap_or(0)
                }
            });
        let sent = self.send_run(i, sockets);
        self.move_datagram(from, at, len, i, 0);
        self.runs[i].start(socket, to, len);
        self.last = i;
        sent
    }

    /// Copies the `len` bytes at `at` in run `from`'s buffer to `to_at` in
    /// run `to`'s (the same run: moves them within it).
    fn move_datagram(&mut self, from: usize, at: usize, len: usize, to: usize, to_at: usize) {
        let (source, target) = match from.cmp(&to) {
            std::cmp::Ordering::Equal => {
                self.runs[from].buf.copy_within(at..at + len, to_at);
                return;
            }
            std::cmp::Ordering::Less => {
                let (low, high) = self.runs.split_at_mut(to);
                (&low[from], &mut high[0])
            }
            std::cmp::Ordering::Greater => {
                let (low, high) = self.runs.split_at_mut(from);
                (&high[0], &mut low[to])
            }
        };
        target.buf[to_at..to_at + len].copy_from_slice(&source.buf[at..at + len]);
    }

    /// Sends every open run; each run that failed is passed to `failed`.
    pub fn flush(&mut self, sockets: &[PathSocket], mut failed: impl FnMut(SendFailure)) {
        for i in 0..self.runs.len() {
            if let Err(f) = self.send_run(i, sockets) {
                failed(f);
            }
        }
    }

    fn send_run(&mut self, i: usize, sockets: &[PathSocket]) -> Result<(), SendFailure> {
        let run = &mut self.runs[i];
        let (count, len) = (run.count, run.len);
        run.count = 0;
        run.len = 0;
        if count == 0 {
            return Ok(());
        }
        self.datagrams += count as u64;
        self.sends += 1;
        let Some(socket) = sockets.get(run.socket) else {
            return Err(SendFailure {
                to: run.to,
                datagrams: count,
                error: no_socket(),
            });
        };
        let contents = &run.buf[..len];
        if count == 1 {
            return socket
                .try_send(run.to, contents, None)
                .map_err(|error| SendFailure {
                    to: run.to,
                    datagrams: 1,
                    error,
                });
        }
        match socket.try_send(run.to, contents, Some(run.segment)) {
            Ok(()) => Ok(()),
            // A full socket buffer refuses the datagrams one by one as well.
            Err(error) if error.kind() == io::ErrorKind::WouldBlock => Err(SendFailure {
                to: run.to,
                datagrams: count,
                error,
            }),
            Err(_) => {
                let mut failed = 0;
                let mut last_error = None;
                for datagram in contents.chunks(run.segment) {
                    self.sends += 1;
                    if let Err(e) = socket.try_send(run.to, datagram, None) {
                        failed += 1;
                        last_error = Some(e);
                    }
                }
                match last_error {
                    None => Ok(()),
                    Some(error) => Err(SendFailure {
                        to: run.to,
                        datagrams: failed,
                        error,
                    }),
                }
            }
        }
    }
}

fn no_socket() -> io::Error {
    io::Error::new(io::ErrorKind::NotFound, "no socket for this path")
}

#[cfg(test)]
mod tests;
