//! Capacity traces in the mahimahi format: one line per delivery opportunity
//! for one MTU-sized (1500-byte) packet, as milliseconds since the start of the
//! trace. The trace repeats with a period equal to its last timestamp (as
//! mahimahi replays it), so a trace whose last line is `1000` lasts one second.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Bytes one delivery opportunity carries: mahimahi's fixed MTU.
pub const OPPORTUNITY_BYTES: u64 = 1500;

/// The largest trace file read: 50 times the largest public mahimahi trace
/// shipped in traces/, so that a wrong file name cannot fill the memory.
pub const MAX_TRACE_FILE_BYTES: u64 = 64 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    #[error("cannot read trace {path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("trace {path} is larger than {} MiB: not a capacity trace", MAX_TRACE_FILE_BYTES >> 20)]
    TooLarge { path: PathBuf },
    #[error("trace {path}, line {line}: {msg}")]
    Format {
        path: PathBuf,
        line: usize,
        msg: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trace {
    name: String,
    /// Opportunity times in ms within one period, non-decreasing.
    opportunities_ms: Arc<[u32]>,
    period_ms: u32,
}

impl Trace {
    pub fn load(path: &Path) -> Result<Trace, TraceError> {
        use std::io::Read;
        let io = |source| TraceError::Io {
            path: path.to_owned(),
            source,
        };
        let mut text = String::new();
        std::fs::File::open(path)
            .and_then(|f| f.take(MAX_TRACE_FILE_BYTES + 1).read_to_string(&mut text))
            .map_err(io)?;
        if text.len() as u64 > MAX_TRACE_FILE_BYTES {
            return Err(TraceError::TooLarge {
                path: path.to_owned(),
            });
        }
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Trace::parse(&name, &text).map_err(|(line, msg)| TraceError::Format {
            path: path.to_owned(),
            line,
            msg,
        })
    }

    /// Parses trace text; errors carry the 1-based line number.
    pub fn parse(name: &str, text: &str) -> Result<Trace, (usize, String)> {
        let mut ops = Vec::new();
        let mut last = 0u32;
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let t: u32 = line.parse().map_err(|_| {
                (
                    i + 1,
                    format!("expected a millisecond timestamp, found {line:?}"),
                )
            })?;
            if t < last {
                return Err((
                    i + 1,
                    format!("timestamp {t} goes backwards (after {last})"),
                ));
            }
            last = t;
            ops.push(t);
        }
        if ops.is_empty() {
            return Err((0, "trace has no delivery opportunities".into()));
        }
        if last == 0 {
            return Err((ops.len(), "trace lasts zero milliseconds".into()));
        }
        Ok(Trace {
            name: name.to_owned(),
            opportunities_ms: ops.into(),
            period_ms: last,
        })
    }

    /// A synthetic trace of `millis` ms whose rate during millisecond `ms`
    /// (1-based) is `mbit_at(ms)` Mbit/s: a fade or a step, say. Each
    /// millisecond's share of an opportunity carries over to the next.
    pub fn from_rates(
        name: &str,
        millis: u32,
        mbit_at: impl Fn(u32) -> f64,
    ) -> Result<Trace, (usize, String)> {
        let mut text = String::new();
        let mut owed = 0.0;
        for ms in 1..=millis {
            owed += mbit_at(ms) * 1e6 / 8.0 / OPPORTUNITY_BYTES as f64 / 1000.0;
            while owed >= 1.0 {
                text += &format!("{ms}\n");
                owed -= 1.0;
            }
        }
        Trace::parse(name, &text)
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn period(&self) -> Duration {
        Duration::from_millis(u64::from(self.period_ms))
    }

    /// Number of delivery opportunities in `[from, to)` since the trace start,
    /// counting repetitions.
    pub fn opportunities_between(&self, from: Duration, to: Duration) -> u64 {
        self.count_before(to)
            .saturating_sub(self.count_before(from))
    }

    /// Capacity in bits per second over `[from, to)`.
    pub fn capacity_bps(&self, from: Duration, to: Duration) -> f64 {
        let secs = to.saturating_sub(from).as_secs_f64();
        if secs <= 0.0 {
            return 0.0;
        }
        (self.opportunities_between(from, to) * OPPORTUNITY_BYTES * 8) as f64 / secs
    }

    /// Opportunities strictly before time `t`. Opportunities at time 0 of a
    /// repetition are counted as the end of the previous one (mahimahi
    /// semantics: the period's last line and the next period's start coincide).
    fn count_before(&self, t: Duration) -> u64 {
        let t_ms = t.as_millis();
        let period = u128::from(self.period_ms);
        let per_period = self.opportunities_ms.len() as u64;
        let full = (t_ms / period) as u64;
        let rem = (t_ms % period) as u32;
        let partial = self.opportunities_ms.partition_point(|&o| o < rem) as u64;
        // The previous repetition's opportunities at exactly `period` fall at
        // `t` itself when `rem == 0`, so they are not before `t`.
        let at_period_end = if rem == 0 && full > 0 {
            let n = self.opportunities_ms.len();
            (n - self
                .opportunities_ms
                .partition_point(|&o| o < self.period_ms)) as u64
        } else {
            0
        };
        full * per_period + partial - at_period_end
    }

    /// The time (since trace start) of the `n`-th opportunity, 0-based.
    pub fn opportunity_time(&self, n: u64) -> Duration {
        let per_period = self.opportunities_ms.len() as u64;
        let rep = n / per_period;
        let idx = (n % per_period) as usize;
        Duration::from_millis(
            rep * u64::from(self.period_ms) + u64::from(self.opportunities_ms[idx]),
        )
    }

    /// Index of the first opportunity at or after `t`.
    pub fn first_opportunity_at_or_after(&self, t: Duration) -> u64 {
        // count_before works on whole ms; an opportunity at ms m happens at m.
        let t_ms_ceil = t.as_nanos().div_ceil(1_000_000);
        self.count_before(Duration::from_millis(t_ms_ceil as u64))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_trace_from_rates_gives_each_millisecond_its_share() {
        // 12 Mbit/s is one 1500-byte opportunity per millisecond; 6 Mbit/s
        // one every other millisecond.
        let t = Trace::from_rates("r", 1000, |ms| if ms <= 500 { 12.0 } else { 6.0 }).unwrap();
        let ms = Duration::from_millis;
        assert_eq!(t.opportunities_between(ms(0), ms(501)), 500);
        assert_eq!(t.opportunities_between(ms(501), ms(1001)), 250);
        assert_eq!(t.period(), Duration::from_millis(1000));
        assert!(Trace::from_rates("none", 10, |_| 0.0).is_err());
    }

    #[test]
    fn parses_and_counts_repeating() {
        let t = Trace::parse("t", "0\n0\n5\n10\n").unwrap();
        assert_eq!(t.period(), Duration::from_millis(10));
        assert_eq!(
            t.opportunities_between(Duration::ZERO, Duration::from_millis(10)),
            3
        );
        assert_eq!(
            t.opportunities_between(Duration::ZERO, Duration::from_millis(20)),
            7
        );
        assert_eq!(t.opportunity_time(4), Duration::from_millis(10));
        assert_eq!(t.opportunity_time(6), Duration::from_millis(15));
        assert_eq!(t.opportunity_time(7), Duration::from_millis(20));
    }

    #[test]
    fn rejects_bad_text() {
        assert_eq!(Trace::parse("t", "1\nx\n").unwrap_err().0, 2);
        assert!(Trace::parse("t", "5\n3\n").is_err());
        assert!(Trace::parse("t", "").is_err());
        assert!(Trace::parse("t", "0\n0\n").is_err());
    }

    #[test]
    fn an_oversized_file_is_refused() {
        let path = std::env::temp_dir().join(format!("braid-big-trace-{}", std::process::id()));
        let file = std::fs::File::create(&path).unwrap();
        // Sparse: no disk space used; zero bytes read as text.
        file.set_len(MAX_TRACE_FILE_BYTES + 1).unwrap();
        let e = Trace::load(&path).unwrap_err();
        std::fs::remove_file(&path).unwrap();
        assert!(matches!(e, TraceError::TooLarge { .. }), "{e}");
    }

    #[test]
    fn capacity_of_one_packet_per_ms_is_12_mbit() {
        let text: String = (1..=1000).map(|i| format!("{i}\n")).collect();
        let t = Trace::parse("t", &text).unwrap();
        let c = t.capacity_bps(Duration::ZERO, Duration::from_secs(3));
        assert!((c - 12e6).abs() < 12e6 * 1e-3, "{c}");
    }
}
