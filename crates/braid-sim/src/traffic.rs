//! Application traffic offered to the bonding sender.
//!
//! `cbr:RATE` or `cbr:PCT%` (of the paths' ideal goodput), a ramp after paper
//! multipath-bonding-layer3 (`ramp:FROM:TO:RISE:HOLD`: exponential rise from
//! FROM to TO over RISE in 200 ms steps, hold for HOLD, then a mirror-image
//! fall over RISE), and `elastic`, which offers whatever the sender's queue
//! will take. Rates are of application payload.

use std::time::Duration;

use crate::spec::{parse_duration, parse_rate, SpecError};

#[derive(Debug, Clone, PartialEq)]
pub enum TrafficSpec {
    Cbr {
        bps: f64,
    },
    CbrFraction {
        fraction: f64,
    },
    Ramp {
        from_bps: f64,
        to_bps: f64,
        rise: Duration,
        hold: Duration,
    },
    Elastic,
}

#[derive(Debug, thiserror::Error)]
pub enum TrafficError {
    #[error("bad traffic {0:?}: expected cbr:RATE, cbr:PCT%, ramp:FROM:TO:RISE:HOLD or elastic")]
    Syntax(String),
    #[error("bad traffic {0:?}: {1}")]
    Value(String, SpecError),
}

/// Ramp rate steps, as in the paper ("every 200 ms").
const RAMP_STEP: Duration = Duration::from_millis(200);

impl TrafficSpec {
    pub fn parse(s: &str) -> Result<TrafficSpec, TrafficError> {
        let syntax = || TrafficError::Syntax(s.to_owned());
        let value = |e| TrafficError::Value(s.to_owned(), e);
        let parts: Vec<&str> = s.split(':').collect();
        match parts.as_slice() {
            ["elastic"] => Ok(TrafficSpec::Elastic),
            ["cbr", pct] if pct.ends_with('%') => {
                let f: f64 = pct
                    .trim_end_matches('%')
                    .parse()
                    .ok()
                    .filter(|f: &f64| f.is_finite() && *f > 0.0 && *f <= 1000.0)
                    .ok_or_else(syntax)?;
                Ok(TrafficSpec::CbrFraction {
                    fraction: f / 100.0,
                })
            }
            ["cbr", rate] => Ok(TrafficSpec::Cbr {
                bps: parse_rate(rate).map_err(value)? as f64,
            }),
            ["ramp", from, to, rise, hold] => Ok(TrafficSpec::Ramp {
                from_bps: parse_rate(from).map_err(value)? as f64,
                to_bps: parse_rate(to).map_err(value)? as f64,
                rise: parse_duration(rise).map_err(value)?,
                hold: parse_duration(hold).map_err(value)?,
            }),
            _ => Err(syntax()),
        }
    }
}

/// Produces send times for fixed-size datagrams.
#[derive(Debug, Clone)]
pub struct Source {
    spec: TrafficSpec,
    /// Rate that `CbrFraction` and `Elastic` resolve against.
    ideal_bps: f64,
    payload_bytes: usize,
    next: Duration,
}

impl Source {
    pub fn new(spec: TrafficSpec, ideal_bps: f64, payload_bytes: usize) -> Source {
        Source {
            spec,
            ideal_bps,
            payload_bytes,
            next: Duration::ZERO,
        }
    }

    pub fn is_elastic(&self) -> bool {
        self.spec == TrafficSpec::Elastic
    }

    /// Offered payload rate at time `t`.
    pub fn rate_at(&self, t: Duration) -> f64 {
        match self.spec {
            TrafficSpec::Cbr { bps } => bps,
            TrafficSpec::CbrFraction { fraction } => fraction * self.ideal_bps,
            // Elastic offers at twice the ceiling and is held back by the
            // sender's queue; the cap only matters for window-free
            // schedulers, which never push back.
            TrafficSpec::Elastic => 2.0 * self.ideal_bps,
            TrafficSpec::Ramp {
                from_bps,
                to_bps,
                rise,
                hold,
            } => {
                let step = |d: Duration| {
                    // Exponential in whole 200 ms steps.
                    let steps = (rise.as_secs_f64() / RAMP_STEP.as_secs_f64()).max(1.0);
                    let k = (d.as_secs_f64() / RAMP_STEP.as_secs_f64())
                        .floor()
                        .min(steps);
                    from_bps * (to_bps / from_bps).powf(k / steps)
                };
                if t < rise {
                    step(t)
                } else if t < rise + hold {
                    to_bps
                } else if t < rise + hold + rise {
                    step(rise + hold + rise - t)
                } else {
                    from_bps
                }
            }
        }
    }

    /// Time of the next datagram; advances the source.
    pub fn next_send(&mut self) -> Duration {
        let now = self.next;
        let rate = self.rate_at(now).max(1.0);
        self.next = now + Duration::from_secs_f64(self.payload_bytes as f64 * 8.0 / rate);
        now
    }

    pub fn peek(&self) -> Duration {
        self.next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses() {
        assert_eq!(
            TrafficSpec::parse("cbr:10mbit").unwrap(),
            TrafficSpec::Cbr { bps: 1e7 }
        );
        assert_eq!(
            TrafficSpec::parse("cbr:95%").unwrap(),
            TrafficSpec::CbrFraction { fraction: 0.95 }
        );
        assert_eq!(TrafficSpec::parse("elastic").unwrap(), TrafficSpec::Elastic);
        assert!(TrafficSpec::parse("ramp:63mbit:105mbit:15s:10s").is_ok());
        for bad in [
            "",
            "cbr",
            "cbr:x",
            "cbr:0%",
            "ramp:1mbit:2mbit:1s",
            "poisson:1mbit",
        ] {
            assert!(TrafficSpec::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn cbr_spacing() {
        let mut s = Source::new(TrafficSpec::Cbr { bps: 8e6 }, 0.0, 1000);
        assert_eq!(s.next_send(), Duration::ZERO);
        assert_eq!(s.next_send(), Duration::from_millis(1));
    }

    #[test]
    fn ramp_rises_holds_falls() {
        let s = Source::new(
            TrafficSpec::parse("ramp:63mbit:105mbit:15s:10s").unwrap(),
            0.0,
            1000,
        );
        let r = |secs: f64| s.rate_at(Duration::from_secs_f64(secs));
        assert_eq!(r(0.0), 63e6);
        assert!(r(7.5) > 63e6 && r(7.5) < 105e6);
        assert!(
            r(7.5) < (63e6 + 105e6) / 2.0,
            "exponential rise is below linear"
        );
        assert_eq!(r(20.0), 105e6);
        assert!((r(32.5) - r(7.5)).abs() < 1.0, "fall mirrors the rise");
        assert_eq!(r(45.0), 63e6);
    }
}
