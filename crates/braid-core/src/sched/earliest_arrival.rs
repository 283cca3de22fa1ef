//! Earliest expected arrival (in the spirit of ECF and BLEST): each packet
//! goes where it is expected to arrive first, where a path's expected
//! delivery time is the time until it may send, plus the bytes queued ahead
//! of the packet (in flight beyond one bandwidth-delay product) divided by
//! the path's rate, plus its propagation delay (the smallest one-way delay
//! seen; the smoothed one would count the queue twice).
//!
//! When the best path is momentarily closed (window full or pacing), sending
//! on a slower path at once is not always better: if the whole backlog can
//! drain through the best path before the slow path would deliver one
//! packet, waiting keeps the packets in order and the fast path full (ECF's
//! rule). When the backlog is deeper than that, the slow path should carry
//! not the head of the queue, which the fast path would deliver first, but
//! the first packet the faster paths could not deliver before the slow one
//! arrives: `SendBehind` names how many queued bytes stay for them (summed
//! over every closed path that would beat the open one).
//! Packets then arrive about in order, and the resequencer has little to do.

use std::time::Duration;

use super::params::{ParamError, Params};
use super::{Decision, PathSet, PathView, SchedContext, Scheduler};
use crate::time::Instant;

#[derive(Debug, Default)]
pub struct EarliestArrival {
    /// `cost_first=1`: cheapest paths first; a costlier path carries only
    /// what the cheaper ones cannot deliver before it goes stale. Overflow
    /// paths (`PathView::overflow`) always come after the others, the
    /// same way.
    cost_first: bool,
}

impl EarliestArrival {
    pub fn from_params(params: &mut Params) -> Result<EarliestArrival, ParamError> {
        let cost_first = match params.f64("cost_first")? {
            None => false,
            Some(v) if v == 0.0 || v == 1.0 => v == 1.0,
            Some(v) => {
                return Err(ParamError::Value {
                    key: "cost_first".into(),
                    value: v.to_string(),
                    expected: "0 or 1",
                })
            }
        };
        Ok(EarliestArrival { cost_first })
    }
}

/// Open paths whose expected arrivals are this close (a share of the
/// earliest) count as tied while one of them has no one-way delay yet
/// (see [`nearest_of_the_tied`]).
const TIE_SHARE: f64 = 0.1;

/// Share of its estimated capacity a closed path is trusted to deliver
/// ahead of a `SendBehind` packet: rate estimates are maxima, and a hole
/// that fills late costs a resequencing timeout.
const AHEAD_MARGIN: f64 = 0.8;

/// Expected arrival of `bytes` sent next on `p`, in seconds from now,
/// relative to the smallest one-way delay (`base_owd_us`).
/// A path with less than this share of the live paths' estimated rate
/// (or no estimate) is thin. Applied to every path, the rule it serves
/// cost a transfer after light traffic over equal paths up to 0.016 of
/// the ideal (`grid-light.sh`, 1:1 at 5/100 ms).
const THIN_SHARE: f64 = 0.05;

fn arrival_secs(p: &PathView, now: Instant, bytes: u64, base_owd_us: f64) -> f64 {
    let bw = p.bandwidth_bps.unwrap_or(0.0).max(1.0);
    let min_rtt = p.min_rtt.unwrap_or(Duration::ZERO).as_secs_f64();
    let bdp_bytes = bw * min_rtt / 8.0;
    let queued = (p.in_flight_bytes as f64 - bdp_bytes).max(0.0);
    let wait = if p.cwnd_open {
        (p.ready_at - now).as_secs_f64()
    } else {
        (p.in_flight_bytes + bytes).saturating_sub(p.cwnd_bytes) as f64 * 8.0 / bw
    };
    let owd = match p.owd_us {
        Some(o) => (o - base_owd_us) / 1e6,
        None => p.srtt.map_or(0.0, |s| s.as_secs_f64() / 2.0),
    };
    wait + (queued + bytes as f64) * 8.0 / bw + owd
}

