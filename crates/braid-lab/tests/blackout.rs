//! A blackout drops every packet during its window and none outside it.
//! UDP probes go one way, client to server, every 2 ms; the blackout is set
//! live, so its start is known to within the `set` call. The emulator judges
//! a probe by the kernel's receive stamp on the veth, which is taken inside
//! the client's `send` (veth hands a frame to its peer synchronously), so
//! each probe's stamp lies between the clock readings just before and just
//! after its `send`: the classification needs no allowance for scheduling.

mod common;

use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{have_root, Lab};

const PROBE_EVERY: Duration = Duration::from_millis(2);
const PROBES: usize = 1500; // 3 s
/// The emulator also drops a frame whose departure from the bottleneck
/// falls in the window (a 32-byte probe at 50 Mbit/s: 5 µs), and maps
/// kernel stamps onto its monotonic clock (µs): 1 ms covers both.
const MARGIN: Duration = Duration::from_millis(1);

/// Moves the calling thread into the lab namespace `ns`.
fn enter(ns: &str) {
    let file = std::fs::File::open(format!("/run/netns/{ns}")).expect("namespace");
    // SAFETY: setns on a valid namespace fd affects only this thread.
    assert_eq!(
        unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) },
        0
    );
}

/// A receive buffer that holds every probe even if the receiving thread
/// is starved for the whole run.
fn big_receive_buffer(sock: &UdpSocket) {
    let bytes: libc::c_int = 8 << 20;
    // SAFETY: setsockopt with a live int of the given size.
    let ret = unsafe {
        libc::setsockopt(
            sock.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUFFORCE,
            (&bytes as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    assert_eq!(ret, 0);
}

#[test]
fn blackout_drops_everything_inside_its_window_and_nothing_outside() {
    if !have_root() {
        return;
    }
    let lab = Lab::up("t-blackout", &["50mbit,5ms"]);
    let server: SocketAddr = (lab.status.server_addr, 7007).into();
    let client_addr = lab.status.paths[0].layout.client_addr;
    let server_ns = lab.status.namespaces.server.clone();
    let done = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let sink = {
        let done = done.clone();
        std::thread::spawn(move || {
            enter(&server_ns);
            let sock = UdpSocket::bind(server).unwrap();
            big_receive_buffer(&sock);
            sock.set_read_timeout(Some(Duration::from_millis(50)))
                .unwrap();
            ready_tx.send(()).unwrap();
            let mut received = vec![false; PROBES];
            let mut buf = [0u8; 64];
            // Reads until the sender is done and the socket has been quiet
            // for a read timeout.
            loop {
                match sock.recv(&mut buf) {
                    Ok(n) if n >= 4 => {
                        let seq = u32::from_be_bytes(buf[..4].try_into().unwrap()) as usize;
                        if let Some(slot) = received.get_mut(seq) {
                            *slot = true;
                        }
                    }
                    Ok(_) => {}
                    Err(_) if done.load(Ordering::Acquire) => break received,
                    Err(_) => {}
                }
            }
        })
    };
    ready_rx.recv().unwrap();
    let client_ns = lab.status.namespaces.client.clone();
    let name = lab.name.clone();
    let (sends, set_window) = std::thread::spawn(move || {
        enter(&client_ns);
        let sock = UdpSocket::bind((client_addr, 0)).unwrap();
        sock.connect(server).unwrap();
        let before_set = Instant::now();
        braid_lab::set(&name, "p1", "50mbit,5ms,blackout=1s+1s").expect("set blackout");
        let after_set = Instant::now();
        let mut sends = Vec::with_capacity(PROBES);
        for seq in 0..PROBES {
            let due = after_set + PROBE_EVERY * seq as u32;
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            let before = Instant::now();
            sock.send(&(seq as u32).to_be_bytes()).unwrap();
            sends.push((before, Instant::now()));
        }
        (sends, (before_set, after_set))
    })
    .join()
    .unwrap();
    // Every probe not dropped reaches the server 5 ms later.
    std::thread::sleep(Duration::from_millis(200));
    done.store(true, Ordering::Release);
    let received = sink.join().unwrap();

    // The window opened between the two readings around `set`, plus 1 s,
    // and closed 1 s later.
    let (start_min, start_max) = (
        set_window.0 + Duration::from_secs(1),
        set_window.1 + Duration::from_secs(1),
    );
    let (end_min, end_max) = (
        set_window.0 + Duration::from_secs(2),
        set_window.1 + Duration::from_secs(2),
    );
    let (mut inside, mut outside) = (0, 0);
    for (seq, (&(before, after), &got)) in sends.iter().zip(&received).enumerate() {
        if after + MARGIN < start_min || before > end_max + MARGIN {
            outside += 1;
            assert!(got, "probe {seq} outside the blackout was lost");
        } else if before > start_max + MARGIN && after + MARGIN < end_min {
            inside += 1;
            assert!(!got, "probe {seq} inside the blackout got through");
        }
    }
    // Each probe lies fully on one side unless a `send` straddled a
    // boundary: most probes must have been judged.
    assert!(
        inside > 400 && outside > 800,
        "inside {inside}, outside {outside}"
    );
    // The lost probes are one run, and the emulator counted each of them as
    // a blackout drop and dropped nothing else.
    let lost: Vec<usize> = (0..PROBES).filter(|s| !received[*s]).collect();
    let run = lost.last().unwrap() - lost.first().unwrap() + 1;
    assert_eq!(run, lost.len(), "lost probes are not one run: {lost:?}");
    let status = braid_lab::status(&lab.name).unwrap();
    let up = &status.paths[0].up.as_ref().unwrap().counters;
    assert_eq!(up.dropped_blackout, lost.len() as u64);
    assert_eq!(up.dropped_loss + up.dropped_queue + up.dropped_limit, 0);
}
