//! Smoothed round-trip time and its variation, RFC 6298 §2.

use std::time::Duration;

#[derive(Debug, Clone, Default)]
pub struct RttEstimator {
    srtt: Option<Duration>,
    rttvar: Duration,
    min: Option<Duration>,
}

impl RttEstimator {
    pub fn on_sample(&mut self, rtt: Duration) {
        self.min = Some(self.min.map_or(rtt, |m| m.min(rtt)));
        match self.srtt {
            // RFC 6298 (2.2): first measurement.
            None => {
                self.srtt = Some(rtt);
                self.rttvar = rtt / 2;
            }
            // RFC 6298 (2.3): alpha = 1/8, beta = 1/4.
            Some(srtt) => {
                let err = srtt.abs_diff(rtt);
                self.rttvar = (self.rttvar * 3 + err) / 4;
                self.srtt = Some((srtt * 7 + rtt) / 8);
            }
        }
    }

    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }

    pub fn rttvar(&self) -> Duration {
        self.rttvar
    }

    pub fn min_rtt(&self) -> Option<Duration> {
        self.min
    }

    /// Retransmission-style timeout, RFC 6298 (2.3), with a caller-chosen floor
    /// (RFC 6298's 1 s floor is far too slow to notice a dead path).
    pub fn timeout(&self, floor: Duration) -> Duration {
        match self.srtt {
            Some(s) => (s + 4 * self.rttvar).max(floor),
            None => floor.max(Duration::from_millis(500)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn follows_rfc6298() {
        let mut e = RttEstimator::default();
        e.on_sample(Duration::from_millis(100));
        assert_eq!(e.srtt(), Some(Duration::from_millis(100)));
        assert_eq!(e.rttvar(), Duration::from_millis(50));
        e.on_sample(Duration::from_millis(200));
        // rttvar = 3/4*50 + 1/4*100 = 62.5; srtt = 7/8*100 + 1/8*200 = 112.5
        assert_eq!(e.rttvar(), Duration::from_micros(62_500));
        assert_eq!(e.srtt(), Some(Duration::from_micros(112_500)));
        assert_eq!(e.min_rtt(), Some(Duration::from_millis(100)));
        assert_eq!(e.timeout(Duration::ZERO), Duration::from_micros(362_500));
    }
}
