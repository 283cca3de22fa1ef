//! Relative one-way delay. Sender and receiver clocks differ by an unknown
//! offset, so a single sample `recv_ts - send_ts` means nothing; but the
//! offset is the same for every packet and every path between the same two
//! hosts, so differences between samples (queueing growth) and between paths
//! (which path is shorter, by how much) are exact, as long as the offset
//! stays put. Values are kept as signed microseconds anchored at the first
//! sample to survive 32-bit wrap-around.
//!
//! Real clocks do not stay put: they drift (±10–100 ppm for a quartz, up to
//! 500 ppm while NTP slews) and NTP steps them. Drift adds `skew * t` to
//! every sample: a minimum kept forever then reads 100 ppm as 6 ms more
//! queueing every minute. So the path's delay floor is
//!
//! - **drift-compensated**: the skew is estimated as the slope of the
//!   minimum delay, per 2-s epoch, over the last two minutes (Theil–Sen, the
//!   median of the pairwise slopes, so epochs spent behind a standing queue
//!   do not tilt it), and the floor follows that slope between samples;
//! - **windowed**: the floor is the lowest epoch minimum of those two
//!   minutes projected to now along the slope, so an error in the slope
//!   costs at most its effect over the window, and a floor that is wrong for
//!   any other reason (a route change) is forgotten within it;
//! - **step-aware**: a jump of more than 50 ms from one sample to the next
//!   that stays (every sample more than 50 ms above the floor for 100 ms and
//!   8 samples), or one sample more than 50 ms below the floor, is a clock
//!   step: the whole history moves by the step, so the slope and the floor
//!   survive it and the step is absorbed within a few round trips. Until a
//!   jump is confirmed or gone, `queueing` does not count it.
//!
//! A windowed minimum alone would need a window short enough to bound the
//! drift error (2 ms at 100 ppm is 20 s), and in that window a fixed line
//! kept busy with a small standing queue (lawrr's delay signal) would take
//! its queue for its floor. Drift compensation alone would keep a step
//! forever. A queue grows a packet at a time and never starts a step; a
//! fade that holds packets for more than 100 ms does, and is read as a
//! step until the queue behind it drains: the first sample 50 ms below the
//! floor then steps it back.

use std::collections::VecDeque;
use std::time::Duration;

use crate::time::Instant;

/// Length of one epoch of the minimum's history.
const EPOCH_US: i64 = 2_000_000;
/// The window of the floor and of the slope (60 epochs): epochs whose
/// minimum is older are dropped. An idle path keeps its last slope until it
/// has enough epochs for a new one.
const WINDOW_US: i64 = 60 * EPOCH_US;
/// Epochs needed before the slope is estimated.
const MIN_EPOCHS: usize = 3;
/// Largest slope believed to be drift (NTP slews at most 500 ppm): a bound
/// on what a slowly growing queue can be mistaken for.
const MAX_SKEW: f64 = 1_000e-6;
/// A jump of the floor by more than this is a clock step.
const STEP_MIN_US: f64 = 50_000.0;
/// Samples and time a rise must persist to be a step rather than a burst.
const STEP_SAMPLES: u32 = 8;
const STEP_SPAN_US: i64 = 100_000;

/// Lowest sample of an epoch, and when it was taken (µs of local time).
#[derive(Debug, Clone, Copy, Default)]
struct EpochMin {
    t: i64,
    v: f64,
}

/// Samples above the floor by more than a step, not yet long enough to be one.
#[derive(Debug, Clone, Copy)]
struct Rise {
    since: i64,
    samples: u32,
    least_excess: f64,
    var_before: f64,
    smoothed_before: f64,
}

#[derive(Debug, Clone, Default)]
pub struct OwdEstimator {
    smoothed_us: f64,
    var_us: f64,
    /// Closed epochs, oldest first. Their minima are at least an epoch
    /// apart, so the two-minute window also bounds their number.
    epochs: VecDeque<EpochMin>,
    /// The epoch in progress: its start and its minimum so far (none
    /// before the first sample).
    current: Option<(i64, EpochMin)>,
    /// Estimated drift, µs per µs (0 until enough epochs).
    skew: f64,
    /// The floor at a reference time; it moves with `skew` from there.
    floor: EpochMin,
    rise: Option<Rise>,
    /// The previous sample: a step shows as a jump from it.
    last_us: f64,
    steps: u64,
}

fn local_us(t: Instant) -> i64 {
    (t.as_nanos() / 1_000) as i64
}

/// Median of the pairwise slopes (Theil–Sen), clamped to `MAX_SKEW`.
fn theil_sen(points: &VecDeque<EpochMin>) -> f64 {
    let mut slopes = Vec::with_capacity(points.len() * points.len() / 2);
    for (i, a) in points.iter().enumerate() {
        for b in points.iter().skip(i + 1) {
            if b.t > a.t {
                slopes.push((b.v - a.v) / (b.t - a.t) as f64);
            }
        }
    }
    if slopes.is_empty() {
        return 0.0;
    }
    let mid = slopes.len() / 2;
    let (_, median, _) = slopes.select_nth_unstable_by(mid, f64::total_cmp);
    median.clamp(-MAX_SKEW, MAX_SKEW)
}

impl OwdEstimator {
    /// Converts a raw `recv_ts - send_ts` (wrapping u32 microseconds) into a
    /// relative one-way delay in microseconds, consistent across paths that
    /// share `anchor`.
    pub fn unwrap_raw(anchor: u32, raw: u32) -> i64 {
        i64::from(raw.wrapping_sub(anchor) as i32)
    }

