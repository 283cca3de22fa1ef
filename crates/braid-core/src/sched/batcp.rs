//! BATCP's scheduler (paper batcp, §3.5). Per path `i`, with user weights
//! `wt_i` (throughput) and `wc_i = 1 - wt_i` (monetary cost):
//!
//! ```text
//! relation_i = wt_i * ln(1 / throughput_i) + wc_i * ln(cost_i)     (1)
//! if any relation is negative: relation_i += 2 * |min(relation)|   (2)
//! index_i    = relation_i / max(relation)                          (3)
//! ```
//!
//! and a weighted round robin of `load_i` segments per round. The paper
//! writes (4) as `load_i = ceil(index_i / min(index))`, but it also says the
//! lower index is the better interface and that the cheaper, faster one must
//! receive more segments; (4) as printed gives the worse interface the larger
//! load. We read the intent: `load_i = ceil(max(index) / index_i)`, so the
//! best interface gets the most segments and the worst gets one. A relation
//! of exactly 0 (the best any path can be after (2)) gets [`MAX_LOAD`].
//!
//! The weights are per path, as in the paper (`weight_throughput=`,
//! `weight_cost=` in a path's spec); a path without its own takes the
//! scheduler's `cost_weight`. Throughput is the Kalman-filtered delivery
//! rate in Mbit/s, else the controller's estimate; while some path has
//! neither, throughput is left out and cost alone orders the paths.
//!
//! Each path's window and pacing are respected. The paper's interfaces each
//! have their own TCP buffer, so a segment whose turn belongs to a path
//! waits for that path. Here a turn whose path is closed is waited for when
//! that path can carry the whole backlog in half the queue's delay limit
//! (pacing holds it back for a moment, which used to hand the cheap path's
//! turns to the costly one); otherwise an open path takes it, so under load
//! cost decides the order and every path still fills.

use super::params::{ParamError, Params};
use super::smooth_wrr::SmoothWrr;
use super::{Decision, PathInfo, PathSet, PathView, SchedContext, Scheduler};

/// Most segments one path gets per round.
pub const MAX_LOAD: f64 = 100.0;

#[derive(Debug)]
pub struct Batcp {
    /// Per path: weight of throughput (cost weight is one minus it).
    weight_throughput: Vec<f64>,
    costs: Vec<f64>,
    loads: Vec<f64>,
    wrr: SmoothWrr,
    /// `loads`, zeroed for paths that may not take a turn now.
    turn_loads: Vec<f64>,
}

impl Batcp {
    /// `cost_weight=WC` in 0..=1 (default 0.5) for paths without their own
    /// weights; costs come from the paths and must be finite and positive.
    pub fn from_params(params: &mut Params, paths: &[PathInfo]) -> Result<Batcp, ParamError> {
        let cost_weight = params.f64("cost_weight")?.unwrap_or(0.5);
        let share = |key: &str, w: f64| {
            if (0.0..=1.0).contains(&w) {
                Ok(w)
            } else {
                Err(ParamError::Value {
                    key: key.into(),
                    value: w.to_string(),
                    expected: "a number from 0 to 1",
                })
            }
        };
        share("cost_weight", cost_weight)?;
        let mut weight_throughput = Vec::with_capacity(paths.len());
        for p in paths {
            if !(p.cost.is_finite() && p.cost > 0.0) {
                return Err(ParamError::Value {
                    key: format!("cost of {}", p.name),
                    value: p.cost.to_string(),
                    expected: "a finite positive number",
                });
            }
            let wt = p.weight_throughput.unwrap_or(1.0 - cost_weight);
            weight_throughput.push(share("weight_throughput", wt)?);
        }
        Ok(Batcp {
            weight_throughput,
            costs: paths.iter().map(|p| p.cost).collect(),
            loads: vec![1.0; paths.len()],
            wrr: SmoothWrr::default(),
            turn_loads: Vec::with_capacity(paths.len()),
        })
    }

