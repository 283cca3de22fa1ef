use std::time::Duration;

use super::*;

fn infos(n: usize) -> Vec<PathInfo> {
    (0..n)
        .map(|i| PathInfo {
            name: format!("p{}", i + 1),
            cost: 1.0,
            weight_throughput: None,
            overflow: false,
        })
        .collect()
}

fn view(index: usize) -> PathView {
    PathView {
        index,
        cwnd_open: true,
        can_send: true,
        ready_at: Instant::ZERO,
        cwnd_bytes: 30_000,
        in_flight_bytes: 0,
        srtt: Some(Duration::from_millis(20)),
        min_rtt: Some(Duration::from_millis(20)),
        probe_rtt: None,
        train_failed: false,
        owd_us: Some(10_000.0),
        queueing: Duration::ZERO,
        bandwidth_bps: Some(10e6),
        kalman_bps: Some(10e6),
        rate_shown: true,
        express_share: 0.0,
        cost: 1.0,
        overflow: false,
        suspect: false,
        stalled: false,
    }
}

fn ctx<'a>(paths: &'a [PathView], backlog: u64) -> SchedContext<'a> {
    SchedContext {
        now: Instant::from_nanos(1_000_000_000),
        paths,
        packet_bytes: 1_400,
        backlog_bytes: backlog,
        queue_delay_limit: Duration::from_millis(500),
    }
}

/// Counts picks per path over `n` decisions.
fn shares(s: &mut dyn Scheduler, paths: &[PathView], n: usize) -> Vec<usize> {
    let mut count = vec![0; paths.len()];
    for _ in 0..n {
        if let Decision::Send(set) = s.pick(&ctx(paths, 1_400)) {
            for i in set.iter() {
                count[i] += 1;
            }
        }
    }
    count
}

#[test]
fn build_rejects_bad_specs() {
    assert!(matches!(
        build("fastest", &infos(2)),
        Err(SchedError::Unknown(_))
    ));
    assert!(build("rr:speed=3", &infos(2)).is_err());
    let e = build("wrr:weights=1/2/3", &infos(2))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("\"1/2/3: 3 weights for 2 paths\""), "{e}");
    let e = build("wrr:weights=0/0", &infos(2))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("\"0/0\""), "{e}");
    // Each weight finite, their sum not: refused, not NaN shares.
    let e = build("wrr:weights=1e308/1e308", &infos(2))
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("their sum a finite number"), "{e}");
    assert!(build("wrr:weights=1e300/1e300", &infos(2)).is_ok());
    assert!(build("lawrr:fixed=nope", &infos(2)).is_err());
    assert!(build("lawrr:k=abc", &infos(2)).is_err());
    assert!(matches!(build("rr", &[]), Err(SchedError::NoPaths)));
    for name in NAMES {
        assert_eq!(build(name, &infos(2)).unwrap().name(), *name);
    }
    assert_eq!(
        report_interval("lawrr:t_report=35ms").unwrap(),
        Duration::from_millis(35)
    );
    assert_eq!(report_interval("lawrr").unwrap(), Duration::from_millis(20));
    assert_eq!(
        report_interval("lawrr:k=1").unwrap(),
        Duration::from_millis(20)
    );
    assert_eq!(report_interval("rr").unwrap(), Duration::from_millis(50));
    assert_eq!(
        report_interval("batcp:cost_weight=0.5").unwrap(),
        Duration::from_millis(50)
    );
}

#[test]
fn rr_alternates_and_wrr_follows_weights() {
    let paths = vec![view(0), view(1)];
    let mut rr = build("rr", &infos(2)).unwrap();
    assert_eq!(shares(&mut *rr, &paths, 10), vec![5, 5]);
    let mut wrr = build("wrr:weights=4/1", &infos(2)).unwrap();
    assert_eq!(shares(&mut *wrr, &paths, 10), vec![8, 2]);
    // Window-free: a closed window does not stop them.
    let closed: Vec<PathView> = paths
        .iter()
        .map(|p| PathView {
            can_send: false,
            cwnd_open: false,
            ..p.clone()
        })
        .collect();
    assert_eq!(shares(&mut *rr, &closed, 4), vec![2, 2]);
}

