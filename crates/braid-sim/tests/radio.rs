//! Radio links (issue 7): bursty loss, paths that die and come back, long
//! fast paths at start-up, and cost policies. Short runs of the scenarios
//! BENCHMARKS.md reports at full length.

use std::time::Duration;

use braid_core::path::PROBE_INTERVAL;
use braid_sim::metrics::Report;
use braid_sim::sim::{run, Scenario};
use braid_sim::spec::PathSpec;
use braid_sim::traffic::TrafficSpec;

fn bench(specs: &[&str], scheduler: &str, traffic: &str, secs: u64, seed: u64) -> Report {
    let mut s = Scenario::new(specs.iter().map(|p| PathSpec::parse(p).unwrap()).collect());
    s.scheduler = scheduler.to_owned();
    s.traffic = TrafficSpec::parse(traffic).unwrap();
    s.duration = Duration::from_secs(secs);
    s.seed = seed;
    run(&s).unwrap()
}

const BURSTY: &str = "20mbit,30ms,ge=0.1%:1%";

#[test]
fn a_burst_of_loss_is_not_congestion() {
    for seed in [1, 2] {
        // Alone: most of what the link delivers (a burst used to bring a
        // timeout, then a few packets per doubled timeout: 0.28-0.72).
        let r = bench(&[BURSTY], "earliest-arrival", "cbr:110%", 15, seed);
        let link = &r.paths[0].link;
        let delivers = 1.0 - link.dropped_loss as f64 / link.offered_packets as f64;
        assert!(
            r.utilization >= 0.9 * delivers,
            "seed {seed}: {} of {delivers}",
            r.utilization
        );
        // Bonded with a clean path: both carry (0.50-0.53 before).
        let r = bench(
            &["20mbit,10ms", BURSTY],
            "earliest-arrival",
            "cbr:95%",
            15,
            seed,
        );
        assert!(r.utilization >= 0.85, "seed {seed}: {}", r.utilization);
    }
}

/// The fast path dies three times; at 45 % load the other path alone
/// could carry everything.
fn fast_path_dying_three_times() -> Report {
    let flapping = "20mbit,10ms,blackout=3s+1s,blackout=7s+2s,blackout=12s+1s";
    bench(
        &[flapping, "20mbit,30ms"],
        "earliest-arrival",
        "cbr:45%",
        16,
        1,
    )
}

#[test]
fn a_path_that_comes_back_is_reused_within_a_probe_and_a_few_round_trips() {
    let r = fast_path_dying_three_times();
    let fast = &r.paths[0];
    assert_eq!(r.path_down_events, 3, "{:?}", fast.sender);
    let reuse = fast.time_to_reuse_ms.expect("blackouts");
    assert_eq!(reuse.count, 3);
    // Three 20 ms round trips and one probe interval (1.0-2.0 s before).
    let bound_ms = 3.0 * 20.0 + PROBE_INTERVAL.as_secs_f64() * 1e3;
    assert!(reuse.max <= bound_ms, "{reuse:?}");
    // What the dead path swallowed: the packets in flight at each death and
    // those sent before its silence was noticed (about one round trip), at
    // the fast path's rate, plus the probes. The retransmission timeout's
    // backoff sent more into it for longer.
    let rate_pps = fast.sender.sent_packets as f64 / 16.0;
    let data_lost = fast.link.dropped_blackout - fast.sender.probe_packets;
    let per_death = data_lost as f64 / 3.0;
    assert!(per_death <= rate_pps * 0.050, "{per_death} at {rate_pps}/s");
    // Probes cost well under 1 % of what was sent.
    assert!(r.probe_overhead < 0.01, "{}", r.probe_overhead);
}

#[test]
fn a_dying_fast_path_loses_nothing_when_the_other_path_has_room() {
    // As above: at 45 % load the stable path alone carries the whole
    // offer (18 of its 20 Mbit/s), so what the fast path swallows at each
    // death (its packets in flight and those sent in the ~25 ms before its
    // silence is noticed) can go out again on the stable path. They are
    // re-sent ~25-30 ms after their first send, well inside the queue delay
    // limit (at least 70 ms here: 50 ms plus the 20 ms delay spread), so
    // none goes stale: the bound is zero datagrams lost, not a rate.
    // Before reinjection the same run lost 0.3-0.5 % (about 45 datagrams
    // per death).
    let r = fast_path_dying_three_times();
    let fast = &r.paths[0];
    assert_eq!(r.path_down_events, 3);
    let swallowed = fast.link.dropped_blackout - fast.sender.probe_packets;
    let sender = r.sender.as_ref().expect("datagram mode");
    // The deaths did swallow data, and all of it went out again.
    assert!(swallowed >= 3 * 10, "{swallowed}");
    assert!(sender.reinjected >= swallowed, "{sender:?}, {swallowed}");
    assert_eq!(sender.reinject_stale, 0, "{sender:?}");
    assert_eq!(r.loss_rate, 0.0, "{:?}", r.reseq);
    assert_eq!(r.reseq.skipped, 0, "{:?}", r.reseq);
}

