//! Model-based congestion control in the spirit of BBR v1 (Cardwell et al.,
//! "BBR: Congestion-Based Congestion Control", ACM Queue 2016): the path is
//! modelled by its bottleneck bandwidth (windowed max of delivery-rate
//! samples over 10 rounds) and its propagation RTT (windowed min over 10 s).
//! The sender paces at `gain * bandwidth` and caps data in flight at
//! `1.25 * bandwidth * min_rtt` (see [`PROBE_BW_CWND_GAIN`]), plus 5 ms of
//! the path's rate (one to three packets, see [`BATCHING_ROOM_TIME`]) or,
//! when more, the bursts in which a jittery path acknowledges (see
//! [`AckAggregation`]).
//!
//! Why this is braid's default: random, non-congestive loss (radio links)
//! does not change the delivery rate of the packets that do arrive, so this
//! model keeps a 1 %-lossy path near its capacity, where loss-based AIMD
//! (CCID2, CUBIC) halves its window on every loss and collapses. Congestion
//! shows up instead as a delivery rate that stops growing while the RTT
//! rises, which the bandwidth/RTT model reads directly.
//!
//! Left out on purpose: ProbeRTT (a datagram tunnel rarely holds a standing
//! queue of its own, and draining to 4 packets every 10 s costs throughput),
//! and BBR v2's loss-based inflight bound.

use std::time::Duration;

use super::ack_aggregation::AckAggregation;
use super::windowed_max::WindowedMax;
use super::{AckSample, Controller, MSS};
use crate::time::Instant;

/// 2/ln(2): the smallest gain that doubles the delivery rate each round.
const STARTUP_GAIN: f64 = 2.885;
/// ProbeBW's gain cycle, one phase per minimum RTT: a probe, a drain of
/// what the probe queued, then cruising. Its mean gain is 1 over any
/// whole cycle of 3 to 8 phases (see [`Bbr::with_probe_bw_phases`]).
const CYCLE_GAINS: [f64; 8] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
/// Fewest ProbeBW phases: a probe, a drain and the cruise phase that
/// Drain hands over to.
const MIN_CYCLE_PHASES: usize = 3;
/// Data in flight in ProbeBW, in bandwidth-delay products: enough for the
/// 1.25 probe. BBR v1's 2 lets up to one BDP wait at the bottleneck, which
/// overflows a link buffer of one BDP (the lab's and the simulator's
/// default) whenever the bandwidth estimate runs high; every such drop is
/// a loss for the TCP flows inside the tunnel, which then cut their
/// windows and never grow them far enough to use a slower path. Measured
/// when 1.25 replaced 2: one TCP flow through the session got 0.95
/// instead of 0.79 of the ideal on 8 + 2 Mbit/s (10/40 ms) and 0.90
/// instead of 0.59 on 10 + 10 Mbit/s (5/50 ms), 30 s simulated; CBR runs
/// lost less after sending (1.2 % to 0.2 % on 64 + 60 Mbit/s, jitter 5 ms)
/// with the same utilization (BENCHMARKS.md, "Tunnel (lab)").
pub const PROBE_BW_CWND_GAIN: f64 = 1.25;
const BW_WINDOW_ROUNDS: u64 = 10;
const MIN_RTT_WINDOW: Duration = Duration::from_secs(10);
/// A tunnel carries the aggregate of many flows, and on long paths every
/// startup round trip costs a round trip of the offered load.
const INITIAL_CWND: u64 = 64 * MSS;
/// The round trip [`INITIAL_CWND`] is sized for: on a shorter path, once
/// its minimum RTT is known, start-up's window is cut to the same rate
/// (64 packets per 100 ms, at least [`STARTUP_FLOOR_PACKETS`]) or the
/// model's target, whichever is larger. 64 packets in flight on a 10-ms
/// path are a 77 Mbit/s guess: on a 2 or 5 Mbit/s path whose link queue
/// holds 10 packets, start-up's first round trips overflowed it (55 drops
/// in 0.1 s on 18 + 2 Mbit/s at 100/5 ms), and an inner TCP took each
/// such drop as congestion in its own slow start (BENCHMARKS.md,
/// "Start-up").
const INITIAL_WINDOW_RTT: Duration = Duration::from_millis(100);
const MIN_CWND: u64 = 4 * MSS;
/// Room in the window beyond the model's target, in time at the path's
/// rate: the receiver's longest ack delay (2 ms) and the pacer's catch-up
/// credit (3 ms, `path::PACING_CREDIT`). A fixed three packets was that on
/// a 7.2 Mbit/s path but 18 ms on a 2 Mbit/s one, more than its
/// bandwidth-delay product at 5 ms one way: the window held a standing
/// queue of 3-4 packets there, each expiry of the minimum RTT re-took that
/// queue as the path's delay, and a 64 kbit/s flow beside a TCP transfer
/// waited 51 ms (p50) on what was the fastest path (BENCHMARKS.md, "The
/// small flow on a 2 Mbit/s fast path").
const BATCHING_ROOM_TIME: Duration = Duration::from_millis(5);
/// The most time's worth of the path's rate ProbeBW's window adds for
/// acknowledgements that come in bursts.
const MAX_AGGREGATION: Duration = Duration::from_millis(100);
/// Packets per round trip startup paces at least (Linux's initial window).
const STARTUP_FLOOR_PACKETS: u64 = 10;
/// Before the first RTT sample, pace as if the RTT were this.
const INITIAL_RTT_GUESS: Duration = Duration::from_millis(10);
/// The shortest round trip a window is sized for. A path RTT below it is
/// the hosts' (two daemons on one veth measured 20 µs), while the loop
/// that clocks the window out is longer: the peer batches its acks (up to
/// 2 ms when few packets come) and a busy daemon answers late. Sized by
/// the 20 µs minimum, the window was 4 packets per path and one TCP flow
/// through the tunnel on two veth paths got 0.15-0.20 Gbit/s, its excess
/// going stale in the send queue (BENCHMARKS.md, "Tunnel (lab)").
const MIN_WINDOW_RTT: Duration = Duration::from_millis(1);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Startup,
    Drain,
    ProbeBw,
}

