use super::*;

/// Feeds a path of `base_us` one-way delay every `gap_us` from `from_us` to
/// `to_us`, with the receiver's clock at `offset(t)` µs, and a deterministic
/// jitter of up to 2 ms; returns the largest queueing read after `settle_us`.
fn feed(
    e: &mut OwdEstimator,
    (from_us, to_us, gap_us): (i64, i64, i64),
    base_us: i64,
    offset: impl Fn(i64) -> i64,
    settle_us: i64,
) -> Duration {
    let mut worst = Duration::ZERO;
    let mut t = from_us;
    let mut k = 0u64;
    while t < to_us {
        let jitter = ((k * 7_919) % 2_000) as i64;
        let send_ts = t as u32;
        let recv_ts = (t + base_us + jitter + offset(t)) as u32;
        let at = Instant::from_nanos(t as u64 * 1_000);
        e.on_sample(at, 7, recv_ts.wrapping_sub(send_ts));
        if t >= settle_us {
            worst = worst.max(e.queueing(at));
        }
        t += gap_us;
        k += 1;
    }
    worst
}

#[test]
fn differences_survive_wraparound_and_offset() {
    let anchor = u32::MAX - 10;
    let mut a = OwdEstimator::default();
    let mut b = OwdEstimator::default();
    let now = Instant::from_nanos(1_000);
    // Path b is 30 ms longer; raw values straddle the u32 wrap.
    for _ in 0..50 {
        a.on_sample(now, anchor, anchor.wrapping_add(5_000));
        b.on_sample(now, anchor, anchor.wrapping_add(35_000));
    }
    let diff = b.smoothed_us() - a.smoothed_us();
    assert!((diff - 30_000.0).abs() < 1.0, "{diff}");
    assert_eq!(b.floor_us(now) - a.floor_us(now), 30_000.0);
    assert_eq!(a.queueing(now), Duration::ZERO);
}

#[test]
fn drift_of_100_ppm_is_not_read_as_queueing() {
    for ppm in [100i64, -100, 500, -500] {
        let mut e = OwdEstimator::default();
        // Ten minutes, a sample every 5 ms (an ack stream at a few Mbit/s).
        let worst = feed(
            &mut e,
            (0, 600_000_000, 5_000),
            10_000,
            |t| t * ppm / 1_000_000,
            10_000_000,
        );
        // Jitter alone reads up to ~1 ms above the floor; drift of 100 ppm
        // over 600 s would add 60 ms to a floor that never moves.
        assert!(worst < Duration::from_millis(3), "{ppm} ppm: {worst:?}");
        assert!(
            (e.skew_ppm() - ppm as f64).abs() < ppm.abs() as f64 * 0.05,
            "{ppm} ppm estimated as {}",
            e.skew_ppm()
        );
    }
}

#[test]
fn a_growing_queue_is_still_queueing() {
    let mut e = OwdEstimator::default();
    feed(&mut e, (0, 20_000_000, 5_000), 10_000, |_| 0, 0);
    // A queue builds 30 ms over 300 ms on top of 100 ppm of drift.
    let q = feed(
        &mut e,
        (20_000_000, 20_300_000, 5_000),
        10_000,
        |t| (t - 20_000_000) / 10,
        20_290_000,
    );
    assert!(q >= Duration::from_millis(20), "{q:?}");
    assert_eq!(e.steps(), 0);
}

#[test]
fn a_one_second_step_is_absorbed_within_a_few_round_trips() {
    for step in [1_000_000i64, -1_000_000] {
        let mut e = OwdEstimator::default();
        let drift = move |t: i64| t / 10_000 + if t >= 60_000_000 { step } else { 0 };
        feed(&mut e, (0, 60_000_000, 5_000), 10_000, drift, 0);
        // 200 ms after the step the floor has followed it.
        let worst = feed(
            &mut e,
            (60_000_000, 90_000_000, 5_000),
            10_000,
            drift,
            60_200_000,
        );
        assert!(worst < Duration::from_millis(3), "{step}: {worst:?}");
        assert_eq!(e.steps(), 1, "{step}");
        assert!((e.skew_ppm() - 100.0).abs() < 5.0, "{}", e.skew_ppm());
    }
}

#[test]
fn an_idle_path_keeps_following_the_drift() {
    let mut e = OwdEstimator::default();
    let drift = |t: i64| t / 10_000; // +100 ppm
    feed(&mut e, (0, 30_000_000, 5_000), 10_000, drift, 0);
    // Five minutes without a sample: the floor moves on along the slope
    // (30 ms of drift), so the path compares right with the busy ones.
    let t = 330_000_000i64;
    let floor = e.floor_us(Instant::from_nanos(t as u64 * 1_000));
    let truth = (10_000 + drift(t) - 7) as f64;
    assert!((floor - truth).abs() < 2_000.0, "{floor} vs {truth}");
    // Its first sample after the pause reads no queue.
    let q = feed(&mut e, (t, t + 1_000_000, 5_000), 10_000, drift, t);
    assert!(q < Duration::from_millis(3), "{q:?}");
}
