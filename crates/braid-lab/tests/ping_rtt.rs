//! Each path delays every frame by its one-way delay plus serialization, in
//! both directions. The emulator's own record (the kernel's receive stamp
//! of each frame to the moment it sent it) is the measure, with its
//! reported lateness as the only tolerance; ping's round trips, which also
//! hold the stacks' and the scheduler's time, are checked only from below.

mod common;

use std::time::Duration;

use braid_lab::Side;
use common::{assert_held, have_root, ping_rtts, serialization, Lab};

/// An ICMP echo of ping's default 56 data bytes is 84 IP bytes.
const ECHO_IP_BYTES: u64 = 84;
const PINGS: u64 = 20;

#[test]
fn ping_rtt_is_twice_the_delay_on_every_path() {
    if !have_root() {
        return;
    }
    // One-way delay, rate up, rate down.
    let paths = [
        (Duration::from_millis(5), 100_000_000, 100_000_000),
        (Duration::from_millis(20), 50_000_000, 50_000_000),
        (Duration::from_millis(40), 10_000_000, 2_000_000),
    ];
    let lab = Lab::up(
        "t-rtt",
        &["100mbit,5ms", "50mbit,20ms,name=lte", "10mbit/2mbit,40ms"],
    );
    let server = lab.server_addr();
    for (path, (delay, up_bps, down_bps)) in lab.status.paths.iter().zip(paths) {
        let iface = path.layout.client_iface.as_str();
        let out = lab.run(
            Side::Client,
            &["ping", "-n", "-c", "20", "-i", "0.05", "-I", iface, &server],
        );
        let rtts = ping_rtts(&out);
        assert_eq!(
            rtts.len() as u64,
            PINGS,
            "path {iface}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        let (tx_up, tx_down) = (
            serialization(ECHO_IP_BYTES, up_bps),
            serialization(ECHO_IP_BYTES, down_bps),
        );
        // ping prints 3 decimals of a millisecond: 1 µs of rounding.
        let floor_ms = (2 * delay + tx_up + tx_down).as_secs_f64() * 1e3 - 0.001;
        assert!(
            rtts.iter().all(|r| *r >= floor_ms),
            "path {iface}: a round trip below {floor_ms} ms: {rtts:?}"
        );
        let status = braid_lab::status(&lab.name).unwrap();
        let report = status
            .paths
            .iter()
            .find(|p| p.layout.name == path.layout.name)
            .unwrap();
        let (up, down) = (report.up.as_ref().unwrap(), report.down.as_ref().unwrap());
        assert_held(&format!("{iface} up"), &up.held, PINGS, delay, tx_up);
        assert_held(&format!("{iface} down"), &down.held, PINGS, delay, tx_down);
    }
}
