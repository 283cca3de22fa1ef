//! The round trip through each path is twice its one-way delay, ± 1 ms.

mod common;

use braid_lab::Side;
use common::{have_root, ping_rtts, Lab};

#[test]
fn ping_rtt_is_twice_the_delay_on_every_path() {
    if !have_root() {
        return;
    }
    let delays_ms = [5.0, 20.0, 40.0];
    let lab = Lab::up(
        "t-rtt",
        &["100mbit,5ms", "50mbit,20ms,name=lte", "10mbit/2mbit,40ms"],
    );
    let server = lab.server_addr();
    for (path, delay) in lab.status.paths.iter().zip(delays_ms) {
        let iface = path.layout.client_iface.as_str();
        let out = lab.run(
            Side::Client,
            &["ping", "-n", "-c", "20", "-i", "0.05", "-I", iface, &server],
        );
        let mut rtts = ping_rtts(&out);
        assert_eq!(
            rtts.len(),
            20,
            "path {iface}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        rtts.sort_by(f64::total_cmp);
        // The RTT as ping reports it (mean), its median and its 95th
        // percentile must all be within 1 ms: a single sample delayed by the
        // virtual machine's scheduler does not fail the test, a systematic
        // error or a frequent one does.
        let mean = rtts.iter().sum::<f64>() / rtts.len() as f64;
        for (what, rtt) in [("mean", mean), ("median", rtts[10]), ("p95", rtts[18])] {
            assert!(
                (rtt - 2.0 * delay).abs() <= 1.0,
                "path {iface}: {what} rtt {rtt} ms, configured one-way delay {delay} ms; all: {rtts:?}"
            );
        }
    }
}
