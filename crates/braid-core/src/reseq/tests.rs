use super::*;
use proptest::prelude::*;
use std::collections::HashSet;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn at(n_ms: u64) -> Instant {
    Instant::from_nanos(n_ms * 1_000_000)
}

fn drain(r: &mut Resequencer) -> Vec<Delivery> {
    std::iter::from_fn(|| r.poll_deliver()).collect()
}

fn gseqs(d: &[Delivery]) -> Vec<u64> {
    d.iter().map(|d| d.gseq).collect()
}

#[test]
fn in_order_passes_straight_through() {
    let mut r = Resequencer::new(ReseqConfig::default());
    for g in 0..3 {
        r.push(at(g), g, vec![g as u8], None, FlowLink::Unknown);
    }
    let d = drain(&mut r);
    assert_eq!(gseqs(&d), vec![0, 1, 2]);
    assert!(d.iter().all(|d| d.in_order && d.held.is_zero()));
    assert_eq!(r.poll_timeout(), None);
}

#[test]
fn holds_until_hole_fills() {
    let mut r = Resequencer::new(ReseqConfig::default());
    r.push(at(0), 1, vec![1], None, FlowLink::Unknown);
    r.push(at(0), 2, vec![2], None, FlowLink::Unknown);
    assert!(drain(&mut r).is_empty());
    r.push(at(7), 0, vec![0], None, FlowLink::Unknown);
    let d = drain(&mut r);
    assert_eq!(gseqs(&d), vec![0, 1, 2]);
    assert_eq!(d[1].held, ms(7));
}

#[test]
fn known_loss_releases_at_once() {
    let mut r = Resequencer::new(ReseqConfig::default());
    r.push(at(0), 0, vec![0], None, FlowLink::Unknown);
    r.push(at(1), 2, vec![2], None, FlowLink::Unknown);
    assert_eq!(gseqs(&drain(&mut r)), vec![0]);
    // Packet 3 arrives on the path that carried 1, with a gap: 1 was lost.
    r.push(
        at(2),
        3,
        vec![3],
        Some(PathGap {
            after: None,
            lost: 1,
            last_lost: Some(1),
            resent: false,
        }),
        FlowLink::Unknown,
    );
    assert_eq!(gseqs(&drain(&mut r)), vec![2, 3]);
    assert_eq!(r.counters.skipped, 1);
}

/// Packet 3 arrives on the path that carried 1, after a gap: 1 was lost,
/// and the sender re-sends losses.
fn gap_naming_1_resent(r: &mut Resequencer, now: Instant) {
    r.push(
        now,
        3,
        vec![3],
        Some(PathGap {
            after: None,
            lost: 1,
            last_lost: Some(1),
            resent: true,
        }),
        FlowLink::Unknown,
    );
}

#[test]
fn a_lost_number_the_sender_resends_is_awaited_and_delivered_in_order() {
    let mut r = Resequencer::new(ReseqConfig::default());
    r.set_timeout(ms(5));
    r.push(at(0), 0, vec![0], None, FlowLink::Unknown);
    r.push(at(1), 2, vec![2], None, FlowLink::Unknown);
    gap_naming_1_resent(&mut r, at(2));
    assert_eq!(gseqs(&drain(&mut r)), vec![0]);
    // Past the 5 ms hole timeout the hole still waits: the timer runs
    // RESEND_WAIT from the gap.
    assert_eq!(r.poll_timeout(), Some(at(2) + RESEND_WAIT));
    r.handle_timeout(at(40));
    assert!(drain(&mut r).is_empty());
    // The re-send fills it: everything in order, nothing skipped.
    r.push(at(41), 1, vec![1], None, FlowLink::Unknown);
    let d = drain(&mut r);
    assert_eq!(gseqs(&d), vec![1, 2, 3]);
    assert!(d.iter().all(|d| d.in_order));
    assert_eq!((r.counters.skipped, r.counters.timeouts), (0, 0));
    assert_eq!(r.poll_timeout(), None);
}

#[test]
fn an_awaited_number_goes_at_a_skip_notice_or_after_the_resend_wait() {
    // The sender gave it up (too old to re-send): its notice releases it.
    let mut r = Resequencer::new(ReseqConfig::default());
    r.set_timeout(ms(5));
    r.push(at(0), 0, vec![0], None, FlowLink::Unknown);
    r.push(at(1), 2, vec![2], None, FlowLink::Unknown);
    gap_naming_1_resent(&mut r, at(2));
    r.skip(at(20), 1, 1);
    assert_eq!(gseqs(&drain(&mut r)), vec![0, 2, 3]);
    assert_eq!(r.counters.skipped, 1);
    // Neither re-send nor notice: given up after the wait, not before.
    let mut r = Resequencer::new(ReseqConfig::default());
    r.set_timeout(ms(5));
    r.push(at(0), 0, vec![0], None, FlowLink::Unknown);
    r.push(at(1), 2, vec![2], None, FlowLink::Unknown);
    gap_naming_1_resent(&mut r, at(2));
    let deadline = at(2) + RESEND_WAIT;
    r.handle_timeout(at(1) + RESEND_WAIT);
    assert_eq!(gseqs(&drain(&mut r)), vec![0]);
    r.handle_timeout(deadline);
    assert_eq!(gseqs(&drain(&mut r)), vec![2, 3]);
    assert_eq!((r.counters.skipped, r.counters.timeouts), (1, 1));
    // A re-send after that is delivered late, once.
    r.push(at(300), 1, vec![1], None, FlowLink::Unknown);
    let late = drain(&mut r);
    assert_eq!((gseqs(&late), late[0].in_order), (vec![1], false));
}

#[test]
fn an_awaited_hole_waits_at_least_the_hole_timeout() {
    // Paths whose delays differ by more than the resend wait: the hole
    // timeout, which covers the slowest path, wins.
    let mut r = Resequencer::new(ReseqConfig::default());
    r.set_timeout(ms(300));
    r.push(at(0), 0, vec![0], None, FlowLink::Unknown);
    r.push(at(1), 2, vec![2], None, FlowLink::Unknown);
    gap_naming_1_resent(&mut r, at(2));
    assert_eq!(r.poll_timeout(), Some(at(2) + ms(300)));
    // And never past the holding bound.
    let mut r = Resequencer::new(ReseqConfig {
        max_hold: ms(50),
        ..ReseqConfig::default()
    });
    r.push(at(0), 0, vec![0], None, FlowLink::Unknown);
    r.push(at(1), 2, vec![2], None, FlowLink::Unknown);
    gap_naming_1_resent(&mut r, at(2));
    assert_eq!(r.poll_timeout(), Some(at(1) + ms(50)));
}

#[test]
fn an_awaited_number_behind_the_head_leaves_the_heads_timer_alone() {
    let mut r = Resequencer::new(ReseqConfig::default());
    r.set_timeout(ms(5));
    r.push(at(0), 0, vec![0], None, FlowLink::Unknown);
    r.push(at(1), 2, vec![2], None, FlowLink::Unknown);
    let head_timer = r.poll_timeout().expect("hole 1 timed");
    assert!(head_timer <= at(1) + ms(6), "{head_timer:?}");
    // 3 was lost and will be re-sent: only 3 waits longer, not hole 1.
    r.push(
        at(2),
        4,
        vec![4],
        Some(PathGap {
            after: None,
            lost: 1,
            last_lost: Some(3),
            resent: true,
        }),
        FlowLink::Unknown,
    );
    assert_eq!(r.poll_timeout(), Some(head_timer));
    r.handle_timeout(head_timer);
    assert_eq!(gseqs(&drain(&mut r)), vec![0, 2]);
    // Now 3 heads the line, and waits for its re-send.
    assert!(r.poll_timeout() >= Some(at(2) + RESEND_WAIT));
    r.push(at(30), 3, vec![3], None, FlowLink::Unknown);
    assert_eq!(gseqs(&drain(&mut r)), vec![3, 4]);
}