    /// Equations (1)-(4), as read above, with per-path throughput weights.
    pub fn loads(weight_throughput: &[f64], throughput_mbps: &[f64], costs: &[f64]) -> Vec<f64> {
        let mut relation: Vec<f64> = weight_throughput
            .iter()
            .zip(throughput_mbps)
            .zip(costs)
            .map(|((&wt, &t), &c)| wt * (1.0 / t.max(1e-6)).ln() + (1.0 - wt) * c.ln())
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
        // index_i = relation_i / max, so max(index) = 1.
        relation
            .iter()
            .map(|r| {
                let index = r / max;
                if index > 0.0 {
                    // A ratio that is an integer in exact arithmetic must
                    // not round up to the next one.
                    (1.0 / index - 1e-9).ceil().min(MAX_LOAD)
                } else {
                    MAX_LOAD
                }
            })
            .collect()
    }

    fn refresh_loads(&mut self, paths: &[PathView]) {
        let tp: Option<Vec<f64>> = paths
            .iter()
            .map(|p| p.kalman_bps.or(p.bandwidth_bps).map(|b| b / 1e6))
            .collect();
        // Without every path's throughput, 1 Mbit/s each: ln(1) = 0.
        let tp = tp.unwrap_or_else(|| vec![1.0; paths.len()]);
        self.loads = Self::loads(&self.weight_throughput, &tp, &self.costs);
    }

    /// Round robin among the paths `eligible` admits, without taking the turn.
    fn turn(&mut self, paths: &[PathView], eligible: impl Fn(&PathView) -> bool) -> Option<usize> {
        self.turn_loads.clear();
        self.turn_loads
            .extend(
                paths
                    .iter()
                    .zip(&self.loads)
                    .map(|(p, &l)| if eligible(p) { l } else { 0.0 }),
            );
        self.wrr.peek(&self.turn_loads)
    }

    fn take(&mut self, index: usize) -> Decision {
        self.wrr.commit(&self.turn_loads, index);
        Decision::Send(PathSet::one(index))
    }
}

