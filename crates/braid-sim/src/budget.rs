//! What a run may cost before it starts. The simulator's time grows with
//! the number of events (packets offered, carried and acknowledged) and its
//! memory with the packets in flight at once; both follow from the scenario
//! (rates, trace density, delays, duration, number of paths), so a run that
//! would take hours or more memory than a machine has is refused up front
//! instead of being started.

use std::time::Duration;

use crate::sim::Scenario;
use crate::spec::{Capacity, PathSpec};
use crate::traffic::TrafficSpec;

/// The most events a run may be estimated at: about a minute of CPU time at
/// the 1.5 million events per second one core of a small machine simulates
/// (600 s at 100 Mbit/s is 16 million).
pub const MAX_EVENTS: f64 = 100e6;

/// The most traffic sources (`--traffic`) a run may have. Each keeps its
/// own delay histograms (about half a megabyte), and its index travels in
/// one byte of every datagram's tag.
pub const MAX_SOURCES: usize = 16;

/// The most packet bytes a run may hold in flight and in queues at once.
pub const MAX_IN_FLIGHT_BYTES: f64 = 1024.0 * 1024.0 * 1024.0;

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum BudgetError {
    #[error(
        "this run would simulate about {0:.1e} events, more than the limit of {MAX_EVENTS:.0e} \
         (about a minute of CPU time): shorten --duration or lower the rates"
    )]
    TooManyEvents(f64),
    #[error(
        "this run could hold about {:.1} GB of packets in flight and in queues, more than the \
         limit of 1 GiB: lower the rates, delays or queue sizes", .0 / 1e9
    )]
    TooMuchInFlight(f64),
    #[error(
        "{0} traffic sources: at most {MAX_SOURCES} per run (one source may run up to 64 TCP \
         connections: tcp:N)"
    )]
    TooManySources(usize),
}

/// Refuses a scenario whose estimated event count or in-flight bytes exceed
/// the limits above.
pub fn check(s: &Scenario) -> Result<(), BudgetError> {
    let sources = 1 + s.more_traffic.len();
    if sources > MAX_SOURCES {
        return Err(BudgetError::TooManySources(sources));
    }
    let events = estimated_events(s);
    if events.is_nan() || events > MAX_EVENTS {
        return Err(BudgetError::TooManyEvents(events));
    }
    let in_flight: f64 = s.paths.iter().map(in_flight_bytes).sum();
    if in_flight.is_nan() || in_flight > MAX_IN_FLIGHT_BYTES {
        return Err(BudgetError::TooMuchInFlight(in_flight));
    }
    Ok(())
}

/// Datagrams the sources offer (at their peak rates), plus at most one arrival
/// and one acknowledgement per packet each path can carry, over the run.
pub fn estimated_events(s: &Scenario) -> f64 {
    let wire_bits = s.wire_bytes() as f64 * 8.0;
    let payload_bits = s.payload_bytes.max(1) as f64 * 8.0;
    let ideal = s.ideal_goodput_bps();
    let offered_bps: f64 = std::iter::once(&s.traffic)
        .chain(&s.more_traffic)
        .map(|t| match *t {
            TrafficSpec::Cbr { bps } => bps,
            TrafficSpec::CbrFraction { fraction } => fraction * ideal,
            // Segments at most at the paths' rate, and an ACK for each.
            TrafficSpec::Tcp { .. } => 2.0 * ideal,
            // Reliable mode's writes are events only when the stream takes them.
            TrafficSpec::Bulk { .. } => ideal,
            TrafficSpec::Ramp {
                from_bps, to_bps, ..
            } => from_bps.max(to_bps),
        })
        .sum();
    let carried_bps: f64 = s
        .paths
        .iter()
        .map(|p| p.up_capacity_bps(Duration::ZERO, s.duration))
        .sum();
    let per_second = offered_bps / payload_bits + 2.0 * carried_bps / wire_bits;
    per_second * s.duration.as_secs_f64()
}

/// A path's up direction full: a window of rate × (round trip + jitter)
/// in flight plus a full queue.
fn in_flight_bytes(p: &PathSpec) -> f64 {
    let rtt = p.up.delay + p.down.delay;
    let rate_bps = match &p.up.capacity {
        Capacity::Rate { bps } => *bps as f64,
        Capacity::Trace(t) => t.capacity_bps(Duration::ZERO, t.period()),
    };
    let window = rate_bps / 8.0 * (rtt + p.up.jitter).as_secs_f64();
    window + p.up.queue_limit_bytes(rate_bps, rtt, 1500) as f64
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::Trace;

    fn scenario(paths: &[&str], traffic: &str, duration_s: u64) -> Scenario {
        let paths = paths.iter().map(|p| PathSpec::parse(p).unwrap()).collect();
        let mut s = Scenario::new(paths);
        s.traffic = TrafficSpec::parse(traffic).unwrap();
        s.duration = Duration::from_secs(duration_s);
        s
    }

    #[test]
    fn ordinary_runs_fit() {
        // The largest of BENCHMARKS.md, and ten minutes at 100 Mbit/s.
        check(&scenario(
            &["64mbit,6500us", "60mbit,12500us,jitter=10ms"],
            "cbr:105mbit",
            60,
        ))
        .unwrap();
        let s = scenario(&["50mbit,10ms", "50mbit,30ms"], "cbr:110%", 600);
        check(&s).unwrap();
        let e = estimated_events(&s);
        assert!((15e6..18e6).contains(&e), "{e}");
    }

    #[test]
    fn runs_out_of_proportion_are_refused() {
        for (paths, traffic, secs) in [
            (&["1000gbit,5ms"][..], "cbr:110%", 3),
            (&["10mbit,5ms"][..], "cbr:1000gbit", 3),
            (&["10mbit,5ms"; 64][..], "cbr:110%", 9_999_999),
        ] {
            assert!(
                matches!(
                    check(&scenario(paths, traffic, secs)),
                    Err(BudgetError::TooManyEvents(_))
                ),
                "{paths:?} {traffic} {secs}"
            );
        }
        let big_window = scenario(&["1gbit,10s"], "cbr:110%", 1);
        assert!(matches!(
            check(&big_window),
            Err(BudgetError::TooMuchInFlight(_))
        ));
    }

    #[test]
    fn at_most_sixteen_sources_run_at_once() {
        let mut s = scenario(&["10mbit,5ms"], "cbr:64kbit", 1);
        s.more_traffic = vec![TrafficSpec::parse("tcp:2").unwrap(); MAX_SOURCES - 1];
        check(&s).unwrap();
        s.more_traffic
            .push(TrafficSpec::parse("cbr:1kbit").unwrap());
        assert_eq!(check(&s), Err(BudgetError::TooManySources(17)));
    }

    #[test]
    fn a_dense_trace_counts_its_opportunities() {
        let text = "1\n".repeat(100_000);
        let trace = Trace::parse("dense", &text).unwrap();
        let mut p = PathSpec::parse("1mbit,5ms").unwrap();
        p.up.capacity = Capacity::Trace(trace.clone());
        p.down.capacity = Capacity::Trace(trace);
        let mut s = Scenario::new(vec![p]);
        s.duration = Duration::from_secs(1);
        assert!(matches!(check(&s), Err(BudgetError::TooManyEvents(_))));
    }
}
