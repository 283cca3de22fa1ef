//! The clock the send queue ages by: real time, except while the network
//! answers nothing at all.
//!
//! The queue delay limit and CoDel bound the standing queue that inner
//! flows build when they send faster than the paths carry. While no path
//! answers (a stall of the network in front of every path, of the peer, or
//! of this host), nothing can leave the queue whatever the inner flows do,
//! and dropping what waits turns a pause into losses: an inner TCP then
//! halves its window for every stall, where a plain link would only have
//! delayed its packets. In the lab, with the emulator stopped for 300 ms
//! every 2 s, stale drops during the stalls cost one TCP flow through the
//! tunnel about 120 retransmissions in 20 s; kernel MPTCP over the same
//! stalled links lost nothing.
//!
//! So the clock stands still from the moment the network is overdue, when
//! the quickest path that has data in flight has let a round trip (and
//! the receiver's longest acknowledgement delay) pass since the last
//! feedback, until feedback comes again. A path that alone goes silent
//! changes nothing here: the others still answer. It stands at most
//! [`MAX_STAND`] per silence: past that the silence is an outage, and an
//! inner TCP has timed out and sent again what still waits.

use std::time::Duration;

use crate::time::Instant;

/// The longest the clock stands still for one silence.
pub const MAX_STAND: Duration = Duration::from_secs(1);

#[derive(Debug, Clone, Copy, Default)]
pub struct QueueClock {
    /// Real time the clock stood still in silences that have ended.
    stood: Duration,
    /// When the current silence begins if no feedback comes first; `None`
    /// while no answer is awaited.
    overdue_at: Option<Instant>,
}

impl QueueClock {
    /// Queue time at real time `now`. Never decreases as `now` grows, and
    /// neither does it across [`on_feedback`](Self::on_feedback).
    pub fn at(&self, now: Instant) -> Instant {
        now.saturating_sub(self.stood + self.standing(now))
    }

    /// How long the clock has stood still in the current silence at `now`.
    fn standing(&self, now: Instant) -> Duration {
        self.overdue_at
            .map_or(Duration::ZERO, |t| (now - t).min(MAX_STAND))
    }

    /// Feedback arrived at `now`; the next is overdue `expect_within`
    /// from now (`None`: nothing is in flight, so no answer is awaited
    /// until [`expect_answer`](Self::expect_answer)).
    pub fn on_feedback(&mut self, now: Instant, expect_within: Option<Duration>) {
        self.stood += self.standing(now);
        self.overdue_at = expect_within.map(|d| now + d);
    }

    /// A datagram went out at `now` on a path that had none in flight: its
    /// answer is due `within`, unless one is due sooner already.
    pub fn expect_answer(&mut self, now: Instant, within: Duration) {
        let due = now + within;
        self.overdue_at = Some(self.overdue_at.map_or(due, |t| t.min(due)));
    }

    /// The earliest real time, not before `now`, at which queue time
    /// reaches `queued` if no feedback comes first.
    pub fn real_time_of(&self, now: Instant, queued: Instant) -> Instant {
        let running = queued + self.stood;
        let real = match self.overdue_at {
            Some(t) if running > t => running + MAX_STAND,
            _ => running,
        };
        real.max(now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn at(n: u64) -> Instant {
        Instant::from_nanos(1_000_000_000) + ms(n)
    }

    #[test]
    fn runs_with_real_time_while_feedback_comes() {
        let mut c = QueueClock::default();
        assert_eq!(c.at(at(0)), at(0));
        for t in (0..500).step_by(10) {
            c.on_feedback(at(t), Some(ms(30)));
            assert_eq!(c.at(at(t + 9)), at(t + 9));
        }
    }

    #[test]
    fn stands_from_the_overdue_instant_until_feedback() {
        let mut c = QueueClock::default();
        c.on_feedback(at(0), Some(ms(30)));
        assert_eq!(c.at(at(30)), at(30));
        assert_eq!(c.at(at(330)), at(30));
        c.on_feedback(at(330), Some(ms(30)));
        // 300 ms stood still, and the clock goes on from where it stood.
        assert_eq!(c.at(at(330)), at(30));
        assert_eq!(c.at(at(340)), at(40));
        // The next silence adds to the first.
        c.on_feedback(at(350), Some(ms(20)));
        assert_eq!(c.at(at(370)), at(70));
        assert_eq!(c.at(at(470)), at(70));
        c.on_feedback(at(470), Some(ms(20)));
        assert_eq!(c.at(at(480)), at(80));
    }

    #[test]
    fn stands_at_most_max_stand_per_silence() {
        let mut c = QueueClock::default();
        c.on_feedback(at(0), Some(ms(30)));
        let end = at(30) + MAX_STAND;
        assert_eq!(c.at(end), at(30));
        assert_eq!(c.at(end + ms(500)), at(530));
        c.on_feedback(end + ms(500), Some(ms(30)));
        assert_eq!(c.at(end + ms(500)), at(530));
    }

    #[test]
    fn runs_when_no_answer_is_awaited() {
        let mut c = QueueClock::default();
        c.on_feedback(at(0), None);
        assert_eq!(c.at(at(5000)), at(5000));
    }

    #[test]
    fn a_datagram_sent_into_silence_awaits_the_quickest_answer() {
        let mut c = QueueClock::default();
        c.on_feedback(at(0), None);
        c.expect_answer(at(100), ms(50));
        c.expect_answer(at(110), ms(20));
        // Due at 130, not 150; a later, slower one changes nothing.
        c.expect_answer(at(120), ms(80));
        assert_eq!(c.at(at(130)), at(130));
        assert_eq!(c.at(at(400)), at(130));
        // Nor does a quicker one once the clock stands.
        c.expect_answer(at(400), ms(10));
        assert_eq!(c.at(at(420)), at(130));
    }

    #[test]
    fn real_time_of_inverts_the_clock() {
        let mut c = QueueClock::default();
        c.on_feedback(at(0), Some(ms(30)));
        // Before the silence: the same instant; the instant it stands at
        // is reached when it starts to stand.
        assert_eq!(c.real_time_of(at(0), at(20)), at(20));
        assert_eq!(c.real_time_of(at(0), at(30)), at(30));
        // Past it: the whole stand later.
        assert_eq!(c.real_time_of(at(0), at(40)), at(40) + MAX_STAND);
        // Never before now.
        assert_eq!(c.real_time_of(at(25), at(20)), at(25));
        c.on_feedback(at(330), Some(ms(30)));
        // 300 ms stood: queue time 40 is real time 340.
        assert_eq!(c.real_time_of(at(330), at(40)), at(340));
        for real in [at(335), at(340), at(359)] {
            assert_eq!(c.real_time_of(at(330), c.at(real)), real);
        }
    }
}