#[test]
fn awaited_ranges_are_capped_at_their_limit_exactly() {
    let mut r = Resequencer::new(ReseqConfig::default());
    r.push(at(0), 0, vec![0], None, FlowLink::Unknown);
    // Disjoint single numbers 2, 4, 6, ...: one range each.
    let awaited = |n: usize| 2 + 2 * n as u64;
    for n in 0..MAX_AWAITED_RANGES {
        r.await_resend(at(1), awaited(n), awaited(n) + 1);
    }
    assert_eq!(r.awaiting_resend.len(), MAX_AWAITED_RANGES);
    r.await_resend(
        at(1),
        awaited(MAX_AWAITED_RANGES),
        awaited(MAX_AWAITED_RANGES) + 1,
    );
    assert_eq!(r.awaiting_resend.len(), MAX_AWAITED_RANGES);
}

#[test]
fn a_header_naming_its_own_number_lost_does_not_lose_it() {
    for resent in [false, true] {
        let mut r = Resequencer::new(ReseqConfig::default());
        r.push(at(0), 0, vec![0], None, FlowLink::Unknown);
        r.push(
            at(1),
            1,
            vec![1],
            Some(PathGap {
                after: None,
                lost: 1,
                last_lost: Some(1),
                resent,
            }),
            FlowLink::Unknown,
        );
        r.push(at(2), 3, vec![3], None, FlowLink::Unknown);
        let d = drain(&mut r);
        assert_eq!(gseqs(&d), vec![0, 1], "resent {resent}");
        assert!(d.iter().all(|d| d.in_order));
        assert_eq!(r.counters.skipped, 0);
        // Hole 2 was named by nobody: its timer is the plain hole timeout.
        assert!(
            r.poll_timeout() < Some(at(2) + RESEND_WAIT),
            "resent {resent}"
        );
    }
}

#[test]
fn burst_loss_on_a_path_resolves_when_counts_match() {
    let mut r = Resequencer::new(ReseqConfig::default());
    // Path A carried 0, 2, 3, 4, 6; path B carried 1, 5. A loses 2, 3, 4.
    r.push(at(0), 0, vec![], None, FlowLink::Unknown);
    r.push(at(1), 1, vec![], None, FlowLink::Unknown);
    r.push(at(1), 5, vec![], None, FlowLink::Unknown);
    let gap = PathGap {
        after: Some(0),
        lost: 3,
        last_lost: Some(4),
        resent: false,
    };
    r.push(at(2), 6, vec![], Some(gap), FlowLink::Unknown);
    // Missing in (0, 6): 2, 3, 4 = three, as many as A lost: all released.
    assert_eq!(gseqs(&drain(&mut r)), vec![0, 1, 5, 6]);
    // Had B's 5 not arrived yet, 5 could still be on B: only 4 is certain.
    let mut r = Resequencer::new(ReseqConfig::default());
    r.push(at(0), 0, vec![], None, FlowLink::Unknown);
    r.push(at(1), 1, vec![], None, FlowLink::Unknown);
    r.push(at(2), 6, vec![], Some(gap), FlowLink::Unknown);
    assert_eq!(gseqs(&drain(&mut r)), vec![0, 1]);
    assert_eq!(r.held_packets(), 1);
}

#[test]
fn timeout_releases_one_then_one_then_all() {
    let mut r = Resequencer::new(ReseqConfig::default());
    r.set_timeout(ms(10));
    // Holes at 0, 2, 4, 6; held 1, 3, 5, 7.
    for g in [1, 3, 5, 7] {
        r.push(at(0), g, vec![], None, FlowLink::Unknown);
    }
    assert_eq!(r.poll_timeout(), Some(at(10)));
    r.handle_timeout(at(10));
    assert_eq!(gseqs(&drain(&mut r)), vec![1]);
    assert_eq!(r.poll_timeout(), Some(at(20)));
    r.handle_timeout(at(20));
    assert_eq!(gseqs(&drain(&mut r)), vec![3]);
    r.handle_timeout(at(30));
    assert_eq!(gseqs(&drain(&mut r)), vec![5, 7]);
    assert_eq!(r.poll_timeout(), None);
    // The skipped 2 arrives late: delivered once, out of order; again: duplicate.
    r.push(at(31), 2, vec![], None, FlowLink::Unknown);
    r.push(at(31), 2, vec![], None, FlowLink::Unknown);
    let d = drain(&mut r);
    assert_eq!(gseqs(&d), vec![2]);
    assert!(!d[0].in_order);
    assert_eq!(r.counters.duplicates, 1);
}

#[test]
fn byte_bound_forces_release() {
    let mut r = Resequencer::new(ReseqConfig {
        max_bytes: 250,
        ..ReseqConfig::default()
    });
    r.push(at(0), 1, vec![0; 100], None, FlowLink::Unknown);
    r.push(at(0), 2, vec![0; 100], None, FlowLink::Unknown);
    assert!(drain(&mut r).is_empty());
    r.push(at(0), 4, vec![0; 100], None, FlowLink::Unknown);
    assert_eq!(gseqs(&drain(&mut r)), vec![1, 2]);
    assert_eq!((r.held_bytes(), r.held_packets()), (100, 1));
}

#[test]
fn pass_through_delivers_at_once_without_duplicates() {
    let mut r = Resequencer::new(ReseqConfig {
        mode: ReseqMode::PassThrough,
        ..ReseqConfig::default()
    });
    for g in [2, 0, 2, 1, 0] {
        r.push(at(0), g, vec![], None, FlowLink::Unknown);
    }
    assert_eq!(gseqs(&drain(&mut r)), vec![2, 0, 1]);
    assert_eq!(r.counters.duplicates, 2);
}

/// One packet of a generated scenario: global number, path, arrival time
/// (ms), or lost.
#[derive(Debug, Clone)]
struct Sent {
    gseq: u64,
    /// Its flow, and the link to the flow's previous packet it carries
    /// (`Unknown` in scenarios without flow information).
    flow: usize,
    link: FlowLink,
    path: usize,
    arrival: Option<u64>,
    /// Arrival of a second copy (the network duplicated it), if any.
    copy: Option<u64>,
}

/// Generates packets sent in global order over up to 3 FIFO paths with
/// different delays, some lost, some duplicated by the network; of up to 4
/// flows, each packet naming its flow's previous one when `with_flows`.
fn scenario(with_flows: bool) -> impl Strategy<Value = Vec<Sent>> {
    let paths = proptest::collection::vec(1u64..60, 1..=3);
    (
        paths,
        1usize..=4,
        proptest::collection::vec((0usize..3, 0u32..100, 0u64..3, 0u64..40, 0usize..4), 1..300),
    )
        .prop_map(move |(delays, flows, pkts)| {
            let mut last_arrival = vec![0u64; delays.len()];
            let mut last_of_flow: Vec<Option<u64>> = vec![None; flows];
            let mut out = Vec::new();
            for (i, (path, loss_roll, gap, copy_after, flow)) in pkts.into_iter().enumerate() {
                let flow = flow % flows;
                let link = match last_of_flow[flow].replace(i as u64) {
                    _ if !with_flows => FlowLink::Unknown,
                    Some(p) => FlowLink::After(p),
                    None => FlowLink::First,
                };
                let path = path % delays.len();
                let send = i as u64 + gap;
                let arrival = (send + delays[path]).max(last_arrival[path]);
                last_arrival[path] = arrival;
                let arrival = (loss_roll >= 10).then_some(arrival);
                out.push(Sent {
                    gseq: i as u64,
                    flow,
                    link,
                    path,
                    arrival,
                    // One in ten arrivals is duplicated, up to 40 ms later.
                    copy: arrival.filter(|_| loss_roll >= 90).map(|a| a + copy_after),
                });
            }
            out
        })
}

