//! Every packet on every path that may send now: for small, latency-critical
//! flows; the receiver keeps the first copy.

use super::{Decision, PathSet, SchedContext, Scheduler};

#[derive(Debug)]
pub struct Redundant;

impl Scheduler for Redundant {
    fn name(&self) -> &'static str {
        "redundant"
    }

    fn pick(&mut self, ctx: &SchedContext<'_>) -> Decision {
        let mut set = PathSet::default();
        for p in ctx.paths.iter().filter(|p| p.can_send) {
            set.insert(p.index);
        }
        if set.is_empty() {
            Decision::Wait
        } else {
            Decision::Send(set)
        }
    }
}