#[derive(Debug, Clone)]
pub struct Bbr {
    mode: Mode,
    max_bw: WindowedMax,
    min_rtt: Option<Duration>,
    min_rtt_stamp: Instant,
    round: u64,
    /// The clock of `max_bw`'s window: every round until the path has
    /// carried load, then only rounds that do not begin with an
    /// app-limited sample (underused ones count: data waited).
    /// Once load has shown the path's rate, light traffic neither ages nor
    /// expires it (as Linux's BBR keeps its model through app-limited
    /// periods): ten rounds of pings between two transfers otherwise
    /// expired a 20-Mbit/s path's rate, the first samples of the next
    /// transfer's slow start became the estimate, and ProbeBW's quarter
    /// per probe held the inner TCP to 3.5-5 Mbit/s for its 10 s (lab,
    /// BENCHMARKS.md, "Light traffic between two transfers"). Before
    /// that, light samples expire as any: a seed, or a start-up that
    /// light traffic ended, is not where the model stays.
    bw_round: u64,
    next_round_delivered: u64,
    full_bw: f64,
    full_bw_rounds: u32,
    cycle_index: usize,
    /// Phases of [`CYCLE_GAINS`] ProbeBW goes through: a probe every this many minimum RTTs.
    cycle_phases: usize,
    cycle_stamp: Instant,
    /// Bandwidth estimate when the current gain phase began.
    cycle_start_bw: f64,
    /// Bandwidth estimate when the last probe (gain 1.25) began.
    probe_start_bw: f64,
    /// Round of the latest full-load (not app-limited) rate sample.
    full_load_round: u64,
    /// The last startup ended with a full-load sample in its last rounds:
    /// it found the path's rate, not some light traffic's.
    startup_loaded: bool,
    /// A rate measured apart from the traffic ([`Controller::seed_bandwidth`]),
    /// until a full-load sample.
    seed_bps: Option<f64>,
    /// Room in ProbeBW's window for acknowledgements that come in bursts.
    ack_aggregation: AckAggregation,
    cwnd: u64,
}

impl Default for Bbr {
    fn default() -> Self {
        Bbr::new()
    }
}

impl Bbr {
    pub fn new() -> Bbr {
        Bbr {
            mode: Mode::Startup,
            max_bw: WindowedMax::new(BW_WINDOW_ROUNDS),
            min_rtt: None,
            min_rtt_stamp: Instant::ZERO,
            round: 0,
            bw_round: 0,
            next_round_delivered: 0,
            full_bw: 0.0,
            full_bw_rounds: 0,
            cycle_index: 0,
            cycle_phases: CYCLE_GAINS.len(),
            cycle_stamp: Instant::ZERO,
            cycle_start_bw: 0.0,
            probe_start_bw: 0.0,
            full_load_round: 0,
            startup_loaded: false,
            seed_bps: None,
            ack_aggregation: AckAggregation::new(),
            cwnd: INITIAL_CWND,
        }
    }

    /// Probes for bandwidth every `phases` minimum RTTs (3 to 8, BBR v1's
    /// 8 by default) instead: the cycle keeps its probe and drain and
    /// drops cruise phases, so its mean gain stays 1 and no standing
    /// queue builds. A probe finds at most a quarter more, so a shorter
    /// cycle follows a path whose rate climbs (a cellular link leaving a
    /// fade) in fewer round trips, at the price of a probe's queue more
    /// often.
    pub fn with_probe_bw_phases(mut self, phases: usize) -> Bbr {
        self.cycle_phases = phases.clamp(MIN_CYCLE_PHASES, CYCLE_GAINS.len());
        self
    }

    fn pacing_gain(&self) -> f64 {
        match self.mode {
            Mode::Startup => STARTUP_GAIN,
            Mode::Drain => 1.0 / STARTUP_GAIN,
            Mode::ProbeBw => CYCLE_GAINS[self.cycle_index],
        }
    }

    fn cwnd_gain(&self) -> f64 {
        match self.mode {
            Mode::Startup | Mode::Drain => STARTUP_GAIN,
            Mode::ProbeBw => PROBE_BW_CWND_GAIN,
        }
    }

    fn bdp_bytes(&self, gain: f64) -> Option<u64> {
        let bw = self.max_bw.get()?;
        let rtt = self.min_rtt?.max(MIN_WINDOW_RTT);
        Some((gain * bw * rtt.as_secs_f64() / 8.0) as u64)
    }

    fn check_full_bw(&mut self) {
        let Some(bw) = self.max_bw.get() else { return };
        if bw >= self.full_bw * 1.25 {
            self.full_bw = bw;
            self.full_bw_rounds = 0;
        } else {
            self.full_bw_rounds += 1;
        }
    }

    fn update_mode(&mut self, now: Instant, in_flight: u64) {
        match self.mode {
            Mode::Startup if self.full_bw_rounds >= 3 => {
                self.mode = Mode::Drain;
                self.startup_loaded = self.round <= self.full_load_round + 3;
            }
            Mode::Drain if self.bdp_bytes(1.0).is_some_and(|bdp| in_flight <= bdp) => {
                self.mode = Mode::ProbeBw;
                self.cycle_index = 2;
                self.cycle_stamp = now;
            }
            Mode::ProbeBw => {
                let phase = self.min_rtt.unwrap_or(INITIAL_RTT_GUESS);
                if now - self.cycle_stamp >= phase {
                    let bw = self.max_bw.get().unwrap_or(0.0);
                    // The samples of a probe (phase 0) return during the
                    // phase after it. If the probe found 10 % more, probe
                    // again at once (as BBR v2's ProbeBW_UP keeps climbing):
                    // when a sibling path fails and its load arrives here,
                    // the rate climbs in a few RTTs, not a few 8-RTT cycles.
                    self.cycle_index = match self.cycle_index {
                        0 => {
                            self.probe_start_bw = self.cycle_start_bw;
                            1
                        }
                        1 if bw >= self.probe_start_bw * 1.1 => 0,
                        i => (i + 1) % self.cycle_phases,
                    };
                    self.cycle_stamp = now;
                    self.cycle_start_bw = bw;
                }
            }
            _ => {}
        }
    }

    /// ProbeBW's room for acknowledgements that come in bursts (see
    /// [`AckAggregation`]), at most [`MAX_AGGREGATION`] of the path's rate
    /// (as Linux's BBR).
    fn aggregation_allowance(&self) -> u64 {
        if self.mode != Mode::ProbeBw {
            return 0;
        }
        let most = self
            .max_bw
            .get()
            .map_or(0, |bw| (bw / 8.0 * MAX_AGGREGATION.as_secs_f64()) as u64);
        self.ack_aggregation.extra_bytes().min(most)
    }

    /// What the path's rate carries in [`BATCHING_ROOM_TIME`], between one
    /// and three packets; three in start-up, whose early estimates are
    /// only its first samples.
    fn batching_room(&self) -> u64 {
        if self.mode == Mode::Startup {
            return 3 * MSS;
        }
        let rate = self.max_bw.get().unwrap_or(0.0);
        ((rate / 8.0 * BATCHING_ROOM_TIME.as_secs_f64()) as u64).clamp(MSS, 3 * MSS)
    }

    /// A full-load sample in the current round. A startup that ended while the path
    /// carried only light traffic (no full-load sample in its last three
    /// rounds) measured that traffic, not the path, and earliest-arrival,
    /// pricing the path at it, then gives it only what the others cannot
    /// carry, so ProbeBW's quarter per probe may never find the rest: a
    /// transfer that began after 1 Mbit/s of other traffic got 0.05 of an
    /// 18 + 2 Mbit/s bond. Load on such a path probes again as at startup.
    /// A startup that ended under load is final: restarting paths that carry
    /// steady app-limited load (tried) overfilled their links' queues
    /// (BENCHMARKS.md, "Light traffic, then a transfer").
    fn on_full_load(&mut self) {
        if self.mode == Mode::ProbeBw && !self.startup_loaded {
            self.restart_startup();
        }
        self.full_load_round = self.round;
        self.seed_bps = None;
    }