impl Scheduler for EarliestArrival {
    fn name(&self) -> &'static str {
        "earliest-arrival"
    }

    fn pick(&mut self, ctx: &SchedContext<'_>) -> Decision {
        if !self.cost_first && !ctx.paths.iter().any(|p| p.overflow) {
            return pick_among(ctx, &|_| true);
        }
        // Tiers: primary paths before overflow ones and, with `cost_first`,
        // cheapest first within each. A tier's paths join the ones before
        // it only when those cannot send now and cannot carry the backlog
        // before it goes stale.
        let cost_first = self.cost_first;
        let rank = |p: &PathView| Tier {
            overflow: p.overflow,
            cost: if cost_first { p.cost } else { 0.0 },
        };
        let limit = ctx.queue_delay_limit.as_secs_f64();
        let mut tier: Option<Tier> = None;
        loop {
            let Some(next) = ctx
                .paths
                .iter()
                .map(rank)
                .filter(|r| tier.is_none_or(|t| r.cmp(&t).is_gt()))
                .min_by(Tier::cmp)
            else {
                return Decision::Wait;
            };
            tier = Some(next);
            let allowed = |p: &PathView| rank(p).cmp(&next).is_le();
            let decision = pick_among(ctx, &allowed);
            if decision != Decision::Wait {
                return decision;
            }
            let carried: f64 = ctx
                .paths
                .iter()
                .filter(|p| allowed(p) && !p.suspect)
                .map(|p| limit * p.bandwidth_bps.unwrap_or(0.0) / 8.0)
                .sum();
            if carried * AHEAD_MARGIN >= ctx.backlog_bytes as f64 {
                return Decision::Wait;
            }
        }
    }
}

/// Where a path stands in the order paths are taken in: primary before
/// overflow, then by cost (0 for all when cost does not order them).
#[derive(Clone, Copy)]
struct Tier {
    overflow: bool,
    cost: f64,
}

impl Tier {
    fn cmp(&self, other: &Tier) -> std::cmp::Ordering {
        self.overflow
            .cmp(&other.overflow)
            .then(self.cost.total_cmp(&other.cost))
    }
}

/// Earliest arrival among the paths `allowed` admits.
fn pick_among(ctx: &SchedContext<'_>, allowed: &dyn Fn(&PathView) -> bool) -> Decision {
    let paths = || ctx.paths.iter().filter(|p| allowed(p));
    // A path with no rate estimate yet is tried as soon as it may send.
    // So is one whose estimate rests only on app-limited samples (no
    // full-load sample, which is all `kalman_bps` takes) while more than
    // this packet waits: a path whose first packets were a few small ones
    // (a ping, a handshake) is otherwise priced at a fraction of its rate
    // and never given the load that would correct it.
    let backlog = ctx.backlog_bytes > ctx.packet_bytes;
    let unmeasured =
        |p: &PathView| p.bandwidth_bps.is_none() || (backlog && p.kalman_bps.is_none());
    // Not one whose packet train failed, though: a path too thin to pass
    // a train (3G in a fade) took a transfer's first window, a second
    // away, and the bond fell below the fixed line beside it
    // (BENCHMARKS.md, "3G beside a fixed line"). It carries what the
    // others cannot (`last_resort`), and that measures it.
    let tried_first = |p: &PathView| unmeasured(p) && !p.suspect && !p.train_failed;
    if let Some(p) = paths().find(|p| p.can_send && tried_first(p)) {
        return Decision::Send(PathSet::one(p.index));
    }
    // A down path (silent, see `path::Liveness`) gets only what the
    // live ones cannot carry in time.
    let live = || paths().filter(|p| !p.suspect);
    let base = live()
        .filter_map(|p| p.owd_us)
        .fold(f64::INFINITY, f64::min);
    let base = if base.is_finite() { base } else { 0.0 };
    let est = |p: &PathView| arrival_secs(p, ctx.now, ctx.packet_bytes, base);
    let best_open = live()
        .filter(|p| p.can_send)
        .map(|p| (est(p), p.index))
        .min_by(|a, b| a.0.total_cmp(&b.0));
    let Some((open_est, open_index)) = best_open else {
        return last_resort(ctx, allowed);
    };
    let tied = |p: &PathView| est(p) <= open_est * (1.0 + TIE_SHARE);
    let (open_est, open_index) = match nearest_of_the_tied(live().filter(|p| p.can_send), tied) {
        Some(p) => (est(p), p.index),
        None => (open_est, open_index),
    };
    // Every closed path that would deliver the head sooner than the best
    // open one takes its share of the queue first: the bytes it delivers
    // before the open path would deliver this packet (never more than it
    // can send before queued packets go stale). Of its rate, the share
    // sparse flows' express datagrams take does not count: they overtake
    // the queue, and a thin path that a call keeps busy would otherwise
    // hold the head until it went stale. A stalled path's estimates
    // describe the past: never wait for it.
    let limit = ctx.queue_delay_limit.as_secs_f64();
    let ahead: f64 = live()
        .filter(|p| !p.can_send && !p.stalled)
        .filter_map(|p| {
            let lead = open_est - est(p);
            let bw = p.bandwidth_bps.unwrap_or(1.0).max(1.0) * (1.0 - p.express_share);
            (lead > 0.0 && bw > 0.0).then(|| lead.min(limit) * bw / 8.0)
        })
        .sum();
    if ahead <= 0.0 {
        return Decision::Send(PathSet::one(open_index));
    }
    // A thin path (see [`THIN_SHARE`]) gets no datagram it would deliver
    // more than the queue delay limit after a closed path could: the
    // receiver would hold every later number behind it, up to its hole
    // timeout, longer than an inner TCP waits. A 3G path whose train had
    // failed took 20-50 datagrams at a time in a TCP flow's start-up,
    // priced thousands of seconds away, and the inner TCP timed out
    // behind them (BENCHMARKS.md, "A thin path's far datagrams"). Trains
    // measure it again when it comes back (`session::train`). Only a path
    // known to be thin, though: by a failed train or by its rate under
    // load (`PathView::rate_shown`). A 2-Mbit/s lab path beside 6 and 3
    // Mbit/s ones, priced at 116 kbit/s by the few packets it had been
    // given, got nothing more for a whole 10-Mbit/s transfer, and nothing
    // could show its rate (BENCHMARKS.md, "A thin path's far datagrams").
    let open = &ctx.paths[open_index];
    let total = || live().filter_map(|p| p.bandwidth_bps).sum::<f64>();
    let thin = (open.train_failed || open.rate_shown)
        && open
            .bandwidth_bps
            .is_none_or(|bw| bw < THIN_SHARE * total());
    let closed_best = || {
        live()
            .filter(|p| !p.can_send && !p.stalled)
            .map(est)
            .fold(f64::INFINITY, f64::min)
    };
    if thin && open_est - closed_best() > limit {
        return Decision::Wait;
    }
    send_behind(ctx, open_index, ahead)
}