impl Scheduler for Batcp {
    fn name(&self) -> &'static str {
        "batcp"
    }

    fn pick(&mut self, ctx: &SchedContext<'_>) -> Decision {
        self.refresh_loads(ctx.paths);
        let Some(turn) = self.turn(ctx.paths, |p| !p.suspect && !p.stalled) else {
            return match self.turn(ctx.paths, |p| p.can_send) {
                Some(i) => self.take(i),
                None => Decision::Wait,
            };
        };
        let p = &ctx.paths[turn];
        if p.can_send {
            return self.take(turn);
        }
        let drain_secs = p
            .bandwidth_bps
            .filter(|&bw| bw > 0.0)
            .map_or(f64::INFINITY, |bw| ctx.backlog_bytes as f64 * 8.0 / bw);
        if p.cwnd_open && drain_secs <= ctx.queue_delay_limit.as_secs_f64() / 2.0 {
            return Decision::Wait;
        }
        match self.turn(ctx.paths, |p| p.can_send) {
            Some(i) => self.take(i),
            None => Decision::Wait,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_weight_is_a_share() {
        let path = |cost: f64, wt: Option<f64>| PathInfo {
            name: "a".into(),
            cost,
            weight_throughput: wt,
            overflow: false,
        };
        let build =
            |spec: &str, p: PathInfo| Batcp::from_params(&mut Params::parse(spec).unwrap(), &[p]);
        assert!(build("cost_weight=1", path(1.0, None)).is_ok());
        assert!(build("cost_weight=0", path(1.0, None)).is_ok());
        assert!(build("cost_weight=1.01", path(1.0, None)).is_err());
        assert!(build("cost_weight=-0.5", path(1.0, None)).is_err());
        // Costs that would make ln() meaningless are refused.
        for cost in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            assert!(build("", path(cost, None)).is_err(), "{cost}");
        }
        assert!(build("", path(1.0, Some(1.5))).is_err());
        let b = build("cost_weight=0.9", path(1.0, Some(0.3))).unwrap();
        assert_eq!(b.weight_throughput, vec![0.3]);
    }

    #[test]
    fn loads_follow_the_papers_equations() {
        // wt = wc = 0.5; 10 and 2 Mbit/s; costs 1 and 4.
        // (1) relation = 0.5 ln(1/10) + 0.5 ln 1 = -1.1513
        //              = 0.5 ln(1/2)  + 0.5 ln 4 =  0.3466
        // (2) min < 0: add 2 * 1.1513 -> 1.1513, 2.6492
        // (3) index = 0.4346, 1
        // (4) load = ceil(1 / 0.4346) = ceil(2.301) = 3, ceil(1) = 1
        assert_eq!(
            Batcp::loads(&[0.5, 0.5], &[10.0, 2.0], &[1.0, 4.0]),
            vec![3.0, 1.0]
        );
        // Throughput only: ln(1/20) = -2.9957, ln(1/5) = -1.6094; shifted by
        // 5.9915: 2.9957, 4.3820; index 0.6836, 1; loads ceil(1.4628) = 2, 1.
        assert_eq!(
            Batcp::loads(&[1.0, 1.0], &[20.0, 5.0], &[1.0, 1.0]),
            vec![2.0, 1.0]
        );
        // Slow paths, no shift: ln(1/0.1) = 2.3026, ln(1/0.5) = 0.6931;
        // index 1, 0.3010; loads 1, ceil(3.32) = 4.
        assert_eq!(
            Batcp::loads(&[1.0, 1.0], &[0.1, 0.5], &[1.0, 1.0]),
            vec![1.0, 4.0]
        );
        // All relations positive (costs dominate): no shift. 1 Mbit/s at
        // cost e^2 and e^4: relation 1 and 2, index 0.5 and 1, loads 2, 1.
        let (c1, c2) = (2f64.exp(), 4f64.exp());
        assert_eq!(
            Batcp::loads(&[0.5, 0.5], &[1.0, 1.0], &[c1, c2]),
            vec![2.0, 1.0]
        );
        // A relation of exactly 0 (1 Mbit/s at cost 1): the most a round
        // holds, not a billion.
        assert_eq!(
            Batcp::loads(&[0.5, 0.5], &[1.0, 1.0], &[1.0, c1]),
            vec![MAX_LOAD, 1.0]
        );
        assert_eq!(
            Batcp::loads(&[0.5, 0.5], &[1.0, 1.0], &[1.0, 1.0]),
            vec![1.0, 1.0]
        );
    }

    #[test]
    fn the_papers_example_weights_favour_the_cheap_interface() {
        // §3.5: 3G/4G with weight_throughput 0.1, weight_cost 0.9; IEEE
        // 802.11g with 0.9 and 0.1. The paper gives no rates or prices;
        // take both at 10 Mbit/s, the cellular one 10 times the price.
        // (1) cellular: 0.1 ln(1/10) + 0.9 ln 10 = -0.2303 + 2.0723 = 1.8421
        //     Wi-Fi:    0.9 ln(1/10) + 0.1 ln 1  = -2.0723
        // (2) shift by 2 * 2.0723: 5.9867 and 2.0723
        // (3) index 1 and 0.3462; load 1 and ceil(2.889) = 3.
        let loads = Batcp::loads(&[0.1, 0.9], &[10.0, 10.0], &[10.0, 1.0]);
        assert_eq!(loads, vec![1.0, 3.0]);
        // One global weight (wc = 0.5 for both): relations 0 and -1.1513,
        // shifted 2.3026 and 1.1513, an index ratio of exactly 2.
        assert_eq!(
            Batcp::loads(&[0.5, 0.5], &[10.0, 10.0], &[10.0, 1.0]),
            vec![1.0, 2.0]
        );
    }

    #[test]
    fn faster_and_cheaper_paths_get_more_segments() {
        // Equal paths: equal loads.
        assert_eq!(
            Batcp::loads(&[0.5, 0.5], &[10.0, 10.0], &[1.0, 1.0]),
            vec![1.0, 1.0]
        );
        // Costlier path, same speed: fewer segments.
        let l = Batcp::loads(&[0.5, 0.5], &[10.0, 10.0], &[1.0, 10.0]);
        assert!(l[0] > l[1], "{l:?}");
        // Faster path: more segments.
        let l = Batcp::loads(&[1.0, 1.0], &[0.1, 10.0], &[1.0, 1.0]);
        assert!(l[1] > l[0], "{l:?}");
    }
}