    /// Records a sample taken at local time `at`; `raw` is
    /// `recv_ts_us.wrapping_sub(send_ts_us)`. `anchor` must be shared by all
    /// paths of a session so paths compare.
    pub fn on_sample(&mut self, at: Instant, anchor: u32, raw: u32) {
        let t = local_us(at);
        let v = Self::unwrap_raw(anchor, raw) as f64;
        if self.current.is_none() {
            self.smoothed_us = v;
            self.var_us = 0.0;
            self.floor = EpochMin { t, v };
            self.current = Some((t, EpochMin { t, v }));
            self.last_us = v;
            return;
        }
        let jump = v - std::mem::replace(&mut self.last_us, v);
        let before = (self.smoothed_us, self.var_us);
        self.roll_epoch(t);
        let excess = v - self.floor_at(t);
        if excess < -STEP_MIN_US {
            // The clock stepped back: what was measured before moves with it.
            self.shift(excess);
            self.smoothed_us = v;
        } else {
            // Same gains as RFC 6298's RTT estimator.
            self.var_us = 0.75 * self.var_us + 0.25 * (self.smoothed_us - v).abs();
            self.smoothed_us = 0.875 * self.smoothed_us + 0.125 * v;
        }
        if let Some((_, m)) = self.current.as_mut().filter(|(_, m)| v < m.v) {
            *m = EpochMin { t, v };
        }
        if excess < 0.0 {
            self.floor = EpochMin { t, v };
        }
        self.watch_rise(t, v, excess, jump, before);
    }

    /// Closes the epoch in progress once it is over: re-estimates the slope
    /// and recomputes the floor from the window.
    fn roll_epoch(&mut self, t: i64) {
        let Some((start, m)) = self.current else {
            return;
        };
        if t - start < EPOCH_US {
            return;
        }
        self.epochs.push_back(m);
        // The window is two minutes of time, also for a path left idle.
        let oldest = t - WINDOW_US;
        while self.epochs.front().is_some_and(|e| e.t < oldest) {
            self.epochs.pop_front();
        }
        if self.epochs.len() >= MIN_EPOCHS {
            self.skew = theil_sen(&self.epochs);
        }
        let skew = self.skew;
        let project = |e: &EpochMin| e.v + skew * (t - e.t) as f64;
        let lowest = self
            .epochs
            .iter()
            .map(|e| (project(e), e))
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .map(|(_, e)| *e);
        if let Some(e) = lowest {
            self.floor = e;
        }
        self.current = Some((
            t,
            EpochMin {
                t,
                v: f64::INFINITY,
            },
        ));
    }

    /// Tracks samples standing far above the floor since a jump; once they
    /// have for long enough, the receiver's clock stepped forward. A queue
    /// grows a packet at a time: it does not start a rise.
    /// `before` is (smoothed, variation) before this sample.
    fn watch_rise(&mut self, t: i64, v: f64, excess: f64, jump: f64, before: (f64, f64)) {
        if excess <= STEP_MIN_US || (self.rise.is_none() && jump <= STEP_MIN_US) {
            self.rise = None;
            return;
        }
        let (smoothed_before, var_before) = before;
        let rise = self.rise.get_or_insert(Rise {
            since: t,
            samples: 0,
            least_excess: excess,
            var_before,
            smoothed_before,
        });
        rise.samples += 1;
        rise.least_excess = rise.least_excess.min(excess);
        if rise.samples >= STEP_SAMPLES && t - rise.since >= STEP_SPAN_US {
            let (shift, var_before) = (rise.least_excess, rise.var_before);
            self.rise = None;
            self.shift(shift);
            // The smoothed value and its variation restart past the step.
            self.smoothed_us = v;
            self.var_us = var_before;
        }
    }

    /// Moves the whole history by a clock step of `by` µs.
    fn shift(&mut self, by: f64) {
        self.steps += 1;
        self.floor.v += by;
        for e in &mut self.epochs {
            e.v += by;
        }
        if let Some((_, m)) = self.current.as_mut() {
            m.v += by;
        }
    }

    fn floor_at(&self, t: i64) -> f64 {
        self.floor.v + self.skew * (t - self.floor.t) as f64
    }

    pub fn has_samples(&self) -> bool {
        self.current.is_some()
    }

    /// Smoothed relative one-way delay, microseconds (offset unknown).
    pub fn smoothed_us(&self) -> f64 {
        self.smoothed_us
    }

    /// The path's delay floor at local time `now` (its propagation delay,
    /// relative): the least delay seen recently, moved along the drift.
    pub fn floor_us(&self, now: Instant) -> f64 {
        self.floor_at(local_us(now))
    }

    /// Estimated clock drift, parts per million (receiver against sender).
    pub fn skew_ppm(&self) -> f64 {
        self.skew * 1e6
    }

    /// Clock steps detected so far.
    pub fn steps(&self) -> u64 {
        self.steps
    }

    /// Delay above the path's floor: queueing, in effect. While a jump is
    /// not yet known to be a clock step or a delay, it is not counted.
    pub fn queueing(&self, now: Instant) -> Duration {
        let smoothed = self.rise.map_or(self.smoothed_us, |r| r.smoothed_before);
        Duration::from_micros((smoothed - self.floor_us(now)).max(0.0) as u64)
    }

    /// `smoothed + 4 * var`, the latest plausible arrival, relative.
    pub fn upper_us(&self) -> f64 {
        self.smoothed_us + 4.0 * self.var_us
    }
}

#[cfg(test)]
mod tests;
