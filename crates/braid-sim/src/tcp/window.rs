//! Congestion window growth and reduction: NewReno (RFC 5681) and CUBIC
//! (RFC 9438), in segments.

use std::time::Duration;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TcpCc {
    Cubic,
    Reno,
}

impl TcpCc {
    pub fn name(self) -> &'static str {
        match self {
            TcpCc::Cubic => "cubic",
            TcpCc::Reno => "reno",
        }
    }

    /// The name as `--traffic` writes it: with [`HYSTART_SUFFIX`] when
    /// slow start also ends by HyStart.
    pub fn label(self, hystart: bool) -> String {
        let suffix = if hystart { HYSTART_SUFFIX } else { "" };
        format!("{}{suffix}", self.name())
    }
}

/// What `--traffic tcp:CC+hystart` appends to a controller's name.
pub const HYSTART_SUFFIX: &str = "+hystart";

/// CUBIC's scaling constant C, in segments per second cubed.
const CUBIC_C: f64 = 0.4;
/// CUBIC's multiplicative decrease factor.
const CUBIC_BETA: f64 = 0.7;
/// Least growth per acknowledged segment while CUBIC has seen no
/// congestion event (a slow start HyStart ended): Linux's `tcp_cubic`
/// caps its ACK count per segment of growth at 20 while `last_max_cwnd`
/// is 0, so the window grows by at least 5 % per round trip instead of
/// by a cubic curve whose origin is the window it left slow start at.
const CUBIC_NO_LOSS_GROWTH: f64 = 1.0 / 20.0;

/// Window state of one connection's congestion controller.
#[derive(Debug, Clone)]
pub enum Window {
    Reno,
    Cubic(Cubic),
}

#[derive(Debug, Clone, Default)]
pub struct Cubic {
    /// Window before the last reduction.
    w_max: f64,
    /// Start of the current congestion avoidance epoch, the window the
    /// cubic function returns to (its origin), and K, the time it takes.
    epoch: Option<(Duration, f64, f64)>,
    /// The Reno-friendly estimate.
    w_est: f64,
}

impl Window {
    pub fn new(cc: TcpCc) -> Window {
        match cc {
            TcpCc::Reno => Window::Reno,
            TcpCc::Cubic => Window::Cubic(Cubic::default()),
        }
    }

    /// The new slow start threshold after a congestion event at `cwnd`.
    pub fn on_congestion(&mut self, cwnd: f64) -> f64 {
        match self {
            Window::Reno => (cwnd / 2.0).max(2.0),
            Window::Cubic(c) => {
                // Fast convergence (RFC 9438 4.7): a flow whose window
                // shrank since its last loss releases bandwidth sooner.
                c.w_max = if cwnd < c.w_max {
                    cwnd * (1.0 + CUBIC_BETA) / 2.0
                } else {
                    cwnd
                };
                c.epoch = None;
                (cwnd * CUBIC_BETA).max(2.0)
            }
        }
    }