fn run_scenario(sent: &[Sent], config: ReseqConfig) -> (Vec<Delivery>, Resequencer) {
    let mut r = Resequencer::new(config);
    r.set_timeout(ms(15));
    // Per path, the gap the receiver would report before each arrival.
    let mut arrivals: Vec<(u64, &Sent, Option<PathGap>)> = Vec::new();
    let mut prev_on_path: Vec<Option<&Sent>> = vec![None; 3];
    let mut last_arrived: Vec<Option<u64>> = vec![None; 3];
    let mut lost_run = [0u64; 3];
    for s in sent {
        let prev = prev_on_path[s.path];
        if let Some(a) = s.arrival {
            let gap = (lost_run[s.path] > 0).then(|| PathGap {
                after: last_arrived[s.path],
                lost: lost_run[s.path],
                last_lost: prev.map(|p| p.gseq),
                resent: false,
            });
            arrivals.push((a, s, gap));
            if let Some(c) = s.copy {
                arrivals.push((c, s, None));
            }
            last_arrived[s.path] = Some(s.gseq);
            lost_run[s.path] = 0;
        } else {
            lost_run[s.path] += 1;
        }
        prev_on_path[s.path] = Some(s);
    }
    arrivals.sort_by_key(|(a, s, _)| (*a, s.path, s.gseq));
    let mut delivered = Vec::new();
    for (a, s, hint) in arrivals {
        let now = at(a);
        while let Some(t) = r.poll_timeout().filter(|t| *t <= now) {
            r.handle_timeout(t);
            delivered.extend(drain(&mut r));
        }
        r.push(now, s.gseq, s.gseq.to_be_bytes().to_vec(), hint, s.link);
        delivered.extend(drain(&mut r));
        assert!(r.held_bytes() <= config.max_bytes, "byte bound exceeded");
        assert!(r.waiting.len() <= r.held.len(), "a waiter without a packet");
        for d in &delivered {
            assert!(d.held <= config.max_hold, "held {:?}", d.held);
        }
    }
    // Eventually everything is released.
    let mut guard = 0;
    while let Some(t) = r.poll_timeout() {
        r.handle_timeout(t);
        delivered.extend(drain(&mut r));
        guard += 1;
        assert!(guard < 10_000, "timers never settle");
    }
    (delivered, r)
}

proptest! {
    // A fixed seed: the same cases every run (deterministic tests).
    #![proptest_config(ProptestConfig {
        rng_seed: proptest::test_runner::RngSeed::Fixed(1),
        ..ProptestConfig::default()
    })]

    #[test]
    fn ordered_mode_properties(
        (with_flows, sent) in any::<bool>().prop_flat_map(|f| (Just(f), scenario(f))),
        max_bytes in 16usize..2000,
    ) {
        let config = ReseqConfig { mode: ReseqMode::Ordered, max_bytes, max_hold: ms(100), ..ReseqConfig::default() };
        let (delivered, r) = run_scenario(&sent, config);
        // Never a duplicate.
        let mut seen = HashSet::new();
        for d in &delivered {
            prop_assert!(seen.insert(d.gseq), "duplicate {}", d.gseq);
            prop_assert_eq!(&d.payload, &d.gseq.to_be_bytes().to_vec());
        }
        // What it holds leaves in order: in global order without flow
        // information, in each flow's order with it.
        let flow_of = |g: u64| if with_flows { sent[g as usize].flow } else { 0 };
        for flow in 0..4 {
            let in_order: Vec<u64> = delivered.iter().filter(|d| d.in_order && flow_of(d.gseq) == flow).map(|d| d.gseq).collect();
            prop_assert!(in_order.windows(2).all(|w| w[0] < w[1]), "flow {}: {:?}", flow, in_order);
        }
        if !with_flows {
            prop_assert_eq!(r.counters.delivered_early, 0);
        }
        prop_assert!(r.waiting.is_empty() && r.seen_ahead.is_empty());
        // Everything that arrived is delivered.
        let arrived: HashSet<u64> = sent.iter().filter(|s| s.arrival.is_some()).map(|s| s.gseq).collect();
        prop_assert_eq!(seen, arrived);
        prop_assert_eq!(r.held_packets(), 0);
        // Every copy beyond the first is counted as a duplicate.
        let copies = sent.iter().filter(|s| s.copy.is_some()).count() as u64;
        prop_assert_eq!(r.counters.duplicates, copies);
        prop_assert_eq!(r.counters.delivered, delivered.len() as u64);
    }

    #[test]
    fn pass_through_properties(sent in any::<bool>().prop_flat_map(scenario)) {
        let config = ReseqConfig { mode: ReseqMode::PassThrough, ..ReseqConfig::default() };
        let (delivered, r) = run_scenario(&sent, config);
        let copies = sent.iter().filter(|s| s.copy.is_some()).count() as u64;
        prop_assert_eq!(r.counters.duplicates, copies);
        let mut seen = HashSet::new();
        for d in &delivered {
            prop_assert!(seen.insert(d.gseq));
            prop_assert!(d.held.is_zero());
        }
        let arrived: HashSet<u64> = sent.iter().filter(|s| s.arrival.is_some()).map(|s| s.gseq).collect();
        prop_assert_eq!(seen, arrived);
    }
}

#[test]
fn a_hole_gets_its_full_timeout_from_when_it_heads_the_line() {
    // Issue 6 §1: hole 0 times out at 10 ms. Hole 2 opened at 9 ms (packet
    // 3 arrived); once 1 is released, 2 heads the line and must wait its own
    // 10 ms, not the 1 ms left of the old deadline.
    let mut r = Resequencer::new(ReseqConfig::default());
    r.set_timeout(ms(10));
    r.push(at(0), 1, vec![], None, FlowLink::Unknown);
    r.push(at(9), 3, vec![], None, FlowLink::Unknown);
    assert_eq!(r.poll_timeout(), Some(at(10)));
    r.handle_timeout(at(10));
    assert_eq!(gseqs(&drain(&mut r)), vec![1]);
    assert_eq!(r.poll_timeout(), Some(at(20)));
    // Hole 2 fills at 15 ms: on time, in order, nothing skipped but 0.
    r.push(at(15), 2, vec![], None, FlowLink::Unknown);
    assert_eq!(gseqs(&drain(&mut r)), vec![2, 3]);
    assert_eq!(r.counters.skipped, 1);
    assert_eq!(r.counters.delivered_late, 0);
}

#[test]
fn progress_restarts_the_count_toward_releasing_everything() {
    let mut r = Resequencer::new(ReseqConfig::default());
    r.set_timeout(ms(10));
    // Holes at 0, 2, 4, 6, 8; held 1, 3, 5, 7, 9.
    for g in [1, 3, 5, 7, 9] {
        r.push(at(0), g, vec![], None, FlowLink::Unknown);
    }
    r.handle_timeout(at(10));
    assert_eq!(gseqs(&drain(&mut r)), vec![1]);
    // Hole 2 fills: progress, the count of consecutive expiries restarts.
    r.push(at(12), 2, vec![], None, FlowLink::Unknown);
    assert_eq!(gseqs(&drain(&mut r)), vec![2, 3]);
    for expect in [5, 7, 9] {
        // First, second and third expiry since progress: one packet each
        // (without the restart, the second would release 7 and 9 at once).
        let t = r.poll_timeout().unwrap();
        r.handle_timeout(t);
        assert_eq!(gseqs(&drain(&mut r)), vec![expect]);
    }
}

