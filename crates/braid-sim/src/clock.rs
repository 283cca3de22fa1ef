//! The endpoints' own clocks. The simulator's event time is true time; each
//! endpoint reads a clock that differs from it, and every timestamp the
//! endpoint writes, every timer it arms and every span it measures is on that
//! clock. What a run sets is the receiver's clock relative to the sender's:
//! an offset, a rate error (skew) and optionally one step.
//!
//! The core's `Instant` is monotonic (as `CLOCK_MONOTONIC` is), so neither
//! clock ever runs backwards: a step that sets the receiver back by `d` is
//! made by stepping the sender forward by `d`. The relative difference,
//! which is all that one-way-delay samples see, is the same either way.

use std::time::Duration;

use braid_core::time::Instant;

/// Largest rate error accepted, parts per million: a quartz oscillator is
/// within ±100 ppm, NTP slews at most 500 ppm; beyond 1 % nothing is a clock.
pub const MAX_SKEW_PPM: f64 = 10_000.0;

/// Largest offset or step accepted, seconds (a day): enough to cross the
/// 32-bit microsecond wrap of the wire timestamps many times.
pub const MAX_OFFSET_S: f64 = 86_400.0;

/// The receiver's clock relative to the sender's.
#[derive(Debug, Clone, Copy, PartialEq, Default, serde::Serialize)]
pub struct ClockSpec {
    /// Receiver minus sender at the start, seconds (may be negative).
    pub offset_s: f64,
    /// Receiver's rate error, parts per million (positive: it runs fast).
    pub skew_ppm: f64,
    /// At this true time the receiver's clock jumps by `by_s` seconds.
    pub step: Option<ClockStep>,
}

#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct ClockStep {
    /// True time of the step, seconds from the start of the run.
    pub at_s: f64,
    pub by_s: f64,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum ClockError {
    #[error(
        "bad clock offset {0:?}: expected a signed duration such as 3s, -250ms (at most a day)"
    )]
    Offset(String),
    #[error(
        "bad clock skew {0:?}: expected parts per million, such as 100 or -20 (at most ±10000)"
    )]
    Skew(String),
    #[error("bad clock step {0:?}: expected AT+DUR such as 30s+1s or 30s+-1s (DUR at most a day)")]
    Step(String),
}

/// Parses a signed duration (`-3s`, `+250ms`, `1.5s`) into seconds.
fn parse_signed_secs(s: &str) -> Option<f64> {
    let s = s.trim();
    let (sign, rest) = match s.strip_prefix('-') {
        Some(r) => (-1.0, r),
        None => (1.0, s.strip_prefix('+').unwrap_or(s)),
    };
    let d = crate::spec::parse_duration(rest).ok()?;
    let secs = sign * d.as_secs_f64();
    (secs.abs() <= MAX_OFFSET_S).then_some(secs)
}

impl ClockSpec {
    pub fn parse_offset(s: &str) -> Result<f64, ClockError> {
        parse_signed_secs(s).ok_or_else(|| ClockError::Offset(s.to_owned()))
    }

    pub fn parse_skew(s: &str) -> Result<f64, ClockError> {
        let err = || ClockError::Skew(s.to_owned());
        let v: f64 = s
            .trim()
            .trim_end_matches("ppm")
            .parse()
            .map_err(|_| err())?;
        if !(v.is_finite() && v.abs() <= MAX_SKEW_PPM) {
            return Err(err());
        }
        Ok(v)
    }

    /// `AT+DUR`: at true time AT the receiver's clock moves by DUR (signed).
    pub fn parse_step(s: &str) -> Result<ClockStep, ClockError> {
        let err = || ClockError::Step(s.to_owned());
        let (at, by) = s.split_once('+').ok_or_else(err)?;
        let at = crate::spec::parse_duration(at).map_err(|_| err())?;
        let by_s = parse_signed_secs(by)
            .filter(|b| *b != 0.0)
            .ok_or_else(err)?;
        Ok(ClockStep {
            at_s: at.as_secs_f64(),
            by_s,
        })
    }

