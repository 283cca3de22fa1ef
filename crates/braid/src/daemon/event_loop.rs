//! The loop the daemons and `braid send`/`braid recv` run: a task per UDP
//! socket feeds the core; after each batch the core's output is flushed; a
//! timer task sleeps until the core's next timeout ([`Driver`]). The
//! daemons add a task for the TUN device and the control socket that
//! answers `braid status` ([`run`]). One thread, so the core sits in a
//! `RefCell`.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;

use braid_core::time::Instant;
use braid_io::{
    PathSocket, RecvBatch, SendFailure, TransmitBatch, Tun, TunReadBatch, TunWriteBatch,
};
use tokio::sync::Notify;
use tracing::{debug, info, warn};

use super::clock::Clock;
use super::control::ControlSocket;
use crate::Failure;

/// Inner packets read from the TUN device before the core's output is
/// flushed: a batch amortizes the flush without delaying a lone packet.
/// Reads go on while fewer have come in (one read may bring a 64-KB
/// segment's worth).
const TUN_BATCH: usize = 64;

/// What the socket and timer tasks of a [`Driver`] drive.
pub trait SocketCore {
    /// A datagram that arrived on socket number `socket`.
    fn handle_datagram(&mut self, now: Instant, socket: usize, from: SocketAddr, bytes: &mut [u8]);
    /// Everything the core has to say: datagrams to the sockets, and
    /// whatever else the core produces (inner packets, file data, events).
    fn flush(&mut self, now: Instant, sockets: &[PathSocket]);
    fn poll_timeout(&self) -> Option<Instant>;
    fn handle_timeout(&mut self, now: Instant);
}

/// The sans-IO side of a daemon: a client's session or a server's endpoint.
pub trait Core {
    /// A datagram that arrived on socket number `socket`.
    fn handle_datagram(&mut self, now: Instant, socket: usize, from: SocketAddr, bytes: &mut [u8]);
    /// An inner packet read from the TUN device.
    fn offer(&mut self, now: Instant, packet: &[u8]);
    /// Everything the core has to say: datagrams to the sockets, inner
    /// packets to the TUN device, events to the log.
    fn flush(&mut self, now: Instant, sockets: &[PathSocket], tun: &mut TunWriter);
    fn poll_timeout(&self) -> Option<Instant>;
    fn handle_timeout(&mut self, now: Instant);
    /// The `braid status --json` document (and the metrics' source).
    fn status(&self, now: Instant) -> serde_json::Value;
    /// The daemon is stopping: last words (state to save).
    fn stop(&mut self, _now: Instant) {}
}

/// Where a datagram a core wrote goes.
pub struct Outgoing {
    pub socket: usize,
    pub to: SocketAddr,
    pub len: usize,
}

/// Sends every datagram `next` writes into the space `tx` gives it,
/// consecutive ones for one destination coalesced into GSO sends. `next`
/// says where each goes, `Some(None)` for one not to send, `None` when it
/// has no more. Returns how many datagrams did not go out (each failure is
/// logged at debug level).
pub fn send_datagrams(
    tx: &mut TransmitBatch,
    sockets: &[PathSocket],
    mut next: impl FnMut(&mut [u8]) -> Option<Option<Outgoing>>,
) -> u64 {
    let mut failed = 0;
    let mut count = |sent: Result<(), SendFailure>| {
        if let Err(f) = sent {
            debug!(to = %f.to, datagrams = f.datagrams, "UDP send failed: {}", f.error);
            failed += f.datagrams as u64;
        }
    };
    while let Some(outgoing) = next(tx.space()) {
        if let Some(o) = outgoing {
            count(tx.push(sockets, o.socket, o.to, o.len));
        }
    }
    tx.flush(sockets, |f| count(Err(f)));
    failed
}

/// Inner packets on their way to the TUN device: a core hands each to
/// [`write`](Self::write); they go in one batch when the core is done.
pub struct TunWriter {
    tun: Rc<Tun>,
    batch: TunWriteBatch,
    /// Batch writes of which at least one packet did not go in.
    write_errors: u64,
}

impl TunWriter {
    pub fn write(&mut self, packet: &[u8]) {
        let written = self.batch.push(&self.tun, packet);
        self.count(written);
    }

    fn finish(&mut self) {
        let written = self.batch.flush(&self.tun);
        self.count(written.map(drop));
    }

    fn count(&mut self, written: Result<(), braid_io::TunWriteFailure>) {
        if let Err(f) = written {
            debug!(packets = f.packets, "TUN write failed: {}", f.error);
            self.write_errors += 1;
        }
    }
}

/// A daemon's core with its TUN device, as a [`SocketCore`].
struct WithTun<C> {
    core: C,
    tun: TunWriter,
    /// TUN reads: with offload, fewer than the packets they brought.
    tun_reads: u64,
}

