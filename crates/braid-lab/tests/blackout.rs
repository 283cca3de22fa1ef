//! A blackout drops every packet during its window and none outside it.
//! UDP probes every 2 ms through the path, echoed by the server; the blackout
//! is set live, so its start is known to within the `set` call.

mod common;

use std::net::{SocketAddr, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use common::{have_root, Lab};

const DELAY: Duration = Duration::from_millis(5);
const PROBE_EVERY: Duration = Duration::from_millis(2);
/// Room for the stacks and the emulator's wake-up around each boundary.
const MARGIN: Duration = Duration::from_millis(3);

/// Moves the calling thread into the lab namespace `ns`.
fn enter(ns: &str) {
    let file = std::fs::File::open(format!("/run/netns/{ns}")).expect("namespace");
    // SAFETY: setns on a valid namespace fd affects only this thread.
    assert_eq!(
        unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) },
        0
    );
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
    let echo = std::thread::spawn(move || {
        enter(&server_ns);
        let sock = UdpSocket::bind(server).unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
        let mut buf = [0u8; 64];
        while let Ok((n, from)) = sock.recv_from(&mut buf) {
            sock.send_to(&buf[..n], from).unwrap();
        }
    });
    let client_ns = lab.status.namespaces.client.clone();
    let name = lab.name.clone();
    let (sent_at, received, set_window) = std::thread::spawn(move || {
        enter(&client_ns);
        let sock = UdpSocket::bind((client_addr, 0)).unwrap();
        sock.connect(server).unwrap();
        sock.set_nonblocking(true).unwrap();
        let before_set = Instant::now();
        braid_lab::set(&name, "p1", "50mbit,5ms,blackout=1s+1s").expect("set blackout");
        let after_set = Instant::now();
        let total = 1500usize; // 3 s of probes
        let mut sent_at = Vec::with_capacity(total);
        let mut received = vec![false; total];
        let mut buf = [0u8; 64];
        let mut drain = |received: &mut Vec<bool>| {
            while let Ok(n) = sock.recv(&mut buf) {
                let seq = u32::from_be_bytes(buf[..n.min(4)].try_into().unwrap()) as usize;
                received[seq] = true;
            }
        };
        for seq in 0..total {
            let due = after_set + PROBE_EVERY * seq as u32;
            while Instant::now() < due {
                drain(&mut received);
                std::thread::sleep(Duration::from_micros(200));
            }
            sent_at.push(Instant::now());
            sock.send(&(seq as u32).to_be_bytes()).unwrap();
        }
        let end = Instant::now() + Duration::from_millis(200);
        while Instant::now() < end {
            drain(&mut received);
            std::thread::sleep(Duration::from_millis(1));
        }
        (sent_at, received, (before_set, after_set))
    })
    .join()
    .unwrap();
    echo.join().unwrap();
    let (start_min, start_max) = (
        set_window.0 + Duration::from_secs(1),
        set_window.1 + Duration::from_secs(1),
    );
    let (end_min, end_max) = (
        set_window.0 + Duration::from_secs(2),
        set_window.1 + Duration::from_secs(2),
    );
    let (mut inside, mut outside) = (0, 0);
    for (seq, (&sent, &got)) in sent_at.iter().zip(&received).enumerate() {
        // The probe and its echo both cross before the window opens, or the
        // probe crosses after it closed: it must arrive.
        let before = sent + 2 * DELAY + MARGIN < start_min;
        let after = sent > end_max + MARGIN;
        // The probe itself reaches the emulator inside the window: lost.
        let during = sent > start_max + MARGIN && sent + MARGIN < end_min;
        if before || after {
            outside += 1;
            assert!(got, "probe {seq} outside the blackout was lost");
        } else if during {
            inside += 1;
            assert!(!got, "probe {seq} inside the blackout got through");
        }
    }
    assert!(
        inside > 450 && outside > 900,
        "inside {inside}, outside {outside}"
    );
    let status = braid_lab::status(&lab.name).unwrap();
    let up = status.paths[0].up.as_ref().unwrap();
    assert!(up.counters.dropped_blackout >= inside as u64);
}