#[test]
fn a_number_far_ahead_is_dropped_and_counted_at_once() {
    // Issue 6 §2: 2^40 used to make the resequencer walk every number below it.
    let mut r = Resequencer::new(ReseqConfig::default());
    r.push(at(0), 0, vec![0], None, FlowLink::Unknown);
    r.push(at(1), 1 << 40, vec![1], None, FlowLink::Unknown);
    r.push(at(1), u64::MAX, vec![1], None, FlowLink::Unknown);
    assert_eq!(r.counters.out_of_window, 2);
    assert_eq!(r.held_packets(), 0);
    r.push(at(2), 1, vec![1], None, FlowLink::Unknown);
    assert_eq!(gseqs(&drain(&mut r)), vec![0, 1]);
    // The window's last number is still taken.
    let window = ReseqConfig::default().window;
    r.push(at(3), 2 + window - 1, vec![], None, FlowLink::Unknown);
    assert_eq!(r.held_packets(), 1);
    assert_eq!(r.counters.out_of_window, 2);
}

#[test]
fn skip_notices_cost_one_range_however_wide() {
    // Issue 6 §2: 100 notices of 65,536 numbers used to add 6.5 M set entries.
    let mut r = Resequencer::new(ReseqConfig::default());
    // 0 delivered, 1 is a hole, so the notices' numbers wait behind it.
    r.push(at(0), 0, vec![], None, FlowLink::Unknown);
    for i in 0..100u64 {
        r.skip(at(1), 2 + i * 70_000, 65_536);
    }
    // The first 15 fit the 2^20 window, one range each; the rest are counted.
    assert_eq!(r.known_lost.len(), 15);
    assert_eq!(r.counters.out_of_window, 85);
    r.skip(at(1), 1 << 40, u32::MAX);
    assert_eq!(r.known_lost.len(), 15);
    assert_eq!(r.counters.out_of_window, 86);
    // A packet inside a range the notices called lost is still delivered.
    r.push(at(2), 5, vec![5], None, FlowLink::Unknown);
    r.push(at(2), 1, vec![1], None, FlowLink::Unknown);
    assert_eq!(gseqs(&drain(&mut r)), vec![0, 1, 5]);
    assert_eq!(r.counters.skipped, 65_535);
    assert_eq!(r.known_lost.len(), 14);
    // Crossing all of them skips them as ranges and counts every number.
    r.skip(at(3), 65_538, 1_000_000);
    assert_eq!(r.counters.skipped, 65_535 + 1_000_000);
    assert_eq!(r.known_lost.len(), 0);
    assert!(r.skipped.len() <= MAX_SKIPPED_RANGES);
}

#[test]
fn many_scattered_losses_stay_within_the_range_cap() {
    let mut r = Resequencer::new(ReseqConfig::default());
    r.push(at(0), 0, vec![], None, FlowLink::Unknown);
    for i in 0..(MAX_LOST_RANGES as u64 + 500) {
        r.skip(at(1), 2 + 2 * i, 1);
    }
    assert_eq!(r.known_lost.len(), MAX_LOST_RANGES);
    // The nearest losses are the ones kept: 1 arrives, 2 is known lost.
    r.push(at(2), 1, vec![], None, FlowLink::Unknown);
    r.push(at(2), 3, vec![], None, FlowLink::Unknown);
    assert_eq!(gseqs(&drain(&mut r)), vec![0, 1, 3]);
}

#[test]
fn tiny_packets_are_bounded_in_count() {
    let mut r = Resequencer::new(ReseqConfig {
        max_packets: 100,
        ..ReseqConfig::default()
    });
    // Every other number: each push beyond 100 held forces one release.
    for g in 1..=1000 {
        r.push(at(0), 2 * g, vec![], None, FlowLink::Unknown);
        assert!(r.held_packets() <= 100);
    }
    // Released in order, each hole before them skipped.
    let d = drain(&mut r);
    assert_eq!(d.len(), 900);
    assert!(d.iter().all(|d| d.in_order));
    assert!(r.arrivals.len() <= 2 * r.held_packets() + 16);
}

#[test]
fn late_packets_split_skipped_ranges_and_duplicates_stay_duplicates() {
    let mut r = Resequencer::new(ReseqConfig::default());
    r.skip(at(0), 0, 10);
    r.push(at(1), 10, vec![], None, FlowLink::Unknown);
    assert_eq!(gseqs(&drain(&mut r)), vec![10]);
    for g in [4, 4, 0, 9, 9, 5] {
        r.push(at(2), g, vec![], None, FlowLink::Unknown);
    }
    let d = drain(&mut r);
    assert_eq!(gseqs(&d), vec![4, 0, 9, 5]);
    assert!(d.iter().all(|d| !d.in_order));
    assert_eq!(r.counters.duplicates, 2);
    assert_eq!(r.counters.delivered_late, 4);
    // 0..10 less 4, then 0 (its first), 9 (its last), 5 (first of 5..9):
    // no empty range is left behind to count against the range cap.
    assert_eq!(skipped_ranges(&r), vec![(1, 4), (6, 9)]);
}

#[test]
fn numbers_delivered_ahead_keep_a_hole_open_up_to_skip_memory() {
    let mut r = Resequencer::new(ReseqConfig {
        mode: ReseqMode::PassThrough,
        ..ReseqConfig::default()
    });
    // Hole at 0; 1..=SKIP_MEMORY delivered ahead of it.
    for g in 1..=SKIP_MEMORY {
        r.push(at(0), g, vec![], None, FlowLink::Unknown);
    }
    assert_eq!(drain(&mut r).len() as u64, SKIP_MEMORY);
    assert_eq!((r.next, r.counters.skipped), (0, 0));
    // One more and the hole is given up: everything ahead is passed.
    r.push(at(0), SKIP_MEMORY + 1, vec![], None, FlowLink::Unknown);
    assert_eq!(gseqs(&drain(&mut r)), vec![SKIP_MEMORY + 1]);
    assert_eq!((r.next, r.counters.skipped), (SKIP_MEMORY + 2, 1));
    assert!(r.seen_ahead.is_empty());
}

#[test]
fn slow_fills_stretch_the_hole_timeout_up_to_four_times() {
    let mut r = Resequencer::new(ReseqConfig::default());
    r.set_timeout(ms(10));
    r.push(at(0), 1, vec![], None, FlowLink::Unknown);
    // Hole 0 fills after 30 ms: later holes wait 30 + 2 ms.
    r.push(at(30), 0, vec![], None, FlowLink::Unknown);
    r.push(at(40), 3, vec![], None, FlowLink::Unknown);
    assert_eq!(r.poll_timeout(), Some(at(72)));
    // A fill of 60 ms is capped at four timeouts (40 ms).
    r.push(at(100), 2, vec![], None, FlowLink::Unknown);
    r.push(at(100), 5, vec![], None, FlowLink::Unknown);
    assert_eq!(r.poll_timeout(), Some(at(140)));
}

#[test]
fn a_path_gap_resolves_by_counting_up_to_its_widest() {
    let gap = |after, lost| {
        Some(PathGap {
            after: Some(after),
            lost,
            last_lost: None,
            resent: false,
        })
    };
    // 4,096 numbers missing between 0 and 4,097, as many as the path lost.
    let mut r = Resequencer::new(ReseqConfig::default());
    r.push(at(0), 0, vec![], None, FlowLink::Unknown);
    r.push(
        at(1),
        1 + MAX_GAP_SCAN,
        vec![],
        gap(0, MAX_GAP_SCAN),
        FlowLink::Unknown,
    );
    assert_eq!(gseqs(&drain(&mut r)), vec![0, 1 + MAX_GAP_SCAN]);
    // One wider: not resolved by counting, the packet waits.
    let mut r = Resequencer::new(ReseqConfig::default());
    r.push(at(0), 0, vec![], None, FlowLink::Unknown);
    r.push(
        at(1),
        2 + MAX_GAP_SCAN,
        vec![],
        gap(0, MAX_GAP_SCAN + 1),
        FlowLink::Unknown,
    );
    assert_eq!(gseqs(&drain(&mut r)), vec![0]);
    assert_eq!(r.held_packets(), 1);
    // A skip notice ending exactly at the window's end is in the window.
    let window = ReseqConfig::default().window;
    r.skip(at(2), 1 + window - 10, 10);
    assert_eq!(r.counters.out_of_window, 0);
    r.skip(at(2), 1 + window - 10, 11);
    assert_eq!(r.counters.out_of_window, 1);
}

