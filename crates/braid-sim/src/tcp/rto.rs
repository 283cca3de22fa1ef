//! The retransmission timeout (RFC 6298) as Linux computes it: the
//! variance term is at least 200 ms (Linux's `tcp_rto_min` bounds its
//! `rttvar`), so RTO = SRTT + max(G, 4 RTTVAR, 200 ms), not the RFC's
//! max(1 s, SRTT + max(G, 4 RTTVAR)). On a path of steady delay the RFC's
//! variance term falls to nothing and the timer would fire before one
//! round trip of fast recovery ends.

use std::time::Duration;

const INITIAL_RTO: Duration = Duration::from_secs(1);
/// Least variance term.
const MIN_RTTVAR_TERM: Duration = Duration::from_millis(200);
const MAX_RTO: Duration = Duration::from_secs(60);
/// Clock granularity G.
const GRANULARITY: Duration = Duration::from_millis(1);

#[derive(Debug, Clone)]
pub struct Rto {
    srtt: Option<Duration>,
    rttvar: Duration,
    /// Doublings since the last acknowledgement of new data.
    backoff: u32,
}

impl Rto {
    pub fn new() -> Rto {
        Rto {
            srtt: None,
            rttvar: Duration::ZERO,
            backoff: 0,
        }
    }

    pub fn srtt(&self) -> Option<Duration> {
        self.srtt
    }

    pub fn on_sample(&mut self, r: Duration) {
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(srtt) => {
                let err = srtt.abs_diff(r);
                self.rttvar = self.rttvar * 3 / 4 + err / 4;
                self.srtt = Some(srtt * 7 / 8 + r / 8);
            }
        }
    }

    /// The current timeout, backed off.
    pub fn rto(&self) -> Duration {
        let base = match self.srtt {
            None => INITIAL_RTO,
            Some(srtt) => srtt + GRANULARITY.max(self.rttvar * 4).max(MIN_RTTVAR_TERM),
        };
        base.saturating_mul(1 << self.backoff.min(16)).min(MAX_RTO)
    }

    pub fn back_off(&mut self) {
        self.backoff = self.backoff.saturating_add(1);
    }

    pub fn reset_backoff(&mut self) {
        self.backoff = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn follows_rfc_6298() {
        let mut r = Rto::new();
        assert_eq!(r.rto(), ms(1000));
        r.on_sample(ms(100));
        // SRTT 100, RTTVAR 50: 100 + max(4 * 50, 200).
        assert_eq!(r.rto(), ms(300));
        r.on_sample(ms(300));
        // SRTT 125, RTTVAR 0.75 * 50 + 0.25 * 200 = 87.5: 125 + 350.
        assert_eq!(r.rto(), ms(475));
        for _ in 0..100 {
            r.on_sample(ms(100));
        }
        // Steady: SRTT 100, the variance term at its floor.
        assert!(r.rto().abs_diff(ms(300)) < ms(1), "{:?}", r.rto());
        r.back_off();
        r.back_off();
        assert!(r.rto().abs_diff(ms(1200)) < ms(4), "{:?}", r.rto());
        for _ in 0..20 {
            r.back_off();
        }
        assert_eq!(r.rto(), MAX_RTO);
        r.reset_backoff();
        assert!(r.rto() < ms(301));
    }
}