/// Among open paths tied on expected arrival, the one whose probes came
/// back soonest, where one of them has no one-way delay yet and the
/// probes measured them all. Before a path's data has measured its delay,
/// it counts as no delay away (no path has a floor to compare), and a
/// fresh tunnel's first packets went to the path a packet train had
/// measured marginally faster: over 10 + 10 Mbit/s at 5 / 50 ms, pings
/// through it took 56 ms instead of 11 (BENCHMARKS.md, "A fresh tunnel's
/// first packets: the far path"). Only a tie: a path much faster by its
/// rate keeps a transfer's first packets, where its round trip will end
/// up (a thin near path first ended the inner TCP's slow start early).
///
/// `open` are the open paths, `is_tied` says which tie with the earliest.
/// It runs for every packet: once data has measured every open path's
/// delay, the first check ends it without pricing any path again.
fn nearest_of_the_tied<'a>(
    open: impl Iterator<Item = &'a PathView> + Clone,
    is_tied: impl Fn(&PathView) -> bool,
) -> Option<&'a PathView> {
    if open.clone().all(|p| p.owd_us.is_some()) {
        return None;
    }
    let tied = open.filter(|p| is_tied(p));
    let unmeasured_delay = tied.clone().any(|p| p.owd_us.is_none());
    if !unmeasured_delay || tied.clone().any(|p| p.probe_rtt.is_none()) {
        return None;
    }
    tied.min_by_key(|p| p.probe_rtt)
}

/// `SendBehind` on `path`, leaving `ahead` bytes (less the margin) for the
/// paths that deliver sooner; waits if that is the whole backlog.
fn send_behind(ctx: &SchedContext<'_>, path: usize, ahead: f64) -> Decision {
    let ahead = (ahead * AHEAD_MARGIN) as u64;
    if ahead + ctx.packet_bytes >= ctx.backlog_bytes {
        Decision::Wait
    } else {
        Decision::SendBehind {
            path,
            ahead_bytes: ahead,
        }
    }
}

