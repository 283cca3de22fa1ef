//! Most free congestion window (paper multilink-udp-proxy, Algorithm 1,
//! after TCP PRISM): among the paths whose window has room, the one with the
//! most free window space; when none has room, drop rather than queue.
//! Pacing is not consulted: the paper's CCID2 windows are the only gate.

use super::{Decision, PathSet, SchedContext, Scheduler};

#[derive(Debug)]
pub struct MostFreeCwnd;

impl Scheduler for MostFreeCwnd {
    fn name(&self) -> &'static str {
        "most-free-cwnd"
    }

    fn pick(&mut self, ctx: &SchedContext<'_>) -> Decision {
        ctx.paths
            .iter()
            .filter(|p| p.cwnd_open)
            .max_by_key(|p| {
                (
                    p.cwnd_bytes.saturating_sub(p.in_flight_bytes),
                    std::cmp::Reverse(p.index),
                )
            })
            .map_or(Decision::Drop, |p| Decision::Send(PathSet::one(p.index)))
    }
}
