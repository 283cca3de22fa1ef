//! Loss-adaptive weighted round robin, fixed line first (paper
//! multipath-bonding-layer3, §3). The fixed line has the constant weight
//! `w_fixed`; the mobile paths share the adaptive weight `w_mobile`, which
//! starts at zero, so nothing goes mobile until the fixed line loses:
//!
//! - AWI: on a report with loss on the fixed line,
//!   `w_mobile += k * lost / sent * w_fixed`;
//! - IWI: if `w_mobile == 0` and loss is reported, `w_mobile += lost`;
//! - clamp to `w_mobile_max`;
//! - DWD: once `t_dwd` has passed without loss, `w_mobile -= 1` for each
//!   loss-free report (one per `t_report`).
//!
//! Window-free, like the paper's router: the weights alone decide.
//!
//! Beyond the paper (on by default, `delay=off` for the paper's algorithm):
//! a queue building on the fixed line is read as congestion before it turns
//! into loss. While the fixed line's one-way delay stands more than `delay`
//! (5 ms) above its minimum, DWD holds, and the queue's growth since the
//! last report, as a share of the report interval, is the excess the line
//! receives: AWI applies to it as to a loss fraction. Above twice `delay`,
//! `w_mobile` also grows by `k` per report to drain the queue. The fixed
//! line then keeps a small queue, busy all the time, instead of cycling
//! through loss.

use std::time::Duration;

use super::params::{ParamError, Params};
use super::smooth_wrr::SmoothWrr;
use super::{Decision, PathInfo, PathSet, PathView, SchedContext, Scheduler};
use crate::time::Instant;
use crate::wire::LossEntry;

/// braid's report interval for lawrr. The paper uses 50 ms; every report
/// interval is a window in which overload on the fixed line goes unanswered,
/// and at start-up (`w_mobile` = 0, the whole load on the fixed line) that is
/// where nearly all of lawrr's loss happens. 20 ms cuts that loss by more
/// than half for 50 reports a second: at two paths a report is about 60 bytes
/// with its IP and UDP headers, 24 kbit/s of feedback.
pub const DEFAULT_T_REPORT: Duration = Duration::from_millis(20);

#[derive(Debug)]
pub struct LossAdaptiveWrr {
    k: f64,
    t_dwd: Duration,
    w_fixed: f64,
    w_mobile_max: f64,
    fixed: usize,
    /// Queueing on the fixed line read as congestion; `None`: loss only.
    delay: Option<Duration>,
    paths: usize,
    w_mobile: f64,
    last_loss: Option<Instant>,
    /// Fixed line's queueing delay and time at the previous report.
    last_queueing: Option<(Instant, Duration)>,
    weights: Vec<f64>,
    wrr: SmoothWrr,
}

impl LossAdaptiveWrr {
    /// `k` (0.5), `t_dwd` (250ms), `t_report` (20ms, read by the receiver),
    /// `w_fixed` (50), `w_mobile_max` (45), `fixed=NAME` (the first path),
    /// `delay` (5ms, or `off`).
    pub fn from_params(
        params: &mut Params,
        paths: &[PathInfo],
    ) -> Result<LossAdaptiveWrr, ParamError> {
        let k = params.f64("k")?.unwrap_or(0.5);
        let t_dwd = params
            .duration("t_dwd")?
            .unwrap_or(Duration::from_millis(250));
        params.duration("t_report")?;
        let w_fixed = params.f64("w_fixed")?.unwrap_or(50.0);
        let w_mobile_max = params.f64("w_mobile_max")?.unwrap_or(45.0);
        let delay = match params.take("delay").as_deref() {
            Some("off") => None,
            Some(v) => {
                let mut one = Params::parse(&format!("delay={v}"))?;
                one.duration("delay")?
            }
            None => Some(Duration::from_millis(5)),
        };
        let fixed = match params.take("fixed") {
            None => 0,
            Some(name) => paths
                .iter()
                .position(|p| p.name == name)
                .ok_or(ParamError::Value {
                    key: "fixed".into(),
                    value: name,
                    expected: "the name of one of the paths",
                })?,
        };
        if w_fixed <= 0.0 {
            return Err(ParamError::Value {
                key: "w_fixed".into(),
                value: w_fixed.to_string(),
                expected: "a positive weight",
            });
        }
        let mut s = LossAdaptiveWrr {
            k,
            t_dwd,
            w_fixed,
            w_mobile_max,
            fixed,
            delay,
            paths: paths.len(),
            w_mobile: 0.0,
            last_loss: None,
            last_queueing: None,
            weights: Vec::new(),
            wrr: SmoothWrr::default(),
        };
        s.update_weights();
        Ok(s)
    }

    fn update_weights(&mut self) {
        let mobiles = (self.paths - 1).max(1) as f64;
        self.weights = (0..self.paths)
            .map(|i| {
                if i == self.fixed {
                    self.w_fixed
                } else {
                    self.w_mobile / mobiles
                }
            })
            .collect();
    }
}

impl Scheduler for LossAdaptiveWrr {
    fn name(&self) -> &'static str {
        "lawrr"
    }

    fn pick(&mut self, _ctx: &SchedContext<'_>) -> Decision {
        match self.wrr.next(&self.weights) {
            Some(i) => Decision::Send(PathSet::one(i)),
            None => Decision::Drop,
        }
    }

    fn on_loss_report(&mut self, now: Instant, entries: &[LossEntry], paths: &[PathView]) {
        let fixed = entries.iter().find(|e| usize::from(e.path) == self.fixed);
        let (received, lost) = fixed.map_or((0, 0), |e| (e.received, e.lost));
        let queueing = paths.get(self.fixed).map_or(Duration::ZERO, |p| p.queueing);
        let growth = self
            .last_queueing
            .replace((now, queueing))
            .map_or(0.0, |(t, q)| {
                let span = (now - t).as_secs_f64();
                if span > 0.0 {
                    (queueing.as_secs_f64() - q.as_secs_f64()) / span
                } else {
                    0.0
                }
            });
        if lost > 0 {
            // Both come from the wire: add them where they cannot overflow.
            let sent = f64::from(received) + f64::from(lost);
            if self.w_mobile == 0.0 {
                self.w_mobile += f64::from(lost); // IWI
            } else {
                self.w_mobile += self.k * f64::from(lost) / sent * self.w_fixed;
                // AWI
            }
            self.last_loss = Some(now);
        } else if let Some(d) = self.delay.filter(|d| queueing > *d) {
            // AWI on the excess the queue's growth reveals.
            self.w_mobile += self.k * growth.max(0.0) * self.w_fixed;
            if queueing > 2 * d {
                self.w_mobile += self.k;
            }
            self.last_loss = Some(now);
        } else if self.last_loss.is_none_or(|t| now - t >= self.t_dwd) {
            self.w_mobile = (self.w_mobile - 1.0).max(0.0); // DWD
        }
        self.w_mobile = self.w_mobile.min(self.w_mobile_max);
        self.update_weights();
    }
}
