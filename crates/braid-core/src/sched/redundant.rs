//! Every packet on every path whose window has room: for small,
//! latency-critical flows; the receiver keeps the first copy. Pacing is not
//! consulted, so a copy never skips a path only because its pacing slot had
//! not come yet.

use super::{Decision, PathSet, SchedContext, Scheduler};

#[derive(Debug)]
pub struct Redundant;

impl Scheduler for Redundant {
    fn name(&self) -> &'static str {
        "redundant"
    }

    fn pick(&mut self, ctx: &SchedContext<'_>) -> Decision {
        let mut set = PathSet::default();
        for p in ctx.paths.iter().filter(|p| p.cwnd_open) {
            set.insert(p.index);
        }
        if set.is_empty() {
            Decision::Wait
        } else {
            Decision::Send(set)
        }
    }
}
