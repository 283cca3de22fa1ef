//! How long a path that comes back from a blackout waits before the sender
//! gives it data again: from the blackout's end to the first datagram the
//! scheduler puts on it (probe copies do not count). A path still unused
//! when the run ends counts until the end.

use std::time::Duration;

use serde::Serialize;

use crate::spec::Blackout;

#[derive(Debug, Clone, Copy, Serialize, PartialEq)]
pub struct ReuseSummary {
    /// Blackouts that ended within the run.
    pub count: usize,
    pub p50: f64,
    pub max: f64,
}

/// One path's blackout ends, and the sender's data count seen at each.
#[derive(Debug)]
pub struct ReuseTracker {
    /// Ends of the merged blackouts, ascending.
    ends: Vec<Duration>,
    next: usize,
    /// Data packets sent on the path as of the previous observation...
    last_count: u64,
    /// ...and as of the blackout end being waited on.
    armed: Option<(Duration, u64)>,
    samples_ms: Vec<f64>,
}

impl ReuseTracker {
    pub fn new(blackouts: &[Blackout], duration: Duration) -> ReuseTracker {
        let mut spans: Vec<(Duration, Duration)> = blackouts
            .iter()
            .map(|b| (b.start, b.start + b.len))
            .collect();
        spans.sort();
        let mut ends: Vec<Duration> = Vec::new();
        let mut current: Option<(Duration, Duration)> = None;
        for (start, end) in spans {
            current = match current {
                Some((s, e)) if start <= e => Some((s, e.max(end))),
                Some((_, e)) => {
                    ends.push(e);
                    Some((start, end))
                }
                None => Some((start, end)),
            };
        }
        ends.extend(current.map(|(_, e)| e));
        ends.retain(|&e| e < duration);
        ReuseTracker {
            ends,
            next: 0,
            last_count: 0,
            armed: None,
            samples_ms: Vec::new(),
        }
    }

    /// Whether observations still matter.
    pub fn is_waiting(&self) -> bool {
        self.armed.is_some() || self.next < self.ends.len()
    }

    /// The path's count of data packets sent, at `now`.
    pub fn observe(&mut self, now: Duration, data_sent: u64) {
        if self.armed.is_none() && self.ends.get(self.next).is_some_and(|&e| e <= now) {
            self.armed = Some((self.ends[self.next], self.last_count));
            self.next += 1;
        }
        if let Some((end, base)) = self.armed {
            if data_sent > base {
                self.samples_ms
                    .push(now.saturating_sub(end).as_secs_f64() * 1e3);
                self.armed = None;
            }
        }
        self.last_count = data_sent;
    }

    pub fn finish(mut self, duration: Duration) -> Option<ReuseSummary> {
        if let Some((end, _)) = self.armed {
            self.samples_ms
                .push(duration.saturating_sub(end).as_secs_f64() * 1e3);
        }
        // Blackouts never reached (the path was never observed after them).
        for &end in &self.ends[self.next..] {
            self.samples_ms
                .push(duration.saturating_sub(end).as_secs_f64() * 1e3);
        }
        if self.samples_ms.is_empty() {
            return None;
        }
        self.samples_ms.sort_by(f64::total_cmp);
        let n = self.samples_ms.len();
        Some(ReuseSummary {
            count: n,
            p50: self.samples_ms[(n - 1) / 2],
            max: self.samples_ms[n - 1],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(x: f64) -> Duration {
        Duration::from_secs_f64(x)
    }

    #[test]
    fn measures_from_each_blackout_end_to_the_next_data() {
        let blackouts = [
            Blackout {
                start: s(1.0),
                len: s(1.0),
            },
            // Overlaps the first: one blackout from 1 s to 2.5 s.
            Blackout {
                start: s(1.5),
                len: s(1.0),
            },
            Blackout {
                start: s(5.0),
                len: s(1.0),
            },
        ];
        let mut r = ReuseTracker::new(&blackouts, s(10.0));
        r.observe(s(0.5), 10);
        r.observe(s(2.0), 12);
        // End at 2.5 s; nothing new until 2.8 s.
        r.observe(s(2.6), 12);
        r.observe(s(2.8), 13);
        assert!(r.is_waiting());
        // End at 6 s; data at 6.1 s.
        r.observe(s(6.1), 20);
        assert!(!r.is_waiting());
        let sum = r.finish(s(10.0)).unwrap();
        assert_eq!(sum.count, 2);
        assert!((sum.p50 - 100.0).abs() < 1e-6, "{sum:?}");
        assert!((sum.max - 300.0).abs() < 1e-6, "{sum:?}");
    }

    #[test]
    fn a_path_never_reused_counts_until_the_end() {
        let blackouts = [Blackout {
            start: s(1.0),
            len: s(1.0),
        }];
        let mut r = ReuseTracker::new(&blackouts, s(4.0));
        r.observe(s(2.5), 0);
        let sum = r.finish(s(4.0)).unwrap();
        assert_eq!((sum.count, sum.max), (1, 2000.0));
        assert_eq!(ReuseTracker::new(&[], s(4.0)).finish(s(4.0)), None);
    }
}