#[test]
fn pass_through_marks_order_and_follows_skips() {
    let mut r = Resequencer::new(ReseqConfig {
        mode: ReseqMode::PassThrough,
        ..ReseqConfig::default()
    });
    for g in [0, 1, 3, 2, 4] {
        r.push(at(0), g, vec![], None, FlowLink::Unknown);
    }
    let order: Vec<(u64, bool)> = drain(&mut r).iter().map(|d| (d.gseq, d.in_order)).collect();
    // 3 came before 2: out of order; 2 then closes the gap, 4 follows it.
    assert_eq!(
        order,
        vec![(0, true), (1, true), (3, false), (2, true), (4, true)]
    );
    // 5 and 6 dropped by the sender: 7 is in order again.
    r.skip(at(1), 5, 2);
    r.push(at(1), 7, vec![], None, FlowLink::Unknown);
    let d = drain(&mut r);
    assert_eq!((d[0].gseq, d[0].in_order), (7, true));
    assert_eq!(r.counters.skipped, 2);
    // A late 5 after its skip: delivered once, never again.
    r.push(at(2), 5, vec![], None, FlowLink::Unknown);
    r.push(at(2), 5, vec![], None, FlowLink::Unknown);
    assert_eq!(gseqs(&drain(&mut r)), vec![5]);
    assert_eq!(r.counters.duplicates, 1);
}

#[test]
fn a_slow_fill_is_remembered_for_the_fill_window_and_no_longer() {
    let mut r = Resequencer::new(ReseqConfig::default());
    r.set_timeout(ms(10));
    r.push(at(1_000), 1, vec![], None, FlowLink::Unknown);
    // A 30 ms fill: the next holes wait 32 ms...
    r.push(at(1_030), 0, vec![], None, FlowLink::Unknown);
    r.push(at(1_040), 3, vec![], None, FlowLink::Unknown);
    assert_eq!(r.poll_timeout(), Some(at(1_072)));
    // ...faster fills within FILL_WINDOW_MS (10 s) do not lower it...
    r.push(at(1_050), 2, vec![], None, FlowLink::Unknown);
    r.push(at(1_050), 5, vec![], None, FlowLink::Unknown);
    assert_eq!(r.poll_timeout(), Some(at(1_082)));
    r.push(at(1_051), 4, vec![], None, FlowLink::Unknown);
    // ...and once the window has passed, a quick fill brings the caller's
    // timeout back.
    r.push(at(12_000), 7, vec![], None, FlowLink::Unknown);
    r.push(at(12_000), 6, vec![], None, FlowLink::Unknown);
    r.push(at(12_000), 9, vec![], None, FlowLink::Unknown);
    assert_eq!(r.poll_timeout(), Some(at(12_010)));
}

#[test]
fn a_path_gap_naming_the_packet_itself_is_harmless() {
    let mut r = Resequencer::new(ReseqConfig::default());
    let own = PathGap {
        after: Some(3),
        lost: 1,
        last_lost: Some(3),
        resent: false,
    };
    r.push(at(0), 3, vec![3], Some(own), FlowLink::Unknown);
    r.push(at(1), 0, vec![0], None, FlowLink::Unknown);
    r.push(at(1), 1, vec![1], None, FlowLink::Unknown);
    r.push(at(1), 2, vec![2], None, FlowLink::Unknown);
    assert_eq!(gseqs(&drain(&mut r)), vec![0, 1, 2, 3]);
    assert_eq!(r.counters.skipped, 0);
}

#[test]
fn a_path_gap_over_numbers_given_up_on_is_not_resolved_by_counting() {
    // Numbers 0..10 given up on at a timeout; 10 delivered.
    let given_up = || {
        let mut r = Resequencer::new(ReseqConfig::default());
        r.set_timeout(ms(10));
        r.push(at(0), 10, vec![], None, FlowLink::Unknown);
        r.handle_timeout(at(10));
        assert_eq!(gseqs(&drain(&mut r)), vec![10]);
        r
    };
    let gap = |after| {
        Some(PathGap {
            after: Some(after),
            lost: 9,
            last_lost: None,
            resent: false,
        })
    };
    // The path's hole 6..20 overlaps them: some of its 9 lost packets may
    // be among them, so 11..20 are not all pinned down; 20 waits.
    let mut r = given_up();
    r.push(at(20), 20, vec![], gap(5), FlowLink::Unknown);
    assert!(drain(&mut r).is_empty());
    assert_eq!(r.held_packets(), 1);
    // Its hole 10..20 does not (10 was delivered): 11..20 are the 9 lost.
    let mut r = given_up();
    r.push(at(20), 20, vec![], gap(9), FlowLink::Unknown);
    assert_eq!(gseqs(&drain(&mut r)), vec![20]);
}

/// `(gseq, in_order)` of each delivery.
fn marked(d: &[Delivery]) -> Vec<(u64, bool)> {
    d.iter().map(|d| (d.gseq, d.in_order)).collect()
}

#[test]
fn flow_gaps_read_as_links() {
    assert_eq!(FlowLink::from_wire(10, 0), FlowLink::Unknown);
    assert_eq!(FlowLink::from_wire(10, 3), FlowLink::After(7));
    assert_eq!(FlowLink::from_wire(10, 10), FlowLink::After(0));
    // A predecessor below 0 is none.
    assert_eq!(FlowLink::from_wire(5, 7), FlowLink::First);
    assert_eq!(FlowLink::from_wire(10, GAP_SATURATED), FlowLink::First);
    assert_eq!(
        FlowLink::from_wire(70_000, GAP_SATURATED),
        FlowLink::AtOrBelow(70_000 - 65_535)
    );
}

#[test]
fn another_flows_packet_goes_past_a_hole() {
    let mut r = Resequencer::new(ReseqConfig::default());
    r.set_timeout(ms(10));
    // Flow A: 0, 1 (lost for now), 2. Flow B: 3, its first packet.
    r.push(at(0), 0, vec![], None, FlowLink::First);
    r.push(at(1), 2, vec![], None, FlowLink::After(1));
    r.push(at(2), 3, vec![], None, FlowLink::First);
    assert_eq!(marked(&drain(&mut r)), vec![(0, true), (3, true)]);
    assert_eq!(r.counters.delivered_early, 1);
    assert_eq!(r.held_packets(), 1);
    // B's next packet follows at once; A's 2 still waits for 1.
    r.push(at(3), 4, vec![], None, FlowLink::After(3));
    assert_eq!(marked(&drain(&mut r)), vec![(4, true)]);
    // The hole at 1 keeps its timer, as if 3 and 4 were held behind it.
    assert_eq!(r.poll_timeout(), Some(at(11)));
    r.push(at(5), 1, vec![], None, FlowLink::After(0));
    let d = drain(&mut r);
    assert_eq!(marked(&d), vec![(1, true), (2, true)]);
    assert_eq!(d[1].held, ms(4));
    // The delivery point passed 3 and 4 without counting them skipped.
    assert_eq!(r.next, 5);
    assert_eq!(r.counters.skipped, 0);
    assert_eq!(r.counters.delivered_late, 0);
    assert_eq!(r.counters.delivered, 5);
    assert_eq!(r.poll_timeout(), None);
}

