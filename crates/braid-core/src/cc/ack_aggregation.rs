//! How much data a path's acknowledgements deliver ahead of its bandwidth
//! estimate, after Linux BBR's `extra_acked`: on a jittery link (a radio
//! scheduler, a queue that holds packets and then lets them go together)
//! acknowledgements come in bursts after gaps, and during a gap the
//! sender must already have the burst in flight, or it sits idle with a
//! full window. A window of `gain * bandwidth * min_rtt` holds no room
//! for that: on 60 Mbit/s with 12.5 ms and up to 10 ms of jitter each way
//! the path delivered less than its estimate every round, the estimate
//! followed, and the path's share fell by half over 15 s.
//!
//! An epoch starts when the acknowledgements fall back to the estimate;
//! the excess of what is acknowledged since over what the estimate would
//! deliver in that time is a sample, and the allowance is the largest
//! sample of the last [`WINDOW_ROUNDS`] round trips. A steady link, even
//! one with a standing queue, acknowledges at its rate and earns none.

use super::windowed_max::WindowedMax;
use crate::time::Instant;

/// Round trips a sample counts for (Linux keeps 5 to 10).
const WINDOW_ROUNDS: u64 = 10;
/// An epoch that has run this long ahead of the estimate is restarted, so
/// that a bandwidth estimate far too low cannot build an unbounded sample.
const EPOCH_RESET_BYTES: u64 = 1 << 20;

#[derive(Debug, Clone)]
pub struct AckAggregation {
    epoch_start: Option<Instant>,
    epoch_acked: u64,
    max: WindowedMax,
}

impl Default for AckAggregation {
    fn default() -> Self {
        AckAggregation::new()
    }
}

impl AckAggregation {
    pub fn new() -> AckAggregation {
        AckAggregation {
            epoch_start: None,
            epoch_acked: 0,
            max: WindowedMax::new(WINDOW_ROUNDS),
        }
    }

    /// Counts `bytes` acknowledged at `now`, in round trip `round`, against
    /// a bandwidth estimate of `bw_bps`; one sample is at most `cap` bytes
    /// (the window: more than that was not in flight to arrive early).
    pub fn on_ack(&mut self, now: Instant, round: u64, bytes: u64, bw_bps: f64, cap: u64) {
        if let Some(start) = self.epoch_start {
            let acked = self.epoch_acked + bytes;
            let expected = (bw_bps / 8.0 * (now - start).as_secs_f64()).ceil() as u64;
            if acked > expected && acked < EPOCH_RESET_BYTES {
                self.epoch_acked = acked;
                self.max.update(round, (acked - expected).min(cap) as f64);
                return;
            }
        }
        // Back at the estimate (or never started): a new epoch. The
        // acknowledgement that starts it is not counted: its packets were
        // delivered before it, at the estimated rate for all we know, and
        // the receiver's batching of acknowledgements (two packets, or
        // 2 ms) is no burst.
        self.epoch_start = Some(now);
        self.epoch_acked = 0;
        self.max.expire(round);
    }

    /// Bytes of window to add for the bursts of the last round trips.
    pub fn extra_bytes(&self) -> u64 {
        self.max.get().map_or(0, |v| v as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MBIT: f64 = 1e6;

    fn at(ms: u64) -> Instant {
        Instant::from_nanos(ms * 1_000_000)
    }

    #[test]
    fn acknowledgements_at_the_estimated_rate_earn_nothing() {
        // 12 Mbit/s = 1500 bytes per ms, acknowledged 1500 bytes per ms.
        let mut a = AckAggregation::new();
        for ms in 0..100 {
            a.on_ack(at(ms), ms / 10, 1500, 12.0 * MBIT, u64::MAX);
        }
        assert!(a.extra_bytes() <= 1500, "{}", a.extra_bytes());
    }

    #[test]
    fn a_burst_after_a_gap_is_the_allowance_until_it_ages_out() {
        let mut a = AckAggregation::new();
        let bw = 12.0 * MBIT;
        for ms in 0..10 {
            a.on_ack(at(ms), 0, 1500, bw, u64::MAX);
        }
        // 10 ms without acknowledgements, then 20 packets at once: 15 of
        // them (22.5 kB) beyond what the estimate delivers in the gap.
        for _ in 0..20 {
            a.on_ack(at(20), 1, 1500, bw, u64::MAX);
        }
        let extra = a.extra_bytes();
        assert!((15 * 1500..=20 * 1500).contains(&extra), "{extra}");
        // Capped by the window.
        let mut capped = AckAggregation::new();
        capped.on_ack(at(0), 0, 1500, bw, u64::MAX);
        for _ in 0..20 {
            capped.on_ack(at(10), 1, 1500, bw, 6000);
        }
        assert_eq!(capped.extra_bytes(), 6000);
        // Then acknowledgements a little below the estimate (a windowed
        // maximum, which the mean rate stays under): the epoch falls back
        // to the estimate and starts again, and after ten round trips the
        // burst is forgotten.
        for ms in 21..400 {
            a.on_ack(at(ms), 2 + (ms - 21) / 10, 1350, bw, u64::MAX);
        }
        assert!(a.extra_bytes() <= 1500, "{}", a.extra_bytes());
    }

    #[test]
    fn acknowledgements_faster_than_the_estimate_earn_their_excess() {
        // Twice the estimated 12 Mbit/s for 10 ms: 1500 bytes per ms
        // beyond it, counted from the first acknowledgement on.
        let mut a = AckAggregation::new();
        for ms in 0..=10 {
            a.on_ack(at(ms), 0, 3000, 12.0 * MBIT, u64::MAX);
        }
        let extra = a.extra_bytes();
        assert!((14_990..=15_000).contains(&extra), "{extra}");
    }

    #[test]
    fn an_estimate_far_too_low_cannot_grow_the_sample_without_bound() {
        let mut a = AckAggregation::new();
        for i in 0..10_000u64 {
            a.on_ack(at(i / 100), 0, 1500, 1.0, u64::MAX);
        }
        assert!(a.extra_bytes() < EPOCH_RESET_BYTES, "{}", a.extra_bytes());
    }
}
