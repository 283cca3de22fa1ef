//! Lowest RTT first (Linux MPTCP's default scheduler): of the paths that may
//! send now, the one with the smallest smoothed RTT. Paths not yet measured
//! come first, so each gets probed.

use std::time::Duration;

use super::{Decision, PathSet, SchedContext, Scheduler};

#[derive(Debug)]
pub struct MinRtt;

impl Scheduler for MinRtt {
    fn name(&self) -> &'static str {
        "min-rtt"
    }

    fn pick(&mut self, ctx: &SchedContext<'_>) -> Decision {
        ctx.paths
            .iter()
            .filter(|p| p.can_send)
            .min_by_key(|p| (p.srtt.unwrap_or(Duration::ZERO), p.index))
            .map_or(Decision::Wait, |p| Decision::Send(PathSet::one(p.index)))
    }
}
