//! The human-readable bench report.

use std::fmt::Write;

use braid_sim::metrics::Report;

pub fn mbit(bps: f64) -> String {
    format!("{:.2} Mbit/s", bps / 1e6)
}

fn pct(x: f64) -> String {
    format!("{:.1}%", x * 100.0)
}

pub fn render(r: &Report, traffic: &str) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "scheduler {}, cc {}, traffic {}, {:.0} s simulated, seed {}",
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
        "offered {}   ideal goodput {}",
        mbit(r.offered_bps),
        mbit(r.ideal_goodput_bps)
    );
    let _ = writeln!(
        out,
        "goodput {} (utilization {}), in order {}, application loss {}",
        mbit(r.goodput_bps),
        pct(r.utilization),
        mbit(r.in_order_goodput_bps),
        pct(r.loss_rate)
    );
    let _ = writeln!(
        out,
        "reorder delay p50 {:.1} ms  p99 {:.1} ms  max {:.1} ms   longest stall {:.1} ms   latency p50 {:.1} ms  p99 {:.1} ms",
        r.reorder_delay_ms.p50,
        r.reorder_delay_ms.p99,
        r.reorder_delay_ms.max,
        r.stall_max_ms,
        r.latency_ms.p50,
        r.latency_ms.p99
    );
    out
}
