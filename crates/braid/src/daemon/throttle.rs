//! At most one log line per interval for an event anyone on the network
//! can cause (a handshake that does not authenticate), with the count of
//! those it stood for: the log says it happens without being flooded.

use std::time::Duration;

use braid_core::session::DropReason;
use braid_core::time::Instant;

#[derive(Debug)]
pub struct Throttle {
    every: Duration,
    last: Option<Instant>,
    /// Events since the last line, this one included once it is due.
    held: u64,
}

impl Throttle {
    pub fn new(every: Duration) -> Throttle {
        Throttle {
            every,
            last: None,
            held: 0,
        }
    }

    /// An event at `now`: `Some(n)` when a line is due, for the `n`
    /// events since the last one (this one included).
    pub fn note(&mut self, now: Instant) -> Option<u64> {
        self.held = self.held.saturating_add(1);
        if self.last.is_some_and(|t| now - t < self.every) {
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.held))
    }
}

/// A handshake refused for a reason a person configuring keys can act on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// From a key this end does not know (no `[[peer]]`, not in `--peer`).
    UnknownKey,
    /// One that does not authenticate: the sender may use another public
    /// key for this end.
    Invalid,
}

/// The server's and `braid recv`'s refused handshakes, each reason
/// throttled on its own.
#[derive(Debug)]
pub struct RefusedHandshakes {
    unknown_key: Throttle,
    invalid: Throttle,
}

impl RefusedHandshakes {
    pub fn new(every: Duration) -> RefusedHandshakes {
        RefusedHandshakes {
            unknown_key: Throttle::new(every),
            invalid: Throttle::new(every),
        }
    }

    /// A datagram dropped for `reason` at `now`: the refusal and how many
    /// it stands for, when a line about it is due.
    pub fn note(&mut self, now: Instant, reason: DropReason) -> Option<(Refused, u64)> {
        let (refused, throttle) = match reason {
            DropReason::UnknownPeer => (Refused::UnknownKey, &mut self.unknown_key),
            DropReason::HandshakeInvalid => (Refused::Invalid, &mut self.invalid),
            _ => return None,
        };
        throttle.note(now).map(|n| (refused, n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_per_interval_counting_what_it_stands_for() {
        let s = |secs: u64| Instant::ZERO + Duration::from_secs(secs);
        let mut t = Throttle::new(Duration::from_secs(60));
        assert_eq!(t.note(s(5)), Some(1));
        assert_eq!(t.note(s(6)), None);
        assert_eq!(t.note(s(64)), None);
        assert_eq!(t.note(s(65)), Some(3));
        assert_eq!(t.note(s(200)), Some(1));
    }

    #[test]
    fn refusals_are_throttled_apart_and_other_drops_say_nothing() {
        let s = |secs: u64| Instant::ZERO + Duration::from_secs(secs);
        let mut r = RefusedHandshakes::new(Duration::from_secs(10));
        assert_eq!(
            r.note(s(1), DropReason::UnknownPeer),
            Some((Refused::UnknownKey, 1))
        );
        assert_eq!(r.note(s(2), DropReason::UnknownPeer), None);
        assert_eq!(
            r.note(s(2), DropReason::HandshakeInvalid),
            Some((Refused::Invalid, 1))
        );
        assert_eq!(r.note(s(3), DropReason::Replayed), None);
        assert_eq!(
            r.note(s(11), DropReason::UnknownPeer),
            Some((Refused::UnknownKey, 2))
        );
    }
}