#[test]
fn a_chain_of_three_goes_when_its_head_arrives() {
    let mut r = Resequencer::new(ReseqConfig::default());
    // Flow A's 0 and 1 are missing; flow B's 2, 3, 4 arrive backwards.
    r.push(at(0), 4, vec![], None, FlowLink::After(3));
    r.push(at(1), 3, vec![], None, FlowLink::After(2));
    assert!(drain(&mut r).is_empty());
    assert_eq!(r.waiting.len(), 2);
    r.push(at(2), 2, vec![], None, FlowLink::First);
    let d = drain(&mut r);
    assert_eq!(marked(&d), vec![(2, true), (3, true), (4, true)]);
    assert_eq!((d[1].held, d[2].held), (ms(1), ms(2)));
    assert_eq!(r.counters.delivered_early, 3);
    assert_eq!((r.held_packets(), r.held_bytes()), (0, 0));
    assert!(r.waiting.is_empty());
    // A's packets then go in order, and the point passes B's.
    r.push(at(3), 1, vec![], None, FlowLink::After(0));
    r.push(at(3), 0, vec![], None, FlowLink::First);
    assert_eq!(gseqs(&drain(&mut r)), vec![0, 1]);
    assert_eq!(r.next, 5);
    assert!(r.seen_ahead.is_empty());
}

#[test]
fn a_known_loss_does_not_free_the_next_packet_of_its_flow() {
    // Flow A: 0 missing, 1 lost (known from its path), 2 arrived. The
    // flow's order forbids 2 before 0, and 1 being lost says nothing of 0.
    let mut r = Resequencer::new(ReseqConfig::default());
    r.skip(at(0), 1, 1);
    r.push(at(0), 2, vec![], None, FlowLink::After(1));
    assert!(drain(&mut r).is_empty());
    r.push(at(1), 0, vec![], None, FlowLink::First);
    assert_eq!(marked(&drain(&mut r)), vec![(0, true), (2, true)]);
    assert_eq!(r.counters.delivered_early, 0);
    assert_eq!(r.counters.skipped, 1);
}

#[test]
fn a_predecessor_given_up_on_releases_its_waiters() {
    // Timeout: holes 1 (flow A) and 2 (flow B); 3 (A) and 4 (B) wait.
    let mut r = Resequencer::new(ReseqConfig::default());
    r.set_timeout(ms(10));
    r.push(at(0), 0, vec![], None, FlowLink::First);
    r.push(at(0), 3, vec![], None, FlowLink::After(1));
    r.push(at(0), 4, vec![], None, FlowLink::After(2));
    assert_eq!(gseqs(&drain(&mut r)), vec![0]);
    r.handle_timeout(at(10));
    // The first expiry gives up on 1 and 2: 4's predecessor has gone.
    let d = drain(&mut r);
    assert_eq!(marked(&d), vec![(4, true), (3, true)]);
    assert_eq!(r.counters.delivered_early, 1);
    assert_eq!((r.counters.skipped, r.counters.timeouts), (2, 1));
    assert_eq!(r.next, 5);

    // Skip notice: 6 (flow B) waits on 5, which the sender dropped unsent,
    // and 9 (B) on 6; 8 (flow A) waits on 7, missing. The notice moves the
    // point past 5: 6 and 9 go at once, ahead of the hole at 7.
    r.push(at(11), 8, vec![], None, FlowLink::After(7));
    r.push(at(11), 9, vec![], None, FlowLink::After(6));
    r.push(at(11), 6, vec![], None, FlowLink::After(5));
    assert!(drain(&mut r).is_empty());
    r.skip(at(12), 5, 1);
    assert_eq!(marked(&drain(&mut r)), vec![(6, true), (9, true)]);
    assert_eq!(r.next, 7);
    assert_eq!(r.held_packets(), 1);
    assert_eq!(r.counters.delivered_late, 0);
}

#[test]
fn a_saturated_link_waits_for_the_delivery_point() {
    let mut r = Resequencer::new(ReseqConfig::default());
    r.skip(at(0), 0, 4_465);
    assert_eq!(r.next, 4_465);
    // 70,000's flow predecessor is at or below 4,465: not yet passed.
    r.push(at(1), 70_000, vec![], None, FlowLink::AtOrBelow(4_465));
    // 4,470 delivered early does not free it: the predecessor may be lower.
    r.push(at(1), 4_470, vec![], None, FlowLink::First);
    assert_eq!(gseqs(&drain(&mut r)), vec![4_470]);
    assert_eq!(r.held_packets(), 1);
    // The point passing 4,465 does.
    r.push(at(2), 4_465, vec![], None, FlowLink::Unknown);
    assert_eq!(marked(&drain(&mut r)), vec![(4_465, true), (70_000, true)]);
    assert_eq!(r.counters.delivered_early, 2);
    // A number at or below the point: it goes at once.
    r.push(at(3), 70_001, vec![], None, FlowLink::AtOrBelow(4_465));
    assert_eq!(gseqs(&drain(&mut r)), vec![70_001]);
}

#[test]
fn copies_of_early_deliveries_are_duplicates() {
    let mut r = Resequencer::new(ReseqConfig::default());
    r.set_timeout(ms(10));
    r.push(at(0), 2, vec![], None, FlowLink::First);
    r.push(at(0), 2, vec![], None, FlowLink::First);
    r.push(at(0), 2, vec![], None, FlowLink::Unknown);
    assert_eq!(gseqs(&drain(&mut r)), vec![2]);
    assert_eq!(r.counters.duplicates, 2);
    // The hole times out: the point passes 2 without counting it skipped,
    // and a copy after that is still a duplicate, not a late packet.
    r.handle_timeout(at(10));
    assert_eq!(r.next, 3);
    assert_eq!(r.counters.skipped, 2);
    r.push(at(11), 2, vec![], None, FlowLink::First);
    assert!(drain(&mut r).is_empty());
    assert_eq!(r.counters.duplicates, 3);
    // 1 was skipped: it comes late, once.
    r.push(at(12), 1, vec![], None, FlowLink::First);
    r.push(at(12), 1, vec![], None, FlowLink::First);
    assert_eq!(marked(&drain(&mut r)), vec![(1, false)]);
    assert_eq!(r.counters.duplicates, 4);
}

#[test]
fn hostile_links_deliver_nothing_twice_and_stay_bounded() {
    let config = ReseqConfig {
        max_packets: 64,
        ..ReseqConfig::default()
    };
    let mut r = Resequencer::new(config);
    r.set_timeout(ms(10));
    // Hole at 0 forever. 100,000 packets, each free to go (the first of its
    // flow): the numbers delivered ahead stay bounded.
    for g in 1..100_000u64 {
        r.push(at(g / 1000), g, vec![], None, FlowLink::First);
        assert!(r.seen_ahead.len() as u64 <= SKIP_MEMORY);
    }
    // Many packets naming one missing predecessor, then it arrives: each
    // released once, within the packet cap.
    let base = r.next + 10;
    for g in base + 1..base + 1000 {
        r.push(at(100), g, vec![], None, FlowLink::After(base));
        r.push(at(100), g, vec![], None, FlowLink::After(base - 1));
        assert!(r.held_packets() <= 64 && r.waiting.len() <= r.held_packets());
    }
    r.push(at(100), base, vec![], None, FlowLink::First);
    let mut seen = HashSet::new();
    let mut total = 0;
    for d in drain(&mut r) {
        assert!(seen.insert(d.gseq), "{} delivered twice", d.gseq);
        total += 1;
    }
    // Timers settle, everything left goes, and nothing twice.
    while let Some(t) = r.poll_timeout() {
        r.handle_timeout(t);
        for d in drain(&mut r) {
            assert!(seen.insert(d.gseq), "{} delivered twice", d.gseq);
            total += 1;
        }
    }
    assert_eq!(total, r.counters.delivered);
    assert_eq!(r.held_packets(), 0);
    assert!(r.waiting.is_empty() && r.seen_ahead.is_empty());
    // Every push is accounted for: delivered once, or a duplicate.
    let pushes = 99_999 + 2 * 999 + 1;
    assert_eq!(
        r.counters.delivered + r.counters.duplicates,
        pushes,
        "{:?}",
        r.counters
    );
}