impl<C: Core> WithTun<C> {
    /// The core's status, with what the TUN device saw added under
    /// `daemon`.
    fn status(&self, now: Instant) -> serde_json::Value {
        let mut doc = self.core.status(now);
        if let Some(daemon) = doc["daemon"].as_object_mut() {
            daemon.insert("tun_offload".into(), self.tun.tun.offload().into());
            daemon.insert("tun_rx_reads".into(), self.tun_reads.into());
            daemon.insert("tun_tx_packets".into(), self.tun.batch.queued().into());
            daemon.insert("tun_tx_write_errors".into(), self.tun.write_errors.into());
        }
        doc
    }
}

impl<C: Core> SocketCore for WithTun<C> {
    fn handle_datagram(&mut self, now: Instant, socket: usize, from: SocketAddr, bytes: &mut [u8]) {
        self.core.handle_datagram(now, socket, from, bytes);
    }
    fn flush(&mut self, now: Instant, sockets: &[PathSocket]) {
        self.core.flush(now, sockets, &mut self.tun);
        self.tun.finish();
    }
    fn poll_timeout(&self) -> Option<Instant> {
        self.core.poll_timeout()
    }
    fn handle_timeout(&mut self, now: Instant) {
        self.core.handle_timeout(now);
    }
}

/// A timer this late means this process did not run for a while (a busy
/// or stalled host): datagrams may wait in the sockets since before the
/// deadline.
const LATE_TIMER: Duration = Duration::from_millis(2);

/// At most this many batches per socket are taken before a late timeout,
/// so a flood cannot hold the timer up.
const LATE_BATCHES: usize = 8;

/// Hands the core what waits in the sockets, so that a timeout handled
/// after this process stalled does not take a path that answered during
/// the stall for silent, or a hole for lost, while its answer sits in the
/// socket. Stamped `now`, as the receive task would have.
fn take_waiting(
    core: &mut impl SocketCore,
    now: Instant,
    sockets: &[PathSocket],
    batch: &mut RecvBatch,
) {
    for (index, socket) in sockets.iter().enumerate() {
        for _ in 0..LATE_BATCHES {
            match socket.try_recv(batch) {
                Ok(n) if n > 0 => {
                    batch.for_each_mut(|from, bytes| core.handle_datagram(now, index, from, bytes))
                }
                _ => break,
            }
        }
    }
}

/// A core driven by its sockets and its timer, on the current `LocalSet`.
pub struct Driver<C> {
    core: Rc<RefCell<C>>,
    sockets: Rc<[PathSocket]>,
    clock: Clock,
    wake: Rc<Notify>,
}

impl<C: SocketCore + 'static> Driver<C> {
    /// Spawns a receive task per socket and the timer task, then flushes
    /// once (a client's first handshake goes out then).
    pub fn start(core: C, sockets: Vec<PathSocket>) -> Driver<C> {
        let driver = Driver {
            core: Rc::new(RefCell::new(core)),
            sockets: sockets.into(),
            clock: Clock::start(),
            wake: Rc::new(Notify::new()),
        };
        for index in 0..driver.sockets.len() {
            let (core, sockets, wake) = (
                driver.core.clone(),
                driver.sockets.clone(),
                driver.wake.clone(),
            );
            let clock = driver.clock;
            tokio::task::spawn_local(async move {
                let mut batch = RecvBatch::new();
                loop {
                    if let Err(e) = sockets[index].recv(&mut batch).await {
                        debug!(socket = index, "receive: {e}");
                        continue;
                    }
                    let now = clock.now();
                    let mut core = core.borrow_mut();
                    batch.for_each_mut(|from, bytes| core.handle_datagram(now, index, from, bytes));
                    core.flush(clock.now(), &sockets);
                    wake.notify_one();
                }
            });
        }
        {
            let (core, sockets, wake) = (
                driver.core.clone(),
                driver.sockets.clone(),
                driver.wake.clone(),
            );
            let clock = driver.clock;
            tokio::task::spawn_local(async move {
                let mut batch = RecvBatch::new();
                loop {
                    let deadline = core.borrow().poll_timeout();
                    let Some(at) = deadline else {
                        wake.notified().await;
                        continue;
                    };
                    tokio::select! {
                        () = tokio::time::sleep_until(clock.deadline(at)) => {
                            let mut core = core.borrow_mut();
                            let now = clock.now();
                            if now - at > LATE_TIMER {
                                take_waiting(&mut *core, now, &sockets, &mut batch);
                            }
                            core.handle_timeout(clock.now());
                            core.flush(clock.now(), &sockets);
                        }
                        // New input may have moved the deadline.
                        () = wake.notified() => {}
                    }
                }
            });
        }
        driver.input(|_, _| ());
        driver
    }

    /// Input from elsewhere than the sockets (a TUN device, a file, a
    /// tick): runs `f` on the core, flushes, and re-arms the timer.
    pub fn input<R>(&self, f: impl FnOnce(&mut C, Instant) -> R) -> R {
        let mut core = self.core.borrow_mut();
        let r = f(&mut core, self.clock.now());
        core.flush(self.clock.now(), &self.sockets);
        self.wake.notify_one();
        r
    }

    /// Reads the core without driving it.
    pub fn inspect<R>(&self, f: impl FnOnce(&C, Instant) -> R) -> R {
        f(&self.core.borrow(), self.clock.now())
    }
}

