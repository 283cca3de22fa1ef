//! BATCP's scheduler (paper batcp, §3.5). Per path, with user weights
//! `wt` (throughput) and `wc = 1 - wt` (monetary cost):
//!
//! ```text
//! relation_i = wt * ln(1 / throughput_i) + wc * ln(cost_i)        (1)
//! if any relation is negative: relation_i += 2 * |min(relation)|   (2)
//! index_i    = relation_i / max(relation)                          (3)
//! ```
//!
//! and a weighted round robin of `load_i` segments per round. The paper
//! writes (4) as `load_i = ceil(index_i / min(index))`, but it also says the
//! lower index is the better interface and that the cheaper, faster one must
//! receive more segments; (4) as printed gives the worse interface the larger
//! load. We read the intent: `load_i = ceil(max(index) / index_i)`, so the
//! best interface gets the most segments and the worst gets one.
//! Throughput is the Kalman-filtered delivery rate in Mbit/s. Each path's
//! window and pacing are respected. BATCP runs one TCP connection per
//! interface, each with its own buffer, so a busy interface never holds up
//! the others: here the round robin turns among the paths that may send
//! now, and waits only when none may.

use super::params::{ParamError, Params};
use super::smooth_wrr::SmoothWrr;
use super::{Decision, PathInfo, PathSet, PathView, SchedContext, Scheduler};

#[derive(Debug)]
pub struct Batcp {
    cost_weight: f64,
    costs: Vec<f64>,
    loads: Vec<f64>,
    wrr: SmoothWrr,
    /// `loads`, zeroed for paths that may not send now.
    open_loads: Vec<f64>,
}

impl Batcp {
    /// `cost_weight=WC` in 0..=1 (default 0.5); costs come from the paths.
    pub fn from_params(params: &mut Params, paths: &[PathInfo]) -> Result<Batcp, ParamError> {
        let cost_weight = params.f64("cost_weight")?.unwrap_or(0.5);
        if !(0.0..=1.0).contains(&cost_weight) {
            return Err(ParamError::Value {
                key: "cost_weight".into(),
                value: cost_weight.to_string(),
                expected: "a number from 0 to 1",
            });
        }
        Ok(Batcp {
            cost_weight,
            costs: paths.iter().map(|p| p.cost).collect(),
            loads: vec![1.0; paths.len()],
            wrr: SmoothWrr::default(),
            open_loads: Vec::with_capacity(paths.len()),
        })
    }

    /// Equations (1)-(4), as read above.
    pub fn loads(cost_weight: f64, throughput_mbps: &[f64], costs: &[f64]) -> Vec<f64> {
        let wt = 1.0 - cost_weight;
        let mut relation: Vec<f64> = throughput_mbps
            .iter()
            .zip(costs)
            .map(|(&t, &c)| wt * (1.0 / t.max(1e-6)).ln() + cost_weight * c.ln())
            .collect();
        let min = relation.iter().copied().fold(f64::INFINITY, f64::min);
        if min < 0.0 {
            for r in &mut relation {
                *r += 2.0 * min.abs();
            }
        }
        let max = relation.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        if max <= 0.0 {
            return vec![1.0; relation.len()];
        }
        let index: Vec<f64> = relation.iter().map(|r| (r / max).max(1e-9)).collect();
        let max_index = index.iter().copied().fold(0.0, f64::max);
        index.iter().map(|i| (max_index / i).ceil()).collect()
    }

    fn refresh_loads(&mut self, paths: &[PathView]) {
        // Until every path has an estimate, share equally so each gets measured.
        let Some(tp) = paths
            .iter()
            .map(|p| p.kalman_bps.map(|b| b / 1e6))
            .collect::<Option<Vec<f64>>>()
        else {
            return;
        };
        self.loads = Self::loads(self.cost_weight, &tp, &self.costs);
    }
}

impl Scheduler for Batcp {
    fn name(&self) -> &'static str {
        "batcp"
    }

    fn pick(&mut self, ctx: &SchedContext<'_>) -> Decision {
        self.refresh_loads(ctx.paths);
        self.open_loads.clear();
        self.open_loads
            .extend(
                ctx.paths
                    .iter()
                    .zip(&self.loads)
                    .map(|(p, &l)| if p.can_send { l } else { 0.0 }),
            );
        match self.wrr.next(&self.open_loads) {
            Some(turn) => Decision::Send(PathSet::one(turn)),
            None => Decision::Wait,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_weight_is_a_share() {
        let paths = [PathInfo {
            name: "a".into(),
            cost: 1.0,
        }];
        let build = |spec: &str| Batcp::from_params(&mut Params::parse(spec).unwrap(), &paths);
        assert!(build("cost_weight=1").is_ok());
        assert!(build("cost_weight=0").is_ok());
        assert!(build("cost_weight=1.01").is_err());
        assert!(build("cost_weight=-0.5").is_err());
    }

    #[test]
    fn loads_follow_the_papers_equations() {
        // wt = wc = 0.5; 10 and 2 Mbit/s; costs 1 and 4.
        // (1) relation = 0.5 ln(1/10) + 0.5 ln 1 = -1.1513
        //              = 0.5 ln(1/2)  + 0.5 ln 4 =  0.3466
        // (2) min < 0: add 2 * 1.1513 -> 1.1513, 2.6492
        // (3) index = 0.4346, 1
        // (4) load = ceil(1 / 0.4346) = ceil(2.301) = 3, ceil(1) = 1
        assert_eq!(Batcp::loads(0.5, &[10.0, 2.0], &[1.0, 4.0]), vec![3.0, 1.0]);
        // Throughput only: ln(1/20) = -2.9957, ln(1/5) = -1.6094; shifted by
        // 5.9915: 2.9957, 4.3820; index 0.6836, 1; loads ceil(1.4628) = 2, 1.
        assert_eq!(Batcp::loads(0.0, &[20.0, 5.0], &[1.0, 1.0]), vec![2.0, 1.0]);
        // Slow paths, no shift: ln(1/0.1) = 2.3026, ln(1/0.5) = 0.6931;
        // index 1, 0.3010; loads 1, ceil(3.32) = 4.
        assert_eq!(Batcp::loads(0.0, &[0.1, 0.5], &[1.0, 1.0]), vec![1.0, 4.0]);
        // All relations positive (costs dominate): no shift. 1 Mbit/s at
        // cost e^2 and e^4: relation 1 and 2, index 0.5 and 1, loads 2, 1.
        let (c1, c2) = (2f64.exp(), 4f64.exp());
        assert_eq!(Batcp::loads(0.5, &[1.0, 1.0], &[c1, c2]), vec![2.0, 1.0]);
    }

    #[test]
    fn faster_and_cheaper_paths_get_more_segments() {
        // Equal paths: equal loads.
        assert_eq!(
            Batcp::loads(0.5, &[10.0, 10.0], &[1.0, 1.0]),
            vec![1.0, 1.0]
        );
        // Costlier path, same speed: fewer segments.
        let l = Batcp::loads(0.5, &[10.0, 10.0], &[1.0, 10.0]);
        assert!(l[0] > l[1], "{l:?}");
        // Faster path: more segments.
        let l = Batcp::loads(0.0, &[0.1, 10.0], &[1.0, 1.0]);
        assert!(l[1] > l[0], "{l:?}");
    }
}
