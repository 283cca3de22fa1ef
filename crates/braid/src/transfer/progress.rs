//! The progress line on a terminal: bytes so far, total and per-path rate,
//! ETA. Written to stderr with a carriage return, at most a few times a
//! second; nothing at all when stderr is not a terminal.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

const REDRAW: Duration = Duration::from_millis(250);
/// Weight of the newest interval in the smoothed rates.
const SMOOTHING: f64 = 0.3;

pub struct Progress {
    enabled: bool,
    last: Option<(Instant, u64, Vec<u64>)>,
    rate_bps: f64,
    path_rates_bps: Vec<f64>,
    drawn: bool,
}

impl Progress {
    pub fn new() -> Progress {
        Progress {
            enabled: std::io::stderr().is_terminal(),
            last: None,
            rate_bps: 0.0,
            path_rates_bps: Vec::new(),
            drawn: false,
        }
    }

    /// `done` payload bytes of `total` (if known); `paths`: name and wire
    /// bytes per path.
    pub fn update(&mut self, done: u64, total: Option<u64>, paths: &[(String, u64)]) {
        if !self.enabled {
            return;
        }
        let now = Instant::now();
        let path_bytes: Vec<u64> = paths.iter().map(|(_, b)| *b).collect();
        let Some((at, before, paths_before)) = &self.last else {
            self.last = Some((now, done, path_bytes));
            return;
        };
        let dt = (now - *at).as_secs_f64();
        if now - *at < REDRAW {
            return;
        }
        let smooth = |old: f64, new: f64| old + SMOOTHING * (new - old);
        self.rate_bps = smooth(
            self.rate_bps,
            done.saturating_sub(*before) as f64 * 8.0 / dt,
        );
        self.path_rates_bps.resize(paths.len(), 0.0);
        for (i, b) in path_bytes.iter().enumerate() {
            let old = paths_before.get(i).copied().unwrap_or(0);
            let r = b.saturating_sub(old) as f64 * 8.0 / dt;
            self.path_rates_bps[i] = smooth(self.path_rates_bps[i], r);
        }
        self.last = Some((now, done, path_bytes));
        let mut line = match total {
            Some(t) => format!("{} / {}", mib(done), mib(t)),
            None => mib(done),
        };
        line += &format!("  {}", rate(self.rate_bps));
        let per_path: Vec<String> = paths
            .iter()
            .zip(&self.path_rates_bps)
            .map(|((name, _), r)| format!("{name} {}", rate(*r)))
            .collect();
        line += &format!("  [{}]", per_path.join(", "));
        if let Some(t) = total {
            if self.rate_bps > 0.0 {
                let eta = t.saturating_sub(done) as f64 * 8.0 / self.rate_bps;
                line += &format!("  ETA {:.0} s", eta.min(1e6));
            }
        }
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[K{line}");
        let _ = err.flush();
        self.drawn = true;
    }

    /// Ends the line, so what follows starts on its own.
    pub fn finish(&mut self) {
        if self.drawn {
            eprintln!();
            self.drawn = false;
        }
    }
}

fn mib(bytes: u64) -> String {
    format!("{:.1} MiB", bytes as f64 / f64::from(1 << 20))
}

fn rate(bps: f64) -> String {
    format!("{:.1} Mbit/s", bps / 1e6)
}