/// Input to a running daemon's core from a task of the caller's (see
/// [`run_with`]).
pub struct CoreHandle<C>(Rc<Driver<WithTun<C>>>);

impl<C> Clone for CoreHandle<C> {
    fn clone(&self) -> Self {
        CoreHandle(self.0.clone())
    }
}

impl<C: Core + 'static> CoreHandle<C> {
    /// Runs `f` on the core and its sockets, then flushes (as
    /// [`Driver::input`]).
    pub fn input<R>(&self, f: impl FnOnce(&mut C, Instant, &[PathSocket]) -> R) -> R {
        let sockets = self.0.sockets.clone();
        self.0.input(|c, now| f(&mut c.core, now, &sockets))
    }
}

/// Runs `core` until SIGINT or SIGTERM, answering `braid status` on
/// `control` and Prometheus scrapes on `metrics`.
pub async fn run<C: Core + 'static>(
    core: C,
    sockets: Vec<PathSocket>,
    tun: Tun,
    control: ControlSocket,
    metrics: Option<tokio::net::TcpListener>,
) -> Result<(), Failure> {
    run_with(core, sockets, tun, control, metrics, |_| ()).await
}

/// [`run`], with `start` given a handle to feed the core input of the
/// caller's own (the client's interface watcher spawns its task with it).
pub async fn run_with<C: Core + 'static>(
    core: C,
    sockets: Vec<PathSocket>,
    tun: Tun,
    control: ControlSocket,
    metrics: Option<tokio::net::TcpListener>,
    start: impl FnOnce(CoreHandle<C>),
) -> Result<(), Failure> {
    let tun = Rc::new(tun);
    let driver = Rc::new(Driver::start(
        WithTun {
            core,
            tun: TunWriter {
                tun: tun.clone(),
                batch: TunWriteBatch::new(),
                write_errors: 0,
            },
            tun_reads: 0,
        },
        sockets,
    ));
    start(CoreHandle(driver.clone()));
    {
        let driver = driver.clone();
        tokio::task::spawn_local(async move {
            let mut batch = TunReadBatch::new(tun.mtu());
            loop {
                if let Err(e) = tun.recv_batch(&mut batch).await {
                    warn!("TUN read: {e}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
                driver.input(|c, now| {
                    let mut offered = 0;
                    loop {
                        c.tun_reads += 1;
                        for packet in batch.packets() {
                            c.core.offer(now, packet);
                            offered += 1;
                        }
                        if offered >= TUN_BATCH || tun.try_recv_batch(&mut batch).is_err() {
                            break;
                        }
                    }
                });
            }
        });
    }
    let status: Rc<dyn Fn() -> serde_json::Value> = {
        let driver = driver.clone();
        Rc::new(move || driver.inspect(|c, now| c.status(now)))
    };
    if let Some(listener) = metrics {
        tokio::task::spawn_local(super::metrics::serve(listener, status.clone()));
    }
    let text = Rc::new(move || format!("{}\n", status()));
    tokio::select! {
        () = control.serve(text) => {}
        r = super::shutdown_signal() => {
            r.map_err(|e| Failure::Runtime(format!("signals: {e}")))?;
            info!("stopping");
        }
    }
    driver.input(|c, now| c.core.stop(now));
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::net::{Ipv4Addr, UdpSocket};

    use super::*;

    /// Records what it was handed.
    #[derive(Default)]
    struct Recorder(Vec<(usize, Vec<u8>)>);

    impl SocketCore for Recorder {
        fn handle_datagram(&mut self, _: Instant, socket: usize, _: SocketAddr, bytes: &mut [u8]) {
            self.0.push((socket, bytes.to_vec()));
        }
        fn flush(&mut self, _: Instant, _: &[PathSocket]) {}
        fn poll_timeout(&self) -> Option<Instant> {
            None
        }
        fn handle_timeout(&mut self, _: Instant) {}
    }

    #[test]
    fn a_late_timer_first_takes_what_waits_in_every_socket() {
        let runtime = crate::daemon::runtime().unwrap();
        runtime.block_on(async {
            let local = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
            let sockets = [
                PathSocket::listen(local).unwrap(),
                PathSocket::listen(local).unwrap(),
            ];
            let peer = UdpSocket::bind(local).unwrap();
            for (socket, byte) in [(1, 1u8), (0, 2), (1, 3)] {
                peer.send_to(&[byte; 10], sockets[socket].local_addr())
                    .unwrap();
            }
            let (mut core, mut batch) = (Recorder::default(), RecvBatch::new());
            // Loopback delivers at once, but give it time on a busy host
            // (the thread sleeps: the runtime sees nothing arrive).
            for _ in 0..500 {
                take_waiting(&mut core, Instant::ZERO, &sockets, &mut batch);
                if core.0.len() == 3 {
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
            core.0.sort();
            assert_eq!(
                core.0,
                vec![(0, vec![2; 10]), (1, vec![1; 10]), (1, vec![3; 10])]
            );
        });
    }
}
