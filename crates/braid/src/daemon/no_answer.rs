//! When to tell the user that the server has not answered: a client whose
//! handshakes go unanswered (a wrong key at either end, a wrong endpoint,
//! a firewall) otherwise logs nothing after "client started", and the
//! server, which keeps no state for a packet that does not authenticate,
//! cannot say either.

use std::time::Duration;

use braid_core::time::Instant;

/// How long handshakes go unanswered before the first warning.
pub const FIRST_AFTER: Duration = Duration::from_secs(10);
/// How often the warning repeats while they still go unanswered.
pub const REPEAT_EVERY: Duration = Duration::from_secs(60);

#[derive(Debug, Default)]
pub struct NoAnswer {
    /// Since when the session has not been connected.
    since: Option<Instant>,
    warned_at: Option<Instant>,
}

impl NoAnswer {
    /// Whether to warn now, given whether the session is `connected`:
    /// [`FIRST_AFTER`] into a wait, then every [`REPEAT_EVERY`] of it.
    pub fn check(&mut self, now: Instant, connected: bool) -> Option<Duration> {
        if connected {
            *self = NoAnswer::default();
            return None;
        }
        let since = *self.since.get_or_insert(now);
        let waited = now - since;
        let due = match self.warned_at {
            None => waited >= FIRST_AFTER,
            Some(t) => now - t >= REPEAT_EVERY,
        };
        due.then(|| {
            self.warned_at = Some(now);
            waited
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(secs: u64) -> Instant {
        Instant::ZERO + Duration::from_secs(secs)
    }

    #[test]
    fn warns_after_ten_seconds_unanswered_then_every_minute_until_connected() {
        let mut w = NoAnswer::default();
        assert_eq!(w.check(s(1), false), None);
        assert_eq!(w.check(s(10), false), None);
        assert_eq!(w.check(s(11), false), Some(Duration::from_secs(10)));
        assert_eq!(w.check(s(12), false), None);
        assert_eq!(w.check(s(70), false), None);
        assert_eq!(w.check(s(71), false), Some(Duration::from_secs(70)));
        // Connected: quiet, and a later wait starts over.
        assert_eq!(w.check(s(72), true), None);
        assert_eq!(w.check(s(100), false), None);
        assert_eq!(w.check(s(109), false), None);
        assert_eq!(w.check(s(110), false), Some(Duration::from_secs(10)));
    }
}