#[test]
fn most_free_cwnd_picks_most_room_and_drops_only_when_all_full() {
    let mut s = build("most-free-cwnd", &infos(2)).unwrap();
    let mut paths = vec![view(0), view(1)];
    paths[0].in_flight_bytes = 20_000;
    assert_eq!(s.pick(&ctx(&paths, 0)), Decision::Send(PathSet::one(1)));
    // Pacing does not matter to it, only the window.
    paths[1].can_send = false;
    assert_eq!(s.pick(&ctx(&paths, 0)), Decision::Send(PathSet::one(1)));
    paths[1].cwnd_open = false;
    assert_eq!(s.pick(&ctx(&paths, 0)), Decision::Send(PathSet::one(0)));
    paths[0].cwnd_open = false;
    assert_eq!(s.pick(&ctx(&paths, 0)), Decision::Drop);
}

#[test]
fn lawrr_uses_mobile_only_after_loss_and_shifts_back() {
    let paths = vec![view(0), view(1)];
    let mut s = build("lawrr:k=0.5,t_dwd=100ms,delay=off", &infos(2)).unwrap();
    assert_eq!(shares(&mut *s, &paths, 1000), vec![1000, 0]);
    let t = |ms: u64| Instant::from_nanos(ms * 1_000_000);
    let report = |lost| {
        [
            LossEntry {
                path: 0,
                received: 100,
                lost,
            },
            LossEntry {
                path: 1,
                received: 0,
                lost: 0,
            },
        ]
    };
    // IWI: first loss adds the lost count.
    s.on_loss_report(t(50), &report(4), &paths);
    let after_iwi = shares(&mut *s, &paths, 540);
    assert_eq!(after_iwi, vec![500, 40]);
    // AWI: += k * lost/sent * w_fixed = 0.5 * 10/110 * 50.
    s.on_loss_report(t(100), &report(10), &paths);
    let w = 4.0 + 0.5 * 10.0 / 110.0 * 50.0;
    let counts = shares(&mut *s, &paths, 10_000);
    let expected_mobile = 10_000.0 * w / (50.0 + w);
    assert!(
        (counts[1] as f64 - expected_mobile).abs() <= 2.0,
        "{counts:?}"
    );
    // DWD: nothing before t_dwd, then one per loss-free report.
    s.on_loss_report(t(150), &report(0), &paths);
    s.on_loss_report(t(200), &report(0), &paths);
    s.on_loss_report(t(250), &report(0), &paths);
    let counts = shares(&mut *s, &paths, 10_000);
    let expected_mobile = 10_000.0 * (w - 2.0) / (50.0 + w - 2.0);
    assert!(
        (counts[1] as f64 - expected_mobile).abs() <= 2.0,
        "{counts:?}"
    );
}

#[test]
fn lawrr_reads_a_growing_fixed_line_queue_as_congestion() {
    let mut paths = vec![view(0), view(1)];
    let mut s = build("lawrr:k=0.5,delay=5ms", &infos(2)).unwrap();
    let t = |ms: u64| Instant::from_nanos(ms * 1_000_000);
    let clean = [
        LossEntry {
            path: 0,
            received: 100,
            lost: 0,
        },
        LossEntry {
            path: 1,
            received: 0,
            lost: 0,
        },
    ];
    // 12 ms of queue on the fixed line, no loss: the mobile path gets traffic.
    paths[0].queueing = Duration::from_millis(12);
    s.on_loss_report(t(50), &clean, &paths);
    s.on_loss_report(t(100), &clean, &paths);
    assert!(shares(&mut *s, &paths, 1000)[1] > 0);
    // With the signal off, the same reports change nothing.
    let mut off = build("lawrr:k=0.5,delay=off", &infos(2)).unwrap();
    off.on_loss_report(t(50), &clean, &paths);
    assert_eq!(shares(&mut *off, &paths, 1000)[1], 0);
}

