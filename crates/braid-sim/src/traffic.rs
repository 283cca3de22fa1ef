//! Application traffic offered to the bonding sender.
//!
//! `cbr:RATE` or `cbr:PCT%` (of the paths' ideal goodput), a ramp after paper
//! multipath-bonding-layer3 (`ramp:FROM:TO:RISE:HOLD`: exponential rise from
//! FROM to TO over RISE in 200 ms steps, hold for HOLD, then a mirror-image
//! fall over RISE), and `tcp[:cubic|reno][:N]`: N closed-loop bulk TCP
//! connections (see [`crate::tcp`]); `cubic+hystart` or `reno+hystart`
//! adds HyStart's delay detection to their slow start, as Linux has it, and
//! a suffix `@START` opens them at START into the run instead of at zero
//! (a transfer that begins while other traffic has been flowing).
//! Rates are of application payload.
//! `bulk[:SIZE]` is reliable mode's traffic: one stream of SIZE bytes (or as
//! many as the run carries) written as fast as the stream takes it.

use std::time::Duration;

use crate::spec::{parse_duration, parse_rate, SpecError};
use crate::tcp::{TcpCc, HYSTART_SUFFIX};

/// Most TCP connections one traffic source runs.
pub const MAX_TCP_FLOWS: u32 = 64;

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
    Tcp {
        cc: TcpCc,
        flows: u32,
        /// Slow start also ends by HyStart's delay detection.
        hystart: bool,
        /// When the connections open.
        start: Duration,
    },
    /// A reliable bulk transfer of `bytes` (unbounded when `None`).
    Bulk {
        bytes: Option<u64>,
    },
}

#[derive(Debug, thiserror::Error)]
pub enum TrafficError {
    #[error("bad traffic {0:?}: expected cbr:RATE, cbr:PCT%, ramp:FROM:TO:RISE:HOLD, tcp[:cubic|reno[+hystart]][:N][@START] (N 1 to 64) or bulk[:SIZE]")]
    Syntax(String),
    #[error("bad traffic {0:?}: {1}")]
    Value(String, SpecError),
    #[error("bad traffic {0:?}: {1}")]
    Range(String, &'static str),
}

/// Ramp rate steps, as in the paper ("every 200 ms").
const RAMP_STEP: Duration = Duration::from_millis(200);

impl TrafficSpec {
    /// When the source starts: `@START` for TCP, zero for the others.
    pub fn start(&self) -> Duration {
        match self {
            TrafficSpec::Tcp { start, .. } => *start,
            _ => Duration::ZERO,
        }
    }

