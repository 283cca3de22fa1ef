//! One-dimensional Kalman filter over delivery-rate samples (paper batcp,
//! §3.5: noisy per-ack throughput measurements smoothed into an estimate).
//! The state is a rate assumed constant between samples (random walk with
//! process noise `q`); measurements carry noise `r`. Both are relative to the
//! squared estimate, so the filter behaves the same at 500 kbit/s and 1 Gbit/s.

/// The relative variance the default filter settles at (gain about 0.1).
const SETTLED_VARIANCE: f64 = 0.01;

#[derive(Debug, Clone)]
pub struct KalmanRate {
    estimate_bps: f64,
    /// Estimate variance, relative (dimensionless).
    p: f64,
    q: f64,
    r: f64,
    initialised: bool,
}

impl Default for KalmanRate {
    fn default() -> Self {
        // q/r chosen so the gain settles near 0.1: a step change is mostly
        // followed within ~20 samples, single spikes move it little.
        KalmanRate::new(0.001, 0.1)
    }
}

impl KalmanRate {
    pub fn new(q: f64, r: f64) -> KalmanRate {
        KalmanRate {
            estimate_bps: 0.0,
            p: 1.0,
            q,
            r,
            initialised: false,
        }
    }

    pub fn on_sample(&mut self, sample_bps: f64) {
        if !sample_bps.is_finite() || sample_bps <= 0.0 {
            return;
        }
        if !self.initialised {
            self.estimate_bps = sample_bps;
            self.initialised = true;
            return;
        }
        let p_pred = self.p + self.q;
        let gain = p_pred / (p_pred + self.r);
        self.estimate_bps += gain * (sample_bps - self.estimate_bps);
        self.p = (1.0 - gain) * p_pred;
    }

    /// Starts from `bps` with the confidence of a settled estimate (gain
    /// near 0.1 per sample): a measured seed should not be replaced by
    /// the first trickle sample, as a first sample is.
    pub fn seed(&mut self, bps: f64) {
        if bps.is_finite() && bps > 0.0 {
            self.estimate_bps = bps;
            self.p = SETTLED_VARIANCE;
            self.initialised = true;
        }
    }

    pub fn estimate_bps(&self) -> Option<f64> {
        self.initialised.then_some(self.estimate_bps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converges_and_smooths_noise() {
        let mut k = KalmanRate::default();
        for i in 0..400 {
            // 10 Mbit/s with +-40 % alternating noise.
            let noise = if i % 2 == 0 { 1.4 } else { 0.6 };
            k.on_sample(10e6 * noise);
        }
        let e = k.estimate_bps().unwrap();
        assert!((e - 10e6).abs() < 1.5e6, "{e}");
        for _ in 0..100 {
            k.on_sample(5e6);
        }
        let e = k.estimate_bps().unwrap();
        assert!((e - 5e6).abs() < 0.5e6, "{e}");
    }

    #[test]
    fn a_seed_is_held_like_a_settled_estimate() {
        let mut k = KalmanRate::default();
        k.seed(f64::INFINITY);
        k.seed(-1.0);
        k.seed(0.0);
        assert_eq!(k.estimate_bps(), None);
        k.seed(60e6);
        assert_eq!(k.estimate_bps(), Some(60e6));
        // One trickle sample moves it about a tenth of the way, where an
        // unseeded filter's second sample moves it most of the way.
        k.on_sample(1e6);
        let e = k.estimate_bps().unwrap();
        assert!((52e6..56e6).contains(&e), "{e}");
    }

    #[test]
    fn worked_example_follows_the_filter_equations() {
        // Default q = 0.001, r = 0.1, p = 1. The first sample is taken as
        // is; then p' = p + q, gain = p' / (p' + r), x += gain (z - x),
        // p = (1 - gain) p'.
        let mut k = KalmanRate::default();
        k.on_sample(10e6);
        assert_eq!(k.estimate_bps(), Some(10e6));
        // p' = 1.001, gain = 1.001 / 1.101 = 0.909174.
        k.on_sample(20e6);
        let e = k.estimate_bps().unwrap();
        assert!((e - 19_091_734.79).abs() < 1.0, "{e}");
        // p = 0.0909173, p' = 0.0919173, gain = 0.478942.
        k.on_sample(10e6);
        let e = k.estimate_bps().unwrap();
        assert!((e - 14_737_317.85).abs() < 1.0, "{e}");
    }

    #[test]
    fn impossible_samples_are_ignored() {
        let mut k = KalmanRate::default();
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.0, -5e6] {
            k.on_sample(bad);
            assert_eq!(k.estimate_bps(), None, "{bad}");
        }
        k.on_sample(8e6);
        for bad in [f64::NAN, f64::INFINITY, 0.0, -5e6] {
            k.on_sample(bad);
            assert_eq!(k.estimate_bps(), Some(8e6), "{bad}");
        }
    }
}
