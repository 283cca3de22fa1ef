//! The simulator's own guarantees: determinism and link accuracy.

use std::time::Duration;

use braid_sim::link::{Link, Offer};
use braid_sim::sim::{run, Scenario};
use braid_sim::spec::PathSpec;
use braid_sim::traffic::TrafficSpec;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn paths(specs: &[&str]) -> Vec<PathSpec> {
    specs.iter().map(|s| PathSpec::parse(s).unwrap()).collect()
}

fn lossy_scenario(seed: u64) -> Scenario {
    let mut s = Scenario::new(paths(&[
        "10mbit,10ms,jitter=3ms,loss=1%",
        "5mbit,40ms,ge=1%:20%:50%,blackout=2s+500ms",
    ]));
    s.duration = Duration::from_secs(5);
    s.seed = seed;
    s
}

#[test]
fn same_seed_same_result_to_the_packet() {
    let a = run(&lossy_scenario(7)).unwrap();
    let b = run(&lossy_scenario(7)).unwrap();
    assert_eq!(a, b);
    // The seed matters: a different one changes what the lossy links drop.
    let c = run(&lossy_scenario(8)).unwrap();
    assert_ne!(a.paths[0].link, c.paths[0].link);
}

#[test]
fn constant_rate_link_delivers_rate_and_delay() {
    let spec = PathSpec::parse("20mbit,25ms,queue=1000").unwrap();
    let mut link = Link::new(
        &spec.up,
        &[],
        Duration::from_millis(50),
        ChaCha8Rng::seed_from_u64(1),
    );
    // Offer 1500-byte packets at 25 Mbit/s (overload) for 10 s.
    let gap = Duration::from_secs_f64(1500.0 * 8.0 / 25e6);
    let mut first_arrival = None;
    let mut last_arrival = Duration::ZERO;
    let mut delivered = 0u64;
    let mut t = Duration::ZERO;
    while t < Duration::from_secs(10) {
        if let Offer::Arrives(at) = link.offer(t, 1500) {
            if first_arrival.is_none() {
                // An idle link adds exactly serialization + propagation.
                let expected =
                    Duration::from_secs_f64(1500.0 * 8.0 / 20e6) + Duration::from_millis(25);
                assert!(at.abs_diff(expected) < Duration::from_millis(1), "{at:?}");
                first_arrival = Some(at);
            }
            last_arrival = at;
            delivered += 1;
        }
        t += gap;
    }
    let span = (last_arrival - first_arrival.unwrap()).as_secs_f64();
    let rate = (delivered - 1) as f64 * 1500.0 * 8.0 / span;
    assert!((rate - 20e6).abs() / 20e6 < 0.01, "rate {rate}");
}

#[test]
fn bonded_run_is_fast_enough_to_be_useful() {
    // Not a timing assertion: checks the run completes and reports sane totals.
    let mut s = Scenario::new(paths(&["8mbit,5ms", "2mbit,5ms"]));
    s.duration = Duration::from_secs(5);
    s.traffic = TrafficSpec::Cbr { bps: 10e6 };
    let r = run(&s).unwrap();
    assert!((r.capacity_bps - 10e6).abs() < 1.0);
    let expected_ideal = 10e6 * 1400.0 / 1446.0;
    assert!((r.ideal_goodput_bps - expected_ideal).abs() < 1.0);
    // Offered 10 Mbit/s of IP bytes is 103 % of the ideal goodput: the
    // bonded pair must carry nearly all it can.
    assert!(r.goodput_bps <= r.ideal_goodput_bps * 1.001);
    assert!(
        r.goodput_bps >= 0.95 * r.ideal_goodput_bps,
        "{} of {}",
        r.goodput_bps,
        r.ideal_goodput_bps
    );
}
