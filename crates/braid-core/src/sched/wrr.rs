//! Round robin and static weighted round robin (cmt-thesis baselines):
//! window-free, they send each packet at once on the path whose turn it is.

use super::params::{ParamError, Params};
use super::smooth_wrr::SmoothWrr;
use super::{Decision, PathSet, SchedContext, Scheduler};

#[derive(Debug)]
pub struct Wrr {
    name: &'static str,
    weights: Vec<f64>,
    wrr: SmoothWrr,
}

impl Wrr {
    pub fn round_robin(paths: usize) -> Wrr {
        Wrr {
            name: "rr",
            weights: vec![1.0; paths],
            wrr: SmoothWrr::default(),
        }
    }

    /// `weights=W1/W2/...`, one per path; default equal.
    pub fn from_params(params: &mut Params, paths: usize) -> Result<Wrr, ParamError> {
        let weights = params.list("weights")?.unwrap_or_else(|| vec![1.0; paths]);
        // A sum that overflows to infinity would make every share NaN.
        let sum = weights.iter().sum::<f64>();
        if weights.len() != paths || !(sum > 0.0 && sum.is_finite()) {
            let list = weights
                .iter()
                .map(f64::to_string)
                .collect::<Vec<_>>()
                .join("/");
            return Err(ParamError::Value {
                key: "weights".into(),
                value: if weights.len() == paths {
                    list
                } else {
                    format!("{list}: {} weights for {paths} paths", weights.len())
                },
                expected: "one weight per path, not all zero, their sum a finite number",
            });
        }
        Ok(Wrr {
            name: "wrr",
            weights,
            wrr: SmoothWrr::default(),
        })
    }
}

impl Scheduler for Wrr {
    fn name(&self) -> &'static str {
        self.name
    }

    fn pick(&mut self, _ctx: &SchedContext<'_>) -> Decision {
        match self.wrr.next(&self.weights) {
            Some(i) => Decision::Send(PathSet::one(i)),
            None => Decision::Drop,
        }
    }
}
