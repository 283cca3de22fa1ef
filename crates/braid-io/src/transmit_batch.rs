//! Datagrams on their way out, coalesced into GSO sends.
//!
//! A core emits datagrams one at a time. Consecutive ones for the same
//! socket and destination, of one size (the last may be shorter), leave in
//! one `sendmsg` with `UDP_SEGMENT`: the kernel routes and builds the
//! packet once for the whole run, and a device or peer that takes GSO
//! packets (a veth, a NIC) never splits it into single packets at all. At
//! a Gbit/s that is the difference between one system call per packet and
//! one per few dozen.
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

/// Consecutive datagrams for one socket and destination, written by a core
/// into [`space`](Self::space) and handed over with [`push`](Self::push).
pub struct TransmitBatch {
    buf: Box<[u8]>,
    max_segment: usize,
    run: Run,
    sends: u64,
    datagrams: u64,
}

#[derive(Debug, Clone, Copy)]
struct Run {
    socket: usize,
    to: SocketAddr,
    /// Size of every datagram of the run but the last.
    segment: usize,
    count: usize,
    len: usize,
    /// The last datagram was shorter than `segment`: nothing may follow.
    closed: bool,
}

impl TransmitBatch {
    /// A batch that coalesces datagrams of at most `max_segment` bytes.
    pub fn new(max_segment: usize) -> TransmitBatch {
        TransmitBatch {
            buf: vec![0; MAX_RUN_BYTES + MAX_ONE_DATAGRAM].into_boxed_slice(),
            max_segment,
            run: Run {
                socket: 0,
                to: SocketAddr::from(([0, 0, 0, 0], 0)),
                segment: 0,
                count: 0,
                len: 0,
                closed: false,
            },
            sends: 0,
            datagrams: 0,
        }
    }

    /// Where the next datagram goes: [`MAX_ONE_DATAGRAM`] bytes behind the
    /// run that waits to be sent.
    pub fn space(&mut self) -> &mut [u8] {
        &mut self.buf[self.run.len..][..MAX_ONE_DATAGRAM]
    }

    /// Send calls made, and the datagrams they carried (sent or not).
    pub fn counts(&self) -> (u64, u64) {
        (self.sends, self.datagrams)
    }

    /// The datagram of `len` bytes just written into [`space`](Self::space)
    /// goes to `to` on `sockets[socket]`. It joins the waiting run if it
    /// can; otherwise the run is sent (its failure is returned) and the
    /// datagram starts the next one. A socket index out of range fails the
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
        let run = &mut self.run;
        let joins = run.count > 0
            && !run.closed
            && run.socket == socket
            && run.to == to
            && len <= run.segment
            && run.segment <= self.max_segment
            && run.count < target.max_gso_segments()
            && run.len + len <= MAX_RUN_BYTES;
        if joins {
            run.len += len;
            run.count += 1;
            run.closed = len < run.segment;
            return Ok(());
        }
        let start = run.len;
        let sent = self.send_run(sockets);
        self.buf.copy_within(start..start + len, 0);
        self.run = Run {
            socket,
            to,
            segment: len,
            count: 1,
            len,
            closed: false,
        };
        sent
    }

    /// Sends the waiting run.
    pub fn flush(&mut self, sockets: &[PathSocket]) -> Result<(), SendFailure> {
        self.send_run(sockets)
    }

    fn send_run(&mut self, sockets: &[PathSocket]) -> Result<(), SendFailure> {
        let run = self.run;
        self.run.count = 0;
        self.run.len = 0;
        if run.count == 0 {
            return Ok(());
        }
        self.datagrams += run.count as u64;
        self.sends += 1;
        let Some(socket) = sockets.get(run.socket) else {
            return Err(SendFailure {
                to: run.to,
                datagrams: run.count,
                error: no_socket(),
            });
        };
        let contents = &self.buf[..run.len];
        if run.count == 1 {
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
                datagrams: run.count,
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
