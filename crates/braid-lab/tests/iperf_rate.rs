//! TCP through a 20 Mbit/s path carries 20 Mbit/s of IP packets: the payload
//! rate is 20 Mbit/s × MSS / MTU (1448 / 1500 with timestamps), ± 3 %.
//! CUBIC, set explicitly: network namespaces here default to BBR, whose
//! probes for a shorter round trip leave the link idle for moments; four
//! runs of 10 s got 18.58-18.90 Mbit/s with it and 19.23-19.31 with CUBIC.
//!
//! The floor gives way only by the share of the run in which the emulator
//! itself reports running more than 0.5 ms behind its schedule
//! (`behind_us`). Frames that leave late hold back the acknowledgements
//! that clock the sender, and a long stall empties the link's queue: the
//! link idles, however right its rate, but never longer than the emulator
//! was behind. (Beside `stress-ng --cpu 1`, ten runs were behind for
//! 0.2-2.0 s of 12.2 s in many short delays and still got 19.18-19.31.)
//!
//! This machine's host takes its CPUs away for seconds at a time (steal).
//! 24 runs on 2026-12-07: the 14 the emulator was behind for
//! at most 1.7 % of got 19.23-19.31 Mbit/s, one behind for 3.3 % got 19.07,
//! and the 9 behind for 8-23 % got 17.72-18.86, a loss of 0.22-0.42 of
//! that share; 6 of them fell under a fixed floor of 3 %, as in one CI run.

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
    let behind = || {
        let status = braid_lab::status(&lab.name).unwrap();
        let up = status.paths[0].up.as_ref().expect("an emulated path");
        Duration::from_micros(up.counters.behind_us)
    };
    // The server needs a moment to listen; retry the client until it does.
    let deadline = Instant::now() + Duration::from_secs(5);
    let (report, run, behind) = loop {
        let (behind_before, start) = (behind(), Instant::now());
        let out = lab.run(
            Side::Client,
            &[
                "iperf3", "-c", &server, "-C", "cubic", "-t", "10", "-O", "2", "-J",
            ],
        );
        if out.status.success() || Instant::now() > deadline {
            break (out, start.elapsed(), behind() - behind_before);
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
    let behind_share = behind.as_secs_f64() / run.as_secs_f64();
    let floor = expected * (0.97 - behind_share);
    eprintln!(
        "goodput {:.3} Mbit/s; the emulator behind for {:.3} s of {:.3} s",
        goodput / 1e6,
        behind.as_secs_f64(),
        run.as_secs_f64()
    );
    assert!(
        goodput >= floor && goodput <= expected * 1.03,
        "goodput {:.3} Mbit/s, expected {:.3} Mbit/s + 3 % or - 3 % - {:.1} % \
         (the emulator was behind its schedule for {:.3} s of {:.3} s)",
        goodput / 1e6,
        expected / 1e6,
        behind_share * 100.0,
        behind.as_secs_f64(),
        run.as_secs_f64()
    );
}
