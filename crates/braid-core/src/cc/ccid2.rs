//! CCID2 (RFC 4341): TCP-like AIMD on acknowledged packets, without
//! retransmission. The papers' baseline (multilink-udp-proxy uses it per
//! link). Window in bytes, counted in MSS-sized segments.

use std::time::Duration;

use super::{AckSample, Controller, MSS};
use crate::time::Instant;

#[derive(Debug, Clone)]
pub struct Ccid2 {
    cwnd: u64,
    ssthresh: u64,
    /// Bytes acked since the last congestion-avoidance increase.
    acked_in_ca: u64,
    /// Losses of packets sent before this instant belong to a window that
    /// was already halved (RFC 4341 §5: once per window of data).
    recovery_start: Option<Instant>,
}

impl Default for Ccid2 {
    fn default() -> Self {
        Ccid2::new()
    }
}

impl Ccid2 {
    const INITIAL_WINDOW: u64 = 3 * MSS;
    const MIN_WINDOW: u64 = MSS;

    pub fn new() -> Ccid2 {
        Ccid2 {
            cwnd: Self::INITIAL_WINDOW,
            ssthresh: u64::MAX,
            acked_in_ca: 0,
            recovery_start: None,
        }
    }
}

impl Controller for Ccid2 {
    fn name(&self) -> &'static str {
        "ccid2"
    }

    fn on_sent(&mut self, _now: Instant, _bytes: u64, _in_flight: u64) {}

    fn on_ack(&mut self, _now: Instant, ack: &AckSample) {
        // Congestion-window validation (RFC 7661): a window that is not in
        // use has not been shown safe, so it grows only while at least half
        // of it was in flight.
        let in_use = ack.bytes_in_flight + ack.bytes;
        if 2 * in_use < self.cwnd {
            return;
        }
        if self.cwnd < self.ssthresh {
            self.cwnd += ack.bytes;
        } else {
            self.acked_in_ca += ack.bytes;
            if self.acked_in_ca >= self.cwnd {
                self.acked_in_ca -= self.cwnd;
                self.cwnd += MSS;
            }
        }
    }

    fn on_loss(&mut self, now: Instant, sent: Instant, _bytes: u64, _in_flight: u64) {
        if self.recovery_start.is_some_and(|r| sent <= r) {
            return;
        }
        self.recovery_start = Some(now);
        self.ssthresh = (self.cwnd / 2).max(2 * MSS);
        self.cwnd = self.ssthresh;
        self.acked_in_ca = 0;
    }

    fn on_timeout(&mut self, now: Instant) {
        // The path declares its packets lost (`on_loss`) just before the
        // timeout: when that already halved the window now, halving again
        // would leave a quarter.
        if self.recovery_start != Some(now) {
            self.ssthresh = (self.cwnd / 2).max(2 * MSS);
        }
        self.cwnd = Self::MIN_WINDOW;
        self.recovery_start = Some(now);
    }

    fn cwnd_bytes(&self) -> u64 {
        self.cwnd
    }

    fn pacing_rate_bps(&self) -> Option<f64> {
        None
    }

    fn bandwidth_bps(&self, srtt: Option<Duration>) -> Option<f64> {
        let s = srtt?.as_secs_f64();
        (s > 0.0).then(|| self.cwnd as f64 * 8.0 / s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::CcKind;

    /// An ack of `bytes` from a window in full use.
    fn ack(bytes: u64) -> AckSample {
        ack_in_flight(bytes, u64::MAX / 4)
    }

    fn ack_in_flight(bytes: u64, bytes_in_flight: u64) -> AckSample {
        AckSample {
            bytes,
            rtt: None,
            delivery_rate_bps: None,
            app_limited: false,
            underused: false,
            prior_delivered: 0,
            delivered: 0,
            bytes_in_flight,
        }
    }

    #[test]
    fn floors_leftovers_and_timeouts_without_loss() {
        let t = |n| Instant::from_nanos(n);
        // Halving never goes below two segments.
        let mut c = Ccid2::new();
        c.on_loss(t(2), t(1), MSS, 0);
        assert_eq!(c.cwnd_bytes(), 2 * MSS);
        let mut c = Ccid2::new();
        c.on_timeout(t(2));
        assert_eq!((c.ssthresh, c.cwnd_bytes()), (2 * MSS, MSS));
        // Congestion avoidance carries acks over: 5, then 6 after 5 acks,
        // then 7 after 6 more, not sooner.
        let mut c = Ccid2::new();
        for _ in 0..7 {
            c.on_ack(t(1), &ack(MSS));
        }
        c.on_loss(t(2), t(1), MSS, 0);
        let mut sizes = Vec::new();
        for _ in 0..11 {
            c.on_ack(t(3), &ack(MSS));
            sizes.push(c.cwnd_bytes() / MSS);
        }
        assert_eq!(sizes, [5, 5, 5, 5, 6, 6, 6, 6, 6, 6, 7]);
        // Acks of 4 segments leave remainders that count toward the next step.
        let mut c = Ccid2::new();
        for _ in 0..7 {
            c.on_ack(t(1), &ack(MSS));
        }
        c.on_loss(t(2), t(1), MSS, 0);
        let mut sizes = Vec::new();
        for _ in 0..5 {
            c.on_ack(t(3), &ack(4 * MSS));
            sizes.push(c.cwnd_bytes() / MSS);
        }
        assert_eq!(sizes, [5, 6, 7, 7, 8]);
        // A timeout with no loss before it halves from the current window.
        let mut c = Ccid2::new();
        for _ in 0..7 {
            c.on_ack(t(1), &ack(MSS));
        }
        c.on_timeout(t(5));
        assert_eq!(c.ssthresh, 5 * MSS);
        // Window-limited, never paced.
        assert_eq!(c.pacing_rate_bps(), None);
    }

    #[test]
    fn bandwidth_is_a_window_per_round_trip() {
        let c = Ccid2::new();
        // 3 segments of 1500 bytes per 100 ms: 360 kbit/s.
        let bps = c.bandwidth_bps(Some(Duration::from_millis(100))).unwrap();
        assert!((bps - 360_000.0).abs() < 1e-6, "{bps}");
        assert_eq!(c.bandwidth_bps(None), None);
        assert_eq!(c.bandwidth_bps(Some(Duration::ZERO)), None);
    }

    #[test]
    fn names_itself() {
        assert_eq!(Ccid2::new().name(), "ccid2");
        assert_eq!(CcKind::Ccid2.build().name(), "ccid2");
    }

    #[test]
    fn a_timeout_halves_ssthresh_once() {
        // Issue 6 §4: PathSender::on_timeout declares the packets in flight
        // lost, then times out, at the same instant.
        let mut c = Ccid2::new();
        let t0 = Instant::from_nanos(1_000);
        for _ in 0..17 {
            c.on_ack(t0, &ack(MSS));
        }
        assert_eq!(c.cwnd_bytes(), 20 * MSS);
        let t1 = Instant::from_nanos(2_000);
        c.on_loss(t1, t0, MSS, 0);
        c.on_loss(t1, t0, MSS, 0);
        c.on_timeout(t1);
        assert_eq!(c.ssthresh, 10 * MSS);
        assert_eq!(c.cwnd_bytes(), MSS);
        // A later timeout with no loss before it halves from the window then.
        for _ in 0..3 {
            c.on_ack(t1, &ack(MSS));
        }
        assert_eq!(c.cwnd_bytes(), 4 * MSS);
        c.on_timeout(Instant::from_nanos(3_000));
        assert_eq!(c.ssthresh, 2 * MSS);
    }

    #[test]
    fn an_unused_window_does_not_grow() {
        // Issue 6 §4: 10,000 acks with one packet in flight grew the window
        // to 9,669 packets. The window grows while half of it is in use.
        let mut c = Ccid2::new();
        let t0 = Instant::from_nanos(1_000);
        for _ in 0..10_000 {
            c.on_ack(t0, &ack_in_flight(MSS, MSS));
        }
        // 2 of 3, then 2 of 4 packets in use: grows; 2 of 5: no more.
        assert_eq!(c.cwnd_bytes(), 5 * MSS);
        // In use again: it grows.
        c.on_ack(t0, &ack_in_flight(MSS, 3 * MSS));
        assert_eq!(c.cwnd_bytes(), 6 * MSS);
    }

    #[test]
    fn slow_start_then_halves_once_per_window() {
        let mut c = Ccid2::new();
        let t0 = Instant::from_nanos(1_000);
        for _ in 0..7 {
            c.on_ack(t0, &ack(MSS));
        }
        assert_eq!(c.cwnd_bytes(), 10 * MSS);
        let t1 = Instant::from_nanos(2_000);
        c.on_loss(t1, t0, MSS, 0);
        assert_eq!(c.cwnd_bytes(), 5 * MSS);
        // A second loss from the same window does not halve again.
        c.on_loss(t1, t0, MSS, 0);
        assert_eq!(c.cwnd_bytes(), 5 * MSS);
        // Congestion avoidance from cwnd == ssthresh on: one MSS per window
        // of acks, not one per ack.
        c.on_ack(t1, &ack(MSS));
        assert_eq!(c.cwnd_bytes(), 5 * MSS);
        for _ in 0..4 {
            c.on_ack(t1, &ack(MSS));
        }
        assert_eq!(c.cwnd_bytes(), 6 * MSS);
        c.on_timeout(t1);
        assert_eq!(c.cwnd_bytes(), MSS);
    }
}
