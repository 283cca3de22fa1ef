//! Moving simulated time forward, and noticing when it stops moving: a
//! timer that fires at the same instant forever would otherwise hang a run.

use std::time::Duration;

use crate::sim::SimError;

/// Steps at one instant before a run counts as stuck.
const MAX_SAME_TIME_STEPS: u32 = 1_000_000;

#[derive(Debug, Default)]
pub(crate) struct StallGuard {
    same_time_steps: u32,
}

impl StallGuard {
    /// The next instant to simulate: `next`, never before `now`; an error
    /// once too many steps in a row happen at the same instant.
    pub(crate) fn advance(&mut self, now: Duration, next: Duration) -> Result<Duration, SimError> {
        let next = next.max(now);
        if next == now {
            self.same_time_steps += 1;
            if self.same_time_steps > MAX_SAME_TIME_STEPS {
                return Err(SimError::Stuck(now));
            }
        } else {
            self.same_time_steps = 0;
        }
        Ok(next)
    }
}
