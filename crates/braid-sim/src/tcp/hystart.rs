//! HyStart's delay detection, as Linux CUBIC runs it by default
//! (`tcp_cubic.c`, `hystart_detect` bit 2): slow start ends once the
//! lowest of a round's first eight RTT samples exceeds the connection's
//! lowest RTT by an eighth of it, at least 4 ms and at most 16 ms. Linux's
//! other detector (the ACK train) is not modelled. Checked only from a
//! window of 16 segments (`hystart_low_window`).

use std::time::Duration;

/// Samples of a round that its delay is judged on.
const ROUND_SAMPLES: u32 = 8;
/// The window from which HyStart may end slow start, in segments.
pub const LOW_WINDOW: f64 = 16.0;
const THRESH_MIN: Duration = Duration::from_millis(4);
const THRESH_MAX: Duration = Duration::from_millis(16);

#[derive(Debug, Default, Clone)]
pub struct HyStart {
    /// Lowest RTT of the connection.
    delay_min: Option<Duration>,
    /// The current round ends when everything sent before it started is
    /// acknowledged: at this segment.
    round_end: u64,
    round_min: Option<Duration>,
    samples: u32,
}

impl HyStart {
    /// One RTT sample in slow start; `una` and `next` are the sender's
    /// oldest unacknowledged and next new segment. True: leave slow start.
    pub fn on_sample(&mut self, rtt: Duration, una: u64, next: u64, cwnd: f64) -> bool {
        self.delay_min = Some(self.delay_min.map_or(rtt, |d| d.min(rtt)));
        if una >= self.round_end {
            self.round_end = next;
            self.round_min = None;
            self.samples = 0;
        }
        if self.samples >= ROUND_SAMPLES {
            return false;
        }
        self.samples += 1;
        let round_min = self.round_min.map_or(rtt, |m| m.min(rtt));
        self.round_min = Some(round_min);
        let Some(delay_min) = self.delay_min else {
            return false;
        };
        let thresh = (delay_min / 8).clamp(THRESH_MIN, THRESH_MAX);
        cwnd >= LOW_WINDOW && self.samples == ROUND_SAMPLES && round_min > delay_min + thresh
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// Feeds one round of eight samples of `rtt` starting at segment
    /// `una`, with `next` sent; returns whether any said to exit.
    fn round(h: &mut HyStart, rtt: Duration, una: u64, next: u64, cwnd: f64) -> bool {
        (0..8).any(|i| h.on_sample(rtt, una + i, next, cwnd))
    }

    #[test]
    fn a_round_whose_delay_rose_past_the_threshold_ends_slow_start() {
        let mut h = HyStart::default();
        assert!(!round(&mut h, ms(13), 0, 20, 20.0));
        // 13 ms / 8 is below 4 ms: the threshold is 4 ms.
        assert!(!round(&mut h, ms(17), 20, 40, 40.0));
        assert!(round(&mut h, ms(18), 40, 80, 80.0));
    }

    #[test]
    fn the_threshold_is_an_eighth_of_the_minimum_within_4_and_16_ms() {
        // 80 ms: 10 ms.
        let mut h = HyStart::default();
        assert!(!round(&mut h, ms(80), 0, 20, 20.0));
        assert!(!round(&mut h, ms(90), 20, 40, 40.0));
        assert!(round(&mut h, ms(91), 40, 80, 80.0));
        // 400 ms: 16 ms, not 50.
        let mut h = HyStart::default();
        assert!(!round(&mut h, ms(400), 0, 20, 20.0));
        assert!(!round(&mut h, ms(416), 20, 40, 40.0));
        assert!(round(&mut h, ms(417), 40, 80, 80.0));
    }

    #[test]
    fn only_a_rounds_first_samples_and_a_window_of_16_count() {
        let mut h = HyStart::default();
        assert!(!round(&mut h, ms(10), 0, 20, 20.0));
        // Eight low samples, then high ones in the same round: no exit.
        assert!(!round(&mut h, ms(10), 20, 60, 40.0));
        assert!(!(28..40).any(|una| h.on_sample(ms(30), una, 60, 40.0)));
        // A high round below a window of 16: no exit either.
        assert!(!round(&mut h, ms(30), 60, 70, 15.0));
    }
}