#[test]
fn a_down_path_is_probed_on_time_when_the_live_path_has_no_room() {
    // The live path has carried almost nothing, so its rate estimate is a
    // fraction of the 5.7 Mbit/s offered while the fast path is dark: the
    // rest goes into the dead path as a last resort (earliest-arrival).
    // The down path must still be probed every PROBE_INTERVAL. It was not
    // probed at all: probes copied a head only if its number rose above
    // the down path's, and the re-sent datagrams at the head never do,
    // while the last-resort ones kept the down path's numbers above every
    // later head. A last-resort datagram is now the probe when one is due.
    let r = bench(
        &["8mbit,5ms,blackout=1s+500ms", "8mbit,20ms"],
        "earliest-arrival",
        "cbr:40%",
        3,
        1,
    );
    let dead = &r.paths[0].sender;
    assert_eq!(dead.down_events, 1);
    // Down from ~1.02 s to 1.5 s: probes at least at 1.02, 1.12, ... 1.42.
    let down_ms = 500.0 - 20.0;
    let due = (down_ms / (PROBE_INTERVAL.as_secs_f64() * 1e3)).floor() as u64;
    assert!(dead.probe_packets >= due, "{dead:?}");
    // What the live path's estimate cannot carry in time is lost, about
    // as much as without reinjection (6.5 %).
    assert!(r.loss_rate < 0.07, "{}", r.loss_rate);
}

#[test]
fn a_long_fast_path_takes_its_share_from_the_start() {
    // The fastest path has the longest delay: until its first
    // acknowledgement (300 ms) a first window per round trip left most of
    // the load to go stale, and startup overfilled the short paths' queues
    // (4.7 % loss over the first 10 s before).
    let r = bench(
        &["50mbit,150ms", "20mbit,40ms", "10mbit,20ms", "5mbit,5ms"],
        "earliest-arrival",
        "cbr:95%",
        10,
        1,
    );
    assert!(r.loss_rate <= 0.015, "{}", r.loss_rate);
    // Start-up's losses on the short paths come in bursts, of which the
    // receiver pins down only the last; the sender's skip notices end
    // the others' holes (p99 452 ms before, up to the 500-ms hold limit).
    // The bound: the delay spread plus 15 ms.
    let reorder = r.reorder_delay_ms.expect("delivered");
    assert!(reorder.p99 <= 160.0, "{reorder:?}");
}

#[test]
fn a_jittery_lte_path_keeps_its_share_under_constant_load() {
    // A fixed line and an LTE path with 10 ms of jitter (the layer3
    // paper's), 105 of their 124 Mbit/s offered. With no room in ProbeBW's
    // window for the LTE path's bursts of acknowledgements, it delivered
    // less than its estimate every round and the estimate followed: on
    // four of these six seeds it carried 32-38 Mbit/s instead of 44.5 in
    // the first 10 s, and 6-11 % of the load was lost.
    for seed in 1..=6 {
        let r = bench(
            &["64mbit,6500us", "60mbit,12500us,jitter=10ms"],
            "earliest-arrival",
            "cbr:105mbit",
            10,
            seed,
        );
        assert!(r.loss_rate < 0.005, "seed {seed}: {}", r.loss_rate);
    }
}

const CHEAP_DEAR: [&str; 2] = [
    "10mbit,10ms,cost=1,name=cheap",
    "10mbit,10ms,cost=10,name=dear",
];

#[test]
fn a_small_short_paths_start_up_does_not_overflow_its_link() {
    // 18 + 2 Mbit/s at 100/5 ms, one TCP flow: BBR's 64-packet initial
    // window, kept on the 10-ms path at start-up's pacing floor (35
    // Mbit/s), overflowed the 2 Mbit/s link's 10-packet queue: 71 of its
    // 361 packets in the first 2 s, and the TCP flow left slow start on
    // those drops.
    let r = bench(
        &["18mbit,100ms", "2mbit,5ms"],
        "earliest-arrival",
        "tcp:cubic",
        2,
        1,
    );
    let small = &r.paths[1].link;
    assert!(small.offered_packets > 200, "{small:?}");
    assert_eq!(small.dropped_queue, 0, "{small:?}");
}