proptest! {
    #![proptest_config(ProptestConfig {
        rng_seed: proptest::test_runner::RngSeed::Fixed(2),
        ..ProptestConfig::default()
    })]

    /// Arbitrary numbers with arbitrary links, copies, skip notices and
    /// time: nothing is delivered twice, the bounds hold, and every
    /// waiter has its packet.
    #[test]
    fn hostile_links_never_duplicate_or_leak(
        ops in proptest::collection::vec((0u64..200, 0u16..300, 0u8..8, 0u64..20), 1..400),
    ) {
        let config = ReseqConfig { max_packets: 32, max_bytes: 64, ..ReseqConfig::default() };
        let mut r = Resequencer::new(config);
        r.set_timeout(ms(5));
        let mut now = 0;
        let mut seen = HashSet::new();
        let mut check = |r: &mut Resequencer| -> Result<(), TestCaseError> {
            for d in drain(r) {
                prop_assert!(seen.insert(d.gseq), "{} delivered twice", d.gseq);
            }
            prop_assert!(r.held_packets() <= 32 && r.held_bytes() <= 64);
            prop_assert!(r.waiting.len() <= r.held_packets());
            prop_assert!(r.waiting.iter().all(|(w, _)| r.held.get(&w.2).is_some_and(|h| h.waits_on == Some(w))));
            prop_assert!(r.held.iter().all(|(_, h)| h.waits_on.is_none_or(|w| r.waiting.contains(&w))));
            prop_assert!(r.seen_ahead.iter().all(|(g, _)| g >= r.next && !r.held.contains(&g)));
            prop_assert!(r.express_ahead.iter().all(|(g, _)| r.seen_ahead.contains(&g)));
            prop_assert!(r.behind_ahead.iter().all(|(g, _)| r.seen_ahead.contains(&g) && !r.express_ahead.contains(&g)));
            prop_assert_eq!(r.held_in_order, r.held.iter().filter(|(_, h)| !h.behind).count());
            Ok(())
        };
        for (g, gap, kind, dt) in ops {
            now += dt;
            match kind {
                0 => r.skip(at(now), g, u32::from(gap % 8)),
                1 => r.handle_timeout(at(now)),
                6 => r.push_marked(at(now), g, vec![0; usize::from(gap % 4)], None, FlowLink::from_wire(g, gap), SentAs::Behind),
                7 => r.push_marked(at(now), g, vec![0; usize::from(gap % 4)], None, FlowLink::from_wire(g, gap), SentAs::Express),
                _ => r.push(at(now), g, vec![0; usize::from(gap % 4)], None, FlowLink::from_wire(g, gap)),
            }
            check(&mut r)?;
        }
        while let Some(t) = r.poll_timeout() {
            r.handle_timeout(t);
            check(&mut r)?;
        }
        prop_assert_eq!(r.held_packets(), 0);
        prop_assert!(r.waiting.is_empty());
    }
}

#[test]
fn a_skip_notice_rearms_the_hole_timer_for_the_next_hole() {
    let mut r = Resequencer::new(ReseqConfig::default());
    r.set_timeout(ms(10));
    r.push(at(0), 1, vec![], None, FlowLink::Unknown);
    r.push(at(4), 3, vec![], None, FlowLink::Unknown);
    assert_eq!(r.poll_timeout(), Some(at(10)));
    // The sender dropped 0: 1 goes, and hole 2 heads the line from 6 ms,
    // with its own full timeout.
    r.skip(at(6), 0, 1);
    assert_eq!(gseqs(&drain(&mut r)), vec![1]);
    assert_eq!(r.poll_timeout(), Some(at(16)));
    // It dropped 2 as well: no hole is left, and no hole timer.
    r.skip(at(7), 2, 1);
    assert_eq!(gseqs(&drain(&mut r)), vec![3]);
    assert_eq!(r.timer, None);
}

fn skipped_ranges(r: &Resequencer) -> Vec<(u64, u64)> {
    r.skipped.iter().map(|(s, &(e, _))| (s, e)).collect()
}

#[test]
fn skips_are_remembered_for_skip_memory_numbers_below_the_delivery_point() {
    let mut r = Resequencer::new(ReseqConfig::default());
    r.skip(at(0), 0, 10);
    r.push(at(0), 10, vec![], None, FlowLink::Unknown);
    r.skip(at(0), 11, SKIP_MEMORY as u32);
    // next = 11 + SKIP_MEMORY: the memory starts at 11, so 0..10 is gone.
    assert_eq!(r.next, 11 + SKIP_MEMORY);
    assert_eq!(skipped_ranges(&r), vec![(11, 11 + SKIP_MEMORY)]);
    r.skip(at(0), 11 + SKIP_MEMORY, 3);
    // Three more: the memory starts at 14, inside the older range.
    assert_eq!(
        skipped_ranges(&r),
        vec![(14, 11 + SKIP_MEMORY), (11 + SKIP_MEMORY, 14 + SKIP_MEMORY)]
    );
    // A late copy of a forgotten skip is a duplicate; one remembered is late.
    for g in [5, 12, 14] {
        r.push(at(1), g, vec![], None, FlowLink::Unknown);
    }
    assert_eq!(gseqs(&drain(&mut r)), vec![10, 14]);
    assert_eq!((r.counters.duplicates, r.counters.delivered_late), (2, 1));
}

#[test]
fn skips_are_remembered_in_at_most_max_skipped_ranges() {
    let mut r = Resequencer::new(ReseqConfig::default());
    // One skipped number, one delivered, over and over: separate ranges.
    let n = MAX_SKIPPED_RANGES as u64 + 1;
    for i in 0..n {
        r.skip(at(0), 2 * i, 1);
        r.push(at(0), 2 * i + 1, vec![], None, FlowLink::Unknown);
    }
    assert_eq!(r.skipped.len(), MAX_SKIPPED_RANGES);
    assert_eq!(skipped_ranges(&r)[0], (2, 3));
    assert_eq!(r.counters.skipped, n);
}

#[test]
fn passing_a_number_delivered_ahead_records_no_empty_skip() {
    let mut r = Resequencer::new(ReseqConfig::default());
    // 1 is its flow's first packet: delivered ahead of hole 0.
    r.push(at(0), 1, vec![], None, FlowLink::First);
    assert_eq!(gseqs(&drain(&mut r)), vec![1]);
    // 0 was dropped by the sender: skipped; 1 is passed, not skipped.
    r.skip(at(1), 0, 1);
    assert_eq!(r.next, 2);
    assert_eq!(skipped_ranges(&r), vec![(0, 1)]);
    assert_eq!(r.counters.skipped, 1);
}

#[test]
fn a_held_byte_count_of_exactly_max_bytes_is_kept() {
    let mut r = Resequencer::new(ReseqConfig {
        max_bytes: 100,
        ..ReseqConfig::default()
    });
    r.push(at(0), 1, vec![0; 60], None, FlowLink::Unknown);
    r.push(at(0), 2, vec![0; 40], None, FlowLink::Unknown);
    assert!(drain(&mut r).is_empty(), "100 bytes held, the bound");
    r.push(at(0), 3, vec![0; 1], None, FlowLink::Unknown);
    assert_eq!(gseqs(&drain(&mut r)), vec![1, 2, 3]);
}

