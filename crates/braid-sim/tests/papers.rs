//! The papers' own pairings, end to end over the simulator.

use std::time::Duration;

use braid_core::cc::CcKind;
use braid_sim::sim::{run, Scenario};
use braid_sim::spec::PathSpec;
use braid_sim::traffic::TrafficSpec;

/// multilink-udp-proxy: most-free-cwnd over CCID2 per link. The load needs
/// both paths; the scheduler drops only when every window is full.
#[test]
fn most_free_cwnd_with_ccid2_bonds_two_paths() {
    let mut s = Scenario::new(
        ["10mbit,10ms", "5mbit,20ms"]
            .iter()
            .map(|p| PathSpec::parse(p).unwrap())
            .collect(),
    );
    s.scheduler = "most-free-cwnd".to_owned();
    s.cc = CcKind::Ccid2;
    s.traffic = TrafficSpec::parse("cbr:80%").unwrap();
    s.duration = Duration::from_secs(5);
    let r = run(&s).unwrap();
    // Measured: 97.5 % of the offered load delivered, all in order, shares
    // 77 / 23 % (capacity 67 / 33 %), no path timeout.
    assert!(r.goodput_bps > 0.95 * r.offered_bps, "{r:#?}");
    assert!(r.in_order_goodput_bps >= 0.99 * r.goodput_bps, "{r:#?}");
    for p in &r.paths {
        assert!(p.share > 0.15, "{}: share {}", p.name, p.share);
        assert!(p.throughput_bps <= p.capacity_bps * 1.001);
        assert_eq!(p.sender.timeouts, 0, "{}", p.name);
    }
    assert_eq!(r.reseq.delivered_late, 0, "{:?}", r.reseq);
}