    /// The sender's and the receiver's clocks.
    pub fn clocks(&self) -> (Clock, Clock) {
        let nanos = |s: f64| (s * 1e9).round() as i128;
        let offset = nanos(self.offset_s);
        // Both clocks start at or above zero; their difference is the offset.
        let sender_base = (-offset).max(0);
        let receiver_base = offset.max(0);
        let (mut sender_step, mut receiver_step) = (None, None);
        if let Some(step) = self.step {
            let at = Duration::from_secs_f64(step.at_s);
            let by = nanos(step.by_s);
            if by > 0 {
                receiver_step = Some((at, by));
            } else {
                sender_step = Some((at, -by));
            }
        }
        let sender = Clock {
            base: sender_base,
            skew_ppb: 0,
            step: sender_step,
        };
        let receiver = Clock {
            base: receiver_base,
            skew_ppb: (self.skew_ppm * 1e3).round() as i128,
            step: receiver_step,
        };
        (sender, receiver)
    }
}

/// One endpoint's clock: `base + t + t * skew + (step if t >= at)`, in
/// nanoseconds of true time `t`. Monotonic: the step only moves it forward.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clock {
    base: i128,
    /// Rate error, parts per billion (more than -1e9).
    skew_ppb: i128,
    /// (true time, forward jump in nanoseconds).
    step: Option<(Duration, i128)>,
}

impl Clock {
    /// The clock that reads true time.
    pub const TRUE: Clock = Clock {
        base: 0,
        skew_ppb: 0,
        step: None,
    };

    fn read_nanos(&self, t: Duration) -> i128 {
        let t = t.as_nanos() as i128;
        let drift = (t * self.skew_ppb).div_euclid(1_000_000_000);
        let jump = match self.step {
            Some((at, by)) if t >= at.as_nanos() as i128 => by,
            _ => 0,
        };
        self.base + t + drift + jump
    }

    /// What the clock reads at true time `t`.
    pub fn read(&self, t: Duration) -> Instant {
        Instant::from_nanos(u64::try_from(self.read_nanos(t)).expect("clock reads >= 0"))
    }

    /// The first true time at or after `now` at which the clock reads at
    /// least `local`: when a timer armed for `local` fires.
    pub fn true_time_of(&self, local: Instant, now: Duration) -> Duration {
        let target = i128::from(local.as_nanos());
        if self.read_nanos(now) >= target {
            return now;
        }
        // Before the step, then (if the step comes first) after it.
        let segments = match self.step {
            Some((at, by)) if now < at => [(self.base, Some(at)), (self.base + by, None)],
            Some((_, by)) => [(self.base + by, None), (self.base + by, None)],
            None => [(self.base, None), (self.base, None)],
        };
        for (base, end) in segments {
            let t = self.invert(base, target).max(now.as_nanos() as i128);
            let t = Duration::from_nanos(u64::try_from(t).expect("true time >= 0"));
            if end.is_none_or(|end| t < end) {
                return t;
            }
            if let Some(end) = end {
                if self.read_nanos(end) >= target {
                    return end;
                }
            }
        }
        unreachable!("the last segment is unbounded")
    }

