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
        e.on_sample(
            at,
            &mut OwdClock::anchored(7),
            0,
            recv_ts.wrapping_sub(send_ts),
        );
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
    let mut clock = OwdClock::anchored(anchor);
    let now = Instant::from_nanos(1_000);
    // Path b is 30 ms longer; raw values straddle the u32 wrap.
    for _ in 0..50 {
        a.on_sample(now, &mut clock, 0, anchor.wrapping_add(5_000));
        b.on_sample(now, &mut clock, 1, anchor.wrapping_add(35_000));
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

fn at(t_us: i64) -> Instant {
    Instant::from_nanos(t_us as u64 * 1_000)
}

/// One sample of relative delay `v_us` taken at `t_us`; with anchor 0 the
/// estimator reads `v_us` exactly.
fn sample(e: &mut OwdEstimator, t_us: i64, v_us: i64) {
    e.on_sample(at(t_us), &mut OwdClock::anchored(0), 0, v_us as u32);
}

fn epochs(points: &[(i64, f64)]) -> VecDeque<EpochMin> {
    points.iter().map(|&(t, v)| EpochMin { t, v }).collect()
}

#[test]
fn theil_sen_is_the_median_pairwise_slope() {
    // Slopes 1e-4, 7.5e-5, 2e-4 (from t=0), 5e-5, 2.5e-4 (from 1 s),
    // 4.5e-4 (from 2 s); sorted, element 6/2 = 3 is 2e-4.
    let s = theil_sen(&epochs(&[
        (0, 0.0),
        (1_000_000, 100.0),
        (2_000_000, 150.0),
        (3_000_000, 600.0),
    ]));
    assert!((s - 2e-4).abs() < 1e-12, "{s}");
    // 5 000 ppm is no clock: clamped to the 1 000 ppm an NTP slew stays under.
    assert_eq!(
        theil_sen(&epochs(&[(0, 0.0), (1_000_000, 5_000.0)])),
        MAX_SKEW
    );
    assert_eq!(theil_sen(&epochs(&[(0, 0.0)])), 0.0);
}

#[test]
fn theil_sen_takes_no_slope_between_points_at_one_time() {
    // (0, 5) to (0, 0) has no slope (it would be -inf); the two others are
    // 4.5e-5 and 5e-5, and the median of two is the upper one.
    let s = theil_sen(&epochs(&[(0, 5.0), (0, 0.0), (1_000_000, 50.0)]));
    assert!((s - 5e-5).abs() < 1e-12, "{s}");
}

#[test]
fn has_samples_from_the_first_sample_on() {
    let mut e = OwdEstimator::default();
    assert!(!e.has_samples());
    sample(&mut e, 0, 10_000);
    assert!(e.has_samples());
}

#[test]
fn smoothing_variation_and_floor_worked_example() {
    let mut e = OwdEstimator::default();
    sample(&mut e, 0, 10_000);
    assert_eq!(
        (e.smoothed_us(), e.upper_us(), e.floor_us(at(0))),
        (10_000.0, 10_000.0, 10_000.0)
    );
    // var = 0.75 * 0 + 0.25 * |10 000 - 12 000| = 500;
    // smoothed = 0.875 * 10 000 + 0.125 * 12 000 = 10 250; upper = 10 250 + 4 * 500.
    sample(&mut e, 0, 12_000);
    assert_eq!(
        (e.smoothed_us(), e.upper_us(), e.floor_us(at(0))),
        (10_250.0, 12_250.0, 10_000.0)
    );
    // var = 0.75 * 500 + 0.25 * |10 250 - 8 000| = 937.5;
    // smoothed = 0.875 * 10 250 + 0.125 * 8 000 = 9 968.75; a sample below
    // the floor (by less than a step) is the new floor.
    sample(&mut e, 0, 8_000);
    assert_eq!(
        (e.smoothed_us(), e.upper_us(), e.floor_us(at(0))),
        (9_968.75, 9_968.75 + 4.0 * 937.5, 8_000.0)
    );
    assert_eq!(e.queueing(at(0)), Duration::from_micros(1_968));
    assert_eq!(e.steps(), 0);
}

#[test]
fn a_fall_of_exactly_50ms_is_a_lower_floor_a_deeper_one_a_step_back() {
    let mut e = OwdEstimator::default();
    sample(&mut e, 0, 100_000);
    sample(&mut e, 1_000, 50_000);
    assert_eq!(e.steps(), 0);
    assert_eq!(e.floor_us(at(1_000)), 50_000.0);
    assert_eq!(e.smoothed_us(), 0.875 * 100_000.0 + 0.125 * 50_000.0);

    let mut e = OwdEstimator::default();
    sample(&mut e, 0, 100_000);
    sample(&mut e, 1_000, 49_999);
    assert_eq!(e.steps(), 1);
    assert_eq!(e.floor_us(at(1_000)), 49_999.0);
    // The smoothed value restarts past the step instead of averaging it in.
    assert_eq!(e.smoothed_us(), 49_999.0);
}

#[test]
fn an_epoch_closes_at_two_seconds_and_keeps_its_earliest_minimum() {
    let mut e = OwdEstimator::default();
    // Epoch [0, 2 s): two equal minima, at 0 and 1 s; the one at 0 counts.
    // Then one sample per epoch on a 100 ppm line: 200 µs per 2 s.
    for (t, v) in [
        (0, 10_000),
        (1_000_000, 10_000),
        (2_000_000, 10_200),
        (4_000_000, 10_400),
    ] {
        sample(&mut e, t, v);
        assert_eq!(e.skew_ppm(), 0.0, "fewer than three epochs at {t}");
    }
    // The sample at 6 s closes the third epoch: minima (0, 10 000),
    // (2 s, 10 200), (4 s, 10 400), every pairwise slope 100 ppm. Had the
    // first epoch kept its minimum at 1 s, the slopes would be 200, 133 and
    // 100 ppm; had it closed only after 2 s, there would be two epochs.
    sample(&mut e, 6_000_000, 10_600);
    assert!((e.skew_ppm() - 100.0).abs() < 1e-6, "{}", e.skew_ppm());
}

#[test]
fn the_floor_is_the_lowest_epoch_minimum_projected_along_the_drift() {
    let mut e = OwdEstimator::default();
    // One sample per epoch on a 100 ppm line (200 µs per 2 s), except the
    // one at 6 s, 500 µs below it.
    for k in 0..=6i64 {
        let v = 10_000 + 200 * k - if k == 3 { 500 } else { 0 };
        sample(&mut e, k * 2_000_000, v);
    }
    // At 12 s the epochs at 0..10 s are closed; ten of their fifteen slopes
    // are 100 ppm, so the slope is too. Projected to 12 s the line's minima
    // read 11 200, the one at 6 s 10 100 + 600 = 10 700: the floor.
    assert!((e.skew_ppm() - 100.0).abs() < 1e-6, "{}", e.skew_ppm());
    let floor = e.floor_us(at(12_000_000));
    assert!((floor - 10_700.0).abs() < 1e-6, "{floor}");
    // And it keeps moving along the slope: 100 µs a second.
    let later = e.floor_us(at(13_000_000));
    assert!((later - 10_800.0).abs() < 1e-6, "{later}");
}

#[test]
fn the_window_keeps_an_epoch_minimum_for_exactly_two_minutes() {
    let mut e = OwdEstimator::default();
    // One sample every 2 s (each closes an epoch); the first is 1 ms lower.
    for k in 0..=60i64 {
        sample(&mut e, k * 2_000_000, if k == 0 { 9_000 } else { 10_000 });
    }
    // At 120 s the minimum at 0 is exactly WINDOW_US old: still in.
    assert_eq!(e.skew_ppm(), 0.0);
    assert_eq!(e.floor_us(at(120_000_000)), 9_000.0);
    // At 122 s it is older and gone: the floor is the later minima.
    sample(&mut e, 122_000_000, 10_000);
    assert_eq!(e.floor_us(at(122_000_000)), 10_000.0);
}

#[test]
fn a_queue_rising_past_50ms_a_millisecond_at_a_time_is_not_a_step() {
    let mut e = OwdEstimator::default();
    let mut t = 0;
    for _ in 0..200 {
        sample(&mut e, t, 10_000);
        t += 5_000;
    }
    // The queue grows 1 ms per sample to 120 ms: above the 50 ms of a step,
    // but no sample jumps from the one before.
    for q in 1..=120 {
        sample(&mut e, t, 10_000 + q * 1_000);
        t += 5_000;
    }
    assert_eq!(e.steps(), 0);
    // The smoothed value lags the ramp by about 7 samples (gain 1/8).
    let q = e.queueing(at(t));
    assert!(q >= Duration::from_millis(110), "{q:?}");
}

#[test]
fn a_step_forward_is_confirmed_after_100ms_and_8_samples_and_not_counted_before() {
    let mut e = OwdEstimator::default();
    for k in 0..100 {
        sample(&mut e, k * 10_000, 10_000);
    }
    // From 1 s on, every sample reads 200 ms more: a sample every 10 ms.
    let t0 = 1_000_000;
    for k in 0..10 {
        let t = t0 + k * 10_000;
        sample(&mut e, t, 210_000);
        assert_eq!(e.steps(), 0, "confirmed early, {k} samples in");
        // Until it is known to be a step, the jump is not queueing.
        assert_eq!(e.queueing(at(t)), Duration::ZERO, "{k} samples in");
    }
    // The eleventh sample is 100 ms after the first: the rise is a step.
    sample(&mut e, t0 + 100_000, 210_000);
    assert_eq!(e.steps(), 1);
    assert_eq!(e.floor_us(at(t0 + 100_000)), 210_000.0);
    assert_eq!(e.queueing(at(t0 + 100_000)), Duration::ZERO);
}

/// Samples 20 ms apart: the rise has lasted 100 ms at its sixth sample,
/// and is a step only at its eighth (`cargo mutants`: a count of seven
/// or of nine went unnoticed, the test above meeting both at once).
#[test]
fn a_step_forward_also_waits_for_its_eighth_sample() {
    let mut e = OwdEstimator::default();
    for k in 0..50 {
        sample(&mut e, k * 20_000, 10_000);
    }
    let t0 = 1_000_000;
    for k in 0..7 {
        sample(&mut e, t0 + k * 20_000, 210_000);
        assert_eq!(e.steps(), 0, "confirmed at sample {}", k + 1);
    }
    sample(&mut e, t0 + 7 * 20_000, 210_000);
    assert_eq!(e.steps(), 1);
}

/// Two paths' estimators on one sending side's clock: `a` 10 ms one way,
/// `b` 30 ms, each sampled every 10 ms for a second, `b` 5 ms after `a`.
fn two_paths() -> (OwdClock, OwdEstimator, OwdEstimator) {
    let mut clock = OwdClock::anchored(0);
    let (mut a, mut b) = (OwdEstimator::default(), OwdEstimator::default());
    both(
        &mut clock,
        (&mut a, &mut b),
        (0, 100),
        10_000,
        (5_000, 30_000),
    );
    (clock, a, b)
}

/// `rounds` samples every 10 ms from `t0`: `a` (path 0) at each with
/// delay `owd_a`, then `b` (path 1) `lag` later with delay `owd_b`.
fn both(
    clock: &mut OwdClock,
    (a, b): (&mut OwdEstimator, &mut OwdEstimator),
    (t0, rounds): (i64, i64),
    owd_a: u32,
    (lag, owd_b): (i64, u32),
) {
    for k in 0..rounds {
        let t = t0 + k * 10_000;
        a.on_sample(at(t), clock, 0, owd_a);
        b.on_sample(at(t + lag), clock, 1, owd_b);
    }
}

#[test]
fn a_rise_another_path_did_not_see_is_that_paths_delay_not_a_step() {
    let (mut clock, mut a, mut b) = two_paths();
    // From 1 s, `a` fades: its samples take 200 ms more, while `b`,
    // heard after each of them arrived, reads as before.
    let t0 = 1_000_000;
    both(
        &mut clock,
        (&mut a, &mut b),
        (t0, 30),
        210_000,
        (205_000, 30_000),
    );
    let end = at(t0 + 300_000);
    assert_eq!(a.steps(), 0);
    assert_eq!(a.floor_us(end), 10_000.0);
    // The fade is the path's queue now.
    assert!(
        a.queueing(end) >= Duration::from_millis(100),
        "{:?}",
        a.queueing(end)
    );
    assert_eq!(b.steps(), 0);
}

#[test]
fn a_step_every_path_sees_is_confirmed_on_each() {
    let (mut clock, mut a, mut b) = two_paths();
    // The receiver's clock jumps 200 ms at 1 s: both paths read it.
    let t0 = 1_000_000;
    both(
        &mut clock,
        (&mut a, &mut b),
        (t0, 30),
        210_000,
        (5_000, 230_000),
    );
    let end = at(t0 + 300_000);
    assert_eq!((a.steps(), b.steps()), (1, 1));
    assert_eq!((a.floor_us(end), b.floor_us(end)), (210_000.0, 230_000.0));
    assert_eq!(a.queueing(end), Duration::ZERO);
}

#[test]
fn a_rise_waits_for_an_active_path_then_goes_by_what_it_says() {
    for b_rose in [false, true] {
        let (mut clock, mut a, mut b) = two_paths();
        // `a` rises by 200 ms from 1 s; `b`, heard just before, is not
        // heard again for 300 ms: no verdict, and no queue counted.
        let t0 = 1_000_000;
        for k in 0..30 {
            a.on_sample(at(t0 + k * 10_000), &mut clock, 0, 210_000);
        }
        assert_eq!(a.steps(), 0);
        assert_eq!(a.floor_us(at(t0 + 300_000)), 10_000.0);
        assert_eq!(a.queueing(at(t0 + 300_000)), Duration::ZERO);
        // Then `b` speaks, and `a`'s next sample decides.
        let owd_b = if b_rose { 230_000 } else { 30_000 };
        b.on_sample(at(t0 + 500_000), &mut clock, 1, owd_b);
        a.on_sample(at(t0 + 300_000), &mut clock, 0, 210_000);
        assert_eq!(a.steps(), u64::from(b_rose), "b rose: {b_rose}");
        let floor = if b_rose { 210_000.0 } else { 10_000.0 };
        assert_eq!(a.floor_us(at(t0 + 300_000)), floor);
    }
}

#[test]
fn a_rise_with_no_other_path_active_is_a_step_as_before() {
    let (mut clock, mut a, _) = two_paths();
    // `b` was last heard 1 s before `a`'s rise: it says nothing.
    let t0 = 2_000_000;
    for k in 0..11 {
        a.on_sample(at(t0 + k * 10_000), &mut clock, 0, 210_000);
    }
    assert_eq!(a.steps(), 1);
}

#[test]
fn a_path_that_already_moved_with_the_clock_does_not_refute_the_step() {
    let (mut clock, mut a, mut b) = two_paths();
    // The clock jumps 200 ms at 1 s; `b`, busy, confirms it once `a`
    // has been silent for a second, and reads flat after; `a` meets the
    // step from 2.5 s on.
    let t0 = 1_000_000;
    for k in 0..150 {
        b.on_sample(at(t0 + k * 10_000), &mut clock, 1, 230_000);
        assert_eq!(b.steps(), u64::from(k >= 100), "{k}");
    }
    for k in 0..11 {
        a.on_sample(at(t0 + 1_500_000 + k * 10_000), &mut clock, 0, 210_000);
    }
    assert_eq!(a.steps(), 1);
}

#[test]
fn a_path_that_stepped_long_ago_still_refutes_a_fade() {
    let (mut clock, mut a, mut b) = two_paths();
    // The clock steps 200 ms at 1 s; both paths read it and move with it.
    let t0 = 1_000_000;
    both(
        &mut clock,
        (&mut a, &mut b),
        (t0, 30),
        210_000,
        (5_000, 230_000),
    );
    assert_eq!((a.steps(), b.steps()), (1, 1));
    // Both carry on at the new delays, then `a` fades at 200 s while `b`,
    // its step more than two minutes old, reads as before.
    let t1 = 200_000_000;
    both(
        &mut clock,
        (&mut a, &mut b),
        (t1 - 1_000_000, 100),
        210_000,
        (5_000, 230_000),
    );
    both(
        &mut clock,
        (&mut a, &mut b),
        (t1, 30),
        410_000,
        (205_000, 230_000),
    );
    assert_eq!((a.steps(), b.steps()), (1, 1));
    assert!(a.queueing(at(t1 + 300_000)) >= Duration::from_millis(100));
}

#[test]
fn on_the_receiving_side_a_fade_is_told_by_the_peers_send_times() {
    // The receiver's estimators: `raw` is our arrival time minus the
    // peer's send stamp. The peer sends on `a` (10 ms) and, 5 ms later,
    // on `b` (30 ms) every 10 ms; from its 1-s packet on, `a`'s arrive
    // 200 ms late for 300 ms.
    let mut clock = OwdClock::for_receiver();
    let (mut a, mut b) = (OwdEstimator::default(), OwdEstimator::default());
    let mut feed = |sent: i64, owd_a: i64| {
        a.on_sample(at(sent + owd_a), &mut clock, 0, owd_a as u32);
        b.on_sample(at(sent + 35_000), &mut clock, 1, 30_000);
    };
    for k in 0..100 {
        feed(k * 10_000, 10_000);
    }
    for k in 100..130 {
        feed(k * 10_000, 210_000);
    }
    let end = at(1_300_000 + 210_000);
    assert_eq!((a.steps(), b.steps()), (0, 0));
    assert!(
        a.queueing(end) >= Duration::from_millis(100),
        "{:?}",
        a.queueing(end)
    );
}

/// `verdict` on path 0's rise, first heard at `FIRST` (the other host's
/// clock), with path 1 as `other`.
fn verdict_beside(other: Heard, span_us: i64) -> Verdict {
    let mut clock = OwdClock::for_sender();
    *clock.heard_mut(1) = other;
    clock.verdict(0, FIRST, span_us)
}

const FIRST: f64 = 500_000_000.0;

#[test]
fn a_step_of_the_other_path_refutes_nothing_for_exactly_two_minutes() {
    let heard_flat = |stepped| Heard {
        latest: FIRST,
        flat: FIRST,
        stepped,
    };
    assert_eq!(
        verdict_beside(heard_flat(FIRST - SAME_STEP_US), 0),
        Verdict::Step
    );
    assert_eq!(
        verdict_beside(heard_flat(FIRST - SAME_STEP_US - 1.0), 0),
        Verdict::PathDelay
    );
}

#[test]
fn a_rise_waits_for_a_path_heard_within_a_second_before_it_for_under_a_second() {
    let heard_at = |latest| Heard {
        latest,
        ..Heard::NEVER
    };
    let wait = HEARD_WAIT_US as i64;
    assert_eq!(
        verdict_beside(heard_at(FIRST - HEARD_WAIT_US), wait - 1),
        Verdict::Undecided
    );
    assert_eq!(
        verdict_beside(heard_at(FIRST - HEARD_WAIT_US), wait),
        Verdict::Step
    );
    assert_eq!(
        verdict_beside(heard_at(FIRST - HEARD_WAIT_US - 1.0), 0),
        Verdict::Step
    );
    // Heard since the rise began (and not flat): no reason to wait.
    assert_eq!(verdict_beside(heard_at(FIRST), 0), Verdict::Step);
}
