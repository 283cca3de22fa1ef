//! `braid bench` and `braid demo` through the real binary: output shape,
//! and bad input rejected with exit status 2 and a message, never a panic.

use std::process::Command;

fn braid(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_braid"))
        .args(args)
        .output()
        .expect("run braid")
}

/// Runs braid, requires success, and returns its standard output as JSON.
fn braid_json(args: &[&str]) -> serde_json::Value {
    let out = braid(args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON object")
}

#[test]
fn bench_json_has_the_documented_fields() {
    let v = braid_json(&[
        "bench",
        "--path",
        "8mbit,5ms",
        "--path",
        "2mbit,20ms,name=lte",
        "--duration",
        "2s",
        "--json",
    ]);
    for key in [
        "capacity_bps",
        "ideal_goodput_bps",
        "goodput_bps",
        "in_order_goodput_bps",
        "utilization",
        "loss_rate",
        "stall_max_ms",
    ] {
        assert!(v[key].is_number(), "{key} missing");
    }
    for key in ["p50", "p99", "max"] {
        assert!(v["reorder_delay_ms"][key].is_number(), "reorder {key}");
    }
    let paths = v["paths"].as_array().expect("paths");
    assert_eq!(paths.len(), 2);
    assert_eq!(paths[1]["name"], "lte");
    for key in [
        "capacity_bps",
        "sent_bytes",
        "delivered_bytes",
        "throughput_bps",
        "utilization",
        "loss_rate",
    ] {
        assert!(paths[0][key].is_number(), "path {key}");
    }
    assert!(paths[0]["srtt_ms"].is_number());
}

#[test]
fn bench_table_and_demo_run() {
    let out = braid(&["bench", "--path", "8mbit,5ms", "--duration", "1s"]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("capacity") && text.contains("goodput") && text.contains("p1"),
        "{text}"
    );
    let out = braid(&["demo", "--simulated", "--seconds", "2"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("braid: dsl + lte"));
}

#[test]
fn bad_input_exits_2_with_a_message() {
    for args in [
        &["bench", "--path", "8mbit"][..],
        &["bench", "--path", "fast,5ms"],
        &["bench", "--path", "8mbit,5ms", "--scheduler", "fastest"],
        &["bench", "--path", "8mbit,5ms", "--scheduler", "lawrr:k=x"],
        &["bench", "--path", "8mbit,5ms", "--traffic", "cbr"],
        &["bench", "--path", "8mbit,5ms", "--cc", "cubic"],
        &["bench", "--path", "8mbit,5ms", "--duration", "soon"],
        &["bench", "--path", "trace=/nonexistent/trace,5ms"],
        &[
            "bench",
            "--path",
            "8mbit,5ms,name=a",
            "--path",
            "2mbit,5ms,name=a",
        ],
        &["bench"],
        &["bench", "--path", "8mbit,5ms,role=spare"],
        // Roles a run cannot honour.
        &[
            "bench",
            "--path",
            "8mbit,5ms",
            "--path",
            "8mbit,5ms,role=backup",
        ],
        &[
            "bench",
            "--path",
            "8mbit,5ms",
            "--path",
            "8mbit,5ms,role=overflow",
            "--scheduler",
            "rr",
        ],
        &[
            "bench",
            "--mode",
            "reliable",
            "--traffic",
            "bulk:1MB",
            "--path",
            "8mbit,5ms,role=overflow",
        ],
    ] {
        let out = braid(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            !err.is_empty() && !err.contains("panicked"),
            "{args:?}: {err}"
        );
    }
}

/// Runs braid, killing it if it is not done within `limit`: a run that
/// should be refused at once must not be left to use a machine's memory.
fn braid_within(args: &[&str], limit: std::time::Duration) -> std::process::Output {
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_braid"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run braid");
    let start = std::time::Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > limit {
            child.kill().expect("kill");
            child.wait().expect("reap");
            panic!("braid {args:?} still running after {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

fn assert_usage_error(out: &std::process::Output, says: &str, args: &[&str]) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(says), "{args:?}: {err}");
    assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
    assert!(out.stdout.is_empty(), "{args:?} wrote a result");
}

#[test]
fn runs_out_of_proportion_are_refused_before_they_start() {
    let dir = std::env::temp_dir().join(format!("braid-dense-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let dense = dir.join("dense.trace");
    std::fs::write(&dense, "1\n".repeat(100_000)).unwrap();
    let dense_spec = format!("trace={},5ms", dense.display());
    let mut many_paths = vec!["bench", "--duration", "9999999s"];
    for _ in 0..64 {
        many_paths.extend(["--path", "10mbit,5ms"]);
    }
    // Each of these took gigabytes and minutes before it was refused; the
    // refusal is arithmetic on the scenario, so 30 s is ample on a busy
    // 2-core machine.
    let limit = std::time::Duration::from_secs(30);
    for args in [
        &["bench", "--path", "1000gbit,5ms", "--duration", "3s"][..],
        &[
            "bench",
            "--path",
            "10mbit,5ms",
            "--traffic",
            "cbr:1000gbit",
            "--duration",
            "3s",
        ],
        &many_paths,
        &["bench", "--path", &dense_spec],
    ] {
        assert_usage_error(&braid_within(args, limit), "events", &args[..3]);
    }
    // Thousands of sources cost half a megabyte each: 20 000 ran the
    // machine out of memory (an abort, not an error).
    let mut many_sources = vec!["bench", "--path", "10mbit,5ms", "--duration", "1s"];
    for _ in 0..20_000 {
        many_sources.extend(["--traffic", "cbr:1kbit"]);
    }
    assert_usage_error(
        &braid_within(&many_sources, limit),
        "20000 traffic sources: at most 16",
        &many_sources[..3],
    );
    let demo = ["demo", "--simulated", "--seconds", "99999999999"];
    assert_usage_error(&braid_within(&demo, limit), "--seconds", &demo);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_negative_number_is_read_as_a_bad_value_not_as_an_unknown_flag() {
    for flag in ["--seed", "--payload"] {
        let out = braid(&["bench", "--path", "8mbit,5ms", flag, "-1"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains(&format!("invalid value '-1' for '{flag} ")),
            "{err}"
        );
    }
    // A path SPEC or a duration that starts with '-' is a bad value too,
    // with the value's own message, not "unexpected argument '-1'".
    for (args, says) in [
        (&["--path", "-10mbit,5ms"][..], "-10mbit"),
        (&["--path", "8mbit,5ms", "--duration", "-1s"][..], "-1s"),
    ] {
        let out = braid(&[&["bench"][..], args].concat());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(
            err.contains(says) && !err.contains("unexpected argument"),
            "{err}"
        );
    }
}

#[test]
fn misleading_input_gets_a_message_that_says_what_to_write() {
    for (args, says) in [
        (&["--path", "0mbit,5ms"][..], "must be positive"),
        (&["--path", "8mbps,5ms"], "write 8mbit"),
        (&["--path", "8mb,5ms"], "write 8mbit"),
        (&["--path", "8mbit,5ms", "--duration", "2m"], "2min"),
        (
            &["--path", "8mbit,5ms,queue=12297829382473034411"],
            "from 1 to 100000",
        ),
        (&["--path", "8mbit,5ms", "--payload", "1"], "18 to 1454"),
        (&["--path", "8mbit,5ms", "--plot", "x.svg"], "PNG only"),
        (
            &["--path", "8mbit,5ms", "--plot", "/nonexistent-dir/x.png"],
            "is not a directory",
        ),
        (
            &["--path", "8mbit,5ms", "--plot", "/tmp"],
            "/tmp: is a directory",
        ),
        (
            &["--path", "8mbit,5ms", "--plot", "/proc/braid.png"],
            "/proc/braid.png: ",
        ),
        (&["--path", "8mbit,5ms,jitter"], "\"jitter\" has no value"),
        (
            &["--path", "8mbit,5ms", "--scheduler", "lawrr:k=0.5,k=0.7"],
            "parameter k given twice",
        ),
        (
            &["--path", "8mbit,5ms", "--clock-step", "100s+1s"],
            "not within the run",
        ),
    ] {
        let mut all = vec!["bench"];
        all.extend_from_slice(args);
        all.extend(
            ["--duration", "1s"]
                .iter()
                .filter(|_| !args.contains(&"--duration")),
        );
        assert_usage_error(
            &braid_within(&all, std::time::Duration::from_secs(30)),
            says,
            &all,
        );
    }
}

#[test]
fn nothing_delivered_shows_no_delay_not_zero() {
    let args = [
        "bench",
        "--path",
        "8mbit,5ms,blackout=0s+5s",
        "--duration",
        "1s",
    ];
    let v = braid_json(&[&args[..], &["--json"]].concat());
    assert_eq!(v["goodput_bps"], 0.0);
    assert_eq!(v["stall_max_ms"], 1000.0, "the whole run is one stall");
    // The same in reliable mode, where the stall once read 0.
    let reliable = braid_json(
        &[
            &args[..],
            &["--mode", "reliable", "--traffic", "bulk", "--json"],
        ]
        .concat(),
    );
    assert_eq!(reliable["goodput_bps"], 0.0);
    assert_eq!(reliable["stall_max_ms"], 1000.0, "{reliable}");
    assert!(
        v["latency_ms"].is_null() && v["reorder_delay_ms"].is_null(),
        "{v}"
    );
    let table = String::from_utf8_lossy(&braid(&args).stdout).into_owned();
    assert!(
        table.contains("latency p50 -  p99 -") && !table.contains("0.0 ms  p99"),
        "{table}"
    );
}

#[test]
fn a_tunnel_that_comes_up_only_after_the_run_ends_finishes_the_run() {
    // The handshake waits for the dead first path's silence, so the
    // session is up only at about 1.02 s: the sources, due since 0 s, are
    // never due again (the run once stopped there, "made no progress").
    for traffic in ["cbr:50%", "tcp:cubic"] {
        let v = braid_json(&[
            "bench",
            "--path",
            "10mbit,10ms,blackout=0s+10s",
            "--path",
            "10mbit,10ms",
            "--duration",
            "1s",
            "--session",
            "--traffic",
            traffic,
            "--json",
        ]);
        assert_eq!(v["goodput_bps"], 0.0, "{traffic}: {v}");
    }
}

#[test]
fn a_closed_pipe_ends_the_output_quietly() {
    use std::io::{BufRead, BufReader};
    use std::os::unix::process::ExitStatusExt;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_braid"))
        .args(["demo", "--simulated", "--seconds", "1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run braid");
    // `braid demo | head -1`: read one line, then close the pipe.
    let mut first = String::new();
    BufReader::new(child.stdout.take().expect("stdout"))
        .read_line(&mut first)
        .expect("first line");
    assert!(first.starts_with("braid demo"), "{first}");
    let out = child.wait_with_output().expect("wait");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.is_empty(), "{err}");
    // Killed by SIGPIPE at its next write, as `yes | head -1` is; on a
    // machine so loaded that the demo wrote everything into the pipe's
    // buffer before the reader left, it ends normally instead.
    assert!(
        out.status.signal() == Some(libc::SIGPIPE) || out.status.success(),
        "{:?}",
        out.status
    );
}

#[test]
fn a_failed_write_is_one_line_and_exit_1() {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("/dev/full");
    let out = Command::new(env!("CARGO_BIN_EXE_braid"))
        .args(["bench", "--path", "8mbit,5ms", "--duration", "1s", "--json"])
        .stdout(full)
        .output()
        .expect("run braid");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("cannot write output"), "{err}");
}

#[test]
fn the_help_and_readme_trace_example_runs_from_the_repository_alone() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let help = braid(&["bench", "--help"]);
    let example = "trace=traces/TMobile-LTE-short.down,20ms";
    assert!(String::from_utf8_lossy(&help.stdout).contains(example));
    let readme = std::fs::read_to_string(root.join("README.md")).expect("README.md");
    assert!(readme.contains(example) && !readme.contains("../shared"));
    let out = Command::new(env!("CARGO_BIN_EXE_braid"))
        .current_dir(&root)
        .args(["bench", "--path", "10mbit,10ms", "--path", example])
        .args(["--duration", "1s", "--json"])
        .output()
        .expect("run braid");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn bench_clock_flags_take_signed_values_and_reject_bad_ones() {
    let v = braid_json(&[
        "bench",
        "--path",
        "8mbit,5ms",
        "--duration",
        "1s",
        "--clock-offset",
        "-3s",
        "--clock-skew",
        "-100",
        "--clock-step",
        "500ms+-1s",
        "--json",
    ]);
    assert_eq!(v["clock"]["offset_s"], -3.0);
    assert_eq!(v["clock"]["skew_ppm"], -100.0);
    assert_eq!(v["clock"]["step"]["at_s"], 0.5);
    assert_eq!(v["clock"]["step"]["by_s"], -1.0);
    for (flag, value) in [
        ("--clock-offset", "3"),
        ("--clock-skew", "fast"),
        ("--clock-skew", "20000"),
        ("--clock-step", "30s"),
        ("--clock-step", "30s+0s"),
    ] {
        let out = braid(&["bench", "--path", "8mbit,5ms", flag, value]);
        assert_eq!(out.status.code(), Some(2), "{flag} {value}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.starts_with("braid: error: bad clock"),
            "{flag} {value}: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{err}");
    }
}

#[test]
fn bench_session_reports_the_tunnel_and_its_overhead() {
    let args = [
        "bench",
        "--path",
        "8mbit,5ms",
        "--path",
        "2mbit,30ms",
        "--duration",
        "2s",
        "--json",
    ];
    let bare = braid_json(&args);
    let mut with = args.to_vec();
    with.push("--session");
    let v = braid_json(&with);
    assert!(bare.get("session").is_none());
    let sess = &v["session"];
    assert_eq!(sess["overhead_bytes_per_packet"], 66);
    assert_eq!(sess["client_handshakes"], 1);
    assert_eq!(sess["server_sessions"], 1);
    // The session's 20 bytes per packet lower the ideal goodput.
    let ideal = |r: &serde_json::Value| r["ideal_goodput_bps"].as_f64().unwrap();
    let ratio = ideal(&v) / ideal(&bare);
    assert!(
        (ratio - (1400.0 / 1466.0) / (1400.0 / 1446.0)).abs() < 1e-9,
        "{ratio}"
    );
    // A payload too large for the tunnel is a usage error.
    let out = braid(&[
        "bench",
        "--path",
        "8mbit,5ms",
        "--session",
        "--payload",
        "1440",
    ]);
    assert_eq!(out.status.code(), Some(2));
    // A tunnel that never comes up ran no traffic: an error, not figures
    // that read as a clean run (offered 0, loss 0 %). The plot file, tried
    // for writing before the run, is not left behind either.
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("run.png");
    let out = braid(&[
        "bench",
        "--path",
        "8mbit,5ms,loss=0%/100%",
        "--session",
        "--duration",
        "2s",
        "--plot",
        png.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("the tunnel never came up"), "{err}");
    assert!(out.stdout.is_empty());
    assert!(!png.exists(), "an empty plot file was left behind");
}

#[test]
fn costs_and_batcp_weights_are_checked_with_exit_2() {
    for spec in [
        "8mbit,5ms,cost=0",
        "8mbit,5ms,cost=-1",
        "8mbit,5ms,cost=nan",
        "8mbit,5ms,weight_throughput=1.5",
        "8mbit,5ms,weight_cost=-0.1",
        "8mbit,5ms,weight_throughput=0.3,weight_cost=0.3",
    ] {
        let args = ["bench", "--path", spec, "--scheduler", "batcp"];
        let out = braid(&args);
        let says = if spec.contains("cost=") && !spec.contains("weight") {
            "bad cost"
        } else {
            "bad weight"
        };
        assert_usage_error(&out, says, &args);
    }
    let args = [
        "bench",
        "--path",
        "8mbit,5ms",
        "--scheduler",
        "earliest-arrival:cost_first=2",
    ];
    assert_usage_error(&braid(&args), "cost_first", &args);
}

#[test]
fn bench_json_reports_path_liveness() {
    let v = braid_json(&[
        "bench",
        "--path",
        "8mbit,5ms,blackout=1s+500ms",
        "--path",
        "8mbit,20ms",
        "--traffic",
        "cbr:40%",
        "--duration",
        "3s",
        "--json",
    ]);
    assert_eq!(v["path_down_events"], 1);
    assert!(v["probe_packets"].as_u64().expect("probes") >= 1);
    assert!(v["probe_overhead"].is_number());
    let reuse = &v["paths"][0]["time_to_reuse_ms"];
    assert_eq!(reuse["count"], 1);
    assert!(reuse["p50"].as_f64().expect("p50") <= reuse["max"].as_f64().expect("max"));
    assert!(v["paths"][1]["time_to_reuse_ms"].is_null());
}

#[test]
fn reliable_mode_reports_a_verified_transfer() {
    let v = braid_json(&[
        "bench",
        "--mode",
        "reliable",
        "--traffic",
        "bulk:2MB",
        "--path",
        "8mbit,5ms",
        "--path",
        "4mbit,20ms,loss=1%",
        "--cc",
        "bbr,ccid2",
        "--duration",
        "30s",
        "--json",
    ]);
    assert_eq!(v["cc"], "bbr,ccid2");
    assert_eq!(v["transfer_bytes"], 2_000_000);
    assert_eq!(v["read_bytes"], 2_000_000);
    assert!(v["error"].is_null(), "{v}");
    let done = v["completion_s"].as_f64().expect("completed");
    // 2 MB over 12 Mbit/s takes at least 1.33 s; well under 30 s when both paths work.
    assert!(done > 1.3 && done < 5.0, "{done}");
    assert!(v["retransmitted_bytes"].as_u64().expect("number") > 0);
    assert!(v["redundant_bytes"].is_u64());
    assert_eq!(v["loss_rate"], 0.0);
    assert!(v["stall_max_ms"].is_number());
    assert!(v["goodput_bps"].as_f64().unwrap() > 8e6, "{v}");
}

#[test]
fn reliable_mode_input_errors_are_usage_errors() {
    for (args, says) in [
        (&["--mode", "tcp"][..], "unknown --mode"),
        (
            &["--traffic", "bulk:1MB"],
            "bulk traffic needs --mode reliable",
        ),
        (&["--mode", "reliable"], "needs --traffic bulk"),
        (
            &[
                "--mode",
                "reliable",
                "--traffic",
                "bulk:1MB",
                "--payload",
                "900",
            ],
            "--payload is for datagram mode",
        ),
        (
            &[
                "--mode",
                "reliable",
                "--traffic",
                "bulk:1MB",
                "--cc",
                "bbr,ccid2,bbr",
            ],
            "3 controllers for 2 paths",
        ),
        (&["--cc", "bbr,ccid2"], "for --mode reliable only"),
        (
            &[
                "--mode",
                "reliable",
                "--traffic",
                "bulk",
                "--traffic",
                "bulk",
            ],
            "give --traffic bulk[:SIZE] once",
        ),
        (
            &[
                "--mode",
                "reliable",
                "--traffic",
                "bulk",
                "--scheduler",
                "rr",
            ],
            "--scheduler is for datagram mode",
        ),
        (
            &["--mode", "reliable", "--traffic", "bulk", "--unordered"],
            "--unordered is for datagram mode",
        ),
        (
            &["--mode", "reliable", "--traffic", "bulk", "--resend-losses"],
            "--resend-losses is for datagram mode",
        ),
        (
            &["--mode", "reliable", "--traffic", "bulk:1XB"],
            "SIZE is a whole number of B, kB",
        ),
    ] {
        let mut all = vec!["bench", "--path", "8mbit,5ms", "--path", "2mbit,5ms"];
        all.extend_from_slice(args);
        all.extend(["--duration", "1s"]);
        assert_usage_error(
            &braid_within(&all, std::time::Duration::from_secs(30)),
            says,
            &all,
        );
    }
}

/// Closed-loop TCP offers what the bond carries, so the loss the run reports
/// is the bond's own (`elastic`, which this replaced, offered twice the
/// ideal rate and showed 51.5 % loss on this clean path).
#[test]
fn tcp_traffic_fills_a_clean_path_and_its_loss_is_the_bonds() {
    let v = braid_json(&[
        "bench",
        "--path",
        "20mbit,10ms",
        "--traffic",
        "tcp:cubic",
        "--duration",
        "10s",
        "--json",
    ]);
    let loss = v["loss_rate"].as_f64().unwrap();
    assert!(loss < 0.02, "loss {loss}");
    let tcp = &v["flows"][0]["tcp"];
    let util = tcp["utilization"].as_f64().unwrap();
    assert!(util > 0.9, "TCP utilization {util}");
    assert!(v["offered_bps"].as_f64().unwrap() < 1.05 * v["ideal_goodput_bps"].as_f64().unwrap());
    // A round trip is at least the path's 20 ms, and the sender's queue
    // is managed: not seconds of it.
    let rtt = tcp["rtt_ms"]["p50"].as_f64().unwrap();
    assert!((20.0..100.0).contains(&rtt), "RTT p50 {rtt}");
    assert_eq!(tcp["cc"], "cubic");
    assert_eq!(tcp["mss"], 1360);
}

#[test]
fn resend_losses_resends_what_a_lossy_path_drops() {
    let args = |resend: bool| {
        let mut a = vec![
            "bench",
            "--path",
            "10mbit,10ms,loss=2%",
            "--traffic",
            "cbr:50%",
            "--duration",
            "3s",
            "--json",
        ];
        if resend {
            a.push("--resend-losses");
        }
        braid_json(&a)
    };
    let plain = args(false);
    assert_eq!(plain["sender"]["resent"], 0);
    assert!(
        plain["loss_rate"].as_f64().unwrap() > 0.01,
        "{}",
        plain["loss_rate"]
    );
    let resent = args(true);
    assert!(
        resent["sender"]["resent"].as_u64().unwrap() > 10,
        "{}",
        resent["sender"]
    );
    // A re-send is lost too at 2 %: what is left is a few in ten thousand.
    assert!(
        resent["loss_rate"].as_f64().unwrap() < 0.002,
        "{}",
        resent["loss_rate"]
    );
}

/// A small flow beside a bulk TCP flow is not queued behind it: its delay
/// stays near the path's, below what the bulk flow's own packets see (with a
/// FIFO send queue both would see the same queue).
#[test]
fn a_small_flow_beside_bulk_tcp_skips_the_bulk_queue() {
    let v = braid_json(&[
        "bench",
        "--path",
        "20mbit,10ms",
        "--traffic",
        "tcp:reno",
        "--traffic",
        "cbr:64kbit",
        "--duration",
        "10s",
        "--json",
    ]);
    let flows = v["flows"].as_array().unwrap();
    assert_eq!(flows.len(), 2);
    assert_eq!(flows[1]["traffic"], "cbr:64kbit");
    assert!(flows[1]["tcp"].is_null());
    let small = flows[1]["one_way_delay_ms"]["p99"].as_f64().unwrap();
    let bulk = flows[0]["one_way_delay_ms"]["p50"].as_f64().unwrap();
    assert!(small <= 10.0 + 20.0, "small flow p99 {small} ms");
    assert!(small < bulk, "small p99 {small} ms, bulk p50 {bulk} ms");
    let got = flows[1]["goodput_bps"].as_f64().unwrap();
    assert!((got - 64e3).abs() < 64e3 * 0.05, "small flow goodput {got}");
}

/// Beside a bulk TCP flow over a fast and a slow path, a small flow's
/// packets are released as soon as its own previous packet has gone, not
/// after the bulk flow's holes on the slow path (with one global order its
/// p99 was 351 ms here: TCP's losses left holes only a timeout closed),
/// and they leave from the head of the sender's scheduling window, not
/// behind the fast path's lead over the slow one (its p99 was 75 ms, the
/// slow path's delay, before they did): issue 7's bound, the fastest
/// path's delay + 20 ms.
#[test]
fn a_small_flow_is_not_held_behind_the_bulk_flows_holes() {
    let v = braid_json(&[
        "bench",
        "--path",
        "16mbit,5ms",
        "--path",
        "4mbit,50ms",
        "--traffic",
        "tcp:reno",
        "--traffic",
        "cbr:64kbit",
        "--duration",
        "10s",
        "--json",
    ]);
    let flows = v["flows"].as_array().unwrap();
    let small = flows[1]["one_way_delay_ms"]["p99"].as_f64().unwrap();
    let bulk = flows[0]["one_way_delay_ms"]["p99"].as_f64().unwrap();
    assert!(small <= 5.0 + 20.0, "small flow p99 {small} ms");
    assert!(small < bulk, "small p99 {small} ms, bulk p99 {bulk} ms");
    assert!(v["sender"]["sent_express"].as_u64().unwrap() > 0);
    let early = v["reseq"]["delivered_early"].as_u64().unwrap();
    assert!(early > 0, "{}", v["reseq"]);
    assert_eq!(v["reseq"]["delivered_late"], 0);
}

#[test]
fn bad_tcp_traffic_exits_2() {
    for args in [
        &["bench", "--path", "8mbit,5ms", "--traffic", "tcp:vegas"][..],
        &["bench", "--path", "8mbit,5ms", "--traffic", "tcp:0"],
        &["bench", "--path", "8mbit,5ms", "--traffic", "elastic"],
        &[
            "bench",
            "--path",
            "8mbit,5ms",
            "--traffic",
            "tcp",
            "--payload",
            "40",
        ],
        &[
            "bench",
            "--path",
            "8mbit,5ms",
            "--traffic",
            "tcp",
            "--traffic",
            "cbr",
        ],
    ] {
        let out = braid(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.lines().count() == 1 && !err.contains("panicked"),
            "{args:?}: {err}"
        );
    }
}

/// A loss rate without its % sign is ambiguous (0.05 % or a fraction of
/// 5 %?): a usage error that spells out both, not a silent 0.05 %.
#[test]
fn a_loss_rate_without_its_percent_sign_is_a_usage_error() {
    let args = ["bench", "--path", "8mbit,5ms,loss=0.05", "--duration", "1s"];
    assert_usage_error(&braid(&args), "5% for a fraction 0.05", &args);
    let args = [
        "bench",
        "--path",
        "8mbit,5ms,loss=0.05%",
        "--duration",
        "1s",
    ];
    let out = braid(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