    /// Some sample has shown the path under full load.
    fn loaded_once(&self) -> bool {
        self.full_load_round > 0
    }

    /// Start-up again, looking for the path's rate from the current estimate.
    fn restart_startup(&mut self) {
        self.mode = Mode::Startup;
        self.full_bw = 0.0;
        self.full_bw_rounds = 0;
    }
}

/// Start-up's least rate for a round trip of `rtt_secs`: ten packets per
/// round trip ([`STARTUP_FLOOR_PACKETS`]), before its gain.
fn startup_floor_bps(rtt_secs: f64) -> f64 {
    (STARTUP_FLOOR_PACKETS * MSS) as f64 * 8.0 / rtt_secs.max(1e-4)
}

/// Start-up's window for a path of minimum RTT `min_rtt`, before the
/// model's target outgrows it (see [`INITIAL_WINDOW_RTT`]).
fn initial_window(min_rtt: Option<Duration>) -> u64 {
    let Some(rtt) = min_rtt else {
        return INITIAL_CWND;
    };
    let share = (rtt.as_secs_f64() / INITIAL_WINDOW_RTT.as_secs_f64()).min(1.0);
    ((INITIAL_CWND as f64 * share) as u64).max(STARTUP_FLOOR_PACKETS * MSS)
}

impl Controller for Bbr {
    fn name(&self) -> &'static str {
        "bbr"
    }

    fn on_sent(&mut self, _now: Instant, _bytes: u64, _in_flight: u64) {}

    fn on_ack(&mut self, now: Instant, ack: &AckSample) {
        let round_start = ack.prior_delivered >= self.next_round_delivered;
        if round_start {
            self.next_round_delivered = ack.delivered;
            self.round += 1;
            if !ack.app_limited || !self.loaded_once() {
                self.bw_round += 1;
            }
        }
        if let Some(rate) = ack.delivery_rate_bps {
            if !ack.app_limited && !ack.underused {
                self.on_full_load();
            }
            // App-limited samples understate the path: use them only to
            // raise. So do a seeded path's underused ones: until the path
            // carries load, the seed is all that is known of its rate. A
            // 20-Mbit/s path's seed otherwise gave way to the first 100 ms
            // of an inner TCP's slow start, whose trickle then priced the
            // path (80 kbit/s, a 4-packet window, each packet sent with
            // nothing in flight, so never a full-load sample) and left it
            // nearly unused for the transfer (the lab's data-cap test, one
            // run in four).
            let light = ack.app_limited || (self.seed_bps.is_some() && ack.underused);
            if !light || self.max_bw.get().is_none_or(|m| rate > m) {
                self.max_bw.update(self.bw_round, rate);
            } else if self.seed_bps.is_none() && !self.loaded_once() {
                self.max_bw.expire(self.bw_round);
            }
        }
        if let Some(rtt) = ack.rtt {
            let expired = now - self.min_rtt_stamp > MIN_RTT_WINDOW;
            if self.min_rtt.is_none_or(|m| rtt <= m) || expired {
                self.min_rtt = Some(rtt);
                self.min_rtt_stamp = now;
            }
        }
        if round_start && self.mode == Mode::Startup {
            self.check_full_bw();
        }
        self.update_mode(now, ack.bytes_in_flight);
        if let (Mode::ProbeBw, Some(bw)) = (self.mode, self.max_bw.get()) {
            self.ack_aggregation
                .on_ack(now, self.round, ack.bytes, bw, self.cwnd);
        }
        match self.bdp_bytes(self.cwnd_gain()) {
            Some(target) => {
                // Room for the receiver's batched acknowledgements and the
                // pacer's catch-up, or the bursts the path's
                // acknowledgements have shown, whichever is more.
                let target = target + self.aggregation_allowance().max(self.batching_room());
                // In startup the window grows only while below the target
                // (as BBR v1 does): growing it by every ack whatever the
                // model, it reached several times the path's BDP before
                // startup ended and overflowed the bottleneck's queue.
                self.cwnd = match self.mode {
                    Mode::Startup if self.cwnd >= target => {
                        self.cwnd.min(initial_window(self.min_rtt).max(target))
                    }
                    Mode::Startup => self.cwnd + ack.bytes,
                    _ => (self.cwnd + ack.bytes).min(target),
                }
                .max(MIN_CWND);
            }
            None => self.cwnd += ack.bytes,
        }
    }

    fn on_loss(&mut self, _now: Instant, _sent: Instant, _bytes: u64, _in_flight: u64) {
        // Loss alone is not read as congestion; see the module comment.
    }

    fn on_timeout(&mut self, _now: Instant) {
        // Silence is a blackout or a burst of loss, not congestion: the
        // model stays, and the path's liveness (see `path::Liveness`) keeps
        // the scheduler from sending into a dead path. Collapsing the window
        // here cost a path with bursty loss most of its capacity: every
        // burst brought a timeout, then a few packets per doubled timeout.
    }

    fn cwnd_bytes(&self) -> u64 {
        self.cwnd
    }

    fn pacing_rate_bps(&self) -> Option<f64> {
        let gain = self.pacing_gain();
        let rtt = self
            .min_rtt
            .unwrap_or(INITIAL_RTT_GUESS)
            .as_secs_f64()
            .max(1e-4);
        Some(match self.max_bw.get() {
            // In startup the rate never falls below STARTUP_FLOOR_PACKETS
            // per round trip, as Linux's BBR paces at least its initial
            // window per round trip until it finds the path's bandwidth:
            // an estimate made of a few app-limited packets (a ping before
            // a transfer) would otherwise pace the transfer's first round
            // trips at a fraction of the path, and the queue behind them
            // goes stale.
            Some(bw) if self.mode == Mode::Startup => {
                (gain * bw).max(STARTUP_GAIN * startup_floor_bps(rtt))
            }
            Some(bw) => gain * bw,
            None => STARTUP_GAIN * INITIAL_CWND as f64 * 8.0 / rtt,
        })
    }

    fn bandwidth_bps(&self, _srtt: Option<Duration>) -> Option<f64> {
        self.max_bw.get()
    }

    /// Taken only before any full-load sample (in start-up, or after one
    /// that light traffic ended): the model starts from the measured rate
    /// as from one a start-up found, and cruises in ProbeBW (its window
    /// grows with acknowledgements up to 1.25 times the rate's BDP once
    /// the RTT is known). A first run of a fresh tunnel otherwise meets its
    /// slower paths priced at the trickle they carried before the faster
    /// ones filled (BENCHMARKS.md, "Packet trains"). Refused after a few
    /// pings had ended start-up, the seed reached only the Kalman filter,
    /// which then kept the scheduler from trying the path at once while
    /// BBR priced it at the pings' rate: a transfer after them left a
    /// 20-Mbit/s path unused (the lab's data-cap test, one run in five).
    fn seed_bandwidth(&mut self, bps: f64) -> bool {
        if self.full_load_round > 0 || self.seed_bps.is_some() || bps.is_nan() || bps <= 0.0 {
            return false;
        }
        self.max_bw.update(self.bw_round, bps);
        self.full_bw = bps;
        self.mode = Mode::ProbeBw;
        self.cycle_index = 2;
        // Not final: the first full-load sample starts up from the seed
        // (see `on_full_load`), so that a seed too low, or one a trickle
        // sample ends, is not where the model stays.
        self.startup_loaded = false;
        self.seed_bps = Some(bps);
        true
    }

    /// A path that has carried only light traffic lately (no full-load
    /// sample in its last rounds, an estimate below start-up's floor of ten
    /// packets per round trip) knows only that traffic's rate: it starts
    /// up again, so that what it inherits from a dead path is sent
    /// at start-up's pace, not at a quarter more per probe cycle. In the
    /// lab the tunnel's reverse direction, carrying the acknowledgements of
    /// a 112-Mbit/s TCP flow on two paths, paced them on the survivor at
    /// its share's old rate for about a second after a cut, dropped the
    /// ones that went stale, and the flow ran at 41-48 Mbit/s of 54.
    /// Any other path keeps its model: start-up's pace on a path already
    /// in use overflowed its buffer at every outage of the other (most-free-
    /// cwnd over the LTE trace at 110 % load: 89 % -> 75 % of the capacity
    /// without the floor condition).
    fn on_load_shift(&mut self) {
        let recent = |round: u64| self.round <= round + 3;
        let floor_bps = self.min_rtt.map(|rtt| startup_floor_bps(rtt.as_secs_f64()));
        let below_floor = matches!((self.max_bw.get(), floor_bps), (Some(bw), Some(f)) if bw < f);
        let light = below_floor && !recent(self.full_load_round);
        if light && self.mode != Mode::Startup {
            self.restart_startup();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An acknowledgement of one MSS, not app-limited: `delivered` bytes in
    /// all, `prior` of them when the packet left, `in_flight` MSS in flight.
    fn full_ack(
        rate: Option<f64>,
        rtt: Duration,
        prior: u64,
        delivered: u64,
        in_flight: u64,
    ) -> AckSample {
        AckSample {
            bytes: MSS,
            rtt: Some(rtt),
            delivery_rate_bps: rate,
            app_limited: false,
            underused: false,
            prior_delivered: prior,
            delivered,
            bytes_in_flight: in_flight * MSS,
        }
    }

    /// Acks `acks` packets of a perfect path of `rate_bps` and `rtt`, one
    /// MSS per packet time, each sent when `lag` MSS had been delivered
    /// before it, with `in_flight` MSS in flight; the time of the last ack.
    fn steady(
        c: &mut Bbr,
        (rate_bps, rtt): (f64, Duration),
        (lag, in_flight): (u64, u64),
        acks: usize,
    ) -> Instant {
        let mut delivered = 0u64;
        let mut now = Instant::from_nanos(0);
        let packet_time = Duration::from_secs_f64(MSS as f64 * 8.0 / rate_bps);
        for _ in 0..acks {
            now += packet_time;
            let prior = delivered.saturating_sub(lag * MSS);
            delivered += MSS;
            c.on_ack(
                now,
                &full_ack(Some(rate_bps), rtt, prior, delivered, in_flight),
            );
        }
        now
    }

    /// Drives the controller with a perfect 10 Mbit/s, 20 ms path.
    #[test]
    fn learns_bandwidth_and_leaves_startup() {
        let mut c = Bbr::new();
        let now = steady(&mut c, (10e6, Duration::from_millis(20)), (20, 10), 2_000);
        assert_eq!(c.mode, Mode::ProbeBw);
        assert_eq!(c.bandwidth_bps(None), Some(10e6));
        // cwnd = 1.25 * BDP (25 kB) + 3 MSS
        assert_eq!(c.cwnd_bytes(), 31_250 + 3 * MSS);
        // Random loss does not shrink the model.
        c.on_loss(now, now, MSS, 0);
        assert_eq!(c.cwnd_bytes(), 31_250 + 3 * MSS);
        // Nor does silence.
        c.on_timeout(now);
        assert_eq!(c.cwnd_bytes(), 31_250 + 3 * MSS);
    }

    /// A rate measured apart from the traffic starts the model in ProbeBW
    /// at that rate, cruising, while light traffic comes; load starts up
    /// from it. Once a start-up has full-load samples, the model is its
    /// own and a seed is refused.
    #[test]
    fn a_seed_is_taken_only_before_the_rate_was_found() {
        let rtt = Duration::from_millis(20);
        let mut c = Bbr::new();
        assert!(!c.seed_bandwidth(f64::NAN));
        assert!(!c.seed_bandwidth(0.0));
        assert_eq!(c.mode, Mode::Startup);
        assert!(c.seed_bandwidth(60e6));
        assert!(!c.seed_bandwidth(50e6), "one seed");
        assert_eq!(c.mode, Mode::ProbeBw);
        assert_eq!(c.bandwidth_bps(None), Some(60e6));
        assert_eq!(c.pacing_rate_bps(), Some(60e6));
        // The window grows with acknowledgements up to the seeded rate's:
        // 1.25 x 60 Mbit/s x 20 ms, and 5 ms at that rate (three packets
        // at most). Light traffic, app-limited or underused, for longer
        // than the window (ten rounds) keeps the seed.
        for k in 1..100u64 {
            let mut ack = full_ack(Some(80e3), rtt, (k - 1) * MSS, k * MSS, 1);
            ack.app_limited = k % 2 == 0;
            ack.underused = k % 2 == 1;
            // One packet's time at 50 Mbit/s apart: no aggregation.
            c.on_ack(Instant::from_nanos(k * 240_000), &ack);
        }
        assert_eq!(c.mode, Mode::ProbeBw);
        assert_eq!(c.bandwidth_bps(None), Some(60e6));
        assert_eq!(c.cwnd_bytes(), 187_500 + 3 * MSS);
        // The first full-load sample starts up again; the window expires
        // the seed like any sample (here at once: it is 99 rounds old).
        c.on_ack(
            Instant::from_nanos(100 * 240_000),
            &full_ack(Some(15e6), rtt, 99 * MSS, 100 * MSS, 1),
        );
        assert_eq!(c.mode, Mode::Startup);
        assert_eq!(c.bandwidth_bps(None), Some(15e6));
        assert_eq!(c.pacing_rate_bps(), Some(STARTUP_GAIN * 15e6));

        // A start-up that light traffic ended has no full-load sample: it
        // takes a seed.
        let (mut now, mut delivered) = (Instant::from_nanos(0), 0);
        let mut light = Bbr::new();
        light_rounds(&mut light, &mut now, &mut delivered, (80e3, 30), false);
        assert_ne!(light.mode, Mode::Startup);
        assert!(light.seed_bandwidth(20e6));
        assert_eq!(light.mode, Mode::ProbeBw);
        assert_eq!(light.bandwidth_bps(None), Some(20e6));

        let mut found = Bbr::new();
        steady(&mut found, (10e6, rtt), (20, 10), 2_000);
        assert!(!found.seed_bandwidth(60e6));
        assert_eq!(found.bandwidth_bps(None), Some(10e6));
        // Nor in a start-up again after one under load.
        found.restart_startup();
        assert!(!found.seed_bandwidth(60e6));
    }

    /// Startup ends once the measured rate has grown by less than a
    /// quarter over three rounds, even while it still grows a little.
    #[test]
    fn startup_ends_when_growth_per_round_falls_under_a_quarter() {
        let rtt = Duration::from_millis(20);
        // Each packet is sent when 20 fewer were delivered, so a round is
        // 20 packets; the rate grows by `growth` per round, continuously.
        let run = |growth: f64| {
            let mut c = Bbr::new();
            let mut now = Instant::from_nanos(0);
            let mut delivered = 0u64;
            for _ in 0..200 {
                let rounds = delivered as f64 / (20 * MSS) as f64;
                let rate = 10e6 * growth.powf(rounds);
                now += Duration::from_secs_f64(MSS as f64 * 8.0 / rate);
                let prior = delivered.saturating_sub(20 * MSS);
                delivered += MSS;
                c.on_ack(now, &full_ack(Some(rate), rtt, prior, delivered, 20));
            }
            c.mode
        };
        // 5 % a round is 16 % over three: less than a quarter.
        assert_ne!(run(1.05), Mode::Startup);
        assert_eq!(run(1.50), Mode::Startup);
    }

    /// ProbeBW phases a 10 Mbit/s, 20 ms path goes through in 2.4 s, and
    /// when each began.
    fn phases_seen(mut c: Bbr) -> (Vec<usize>, Vec<Instant>) {
        let rate = 10e6;
        let mut now = Instant::from_nanos(0);
        let mut delivered = 0u64;
        let mut phases: Vec<usize> = Vec::new();
        let mut changed_at: Vec<Instant> = Vec::new();
        // 10 Mbit/s: 1,200 µs per packet, about 17 packets per round trip.
        for _ in 0..2_000 {
            now += Duration::from_secs_f64(MSS as f64 * 8.0 / rate);
            let prior = delivered.saturating_sub(17 * MSS);
            delivered += MSS;
            let ack = full_ack(Some(rate), Duration::from_millis(20), prior, delivered, 16);
            c.on_ack(now, &ack);
            if c.mode == Mode::ProbeBw && phases.last() != Some(&c.cycle_index) {
                phases.push(c.cycle_index);
                changed_at.push(now);
            }
        }
        (phases, changed_at)
    }

    /// In ProbeBW the gain cycle moves one phase per minimum RTT through
    /// all eight phases, probing (phase 0) then draining (phase 1).
    #[test]
    fn probe_bw_cycles_through_every_phase_once_per_round_trip() {
        let (phases, changed_at) = phases_seen(Bbr::new());
        // 2.4 s: two full cycles of 8 x 20 ms after Startup and Drain.
        let cycle: Vec<usize> = (2..8).chain(0..8).chain(0..2).collect();
        assert!(phases.len() >= cycle.len(), "{phases:?}");
        assert_eq!(phases[..cycle.len()], cycle[..], "{phases:?}");
        // Each phase lasts a minimum RTT.
        for w in changed_at[1..].windows(2) {
            assert!(
                w[1] - w[0] >= Duration::from_millis(20),
                "a phase of {:?}",
                w[1] - w[0]
            );
        }
    }

    /// A shorter cycle keeps the probe and the drain and drops cruise
    /// phases, so its mean gain is still 1; it is bounded to 3..=8 phases.
    #[test]
    fn a_short_cycle_probes_more_often_and_stays_balanced() {
        let (phases, _) = phases_seen(Bbr::new().with_probe_bw_phases(3));
        let cycle: Vec<usize> = [2, 0, 1].repeat(10);
        assert!(phases.len() >= cycle.len(), "{phases:?}");
        assert_eq!(phases[..cycle.len()], cycle[..], "{phases:?}");
        for n in MIN_CYCLE_PHASES..=CYCLE_GAINS.len() {
            let mean = CYCLE_GAINS[..n].iter().sum::<f64>() / n as f64;
            assert!((mean - 1.0).abs() < 1e-12, "{n} phases: mean gain {mean}");
        }
        assert_eq!(Bbr::new().with_probe_bw_phases(1).cycle_phases, 3);
        assert_eq!(Bbr::new().with_probe_bw_phases(20).cycle_phases, 8);
    }

    /// Time until the estimate of a 40 ms path reaches 95 % of its rate
    /// after the rate doubles from 10 to 20 Mbit/s. The path delivers what
    /// the controller paced a round trip earlier, up to its rate, so only
    /// a probe (gain above 1) can show that more is there, as on a
    /// cellular link leaving a fade.
    fn time_to_follow_a_doubling(mut c: Bbr, step: Instant) -> Duration {
        let rtt = Duration::from_millis(40);
        let mut now = Instant::from_nanos(0);
        let mut delivered = 0u64;
        // (sent at, rate it was paced at), oldest first.
        let mut sent: std::collections::VecDeque<(Instant, f64)> = Default::default();
        while now < step + Duration::from_secs(10) {
            let capacity = if now < step { 10e6 } else { 20e6 };
            sent.push_back((now, c.pacing_rate_bps().unwrap()));
            while sent.len() > 1 && sent[1].0 + rtt <= now {
                sent.pop_front();
            }
            let rate = sent[0].1.min(capacity);
            now += Duration::from_secs_f64(MSS as f64 * 8.0 / rate);
            // A round trip's worth of packets at that rate is in flight.
            let in_flight = (rate * rtt.as_secs_f64() / 8.0) as u64 / MSS;
            let prior = delivered.saturating_sub(in_flight * MSS);
            delivered += MSS;
            c.on_ack(now, &full_ack(Some(rate), rtt, prior, delivered, in_flight));
            if now > step && c.bandwidth_bps(None).unwrap() >= 0.95 * 20e6 {
                return now - step;
            }
        }
        panic!("the estimate never reached the new rate");
    }

    /// The reliable stream's cycle of 3 (see `stream::path`) finds a
    /// doubled rate sooner than BBR v1's cycle of 8, wherever in the
    /// cycle the rate rises: it waits at most 2 phases for a probe, not 7.
    #[test]
    fn a_short_cycle_follows_a_rising_rate_sooner() {
        // The rate doubles at 3 s plus 0 to 7 phases of 40 ms.
        let steps = (0..8u64).map(|k| Instant::from_nanos(3_000_000_000 + k * 40_000_000));
        let worst = |phases: usize| {
            steps
                .clone()
                .map(|step| {
                    time_to_follow_a_doubling(Bbr::new().with_probe_bw_phases(phases), step)
                })
                .max()
                .unwrap()
        };
        let (v1, short) = (worst(8), worst(3));
        assert!(short * 3 < v1 * 2, "8 phases: {v1:?}, 3 phases: {short:?}");
    }

    /// One ack of one MSS at `now`, `delivered` bytes in all; a round is 20 packets.
    fn ack_one(c: &mut Bbr, now: Instant, delivered: u64, rate: Option<f64>, rtt: Duration) {
        let prior = delivered.saturating_sub(20 * MSS);
        c.on_ack(now, &full_ack(rate, rtt, prior, delivered, 10));
    }

    #[test]
    fn startup_grows_the_window_by_each_ack_until_its_target_only() {
        let rtt = Duration::from_millis(50);
        let t = Instant::from_nanos(1_000_000);
        // No rate sample yet: every ack grows the window.
        let mut c = Bbr::new();
        ack_one(&mut c, t, MSS, None, rtt);
        assert_eq!(c.cwnd_bytes(), INITIAL_CWND + MSS);
        // 100 Mbit/s x 50 ms: far below the target (2.885 BDP), it grows.
        let mut c = Bbr::new();
        for n in 1..=10 {
            ack_one(&mut c, t, n * MSS, Some(100e6), rtt);
        }
        assert_eq!(c.mode, Mode::Startup);
        assert_eq!(c.cwnd_bytes(), INITIAL_CWND + 10 * MSS);
        // 1 Mbit/s x 100 ms: the initial window is above the target, and
        // this is the round trip it is sized for: startup neither grows
        // nor cuts it.
        let mut c = Bbr::new();
        for n in 1..=10 {
            ack_one(&mut c, t, n * MSS, Some(1e6), Duration::from_millis(100));
        }
        assert_eq!(c.mode, Mode::Startup);
        assert_eq!(c.cwnd_bytes(), INITIAL_CWND);
        // 10 Mbit/s x 20 ms: the initial window (96 kB) is above the
        // target (2.885 x 25 kB + 3 packets), which is above the initial
        // window scaled to 20 ms (12.8 packets): cut to the target.
        let mut c = Bbr::new();
        for n in 1..=10 {
            ack_one(&mut c, t, n * MSS, Some(10e6), Duration::from_millis(20));
        }
        assert_eq!(c.mode, Mode::Startup);
        let target = (STARTUP_GAIN * 10e6 * 0.020 / 8.0) as u64 + 3 * MSS;
        assert_eq!(c.cwnd_bytes(), target);
        // 1 Mbit/s x 10 ms: the target (2.885 x 1250 B + 3 packets) is
        // below the window scaled to 10 ms (6.4 packets), itself below
        // Linux's 10: cut to 10 packets.
        let mut c = Bbr::new();
        for n in 1..=10 {
            ack_one(&mut c, t, n * MSS, Some(1e6), Duration::from_millis(10));
        }
        assert_eq!(c.cwnd_bytes(), STARTUP_FLOOR_PACKETS * MSS);
        // 1 Mbit/s x 50 ms: half the initial window.
        let mut c = Bbr::new();
        for n in 1..=10 {
            ack_one(&mut c, t, n * MSS, Some(1e6), Duration::from_millis(50));
        }
        assert_eq!(c.cwnd_bytes(), INITIAL_CWND / 2);
    }

    #[test]
    fn old_maxima_and_minima_expire() {
        let mut c = Bbr::new();
        let mut now = Instant::from_nanos(1_000_000);
        let mut delivered = 0;
        let mut run = |c: &mut Bbr, rate: f64, rtt_ms: u64, acks: u64| {
            for _ in 0..acks {
                now += Duration::from_secs_f64(MSS as f64 * 8.0 / rate);
                delivered += MSS;
                ack_one(c, now, delivered, Some(rate), Duration::from_millis(rtt_ms));
            }
        };
        run(&mut c, 10e6, 20, 400);
        assert_eq!(c.bandwidth_bps(None), Some(10e6));
        // The path halves: after 10 rounds (20 packets each) the old
        // maximum is gone.
        run(&mut c, 5e6, 20, 10 * 20 + 40);
        assert_eq!(c.bandwidth_bps(None), Some(5e6));
        assert_eq!(c.min_rtt, Some(Duration::from_millis(20)));
        // The round trip grows: the old minimum holds for 10 s, then goes.
        run(&mut c, 5e6, 30, 3_000);
        assert_eq!(c.min_rtt, Some(Duration::from_millis(20)));
        run(&mut c, 5e6, 30, 2_000);
        assert_eq!(c.min_rtt, Some(Duration::from_millis(30)));
    }

    /// `rounds` round trips of light traffic: one app-limited packet each,
    /// whose ack measures `rate_bps` (so each ack starts a round); then one
    /// full-load sample if `then_load`.
    fn light_rounds(
        c: &mut Bbr,
        now: &mut Instant,
        delivered: &mut u64,
        (rate_bps, rounds): (f64, u64),
        then_load: bool,
    ) {
        let rtt = Duration::from_millis(20);
        for i in 0..rounds + u64::from(then_load) {
            *now += rtt;
            let prior = *delivered;
            *delivered += MSS;
            let mut ack = full_ack(Some(rate_bps), rtt, prior, *delivered, 1);
            ack.app_limited = i < rounds;
            c.on_ack(*now, &ack);
        }
    }

    /// A startup that saw only light traffic ends at its rate; the first
    /// full-load sample after it probes again as at startup. One that
    /// ended under load is final, however light the traffic after it.
    #[test]
    fn load_after_a_startup_that_saw_only_light_traffic_probes_again() {
        let (mut now, mut delivered) = (Instant::from_nanos(0), 0);
        let mut light = Bbr::new();
        light_rounds(&mut light, &mut now, &mut delivered, (1e6, 30), false);
        assert_eq!(light.mode, Mode::ProbeBw);
        assert_eq!(light.bandwidth_bps(None), Some(1e6));
        light_rounds(&mut light, &mut now, &mut delivered, (1e6, 0), true);
        assert_eq!(light.mode, Mode::Startup);
        assert_eq!(light.pacing_gain(), STARTUP_GAIN);

        // The same when the light traffic was a path's overflow share: the
        // sender held data, but the path had little of its window in flight.
        let (mut now, mut delivered) = (Instant::from_nanos(0), 0);
        let mut overflow = Bbr::new();
        let rtt = Duration::from_millis(20);
        for _ in 0..30 {
            now += rtt;
            let prior = delivered;
            delivered += MSS;
            let mut ack = full_ack(Some(1e6), rtt, prior, delivered, 1);
            ack.underused = true;
            overflow.on_ack(now, &ack);
        }
        assert_eq!(overflow.mode, Mode::ProbeBw);
        light_rounds(&mut overflow, &mut now, &mut delivered, (1e6, 0), true);
        assert_eq!(overflow.mode, Mode::Startup);

        let mut loaded = Bbr::new();
        let mut now = steady(
            &mut loaded,
            (10e6, Duration::from_millis(20)),
            (20, 10),
            2_000,
        );
        let mut delivered = 2_000 * MSS;
        assert_eq!(loaded.mode, Mode::ProbeBw);
        light_rounds(&mut loaded, &mut now, &mut delivered, (1e6, 30), true);
        assert_eq!(loaded.mode, Mode::ProbeBw);
        // Nor do the light traffic and the first sample of the load after
        // it (a slow start's trickle) take the place of the rate load found.
        assert_eq!(loaded.bandwidth_bps(None), Some(10e6));
        // Ten rounds under load at a lower rate do.
        light_rounds(&mut loaded, &mut now, &mut delivered, (4e6, 0), true);
        for _ in 0..BW_WINDOW_ROUNDS {
            light_rounds(&mut loaded, &mut now, &mut delivered, (4e6, 0), true);
        }
        assert_eq!(loaded.bandwidth_bps(None), Some(4e6));
        // Underused rounds (data waited, but the scheduler gave the path
        // little) count as before: the sender was not idle.
        for _ in 0..=BW_WINDOW_ROUNDS {
            now += Duration::from_millis(20);
            let prior = delivered;
            delivered += MSS;
            let mut ack = full_ack(Some(1e6), Duration::from_millis(20), prior, delivered, 1);
            ack.underused = true;
            loaded.on_ack(now, &ack);
        }
        assert_eq!(loaded.bandwidth_bps(None), Some(1e6));
    }

    /// Another path went down: a path that has carried only light traffic,
    /// under start-up's floor of ten packets per round trip, starts up
    /// again; one that has carried load, or whose light traffic ran above
    /// that floor, keeps its model.
    #[test]
    fn a_load_shift_restarts_only_a_path_that_lately_knew_light_traffic() {
        let rtt = Duration::from_millis(20);
        // Loaded at 10 Mbit/s, then 30 rounds of 1 Mbit/s (the floor at 20
        // ms is 6 Mbit/s).
        let mut was_loaded = Bbr::new();
        let mut now = steady(&mut was_loaded, (10e6, rtt), (20, 10), 2_000);
        let mut delivered = 2_000 * MSS;
        assert_eq!(was_loaded.mode, Mode::ProbeBw);
        was_loaded.on_load_shift();
        assert_eq!(was_loaded.mode, Mode::ProbeBw, "loaded lately");
        light_rounds(&mut was_loaded, &mut now, &mut delivered, (1e6, 30), false);
        assert_eq!(was_loaded.bandwidth_bps(None), Some(10e6));
        was_loaded.on_load_shift();
        assert_eq!(was_loaded.mode, Mode::ProbeBw, "its rate is known");

        // Never loaded: its estimate is the light traffic's.
        let mut never_loaded = Bbr::new();
        let (mut now, mut delivered) = (Instant::from_nanos(0), 0);
        light_rounds(
            &mut never_loaded,
            &mut now,
            &mut delivered,
            (1e6, 30),
            false,
        );
        assert_eq!(never_loaded.mode, Mode::ProbeBw);
        assert_eq!(never_loaded.bandwidth_bps(None), Some(1e6));
        never_loaded.on_load_shift();
        assert_eq!(never_loaded.mode, Mode::Startup);
        assert_eq!(never_loaded.pacing_gain(), STARTUP_GAIN);

        // A path loaded at 1 Mbit/s: under the floor, but its estimate is
        // its rate.
        let mut slow = Bbr::new();
        steady(&mut slow, (1e6, rtt), (2, 1), 300);
        assert_eq!(slow.mode, Mode::ProbeBw);
        slow.on_load_shift();
        assert_eq!(slow.mode, Mode::ProbeBw);

        // Light traffic at 8 Mbit/s: above the floor, its estimate stands.
        let mut above = Bbr::new();
        let (mut now, mut delivered) = (Instant::from_nanos(0), 0);
        light_rounds(&mut above, &mut now, &mut delivered, (8e6, 30), false);
        assert_eq!(above.mode, Mode::ProbeBw);
        above.on_load_shift();
        assert_eq!(above.mode, Mode::ProbeBw);
    }

    /// Full load for a few rounds, then app-limited traffic that still grows
    /// by half a round for a while: startup ends well past three rounds
    /// after its last full-load sample, so what it found is the light
    /// traffic's rate, and load probes again.
    #[test]
    fn a_startup_that_ended_rounds_after_its_load_did_not_see_the_path() {
        let rtt = Duration::from_millis(20);
        let mut c = Bbr::new();
        let (mut now, mut delivered) = (Instant::from_nanos(0), 0);
        let rates = [
            1e6,
            1.5e6,
            2.25e6,
            2.25e6 * 1.5,
            2.25e6 * 2.25,
            2.25e6 * 3.375,
        ];
        for (i, rate) in rates.into_iter().chain([2.25e6 * 3.375; 4]).enumerate() {
            now += rtt;
            let prior = delivered;
            delivered += MSS;
            let mut ack = full_ack(Some(rate), rtt, prior, delivered, 1);
            // Full load in the first three rounds only.
            ack.app_limited = i >= 3;
            c.on_ack(now, &ack);
        }
        assert_eq!(c.mode, Mode::ProbeBw);
        assert!(c.full_load_round >= 2);
        assert!(c.round > c.full_load_round + 3);
        light_rounds(&mut c, &mut now, &mut delivered, (1e6, 0), true);
        assert_eq!(c.mode, Mode::Startup);
    }

    /// A 1 Gbit/s path whose RTT is 20 µs (two hosts on one veth): the
    /// window covers a round trip of `MIN_WINDOW_RTT`, not 4 packets.
    #[test]
    fn a_sub_millisecond_path_gets_a_window_for_a_millisecond() {
        let mut c = Bbr::new();
        steady(&mut c, (1e9, Duration::from_micros(20)), (2, 2), 20_000);
        assert_eq!(c.mode, Mode::ProbeBw);
        // 1.25 * 1 Gbit/s * 1 ms + 3 MSS; 20 µs would give the 4-MSS floor.
        assert_eq!(c.cwnd_bytes(), 156_250 + 3 * MSS);
    }

    /// Acks `acks` packets of a 20 ms path of `rate_bps`, `burst` at a time
    /// at the path's mean rate (all of a burst at once), each sent when
    /// `lag` MSS had been delivered before it, with `in_flight` MSS in flight.
    fn acks_in_bursts(
        c: &mut Bbr,
        (rate_bps, burst): (f64, u64),
        (lag, in_flight): (u64, u64),
        acks: u64,
    ) {
        let rtt = Duration::from_millis(20);
        let packet_time = Duration::from_secs_f64(MSS as f64 * 8.0 / rate_bps);
        let (mut now, mut delivered) = (Instant::from_nanos(0), 0u64);
        for i in 0..acks {
            if i % burst == 0 {
                now += packet_time * burst as u32;
            }
            let prior = delivered.saturating_sub(lag * MSS);
            delivered += MSS;
            c.on_ack(
                now,
                &full_ack(Some(rate_bps), rtt, prior, delivered, in_flight),
            );
        }
    }

    /// A 10 Mbit/s, 20 ms path whose acknowledgements come ten at a time,
    /// at the path's mean rate: the window makes room for the burst in
    /// place of the 3 MSS a steady path gets (above).
    #[test]
    fn bursts_of_acknowledgements_widen_the_window_by_a_burst() {
        let mut c = Bbr::new();
        acks_in_bursts(&mut c, (10e6, 10), (20, 10), 2_000);
        assert_eq!(c.mode, Mode::ProbeBw);
        // The first of each burst starts an epoch; the other nine are
        // ahead of the estimate.
        assert_eq!(c.cwnd_bytes(), 31_250 + 9 * MSS);
    }

    /// A 1 Mbit/s, 20 ms path acknowledging 20 packets at a time: the
    /// room for the bursts stops at 100 ms of the path's rate.
    #[test]
    fn the_room_for_bursts_is_at_most_100_ms_of_the_rate() {
        let mut c = Bbr::new();
        acks_in_bursts(&mut c, (1e6, 20), (2, 1), 4_000);
        assert_eq!(c.mode, Mode::ProbeBw);
        // 1.25 BDP (3 125 bytes) and 100 ms at 1 Mbit/s (12 500), not the
        // 19 packets of a burst.
        assert_eq!(c.cwnd_bytes(), 3_125 + 12_500);
    }

    /// Beyond the model's 1.25 BDP, the window keeps 5 ms of the path's
    /// rate, between one and three packets.
    #[test]
    fn the_room_beyond_the_model_is_5_ms_of_the_rate_within_one_to_three_packets() {
        let rtt = Duration::from_millis(20);
        // (rate, 1.25 BDP, room): 5 ms of 2 Mbit/s is 1 250 bytes, under a
        // packet; of 4 Mbit/s 2 500; of 10 Mbit/s 6 250, over three.
        for (rate, model, room) in [
            (2e6, 6_250, MSS),
            (4e6, 12_500, 2_500),
            (10e6, 31_250, 3 * MSS),
        ] {
            let mut c = Bbr::new();
            steady(&mut c, (rate, rtt), (20, 3), 2_000);
            assert_eq!(c.mode, Mode::ProbeBw, "{rate}");
            assert_eq!(c.cwnd_bytes(), model + room, "{rate}");
        }
    }

    /// A 100 kbit/s, 20 ms path: 1.25 BDP and a packet of room are below
    /// the 4-MSS floor.
    #[test]
    fn a_tiny_path_keeps_the_window_floor() {
        let mut c = Bbr::new();
        steady(&mut c, (100e3, Duration::from_millis(20)), (1, 0), 300);
        assert_eq!(c.mode, Mode::ProbeBw);
        assert_eq!(c.cwnd_bytes(), 4 * MSS);
    }

    /// Pacing is the mode's gain times the bandwidth estimate.
    #[test]
    fn pacing_follows_the_modes_gains() {
        let mut c = Bbr::new();
        // No estimate yet: startup's gain over the initial window per
        // guessed round trip (10 ms).
        let initial = 2.885 * (64 * MSS) as f64 * 8.0 / 0.010;
        assert!((c.pacing_rate_bps().unwrap() - initial).abs() < 1.0);
        steady(&mut c, (10e6, Duration::from_millis(20)), (20, 10), 2_000);
        let rate = |c: &Bbr| c.pacing_rate_bps().unwrap();
        // Startup paces at its gain over the estimate...
        c.mode = Mode::Startup;
        assert!((rate(&c) - 2.885 * 10e6).abs() < 1.0, "{}", rate(&c));
        c.mode = Mode::Drain;
        assert!((rate(&c) - 10e6 / 2.885).abs() < 1.0, "{}", rate(&c));
        c.mode = Mode::ProbeBw;
        for (index, gain) in [(0, 1.25), (1, 0.75), (2, 1.0), (7, 1.0)] {
            c.cycle_index = index;
            assert!(
                (rate(&c) - gain * 10e6).abs() < 1.0,
                "phase {index}: {}",
                rate(&c)
            );
        }
        // ...and never under its gain over 10 packets per round trip: an
        // estimate of 1 Mbit/s on a 20 ms path gives 6 Mbit/s x 2.885.
        let mut slow = Bbr::new();
        steady(&mut slow, (1e6, Duration::from_millis(20)), (20, 10), 3);
        assert_eq!(slow.mode, Mode::Startup);
        let floor = 2.885 * (10 * MSS) as f64 * 8.0 / 0.020;
        assert!((rate(&slow) - floor).abs() < 1.0, "{}", rate(&slow));
    }

    /// A BBR in ProbeBW with a 10 ms minimum RTT and `bw` as its maximum.
    fn probing(bw: f64) -> Bbr {
        let mut c = Bbr::new();
        c.mode = Mode::ProbeBw;
        c.min_rtt = Some(Duration::from_millis(10));
        c.max_bw.update(c.bw_round, bw);
        c
    }

    #[test]
    fn a_probe_that_found_a_tenth_more_probes_again_at_once() {
        let ms = |n: u64| Instant::from_duration(Duration::from_millis(n));
        // The probe starts at 10 Mbit/s; its samples come back in the
        // phase after it: 11.5 Mbit/s is 15 % more, 10.5 only 5 %.
        for (found, after) in [(11.5e6, 0), (10.5e6, 2)] {
            let mut c = probing(found);
            c.cycle_start_bw = 10e6;
            c.update_mode(ms(10), 0);
            assert_eq!((c.cycle_index, c.probe_start_bw), (1, 10e6));
            c.update_mode(ms(20), 0);
            assert_eq!(c.cycle_index, after, "found {found}");
        }
    }

    #[test]
    fn drain_lasts_until_in_flight_is_down_to_one_bdp() {
        let t = Instant::from_duration(Duration::from_millis(50));
        // 8 Mbit/s x 10 ms = 10 000 bytes.
        let mut c = probing(8e6);
        c.mode = Mode::Drain;
        c.update_mode(t, 12_000);
        assert_eq!(c.mode, Mode::Drain);
        c.update_mode(t, 8_000);
        assert_eq!(
            (c.mode, c.cycle_index, c.cycle_stamp),
            (Mode::ProbeBw, 2, t)
        );
    }
}
