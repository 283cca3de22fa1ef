//! The rendering, from status documents built the way the daemons build
//! them.

use std::time::Duration;

use braid_core::session::{DropCounters, PathRole, PathState, PathStats, SessionStats};
use serde_json::json;

use super::render;
use crate::daemon::status_json;

fn path(name: &str, state: PathState, role: PathRole, tx: u64, rx: u64) -> PathStats {
    PathStats {
        name: name.into(),
        role,
        state,
        remote: Some("192.0.2.1:51820".parse().unwrap()),
        rtt: Some(Duration::from_millis(25)),
        min_rtt: Some(Duration::from_millis(20)),
        queueing_delay: Duration::from_millis(3),
        owd_floor_us: None,
        loss: 0.015,
        cwnd_bytes: 64_000,
        in_flight_bytes: 1200,
        send_rate_bps: Some(8e6),
        train_rate_bps: None,
        tx_bytes: tx,
        rx_bytes: rx,
        tx_packets: 10,
        rx_packets: 9,
        probes_sent: 4,
        times_down: 1,
        down_reason: None,
        link_lost: false,
        silent_for: None,
    }
}

fn session(paths: Vec<PathStats>) -> serde_json::Value {
    let mut s = status_json::session(&SessionStats {
        established: true,
        paths,
        handshakes: 2,
        rekeys: 1,
        reseq_held_packets: 7,
        reseq_held_bytes: 9000,
        reseq_delay_max: Duration::from_millis(40),
        reseq_delay_mean: Duration::from_millis(2),
        reseq_delivered_late: 0,
        reseq_delivered_early: 0,
        reseq_express_unordered: 0,
        reseq_skipped: 0,
        reseq_timeouts: 13,
        delivered: 1234,
        send_queue_bytes: 3000,
        send_dropped: 5,
        send_reinjected: 6,
        send_reinjected_bytes: 0,
        send_resent: 8,
        send_resent_bytes: 0,
        send_resend_stale: 2,
        send_reinject_stale: 14,
        send_overdue_copies: 9,
        send_express: 0,
        send_codel_dropped: 4,
        send_codel_marked: 12,
        drops: DropCounters::default(),
    });
    s["drops"] = json!({"authentication": 3, "replayed": 1});
    s
}

/// Whether `text` has the sample `line` (a gauge's `1` printed as `1.0`).
fn has(text: &str, line: &str) -> bool {
    text.lines()
        .any(|l| l == line || l.strip_prefix(line) == Some(".0"))
}

/// The sample lines of `text` that start with `prefix`.
fn lines<'a>(text: &'a str, prefix: &str) -> Vec<&'a str> {
    text.lines().filter(|l| l.starts_with(prefix)).collect()
}

