//! At most one log line per interval for an event anyone on the network
//! can cause (a handshake that does not authenticate), with the count of
//! those it stood for: the log says it happens without being flooded.

use std::time::Duration;

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
}
