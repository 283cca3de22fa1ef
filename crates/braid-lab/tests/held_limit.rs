//! The emulator holds at most a fixed number of frames per direction, as
//! netem's `limit`: a 10 Gbit/s path with 100 s of delay would otherwise
//! keep every frame of a flood (rate × delay is 125 GB) in memory.

mod common;

use std::net::UdpSocket;
use std::os::fd::AsRawFd;

use braid_lab::emulator::MAX_HELD_FRAMES;
use common::{have_root, Lab};

const DATAGRAMS: usize = 100_000;
const PAYLOAD: usize = 1400;

/// The resident memory of process `pid`, in bytes.
fn resident_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .expect("VmRSS");
    kb * 1024
}

#[test]
fn a_flood_into_a_huge_rate_delay_product_is_held_up_to_the_limit() {
    if !have_root() {
        return;
    }
    let lab = Lab::up("t-limit", &["10gbit,100s"]);
    let server = (lab.status.server_addr, 9);
    let client_addr = lab.status.paths[0].layout.client_addr;
    let client_ns = lab.status.namespaces.client.clone();
    std::thread::spawn(move || {
        let file = std::fs::File::open(format!("/run/netns/{client_ns}")).unwrap();
        // SAFETY: setns on a valid namespace fd affects only this thread.
        assert_eq!(
            unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) },
            0
        );
        let sock = UdpSocket::bind((client_addr, 0)).unwrap();
        sock.connect(server).unwrap();
        let payload = [0u8; PAYLOAD];
        for _ in 0..DATAGRAMS {
            // A full socket buffer only drops datagrams here: fine.
            let _ = sock.send(&payload);
        }
    })
    .join()
    .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    let status = braid_lab::status(&lab.name).unwrap();
    let emulator = status.emulator.as_ref().expect("emulator running");
    let up = status.paths[0].up.as_ref().unwrap();
    assert_eq!(up.settings.held_limit_packets, MAX_HELD_FRAMES);
    // Nothing is due for 100 s: every admitted frame is still held.
    assert_eq!(up.counters.forwarded_packets, 0);
    assert!(
        up.counters.dropped_limit > 0,
        "no frame dropped at the limit: {:?}",
        up.counters
    );
    // Frame buffers are 2 KiB: the held frames, the initial pool and the
    // program itself fit in 96 MiB; without the limit the flood alone
    // would take 200 MiB.
    let rss = resident_bytes(emulator.pid);
    assert!(rss < 96 << 20, "emulator uses {} MiB", rss >> 20);
}
