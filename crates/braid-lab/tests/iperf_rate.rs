//! TCP through a 20 Mbit/s path carries 20 Mbit/s of IP packets: the payload
//! rate is 20 Mbit/s × MSS / MTU (1448 / 1500 with timestamps), ± 3 %.
//! CUBIC, set explicitly: network namespaces here default to BBR, whose
//! probes for a shorter round trip leave the link idle for moments; four
//! runs of 10 s got 18.58-18.90 Mbit/s with it (one under the 3 %, as in a
//! CI run) and 19.23-19.31 with CUBIC. Still open: on 2026-12-07 this
//! machine also gave CUBIC runs of 16.2-18.6 Mbit/s at idle (5 of 21).

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use braid_lab::Side;
use common::{have_root, Lab};

#[test]
fn iperf3_through_20_mbit_gets_the_payload_share_of_20_mbit() {
    if !have_root() {
        return;
    }
    let lab = Lab::up("t-iperf", &["20mbit,10ms"]);
    let server = lab.server_addr();
    let argv: Vec<String> = ["iperf3", "-s", "-1", "-B", &server]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut iperf_server: std::process::Child =
        braid_lab::exec_command(&lab.name, Side::Server, &argv)
            .unwrap()
            .stdout(Stdio::null())
            .spawn()
            .expect("iperf3 server");
    // The server needs a moment to listen; retry the client until it does.
    let deadline = Instant::now() + Duration::from_secs(5);
    let report = loop {
        let out = lab.run(
            Side::Client,
            &[
                "iperf3", "-c", &server, "-C", "cubic", "-t", "10", "-O", "2", "-J",
            ],
        );
        if out.status.success() || Instant::now() > deadline {
            break out;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = iperf_server.kill();
    let _ = iperf_server.wait();
    let json: serde_json::Value = serde_json::from_slice(&report.stdout).expect("iperf3 JSON");
    let goodput = json["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .unwrap_or_else(|| panic!("no receiver rate in {json}"));
    let expected = 20e6 * 1448.0 / 1500.0;
    assert!(
        (goodput / expected - 1.0).abs() <= 0.03,
        "goodput {:.3} Mbit/s, expected {:.3} Mbit/s ± 3 %",
        goodput / 1e6,
        expected / 1e6
    );
}