    /// cwnd after `acked` segments were newly acknowledged in congestion
    /// avoidance at `now`, with smoothed round trip `srtt`.
    pub fn on_ack(&mut self, cwnd: f64, acked: u64, now: Duration, srtt: Duration) -> f64 {
        let acked = acked as f64;
        match self {
            Window::Reno => cwnd + acked / cwnd,
            Window::Cubic(c) => {
                let (start, origin, k) = *c.epoch.get_or_insert_with(|| {
                    c.w_est = cwnd;
                    // With no loss yet, or a window already past the last
                    // maximum, the curve starts convex from here.
                    let origin = c.w_max.max(cwnd);
                    (now, origin, ((origin - cwnd) / CUBIC_C).cbrt())
                });
                let w_cubic = |t: f64| CUBIC_C * (t - k).powi(3) + origin;
                let t = (now - start).as_secs_f64();
                // RFC 9438 4.3: the Reno-friendly window, with alpha chosen so
                // that its average matches Reno's.
                let alpha = 3.0 * (1.0 - CUBIC_BETA) / (1.0 + CUBIC_BETA);
                c.w_est += alpha * acked / cwnd;
                let least = if c.w_max == 0.0 {
                    cwnd + CUBIC_NO_LOSS_GROWTH * acked
                } else {
                    cwnd
                };
                if w_cubic(t) < c.w_est {
                    return c.w_est.max(least);
                }
                // RFC 9438 4.4/4.5: aim at the window one round trip ahead
                // (never below `cwnd`, so `least` binds only without a loss).
                let target = w_cubic(t + srtt.as_secs_f64()).clamp(cwnd, 1.5 * cwnd);
                (cwnd + (target - cwnd) / cwnd * acked).max(least)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reno_halves_and_grows_one_segment_per_window() {
        let mut w = Window::new(TcpCc::Reno);
        assert_eq!(w.on_congestion(100.0), 50.0);
        let mut cwnd = 50.0;
        let srtt = Duration::from_millis(100);
        // One window of ACKs adds one segment.
        for _ in 0..50 {
            cwnd = w.on_ack(cwnd, 1, Duration::ZERO, srtt);
        }
        assert!((cwnd - 51.0).abs() < 0.05, "{cwnd}");
    }

    /// Feeds one window of single-segment ACKs per round trip from
    /// `from` to `to` seconds.
    fn advance(w: &mut Window, cwnd: &mut f64, from: f64, to: f64, srtt: Duration) {
        advance_by(w, cwnd, from, to, srtt, 1);
    }

    /// As `advance`, each ACK covering `acked` segments.
    fn advance_by(w: &mut Window, cwnd: &mut f64, from: f64, to: f64, srtt: Duration, acked: u64) {
        let mut t = from;
        while t < to {
            let now = Duration::from_secs_f64(t);
            for _ in 0..(*cwnd as u64 / acked) {
                *cwnd = w.on_ack(*cwnd, acked, now, srtt);
            }
            t += srtt.as_secs_f64();
        }
    }

    #[test]
    fn cubic_without_a_loss_grows_five_percent_per_round_trip() {
        // Slow start ended without a loss (HyStart): the cubic curve starts
        // flat at this window, and Linux's floor of one segment per 20 ACKs
        // carries the growth: about 1.05 per round trip, 1.05^20 = 2.65 in
        // 20 round trips (one second at 50 ms).
        // ACKs of one segment, and of two (a delayed-ACK receiver).
        let srtt = Duration::from_millis(50);
        for acked in [1, 2] {
            let mut w = Window::new(TcpCc::Cubic);
            let mut cwnd = 100.0;
            advance_by(&mut w, &mut cwnd, 0.0, 1.0, srtt, acked);
            assert!(
                cwnd > 250.0 && cwnd < 280.0,
                "5 % per round trip, ACKs of {acked}: {cwnd}"
            );
        }
        // Where the cubic curve, not the Reno-friendly estimate, sets the
        // growth (a window far above a curve that rises 0.4 t^3 from
        // where the epoch began) the floor holds as well: 1.05^6 = 1.34.
        let srtt = Duration::from_secs(1);
        let mut w = Window::new(TcpCc::Cubic);
        let mut cwnd = 10_000.0;
        advance_by(&mut w, &mut cwnd, 0.0, 6.0, srtt, 2);
        assert!(
            cwnd > 13_000.0 && cwnd < 13_600.0,
            "5 % per round trip: {cwnd}"
        );
        // After a loss at the same window the curve alone grows it: back
        // towards w_max = 100 from 70, far less in the same second.
        let mut w = Window::new(TcpCc::Cubic);
        let mut cwnd = w.on_congestion(100.0);
        advance(&mut w, &mut cwnd, 0.0, 1.0, srtt);
        assert!(cwnd < 100.0, "concave towards w_max after a loss: {cwnd}");
    }

    #[test]
    fn cubic_reduces_by_beta_and_returns_to_w_max_after_k() {
        let mut w = Window::new(TcpCc::Cubic);
        let mut cwnd = w.on_congestion(1000.0);
        assert!((cwnd - 700.0).abs() < 1e-9);
        // K = cbrt(300 / 0.4) = 9.1 s: the window is back near 1000 then,
        // with a plateau around it (concave, then convex). At this window
        // and round trip the Reno-friendly estimate stays below.
        let srtt = Duration::from_millis(50);
        advance(&mut w, &mut cwnd, 0.0, 3.0, srtt);
        assert!(cwnd > 850.0 && cwnd < 1000.0, "concave growth: {cwnd}");
        advance(&mut w, &mut cwnd, 3.0, 9.1, srtt);
        assert!((cwnd - 1000.0).abs() < 15.0, "plateau at w_max: {cwnd}");
        advance(&mut w, &mut cwnd, 9.1, 14.0, srtt);
        assert!(cwnd > 1040.0, "convex probing past w_max: {cwnd}");
        // A second loss below w_max converges fast: w_max becomes 0.85 cwnd.
        let mut w = Window::new(TcpCc::Cubic);
        w.on_congestion(100.0);
        w.on_congestion(80.0);
        let Window::Cubic(c) = &w else {
            unreachable!("built as cubic")
        };
        assert!((c.w_max - 68.0).abs() < 1e-9);
    }
}
