//! How fast a path carries express datagrams (sparse flows' packets put
//! ahead of the window, `crate::sender`). Those overtake every datagram
//! the scheduler leaves waiting for the path, so of what the path may send
//! only the rest goes to the waiting ones
//! (`PathSender::express_share`).

use std::time::Duration;

use crate::time::Instant;

/// Time constant of the exponential average: a sparse flow that starts
/// beside a transfer takes its share within a few of them.
const TAU: Duration = Duration::from_millis(250);

/// Silence after which a new express datagram starts a new average.
const RESTART_AFTER: Duration = Duration::from_secs(1);

/// The shortest span a rate is taken over: one datagram alone is not a
/// rate (a call's frames come 20 ms apart).
const SHORTEST_SPAN: Duration = Duration::from_millis(20);

/// An exponential average of the express bytes a path sent.
#[derive(Debug, Clone, Default)]
pub struct ExpressRate {
    /// Bytes counted, decayed to `last`.
    bytes: f64,
    /// The first datagram of the current average, and the last.
    first: Option<Instant>,
    last: Option<Instant>,
}

impl ExpressRate {
    pub fn on_sent(&mut self, now: Instant, bytes: u64) {
        let restart = self
            .last
            .is_none_or(|l| now.saturating_duration_since(l) >= RESTART_AFTER);
        if restart {
            self.bytes = 0.0;
            self.first = Some(now);
        }
        self.bytes = self.decayed(now) + bytes as f64;
        self.last = Some(now);
    }

    /// Bits per second: the decayed byte count over the span it covers (a
    /// `TAU` once the average is older than a few of them; less before, so
    /// that a flow that just began counts at its rate, not a fraction).
    pub fn bps(&self, now: Instant) -> f64 {
        let Some(first) = self.first else {
            return 0.0;
        };
        let tau = TAU.as_secs_f64();
        let age = now
            .saturating_duration_since(first)
            .max(SHORTEST_SPAN)
            .as_secs_f64();
        let span = tau * (1.0 - (-age / tau).exp());
        self.decayed(now) * 8.0 / span
    }

    fn decayed(&self, now: Instant) -> f64 {
        match self.last {
            None => 0.0,
            Some(last) => {
                let age = now.saturating_duration_since(last).as_secs_f64();
                self.bytes * (-age / TAU.as_secs_f64()).exp()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Instant {
        Instant::from_nanos(1_000_000_000 + ms * 1_000_000)
    }

    /// 1,250-byte datagrams every 10 ms (1 Mbit/s) from `from` ms for
    /// `count` datagrams.
    fn feed(r: &mut ExpressRate, from: u64, count: u64) {
        for i in 0..count {
            r.on_sent(at(from + 10 * i), 1_250);
        }
    }

    #[test]
    fn a_steady_flow_counts_at_its_rate_from_its_first_tenth_of_a_second() {
        let mut r = ExpressRate::default();
        assert_eq!(r.bps(at(0)), 0.0);
        feed(&mut r, 0, 10);
        let early = r.bps(at(95));
        assert!((0.85e6..1.25e6).contains(&early), "{early}");
        feed(&mut r, 100, 200);
        let steady = r.bps(at(2_095));
        assert!((0.9e6..1.1e6).contains(&steady), "{steady}");
    }

    #[test]
    fn a_flow_that_stops_fades_and_one_that_starts_again_counts_afresh() {
        let mut r = ExpressRate::default();
        feed(&mut r, 0, 100);
        // A quarter second after the last: e^-1 of it.
        let faded = r.bps(at(1_240));
        assert!((0.3e6..0.45e6).contains(&faded), "{faded}");
        assert!(r.bps(at(3_000)) < 1e4);
        // Two seconds of silence later, a flow at half the rate.
        for i in 0..10 {
            r.on_sent(at(3_000 + 20 * i), 1_250);
        }
        let again = r.bps(at(3_195));
        assert!((0.4e6..0.65e6).contains(&again), "{again}");
    }
}
