//! `braid status --json`: a session's figures as JSON. Durations are in
//! milliseconds (`_ms`), rates in bits per second (`_bps`).

use std::time::Duration;

use braid_core::session::{PathDownReason, PathStats, SessionStats};
use serde_json::{json, Value};

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn down_reason(r: PathDownReason) -> &'static str {
    match r {
        PathDownReason::Silent(_) => "silent",
        PathDownReason::SessionReset => "session_reset",
        PathDownReason::LinkLost => "link_lost",
    }
}

fn path(p: &PathStats) -> Value {
    json!({
        "name": p.name,
        "state": p.state.name(),
        "down_reason": p.down_reason.map(down_reason),
        "link_lost": p.link_lost,
        "role": p.role.name(),
        "remote": p.remote.map(|r| r.to_string()),
        "rtt_ms": p.rtt.map(ms),
        "min_rtt_ms": p.min_rtt.map(ms),
        "queueing_delay_ms": ms(p.queueing_delay),
        "loss": p.loss,
        "cwnd_bytes": p.cwnd_bytes,
        "in_flight_bytes": p.in_flight_bytes,
        "send_rate_bps": p.send_rate_bps,
        "train_rate_bps": p.train_rate_bps,
        "tx_bytes": p.tx_bytes,
        "rx_bytes": p.rx_bytes,
        "bytes_used": p.tx_bytes.saturating_add(p.rx_bytes),
        "tx_packets": p.tx_packets,
        "rx_packets": p.rx_packets,
        "probes_sent": p.probes_sent,
        "times_down": p.times_down,
        "silent_for_ms": p.silent_for.map(ms),
    })
}

/// A session's figures; `drops` lists only reasons that counted something.
pub fn session(s: &SessionStats) -> Value {
    let drops: serde_json::Map<String, Value> = s
        .drops
        .iter()
        .filter(|&(_, n)| n > 0)
        .map(|(reason, n)| (reason.name().to_owned(), n.into()))
        .collect();
    json!({
        "established": s.established,
        "handshakes": s.handshakes,
        "rekeys": s.rekeys,
        "paths": s.paths.iter().map(path).collect::<Vec<_>>(),
        "reseq": {
            "held_packets": s.reseq_held_packets,
            "held_bytes": s.reseq_held_bytes,
            "delay_max_ms": ms(s.reseq_delay_max),
            "delay_mean_ms": ms(s.reseq_delay_mean),
            "delivered": s.delivered,
            "delivered_late": s.reseq_delivered_late,
            "delivered_early": s.reseq_delivered_early,
            "express_unordered": s.reseq_express_unordered,
            "skipped": s.reseq_skipped,
            "timeouts": s.reseq_timeouts,
        },
        "send_queue_bytes": s.send_queue_bytes,
        "send_dropped": s.send_dropped,
        "send_reinjected": s.send_reinjected,
        "send_reinjected_bytes": s.send_reinjected_bytes,
        "send_resent": s.send_resent,
        "send_resent_bytes": s.send_resent_bytes,
        "send_resend_stale": s.send_resend_stale,
        "send_reinject_stale": s.send_reinject_stale,
        "send_overdue_copies": s.send_overdue_copies,
        "send_express": s.send_express,
        "send_codel_dropped": s.send_codel_dropped,
        "send_codel_marked": s.send_codel_marked,
        "drops": drops,
    })
}
