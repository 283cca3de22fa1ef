//! `braid lab status` for people: one block per path, settings then counters.

use std::fmt::Write;

use crate::control::{DirectionStatus, LinkSettings};
use crate::lab::LabStatus;

fn settings_line(s: &LinkSettings) -> String {
    let capacity = match (&s.rate_bps, &s.trace) {
        (Some(bps), _) => format!("{:.3} Mbit/s", *bps as f64 / 1e6),
        (None, Some(trace)) => format!("trace {trace}"),
        (None, None) => "?".to_owned(),
    };
    let mut line = format!(
        "{capacity}, delay {:.3} ms + jitter 0..{:.3} ms, loss {}%, queue {} B, at most {} frames held",
        s.delay_ms, s.jitter_ms, s.loss_pct, s.queue_bytes, s.held_limit_packets
    );
    if let Some(ge) = &s.gilbert_elliott {
        let _ = write!(
            line,
            ", burst loss {}%:{}%:{}%",
            ge.p_good_to_bad_pct, ge.p_bad_to_good_pct, ge.loss_in_bad_pct
        );
    }
    line
}

fn direction(out: &mut String, label: &str, d: &Option<DirectionStatus>) {
    match d {
        Some(d) => {
            let c = &d.counters;
            let _ = writeln!(out, "    {label}: {}", settings_line(&d.settings));
            let _ = writeln!(
                out,
                "      forwarded {} packets / {} bytes; dropped: queue {}, loss {}, blackout {}, oversize {}, held limit {}; late >0.5 ms {} (max {} us, behind schedule {:.3} s)",
                c.forwarded_packets,
                c.forwarded_bytes,
                c.dropped_queue,
                c.dropped_loss,
                c.dropped_blackout,
                c.dropped_oversize,
                c.dropped_limit,
                c.late_over_500us,
                c.max_late_us,
                c.behind_us as f64 / 1e6
            );
            let h = &d.held;
            if let (Some(min), Some(max)) = (h.min_ns, h.max_ns) {
                let _ = writeln!(
                    out,
                    "      held since the spec took effect: {} frames, {:.3} / {:.3} / {:.3} ms min / mean / max",
                    h.frames,
                    min as f64 / 1e6,
                    h.total_ns as f64 / h.frames as f64 / 1e6,
                    max as f64 / 1e6
                );
            }
        }
        None => {
            let _ = writeln!(out, "    {label}: (emulator not running)");
        }
    }
}

pub fn render_status(s: &LabStatus) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "lab {}", s.name);
    let _ = writeln!(
        out,
        "  namespaces: client {}, server {} (emulator in {})",
        s.namespaces.client, s.namespaces.server, s.namespaces.emulator
    );
    let _ = writeln!(out, "  server address: {}", s.server_addr);
    match &s.emulator {
        Some(e) => {
            let _ = writeln!(out, "  emulator: pid {}, up {:.1} s", e.pid, e.uptime_s);
        }
        None => {
            let _ = writeln!(
                out,
                "  emulator: NOT RUNNING (run `braid lab down --name {}`)",
                s.name
            );
        }
    }
    for p in &s.paths {
        let _ = writeln!(
            out,
            "  path {}: client {} on {} via {}, spec {}",
            p.layout.name, p.layout.client_addr, p.layout.client_iface, p.layout.gateway, p.spec
        );
        if let Some(nat) = &p.layout.nat {
            let _ = writeln!(
                out,
                "    behind a NAT: the server sees {} (NAT {} -> {})",
                nat.outer_addr, nat.inner_iface, nat.outer_iface
            );
        }
        if crate::direct::is_direct(&p.spec) {
            let _ = writeln!(out, "    a plain veth pair, no emulator");
            continue;
        }
        direction(&mut out, "up  ", &p.up);
        direction(&mut out, "down", &p.down);
    }
    out
}