    pub fn parse(s: &str) -> Result<TrafficSpec, TrafficError> {
        let syntax = || TrafficError::Syntax(s.to_owned());
        let value = |e| TrafficError::Value(s.to_owned(), e);
        let (body, start) = match s.split_once('@') {
            Some((body, start)) if body.starts_with("tcp") => {
                (body, parse_duration(start).map_err(value)?)
            }
            Some(_) => return Err(syntax()),
            None => (s, Duration::ZERO),
        };
        let parts: Vec<&str> = body.split(':').collect();
        let range = |what| TrafficError::Range(s.to_owned(), what);
        let flows = |n: &str| match n.parse::<u64>() {
            Ok(n) if (1..=u64::from(MAX_TCP_FLOWS)).contains(&n) => Ok(n as u32),
            Ok(_) => Err(range("N, the number of TCP connections, is 1 to 64")),
            Err(_) => Err(syntax()),
        };
        let cc = |c: &str| {
            let (name, hystart) = match c.strip_suffix(HYSTART_SUFFIX) {
                Some(name) => (name, true),
                None => (c, false),
            };
            match name {
                "cubic" => Ok((TcpCc::Cubic, hystart)),
                "reno" => Ok((TcpCc::Reno, hystart)),
                _ => Err(syntax()),
            }
        };
        let tcp = |(cc, hystart), flows| TrafficSpec::Tcp {
            cc,
            flows,
            hystart,
            start,
        };
        match parts.as_slice() {
            ["tcp"] => Ok(tcp((TcpCc::Cubic, false), 1)),
            ["tcp", x] if x.starts_with(|c: char| c.is_ascii_digit()) => {
                Ok(tcp((TcpCc::Cubic, false), flows(x)?))
            }
            ["tcp", c] => Ok(tcp(cc(c)?, 1)),
            ["tcp", c, n] => Ok(tcp(cc(c)?, flows(n)?)),
            ["bulk"] => Ok(TrafficSpec::Bulk { bytes: None }),
            ["bulk", size] => Ok(TrafficSpec::Bulk {
                bytes: Some(parse_size(size).ok_or_else(|| {
                    range(
                        "SIZE is a whole number of B, kB, MB, GB, KiB, MiB or GiB, at least one byte and under 16 EiB (bulk:64MiB)",
                    )
                })?),
            }),
            ["cbr", pct] if pct.ends_with('%') => {
                let f: f64 = pct.trim_end_matches('%').parse().map_err(|_| syntax())?;
                if !(f.is_finite() && f > 0.0 && f <= 1000.0) {
                    return Err(range(
                        "PCT% of the ideal goodput is above 0 and at most 1000%",
                    ));
                }
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

/// A byte count: digits with an optional unit, `B`, `kB`, `MB`, `GB`
/// (powers of 1000) or `KiB`, `MiB`, `GiB` (powers of 1024); at least one byte.
pub fn parse_size(s: &str) -> Option<u64> {
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (digits, unit) = s.split_at(split);
    let n: u64 = digits.parse().ok()?;
    let scale: u64 = match unit {
        "" | "B" => 1,
        "kB" => 1_000,
        "MB" => 1_000_000,
        "GB" => 1_000_000_000,
        "KiB" => 1 << 10,
        "MiB" => 1 << 20,
        "GiB" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(scale).filter(|&b| b > 0)
}

/// A rate as the traffic syntax writes it.
fn rate_text(bps: f64) -> String {
    if bps >= 1e6 && bps % 1e6 == 0.0 {
        format!("{}mbit", bps / 1e6)
    } else if bps >= 1e3 && bps % 1e3 == 0.0 {
        format!("{}kbit", bps / 1e3)
    } else {
        format!("{bps}bit")
    }
}

/// The spec in the syntax [`TrafficSpec::parse`] reads.
impl std::fmt::Display for TrafficSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TrafficSpec::Cbr { bps } => write!(f, "cbr:{}", rate_text(*bps)),
            TrafficSpec::CbrFraction { fraction } => write!(f, "cbr:{}%", fraction * 100.0),
            TrafficSpec::Ramp {
                from_bps,
                to_bps,
                rise,
                hold,
            } => write!(
                f,
                "ramp:{}:{}:{}ms:{}ms",
                rate_text(*from_bps),
                rate_text(*to_bps),
                rise.as_millis(),
                hold.as_millis()
            ),
            TrafficSpec::Tcp {
                cc,
                flows,
                hystart,
                start,
            } => {
                write!(f, "tcp:{}:{flows}", cc.label(*hystart))?;
                if !start.is_zero() {
                    write!(f, "@{}ms", start.as_millis())?;
                }
                Ok(())
            }
            TrafficSpec::Bulk { bytes: None } => write!(f, "bulk"),
            TrafficSpec::Bulk { bytes: Some(b) } => write!(f, "bulk:{b}"),
        }
    }
}

/// Produces send times for fixed-size datagrams.
#[derive(Debug, Clone)]
pub struct Source {
    spec: TrafficSpec,
    /// Rate that `CbrFraction` resolves against.
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

    /// Offered payload rate at time `t`.
    pub fn rate_at(&self, t: Duration) -> f64 {
        match self.spec {
            TrafficSpec::Cbr { bps } => bps,
            TrafficSpec::CbrFraction { fraction } => fraction * self.ideal_bps,
            // TCP paces itself; it is not a datagram source.
            TrafficSpec::Tcp { .. } => 0.0,
            // Never offered as datagrams (the simulator refuses it there).
            TrafficSpec::Bulk { .. } => self.ideal_bps,
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
        let tcp = |cc, flows| TrafficSpec::Tcp {
            cc,
            flows,
            hystart: false,
            start: Duration::ZERO,
        };
        assert_eq!(TrafficSpec::parse("tcp").unwrap(), tcp(TcpCc::Cubic, 1));
        let linux = TrafficSpec::parse("tcp:cubic+hystart:2").unwrap();
        assert_eq!(
            linux,
            TrafficSpec::Tcp {
                cc: TcpCc::Cubic,
                flows: 2,
                hystart: true,
                start: Duration::ZERO,
            }
        );
        assert_eq!(linux.to_string(), "tcp:cubic+hystart:2");
        let later = TrafficSpec::parse("tcp:cubic:2@2500ms").unwrap();
        assert_eq!(
            later,
            TrafficSpec::Tcp {
                cc: TcpCc::Cubic,
                flows: 2,
                hystart: false,
                start: Duration::from_millis(2500),
            }
        );
        assert_eq!(later.to_string(), "tcp:cubic:2@2500ms");
        assert_eq!(
            TrafficSpec::parse("tcp@3s").unwrap(),
            TrafficSpec::parse("tcp:cubic:1@3000ms").unwrap()
        );
        for bad in ["cbr:1mbit@1s", "tcp@", "tcp@soon", "tcp:cubic@1s@2s"] {
            assert!(TrafficSpec::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(
            TrafficSpec::parse("tcp:reno+hystart").unwrap().to_string(),
            "tcp:reno+hystart:1"
        );
        assert_eq!(TrafficSpec::parse("tcp:reno").unwrap(), tcp(TcpCc::Reno, 1));
        assert_eq!(TrafficSpec::parse("tcp:4").unwrap(), tcp(TcpCc::Cubic, 4));
        assert_eq!(
            TrafficSpec::parse("tcp:cubic:64").unwrap(),
            tcp(TcpCc::Cubic, 64)
        );
        assert_eq!(
            TrafficSpec::parse("bulk").unwrap(),
            TrafficSpec::Bulk { bytes: None }
        );
        assert_eq!(
            TrafficSpec::parse("bulk:100MB").unwrap(),
            TrafficSpec::Bulk {
                bytes: Some(100_000_000)
            }
        );
        assert_eq!(
            TrafficSpec::parse("bulk:2MiB").unwrap(),
            TrafficSpec::Bulk {
                bytes: Some(2 << 20)
            }
        );
        assert!(TrafficSpec::parse("ramp:63mbit:105mbit:15s:10s").is_ok());
        for bad in [
            "",
            "cbr",
            "cbr:x",
            "cbr:0%",
            "ramp:1mbit:2mbit:1s",
            "poisson:1mbit",
            "bulk:",
            "bulk:0",
            "bulk:5mb",
            "bulk:99999999999999999999GB",
            "elastic",
            "tcp:vegas",
            "tcp:hystart",
            "tcp:cubic+",
            "tcp:cubic+hystart+hystart",
            "tcp:0",
            "tcp:cubic:65",
            "tcp:reno:1:2",
        ] {
            assert!(TrafficSpec::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn prints_what_it_parses() {
        for text in [
            "cbr:64kbit",
            "cbr:10mbit",
            "cbr:95%",
            "ramp:63mbit:105mbit:15000ms:10000ms",
            "tcp:reno:4",
        ] {
            assert_eq!(TrafficSpec::parse(text).unwrap().to_string(), text);
        }
    }

    /// A value out of its range says which range; only what does not fit
    /// the grammar gets the grammar.
    #[test]
    fn a_value_out_of_range_names_its_range() {
        for (text, says) in [
            ("tcp:0", "is 1 to 64"),
            ("tcp:65", "is 1 to 64"),
            ("tcp:reno:99999999999", "is 1 to 64"),
            ("cbr:0%", "at most 1000%"),
            ("cbr:1001%", "at most 1000%"),
            ("bulk:0", "at least one byte"),
            ("bulk:1TB", "B, kB, MB, GB, KiB, MiB or GiB"),
            ("bulk:99999999999999999999GB", "under 16 EiB"),
        ] {
            let e = TrafficSpec::parse(text).unwrap_err();
            assert!(matches!(e, TrafficError::Range(..)), "{text}: {e}");
            assert!(e.to_string().contains(says), "{text}: {e}");
        }
        for text in ["tcp:x", "cbr:abc%", "tcp:cubic:x", "tcp:vegas"] {
            let e = TrafficSpec::parse(text).unwrap_err();
            assert!(matches!(e, TrafficError::Syntax(_)), "{text}: {e}");
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