    /// Smallest true time (ns) at which `base + t + t * skew >= target`.
    fn invert(&self, base: i128, target: i128) -> i128 {
        let reads = |t: i128| base + t + (t * self.skew_ppb).div_euclid(1_000_000_000);
        let rate = 1_000_000_000 + self.skew_ppb;
        let mut t = ((target - base) * 1_000_000_000).div_euclid(rate).max(0);
        // The division is within a nanosecond or two of the answer.
        while reads(t) < target {
            t += 1;
        }
        while t > 0 && reads(t - 1) >= target {
            t -= 1;
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: f64) -> Duration {
        Duration::from_secs_f64(s)
    }

    #[test]
    fn parses_signed_values() {
        assert_eq!(ClockSpec::parse_offset("-3s"), Ok(-3.0));
        assert_eq!(ClockSpec::parse_offset("+250ms"), Ok(0.25));
        assert_eq!(ClockSpec::parse_skew("-100"), Ok(-100.0));
        assert_eq!(ClockSpec::parse_skew("20ppm"), Ok(20.0));
        assert_eq!(
            ClockSpec::parse_step("30s+-1s"),
            Ok(ClockStep {
                at_s: 30.0,
                by_s: -1.0
            })
        );
        assert!(ClockSpec::parse_offset("3").is_err());
        assert!(ClockSpec::parse_offset("2d").is_err());
        assert!(ClockSpec::parse_offset("100000s").is_err());
        assert!(ClockSpec::parse_skew("20000").is_err());
        assert!(ClockSpec::parse_skew("NaN").is_err());
        assert!(ClockSpec::parse_step("30s").is_err());
        assert!(ClockSpec::parse_step("30s+0s").is_err());
        assert!(ClockSpec::parse_step("-1s+1s").is_err());
    }

    #[test]
    fn default_clocks_read_true_time() {
        let (s, r) = ClockSpec::default().clocks();
        assert_eq!(s, Clock::TRUE);
        assert_eq!(r, Clock::TRUE);
        let t = secs(12.345_678_9);
        assert_eq!(r.read(t), Instant::from_duration(t));
        assert_eq!(r.true_time_of(Instant::from_duration(t), secs(1.0)), t);
    }

    #[test]
    fn difference_is_offset_plus_drift_plus_step() {
        let spec = ClockSpec {
            offset_s: -3.0,
            skew_ppm: 100.0,
            step: Some(ClockStep {
                at_s: 30.0,
                by_s: -1.0,
            }),
        };
        let (s, r) = spec.clocks();
        let diff = |t: f64| {
            r.read(secs(t)).as_nanos() as f64 / 1e9 - s.read(secs(t)).as_nanos() as f64 / 1e9
        };
        assert!((diff(0.0) + 3.0).abs() < 1e-9);
        assert!((diff(20.0) - (-3.0 + 0.002)).abs() < 1e-8);
        assert!((diff(40.0) - (-4.0 + 0.004)).abs() < 1e-8);
        // Neither clock runs backwards across the step.
        assert!(s.read(secs(30.0)) > s.read(secs(29.999)));
        assert!(r.read(secs(30.0)) > r.read(secs(29.999)));
    }

    #[test]
    fn timers_fire_when_the_clock_reaches_them() {
        for spec in [
            ClockSpec {
                skew_ppm: -100.0,
                ..ClockSpec::default()
            },
            ClockSpec {
                offset_s: 7.0,
                skew_ppm: 333.3,
                step: Some(ClockStep {
                    at_s: 10.0,
                    by_s: 1.0,
                }),
            },
        ] {
            let (_, r) = spec.clocks();
            for t in [0.5, 9.9995, 10.0, 10.4, 25.0] {
                let now = secs(t - 0.3);
                let local = r.read(secs(t));
                let fire = r.true_time_of(local, now);
                assert!(r.read(fire) >= local, "{spec:?} {t}");
                assert!(fire <= secs(t), "{spec:?} {t}: {fire:?}");
                let before = fire - Duration::from_nanos(1);
                assert!(fire == now || r.read(before) < local, "{spec:?} {t}");
            }
        }
        // A deadline inside a forward jump fires at the jump.
        let spec = ClockSpec {
            step: Some(ClockStep {
                at_s: 10.0,
                by_s: 1.0,
            }),
            ..ClockSpec::default()
        };
        let (_, r) = spec.clocks();
        let fire = r.true_time_of(Instant::from_duration(secs(10.5)), secs(9.0));
        assert_eq!(fire, secs(10.0));
    }
}
