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
//!   jump is confirmed or gone, `queueing` does not count it;
//! - **checked against the other paths**: the other host's clock is the
//!   same for every path, so a step shows on all of them, where a fade
//!   holds one path's packets only. A rise is not a step when another path
//!   was heard since it began without it ([`OwdClock`]): it is that
//!   path's delay, and counts as queueing. An LTE fade of half a second
//!   beside a busy fixed line was read as a 117-ms step; the path then
//!   looked that much longer than it was, was given nothing, and so had no
//!   sample to step back with, for 6.7 s (BENCHMARKS.md, "A fade read as a
//!   clock step").
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
/// A rise no other path has been heard since waits this long for one
/// heard within it before it (an active path) to confirm or refute it.
const HEARD_WAIT_US: f64 = 1_000_000.0;
/// A path's own confirmed step this recent (in the other host's clock)
/// before a rise is taken for the same step, not against it: its samples
/// since are flat only because it has moved with the clock already.
const SAME_STEP_US: f64 = WINDOW_US as f64;

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
    /// The other host's clock at its first sample (see [`OwdClock`]).
    first_remote: f64,
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

/// What the one-way delay estimators of all paths between the same two
/// hosts share. Their raw samples differ by one clock offset, so the
/// session's first sample anchors them all and their delays compare. And
/// the other host's clock is one clock: for each path, this keeps when (by
/// that clock, relative µs) it was last heard, last heard within a step
/// of its floor, and last stepped, so that a rise on one path can be
/// checked against what the others saw at the same moment.
#[derive(Debug, Clone)]
pub struct OwdClock {
    anchor: Option<u32>,
    /// +1 where the other host stamps a sample's arrival (the sending
    /// side: `raw` is its clock minus ours), -1 where it stamps the
    /// departure (the receiving side: ours minus its).
    remote_sign: f64,
    /// Indexed by path; a path only grows it to its own index.
    paths: Vec<Heard>,
}

#[derive(Debug, Clone, Copy)]
struct Heard {
    latest: f64,
    flat: f64,
    stepped: f64,
}

impl Heard {
    const NEVER: Heard = Heard {
        latest: f64::NEG_INFINITY,
        flat: f64::NEG_INFINITY,
        stepped: f64::NEG_INFINITY,
    };
}

/// What the other paths say of a rise that has lasted long enough to be a
/// step.
#[derive(Debug, PartialEq, Eq)]
enum Verdict {
    Step,
    /// Another path was heard since without it: this path's delay.
    PathDelay,
    /// An active path has not been heard since: ask again.
    Undecided,
}

impl OwdClock {
    /// The sending side's: the peer stamps when each packet arrived.
    pub fn for_sender() -> OwdClock {
        OwdClock::new(1.0)
    }

    /// The receiving side's: the peer stamps when each packet left.
    pub fn for_receiver() -> OwdClock {
        OwdClock::new(-1.0)
    }

    /// A sending side's clock whose anchor is `anchor` from the start.
    #[cfg(test)]
    pub fn anchored(anchor: u32) -> OwdClock {
        OwdClock {
            anchor: Some(anchor),
            ..OwdClock::for_sender()
        }
    }

    fn new(remote_sign: f64) -> OwdClock {
        OwdClock {
            anchor: None,
            remote_sign,
            paths: Vec::new(),
        }
    }

    fn heard_mut(&mut self, path: usize) -> &mut Heard {
        if self.paths.len() <= path {
            self.paths.resize(path + 1, Heard::NEVER);
        }
        &mut self.paths[path]
    }

    /// `path`'s rise whose first sample the other host's clock put at
    /// `first`, held for `span_us` of our time.
    fn verdict(&self, path: usize, first: f64, span_us: i64) -> Verdict {
        let others = || {
            self.paths
                .iter()
                .enumerate()
                .filter(move |&(i, _)| i != path)
                .map(|(_, h)| h)
        };
        if others().any(|h| h.flat >= first && h.stepped < first - SAME_STEP_US) {
            return Verdict::PathDelay;
        }
        let waiting = others().any(|h| h.latest < first && h.latest >= first - HEARD_WAIT_US);
        if waiting && !others().any(|h| h.latest >= first) && (span_us as f64) < HEARD_WAIT_US {
            return Verdict::Undecided;
        }
        Verdict::Step
    }
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

    /// Records path `path`'s sample taken at local time `at`; `raw` is
    /// `recv_ts_us.wrapping_sub(send_ts_us)`. `clock` must be shared by all
    /// paths of a session so paths compare.
    pub fn on_sample(&mut self, at: Instant, clock: &mut OwdClock, path: usize, raw: u32) {
        let t = local_us(at);
        let v = Self::unwrap_raw(*clock.anchor.get_or_insert(raw), raw) as f64;
        let remote = t as f64 + clock.remote_sign * v;
        self.take_sample(t, v, remote, clock, path);
        let flat = v - self.floor_at(t) <= STEP_MIN_US;
        let heard = clock.heard_mut(path);
        heard.latest = remote;
        if flat {
            heard.flat = remote;
        }
    }

    fn take_sample(&mut self, t: i64, v: f64, remote: f64, clock: &mut OwdClock, path: usize) {
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
            clock.heard_mut(path).stepped = remote;
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
        self.watch_rise((t, v, remote), excess, jump, before, clock, path);
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
    /// have for long enough, and no other path says otherwise, the other
    /// host's clock stepped forward. A queue grows a packet at a time: it
    /// does not start a rise. `sample` is (local time, delay, the other
    /// host's time), `before` (smoothed, variation) before this sample.
    fn watch_rise(
        &mut self,
        (t, v, remote): (i64, f64, f64),
        excess: f64,
        jump: f64,
        before: (f64, f64),
        clock: &mut OwdClock,
        path: usize,
    ) {
        if excess <= STEP_MIN_US || (self.rise.is_none() && jump <= STEP_MIN_US) {
            self.rise = None;
            return;
        }
        let (smoothed_before, var_before) = before;
        let rise = self.rise.get_or_insert(Rise {
            since: t,
            first_remote: remote,
            samples: 0,
            least_excess: excess,
            var_before,
            smoothed_before,
        });
        rise.samples += 1;
        rise.least_excess = rise.least_excess.min(excess);
        if rise.samples < STEP_SAMPLES || t - rise.since < STEP_SPAN_US {
            return;
        }
        let (shift, var_before, first) = (rise.least_excess, rise.var_before, rise.first_remote);
        match clock.verdict(path, first, t - rise.since) {
            Verdict::Undecided => {}
            // The rise's samples are in the smoothed value already: from
            // now on `queueing` counts them.
            Verdict::PathDelay => self.rise = None,
            Verdict::Step => {
                self.rise = None;
                self.shift(shift);
                // The smoothed value and its variation restart past the step.
                self.smoothed_us = v;
                self.var_us = var_before;
                clock.heard_mut(path).stepped = first;
            }
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
