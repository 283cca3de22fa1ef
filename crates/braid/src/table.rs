//! The human-readable bench report.

use std::fmt::Write;

use braid_core::session::Event;
use braid_sim::session_run::Side;

use braid_sim::metrics::{Percentiles, Report};

pub fn mbit(bps: f64) -> String {
    format!("{:.2} Mbit/s", bps / 1e6)
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

/// One percentile in ms, or "-" when nothing was delivered.
pub fn ms(p: Option<&Percentiles>, pick: fn(&Percentiles) -> f64) -> String {
    p.map_or("-".to_owned(), |p| format!("{:.1} ms", pick(p)))
}

/// Shares of the offered datagrams that the sender discarded because no path
/// could take them in time (overload, not a fault of a line), and that were
/// lost after sending (on a line, at a line's queue, or given up on by the
/// receiver).
pub fn loss_split(r: &Report) -> (f64, f64) {
    let offered = r.offered_bps * r.duration_s / 8.0 / r.payload_bytes as f64;
    if offered <= 0.0 {
        return (0.0, 0.0);
    }
    let at_sender = ((r.sender_queue_drops + r.scheduler_drops) as f64 / offered).min(r.loss_rate);
    (at_sender, r.loss_rate - at_sender)
}

pub fn render(r: &Report, traffic: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "scheduler {}, cc {}, traffic {}, {} s simulated, seed {}",
        r.scheduler, r.cc, traffic, r.duration_s, r.seed
    );
    let _ = writeln!(
        out,
        "{:<10} {:>14} {:>14} {:>7} {:>7} {:>7} {:>9}",
        "path", "capacity", "throughput", "share", "util", "loss", "srtt"
    );
    for p in &r.paths {
        let srtt = p.srtt_ms.map_or("-".to_owned(), |s| format!("{s:.1} ms"));
        let _ = writeln!(
            out,
            "{:<10} {:>14} {:>14} {:>7} {:>7} {:>7} {:>9}",
            p.name,
            mbit(p.capacity_bps),
            mbit(p.throughput_bps),
            pct(p.share),
            pct(p.utilization),
            pct(p.loss_rate),
            srtt
        );
    }
    let throughput: f64 = r.paths.iter().map(|p| p.throughput_bps).sum();
    let _ = writeln!(
        out,
        "{:<10} {:>14} {:>14}",
        "total",
        mbit(r.capacity_bps),
        mbit(throughput)
    );
    let _ = writeln!(
        out,
        "offered {}   ideal goodput {} (the capacity less IP, UDP and braid headers)",
        mbit(r.offered_bps),
        mbit(r.ideal_goodput_bps)
    );
    let (at_sender, after_sending) = loss_split(r);
    let _ = writeln!(
        out,
        "goodput {} (utilization {}), in order {}, application loss {} \
         (dropped at sender {}, lost after sending {})",
        mbit(r.goodput_bps),
        pct(r.utilization),
        mbit(r.in_order_goodput_bps),
        pct(r.loss_rate),
        pct(at_sender),
        pct(after_sending)
    );
    let held = r.reorder_delay_ms.as_ref();
    let latency = r.latency_ms.as_ref();
    let _ = writeln!(
        out,
        "reorder delay p50 {}  p99 {}  max {}   longest stall {:.1} ms   latency p50 {}  p99 {}",
        ms(held, |p| p.p50),
        ms(held, |p| p.p99),
        ms(held, |p| p.max),
        r.stall_max_ms,
        ms(latency, |p| p.p50),
        ms(latency, |p| p.p99)
    );
    if let Some(sess) = &r.session {
        let downs = sess
            .events
            .iter()
            .filter(|e| e.side == Side::Client && matches!(e.raw, Event::PathDown { .. }))
            .count();
        let drops: u64 = sess.server_drops.iter().map(|(_, n)| n).sum();
        let _ = writeln!(
            out,
            "session: {} bytes per packet on a path besides the payload, {} handshakes, \
             {} path-down events at the client, {} datagrams dropped at the server",
            sess.overhead_bytes_per_packet, sess.client_handshakes, downs, drops
        );
    }
    if let Some(rel) = &r.reliable {
        let completion = rel.completion_s.map_or("not completed".to_owned(), |c| {
            format!("completed in {c:.3} s")
        });
        let _ = writeln!(
            out,
            "reliable: {} bytes read, {completion}, retransmitted {} bytes, redundant {} bytes{}",
            rel.read_bytes,
            rel.retransmitted_bytes,
            rel.redundant_bytes,
            rel.error
                .as_ref()
                .map_or(String::new(), |e| format!(", FAILED: {e}"))
        );
    }
    // Per source, when that says more than the totals above.
    if r.flows.len() > 1 || r.flows.iter().any(|f| f.tcp.is_some()) {
        for f in &r.flows {
            let owd = f.one_way_delay_ms.as_ref();
            let _ = write!(
                out,
                "flow {}: one-way delay p50 {}  p99 {}",
                f.traffic,
                ms(owd, |p| p.p50),
                ms(owd, |p| p.p99)
            );
            match &f.tcp {
                None => {
                    let _ = writeln!(out, ", goodput {}", mbit(f.goodput_bps));
                }
                Some(t) => {
                    let rtt = t.rtt_ms.as_ref();
                    let _ = writeln!(
                        out,
                        "\n  TCP goodput {} ({} of the ideal for MSS {}), RTT p50 {}  p99 {}, \
                         {} retransmissions, {} fast recoveries, {} timeouts",
                        mbit(t.goodput_bps),
                        pct(t.utilization),
                        t.mss,
                        ms(rtt, |p| p.p50),
                        ms(rtt, |p| p.p99),
                        t.counters.retransmissions,
                        t.counters.fast_recoveries,
                        t.counters.timeouts
                    );
                }
            }
        }
    }
    out
}
