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

use std::time::Duration;

use super::params::{ParamError, Params};
use super::smooth_wrr::SmoothWrr;
use super::{Decision, PathInfo, PathSet, SchedContext, Scheduler};
use crate::time::Instant;
use crate::wire::LossEntry;

pub const DEFAULT_T_REPORT: Duration = Duration::from_millis(50);

#[derive(Debug)]
pub struct LossAdaptiveWrr {
    k: f64,
    t_dwd: Duration,
    w_fixed: f64,
    w_mobile_max: f64,
    fixed: usize,
    paths: usize,
    w_mobile: f64,
    last_loss: Option<Instant>,
    weights: Vec<f64>,
    wrr: SmoothWrr,
}

impl LossAdaptiveWrr {
    /// `k` (0.5), `t_dwd` (250ms), `t_report` (50ms, read by the receiver),
    /// `w_fixed` (50), `w_mobile_max` (45), `fixed=NAME` (the first path).
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
            paths: paths.len(),
            w_mobile: 0.0,
            last_loss: None,
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

    fn on_loss_report(&mut self, now: Instant, entries: &[LossEntry]) {
        let fixed = entries.iter().find(|e| usize::from(e.path) == self.fixed);
        let (received, lost) = fixed.map_or((0, 0), |e| (e.received, e.lost));
        if lost > 0 {
            let sent = f64::from(received + lost);
            if self.w_mobile == 0.0 {
                self.w_mobile += f64::from(lost); // IWI
            } else {
                self.w_mobile += self.k * f64::from(lost) / sent * self.w_fixed;
                // AWI
            }
            self.w_mobile = self.w_mobile.min(self.w_mobile_max);
            self.last_loss = Some(now);
        } else if self.last_loss.is_none_or(|t| now - t >= self.t_dwd) {
            self.w_mobile = (self.w_mobile - 1.0).max(0.0); // DWD
        }
        self.update_weights();
    }
}