fn dear_share(r: &Report) -> f64 {
    r.paths[1].sent_bytes as f64 / (r.paths[0].sent_bytes + r.paths[1].sent_bytes) as f64
}

#[test]
fn batcp_cost_preference_holds_under_pacing_and_without_kalman_samples() {
    for cc in [braid_core::cc::CcKind::Bbr, braid_core::cc::CcKind::Ccid2] {
        let mut s = Scenario::new(
            CHEAP_DEAR
                .iter()
                .map(|p| PathSpec::parse(p).unwrap())
                .collect(),
        );
        s.scheduler = "batcp:cost_weight=0.9".into();
        s.cc = cc;
        s.traffic = TrafficSpec::parse("cbr:20%").unwrap();
        s.duration = Duration::from_secs(5);
        let r = run(&s).unwrap();
        // Loads 10:1 by cost; the dear path carried 49-50 % before.
        assert!(dear_share(&r) <= 0.10, "{cc:?}: {}", dear_share(&r));
        // Overloaded, both fill: cost decides the order, not the capacity.
        s.traffic = TrafficSpec::parse("cbr:110%").unwrap();
        let r = run(&s).unwrap();
        assert!(r.utilization >= 0.95, "{cc:?}: {}", r.utilization);
    }
}

#[test]
fn cost_first_uses_the_dear_path_only_for_what_the_cheap_one_cannot_carry() {
    let sched = "earliest-arrival:cost_first=1";
    let r = bench(&CHEAP_DEAR, sched, "cbr:30%", 5, 1);
    assert_eq!(r.paths[1].sent_bytes, 0);
    assert_eq!(r.loss_rate, 0.0);
    // 60 %: the cheap path full, the dear one takes the rest, in time.
    let r = bench(&CHEAP_DEAR, sched, "cbr:60%", 5, 1);
    assert!(r.paths[0].utilization >= 0.95, "{}", r.paths[0].utilization);
    assert!(r.loss_rate <= 0.005, "{}", r.loss_rate);
    let r = bench(&CHEAP_DEAR, sched, "cbr:110%", 5, 1);
    assert!(r.utilization >= 0.95, "{}", r.utilization);
}

#[test]
fn a_loss_the_bond_resends_does_not_reach_an_inner_tcp() {
    // One TCP flow over a clean path and one that loses 1 % at random.
    let run_seed = |resend: bool, seed: u64| {
        let mut s = Scenario::new(
            ["10mbit,10ms,loss=1%", "10mbit,20ms"]
                .iter()
                .map(|p| PathSpec::parse(p).unwrap())
                .collect(),
        );
        s.traffic = TrafficSpec::parse("tcp:cubic").unwrap();
        s.duration = Duration::from_secs(5);
        s.resend_losses = resend;
        s.seed = seed;
        run(&s).unwrap()
    };
    let run_with = |resend: bool| run_seed(resend, 1);
    let tcp = |r: &Report| r.flows[0].tcp.clone().expect("a TCP flow");
    // Without re-sends every path loss is the flow's: it halves at each
    // (0.37 of the ideal in 5 s).
    let plain = run_with(false);
    assert!(tcp(&plain).utilization < 0.6, "{:?}", tcp(&plain));
    assert_eq!(plain.sender.as_ref().unwrap().resent, 0);
    // With them the bond fills the hole a round trip later, in order, and
    // the flow keeps its window.
    let resent = run_with(true);
    let sender = resent.sender.as_ref().unwrap();
    // Every datagram a path dropped (its random loss, and its queue's
    // overflow when the controller overshoots) is seen lost and sent
    // again, or given up when the sender had held it too long.
    let dropped: u64 = resent
        .paths
        .iter()
        .map(|p| p.link.dropped_loss + p.link.dropped_queue)
        .sum();
    assert!(
        resent.paths[0].link.dropped_loss > 20,
        "{:?}",
        resent.paths[0].link
    );
    let followed_up = sender.resent + sender.resend_stale;
    assert!(
        followed_up * 10 >= dropped * 9 && followed_up <= dropped,
        "{sender:?}, {dropped}"
    );
    assert_eq!(resent.reseq.delivered_late, 0);
    // What TCP keeps is over 0.9 of the ideal, averaged over three seeds
    // (0.941, 0.949, 0.909): a 5-s run's figure moves by a few hundredths
    // with the timing of start-up's losses and of the re-sends that come
    // too late, which TCP does see (one variant of the window's room for
    // bursts, not kept, gave seed 1 0.896).
    let mean = (tcp(&resent).utilization
        + tcp(&run_seed(true, 2)).utilization
        + tcp(&run_seed(true, 3)).utilization)
        / 3.0;
    assert!(mean > 0.9, "{mean}");
}
