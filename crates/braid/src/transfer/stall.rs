//! The transfer's own deadline: a peer can keep the session alive (its
//! path probes answer, so it is never silent) and still move nothing: a
//! sender that connects and never sends file 0, or stops mid-file; a
//! receiver that acknowledges nothing new and never answers. The session's
//! silence timeout cannot see either, so each end also watches a counter
//! that only grows while the transfer moves, and gives up once it has not
//! grown for `--stall-timeout`.

use std::time::Duration;

use braid_core::time::Instant;

/// When the transfer last moved.
#[derive(Debug)]
pub struct StallWatch {
    limit: Duration,
    progress: u64,
    since: Instant,
}

impl StallWatch {
    /// A watch that gives up after `limit` without progress, counted from `now`.
    pub fn new(limit: Duration, now: Instant) -> StallWatch {
        StallWatch {
            limit,
            progress: 0,
            since: now,
        }
    }

    /// Looks at the transfer: `progress` grows while it moves; `waiting`
    /// says this end itself holds it back (a sender waiting for its
    /// standard input), which is no fault of the peer's. Returns how long
    /// it has not moved once that reaches the limit.
    pub fn check(&mut self, now: Instant, progress: u64, waiting: bool) -> Option<Duration> {
        if progress != self.progress || waiting {
            self.progress = progress;
            self.since = now;
            return None;
        }
        let still = now - self.since;
        (still >= self.limit).then_some(still)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(ms: u64) -> Instant {
        Instant::from_nanos(ms * 1_000_000)
    }

    #[test]
    fn gives_up_only_after_the_limit_without_progress() {
        let mut w = StallWatch::new(Duration::from_secs(2), t(1000));
        // Nothing at all from the start (a sender that never sends file 0).
        assert_eq!(w.check(t(2999), 0, false), None);
        assert_eq!(w.check(t(3000), 0, false), Some(Duration::from_secs(2)));
        // Progress restarts the clock.
        let mut w = StallWatch::new(Duration::from_secs(2), t(0));
        assert_eq!(w.check(t(1500), 10, false), None);
        assert_eq!(w.check(t(3000), 10, false), None);
        assert_eq!(w.check(t(3500), 10, false), Some(Duration::from_secs(2)));
    }

    #[test]
    fn waiting_for_local_input_is_not_a_stall() {
        let mut w = StallWatch::new(Duration::from_secs(2), t(0));
        assert_eq!(w.check(t(5000), 0, true), None);
        // The clock runs from the end of the wait.
        assert_eq!(w.check(t(6999), 0, false), None);
        assert_eq!(w.check(t(7000), 0, false), Some(Duration::from_secs(2)));
    }
}