#[test]
fn batcp_gives_costlier_path_less_traffic() {
    let mut infos = infos(2);
    infos[1].cost = 10.0;
    let mut s = build("batcp:cost_weight=0.5", &infos).unwrap();
    let paths = vec![view(0), view(1)];
    let c = shares(&mut *s, &paths, 1000);
    assert!(c[0] > 2 * c[1], "{c:?}");
    // A path without room makes it wait for its turn.
    let mut closed = paths.clone();
    closed[0].can_send = false;
    closed[1].can_send = false;
    assert_eq!(s.pick(&ctx(&closed, 1_400)), Decision::Wait);
}

#[test]
fn min_rtt_prefers_shortest_open_path() {
    let mut s = build("min-rtt", &infos(2)).unwrap();
    let mut paths = vec![view(0), view(1)];
    paths[0].srtt = Some(Duration::from_millis(80));
    assert_eq!(s.pick(&ctx(&paths, 0)), Decision::Send(PathSet::one(1)));
    paths[1].can_send = false;
    assert_eq!(s.pick(&ctx(&paths, 0)), Decision::Send(PathSet::one(0)));
    paths[0].can_send = false;
    assert_eq!(s.pick(&ctx(&paths, 0)), Decision::Wait);
}

#[test]
fn earliest_arrival_waits_for_fast_path_unless_backlog_is_large() {
    let mut s = build("earliest-arrival", &infos(2)).unwrap();
    let mut paths = vec![view(0), view(1)];
    // Path 1 is 90 ms longer one-way.
    paths[1].owd_us = Some(100_000.0);
    assert_eq!(s.pick(&ctx(&paths, 1_400)), Decision::Send(PathSet::one(0)));
    // The fast path is paced for 1 ms: with a small backlog, wait for it.
    paths[0].can_send = false;
    paths[0].ready_at = Instant::from_nanos(1_001_000_000);
    assert_eq!(s.pick(&ctx(&paths, 1_400)), Decision::Wait);
    // A fast path that stopped acknowledging is not worth waiting for.
    let mut stalled = paths.clone();
    stalled[0].cwnd_open = false;
    stalled[0].stalled = true;
    assert_eq!(
        s.pick(&ctx(&stalled, 1_400)),
        Decision::Send(PathSet::one(1))
    );
    // 200 kB queued would take 160 ms at 10 Mbit/s: the slow path takes the
    // packet the fast one could not deliver within the 90 ms difference
    // (about 112 kB back in the queue, of which it trusts 80 %).
    match s.pick(&ctx(&paths, 200_000)) {
        Decision::SendBehind {
            path: 1,
            ahead_bytes,
        } => {
            assert!((84_000..92_000).contains(&ahead_bytes), "{ahead_bytes}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn earliest_arrival_leaves_a_near_path_only_what_express_traffic_leaves_of_it() {
    // A thin near path (2 Mbit/s), paced for 1 ms, and a fat one 95 ms
    // farther (18 Mbit/s), open; 30 kB wait.
    let mut paths = vec![view(0), view(1)];
    paths[0].bandwidth_bps = Some(2e6);
    paths[0].can_send = false;
    paths[0].ready_at = Instant::from_nanos(1_001_000_000);
    paths[1].bandwidth_bps = Some(18e6);
    paths[1].cwnd_bytes = 1_000_000;
    paths[1].owd_us = Some(105_000.0);
    let pick = |paths: &[PathView]| {
        build("earliest-arrival", &infos(2))
            .unwrap()
            .pick(&ctx(paths, 30_000))
    };
    let ahead = |paths: &[PathView]| match pick(paths) {
        Decision::SendBehind {
            path: 1,
            ahead_bytes,
        } => ahead_bytes,
        other => panic!("{other:?}"),
    };
    // The near path delivers about 93 ms x 2 Mbit/s (23 kB) before the
    // far one would deliver the head; 80 % of it stays for it.
    let all = ahead(&paths);
    assert!((17_000..20_000).contains(&all), "{all}");
    // A call takes half of its sending in express datagrams, which
    // overtake the queue: half as much waits for it.
    paths[0].express_share = 0.5;
    let half = ahead(&paths);
    assert!((8_500..10_000).contains(&half), "{half}");
    // Express traffic takes all of it: the far path sends the head now.
    paths[0].express_share = 1.0;
    assert_eq!(pick(&paths), Decision::Send(PathSet::one(1)));
}

#[test]
fn redundant_sends_on_every_path_with_window_room() {
    let mut s = build("redundant", &infos(3)).unwrap();
    let mut paths = vec![view(0), view(1), view(2)];
    paths[1].cwnd_open = false;
    paths[1].can_send = false;
    paths[2].can_send = false; // paced, but its window is open
    let Decision::Send(set) = s.pick(&ctx(&paths, 0)) else {
        panic!("did not send")
    };
    assert_eq!(set.iter().collect::<Vec<_>>(), vec![0, 2]);
    // No window room anywhere: wait, never "send" on no path.
    for p in &mut paths {
        p.cwnd_open = false;
    }
    assert_eq!(s.pick(&ctx(&paths, 0)), Decision::Wait);
}

#[test]
fn lawrr_reacts_to_the_fixed_lines_loss_only_and_survives_wire_extremes() {
    let paths = vec![view(0), view(1)];
    let mut s = build("lawrr:delay=off", &infos(2)).unwrap();
    let t = |ms: u64| Instant::from_nanos(ms * 1_000_000);
    let entry = |path, received, lost| LossEntry {
        path,
        received,
        lost,
    };
    // Loss on the mobile path is no reason to move traffic to it.
    s.on_loss_report(t(50), &[entry(0, 100, 0), entry(1, 100, 50)], &paths);
    assert_eq!(shares(&mut *s, &paths, 1000), vec![1000, 0]);
    // `received + lost` from the wire used to overflow u32 (a panic in
    // debug builds). IWI: w_mobile = lost, clamped to w_mobile_max (45).
    s.on_loss_report(t(100), &[entry(0, u32::MAX, u32::MAX)], &paths);
    assert_eq!(shares(&mut *s, &paths, 950), vec![500, 450]);
}

#[test]
fn batcp_splits_by_the_papers_loads_from_measured_rates() {
    // Kalman rates 10 and 2 Mbit/s, costs 1 and 4, wc = 0.5: loads 3 and 1
    // (worked in batcp's unit test), so 300 of 400 packets on the first.
    let mut infos = infos(2);
    infos[1].cost = 4.0;
    let mut s = build("batcp:cost_weight=0.5", &infos).unwrap();
    let mut paths = vec![view(0), view(1)];
    paths[1].kalman_bps = Some(2e6);
    assert_eq!(shares(&mut *s, &paths, 400), vec![300, 100]);
}

#[test]
fn lawrr_delay_signal_worked_example() {
    // k = 0.5, w_fixed = 50, delay = 5 ms; the fixed line's queue grows
    // 6 -> 8 -> 11 ms over 50-ms reports: growth 2/50 and 3/50 of the
    // interval, AWI adds 0.5 * 0.04 * 50 = 1 and 0.5 * 0.06 * 50 = 1.5, and
    // above 2 * delay another k = 0.5.
    let mut paths = vec![view(0), view(1)];
    let mut s = build("lawrr:k=0.5,delay=5ms", &infos(2)).unwrap();
    let t = |ms: u64| Instant::from_nanos(ms * 1_000_000);
    let lossless = [LossEntry {
        path: 0,
        received: 100,
        lost: 0,
    }];
    let mut report = |at: u64, queue_ms: u64, s: &mut Box<dyn Scheduler>| {
        paths[0].queueing = Duration::from_millis(queue_ms);
        s.on_loss_report(t(at), &lossless, &paths);
    };
    report(50, 6, &mut s);
    assert_eq!(shares(&mut *s, &[view(0), view(1)], 500), vec![500, 0]);
    report(100, 8, &mut s);
    assert_eq!(shares(&mut *s, &[view(0), view(1)], 510), vec![500, 10]);
    report(150, 11, &mut s);
    assert_eq!(shares(&mut *s, &[view(0), view(1)], 530), vec![500, 30]);
    // Two reports at one instant: no growth rate (no division by zero),
    // only the k for a queue above 2 * delay.
    report(150, 12, &mut s);
    assert_eq!(shares(&mut *s, &[view(0), view(1)], 535), vec![500, 35]);
    // Exactly 2 * delay: held, no extra k. Exactly delay: not congestion,
    // so DWD counts t_dwd (250 ms) from the last congested report (200 ms).
    report(200, 10, &mut s);
    assert_eq!(shares(&mut *s, &[view(0), view(1)], 535), vec![500, 35]);
    report(250, 5, &mut s);
    report(450, 0, &mut s);
    assert_eq!(shares(&mut *s, &[view(0), view(1)], 525), vec![500, 25]);
}

#[test]
fn lawrr_shares_the_mobile_weight_among_mobile_paths() {
    let paths = vec![view(0), view(1), view(2)];
    let mut s = build("lawrr:delay=off", &infos(3)).unwrap();
    let t = Instant::from_nanos(50_000_000);
    // IWI: w_mobile = 4, two mobile paths of weight 2 each.
    let entries = [LossEntry {
        path: 0,
        received: 100,
        lost: 4,
    }];
    s.on_loss_report(t, &entries, &paths);
    assert_eq!(shares(&mut *s, &paths, 540), vec![500, 20, 20]);
}

fn with_overflow(mut infos: Vec<PathInfo>, index: usize) -> Vec<PathInfo> {
    infos[index].overflow = true;
    infos
}

#[test]
fn only_earliest_arrival_accepts_an_overflow_path() {
    let paths = with_overflow(infos(2), 1);
    for name in NAMES.iter().filter(|n| **n != "earliest-arrival") {
        let err = build(name, &paths).unwrap_err();
        assert!(
            matches!(err, SchedError::OverflowUnsupported(n, ref p) if n == *name && p == "p2"),
            "{name}: {err}"
        );
    }
    assert!(build("earliest-arrival", &paths).is_ok());
}

#[test]
fn an_overflow_path_carries_only_what_the_primary_cannot() {
    let mut s = build("earliest-arrival", &with_overflow(infos(2), 1)).unwrap();
    let mut paths = vec![view(0), view(1)];
    paths[1].overflow = true;
    // The overflow path is closer (5 ms against 10 ms one way): without the
    // role it would win every packet.
    paths[1].owd_us = Some(5_000.0);
    assert_eq!(s.pick(&ctx(&paths, 1_400)), Decision::Send(PathSet::one(0)));
    // The primary is pacing: a backlog it drains within the queue limit
    // (0.8 × 500 ms × 1.25 MB/s = 500,000 bytes) waits for it.
    paths[0].can_send = false;
    paths[0].ready_at = Instant::from_nanos(1_001_000_000);
    assert_eq!(s.pick(&ctx(&paths, 500_000)), Decision::Wait);
    // Deeper than that: the overflow path takes its share.
    assert_eq!(
        s.pick(&ctx(&paths, 500_001)),
        Decision::Send(PathSet::one(1))
    );
    // The primary is down: the overflow path carries everything.
    paths[0].suspect = true;
    assert_eq!(s.pick(&ctx(&paths, 1_400)), Decision::Send(PathSet::one(1)));
}

#[test]
fn overflow_comes_after_every_cost_tier() {
    let mut s = build("earliest-arrival:cost_first=1", &with_overflow(infos(3), 0)).unwrap();
    let mut paths = vec![view(0), view(1), view(2)];
    // The overflow path is the cheapest; path 2 is the dearest primary.
    paths[0].overflow = true;
    paths[0].cost = 0.5;
    paths[2].cost = 10.0;
    assert_eq!(s.pick(&ctx(&paths, 1_400)), Decision::Send(PathSet::one(1)));
    paths[1].can_send = false;
    paths[1].ready_at = Instant::from_nanos(1_001_000_000);
    // Path 1 alone drains 500,000 bytes in time; paths 1 and 2 1,000,000.
    assert_eq!(s.pick(&ctx(&paths, 500_000)), Decision::Wait);
    assert_eq!(
        s.pick(&ctx(&paths, 500_001)),
        Decision::Send(PathSet::one(2))
    );
    paths[2].can_send = false;
    paths[2].ready_at = Instant::from_nanos(1_001_000_000);
    assert_eq!(s.pick(&ctx(&paths, 1_000_000)), Decision::Wait);
    assert_eq!(
        s.pick(&ctx(&paths, 1_000_001)),
        Decision::Send(PathSet::one(0))
    );
}

#[test]
fn path_sets_cover_exactly_the_paths_asked_for() {
    assert!(PathSet::all(0).is_empty());
    assert_eq!(PathSet::all(3), PathSet(0b111));
    assert_eq!(PathSet::all(3).iter().collect::<Vec<_>>(), [0, 1, 2]);
    assert_eq!(PathSet::all(63), PathSet(u64::MAX >> 1));
    assert_eq!(PathSet::all(MAX_PATHS), PathSet(u64::MAX));
    assert_eq!(PathSet::all(MAX_PATHS + 1), PathSet(u64::MAX));
    let all = PathSet::all(MAX_PATHS);
    assert!(all.contains(0) && all.contains(63));
    // Index 64 and beyond are in no set (and do not overflow the shift).
    assert!(!all.contains(64) && !all.contains(usize::MAX));
    let mut s = PathSet::default();
    s.insert(5);
    assert_eq!(s, PathSet::one(5));
    assert!(s.contains(5) && !s.contains(4) && !s.is_empty());
}

#[test]
fn schedulers_take_up_to_max_paths() {
    for name in NAMES {
        assert!(build(name, &infos(MAX_PATHS)).is_ok(), "{name}");
        assert!(
            matches!(
                build(name, &infos(MAX_PATHS + 1)),
                Err(SchedError::TooManyPaths(n)) if n == MAX_PATHS + 1
            ),
            "{name}"
        );
    }
}

/// BATCP's first decision for a cheap path 0 (its turn first: loads 10 : 1
/// with `cost_weight=0.9` at equal rates) and a dear path 1 that can send.
fn batcp_first(cheap: PathView, backlog: u64) -> Decision {
    cheap_and_dear_batcp().pick(&ctx(&[cheap, view(1)], backlog))
}

/// BATCP with `cost_weight=0.9` over a cheap path 0 and a path 1 ten times
/// as dear.
fn cheap_and_dear_batcp() -> Box<dyn Scheduler> {
    let mut infos = infos(2);
    infos[1].cost = 10.0;
    build("batcp:cost_weight=0.9", &infos).unwrap()
}

#[test]
fn batcp_waits_for_a_paced_cheap_path_only_while_it_can_drain_the_backlog() {
    let dear = Decision::Send(PathSet::one(1));
    let paced = PathView {
        can_send: false,
        ..view(0)
    };
    assert_eq!(batcp_first(view(0), 1_400), Decision::Send(PathSet::one(0)));
    // Pacing closes the cheap path for a moment: its turn is waited for.
    assert_eq!(batcp_first(paced.clone(), 1_400), Decision::Wait);
    // Up to half the 500 ms queue limit of drain time at its 10 Mbit/s
    // (312,500 bytes: exactly 250 ms); beyond it the dear path takes it.
    assert_eq!(batcp_first(paced.clone(), 312_500), Decision::Wait);
    assert_eq!(batcp_first(paced.clone(), 312_501), dear);
    assert_eq!(batcp_first(paced.clone(), 375_000), dear);
    // A full window, or no rate to drain at, is not waited for.
    let full = PathView {
        cwnd_open: false,
        ..paced.clone()
    };
    assert_eq!(batcp_first(full, 1_400), dear);
    for bw in [None, Some(0.0)] {
        let unknown = PathView {
            bandwidth_bps: bw,
            ..paced.clone()
        };
        assert_eq!(batcp_first(unknown, 1_400), dear, "{bw:?}");
    }
}

#[test]
fn batcp_skips_suspect_and_stalled_paths_while_others_are_healthy() {
    let dear = Decision::Send(PathSet::one(1));
    let suspect = PathView {
        suspect: true,
        ..view(0)
    };
    let stalled = PathView {
        stalled: true,
        ..view(0)
    };
    assert_eq!(batcp_first(suspect, 1_400), dear);
    assert_eq!(batcp_first(stalled, 1_400), dear);
    // With no healthy path, any path that can send takes its turn.
    let mut s = cheap_and_dear_batcp();
    let both = [
        PathView {
            suspect: true,
            ..view(0)
        },
        PathView {
            stalled: true,
            ..view(1)
        },
    ];
    assert_eq!(s.pick(&ctx(&both, 1_400)), Decision::Send(PathSet::one(0)));
}

#[test]
fn earliest_arrival_cost_first_is_a_switch() {
    for ok in [
        "earliest-arrival",
        "earliest-arrival:cost_first=0",
        "earliest-arrival:cost_first=1",
    ] {
        assert!(build(ok, &infos(2)).is_ok(), "{ok}");
    }
    for bad in [
        "earliest-arrival:cost_first=2",
        "earliest-arrival:cost_first=0.5",
    ] {
        assert!(
            matches!(build(bad, &infos(2)), Err(SchedError::Param { .. })),
            "{bad}"
        );
    }
}

#[test]
fn earliest_arrival_tries_a_path_priced_only_by_light_samples_while_a_backlog_waits() {
    let mut s = build("earliest-arrival", &infos(2)).unwrap();
    let fast = PathView {
        bandwidth_bps: Some(100e6),
        kalman_bps: Some(100e6),
        ..view(0)
    };
    // Priced at 0.13 Mbit/s from a few small packets: no full-load sample.
    let light = PathView {
        bandwidth_bps: Some(0.13e6),
        kalman_bps: None,
        ..view(1)
    };
    let paths = [fast, light];
    // Only this packet waits: the estimate stands, the fast path wins.
    assert_eq!(s.pick(&ctx(&paths, 1_400)), Decision::Send(PathSet::one(0)));
    // More waits: the light path is tried, to measure it under load.
    assert_eq!(s.pick(&ctx(&paths, 2_800)), Decision::Send(PathSet::one(1)));
}

#[test]
fn earliest_arrival_last_resort_leaves_the_live_paths_what_they_can_send_in_time() {
    let mut s = build("earliest-arrival", &infos(2)).unwrap();
    // The live path (10 Mbit/s) is paced shut; the other is down but open.
    let closed = PathView {
        can_send: false,
        ..view(0)
    };
    let down = PathView {
        suspect: true,
        bandwidth_bps: Some(5e6),
        ..view(1)
    };
    let paths = [closed.clone(), down.clone()];
    // What the live path sends within the 500 ms limit (625,000 bytes,
    // less the 0.8 margin) stays for it; the down path takes what is
    // behind that, and nothing while the backlog is shorter.
    assert_eq!(s.pick(&ctx(&paths, 1_400)), Decision::Wait);
    assert_eq!(
        s.pick(&ctx(&paths, 2_000_000)),
        Decision::SendBehind {
            path: 1,
            ahead_bytes: 500_000
        }
    );
    // A path not measured yet, live and allowed by pacing, is tried the
    // same way.
    let unmeasured = PathView {
        bandwidth_bps: None,
        kalman_bps: None,
        can_send: false,
        ..view(1)
    };
    assert_eq!(
        s.pick(&ctx(&[closed.clone(), unmeasured], 2_000_000)),
        Decision::SendBehind {
            path: 1,
            ahead_bytes: 500_000
        }
    );
    // With no live path at all, the down path carries everything.
    let dead = PathView {
        suspect: true,
        can_send: false,
        ..view(0)
    };
    assert_eq!(
        s.pick(&ctx(&[dead, down], 2_000_000)),
        Decision::Send(PathSet::one(1))
    );
}