/// No live path may send now. The datagrams the measured live paths cannot
/// send before they go stale would be dropped anyway, so they go where they
/// may still arrive:
///
/// - a down path whose window is open, the one with the best past record
///   first: a burst of loss looks like a blackout until it ends, and on a
///   per-packet burst only sending ends it;
/// - a path not measured yet whose pacing allows, window or not: on a long
///   fast path the first acknowledgement takes a round trip, and a first
///   window's worth of packets per round trip leaves most of the load to go
///   stale for a second (issue 7, item 5). Its first rate sample then
///   measures what it carried.
///
/// With no measured live path at all, these carry everything.
fn last_resort(ctx: &SchedContext<'_>, allowed: &dyn Fn(&PathView) -> bool) -> Decision {
    let bw = |p: &PathView| p.bandwidth_bps.unwrap_or(0.0);
    let paths = || ctx.paths.iter().filter(|p| allowed(p));
    let down = paths()
        .filter(|p| p.suspect && p.can_send)
        .max_by(|a, b| bw(a).total_cmp(&bw(b)));
    let unmeasured =
        || paths().find(|p| !p.suspect && p.bandwidth_bps.is_none() && p.ready_at <= ctx.now);
    let Some(target) = down.or_else(unmeasured) else {
        return Decision::Wait;
    };
    let limit = ctx.queue_delay_limit.as_secs_f64();
    let live_bytes: f64 = paths()
        .filter(|p| !p.suspect)
        .map(|p| limit * bw(p) / 8.0)
        .sum();
    if live_bytes <= 0.0 {
        return Decision::Send(PathSet::one(target.index));
    }
    send_behind(ctx, target.index, live_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrival_is_wait_plus_queue_plus_delay() {
        let now = Instant::from_nanos(1_000_000_000);
        // 8 Mbit/s (1 MB/s), 20 ms min RTT: a BDP of 20,000 bytes, so of
        // 30,000 in flight 10,000 are queued ahead.
        let mut p = PathView {
            index: 0,
            cwnd_open: true,
            can_send: false,
            ready_at: now + Duration::from_millis(1),
            cwnd_bytes: 25_000,
            in_flight_bytes: 30_000,
            srtt: Some(Duration::from_millis(30)),
            min_rtt: Some(Duration::from_millis(20)),
            probe_rtt: None,
            train_failed: false,
            owd_us: Some(15_000.0),
            queueing: Duration::ZERO,
            bandwidth_bps: Some(8e6),
            kalman_bps: None,
            rate_shown: false,
            express_share: 0.0,
            cost: 1.0,
            overflow: false,
            suspect: false,
            stalled: false,
        };
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        // Pacing wait 1 ms + (10,000 + 1,000) bytes at 1 MB/s (11 ms) + one-way
        // delay 5 ms above the base.
        let t = arrival_secs(&p, now, 1_000, 10_000.0);
        assert!(close(t, 0.017), "{t}");
        // Window full: wait for 30,000 + 1,000 - 25,000 bytes to drain (6 ms).
        p.cwnd_open = false;
        let t = arrival_secs(&p, now, 1_000, 10_000.0);
        assert!(close(t, 0.022), "{t}");
        // No one-way delay yet: half the smoothed RTT (15 ms) stands in.
        p.cwnd_open = true;
        p.owd_us = None;
        let t = arrival_secs(&p, now, 1_000, 10_000.0);
        assert!(close(t, 0.027), "{t}");
    }

    /// Two idle open paths, a far one (200 ms probe round trip) listed
    /// first and a near one (10 ms), at the rates given, no one-way delay
    /// measured; which does earliest-arrival pick?
    fn first_pick(far_bps: f64, near_bps: f64, edit: impl Fn(&mut PathView)) -> Decision {
        let now = Instant::from_nanos(1_000_000_000);
        let path = |index: usize, bps: f64, probe_ms: u64| PathView {
            index,
            cwnd_open: true,
            can_send: true,
            ready_at: now,
            cwnd_bytes: 100_000,
            in_flight_bytes: 0,
            srtt: None,
            min_rtt: None,
            probe_rtt: Some(Duration::from_millis(probe_ms)),
            train_failed: false,
            owd_us: None,
            queueing: Duration::ZERO,
            bandwidth_bps: Some(bps),
            kalman_bps: Some(bps),
            rate_shown: true,
            express_share: 0.0,
            cost: 1.0,
            overflow: false,
            suspect: false,
            stalled: false,
        };
        let mut paths = [path(0, far_bps, 200), path(1, near_bps, 10)];
        paths.iter_mut().for_each(edit);
        let ctx = SchedContext {
            now,
            paths: &paths,
            packet_bytes: 1_400,
            backlog_bytes: 1_400,
            queue_delay_limit: Duration::from_millis(500),
        };
        EarliestArrival::default().pick(&ctx)
    }

    /// The fixed line (8 Mbit/s, 10 ms one way) has a full window and a
    /// backlog waits; the open path is `bps` fast (`None`: unmeasured, its
    /// train failed), shown so under load, and `owd_ms` away; `edit`
    /// changes the paths.
    fn backlog_pick(bps: Option<f64>, owd_ms: u64, edit: impl Fn(&mut PathView)) -> Decision {
        let now = Instant::from_nanos(1_000_000_000);
        let path = |index: usize, bps: Option<f64>, owd_ms: u64| PathView {
            index,
            cwnd_open: index == 1,
            can_send: index == 1,
            ready_at: now,
            cwnd_bytes: 20_000,
            in_flight_bytes: if index == 0 { 20_000 } else { 0 },
            srtt: Some(Duration::from_millis(2 * owd_ms)),
            min_rtt: Some(Duration::from_millis(2 * owd_ms)),
            probe_rtt: Some(Duration::from_millis(2 * owd_ms)),
            train_failed: bps.is_none(),
            owd_us: Some(owd_ms as f64 * 1e3),
            queueing: Duration::ZERO,
            bandwidth_bps: bps,
            kalman_bps: bps,
            rate_shown: bps.is_some(),
            express_share: 0.0,
            cost: 1.0,
            overflow: false,
            suspect: false,
            stalled: false,
        };
        let mut paths = [path(0, Some(8e6), 10), path(1, bps, owd_ms)];
        paths.iter_mut().for_each(edit);
        let ctx = SchedContext {
            now,
            paths: &paths,
            packet_bytes: 1_400,
            backlog_bytes: 400_000,
            queue_delay_limit: Duration::from_millis(100),
        };
        EarliestArrival::default().pick(&ctx)
    }

    #[test]
    fn a_thin_path_gets_no_datagram_it_would_deliver_past_the_limit() {
        let behind = |d: Decision| matches!(d, Decision::SendBehind { path: 1, .. });
        // A 2 Mbit/s path, a fifth of the bond, takes what the fixed line
        // cannot carry within the limit, however far: it is no thin path.
        assert!(behind(backlog_pick(Some(2e6), 50, |_| ())));
        assert!(behind(backlog_pick(Some(2e6), 150, |_| ())));
        // A 3G path in a fade (30 kbit/s, under 5 % of the bond) would
        // deliver a datagram 0.4 s late, and one whose train failed at no
        // known time: the receiver would hold every later number behind
        // it, so nothing goes.
        assert_eq!(backlog_pick(Some(30e3), 50, |_| ()), Decision::Wait);
        assert_eq!(backlog_pick(None, 50, |_| ()), Decision::Wait);
        // A thin path near enough still carries: 300 kbit/s delivers a
        // datagram 37 ms after its 40 ms lead, within the limit; 70 ms
        // further, not.
        assert!(behind(backlog_pick(Some(300e3), 50, |_| ())));
        assert_eq!(backlog_pick(Some(300e3), 80, |_| ()), Decision::Wait);
        // Priced at 30 kbit/s by light traffic alone (no sample under
        // load, no train): not known to be thin, it takes what the fixed
        // line cannot carry, and that shows its rate.
        let unshown = |p: &mut PathView| p.rate_shown = p.index == 0;
        assert!(behind(backlog_pick(Some(30e3), 50, unshown)));
    }

    #[test]
    fn a_tie_before_any_delay_is_known_goes_to_the_path_probes_found_nearer() {
        let near = Decision::Send(PathSet::one(1));
        let far = Decision::Send(PathSet::one(0));
        // A train measured the far path marginally faster: a tie.
        assert_eq!(first_pick(10.01e6, 10e6, |_| ()), near);
        // Within a tenth: still a tie; beyond it the faster path keeps it.
        assert_eq!(first_pick(10.9e6, 10e6, |_| ()), near);
        assert_eq!(first_pick(11.2e6, 10e6, |_| ()), far);
        assert_eq!(first_pick(18e6, 2e6, |_| ()), far);
        // Once both have one-way delays, those decide as before.
        assert_eq!(first_pick(10.01e6, 10e6, |p| p.owd_us = Some(0.0)), far);
        // A path the probes have not measured: no tie-break.
        assert_eq!(
            first_pick(10.01e6, 10e6, |p| if p.index == 0 {
                p.probe_rtt = None
            }),
            far
        );
    }

    #[test]
    fn a_path_whose_train_failed_is_not_tried_first() {
        let far = Decision::Send(PathSet::one(0));
        let near = Decision::Send(PathSet::one(1));
        let unmeasured = |p: &mut PathView| {
            if p.index == 0 {
                p.bandwidth_bps = None;
                p.kalman_bps = None;
            }
        };
        // An unmeasured path is tried first ...
        assert_eq!(first_pick(0.5e6, 8e6, unmeasured), far);
        // ... unless its train failed: the measured path carries.
        let failed = |p: &mut PathView| {
            unmeasured(p);
            p.train_failed = p.index == 0;
        };
        assert_eq!(first_pick(0.5e6, 8e6, failed), near);
    }
}