#[test]
fn a_client_document_renders_every_path_and_session_figure() {
    let mut s = session(vec![
        path("dsl", PathState::Up, PathRole::Primary, 1000, 2000),
        path("lte", PathState::Down, PathRole::Backup, 30, 40),
    ]);
    s["paths"][1]["data_cap"] = json!({
        "cap_bytes": 50_000_000_000u64, "period": "month", "used_bytes": 123,
        "period_start": "2026-11-01T00:00:00Z", "period_end": "2026-12-01T00:00:00Z",
        "demoted": true,
    });
    let doc = json!({
        "role": "client",
        "session": s,
        "daemon": {"tun_rx_packets": 11, "udp_send_errors": 0, "tun_offload": true},
    });
    let text = render(&doc);
    let expect = [
        "braid_path_up{path=\"dsl\"} 1",
        "braid_path_up{path=\"lte\"} 0",
        "braid_path_role{path=\"dsl\",role=\"primary\"} 1",
        "braid_path_role{path=\"lte\",role=\"backup\"} 1",
        "braid_path_rtt_seconds{path=\"dsl\"} 0.025",
        "braid_path_min_rtt_seconds{path=\"dsl\"} 0.02",
        "braid_path_queueing_delay_seconds{path=\"dsl\"} 0.003",
        "braid_path_loss_ratio{path=\"dsl\"} 0.015",
        "braid_path_cwnd_bytes{path=\"dsl\"} 64000",
        "braid_path_in_flight_bytes{path=\"dsl\"} 1200",
        "braid_path_send_rate_bits_per_second{path=\"dsl\"} 8000000",
        "braid_path_sent_bytes_total{path=\"dsl\"} 1000",
        "braid_path_received_bytes_total{path=\"dsl\"} 2000",
        "braid_path_sent_bytes_total{path=\"lte\"} 30",
        "braid_path_received_bytes_total{path=\"lte\"} 40",
        "braid_path_sent_packets_total{path=\"dsl\"} 10",
        "braid_path_received_packets_total{path=\"dsl\"} 9",
        "braid_path_probes_sent_total{path=\"dsl\"} 4",
        "braid_path_down_transitions_total{path=\"dsl\"} 1",
        "braid_path_data_cap_bytes{path=\"lte\"} 50000000000",
        "braid_path_data_cap_used_bytes{path=\"lte\"} 123",
        "braid_path_data_cap_demoted{path=\"lte\"} 1",
        "braid_session_established{} 1",
        "braid_session_handshakes_total{} 2",
        "braid_session_rekeys_total{} 1",
        "braid_reseq_held_packets{} 7",
        "braid_reseq_held_bytes{} 9000",
        "braid_reseq_delay_max_seconds{} 0.04",
        "braid_reseq_delay_mean_seconds{} 0.002",
        "braid_reseq_delivered_packets_total{} 1234",
        "braid_reseq_timeouts_total{} 13",
        "braid_send_queue_bytes{} 3000",
        "braid_send_dropped_packets_total{} 5",
        "braid_send_codel_dropped_packets_total{} 4",
        "braid_send_codel_marked_packets_total{} 12",
        "braid_send_reinjected_packets_total{} 6",
        "braid_send_resent_packets_total{} 8",
        "braid_send_resend_stale_packets_total{} 2",
        "braid_send_reinject_stale_packets_total{} 14",
        "braid_send_overdue_copies_packets_total{} 9",
        "braid_session_drops_total{reason=\"authentication\"} 3",
        "braid_session_drops_total{reason=\"replayed\"} 1",
        "braid_daemon_tun_rx_packets_total{} 11",
        "braid_daemon_udp_send_errors_total{} 0",
        "braid_daemon_tun_offload{} 1",
    ];
    for line in expect {
        assert!(has(&text, line), "missing {line:?} in\n{text}");
    }
    // The uncapped path has no cap samples, and each path one role.
    assert!(lines(&text, "braid_path_data_cap_bytes{path=\"dsl\"").is_empty());
    assert_eq!(lines(&text, "braid_path_role{").len(), 2);
    assert!(text.contains("# TYPE braid_path_sent_bytes counter"));
    assert!(text.contains("# TYPE braid_path_rtt_seconds gauge"));
    assert!(text.ends_with("# EOF\n"), "OpenMetrics ends with # EOF");
}

#[test]
fn a_server_document_labels_each_session_with_its_peer() {
    let doc = json!({
        "role": "server",
        "sessions": 1,
        "handshakes_accepted": 4,
        "drops": {"unknown_peer": 2},
        "peers": [
            {"name": "home", "session": session(vec![path("path0", PathState::Up, PathRole::Primary, 5, 6)])},
            {"name": "away", "session": null},
        ],
        "daemon": {"inner_source_refused": 0},
    });
    let text = render(&doc);
    for line in [
        "braid_server_sessions{} 1",
        "braid_server_handshakes_accepted_total{} 4",
        "braid_server_drops_total{reason=\"unknown_peer\"} 2",
        "braid_path_sent_bytes_total{peer=\"home\",path=\"path0\"} 5",
        "braid_reseq_held_packets{peer=\"home\"} 7",
        "braid_session_drops_total{peer=\"home\",reason=\"authentication\"} 3",
        "braid_daemon_inner_source_refused_total{} 0",
    ] {
        assert!(has(&text, line), "missing {line:?} in\n{text}");
    }
    assert!(
        !text.contains("away"),
        "a peer without a session has no samples"
    );
}
