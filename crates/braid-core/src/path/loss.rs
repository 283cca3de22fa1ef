//! Per-path loss rate from packets the sender declared lost or acked:
//! recent (an exponentially weighted average over about 1000 packets) and
//! over the path's life.

#[derive(Debug, Clone, Default)]
pub struct LossEstimator {
    acked: u64,
    lost: u64,
    ewma: f64,
}

impl LossEstimator {
    /// Weight of one packet in the moving average: ~1000 packets of memory.
    const GAIN: f64 = 1.0 / 1024.0;

    pub fn on_acked(&mut self) {
        self.acked += 1;
        self.ewma -= Self::GAIN * self.ewma;
    }

    pub fn on_lost(&mut self) {
        self.lost += 1;
        self.ewma += Self::GAIN * (1.0 - self.ewma);
    }

    /// Recent loss rate (moving average).
    pub fn recent(&self) -> f64 {
        self.ewma
    }

    /// Loss rate over the path's lifetime.
    pub fn total(&self) -> f64 {
        let n = self.acked + self.lost;
        if n == 0 {
            0.0
        } else {
            self.lost as f64 / n as f64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tracks_rate() {
        let mut l = LossEstimator::default();
        for i in 0..20_000 {
            if i % 50 == 0 {
                l.on_lost()
            } else {
                l.on_acked()
            }
        }
        assert!((l.total() - 0.02).abs() < 1e-9);
        assert!((l.recent() - 0.02).abs() < 0.01, "{}", l.recent());
    }

    #[test]
    fn worked_example_of_the_moving_average() {
        // Each loss moves the average 1/1024 of the way to 1, each ack
        // 1/1024 of the way to 0.
        let g = 1.0 / 1024.0;
        let mut l = LossEstimator::default();
        l.on_lost();
        assert_eq!(l.recent(), g);
        l.on_lost();
        let two = g + g * (1.0 - g);
        assert!((l.recent() - two).abs() < 1e-15, "{}", l.recent());
        l.on_acked();
        assert!(
            (l.recent() - two * (1.0 - g)).abs() < 1e-15,
            "{}",
            l.recent()
        );
        for _ in 0..20_000 {
            l.on_lost();
        }
        assert!(l.recent() > 0.999 && l.recent() <= 1.0, "{}", l.recent());
        assert_eq!(l.total(), 20_002.0 / 20_003.0);
    }
}
