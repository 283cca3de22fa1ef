//! `braid bench` and `braid demo` through the real binary: output shape,
//! and bad input rejected with exit status 2 and a message, never a panic.

use std::process::Command;

fn braid(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_braid"))
        .args(args)
        .output()
        .expect("run braid")
}

#[test]
fn bench_json_has_the_documented_fields() {
    let out = braid(&[
        "bench",
        "--path",
        "8mbit,5ms",
        "--path",
        "2mbit,20ms,name=lte",
        "--duration",
        "2s",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
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
    let out = braid(&["demo", "--seconds", "2"]);
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

#[test]
fn bench_clock_flags_take_signed_values_and_reject_bad_ones() {
    let out = braid(&[
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
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
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
