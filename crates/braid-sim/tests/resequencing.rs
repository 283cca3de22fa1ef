//! The resequencer over the simulator: it skips only numbers that will never
//! arrive (issue 6, section 1).

use std::time::Duration;

use braid_core::sched::NAMES;
use braid_sim::metrics::Report;
use braid_sim::sim::{run, Scenario};
use braid_sim::spec::PathSpec;
use braid_sim::traffic::TrafficSpec;

fn scenario(specs: &[&str], scheduler: &str, traffic: &str, secs: u64) -> Scenario {
    let mut s = Scenario::new(specs.iter().map(|p| PathSpec::parse(p).unwrap()).collect());
    s.scheduler = scheduler.to_owned();
    s.traffic = TrafficSpec::parse(traffic).unwrap();
    s.duration = Duration::from_secs(secs);
    s
}

/// Packets the links dropped on the way to the receiver (data and skip notices).
fn link_drops(r: &Report) -> u64 {
    r.paths
        .iter()
        .map(|p| p.link.dropped_queue + p.link.dropped_loss + p.link.dropped_blackout)
        .sum()
}

/// The reproduction of issue 6 §1: no link drops anything, so no hole may be
/// given up on and no packet may arrive after its number was skipped.
#[test]
fn loss_free_run_skips_nothing_with_any_scheduler() {
    for name in NAMES {
        let r = run(&scenario(
            &["10mbit,10ms", "10mbit,30ms"],
            name,
            "cbr:50%",
            3,
        ))
        .unwrap();
        assert_eq!(link_drops(&r), 0, "{name}: the paths must not drop");
        let sender_drops = r.sender_queue_drops + r.scheduler_drops;
        assert_eq!(sender_drops, 0, "{name}: 50 % load must not drop");
        assert_eq!(r.reseq.skipped, 0, "{name}: {:?}", r.reseq);
        assert_eq!(r.reseq.delivered_late, 0, "{name}: {:?}", r.reseq);
        assert_eq!(r.loss_rate, 0.0, "{name}");
    }
}

/// With random loss, every skipped number is one the links or the sender
/// dropped: none arrives after it was given up on.
#[test]
fn lossy_run_skips_only_what_was_dropped() {
    // Redundant sends copies: a number lost on one path arrives on the other.
    for name in NAMES.iter().filter(|n| **n != "redundant") {
        let r = run(&scenario(
            &["10mbit,10ms,loss=1%", "10mbit,30ms,loss=1%"],
            name,
            "cbr:50%",
            3,
        ))
        .unwrap();
        let dropped = link_drops(&r);
        assert!(dropped > 10, "{name}: {dropped} drops, the test needs loss");
        let sender_drops = r.sender_queue_drops + r.scheduler_drops;
        assert_eq!(r.reseq.delivered_late, 0, "{name}: {:?}", r.reseq);
        assert!(
            r.reseq.skipped <= dropped + sender_drops,
            "{name}: skipped {} of {dropped} link and {sender_drops} sender drops",
            r.reseq.skipped
        );
    }
}

/// Issue 8: with 10x overload, one skip notice per dropped datagram took a
/// quarter of the path (goodput 73 % of capacity). Notices are coalesced.
#[test]
fn overload_spends_little_on_skip_notices() {
    let r = run(&scenario(
        &["8mbit,10ms"],
        "earliest-arrival",
        "cbr:1000%",
        5,
    ))
    .unwrap();
    assert!(r.sender_queue_drops > 10_000, "{}", r.sender_queue_drops);
    let skip_bytes = r.paths[0].sent_bytes as f64 - r.paths[0].sender.sent_bytes as f64;
    assert!(
        skip_bytes < 0.05 * r.paths[0].sent_bytes as f64,
        "skip notices: {skip_bytes} of {} bytes",
        r.paths[0].sent_bytes
    );
    assert!(
        r.goodput_bps > 0.9 * r.ideal_goodput_bps,
        "goodput {} of {}",
        r.goodput_bps,
        r.ideal_goodput_bps
    );
    assert_eq!(r.reseq.delivered_late, 0, "{:?}", r.reseq);
}
