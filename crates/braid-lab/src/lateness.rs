//! The emulator's record of its own lateness: how many frames left more than
//! 0.5 ms after their due time, the worst of them, and how long in all it
//! ran behind its schedule.

use std::time::{Duration, Instant};

use crate::control::Counters;

/// Lateness the accuracy target allows; later deliveries are counted.
pub const LATE: Duration = Duration::from_micros(500);

#[derive(Debug, Default)]
pub struct Lateness {
    /// The sum behind `Counters::behind_us`, kept whole.
    behind: Duration,
    /// Up to when `behind` has counted, so that frames overdue in the same
    /// stretch count it once.
    behind_until: Option<Instant>,
}

impl Lateness {
    /// Records a frame due at `due` and sent at `now`; returns its lateness.
    pub fn record(&mut self, due: Instant, now: Instant, counters: &mut Counters) -> Duration {
        let late = now.saturating_duration_since(due);
        counters.max_late_us = counters.max_late_us.max(late.as_micros() as u64);
        if late > LATE {
            counters.late_over_500us += 1;
            let overdue = due + LATE;
            let from = self.behind_until.map_or(overdue, |u| u.max(overdue));
            self.behind += now.saturating_duration_since(from);
            self.behind_until = Some(now);
            counters.behind_us = self.behind.as_micros() as u64;
        }
        late
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn frames_overdue_in_one_stretch_count_it_once() {
        let (t0, mut l, mut c) = (Instant::now(), Lateness::default(), Counters::default());
        // A stall from 0 to 10 ms: three frames due at 0, 1 and 2 ms leave
        // together at 10 ms. The emulator was over 0.5 ms behind from 0.5 ms.
        for due in [0, 1, 2] {
            l.record(t0 + ms(due), t0 + ms(10), &mut c);
        }
        assert_eq!(
            (c.late_over_500us, c.max_late_us, c.behind_us),
            (3, 10_000, 9_500)
        );
        // A second stall, from 20 to 24 ms: 3.5 ms more.
        l.record(t0 + ms(20), t0 + ms(24), &mut c);
        assert_eq!(
            (c.late_over_500us, c.max_late_us, c.behind_us),
            (4, 10_000, 13_000)
        );
    }

    #[test]
    fn lateness_within_half_a_millisecond_is_not_behind() {
        let (t0, mut l, mut c) = (Instant::now(), Lateness::default(), Counters::default());
        let late = l.record(t0, t0 + LATE, &mut c);
        assert_eq!(late, LATE);
        assert_eq!((c.late_over_500us, c.max_late_us, c.behind_us), (0, 500, 0));
        // Sent before its due time (the batch's clock reading came first).
        assert_eq!(l.record(t0 + ms(1), t0, &mut c), Duration::ZERO);
        assert_eq!(c.max_late_us, 500);
    }

    #[test]
    fn a_stall_that_began_before_the_last_count_adds_only_the_rest() {
        let (t0, mut l, mut c) = (Instant::now(), Lateness::default(), Counters::default());
        l.record(t0, t0 + ms(5), &mut c);
        // Due at 1 ms, but sent at 8 ms, after the batch at 5 ms: 3 ms more.
        l.record(t0 + ms(1), t0 + ms(8), &mut c);
        assert_eq!(c.behind_us, 4_500 + 3_000);
    }
}
