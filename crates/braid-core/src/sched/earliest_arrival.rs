//! Earliest expected arrival (in the spirit of ECF and BLEST): each packet
//! goes where it is expected to arrive first, where a path's expected
//! delivery time is the time until it may send, plus the bytes queued ahead
//! of the packet divided by the path's rate, plus its one-way delay.
//!
//! When the best path is momentarily closed (window full or pacing), sending
//! on a slower path at once is not always better: if the whole backlog could
//! drain through the best path before the slow path would deliver this one
//! packet, waiting keeps the packets in order and the fast path full. So a
//! closed path's estimate includes the sender's backlog; an open path's
//! includes only this packet. That is ECF's rule, in bytes and rates.

use std::time::Duration;

use super::{Decision, PathSet, PathView, SchedContext, Scheduler};
use crate::time::Instant;

#[derive(Debug)]
pub struct EarliestArrival;

/// Expected arrival of `bytes` sent on `p` behind `ahead` bytes, in seconds
/// from now, relative to the smallest one-way delay (`base_owd_us`).
fn arrival_secs(p: &PathView, now: Instant, bytes: u64, ahead: u64, base_owd_us: f64) -> f64 {
    let bw = p.bandwidth_bps.unwrap_or(0.0).max(1.0);
    let min_rtt = p.min_rtt.unwrap_or(Duration::ZERO).as_secs_f64();
    let bdp_bytes = bw * min_rtt / 8.0;
    let queued = (p.in_flight_bytes as f64 - bdp_bytes).max(0.0);
    let wait = if p.cwnd_open {
        (p.ready_at - now).as_secs_f64()
    } else {
        (p.in_flight_bytes + bytes).saturating_sub(p.cwnd_bytes) as f64 * 8.0 / bw
    };
    let owd = match p.owd_us {
        Some(o) => (o - base_owd_us) / 1e6,
        None => p.srtt.map_or(0.0, |s| s.as_secs_f64() / 2.0),
    };
    wait + (queued + (ahead + bytes) as f64) * 8.0 / bw + owd
}

impl Scheduler for EarliestArrival {
    fn name(&self) -> &'static str {
        "earliest-arrival"
    }

    fn pick(&mut self, ctx: &SchedContext<'_>) -> Decision {
        // A path with no rate estimate yet is tried as soon as it may send.
        if let Some(p) = ctx
            .paths
            .iter()
            .find(|p| p.can_send && p.bandwidth_bps.is_none())
        {
            return Decision::Send(PathSet::one(p.index));
        }
        let live: Vec<&PathView> = ctx
            .paths
            .iter()
            .filter(|p| !p.suspect || p.can_send)
            .collect();
        let base = live
            .iter()
            .filter_map(|p| p.owd_us)
            .fold(f64::INFINITY, f64::min);
        let base = if base.is_finite() { base } else { 0.0 };
        let est =
            |p: &PathView, ahead: u64| arrival_secs(p, ctx.now, ctx.packet_bytes, ahead, base);
        let best_open = live
            .iter()
            .filter(|p| p.can_send)
            .map(|p| (est(p, 0), p.index))
            .min_by(|a, b| a.0.total_cmp(&b.0));
        let Some((open_est, open_index)) = best_open else {
            return Decision::Wait;
        };
        let ahead = ctx.backlog_bytes.saturating_sub(ctx.packet_bytes);
        let closed_better = live
            .iter()
            .filter(|p| !p.can_send && !p.suspect)
            .any(|p| est(p, ahead) < open_est);
        if closed_better {
            Decision::Wait
        } else {
            Decision::Send(PathSet::one(open_index))
        }
    }
}
