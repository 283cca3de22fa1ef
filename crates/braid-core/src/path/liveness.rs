//! Whether a path is up, told apart from what its congestion controller
//! thinks of it. A path that stays silent for about one round trip past the
//! oldest packet's expected acknowledgement is *down*: a blackout, a radio
//! fade, a burst of loss. Down is not congestion: the controller keeps its
//! model, the scheduler stops giving the path what others can carry, and
//! the path gets a copy of a packet now and then (a probe) until it answers.
//! The first acknowledgement of anything brings it back up.
//!
//! Why not the retransmission timeout: it is floored (a delayed ack must not
//! look like a dead path) and backs off exponentially, so a path that comes
//! back after a 2 s blackout was reused only after up to 2 s more.

use std::time::Duration;

use super::RttEstimator;
use crate::time::Instant;

/// Time between probes of a down path. One 1442-byte copy per 100 ms is
/// 115 kbit/s: well under 1 % of any path worth bonding, and a path that
/// comes back is found within this plus its round trip.
pub const PROBE_INTERVAL: Duration = Duration::from_millis(100);
/// Least silence that counts, for paths with a tiny, steady round trip
/// (the receiver acks every second packet or on a short timer).
const MIN_SILENCE: Duration = Duration::from_millis(5);
/// Silence before the first RTT sample.
const INITIAL_SILENCE: Duration = Duration::from_millis(500);

#[derive(Debug, Clone, Default)]
pub struct Liveness {
    /// When the path went down; `None` while it is up.
    down_since: Option<Instant>,
    last_probe: Option<Instant>,
}

impl Liveness {
    /// How long past the oldest packet in flight the path may stay silent:
    /// the round trip, plus four deviations or a quarter of it, whichever
    /// is larger (a steady path has almost no deviation).
    pub fn silence_span(rtt: &RttEstimator) -> Duration {
        match rtt.srtt() {
            Some(s) => s + (4 * rtt.rttvar()).max(s / 4).max(MIN_SILENCE),
            None => INITIAL_SILENCE,
        }
    }

    pub fn is_down(&self) -> bool {
        self.down_since.is_some()
    }

    /// A silence; returns whether the path just went down.
    pub fn on_silence(&mut self, now: Instant) -> bool {
        if self.down_since.is_some() {
            return false;
        }
        self.down_since = Some(now);
        self.last_probe = None;
        true
    }

    /// Anything heard from the path.
    pub fn on_heard(&mut self) {
        self.down_since = None;
    }

    /// Whether a down path is due a probe.
    pub fn probe_due(&self, now: Instant) -> bool {
        self.is_down() && self.last_probe.is_none_or(|t| now - t >= PROBE_INTERVAL)
    }

    pub fn on_probe(&mut self, now: Instant) {
        self.last_probe = Some(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn silence_span_is_about_one_round_trip() {
        let mut rtt = RttEstimator::default();
        assert_eq!(Liveness::silence_span(&rtt), INITIAL_SILENCE);
        for _ in 0..50 {
            rtt.on_sample(Duration::from_millis(60));
        }
        // Steady 60 ms: a quarter of it on top.
        assert_eq!(Liveness::silence_span(&rtt), Duration::from_millis(75));
    }

    #[test]
    fn probes_are_spaced_while_down_and_stop_when_heard() {
        let mut l = Liveness::default();
        let t0 = Instant::from_nanos(1_000_000_000);
        assert!(!l.probe_due(t0));
        assert!(l.on_silence(t0));
        assert!(!l.on_silence(t0 + Duration::from_millis(10)));
        assert!(l.probe_due(t0));
        l.on_probe(t0);
        assert!(!l.probe_due(t0 + PROBE_INTERVAL / 2));
        assert!(l.probe_due(t0 + PROBE_INTERVAL));
        l.on_heard();
        assert!(!l.is_down());
        assert!(!l.probe_due(t0 + PROBE_INTERVAL * 3));
    }
}
