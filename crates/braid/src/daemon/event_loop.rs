//! The loop both daemons run: a task per UDP socket and one for the TUN
//! device feed the core; after each batch the core's output is flushed; a
//! timer task sleeps until the core's next timeout; the control socket
//! answers `braid status`. One thread, so the core sits in a `RefCell`.

use std::cell::RefCell;
use std::net::SocketAddr;
use std::rc::Rc;
use std::time::Duration;

use braid_core::time::Instant;
use braid_io::{PathSocket, RecvBatch, Tun};
use tokio::sync::Notify;
use tracing::{debug, info, warn};

use super::clock::Clock;
use super::control::ControlSocket;
use crate::Failure;

/// Inner packets read from the TUN device before the core's output is
/// flushed: a batch amortizes the flush without delaying a lone packet.
const TUN_BATCH: usize = 64;
/// Largest packet a TUN read returns.
const TUN_BUFFER_BYTES: usize = u16::MAX as usize;

/// The sans-IO side of a daemon: a client's session or a server's endpoint.
pub trait Core {
    /// A datagram that arrived on socket number `socket`.
    fn handle_datagram(&mut self, now: Instant, socket: usize, from: SocketAddr, bytes: &mut [u8]);
    /// An inner packet read from the TUN device.
    fn offer(&mut self, now: Instant, packet: &[u8]);
    /// Everything the core has to say: datagrams to the sockets, inner
    /// packets to the TUN device, events to the log.
    fn flush(&mut self, now: Instant, sockets: &[PathSocket], tun: &Tun);
    fn poll_timeout(&self) -> Option<Instant>;
    fn handle_timeout(&mut self, now: Instant);
    /// The `braid status --json` document.
    fn status(&self, now: Instant) -> String;
}

/// Runs `core` until SIGINT or SIGTERM.
pub async fn run<C: Core + 'static>(
    core: C,
    sockets: Vec<PathSocket>,
    tun: Tun,
    control: ControlSocket,
) -> Result<(), Failure> {
    let core = Rc::new(RefCell::new(core));
    let sockets: Rc<[PathSocket]> = sockets.into();
    let tun = Rc::new(tun);
    let clock = Clock::start();
    let wake = Rc::new(Notify::new());

    for index in 0..sockets.len() {
        let (core, sockets, tun, wake) = (core.clone(), sockets.clone(), tun.clone(), wake.clone());
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
                core.flush(clock.now(), &sockets, &tun);
                wake.notify_one();
            }
        });
    }
    {
        let (core, sockets, tun, wake) = (core.clone(), sockets.clone(), tun.clone(), wake.clone());
        tokio::task::spawn_local(async move {
            let mut buf = vec![0u8; TUN_BUFFER_BYTES];
            loop {
                let n = match tun.recv(&mut buf).await {
                    Ok(n) => n,
                    Err(e) => {
                        warn!("TUN read: {e}");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                };
                let now = clock.now();
                let mut core = core.borrow_mut();
                core.offer(now, &buf[..n]);
                for _ in 1..TUN_BATCH {
                    match tun.try_recv(&mut buf) {
                        Ok(n) => core.offer(now, &buf[..n]),
                        Err(_) => break,
                    }
                }
                core.flush(clock.now(), &sockets, &tun);
                wake.notify_one();
            }
        });
    }
    {
        let (core, sockets, tun, wake) = (core.clone(), sockets.clone(), tun.clone(), wake.clone());
        tokio::task::spawn_local(async move {
            loop {
                let deadline = core.borrow().poll_timeout();
                let Some(at) = deadline else {
                    wake.notified().await;
                    continue;
                };
                tokio::select! {
                    () = tokio::time::sleep_until(clock.deadline(at)) => {
                        let mut core = core.borrow_mut();
                        core.handle_timeout(clock.now());
                        core.flush(clock.now(), &sockets, &tun);
                    }
                    // New input may have moved the deadline.
                    () = wake.notified() => {}
                }
            }
        });
    }
    // A client's first handshake goes out at its first flush.
    core.borrow_mut().flush(clock.now(), &sockets, &tun);
    wake.notify_one();

    let status_core = core.clone();
    let status = Rc::new(move || status_core.borrow().status(clock.now()));
    tokio::select! {
        () = control.serve(status) => {}
        r = super::shutdown_signal() => {
            r.map_err(|e| Failure::Runtime(format!("signals: {e}")))?;
            info!("stopping");
        }
    }
    Ok(())
}