#[test]
fn entries_of_packets_released_out_of_line_are_dropped_past_twice_the_held() {
    let mut r = Resequencer::new(ReseqConfig::default());
    // Hole 0; 1 000 and 1 001 are held behind it throughout.
    r.push(at(0), 1_000, vec![], None, FlowLink::Unknown);
    r.push(at(0), 1_001, vec![], None, FlowLink::Unknown);
    let mut lens = Vec::new();
    for i in 0..40 {
        // b waits for its flow's a; a arrives first of its flow and both go
        // ahead of the hole, leaving b's arrival entry behind the others.
        let (a, b) = (2 + 2 * i, 3 + 2 * i);
        r.push(at(0), b, vec![], None, FlowLink::After(a));
        r.push(at(0), a, vec![], None, FlowLink::First);
        lens.push(r.arrivals.len());
    }
    assert_eq!(r.held.len(), 2);
    // The check runs as b is pushed, with three held: entries pile up to
    // 2 * 3 + 16 = 22, and the push that makes them 23 keeps the 3 live.
    let expect: Vec<usize> = (0..40).map(|i| 3 + i % 20).collect();
    assert_eq!(lens, expect);
}

#[test]
fn an_express_packet_goes_at_once_and_is_no_sign_of_a_hole() {
    let mut r = Resequencer::new(ReseqConfig::default());
    r.set_timeout(ms(10));
    r.push(at(0), 0, vec![], None, FlowLink::First);
    // 1..10 are still at the sender; 10 came ahead of them.
    r.push_marked(at(1), 10, vec![], None, FlowLink::First, SentAs::Express);
    assert_eq!(gseqs(&drain(&mut r)), vec![0, 10]);
    assert_eq!(r.poll_timeout(), None, "no hole is open");
    // A real hole: 2 arrives, 1 does not. Three expiries give up on what
    // is held and no more: 3..9 are not skipped for the express 10.
    r.push(at(5), 2, vec![], None, FlowLink::Unknown);
    for t in [15, 25, 35] {
        if let Some(due) = r.poll_timeout() {
            assert!(due <= at(t));
            r.handle_timeout(at(t));
        }
    }
    assert_eq!(gseqs(&drain(&mut r)), vec![2]);
    assert_eq!(r.poll_timeout(), None);
    assert_eq!(r.counters.skipped, 1);
    // The rest arrive in order and are delivered in order; the delivery
    // point passes 10 without delivering it again.
    for g in 3..10 {
        r.push(at(40), g, vec![], None, FlowLink::Unknown);
    }
    r.push(at(40), 11, vec![], None, FlowLink::Unknown);
    let d = drain(&mut r);
    assert_eq!(gseqs(&d), vec![3, 4, 5, 6, 7, 8, 9, 11]);
    assert!(d.iter().all(|d| d.in_order));
    assert_eq!(r.counters.delivered_late, 0);
    assert_eq!(r.counters.skipped, 1);
    assert!(r.seen_ahead.is_empty() && r.express_ahead.is_empty());
}

#[test]
fn an_express_packet_before_its_flows_previous_one_goes_and_is_counted() {
    let mut r = Resequencer::new(ReseqConfig::default());
    r.push_marked(at(0), 5, vec![], None, FlowLink::After(3), SentAs::Express);
    r.push_marked(at(0), 8, vec![], None, FlowLink::After(5), SentAs::Express);
    r.push_marked(at(0), 9, vec![], None, FlowLink::First, SentAs::Express);
    assert_eq!(gseqs(&drain(&mut r)), vec![5, 8, 9]);
    // Only 5 passed its flow's previous packet.
    assert_eq!(r.counters.express_unordered, 1);
    // A second copy is a duplicate.
    r.push_marked(at(0), 8, vec![], None, FlowLink::After(5), SentAs::Express);
    assert_eq!(r.counters.duplicates, 1);
    // At the delivery point it is an ordinary packet.
    r.push_marked(at(0), 0, vec![], None, FlowLink::Unknown, SentAs::Express);
    assert_eq!(gseqs(&drain(&mut r)), vec![0]);
    assert!(!r.express_ahead.contains(&0));
}

#[test]
fn express_numbers_ahead_are_capped_and_then_count_as_ordinary() {
    let mut r = Resequencer::new(ReseqConfig::default());
    r.set_timeout(ms(10));
    for g in 1..=MAX_EXPRESS_AHEAD as u64 {
        r.push_marked(at(0), g, vec![], None, FlowLink::First, SentAs::Express);
    }
    assert_eq!(r.express_ahead.len(), MAX_EXPRESS_AHEAD);
    assert_eq!(r.poll_timeout(), None);
    // One more is ordinary: delivered ahead for its flow, and a sign of
    // the hole at 0.
    let next = MAX_EXPRESS_AHEAD as u64 + 1;
    r.push_marked(at(0), next, vec![], None, FlowLink::First, SentAs::Express);
    assert_eq!(r.express_ahead.len(), MAX_EXPRESS_AHEAD);
    assert_eq!(r.poll_timeout(), Some(at(10)));
    assert_eq!(drain(&mut r).len(), MAX_EXPRESS_AHEAD + 1);
}

/// A packet sent behind a number the sender still held (`SentAs::Behind`).
fn push_behind(r: &mut Resequencer, t: u64, g: u64, flow: FlowLink) {
    r.push_marked(at(t), g, vec![g as u8], None, flow, SentAs::Behind);
}

#[test]
fn a_hole_only_packets_sent_behind_it_passed_waits_for_the_sender() {
    let mut r = Resequencer::new(ReseqConfig::default());
    r.set_timeout(ms(5));
    r.push(at(0), 0, vec![0], None, FlowLink::Unknown);
    // 2 and 3 left while 1 waited at the sender for a faster path, which
    // sent it 30 ms late: six hole timeouts, and no skip.
    push_behind(&mut r, 1, 2, FlowLink::Unknown);
    push_behind(&mut r, 2, 3, FlowLink::Unknown);
    assert_eq!(r.poll_timeout(), Some(at(1) + RESEND_WAIT));
    r.handle_timeout(at(31));
    r.push(at(31), 1, vec![1], None, FlowLink::Unknown);
    assert_eq!(gseqs(&drain(&mut r)), [0, 1, 2, 3]);
    assert_eq!((r.counters.skipped, r.counters.timeouts), (0, 0));
    assert_eq!(r.poll_timeout(), None);
}

#[test]
fn a_packet_sent_in_order_past_the_hole_starts_the_hole_timeout() {
    let mut r = Resequencer::new(ReseqConfig::default());
    r.set_timeout(ms(5));
    r.push(at(0), 0, vec![0], None, FlowLink::Unknown);
    push_behind(&mut r, 1, 2, FlowLink::Unknown);
    // 3 left from the head of the sender's window: 1 had left before it.
    r.push(at(20), 3, vec![3], None, FlowLink::Unknown);
    assert_eq!(r.poll_timeout(), Some(at(25)));
    // Another packet sent behind does not stretch it again.
    push_behind(&mut r, 22, 4, FlowLink::Unknown);
    assert_eq!(r.poll_timeout(), Some(at(25)));
    r.handle_timeout(at(25));
    assert_eq!(gseqs(&drain(&mut r)), [0, 2, 3, 4]);
    assert_eq!((r.counters.skipped, r.counters.timeouts), (1, 1));
}

#[test]
fn a_packet_sent_behind_and_delivered_early_still_leaves_the_hole_to_the_sender() {
    let mut r = Resequencer::new(ReseqConfig::default());
    r.set_timeout(ms(5));
    r.push(at(0), 0, vec![0], None, FlowLink::Unknown);
    // Another flow's first packet goes out at once, ahead of hole 1...
    push_behind(&mut r, 1, 2, FlowLink::First);
    assert_eq!(gseqs(&drain(&mut r)), [0, 2]);
    // ...and the hole waits for the sender, not the hole timeout.
    assert_eq!(r.poll_timeout(), Some(at(1) + RESEND_WAIT));
    // The same flow's next packet sent in order: the hole timeout runs.
    r.push(at(10), 3, vec![3], None, FlowLink::After(2));
    assert_eq!(gseqs(&drain(&mut r)), [3]);
    assert_eq!(r.poll_timeout(), Some(at(15)));
}
