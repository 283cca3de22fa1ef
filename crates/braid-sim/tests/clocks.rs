//! Endpoints whose clocks disagree and drift (issue 6, section 3). Real
//! drift is ±100 ppm over hours; these runs scale it to 500 ppm over
//! 120 s, which accumulates the same 60 ms of false delay as 100 ppm over
//! the 600 s of the benchmark, five times faster. That is the harder case
//! for the estimators: every 2-s epoch of their history moves five times as
//! far, and the time they have to learn the slope is five times shorter.

use std::time::Duration;

use braid_sim::clock::{ClockSpec, ClockStep};
use braid_sim::metrics::Report;
use braid_sim::sim::{run, Scenario};
use braid_sim::spec::PathSpec;
use braid_sim::traffic::TrafficSpec;

fn scenario(specs: &[&str], scheduler: &str, traffic: &str, secs: u64) -> Scenario {
    let paths = specs.iter().map(|s| PathSpec::parse(s).unwrap()).collect();
    let mut s = Scenario::new(paths);
    s.scheduler = scheduler.to_owned();
    s.traffic = TrafficSpec::parse(traffic).unwrap();
    s.duration = Duration::from_secs(secs);
    s
}

fn skewed(mut s: Scenario, offset_s: f64, skew_ppm: f64) -> Scenario {
    s.clock = ClockSpec {
        offset_s,
        skew_ppm,
        step: None,
    };
    s
}

fn stepped(mut s: Scenario, at_s: f64, by_s: f64) -> Scenario {
    s.clock.step = Some(ClockStep { at_s, by_s });
    s
}

/// A fixed line and an LTE link, as in BENCHMARKS.md but at an eighth of
/// the rates, with the fixed line at 40 % load: lawrr has no reason to use LTE.
fn lawrr_at_40_percent(secs: u64) -> Scenario {
    scenario(
        &["8mbit,6500us,name=dsl", "8mbit,17ms,jitter=5ms,name=lte"],
        "lawrr:k=0.5,t_dwd=250ms",
        "cbr:3.2mbit",
        secs,
    )
}

fn lte_bytes(r: &Report) -> u64 {
    r.paths[1].sent_bytes
}

#[test]
fn lawrr_keeps_the_mobile_path_idle_under_drift() {
    let base = run(&lawrr_at_40_percent(120)).unwrap();
    assert_eq!(lte_bytes(&base), 0);
    for (offset, ppm) in [(0.0, 500.0), (-3.0, -500.0), (4_290.0, 500.0)] {
        let r = run(&skewed(lawrr_at_40_percent(120), offset, ppm)).unwrap();
        assert_eq!(lte_bytes(&r), 0, "offset {offset} s, {ppm} ppm");
        assert!((r.utilization - base.utilization).abs() < 0.001);
    }
}

/// A step that sets the receiver back is made by stepping the sender
/// forward: to the sender, a second in which nothing answered. The fixed
/// line goes down, and what it had in flight (a handful of datagrams at 3.2
/// Mbit/s) goes out again on LTE: the send queue's clock stands while no
/// path answers, so they are not dropped as stale. Lawrr itself puts
/// nothing there.
#[test]
fn lawrr_absorbs_a_one_second_step() {
    for by in [1.0, -1.0] {
        let s = stepped(skewed(lawrr_at_40_percent(60), 0.0, 100.0), 30.0, by);
        let r = run(&s).unwrap();
        let reinjected = r.sender.as_ref().unwrap().reinjected;
        assert_eq!(r.paths[1].sender.sent_packets, reinjected, "step {by} s");
        assert!(reinjected < 10, "step {by} s: {reinjected} reinjected");
    }
}

/// Two paths of different delay with loss, scheduled round robin: holes
/// open all the time and some never fill, so the hole timeout decides how
/// long in-order delivery waits. It is set from one-way delays.
fn holes(secs: u64) -> Scenario {
    scenario(
        &["10mbit,10ms,loss=1%", "10mbit,30ms,loss=1%"],
        "rr",
        "cbr:50%",
        secs,
    )
}

#[test]
fn the_hole_timeout_does_not_creep_under_drift() {
    let base = run(&holes(120)).unwrap();
    for ppm in [500.0, -500.0] {
        let r = run(&skewed(holes(120), 0.0, ppm)).unwrap();
        let p99_of = |r: &braid_sim::metrics::Report| {
            r.reorder_delay_ms
                .as_ref()
                .expect("packets were delivered")
                .p99
        };
        let (p99, base_p99) = (p99_of(&r), p99_of(&base));
        assert!(
            (p99 - base_p99).abs() < 2.0,
            "{ppm} ppm: reorder p99 {p99} ms, {base_p99} ms without drift"
        );
        // Holes given up on: the same losses, not more timeouts.
        let (skipped, base_skipped) = (r.reseq.skipped, base.reseq.skipped);
        assert!(
            skipped.abs_diff(base_skipped) * 100 <= base_skipped,
            "{ppm} ppm: skipped {skipped} vs {base_skipped}"
        );
    }
}

#[test]
fn a_one_second_step_is_absorbed_within_a_few_round_trips() {
    let base = run(&holes(20)).unwrap();
    for by in [1.0, -1.0] {
        let r = run(&stepped(holes(20), 10.0, by)).unwrap();
        // Per 100-ms bin, in-order goodput is back to the unstepped run's
        // from 300 ms (six round trips of the slow path) after the step.
        let bins = &r.series.in_order_goodput_bps;
        let base_bins = &base.series.in_order_goodput_bps;
        for i in 103..bins.len().min(200) {
            let (a, b) = (bins[i], base_bins[i]);
            assert!((a - b).abs() <= 0.1 * b, "step {by} s, bin {i}: {a} vs {b}");
        }
        assert!((r.loss_rate - base.loss_rate).abs() < 0.002, "step {by} s");
    }
}
