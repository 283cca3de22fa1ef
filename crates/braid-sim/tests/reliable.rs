//! `--mode reliable` end to end in the simulator: a bulk transfer over the
//! stream arrives whole (the run checks every byte it reads), survives a
//! blackout without a long stall, uses a randomly lossy path, and fills a
//! path again soon after a fade.

use std::time::Duration;

use braid_core::cc::CcKind;
use braid_sim::metrics::Report;
use braid_sim::sim::{run, Mode, Scenario, SimError};
use braid_sim::spec::PathSpec;
use braid_sim::trace::Trace;
use braid_sim::traffic::TrafficSpec;

fn transfer(specs: &[&str], bytes: u64) -> Scenario {
    let mut s = Scenario::new(specs.iter().map(|p| PathSpec::parse(p).unwrap()).collect());
    s.mode = Mode::Reliable;
    s.traffic = TrafficSpec::Bulk { bytes: Some(bytes) };
    s.duration = Duration::from_secs(120);
    s
}

fn completed(r: &Report, bytes: u64) -> f64 {
    let rel = r.reliable.as_ref().expect("reliable figures");
    assert_eq!(rel.error, None);
    assert_eq!(rel.read_bytes, bytes);
    rel.completion_s.expect("completed")
}

#[test]
fn a_blackout_on_one_path_never_stalls_the_stream_for_long() {
    for blacked in [0, 1] {
        let mut specs = ["10mbit,10ms".to_owned(), "10mbit,30ms".to_owned()];
        specs[blacked] += ",blackout=4s+10s";
        let specs: Vec<&str> = specs.iter().map(String::as_str).collect();
        let r = run(&transfer(&specs, 25_000_000)).unwrap();
        let done = completed(&r, 25_000_000);
        // 25 MB is 200 Mbit: about 77 in the first 4 s on both paths, 96 in
        // the 10 s on one, the last 27 on both again: 15.4 s at best.
        assert!(done > 15.0 && done < 17.5, "path {blacked}: {done} s");
        assert!(
            r.stall_max_ms < 1000.0,
            "path {blacked}: stall {} ms",
            r.stall_max_ms
        );
        assert!(r.reliable.unwrap().retransmitted_bytes > 0);
    }
}

/// A mahimahi trace of 2 s that fades to 2 Mbit/s for its first second
/// and carries 20 Mbit/s in its second: 11 Mbit/s on average.
fn fade_trace() -> Trace {
    Trace::from_rates("fade", 2000, |ms| if ms <= 1000 { 2.0 } else { 20.0 }).unwrap()
}

/// After each fade the path's rate comes back tenfold, and only a BBR
/// probe can show it (BBR paces at its estimate). The stream's paths
/// probe every 3 round trips (`stream::path`): the fading path carries
/// 0.86 of what it could; with BBR v1's 8-round-trip cycle it carried
/// 0.80 (BENCHMARKS.md, "Where the LTE capacity went").
#[test]
fn a_path_leaving_a_fade_is_filled_again_soon() {
    let fading = PathSpec::parse_with("trace=fade,20ms", |_| Ok(fade_trace())).unwrap();
    let mut s = Scenario::new(vec![PathSpec::parse("10mbit,10ms").unwrap(), fading]);
    s.mode = Mode::Reliable;
    s.traffic = TrafficSpec::Bulk { bytes: None };
    s.duration = Duration::from_secs(10);
    let r = run(&s).unwrap();
    assert_eq!(r.reliable.as_ref().unwrap().error, None);
    let used = r.paths[1].utilization;
    assert!(
        used > 0.83,
        "the fading path carried {used:.3} of its capacity"
    );
}

#[test]
fn a_randomly_lossy_path_carries_its_share() {
    let r = run(&transfer(
        &["20mbit,10ms", "20mbit,25ms,loss=1%"],
        40_000_000,
    ))
    .unwrap();
    completed(&r, 40_000_000);
    assert!(
        r.paths[1].share > 0.4,
        "lossy path share {}",
        r.paths[1].share
    );
    assert!(r.goodput_bps > 0.85 * 40e6, "{}", r.goodput_bps);
}

#[test]
fn different_controllers_per_path_complete_and_the_report_names_them() {
    let mut s = transfer(&["10mbit,10ms", "5mbit,40ms"], 5_000_000);
    s.path_cc = vec![CcKind::Ccid2, CcKind::Bbr];
    let r = run(&s).unwrap();
    completed(&r, 5_000_000);
    assert_eq!(r.cc, "ccid2,bbr");
    // Same scenario, same result.
    assert_eq!(run(&s).unwrap(), r);
}

#[test]
fn an_unbounded_bulk_runs_to_the_end_of_the_run() {
    let mut s = transfer(&["10mbit,10ms"], 1);
    s.traffic = TrafficSpec::Bulk { bytes: None };
    s.duration = Duration::from_secs(5);
    let r = run(&s).unwrap();
    let rel = r.reliable.as_ref().unwrap();
    assert_eq!(rel.completion_s, None);
    assert_eq!(rel.error, None);
    assert_eq!(r.duration_s, 5.0);
    // Nearly 5 s of a 10 Mbit/s path, in order.
    assert!(rel.read_bytes > 5_000_000, "{}", rel.read_bytes);
}

#[test]
fn mode_and_traffic_must_match() {
    let mut s = transfer(&["10mbit,10ms"], 1000);
    s.mode = Mode::Datagram;
    assert!(matches!(run(&s), Err(SimError::BulkNeedsReliable)));
    let mut s = transfer(&["10mbit,10ms"], 1000);
    s.traffic = TrafficSpec::parse("cbr:1mbit").unwrap();
    assert!(matches!(run(&s), Err(SimError::ReliableNeedsBulk)));
    let mut s = transfer(&["10mbit,10ms"], 1000);
    s.more_traffic = vec![TrafficSpec::parse("cbr:64kbit").unwrap()];
    assert!(matches!(run(&s), Err(SimError::ReliableOneTransfer)));
    let mut s = transfer(&["10mbit,10ms"], 1000);
    s.path_cc = vec![CcKind::Bbr, CcKind::Bbr];
    assert!(matches!(
        run(&s),
        Err(SimError::CcCount { given: 2, paths: 1 })
    ));
}
