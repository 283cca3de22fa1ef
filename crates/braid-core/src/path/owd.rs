//! Relative one-way delay. Sender and receiver clocks differ by an unknown
//! offset, so a single sample `recv_ts - send_ts` means nothing; but the
//! offset is the same for every packet and every path between the same two
//! hosts, so differences between samples (queueing growth) and between paths
//! (which path is shorter, by how much) are exact. Values are kept as signed
//! microseconds anchored at the first sample to survive 32-bit wrap-around.

use std::time::Duration;

#[derive(Debug, Clone, Default)]
pub struct OwdEstimator {
    smoothed_us: f64,
    var_us: f64,
    min_us: i64,
    samples: u64,
}

impl OwdEstimator {
    /// Converts a raw `recv_ts - send_ts` (wrapping u32 microseconds) into a
    /// relative one-way delay in microseconds, consistent across paths that
    /// share `anchor`.
    pub fn unwrap_raw(anchor: u32, raw: u32) -> i64 {
        i64::from(raw.wrapping_sub(anchor) as i32)
    }

    /// Records a sample; `raw` is `recv_ts_us.wrapping_sub(send_ts_us)`.
    /// `anchor` must be shared by all paths of a session so paths compare.
    pub fn on_sample(&mut self, anchor: u32, raw: u32) {
        let v = Self::unwrap_raw(anchor, raw);
        let vf = v as f64;
        if self.samples == 0 {
            self.smoothed_us = vf;
            self.var_us = 0.0;
            self.min_us = v;
        } else {
            // Same gains as RFC 6298's RTT estimator.
            self.var_us = 0.75 * self.var_us + 0.25 * (self.smoothed_us - vf).abs();
            self.smoothed_us = 0.875 * self.smoothed_us + 0.125 * vf;
            self.min_us = self.min_us.min(v);
        }
        self.samples += 1;
    }

    pub fn has_samples(&self) -> bool {
        self.samples > 0
    }

    /// Smoothed relative one-way delay, microseconds (offset unknown).
    pub fn smoothed_us(&self) -> f64 {
        self.smoothed_us
    }

    pub fn min_us(&self) -> i64 {
        self.min_us
    }

    /// Delay above the path's minimum: queueing, in effect.
    pub fn queueing(&self) -> Duration {
        Duration::from_micros((self.smoothed_us - self.min_us as f64).max(0.0) as u64)
    }

    /// `smoothed + 4 * var`, the latest plausible arrival, relative.
    pub fn upper_us(&self) -> f64 {
        self.smoothed_us + 4.0 * self.var_us
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_survive_wraparound_and_offset() {
        let anchor = u32::MAX - 10;
        let mut a = OwdEstimator::default();
        let mut b = OwdEstimator::default();
        // Path b is 30 ms longer; raw values straddle the u32 wrap.
        for _ in 0..50 {
            a.on_sample(anchor, anchor.wrapping_add(5_000));
            b.on_sample(anchor, anchor.wrapping_add(35_000));
        }
        let diff = b.smoothed_us() - a.smoothed_us();
        assert!((diff - 30_000.0).abs() < 1.0, "{diff}");
        assert_eq!(b.min_us() - a.min_us(), 30_000);
        assert_eq!(a.queueing(), Duration::ZERO);
    }
}
