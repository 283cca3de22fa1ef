//! The sending side of a bonded datagram session: a bounded send queue, the
//! scheduler that places each datagram on one or more paths, and per-path
//! state fed by the receiver's feedback.
//!
//! The queue has two stages. Datagrams first wait in a flow queue
//! ([`crate::fq`]: per-flow fair queueing with CoDel), which is where a
//! bulk flow's standing queue builds and is kept short. From there they
//! move, in the flow queue's order, into a short FIFO *scheduling window*,
//! where they get their global numbers and where the scheduler may send a
//! later datagram on a slow path ahead of earlier ones for a fast path. The
//! window holds about what that needs (each path's rate times its lead in
//! one-way delay over the slowest path, plus a little); a send-behind that
//! reaches deeper pulls more in. Each datagram's header also names the
//! previous number of its flow-queue bucket (`flow_gap`), so the receiver
//! can release one flow's datagrams without waiting for another's holes.
//!
//! A datagram sent on a slow path ahead of earlier ones goes out marked
//! as sent behind them ([`wire::BEHIND_FLAG`]): the earlier ones are
//! still here, and if the faster path sends them later than the scheduler
//! predicted, the receiver must not give their numbers up for lost.
//!
//! A sparse flow's datagram (a ping, a call, a game: the flow queue serves
//! it from its new-flows list) whose flow has nothing else in the window,
//! and whose flow's previous datagram should have landed by the time it
//! would, goes to the window's head instead of its tail: it would
//! otherwise wait behind the whole window, the fast path's lead in one-way
//! delay over the slowest path, which the flow queue was meant to spare
//! it. Its number is still the next one, so it goes out as an express
//! packet ([`crate::wire`]): the receiver must not take its arrival as a
//! sign that the lower numbers were sent.
//!
//! What waits in the queue ages by a `QueueClock`, which stands while no
//! path answers at all: the queue delay limit and CoDel bound the queue
//! the inner flows build, not a pause of the network or of a host.
//!
//! Method families, as in quinn-proto: `send` and `handle_*` take input,
//! `poll_*` give output, time is passed in.

use std::collections::VecDeque;
use std::time::Duration;

use crate::cc::CcKind;
use crate::fq::{Dequeued, FlowQueue, FqConfig};
use crate::path::{OwdClock, PathSender, PACING_CREDIT};
use crate::pool::BufferPool;
use crate::queue_clock::QueueClock;
use crate::receiver::SMALL_ACK_DELAY;
use crate::reinject::{InFlightPayloads, Kept};
use crate::sched::{
    self, Decision, PathInfo, PathSet, PathView, SchedContext, SchedError, Scheduler,
};
use crate::time::Instant;
use crate::wire::{
    self, DataHeader, Frame, Packet, SkipFrame, WireError, DATA_HEADER_LEN, IP_UDP_OVERHEAD,
};

#[derive(Debug, Clone)]
pub struct SenderConfig {
    pub paths: Vec<PathInfo>,
    /// `NAME[:key=value,...]`, see [`sched::build`].
    pub scheduler: String,
    pub cc: CcKind,
    /// Datagrams waiting longer than this are dropped from the queue head.
    /// `None`: 50 ms plus the spread of the paths' one-way delays (the
    /// backlog a scheduler that waits for the faster path needs), and at
    /// least the largest smoothed RTT.
    pub max_queue_delay: Option<Duration>,
    pub max_queue_bytes: usize,
    /// The flow queue's buckets, quantum and CoDel target; its byte limit
    /// is `max_queue_bytes`, its interval follows the paths' round trips.
    pub fq: FqConfig,
    /// Send again each datagram a path loses (its acknowledgements show
    /// later packets past it), or a skip notice when it is too old; data
    /// packets carry the flag that tells the receiver to wait for either.
    /// Without it, each such datagram gets a skip notice.
    pub resend_losses: bool,
}

impl SenderConfig {
    pub fn new(paths: Vec<PathInfo>) -> SenderConfig {
        SenderConfig {
            paths,
            scheduler: sched::DEFAULT.to_owned(),
            cc: CcKind::Bbr,
            max_queue_delay: None,
            max_queue_bytes: 8 << 20,
            fq: FqConfig::default(),
            resend_losses: false,
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SendError {
    #[error("send queue full")]
    QueueFull,
    #[error("datagram of {0} bytes does not fit one packet")]
    TooLarge(usize),
}

/// A packet to put on the wire on `path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Transmit {
    pub path: u8,
    pub data: Vec<u8>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct SenderCounters {
    pub accepted: u64,
    pub rejected_queue_full: u64,
    /// Dropped for waiting longer than the queue delay limit.
    pub dropped_stale: u64,
    /// Dropped by the flow queue's CoDel (a standing queue).
    pub dropped_codel: u64,
    /// Marked Congestion Experienced by the flow queue's CoDel instead
    /// (ECN-capable IP packets, `FqConfig::mark_ecn`).
    pub marked_codel: u64,
    /// Dropped from the longest flow because the queue was full.
    pub dropped_overflow: u64,
    /// Dropped by the scheduler (no path could take it).
    pub dropped_by_scheduler: u64,
    pub sent_datagrams: u64,
    /// Extra copies sent by redundant scheduling.
    pub sent_copies: u64,
    /// Datagrams a slow path carried ahead of earlier ones (`SendBehind`).
    pub sent_behind: u64,
    /// Sparse flows' datagrams sent from the head of the scheduling window,
    /// ahead of lower numbers (see the module documentation).
    pub sent_express: u64,
    /// Packets telling the receiver which numbers to give up: dropped
    /// unsent, or lost on a path and not sent again.
    pub skip_packets: u64,
    /// Datagrams a path had in flight when it went silent or was taken
    /// out of use, sent again on another path (see `crate::reinject`);
    /// not counted in `sent_datagrams` a second time...
    pub reinjected: u64,
    /// ...and their payload bytes.
    pub reinjected_bytes: u64,
    /// Datagrams put back for reinjection that had waited past the queue
    /// delay limit since they were offered: dropped, not sent again.
    pub reinject_stale: u64,
    /// Datagrams sent while the reinjection store was full, so not kept.
    pub reinject_not_kept: u64,
    /// Datagrams a live path lost, sent again (`resend_losses`); not
    /// counted in `sent_datagrams` a second time...
    pub resent: u64,
    /// ...and their payload bytes.
    pub resent_bytes: u64,
    /// Lost datagrams put back to be sent again that had waited past the
    /// queue delay limit since they were offered: dropped, the receiver
    /// told to skip them.
    pub resend_stale: u64,
    pub malformed_feedback: u64,
    /// Copies of a minor path's overdue datagrams queued for a quicker
    /// path (see `Sender::hedge_overdue`)...
    pub hedged: u64,
    /// ...those sent (not counted in `sent_datagrams`)...
    pub hedge_sent: u64,
    /// ...and those dropped unsent, with no skip notice (the original is
    /// still on its way): they waited past the queue delay limit, no
    /// quicker path was left to take them, or newer ones pushed them out.
    pub hedge_dropped: u64,
}

/// A datagram waiting to be scheduled. Its global number is given when it
/// is queued, so that a slow path may carry a later datagram before the
/// earlier ones leave on a faster path without changing their order at the
/// receiver.
#[derive(Debug, Clone)]
struct Queued {
    gseq: u64,
    /// Distance to the previous number of its flow-queue bucket (wire form).
    flow_gap: u16,
    payload: Vec<u8>,
    enqueued: Instant,
    /// Its flow-queue bucket; `None` once sent and put back to go again.
    bucket: Option<usize>,
    /// Sent once already, and why it goes again.
    again: Option<Again>,
    /// A sparse flow's datagram put at the head of the window, ahead of
    /// lower numbers, and sent as an express packet. The path that carries
    /// it does not take its number as the floor for what it carries next
    /// (the window's lower numbers may still follow it there): numbers
    /// then fall along that path once, and the packet after it carries an
    /// unknown `prev_gap`.
    express: bool,
}

/// Why a datagram already sent is queued again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Again {
    /// Its path went silent or out of use (`Sender::reinject_from`).
    PathDied,
    /// Its path lost it (`SenderConfig::resend_losses`).
    Lost,
}

/// A copy of a datagram still in flight on minor path `from`, which a
/// higher number passed on a quicker path long enough ago that the
/// receiver is waiting for it (see `Sender::hedge_overdue`).
#[derive(Debug)]
struct OverdueCopy {
    from: usize,
    q: Queued,
}

/// The most a minor path's delays count for in the queue's sizing: the
/// slowest major path's plus [`MINOR_LEAD`] (unbounded with no minor path,
/// no measured major one, or re-sends off).
#[derive(Debug, Clone, Copy)]
struct MinorCeiling {
    minor: PathSet,
    /// Smoothed one-way delay, µs.
    owd_us: f64,
    srtt: Duration,
}

/// What the paths' current estimates make of the queue, refreshed on every
/// acknowledgement.
#[derive(Debug, Clone, Copy, PartialEq)]
struct QueueSizing {
    /// The scheduling window's budget (see [`window_budget`]).
    window_budget: u64,
    /// Queued datagrams older than this are dropped: 50 ms plus the spread
    /// of the paths' one-way delays, at least a round trip of the slowest
    /// path, at most a second (unless the configuration fixes it).
    queue_delay_limit: Duration,
    /// CoDel's interval: a round trip of the slowest path, 100 ms to 1 s.
    codel_interval: Duration,
}

/// The spread of smoothed one-way delays in µs, in seconds (at most one).
fn owd_spread_secs(owds_us: impl Iterator<Item = f64>) -> f64 {
    let (lo, hi) = owds_us.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), o| {
        (lo.min(o), hi.max(o))
    });
    if hi >= lo {
        ((hi - lo) / 1e6).min(1.0)
    } else {
        0.0
    }
}

/// How soon path `p` answers what it is sent: a round trip, plus the
/// longest the receiver holds an acknowledgement (`None` before a round
/// trip is measured).
fn answer_within(p: &PathSender) -> Option<Duration> {
    p.rtt.srtt().map(|rtt| rtt + SMALL_ACK_DELAY)
}

/// What the sender tracks of one flow-queue bucket.
#[derive(Debug, Clone, Copy, Default)]
struct BucketTrack {
    /// Global number last given to one of its datagrams.
    last_gseq: Option<u64>,
    /// Its datagrams in the scheduling window.
    in_window: u32,
    /// When and on which path its last datagram was sent.
    last_sent: Option<(Instant, usize)>,
}

impl BucketTrack {
    /// Its next datagram may go ahead of the window: none of its own waits
    /// there to be passed, and the last one sent should have landed.
    fn may_pass(&self, paths: &[PathSender], now: Instant) -> bool {
        self.in_window == 0 && landed(paths, self.last_sent, now)
    }
}

/// Whether a flow's last datagram, `sent` at a time on a path, should have
/// arrived by the time one sent now on the quickest path would: it was sent
/// at least its path's lead in one-way delay floor over the quickest ago (a
/// path without delay samples counts as quickest).
fn landed(paths: &[PathSender], sent: Option<(Instant, usize)>, now: Instant) -> bool {
    let Some((at, path)) = sent else {
        return true;
    };
    let floor = |p: &PathSender| p.owd.has_samples().then(|| p.owd.floor_us(now));
    let lead_us = match floor(&paths[path]) {
        Some(f) => f - paths.iter().filter_map(floor).fold(f, f64::min),
        None => 0.0,
    };
    (now - at).as_secs_f64() * 1e6 >= lead_us
}

fn wire_bytes(payload: usize) -> u64 {
    wire::ip_packet_len(payload) as u64
}

/// What the scheduling window must hold so that a slow path can carry
/// datagrams that the faster paths will not have delivered before it
/// does: what each path delivers while the slowest one's packet is on its
/// way (its rate times its lead in one-way delay, at most a second's
/// worth), plus [`WINDOW_SLACK`], and at least four full datagrams per
/// path. A datagram entering the window waits behind about that much, so
/// it is kept to what is needed. `estimated` yields (rate in bit/s,
/// smoothed one-way delay in µs) of each path that has both; with none,
/// the budget is [`INITIAL_WINDOW_BYTES`]. Two passes over `estimated`,
/// so nothing is collected.
fn window_budget<I>(estimated: impl Fn() -> I, paths: usize) -> u64
where
    I: Iterator<Item = (f64, f64)>,
{
    if estimated().next().is_none() {
        return INITIAL_WINDOW_BYTES;
    }
    let slowest = estimated().map(|e| e.1).fold(f64::MIN, f64::max);
    let slack = WINDOW_SLACK.as_secs_f64();
    let bytes: f64 = estimated()
        .map(|(bps, owd_us)| bps / 8.0 * (((slowest - owd_us) / 1e6).min(1.0) + slack))
        .sum();
    let floor = 4 * wire_bytes(MAX_DATAGRAM) * paths as u64;
    (bytes as u64).max(floor)
}

/// Largest datagram the sender accepts: a 1500-byte path MTU less IPv4/UDP
/// headers and braid's own.
pub const MAX_DATAGRAM: usize = 1500 - IP_UDP_OVERHEAD - DATA_HEADER_LEN;

/// Size of the sender's buffers: a data packet carrying the largest
/// datagram.
pub const BUFFER_CAPACITY: usize = DATA_HEADER_LEN + MAX_DATAGRAM;

/// Shortest time between two skip notices.
const SKIP_NOTICE_INTERVAL: Duration = Duration::from_millis(5);

/// Skip frames per notice: 2 + 64 * 13 bytes, well under the MTU.
const MAX_SKIP_FRAMES: usize = 64;

/// Time of transmission the scheduling window holds beyond what the
/// paths' one-way delay leads require.
const WINDOW_SLACK: Duration = Duration::from_millis(5);

/// Scheduling window before any path has a rate estimate.
const INITIAL_WINDOW_BYTES: u64 = 64 * 1024;

/// A live path whose rate estimate is under this share of the live paths'
/// total is minor: copies of its overdue datagrams go on the quicker
/// paths (see `Sender::hedge_overdue`). Copying all it sends would cost
/// the others at most this share; copying a major path's (an LTE path's
/// beside a fixed line, late by tens of milliseconds half the time) cost
/// the fixed line more than the copies gave back (BENCHMARKS.md).
const MINOR_SHARE: f64 = 0.1;

/// How much longer than the slowest major path's a minor path's delays
/// count for at most in the queue's sizing (window, delay limit, CoDel
/// interval), when re-sends are on. The window holds each path's lead over
/// the slowest one, and every inner flow waits behind it: a 3G path whose
/// smoothed round trip reaches a second in its fades had the queue hold
/// about that, and one CUBIC flow beside it ran at a 531-ms round trip
/// (p50) for the 1.5 % of the bond the path carried. Its overdue datagrams
/// are copied onto the quicker paths instead, and the queue need only ride
/// out the time a copy takes to fill the hole: the longer way back of the
/// minor path's acknowledgement, the copy's 30-ms margin and the quicker
/// path's round trip. 150 ms: the inner round trip 531 -> 177 ms (p50) at
/// the same goodput; 100 ms cost a flow that starts in a fade 6 % of its
/// goodput (BENCHMARKS.md, "A minor path's lead").
const MINOR_LEAD: Duration = Duration::from_millis(150);

/// Longest `Sender::return_lead`.
const MAX_RETURN_LEAD: Duration = Duration::from_secs(1);

/// Copies waiting for a quicker path at most; more drop the oldest.
const MAX_COPIES: usize = 64;

/// How much later than it should a minor path's datagram that the receiver
/// waits for may be acknowledged before a copy goes on a quicker path
/// (see `Sender::mark_passed`).
const HEDGE_MARGIN: Duration = Duration::from_millis(30);

/// CoDel's interval is at least this (RFC 8289's default)...
const MIN_CODEL_INTERVAL: Duration = Duration::from_millis(100);

/// ...and its target this share of the interval.
const CODEL_TARGET_SHARE: f64 = 0.25;

#[derive(Debug)]
pub struct Sender {
    paths: Vec<PathSender>,
    /// The path the feedback packet being read came on, when the caller
    /// knows it ([`Sender::handle_feedback_on`]).
    feedback_path: Option<u8>,
    scheduler: Box<dyn Scheduler>,
    config: SenderConfig,
    /// First stage: per-flow queues, no global numbers yet.
    flows: FlowQueue,
    /// Second stage, the scheduling window: numbered, in order of number
    /// but for its first `head_len`...
    queue: VecDeque<Queued>,
    /// ...datagrams sent again below every number after them, then sparse
    /// flows' (`Queued::express`).
    head_len: usize,
    queue_bytes: usize,
    /// Wire bytes the window may hold.
    window_budget: u64,
    next_gseq: u64,
    /// What is known of each flow-queue bucket's datagrams.
    buckets: Vec<BucketTrack>,
    /// Global number last sent on each path.
    last_gseq_on: Vec<Option<u64>>,
    /// Numbers dropped unsent since the last skip notice...
    pending_skips: Vec<SkipFrame>,
    /// ...and those the last notice carried, which the next one repeats, so
    /// that losing one notice costs the receiver no hole timeout.
    repeat_skips: Vec<SkipFrame>,
    last_skip_notice: Option<Instant>,
    owd_clock: OwdClock,
    last_report_seq: Option<u32>,
    /// How long a datagram may wait in the queue; follows the path
    /// estimates, so it is recomputed when feedback arrives.
    queue_delay_limit: Duration,
    /// What the queue's datagrams age by (stamps, the delay limit, CoDel).
    queue_clock: QueueClock,
    /// Latest time seen, so `poll_timeout` never returns a past instant.
    last_now: Instant,
    out: VecDeque<Transmit>,
    views: Vec<PathView>,
    /// Paths the scheduler may use (a session takes down paths and idle
    /// backups out).
    usable: PathSet,
    /// Payloads of the datagrams each path has in flight, for reinjection.
    in_flight: InFlightPayloads,
    /// Copies of minor paths' overdue datagrams, waiting for a quicker path.
    copies: VecDeque<OverdueCopy>,
    /// Per path, the highest number acknowledged in the feedback being
    /// read (reused, so that reading feedback allocates nothing).
    acked_gseq: Vec<Option<u64>>,
    /// Buffers of datagrams sent and payloads acknowledged, for the next
    /// datagrams and the caller's next payloads.
    buffers: BufferPool,
    pub counters: SenderCounters,
}

impl Sender {
    pub fn new(config: SenderConfig) -> Result<Sender, SchedError> {
        let scheduler = sched::build(&config.scheduler, &config.paths)?;
        let paths = config
            .paths
            .iter()
            .enumerate()
            .map(|(i, p)| {
                PathSender::new(i as u8, p.cost, config.cc.build())
                    .with_pacing_credit(PACING_CREDIT)
            })
            .collect();
        let last_gseq_on = vec![None; config.paths.len()];
        let config_paths = config.paths.len();
        let queue_delay_limit = config.max_queue_delay.unwrap_or(Duration::from_millis(50));
        let flows = FlowQueue::new(FqConfig {
            max_bytes: config.max_queue_bytes,
            ..config.fq
        });
        // Kept payloads cost at most what the queue may hold.
        let in_flight = InFlightPayloads::new(config_paths, config.max_queue_bytes);
        let buckets = vec![BucketTrack::default(); flows.bucket_count()];
        Ok(Sender {
            paths,
            scheduler,
            config,
            flows,
            queue: VecDeque::new(),
            head_len: 0,
            queue_bytes: 0,
            window_budget: INITIAL_WINDOW_BYTES,
            next_gseq: 0,
            buckets,
            last_gseq_on,
            pending_skips: Vec::new(),
            repeat_skips: Vec::new(),
            last_skip_notice: None,
            owd_clock: OwdClock::for_sender(),
            last_report_seq: None,
            queue_delay_limit,
            queue_clock: QueueClock::default(),
            last_now: Instant::ZERO,
            feedback_path: None,
            out: VecDeque::new(),
            views: Vec::new(),
            usable: PathSet::all(config_paths),
            in_flight,
            copies: VecDeque::new(),
            acked_gseq: vec![None; config_paths],
            buffers: BufferPool::new(BUFFER_CAPACITY),
            counters: SenderCounters::default(),
        })
    }

    /// `payload` in a buffer to offer with [`Sender::send_flow`]: one of
    /// a datagram already sent, so a steady stream allocates nothing.
    pub fn copy_payload(&mut self, payload: &[u8]) -> Vec<u8> {
        self.buffers.copy_of(payload)
    }

    /// Gives back a buffer done with: a [`Transmit`]'s once its bytes are
    /// copied out, or a payload no longer needed.
    pub fn recycle(&mut self, buffer: Vec<u8>) {
        self.buffers.put(buffer, self.pool_room());
    }

    /// Frees pooled buffers unused for a while (see [`BufferPool::trim`]).
    pub fn trim_buffers(&mut self, now: Instant) {
        self.buffers.trim(now);
    }

    /// Bytes of buffers kept for reuse.
    pub fn pooled_bytes(&self) -> usize {
        self.buffers.bytes()
    }

    /// Bytes the buffer pool may hold: the send queue's unused room, so
    /// that queue and pool together stay within its bound.
    fn pool_room(&self) -> usize {
        self.config
            .max_queue_bytes
            .saturating_sub(self.queued_bytes())
    }

    pub fn scheduler_name(&self) -> &'static str {
        self.scheduler.name()
    }

    pub fn path(&self, index: usize) -> &PathSender {
        &self.paths[index]
    }

    /// A rate measured for path `path` apart from the traffic; see
    /// [`PathSender::seed_rate`]. Out-of-range paths are ignored.
    pub fn seed_path_rate(&mut self, path: usize, bps: f64) -> bool {
        self.paths.get_mut(path).is_some_and(|p| p.seed_rate(bps))
    }

    /// Whether the session's packet trains failed to measure path `path`
    /// (see `PathView::train_failed`). Out-of-range paths are ignored.
    pub fn set_train_failed(&mut self, path: usize, failed: bool) {
        if let Some(p) = self.paths.get_mut(path) {
            p.train_failed = failed;
        }
    }

    /// The round trip the session measured on path `path` apart from
    /// data (see `PathView::probe_rtt`). Out-of-range paths are ignored.
    pub fn set_probe_rtt(&mut self, path: usize, rtt: Duration) {
        if let Some(p) = self.paths.get_mut(path) {
            p.probe_rtt = Some(rtt);
        }
    }

    /// The session's probe of path `path`, sent at `sent`, was answered
    /// now (see [`PathSender::on_probe_answered`]). Out-of-range paths
    /// are ignored.
    pub fn on_probe_answered(&mut self, now: Instant, path: usize, sent: Instant) {
        if let Some(p) = self.paths.get_mut(path) {
            p.on_probe_answered(now, sent);
        }
    }

    /// Payload bytes waiting, in both stages.
    pub fn queued_bytes(&self) -> usize {
        self.queue_bytes + self.flows.bytes()
    }

    /// Caps what path `path` sends at `bps` bits per second (`None`: no
    /// cap), whatever its congestion controller allows. Out-of-range
    /// paths are ignored.
    pub fn set_rate_limit(&mut self, path: usize, bps: Option<u64>) {
        if let Some(p) = self.paths.get_mut(path) {
            p.set_rate_limit(bps);
        }
    }

    /// Marks path `path` as an overflow path or not from now on (see
    /// [`PathInfo::overflow`]; only earliest-arrival reads it). Out-of-range
    /// paths are ignored.
    pub fn set_path_overflow(&mut self, path: usize, overflow: bool) {
        if let Some(p) = self.config.paths.get_mut(path) {
            p.overflow = overflow;
        }
    }

    /// Restricts scheduling to `usable` paths (all paths by default). A
    /// path left out looks closed and stalled to the scheduler, and a
    /// decision naming it goes to the usable path with the smallest RTT
    /// that can send now, or waits.
    ///
    /// What a path leaving the set had in flight is sent again on the
    /// others (see `Sender::reinject_from`): a path taken out while it
    /// still works (a backup once a primary is back) costs that many
    /// duplicates, which the receiver drops.
    pub fn set_usable_paths(&mut self, now: Instant, usable: PathSet) {
        let left = PathSet(self.usable.0 & !usable.0);
        self.usable = usable;
        self.last_now = now;
        for i in left.iter() {
            self.reinject_from(now, i);
        }
        self.shift_load_from(left);
        self.drain(now);
    }

    /// What the paths in `gone` carried falls to the usable live others.
    fn shift_load_from(&mut self, gone: PathSet) {
        if gone.is_empty() {
            return;
        }
        for i in self.live_paths().iter().filter(|&i| !gone.contains(i)) {
            self.paths[i].on_load_shift();
        }
    }

    /// Payload bytes kept for reinjection, all paths.
    pub fn kept_in_flight_bytes(&self) -> usize {
        self.in_flight.bytes()
    }

    pub fn usable_paths(&self) -> PathSet {
        self.usable
    }

    /// Offers an application datagram of flow 0 (see [`Sender::send_flow`]).
    pub fn send(&mut self, now: Instant, payload: Vec<u8>) -> Result<(), SendError> {
        self.send_flow(now, 0, payload)
    }

    /// Offers an application datagram of flow `flow`, an id the caller
    /// chooses (a hash of the inner 5-tuple, say): flows share the queue
    /// fairly, and one flow's standing queue does not delay another's.
    /// Datagrams of one flow keep their order. When the queue is full the
    /// longest flow loses its oldest datagram; only a datagram that is
    /// itself as large as the whole queue is refused.
    pub fn send_flow(
        &mut self,
        now: Instant,
        flow: u64,
        payload: Vec<u8>,
    ) -> Result<(), SendError> {
        if payload.len() > MAX_DATAGRAM {
            return Err(SendError::TooLarge(payload.len()));
        }
        self.last_now = now;
        self.drop_stale(now);
        if payload.len() > self.config.max_queue_bytes {
            self.counters.rejected_queue_full += 1;
            return Err(SendError::QueueFull);
        }
        self.counters.accepted += 1;
        let queued_at = self.queue_clock.at(now);
        self.counters.dropped_overflow += self.flows.enqueue(queued_at, flow, payload);
        self.drain(now);
        Ok(())
    }

    /// Moves datagrams from the flow queue into the scheduling window, in
    /// the flow queue's order, while the window is under its budget.
    /// Datagrams that waited past the delay limit are dropped on the way:
    /// they have no number yet, so the receiver need not hear of them.
    fn refill_window(&mut self, now: Instant) {
        self.refill_window_to(now, self.window_budget);
    }

    /// Moves datagrams into the window until it holds `bytes` wire bytes,
    /// and sparse flows' datagrams to its head whatever it holds.
    fn refill_window_to(&mut self, now: Instant, bytes: u64) {
        // Only when there is something to pass.
        while self.queue.len() > self.head_len {
            let Some(d) = self.take_from_flows(now, true) else {
                break;
            };
            self.admit(now, d);
        }
        while self.window_bytes() < bytes {
            let Some(d) = self.take_from_flows(now, false) else {
                break;
            };
            self.admit(now, d);
        }
    }

    /// The flow queue's next datagram (`sparse`: only a sparse flow's that
    /// may go express), counting what CoDel dropped on the way.
    fn take_from_flows(&mut self, now: Instant, sparse: bool) -> Option<Dequeued> {
        let before = self.flows.counters.clone();
        let queue_now = self.queue_clock.at(now);
        let d = if sparse {
            let (buckets, paths) = (&self.buckets, &self.paths);
            self.flows
                .dequeue_sparse(queue_now, &|b| buckets[b].may_pass(paths, now))
        } else {
            self.flows.dequeue(queue_now)
        };
        self.counters.dropped_codel += self.flows.counters.codel_drops - before.codel_drops;
        self.counters.marked_codel += self.flows.counters.codel_marks - before.codel_marks;
        d
    }

    /// Numbers a datagram from the flow queue and puts it in the window: at
    /// the tail, or, if it is a sparse flow's and its flow has nothing in
    /// the window, at the head behind what is already there (datagrams sent
    /// again, earlier express ones). Dropped if it waited past the delay
    /// limit: it has no number yet, so the receiver need not hear of it.
    fn admit(&mut self, now: Instant, d: Dequeued) {
        if self.queue_clock.at(now) - d.enqueued >= self.queue_delay_limit {
            self.counters.dropped_stale += 1;
            return;
        }
        self.queue_bytes += d.payload.len();
        let gseq = self.next_gseq;
        let bucket = &mut self.buckets[d.bucket];
        // The first datagram of a bucket has no predecessor: a gap of
        // 0 would mean "no flow information", so it saturates instead.
        let flow_gap = match wire::saturating_gap(gseq, bucket.last_gseq) {
            0 => wire::GAP_SATURATED,
            gap => gap,
        };
        bucket.last_gseq = Some(gseq);
        let express =
            d.sparse && self.queue.len() > self.head_len && bucket.may_pass(&self.paths, now);
        bucket.in_window += 1;
        let queued = Queued {
            gseq,
            flow_gap,
            payload: d.payload,
            enqueued: d.enqueued,
            bucket: Some(d.bucket),
            again: None,
            express,
        };
        if express {
            self.queue.insert(self.head_len, queued);
            self.head_len += 1;
        } else {
            self.queue.push_back(queued);
        }
        self.next_gseq += 1;
    }

    /// Wire bytes waiting in the flow queue.
    fn flow_queue_wire_bytes(&self) -> u64 {
        wire_bytes(0) * self.flows.len() as u64 + self.flows.bytes() as u64
    }

    /// Wire bytes in the scheduling window.
    fn window_bytes(&self) -> u64 {
        wire_bytes(0) * self.queue.len() as u64 + self.queue_bytes as u64
    }

    /// The paths whose estimates size the queue: the usable ones that are
    /// not down, or all of them when none is. A path that is down carries
    /// nothing, so the scheduling window need not hold its rate's worth of
    /// lead, and what the window holds is a standing queue CoDel does not
    /// see: through a blackout of an 8-Mbit/s path beside a 2-Mbit/s one
    /// the window kept about 100 ms of FIFO queue in front of the survivor,
    /// which only the stale-drop limit trimmed (lab, BENCHMARKS.md).
    fn sizing_paths(&self) -> impl Iterator<Item = &PathSender> + Clone {
        let live = self.live_paths();
        self.paths
            .iter()
            .filter(move |p| live.is_empty() || live.contains(usize::from(p.id)))
    }

    /// The live paths whose rate estimate is under [`MINOR_SHARE`] of the
    /// live paths' total.
    fn minor_paths(&self) -> PathSet {
        let live = self.live_paths();
        let rate = |i: usize| self.paths[i].bandwidth_bps();
        let total: f64 = live.iter().filter_map(rate).sum();
        let mut minor = PathSet::default();
        for i in live.iter() {
            if rate(i).is_some_and(|r| r < MINOR_SHARE * total) {
                minor.insert(i);
            }
        }
        minor
    }

    /// How far a minor path's delays may lengthen the queue's sizing
    /// beyond the major paths' (see [`MINOR_LEAD`]), when re-sends are on.
    fn minor_ceiling(&self) -> MinorCeiling {
        let none = MinorCeiling {
            minor: PathSet::default(),
            owd_us: f64::INFINITY,
            srtt: Duration::MAX,
        };
        if !self.config.resend_losses {
            return none;
        }
        let minor = self.minor_paths();
        if minor.is_empty() {
            return none;
        }
        let major = self
            .sizing_paths()
            .filter(|p| !minor.contains(usize::from(p.id)));
        let lead_us = MINOR_LEAD.as_secs_f64() * 1e6;
        MinorCeiling {
            minor,
            owd_us: major
                .clone()
                .filter(|p| p.owd.has_samples())
                .map(|p| p.owd.smoothed_us())
                .reduce(f64::max)
                .map_or(f64::INFINITY, |o| o + lead_us),
            srtt: major
                .filter_map(|p| p.rtt.srtt())
                .max()
                .map_or(Duration::MAX, |r| r.saturating_add(MINOR_LEAD)),
        }
    }

    /// The sizing paths with the delays that size the queue: smoothed
    /// one-way delay in µs (once sampled) and smoothed round trip, a minor
    /// path's at most `ceiling`.
    fn sizing_delays<'a>(
        &'a self,
        ceiling: &'a MinorCeiling,
    ) -> impl Iterator<Item = (&'a PathSender, Option<f64>, Option<Duration>)> + Clone {
        self.sizing_paths().map(move |p| {
            let minor = ceiling.minor.contains(usize::from(p.id));
            let owd = p.owd.has_samples().then(|| p.owd.smoothed_us());
            let srtt = p.rtt.srtt();
            if minor {
                (
                    p,
                    owd.map(|o| o.min(ceiling.owd_us)),
                    srtt.map(|r| r.min(ceiling.srtt)),
                )
            } else {
                (p, owd, srtt)
            }
        })
    }

    /// What the paths' current estimates make of the queue. Called on every
    /// acknowledgement: nothing collected, and the minor paths found once.
    fn queue_sizing(&self) -> QueueSizing {
        let ceiling = self.minor_ceiling();
        let delays = self.sizing_delays(&ceiling);
        // The largest smoothed round trip, zero before any is measured.
        let slowest_srtt = delays
            .clone()
            .filter_map(|(_, _, srtt)| srtt)
            .max()
            .unwrap_or(Duration::ZERO);
        let estimated = || {
            delays
                .clone()
                .filter_map(|(p, owd, _)| Some((p.bandwidth_bps()?, owd?)))
        };
        let queue_delay_limit = self.config.max_queue_delay.unwrap_or_else(|| {
            let spread = owd_spread_secs(delays.clone().filter_map(|(_, owd, _)| owd));
            // At least one round trip of the slowest path, as a bottleneck
            // buffer holds one bandwidth-delay product: rate probing moves
            // in RTT steps.
            (Duration::from_millis(50) + Duration::from_secs_f64(spread))
                .max(slowest_srtt.min(Duration::from_secs(1)))
        });
        QueueSizing {
            window_budget: window_budget(estimated, self.sizing_paths().count()),
            queue_delay_limit,
            codel_interval: slowest_srtt.clamp(MIN_CODEL_INTERVAL, Duration::from_secs(1)),
        }
    }

    fn drop_stale(&mut self, now: Instant) {
        let (limit, queue_now) = (self.queue_delay_limit, self.queue_clock.at(now));
        while self
            .queue
            .front()
            .is_some_and(|q| queue_now - q.enqueued >= limit)
        {
            match self.queue[0].again {
                Some(Again::PathDied) => self.counters.reinject_stale += 1,
                Some(Again::Lost) => self.counters.resend_stale += 1,
                None => self.counters.dropped_stale += 1,
            }
            self.discard(0);
        }
    }

    /// Puts what `path` had in flight back at the head of the scheduling
    /// window with the same global numbers, for the other paths to carry:
    /// the path went silent, or may no longer be used. The receiver takes a
    /// number it still waits for, delivers one it gave up on late, once,
    /// and drops a second copy (see [`crate::reseq`]). Those that waited
    /// past the queue delay limit are dropped on the way (the receiver is
    /// told to skip them). Only when another path is usable and not down:
    /// otherwise they are lost, as a dead path's packets are.
    ///
    /// The path's own accounting is untouched: its packets stay declared
    /// lost there, a late acknowledgement of one counts as that path's
    /// delivery (`late_acks`), and each copy is a new packet, with its own
    /// rate sample, on the path that carries it.
    fn reinject_from(&mut self, now: Instant, path: usize) {
        let kept = self.in_flight.take_path(path);
        let kept = self.without_hedged(kept);
        if self.live_paths().iter().all(|i| i == path) {
            // Lost with the path; the receiver is told once one is back.
            for k in kept {
                self.note_skip(k.gseq);
            }
            return;
        }
        self.send_again(now, kept, Again::PathDied);
    }

    /// Puts datagrams already sent back into the scheduling window by
    /// number: ahead of every higher number never sent, behind every lower
    /// one. A datagram sent behind lower numbers and lost must not go out
    /// again ahead of them: the receiver needs them first, and a path that
    /// keeps losing would keep putting its losses in front of them until
    /// they went stale unsent (seen on the 8-path set: a datagram starved
    /// for 300 ms behind the re-sends of a 5 Mbit/s path in start-up, and
    /// its TCP flow left slow start at a fifth of its rate). Those that
    /// waited past the queue delay limit are dropped on the way.
    fn send_again(&mut self, now: Instant, kept: Vec<Kept>, why: Again) {
        for k in kept.into_iter().rev() {
            self.queue_bytes += k.payload.len();
            let index = self.again_index(k.gseq);
            if index <= self.head_len {
                self.head_len += 1;
            }
            self.queue.insert(
                index,
                Queued {
                    gseq: k.gseq,
                    flow_gap: k.flow_gap,
                    payload: k.payload,
                    enqueued: k.enqueued,
                    bucket: None,
                    again: Some(why),
                    express: false,
                },
            );
        }
        self.drop_stale(now);
    }

    /// Where a datagram numbered `gseq` goes back into the window: before
    /// the first higher number of the ordered part (a binary search, as a
    /// dead path may put back thousands), or, when it is below all of them,
    /// in the head before the first higher number sent again and before
    /// sparse flows' datagrams.
    fn again_index(&self, gseq: u64) -> usize {
        let (mut lo, mut hi) = (self.head_len, self.queue.len());
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if self.queue[mid].gseq < gseq {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if lo > self.head_len {
            return lo;
        }
        self.queue
            .iter()
            .take(self.head_len)
            .position(|q| q.express || q.gseq > gseq)
            .unwrap_or(self.head_len)
    }

    /// Keeps a datagram just sent as `path`'s packet `pseq` until the path
    /// settles it. Copies (redundant scheduling) and probes are not kept:
    /// another copy is their reinjection.
    fn keep_sent(&mut self, path: usize, pseq: u64, q: Queued) {
        let kept = Kept {
            gseq: q.gseq,
            flow_gap: q.flow_gap,
            payload: q.payload,
            enqueued: q.enqueued,
            express: q.express,
            due: None,
            hedged: false,
        };
        if let Some(refused) = self.in_flight.keep(path, pseq, kept) {
            self.counters.reinject_not_kept += 1;
            self.recycle(refused.payload);
        }
    }

    /// A datagram was just scheduled on `path`. A down path gets one only
    /// as a last resort (earliest-arrival: by their estimates the live
    /// paths cannot send it before it goes stale), and when the path is
    /// due a probe, that datagram is it: its acknowledgement brings the
    /// path back as a copy's would, and no copy of a datagram sent
    /// elsewhere could follow it (numbers must rise along a path, and
    /// last-resort datagrams are taken from deep in the window). Without
    /// this, a down path fed as a last resort was never probed.
    fn probe_if_down(&mut self, now: Instant, path: usize) {
        let p = &mut self.paths[path];
        if p.probe_due(now) {
            p.on_probe_sent(now);
        }
    }

    /// Drops queued datagram `index` unsent; the receiver is told to skip
    /// its number.
    fn discard(&mut self, index: usize) {
        let q = self.remove(index);
        self.note_skip(q.gseq);
        self.recycle(q.payload);
    }

    /// The receiver is to skip `gseq`, in the next notice.
    fn note_skip(&mut self, gseq: u64) {
        match self.pending_skips.last_mut() {
            Some(k) if k.from + u64::from(k.count) == gseq && k.count < u32::MAX => k.count += 1,
            _ => self.pending_skips.push(SkipFrame {
                from: gseq,
                count: 1,
            }),
        }
    }

    /// When the next skip notice may go out, if one has something to say.
    fn skip_notice_due(&self) -> Option<Instant> {
        if self.pending_skips.is_empty() && self.repeat_skips.is_empty() {
            return None;
        }
        Some(
            self.last_skip_notice
                .map_or(Instant::ZERO, |t| t + SKIP_NOTICE_INTERVAL),
        )
    }

    /// Sends a skip notice on the path with the shortest one-way delay that
    /// is not suspect, so the receiver stops waiting soonest. At most one
    /// notice per `SKIP_NOTICE_INTERVAL`: under overload the sender drops
    /// most of what it is offered, and one notice per drop would take the
    /// capacity the data needs. Each range goes out in two notices.
    fn flush_skips(&mut self, now: Instant) {
        if self.skip_notice_due().is_none_or(|due| due > now) {
            return;
        }
        let live = self.live_paths();
        let path = self
            .paths
            .iter()
            .filter(|p| live.contains(usize::from(p.id)) && p.owd.has_samples())
            .min_by(|a, b| a.owd.smoothed_us().total_cmp(&b.owd.smoothed_us()))
            .or(self.paths.first())
            .map_or(0, |p| p.id);
        let frames: Vec<Frame> = self
            .repeat_skips
            .iter()
            .chain(&self.pending_skips)
            .map(|k| Frame::Skip(*k))
            .collect();
        // One feedback packet stays well under the MTU.
        for chunk in frames.chunks(MAX_SKIP_FRAMES) {
            let data = wire::feedback_packet(path, chunk).expect("skip frames fit");
            self.counters.skip_packets += 1;
            self.out.push_back(Transmit { path, data });
        }
        self.repeat_skips = std::mem::take(&mut self.pending_skips);
        self.last_skip_notice = Some(now);
    }

    /// Queue index of the first datagram with at least `ahead_bytes` of wire
    /// bytes before it that `path` may carry: global numbers must rise along
    /// each path, or the receiver's loss inference breaks; and a datagram
    /// sent again never goes to a down path.
    fn index_behind(&self, ahead_bytes: u64, path: usize) -> Option<usize> {
        let floor = self.last_gseq_on[path];
        let down = self.paths[path].is_suspect();
        let mut before = 0u64;
        for (i, q) in self.queue.iter().enumerate() {
            let may = floor.is_none_or(|f| q.gseq > f) && !(down && q.again.is_some());
            if before >= ahead_bytes && may {
                return Some(i);
            }
            before += wire_bytes(q.payload.len());
        }
        None
    }

    fn view_of(&self, i: usize, now: Instant, bytes: u64) -> PathView {
        let p = &self.paths[i];
        let usable = self.usable.contains(i);
        PathView {
            index: i,
            cwnd_open: usable && p.cwnd_open(bytes),
            can_send: usable && p.can_send(now, bytes),
            ready_at: p.ready_at(bytes).max(now),
            cwnd_bytes: p.cc().cwnd_bytes(),
            in_flight_bytes: p.bytes_in_flight(),
            srtt: p.rtt.srtt(),
            min_rtt: p.rtt.min_rtt(),
            probe_rtt: p.probe_rtt,
            train_failed: p.train_failed,
            owd_us: p.owd.has_samples().then(|| p.owd.floor_us(now)),
            queueing: p.owd.queueing(now),
            bandwidth_bps: p.bandwidth_bps(),
            kalman_bps: p.kalman.estimate_bps(),
            rate_shown: p.rate_shown(),
            express_share: p.express_share(now),
            cost: p.cost,
            overflow: self.config.paths[i].overflow,
            suspect: !usable || p.is_suspect(),
            stalled: !usable || p.is_stalled(now, bytes),
        }
    }

    /// The `allowed` path that can send now with the smallest RTT: where a
    /// decision naming another path goes instead.
    fn fallback_path(&self, allowed: PathSet) -> Option<usize> {
        self.views
            .iter()
            .filter(|v| v.can_send && allowed.contains(v.index))
            .min_by_key(|v| v.srtt.unwrap_or(Duration::MAX))
            .map(|v| v.index)
    }

    /// The decision restricted to `allowed` paths for the head; a datagram
    /// sent behind it may go to any usable path (`index_behind` keeps
    /// datagrams sent again away from down paths).
    fn restrict(&self, decision: Decision, allowed: PathSet) -> Decision {
        let fallback = || {
            self.fallback_path(allowed)
                .map_or(Decision::Wait, |i| Decision::Send(PathSet::one(i)))
        };
        match decision {
            Decision::Send(set) => {
                let kept = PathSet(set.0 & allowed.0);
                if kept.is_empty() {
                    fallback()
                } else {
                    Decision::Send(kept)
                }
            }
            Decision::SendBehind { path, .. } if !self.usable.contains(path) => fallback(),
            d => d,
        }
    }

    /// Paths a datagram may go to: the usable ones, and for one sent again
    /// only those not down (schedulers that ignore liveness, such as
    /// round robin, would otherwise hand it back to the dead path).
    fn allowed_for(&self, again: bool) -> PathSet {
        if again {
            self.live_paths()
        } else {
            self.usable
        }
    }

    /// The live paths whose one-way delay floor is below `path`'s: where a
    /// copy of a datagram late on `path` may go.
    fn quicker_than(&self, path: usize) -> PathSet {
        let mut quicker = PathSet::default();
        let p = &self.paths[path];
        if !p.owd.has_samples() {
            return quicker;
        }
        let floor = p.owd.floor_us(self.last_now);
        for i in self.live_paths().iter() {
            let q = &self.paths[i];
            // A strict `<`: the path itself is not quicker than itself.
            if q.owd.has_samples() && q.owd.floor_us(self.last_now) < floor {
                quicker.insert(i);
            }
        }
        quicker
    }

    /// Datagrams a path gives back, less those a copy of which already
    /// went on a quicker path.
    fn without_hedged(&mut self, kept: Vec<Kept>) -> Vec<Kept> {
        let (copied, rest): (Vec<Kept>, Vec<Kept>) = kept.into_iter().partition(|k| k.hedged);
        for k in copied {
            self.recycle(k.payload);
        }
        rest
    }

    /// Where a copy of a minor path's overdue datagrams may go: the paths
    /// quicker than it, or none when it is not minor (copies of a major
    /// path's datagrams could take the quicker paths' whole capacity).
    fn hedge_targets(&self, path: usize) -> PathSet {
        if !self.config.resend_losses || !self.minor_paths().contains(path) {
            return PathSet::default();
        }
        self.quicker_than(path)
    }

    /// Copies of a minor path's overdue datagrams wait for a quicker path
    /// (see [`Sender::send_copies`]), at most [`MAX_COPIES`]: the oldest
    /// goes first.
    fn hedge_overdue(&mut self, now: Instant) {
        for from in 0..self.paths.len() {
            if self.hedge_targets(from).is_empty() {
                continue;
            }
            while let Some(k) = self.in_flight.overdue(from, now) {
                let q = Queued {
                    gseq: k.gseq,
                    flow_gap: k.flow_gap,
                    payload: self.buffers.copy_of(&k.payload),
                    // A copy is as fresh as the wait it ends: the queue
                    // delay limit counts from now.
                    enqueued: self.queue_clock.at(now),
                    bucket: None,
                    again: None,
                    express: false,
                };
                self.counters.hedged += 1;
                if self.copies.len() == MAX_COPIES {
                    self.drop_copy(0);
                }
                self.copies.push_back(OverdueCopy { from, q });
            }
        }
    }

    /// Drops waiting copy `i` unsent. The receiver is not told to skip its
    /// number: the original is still on its way.
    fn drop_copy(&mut self, i: usize) {
        if let Some(c) = self.copies.remove(i) {
            self.counters.hedge_dropped += 1;
            self.recycle(c.q.payload);
        }
    }

    /// Sends each waiting copy on the quicker path that can send it now
    /// with the smallest one-way delay floor; a copy no path can take now
    /// waits, and never holds up the window (a copy at the window's head,
    /// waiting for a quicker path, kept the slower paths idle: on the
    /// 8-path set one flow fell from 0.84 to 0.65 of the ideal). Copies
    /// that waited past the queue delay limit, or whose path is no longer
    /// minor or has no quicker path, are dropped.
    fn send_copies(&mut self, now: Instant) {
        let mut i = 0;
        while i < self.copies.len() {
            let c = &self.copies[i];
            let targets = self.hedge_targets(c.from);
            let waited = self.queue_clock.at(now) - c.q.enqueued;
            if targets.is_empty() || waited >= self.queue_delay_limit {
                self.drop_copy(i);
                continue;
            }
            let bytes = wire_bytes(c.q.payload.len());
            let path = targets
                .iter()
                .filter(|&t| self.paths[t].can_send(now, bytes))
                .min_by(|&a, &b| {
                    let floor = |t: usize| self.paths[t].owd.floor_us(now);
                    floor(a).total_cmp(&floor(b))
                });
            let Some(path) = path else {
                i += 1;
                continue;
            };
            let c = self.copies.remove(i).expect("index in copies");
            let pseq = self.paths[path].next_pseq();
            self.transmit(now, path, &c.q, false);
            self.counters.hedge_sent += 1;
            self.keep_sent(path, pseq, c.q);
        }
    }

    /// Marks each path's datagrams below the highest number the feedback
    /// just read acknowledged on a quicker path as passed: the receiver
    /// holds that number, waiting for them. Each is due a copy once its
    /// acknowledgement is [`HEDGE_MARGIN`] later than if it had arrived
    /// just before that number (it comes back on its own path, which may
    /// be the longer way: see [`Sender::return_lead`]).
    fn mark_passed(&mut self, now: Instant) {
        for p in 0..self.paths.len() {
            let passing = self
                .quicker_than(p)
                .iter()
                .filter_map(|q| Some((self.acked_gseq[q]?, q)))
                .max();
            if let Some((below, q)) = passing {
                let due = now + self.return_lead(p, q) + HEDGE_MARGIN;
                self.in_flight.mark_passed(p, below, due);
            }
        }
    }

    /// How much longer acknowledgements take to come back on path `p`
    /// than on path `q`: the difference of their minimum round trips less
    /// that of their one-way delay floors (which share the peer's clock
    /// offset, so their difference is the paths' own). Zero while either
    /// is unmeasured; at most a second (hostile timestamps may put the
    /// floors anywhere).
    fn return_lead(&self, p: usize, q: usize) -> Duration {
        let back_us = |i: usize| {
            let path = &self.paths[i];
            let rtt = path.rtt.min_rtt()?;
            path.owd
                .has_samples()
                .then(|| rtt.as_secs_f64() * 1e6 - path.owd.floor_us(self.last_now))
        };
        match (back_us(p), back_us(q)) {
            (Some(bp), Some(bq)) if bp > bq => Duration::try_from_secs_f64((bp - bq) / 1e6)
                .map_or(MAX_RETURN_LEAD, |d| d.min(MAX_RETURN_LEAD)),
            _ => Duration::ZERO,
        }
    }

    /// The usable paths that are not down.
    fn live_paths(&self) -> PathSet {
        let mut live = PathSet::default();
        for i in self.usable.iter().filter(|&i| !self.paths[i].is_suspect()) {
            live.insert(i);
        }
        live
    }

    fn refresh_views(&mut self, now: Instant, bytes: u64) {
        self.views.clear();
        for i in 0..self.paths.len() {
            let v = self.view_of(i, now, bytes);
            self.views.push(v);
        }
    }

    /// Re-reads one path's view after it sent a packet.
    fn refresh_view(&mut self, i: usize, now: Instant, bytes: u64) {
        self.views[i] = self.view_of(i, now, bytes);
    }

    /// Hands queued datagrams to the scheduler until it waits or the queue empties.
    fn drain(&mut self, now: Instant) {
        self.send_copies(now);
        // Views are rebuilt when the packet size changes; within one drain
        // only the paths that sent change, and only those are re-read.
        let mut views_for = None;
        loop {
            self.refill_window(now);
            let Some(head) = self.queue.front() else {
                break;
            };
            let head_bytes = wire_bytes(head.payload.len());
            let head_again = head.again.is_some();
            if views_for != Some(head_bytes) {
                self.refresh_views(now, head_bytes);
                views_for = Some(head_bytes);
            }
            let picked = self.scheduler.pick(&SchedContext {
                now,
                paths: &self.views,
                packet_bytes: head_bytes,
                backlog_bytes: self.window_bytes() + self.flow_queue_wire_bytes(),
                queue_delay_limit: self.queue_delay_limit,
            });
            let decision = self.restrict(picked, self.allowed_for(head_again));
            match decision {
                Decision::Wait => break,
                Decision::Drop => {
                    self.counters.dropped_by_scheduler += 1;
                    self.discard(0);
                }
                Decision::Send(set) => {
                    let q = self.take(0);
                    // A datagram sent on one path is kept for reinjection;
                    // copies on several are each other's.
                    let mut paths = set.iter();
                    let only = match (paths.next(), paths.next()) {
                        (Some(i), None) => Some((i, self.paths[i].next_pseq())),
                        _ => None,
                    };
                    for (n, i) in set.iter().enumerate() {
                        if n > 0 {
                            self.counters.sent_copies += 1;
                        }
                        self.transmit(now, i, &q, false);
                        self.probe_if_down(now, i);
                        self.refresh_view(i, now, head_bytes);
                    }
                    self.probe_down_paths(now, set, &q);
                    match only {
                        Some((i, pseq)) => self.keep_sent(i, pseq, q),
                        None => self.recycle(q.payload),
                    }
                }
                Decision::SendBehind { path, ahead_bytes } => {
                    // The scheduler may reach deeper than the window: the
                    // flow queue's next datagrams come in for it.
                    let deep_enough = ahead_bytes + wire_bytes(MAX_DATAGRAM);
                    if self.window_bytes() <= deep_enough {
                        self.refill_window_to(now, deep_enough + 1);
                    }
                    let Some(index) = self.index_behind(ahead_bytes, path) else {
                        break;
                    };
                    let q = self.take(index);
                    self.counters.sent_behind += 1;
                    let pseq = self.paths[path].next_pseq();
                    self.transmit(now, path, &q, true);
                    self.probe_if_down(now, path);
                    self.refresh_view(path, now, head_bytes);
                    self.probe_down_paths(now, PathSet::one(path), &q);
                    self.keep_sent(path, pseq, q);
                }
            }
        }
        self.probe_from_window(now);
        self.flush_skips(now);
    }

    /// A down path still due a probe once the drain is done (what went out
    /// was below its numbers: datagrams sent again after its death, or
    /// ones behind which it carried deeper ones) gets a copy of the first
    /// waiting datagram above its numbers, which is still sent as
    /// scheduled. So a down path is probed every `PROBE_INTERVAL` from its
    /// death on, whatever heads the window.
    fn probe_from_window(&mut self, now: Instant) {
        for i in 0..self.paths.len() {
            if !self.paths[i].probe_due(now) {
                continue;
            }
            let floor = self.last_gseq_on[i];
            let Some(q) = self.queue.iter().find(|q| floor.is_none_or(|f| q.gseq > f)) else {
                continue;
            };
            let copy = q.clone();
            self.transmit(now, i, &copy, false);
            self.paths[i].on_probe_sent(now);
        }
    }

    /// A copy of `q` to each down path due a probe (see `path::Liveness`),
    /// window or not: the copy costs nothing if lost, and its
    /// acknowledgement is how a path that came back is found.
    fn probe_down_paths(&mut self, now: Instant, sent_on: PathSet, q: &Queued) {
        for i in 0..self.paths.len() {
            let rises = self.last_gseq_on[i].is_none_or(|last| q.gseq > last);
            if self.paths[i].probe_due(now) && rises && !sent_on.contains(i) {
                self.transmit(now, i, q, false);
                self.paths[i].on_probe_sent(now);
                self.refresh_view(i, now, wire_bytes(q.payload.len()));
            }
        }
    }

    fn take(&mut self, index: usize) -> Queued {
        let q = self.remove(index);
        match q.again {
            Some(Again::PathDied) => {
                self.counters.reinjected += 1;
                self.counters.reinjected_bytes += q.payload.len() as u64;
            }
            Some(Again::Lost) => {
                self.counters.resent += 1;
                self.counters.resent_bytes += q.payload.len() as u64;
            }
            None => self.counters.sent_datagrams += 1,
        }
        if q.express {
            self.counters.sent_express += 1;
        }
        q
    }

    /// Takes datagram `index` out of the window, sent or not.
    fn remove(&mut self, index: usize) -> Queued {
        let q = self.queue.remove(index).expect("index in queue");
        self.queue_bytes -= q.payload.len();
        if index < self.head_len {
            self.head_len -= 1;
        }
        if let Some(b) = q.bucket {
            self.buckets[b].in_window -= 1;
        }
        q
    }

    /// Sends `q` on path `index`; `behind`: earlier numbers stay in the
    /// window (a `SendBehind`).
    fn transmit(&mut self, now: Instant, index: usize, q: &Queued, behind: bool) {
        let app_limited = self.queue.is_empty() && self.flows.is_empty();
        // A reinjected datagram goes below what the path carried before;
        // what follows it must still rise above the earlier ones. An
        // express one goes above what follows it.
        if !q.express {
            self.last_gseq_on[index] = self.last_gseq_on[index].max(Some(q.gseq));
        }
        if let Some(b) = q.bucket {
            self.buckets[b].last_sent = Some((now, index));
        }
        let bytes = wire_bytes(q.payload.len());
        let path = &mut self.paths[index];
        if path.bytes_in_flight() == 0 {
            if let Some(within) = answer_within(path) {
                self.queue_clock.expect_answer(now, within);
            }
        }
        let stamp = path.on_sent(now, q.gseq, bytes, app_limited);
        if q.express {
            path.express.on_sent(now, bytes);
        }
        let header = DataHeader {
            path: path.id,
            // The receiver widens it back ([`wire::widen`]).
            gseq: q.gseq as u32,
            pseq: stamp.pseq,
            send_ts_us: now.wire_micros(),
            prev_gap: stamp.prev_gap,
            flow_gap: q.flow_gap,
            express: q.express,
            resends: self.config.resend_losses,
            behind,
        };
        let mut data = self.buffers.take(DATA_HEADER_LEN + q.payload.len());
        header.append_to(&q.payload, &mut data);
        self.out.push_back(Transmit {
            path: path.id,
            data,
        });
    }

    /// Feedback from the receiver. Ack frames name their own path, so the
    /// path the packet came in on does not matter.
    /// A feedback packet that arrived on path `arrived_on`: acknowledgements
    /// in it for other paths were relayed (see
    /// [`PathSender::on_ack_via`]).
    pub fn handle_feedback_on(
        &mut self,
        now: Instant,
        bytes: &[u8],
        arrived_on: u8,
    ) -> Result<(), WireError> {
        self.feedback_path = Some(arrived_on);
        let result = self.handle_datagram(now, bytes);
        self.feedback_path = None;
        result
    }

    pub fn handle_datagram(&mut self, now: Instant, bytes: &[u8]) -> Result<(), WireError> {
        self.last_now = now;
        let frames = match Packet::parse(bytes) {
            Ok(Packet::Feedback { frames, .. }) => frames,
            Ok(Packet::Data { .. }) => {
                self.counters.malformed_feedback += 1;
                return Err(WireError::PacketType(1));
            }
            Err(e) => {
                self.counters.malformed_feedback += 1;
                return Err(e);
            }
        };
        let mut lost = Vec::new();
        self.acked_gseq.fill(None);
        for frame in frames {
            match frame {
                Frame::Ack(ack) => {
                    let path = usize::from(ack.path);
                    let room = self.pool_room();
                    let relayed = self.feedback_path.is_some_and(|a| a != ack.path);
                    if let Some(p) = self.paths.get_mut(path) {
                        let (kept, buffers) = (&mut self.in_flight, &mut self.buffers);
                        let highest = &mut self.acked_gseq[path];
                        p.on_ack_via(now, &ack, !relayed, &mut self.owd_clock, |pseq, acked| {
                            let taken = kept.take(path, pseq);
                            if acked {
                                if let Some(k) = taken {
                                    if !k.express {
                                        *highest = (*highest).max(Some(k.gseq));
                                    }
                                    buffers.put(k.payload, room);
                                }
                            } else {
                                lost.extend(taken);
                            }
                        });
                    }
                }
                Frame::Skip(_) => self.counters.malformed_feedback += 1,
                Frame::LossReport(report) => {
                    // Reports go out on several paths; act on each once.
                    let fresh = self
                        .last_report_seq
                        .is_none_or(|last| report.report_seq.wrapping_sub(last) as i32 > 0);
                    if fresh {
                        self.last_report_seq = Some(report.report_seq);
                        self.refresh_views(now, crate::cc::MSS);
                        self.scheduler
                            .on_loss_report(now, &report.entries, &self.views);
                    }
                }
            }
        }
        let sizing = self.queue_sizing();
        self.queue_delay_limit = sizing.queue_delay_limit;
        self.window_budget = sizing.window_budget;
        self.flows
            .set_interval(sizing.codel_interval, CODEL_TARGET_SHARE);
        if self.config.resend_losses {
            self.mark_passed(now);
            let mut lost = self.without_hedged(lost);
            lost.sort_by_key(|k: &Kept| k.gseq);
            self.send_again(now, lost, Again::Lost);
            self.hedge_overdue(now);
        } else {
            // The receiver pins down only the last of a burst a path lost
            // (the next packet's `prev_gap`); the rest would wait out its
            // hole timeout, which a start-up's jittery delays make long.
            for k in lost {
                self.note_skip(k.gseq);
            }
        }
        self.drain(now);
        self.queue_clock.on_feedback(now, self.answer_due_within());
        Ok(())
    }

    /// How long the network may stay silent before it is overdue: the
    /// [`answer_within`] of the quickest path that is up and has data in
    /// flight (see [`QueueClock`]); `None` while there is none, or none has
    /// a measured round trip.
    fn answer_due_within(&self) -> Option<Duration> {
        self.paths
            .iter()
            .filter(|p| p.bytes_in_flight() > 0 && !p.liveness.is_down())
            .filter_map(answer_within)
            .min()
    }

    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.out.pop_front()
    }

    /// Next instant `handle_timeout` has work: a path timeout, the pacing
    /// release of a waiting head, or the queue head going stale.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let path_timeouts = self.paths.iter().filter_map(PathSender::timeout_at);
        let head = self.queue.front().map(|q| {
            let stale = self
                .queue_clock
                .real_time_of(self.last_now, q.enqueued + self.queue_delay_limit);
            let bytes = wire_bytes(q.payload.len());
            let pacing = self
                .paths
                .iter()
                .map(|p| p.ready_at(bytes))
                .filter(|&t| t > self.last_now)
                .min();
            pacing.map_or(stale, |p| p.min(stale))
        });
        // The store's answer first: it is cheap, and mostly none.
        let hedges = (0..self.paths.len())
            .filter_map(|p| Some((p, self.in_flight.next_due(p)?)))
            .filter(|&(p, _)| !self.hedge_targets(p).is_empty())
            .map(|(_, t)| t.max(self.last_now));
        // A waiting copy goes when a path's pacing lets it, or goes stale.
        let copies = self.copies.front().map(|c| {
            let bytes = wire_bytes(c.q.payload.len());
            let stale = self
                .queue_clock
                .real_time_of(self.last_now, c.q.enqueued + self.queue_delay_limit);
            self.paths
                .iter()
                .map(|p| p.ready_at(bytes))
                .filter(|&t| t > self.last_now)
                .fold(stale, Instant::min)
        });
        path_timeouts
            .chain(head)
            .chain(hedges)
            .chain(copies)
            .chain(self.skip_notice_due().map(|t| t.max(self.last_now)))
            .min()
    }

    pub fn handle_timeout(&mut self, now: Instant) {
        self.last_now = now;
        let mut silent = PathSet::default();
        let mut went_down = PathSet::default();
        for (i, p) in self.paths.iter_mut().enumerate() {
            if p.timeout_at().is_some_and(|t| t <= now) {
                let downs = p.counters.down_events;
                p.on_timeout(now);
                silent.insert(i);
                if p.counters.down_events > downs {
                    went_down.insert(i);
                }
            }
        }
        // After all timeouts, so none goes to a path silent as well.
        for i in silent.iter() {
            self.reinject_from(now, i);
        }
        self.shift_load_from(went_down);
        self.hedge_overdue(now);
        self.drop_stale(now);
        self.drain(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// Splits what the sender put on the wire into data packets and skip frames.
    fn transmits(s: &mut Sender) -> (usize, Vec<SkipFrame>) {
        let (mut data, mut skips) = (0, Vec::new());
        while let Some(t) = s.poll_transmit() {
            match Packet::parse(&t.data).unwrap() {
                Packet::Data { .. } => data += 1,
                Packet::Feedback { frames, .. } => skips.extend(frames.into_iter().map(|f| {
                    let Frame::Skip(k) = f else {
                        panic!("sender sent {f:?}")
                    };
                    k
                })),
            }
        }
        (data, skips)
    }

    /// The window budget for these (rate in bit/s, one-way delay in ms)
    /// estimates among `paths` paths.
    fn budget(estimates: &[(f64, f64)], paths: usize) -> u64 {
        window_budget(|| estimates.iter().map(|&(bps, ms)| (bps, ms * 1e3)), paths)
    }

    #[test]
    fn the_window_budget_is_each_paths_rate_over_its_lead_plus_slack() {
        // No estimate yet: the initial budget, whatever the number of paths.
        assert_eq!(budget(&[], 2), INITIAL_WINDOW_BYTES);
        assert_eq!(budget(&[], 8), INITIAL_WINDOW_BYTES);
        // 80 Mbit/s at 10 ms leads 8 Mbit/s at 50 ms by 40 ms: it delivers
        // 10 MB/s x (40 + 5) ms; the slowest path only its 5 ms of slack.
        let pair = [(80e6, 10.0), (8e6, 50.0)];
        assert_eq!(budget(&pair, 2), 450_000 + 5_000);
        // The order of the paths does not matter.
        assert_eq!(budget(&[(8e6, 50.0), (80e6, 10.0)], 2), 455_000);
        // Three paths: each path's lead is over the slowest, not the next.
        let three = [(80e6, 10.0), (40e6, 30.0), (8e6, 50.0)];
        assert_eq!(budget(&three, 3), 450_000 + 5e6 as u64 / 40 + 5_000);
        // A lead counts for at most a second (within a byte: the rate times
        // 1.005 s is not exact in floating point).
        let capped = budget(&[(8e6, 0.0), (8e6, 3_000.0)], 2);
        assert!(capped.abs_diff(1_005_000 + 5_000) <= 1, "{capped}");
        // At least four full datagrams per path, estimated or not.
        let full = wire_bytes(MAX_DATAGRAM);
        assert_eq!(full, 1500);
        assert_eq!(budget(&[(1e6, 10.0), (1e6, 10.0)], 2), 4 * full * 2);
        assert_eq!(budget(&[(1e6, 10.0)], 3), 4 * full * 3);
        // Just above the floor, the rates decide.
        assert_eq!(budget(&[(20e6, 10.0)], 1), 12_500);
    }

    #[test]
    fn a_path_is_minor_under_a_tenth_of_the_live_paths_rate_not_at_it() {
        let minor = |rates: Option<(f64, f64)>| {
            let mut s = Sender::new(two_paths("earliest-arrival", ms(0))).unwrap();
            if let Some((a, b)) = rates {
                s.paths[0].seed_rate(a);
                s.paths[1].seed_rate(b);
            }
            s.minor_paths()
        };
        assert_eq!(
            minor(None),
            PathSet::default(),
            "no estimate, no minor path"
        );
        assert_eq!(minor(Some((9e6, 1e6))), PathSet::default());
        assert_eq!(minor(Some((9.1e6, 0.9e6))), PathSet::one(1));
        assert_eq!(minor(Some((0.5e6, 9.5e6))), PathSet::one(0));
    }

    #[test]
    fn owd_spread_is_the_widest_gap_in_seconds_at_most_one() {
        assert_eq!(owd_spread_secs([].into_iter()), 0.0);
        assert_eq!(owd_spread_secs([40_000.0].into_iter()), 0.0);
        assert_eq!(
            owd_spread_secs([10_000.0, 70_000.0, 40_000.0].into_iter()),
            0.06
        );
        assert_eq!(owd_spread_secs([0.0, 5e6].into_iter()), 1.0);
    }

    #[test]
    fn a_path_out_of_use_does_not_size_the_queue() {
        // 8 Mbit/s at 10 ms beside 2 Mbit/s at 40 ms, as the paths measured.
        let mut config = two_paths("earliest-arrival", ms(0));
        config.max_queue_delay = None;
        let mut s = Sender::new(config).unwrap();
        let t0 = Instant::from_nanos(1_000_000_000);
        for (i, (bps, owd_ms, rtt_ms)) in
            [(8e6, 10u32, 24u64), (2e6, 40, 90)].into_iter().enumerate()
        {
            let p = &mut s.paths[i];
            p.seed_rate(bps);
            p.owd
                .on_sample(t0, &mut OwdClock::anchored(0), i, owd_ms * 1000);
            p.rtt.on_sample(ms(rtt_ms));
        }
        // Both in use: the fast path's 30-ms lead (plus 5 ms of slack), a
        // queue limit of 50 ms plus that spread, at least the slowest RTT.
        let both = s.queue_sizing();
        assert_eq!(both.window_budget, 35_000 + 1_250);
        assert_eq!(both.queue_delay_limit, ms(90));
        // The fast path out of use (cut, or taken out): the survivor's own
        // floor of four datagrams; nothing held for a lead no path has.
        s.set_usable_paths(t0, PathSet::one(1));
        // No spread with one path: the limit is the slowest round trip.
        let ceiling = s.minor_ceiling();
        let owds = s.sizing_delays(&ceiling).filter_map(|(_, owd, _)| owd);
        assert_eq!(owd_spread_secs(owds), 0.0);
        let survivor = s.queue_sizing();
        assert_eq!(survivor.window_budget, 4 * wire_bytes(MAX_DATAGRAM));
        assert_eq!(survivor.queue_delay_limit, ms(90));
        // No path in use: the estimates of all (nothing better is known).
        s.set_usable_paths(t0, PathSet::default());
        assert_eq!(s.queue_sizing(), both);
    }

    #[test]
    fn a_minor_paths_long_delays_size_the_queue_only_150_ms_beyond_the_major_paths() {
        // 8 Mbit/s at 10 ms (round trip 24 ms) beside 3G in a fade: 0.5
        // Mbit/s (under a tenth of the total) at 500 ms (round trip 1.1 s).
        let sized = |resend_losses: bool| {
            let mut config = two_paths("earliest-arrival", ms(0));
            config.max_queue_delay = None;
            config.resend_losses = resend_losses;
            let mut s = Sender::new(config).unwrap();
            let t0 = Instant::from_nanos(1_000_000_000);
            for (i, (bps, owd_ms, rtt_ms)) in [(8e6, 10u32, 24u64), (0.5e6, 500, 1100)]
                .into_iter()
                .enumerate()
            {
                let p = &mut s.paths[i];
                p.seed_rate(bps);
                p.owd
                    .on_sample(t0, &mut OwdClock::anchored(0), i, owd_ms * 1000);
                p.rtt.on_sample(ms(rtt_ms));
            }
            assert_eq!(s.minor_paths(), PathSet::one(1));
            let sizing = s.queue_sizing();
            (
                sizing.window_budget,
                sizing.queue_delay_limit,
                sizing.codel_interval,
            )
        };
        // Without re-sends (no copies) the 3G path's whole 490-ms lead: the
        // fixed line's 1 MB/s for 495 ms, the 3G path's 5 ms of slack; the
        // queue limit and CoDel's interval its round trip, at most a second.
        assert_eq!(sized(false), (495_000 + 312, ms(1000), ms(1000)));
        // With them: its one-way delay counts for at most 10 + 150 ms (a
        // queue limit of 50 ms plus that spread), its round trip for at
        // most 24 + 150 ms.
        assert_eq!(sized(true), (155_000 + 312, ms(200), ms(174)));
    }

    #[test]
    fn dropped_numbers_go_out_coalesced_in_two_notices() {
        let mut config = SenderConfig::new(vec![PathInfo {
            name: "a".into(),
            cost: 1.0,
            weight_throughput: None,
            overflow: false,
        }]);
        config.max_queue_delay = Some(ms(10));
        let mut s = Sender::new(config).unwrap();
        let t0 = Instant::from_nanos(1_000_000_000);
        for _ in 0..200 {
            s.send(t0, vec![0; 1000]).unwrap();
        }
        let (sent, skips) = transmits(&mut s);
        assert!(skips.is_empty());
        assert!(sent < 200, "the window must hold some back");
        // At 10 ms the rest go stale. Those already numbered (in the
        // scheduling window) go out as one range, in one notice, at once;
        // those still in the flow queue had no number to skip.
        let numbered = s.next_gseq;
        assert!(numbered > sent as u64 && numbered < 200);
        s.handle_timeout(t0 + ms(10));
        let range = SkipFrame {
            from: sent as u64,
            count: (numbered - sent as u64) as u32,
        };
        assert_eq!(transmits(&mut s), (0, vec![range]));
        assert_eq!(s.next_gseq, numbered);
        assert_eq!(s.counters.dropped_stale, 200 - sent as u64);
        // The repeat follows one interval later, then nothing more.
        assert_eq!(s.poll_timeout(), Some(t0 + ms(15)));
        s.handle_timeout(t0 + ms(15));
        assert_eq!(transmits(&mut s), (0, vec![range]));
        assert_eq!(s.counters.skip_packets, 2);
        assert!(s.poll_timeout().is_none_or(|t| t > t0 + ms(40)));
    }

    fn two_paths(scheduler: &str, max_queue_delay: Duration) -> SenderConfig {
        let path = |name: &str| PathInfo {
            name: name.into(),
            cost: 1.0,
            weight_throughput: None,
            overflow: false,
        };
        let mut config = SenderConfig::new(vec![path("a"), path("b")]);
        config.scheduler = scheduler.into();
        config.max_queue_delay = Some(max_queue_delay);
        config
    }

    /// (path, gseq) of every data packet the sender put on the wire.
    fn sent_gseqs(s: &mut Sender) -> Vec<(u8, u64)> {
        let mut out = Vec::new();
        while let Some(t) = s.poll_transmit() {
            if let Packet::Data { header, .. } = Packet::parse(&t.data).unwrap() {
                assert_eq!(header.path, t.path);
                out.push((t.path, u64::from(header.gseq)));
            }
        }
        out
    }

    /// Acknowledges packets `0..=largest` of `path`.
    fn ack_all(s: &mut Sender, now: Instant, path: u8, largest: u32) {
        ack_received(s, now, path, largest, Instant::ZERO, u64::MAX);
    }

    /// Fires the sender's timers up to `end`.
    /// Most timer firings a test helper runs: a timer that keeps firing
    /// without the state moving on (a mutant of the queue clock did) fails
    /// the test instead of hanging it.
    const MAX_FIRINGS: usize = 100_000;

    fn run_until(s: &mut Sender, end: Instant) {
        for _ in 0..MAX_FIRINGS {
            match s.poll_timeout().filter(|&t| t <= end) {
                Some(t) => s.handle_timeout(t),
                None => return,
            }
        }
        panic!("the timer fired {MAX_FIRINGS} times before {end:?}");
    }

    /// Fires the sender's next timer (there must be one); returns when.
    fn fire_next(s: &mut Sender, firings: &mut usize) -> Instant {
        *firings += 1;
        assert!(
            *firings <= MAX_FIRINGS,
            "the timer fired {MAX_FIRINGS} times"
        );
        let t = s.poll_timeout().expect("a timer");
        s.handle_timeout(t);
        t
    }

    fn on_path(sent: &[(u8, u64)], path: u8) -> Vec<u64> {
        sent.iter().filter(|p| p.0 == path).map(|p| p.1).collect()
    }

    /// Round robin puts 8 datagrams on two paths; path b acknowledges its
    /// four, path a stays silent until its timeout (500 ms before any
    /// round-trip sample).
    fn eight_sent_then_a_silent(s: &mut Sender, t0: Instant) -> Vec<u64> {
        for _ in 0..8 {
            s.send(t0, vec![7; 1000]).unwrap();
        }
        let sent = sent_gseqs(s);
        let on_a = on_path(&sent, 0);
        assert_eq!((on_a.len(), on_path(&sent, 1).len()), (4, 4));
        assert_eq!(s.kept_in_flight_bytes(), 8000);
        ack_all(s, t0 + ms(40), 1, 3);
        // Acknowledged: no longer kept (at most what is in flight is).
        assert_eq!(s.kept_in_flight_bytes(), 4000);
        assert_eq!(s.path(0).timeout_at(), Some(t0 + ms(500)));
        on_a
    }

    /// Both paths carry light traffic (one 1000-byte datagram per 20 ms
    /// round trip, round robin) until their BBR leaves start-up at that
    /// rate; then path a falls silent. Path b, which inherits a's share,
    /// starts up again: its pacing jumps from about its light rate to
    /// start-up's floor (ten full packets per round trip, times 2.885).
    #[test]
    fn small_datagrams_are_not_held_back_by_a_paths_pacing() {
        let t0 = Instant::from_nanos(1_000_000_000);
        let mut config = two_paths("earliest-arrival", ms(2000));
        config.paths.truncate(1);
        let mut s = Sender::new(config).unwrap();
        // A full datagram leaves, and the path's pacing holds the next one.
        s.send(t0, vec![7; 1000]).unwrap();
        assert_eq!(sent_gseqs(&mut s).len(), 1);
        // Small ones (a returning TCP acknowledgement's size) leave at once.
        for _ in 0..10 {
            s.send(t0, vec![7; 100]).unwrap();
        }
        assert_eq!(sent_gseqs(&mut s).len(), 10);
        // A full one waits for pacing, and a small one behind it waits its
        // turn in the queue.
        s.send(t0, vec![7; 1000]).unwrap();
        s.send(t0, vec![7; 100]).unwrap();
        assert!(sent_gseqs(&mut s).is_empty());
        run_until(&mut s, t0 + ms(50));
        assert_eq!(sent_gseqs(&mut s).len(), 2);

        // A rate limit holds small ones too, and the sender wakes when the
        // limit lets the small one at its head go, not when pacing would
        // let a full one: at 1 Gbit/s, 1,046 IP bytes take 8.368 us.
        let mut config = two_paths("earliest-arrival", ms(2000));
        config.paths.truncate(1);
        let mut s = Sender::new(config).unwrap();
        s.set_rate_limit(0, Some(1_000_000_000));
        s.send(t0, vec![7; 1000]).unwrap();
        s.send(t0, vec![7; 100]).unwrap();
        assert_eq!(sent_gseqs(&mut s).len(), 1);
        let wake = s.poll_timeout().unwrap();
        assert!((8367..=8368).contains(&(wake - t0).as_nanos()), "{wake:?}");
        assert!(
            s.path(0).pacing_ready_at() > wake,
            "pacing holds a full one longer"
        );
        s.handle_timeout(wake);
        assert_eq!(sent_gseqs(&mut s).len(), 1);
    }

    #[test]
    fn a_path_that_carried_light_traffic_starts_up_again_when_the_other_dies() {
        let mut s = Sender::new(two_paths("rr", ms(2000))).unwrap();
        let t0 = Instant::from_nanos(1_000_000_000);
        let mut now = t0;
        // The largest packet number sent on each path.
        let mut largest = [None::<u32>; 2];
        let mut send_one = |s: &mut Sender, now: Instant| {
            s.send(now, vec![7; 1000]).unwrap();
            for (path, _) in sent_gseqs(s) {
                let l = &mut largest[usize::from(path)];
                *l = Some(l.map_or(0, |l| l + 1));
            }
            largest
        };
        for _ in 0..60 {
            let sent = send_one(&mut s, now);
            now += ms(20);
            for path in 0..2u8 {
                if let Some(l) = sent[usize::from(path)] {
                    ack_all(&mut s, now, path, l);
                }
            }
        }
        let light = s.path(1).cc().pacing_rate_bps().unwrap();
        assert!(light < 2e6, "{light}");
        // a stops answering; b still does.
        for _ in 0..30 {
            let sent = send_one(&mut s, now);
            now += ms(20);
            run_until(&mut s, now);
            ack_all(&mut s, now, 1, sent[1].unwrap());
            if s.path(0).is_suspect() {
                break;
            }
        }
        assert!(s.path(0).is_suspect());
        let restarted = s.path(1).cc().pacing_rate_bps().unwrap();
        assert!(restarted > 5.0 * light, "{light} -> {restarted}");
    }

    #[test]
    fn a_dead_paths_datagrams_go_out_again_on_the_live_path_with_their_numbers() {
        let mut s = Sender::new(two_paths("rr", ms(2000))).unwrap();
        let t0 = Instant::from_nanos(1_000_000_000);
        let on_a = eight_sent_then_a_silent(&mut s, t0);
        s.handle_timeout(t0 + ms(500));
        assert!(s.path(0).is_suspect());
        // b's pacing spaces them.
        run_until(&mut s, t0 + ms(505));
        // All four on b, oldest first, same numbers; round robin's turns
        // for a go to b, and no probe of a carries an old number.
        let again = sent_gseqs(&mut s);
        assert_eq!(again, on_a.iter().map(|&g| (1, g)).collect::<Vec<_>>());
        assert_eq!(s.counters.reinjected, 4);
        assert_eq!(s.counters.reinjected_bytes, 4000);
        assert_eq!(s.counters.sent_datagrams, 8);
        assert_eq!(s.counters.reinject_stale, 0);
        // Now kept as b's packets 4..8.
        assert_eq!(s.kept_in_flight_bytes(), 4000);
        // Path a comes back and acknowledges its old packets late: they
        // count as a's (late) deliveries only; b's copies are b's.
        ack_all(&mut s, t0 + ms(520), 0, 3);
        assert!(!s.path(0).is_suspect());
        assert_eq!(s.path(0).counters.late_acks, 4);
        assert_eq!(s.path(0).bytes_in_flight(), 0);
        assert_eq!(s.path(1).counters.acked_packets, 4);
        assert_eq!(s.kept_in_flight_bytes(), 4000);
        ack_all(&mut s, t0 + ms(540), 1, 7);
        assert_eq!(s.path(1).counters.acked_packets, 8);
        assert_eq!(s.kept_in_flight_bytes(), 0);
        // A new datagram still rises along b.
        s.send(t0 + ms(540), vec![7; 1000]).unwrap();
        assert_eq!(sent_gseqs(&mut s), vec![(0, 8)]);
    }

    #[test]
    fn a_datagram_scheduled_into_a_down_path_is_its_probe_when_one_is_due() {
        let mut s = Sender::new(two_paths("rr", ms(2000))).unwrap();
        let t0 = Instant::from_nanos(1_000_000_000);
        eight_sent_then_a_silent(&mut s, t0);
        let t1 = t0 + ms(500);
        s.handle_timeout(t1);
        run_until(&mut s, t1 + ms(5));
        // a's four re-sent on b: below a's numbers, none can be a's probe.
        assert_eq!(on_path(&sent_gseqs(&mut s), 1).len(), 4);
        assert_eq!(s.path(0).counters.probe_packets, 0);
        // Round robin ignores liveness: every other new datagram goes into
        // the down path a. The first is a's probe, the next one is not
        // (the probe interval has not passed), and no copy goes to a.
        for _ in 0..4 {
            s.send(t1 + ms(5), vec![7; 1000]).unwrap();
        }
        run_until(&mut s, t1 + ms(10));
        let sent = sent_gseqs(&mut s);
        assert_eq!((on_path(&sent, 0).len(), sent.len()), (2, 4), "{sent:?}");
        assert_eq!(s.path(0).counters.probe_packets, 1);
        // A probe interval later, the next one into a is its probe again.
        let t2 = t1 + crate::path::PROBE_INTERVAL + ms(5);
        s.send(t2, vec![7; 1000]).unwrap();
        s.send(t2, vec![7; 1000]).unwrap();
        run_until(&mut s, t2 + ms(5));
        assert_eq!(on_path(&sent_gseqs(&mut s), 0).len(), 1);
        assert_eq!(s.path(0).counters.probe_packets, 2);
        assert_eq!(s.path(0).counters.sent_packets, 4 + 3);
    }

    #[test]
    fn nothing_is_sent_again_without_another_live_path() {
        let mut s = Sender::new(two_paths("rr", ms(2000))).unwrap();
        let t0 = Instant::from_nanos(1_000_000_000);
        for _ in 0..8 {
            s.send(t0, vec![7; 1000]).unwrap();
        }
        let sent = sent_gseqs(&mut s);
        // The owner takes b out of use: its four go to a at once.
        s.set_usable_paths(t0 + ms(1), PathSet::one(0));
        let again = sent_gseqs(&mut s);
        let on_b: Vec<(u8, u64)> = on_path(&sent, 1).iter().map(|&g| (0, g)).collect();
        assert_eq!(again, on_b);
        assert_eq!(s.counters.reinjected, 4);
        assert_eq!(s.kept_in_flight_bytes(), 8000);
        // Then a dies too: b is not usable, nothing goes out, nothing is
        // kept.
        s.handle_timeout(t0 + ms(500));
        assert!(s.path(0).is_suspect());
        assert_eq!(sent_gseqs(&mut s), vec![]);
        assert_eq!(s.counters.reinjected, 4);
        assert_eq!(s.kept_in_flight_bytes(), 0);
    }

    #[test]
    fn datagrams_past_the_queue_delay_limit_are_not_sent_again() {
        let mut s = Sender::new(two_paths("rr", ms(300))).unwrap();
        let t0 = Instant::from_nanos(1_000_000_000);
        let on_a = eight_sent_then_a_silent(&mut s, t0);
        s.handle_timeout(t0 + ms(500));
        let (data, skips) = transmits(&mut s);
        assert_eq!(data, 0);
        assert_eq!(s.counters.reinject_stale, 4);
        assert_eq!((s.counters.reinjected, s.counters.dropped_stale), (0, 0));
        // The receiver is told to stop waiting for them.
        let skipped: Vec<u64> = skips
            .iter()
            .flat_map(|k| k.from..k.from + u64::from(k.count))
            .collect();
        assert_eq!(skipped, on_a);
        assert_eq!(s.kept_in_flight_bytes(), 0);
    }

    /// Round robin puts 8 datagrams on two paths (a: 0, 2, 4, 6); at
    /// `t0 + at` path a acknowledges its packets 1..=3, not 0, which is
    /// lost (three later ones acknowledged).
    fn a_loses_its_first(resend: bool, at: Duration) -> Sender {
        let mut config = two_paths("rr", ms(300));
        config.resend_losses = resend;
        let mut s = Sender::new(config).unwrap();
        let t0 = Instant::from_nanos(1_000_000_000);
        for _ in 0..8 {
            s.send(t0, vec![7; 1000]).unwrap();
        }
        let mut flags = Vec::new();
        while let Some(t) = s.poll_transmit() {
            if let Packet::Data { header, .. } = Packet::parse(&t.data).unwrap() {
                flags.push(header.resends);
            }
        }
        // Every data packet says whether its sender re-sends losses.
        assert_eq!(flags, vec![resend; 8]);
        let ack = wire::AckFrame {
            path: 0,
            largest_pseq: 3,
            ack_delay_us: 0,
            recv_ts_us: 0,
            bitmap: 0b011,
        };
        let packet = wire::feedback_packet(0, &[Frame::Ack(ack)]).unwrap();
        s.handle_datagram(t0 + at, &packet).unwrap();
        assert_eq!(s.path(0).counters.lost_packets, 1);
        s
    }

    #[test]
    fn a_lost_datagram_is_sent_again_with_its_number_when_the_sender_resends() {
        let mut s = a_loses_its_first(true, ms(40));
        let (sent, skips) = {
            let mut data = Vec::new();
            let mut skips = Vec::new();
            while let Some(t) = s.poll_transmit() {
                match Packet::parse(&t.data).unwrap() {
                    Packet::Data { header, payload } => {
                        data.push((header.gseq, header.resends, payload.len()))
                    }
                    Packet::Feedback { frames, .. } => skips.extend(frames),
                }
            }
            (data, skips)
        };
        assert_eq!(sent, vec![(0, true, 1000)]);
        assert!(skips.is_empty());
        assert_eq!((s.counters.resent, s.counters.resent_bytes), (1, 1000));
        assert_eq!((s.counters.sent_datagrams, s.counters.reinjected), (8, 0));
        // Kept again on the path that carries it now, beside b's four; a's
        // other three were acknowledged.
        assert_eq!(s.kept_in_flight_bytes(), 5000);
    }

    #[test]
    fn a_loss_older_than_the_queue_delay_limit_gets_a_skip_notice() {
        // Seen lost 300 ms after it was offered, at the limit: a re-send
        // would come after the receiver stopped waiting.
        let mut s = a_loses_its_first(true, ms(300));
        let (data, skips) = transmits(&mut s);
        assert_eq!(data, 0);
        assert_eq!(skips, vec![SkipFrame { from: 0, count: 1 }]);
        assert_eq!((s.counters.resent, s.counters.resend_stale), (0, 1));
        assert_eq!(s.counters.dropped_stale, 0);
    }

    #[test]
    fn without_a_path_to_resend_on_the_receiver_is_told_to_skip() {
        let mut s = a_loses_its_first(true, ms(40));
        let t0 = Instant::from_nanos(1_000_000_000);
        assert_eq!(sent_gseqs(&mut s), vec![(0, 0)]);
        // Every path taken out of use: what was in flight cannot go again
        // (b's 1, 3, 5, 7 and a's re-sent 0); a receiver waiting for
        // re-sends hears so.
        s.set_usable_paths(t0 + ms(50), PathSet::default());
        run_until(&mut s, t0 + ms(60));
        let (data, skips) = transmits(&mut s);
        assert_eq!(data, 0);
        let mut skipped: Vec<u64> = skips
            .iter()
            .flat_map(|k| k.from..k.from + u64::from(k.count))
            .collect();
        skipped.sort_unstable();
        // Each in two notices.
        assert_eq!(skipped, vec![0, 0, 1, 1, 3, 3, 5, 5, 7, 7]);
        assert_eq!(s.kept_in_flight_bytes(), 0);
    }

    /// Acknowledges packet `largest` of `path`, received at `received`
    /// (the test's clocks agree), and those before it `bitmap` names.
    fn ack_received(
        s: &mut Sender,
        now: Instant,
        path: u8,
        largest: u32,
        received: Instant,
        bitmap: u64,
    ) {
        let ack = wire::AckFrame {
            path,
            largest_pseq: largest,
            ack_delay_us: 0,
            recv_ts_us: received.wire_micros(),
            bitmap,
        };
        let packet = wire::feedback_packet(path, &[Frame::Ack(ack)]).unwrap();
        s.handle_datagram(now, &packet).unwrap();
    }

    /// Round robin over path a (10 ms one way) and path b (50 ms), rated
    /// `a_bps` and `b_bps`: one datagram each measures both, then four
    /// more go out at t1 (2 and 4 on a, 3 and 5 on b) and a's are
    /// acknowledged 20 ms later. Returns t1.
    fn b_passed_by_a(s: &mut Sender, t0: Instant, a_bps: f64, b_bps: f64) -> Instant {
        assert!(s.seed_path_rate(0, a_bps) && s.seed_path_rate(1, b_bps));
        s.send(t0, vec![7; 1000]).unwrap();
        s.send(t0, vec![7; 1000]).unwrap();
        assert_eq!(sent_gseqs(s), vec![(0, 0), (1, 1)]);
        ack_received(s, t0 + ms(20), 0, 0, t0 + ms(10), 0);
        ack_received(s, t0 + ms(100), 1, 0, t0 + ms(50), 0);
        let t1 = t0 + ms(200);
        for _ in 0..4 {
            s.send(t1, vec![7; 1000]).unwrap();
        }
        run_until(s, t1 + ms(1));
        assert_eq!(sent_gseqs(s), vec![(0, 2), (1, 3), (0, 4), (1, 5)]);
        ack_received(s, t1 + ms(20), 0, 2, t1 + ms(10), u64::MAX);
        t1
    }

    #[test]
    fn a_minor_paths_datagram_passed_by_a_quicker_path_is_copied_there_once() {
        let mut config = two_paths("rr", ms(2000));
        config.resend_losses = true;
        let mut s = Sender::new(config).unwrap();
        let t0 = Instant::from_nanos(1_000_000_000);
        // b carries under a tenth of the bond: minor.
        let t1 = b_passed_by_a(&mut s, t0, 10e6, 0.5e6);
        // 3 was passed at t1 + 20 ms (4 acknowledged on a). Acknowledgements
        // take 40 ms longer to come back on b (round trips 100 and 20 ms,
        // one-way delays 50 and 10), so 3 is due a copy at t1 + 20 + 40 +
        // the 30-ms margin. 5 is not passed: nothing above it arrived.
        run_until(&mut s, t1 + ms(89));
        assert_eq!(sent_gseqs(&mut s), vec![]);
        run_until(&mut s, t1 + ms(90));
        assert_eq!(sent_gseqs(&mut s), vec![(0, 3)]);
        assert_eq!((s.counters.hedged, s.counters.hedge_sent), (1, 1));
        assert_eq!(s.counters.sent_datagrams, 6);
        // a delivers the copy; b falls silent: of what it had in flight,
        // 5 goes out again on a, and 3, whose copy went before, does not.
        ack_received(&mut s, t1 + ms(150), 0, 3, t1 + ms(140), u64::MAX);
        run_until(&mut s, t1 + ms(300));
        assert!(s.path(1).is_suspect());
        assert_eq!(sent_gseqs(&mut s), vec![(0, 5)]);
        assert_eq!((s.counters.reinjected, s.counters.hedged), (1, 1));
        assert_eq!(s.counters.skip_packets, 0);
    }

    #[test]
    fn a_major_path_and_a_sender_that_does_not_resend_get_no_copies() {
        let t0 = Instant::from_nanos(1_000_000_000);
        for (resend, b_bps) in [(true, 5e6), (false, 0.5e6)] {
            let mut config = two_paths("rr", ms(2000));
            config.resend_losses = resend;
            let mut s = Sender::new(config).unwrap();
            let t1 = b_passed_by_a(&mut s, t0, 10e6, b_bps);
            // Past the time the minor path's datagram was copied, and
            // before b's silence would put its datagrams back.
            run_until(&mut s, t1 + ms(200));
            assert_eq!(sent_gseqs(&mut s), vec![], "{resend} {b_bps}");
            assert_eq!(s.counters.hedged, 0, "{resend} {b_bps}");
        }
    }

    #[test]
    fn feedback_that_is_no_feedback_is_counted_and_refused() {
        let mut s = Sender::new(two_paths("rr", ms(300))).unwrap();
        let t0 = Instant::from_nanos(1_000_000_000);
        s.send(t0, vec![7; 100]).unwrap();
        let data = s.poll_transmit().unwrap().data;
        // A data packet, garbage, and a skip frame (which only a sender
        // sends) each count once.
        assert!(s.handle_datagram(t0, &data).is_err());
        assert!(s.handle_datagram(t0, &[0xff, 1, 2]).is_err());
        let skip =
            wire::feedback_packet(0, &[Frame::Skip(SkipFrame { from: 0, count: 1 })]).unwrap();
        s.handle_datagram(t0, &skip).unwrap();
        assert_eq!(s.counters.malformed_feedback, 3);
    }

    #[test]
    fn a_sender_that_does_not_resend_tells_the_receiver_what_its_paths_lost() {
        let t0 = Instant::from_nanos(1_000_000_000);
        let mut s = a_loses_its_first(false, ms(40));
        // The loss is given up at once, in two notices, nothing sent again.
        run_until(&mut s, t0 + ms(50));
        let (data, skips) = transmits(&mut s);
        assert_eq!(data, 0);
        assert_eq!(skips, vec![SkipFrame { from: 0, count: 1 }; 2]);
        assert_eq!((s.counters.resent, s.counters.resend_stale), (0, 0));
        assert_eq!(s.kept_in_flight_bytes(), 4000);
        // Every path taken out of use: what b had in flight is lost too.
        s.set_usable_paths(t0 + ms(50), PathSet::default());
        run_until(&mut s, t0 + ms(70));
        let (data, skips) = transmits(&mut s);
        assert_eq!(data, 0);
        let mut skipped: Vec<u64> = skips
            .iter()
            .flat_map(|k| k.from..k.from + u64::from(k.count))
            .collect();
        skipped.sort_unstable();
        assert_eq!(skipped, vec![1, 1, 3, 3, 5, 5, 7, 7]);
        assert_eq!(s.kept_in_flight_bytes(), 0);
    }

    #[test]
    fn kept_payloads_stay_under_the_queue_byte_limit_and_copies_are_not_kept() {
        let mut config = two_paths("rr", ms(2000));
        config.max_queue_bytes = 3000;
        let mut s = Sender::new(config).unwrap();
        let t0 = Instant::from_nanos(1_000_000_000);
        for _ in 0..8 {
            s.send(t0, vec![7; 1000]).unwrap();
        }
        assert_eq!(sent_gseqs(&mut s).len(), 8);
        assert_eq!(s.kept_in_flight_bytes(), 3000);
        assert_eq!(s.counters.reinject_not_kept, 5);
        // Redundant scheduling: every datagram has a copy on the other
        // path already, none is kept.
        let mut s = Sender::new(two_paths("redundant", ms(2000))).unwrap();
        for _ in 0..4 {
            s.send(t0, vec![7; 1000]).unwrap();
        }
        assert_eq!(sent_gseqs(&mut s).len(), 8);
        assert_eq!(s.kept_in_flight_bytes(), 0);
    }

    /// (gseq, prev_gap, payload length) of every data packet sent.
    fn sent_headers(s: &mut Sender) -> Vec<(u64, u16, usize)> {
        let mut out = Vec::new();
        while let Some(t) = s.poll_transmit() {
            if let Packet::Data { header, payload } = Packet::parse(&t.data).unwrap() {
                out.push((u64::from(header.gseq), header.prev_gap, payload.len()));
            }
        }
        out
    }

    fn one_path() -> Sender {
        Sender::new(SenderConfig::new(
            two_paths("", ms(2000)).paths[..1].to_vec(),
        ))
        .unwrap()
    }

    #[test]
    fn a_datagram_sent_again_goes_back_behind_every_lower_number() {
        let mut s = one_path();
        let t0 = Instant::from_nanos(1_000_000_000);
        for _ in 0..200 {
            s.send_flow(t0, 1, vec![7; 1000]).unwrap();
        }
        assert_eq!(sent_headers(&mut s).len(), 1);
        // Two sparse flows' datagrams at the head, then 1..=63 in order
        // (300 bytes: smaller ones would not wait for pacing).
        s.send_flow(t0, 2, vec![9; 300]).unwrap();
        s.send_flow(t0, 3, vec![9; 300]).unwrap();
        let kept = |gseq| Kept {
            gseq,
            flow_gap: 1,
            payload: vec![7; 1000],
            enqueued: t0,
            express: false,
            due: None,
            hedged: false,
        };
        // 30 and 40 leave behind lower numbers (a `SendBehind`)...
        for gseq in [30, 40] {
            let index = s.queue.iter().position(|q| q.gseq == gseq).unwrap();
            s.take(index);
        }
        // ...and are lost, as is 0, sent from the head of the window.
        s.send_again(t0, vec![kept(0), kept(30), kept(40)], Again::Lost);
        let order: Vec<u64> = s.queue.iter().map(|q| q.gseq).collect();
        let mut expect = vec![0, 64, 65];
        expect.extend(1..=63);
        assert_eq!(order, expect);
        assert_eq!(
            s.head_len, 3,
            "0 joins the head, 30 and 40 the ordered part"
        );
        let again: Vec<u64> = s
            .queue
            .iter()
            .filter(|q| q.again.is_some())
            .map(|q| q.gseq)
            .collect();
        assert_eq!(again, [0, 30, 40]);
    }

    #[test]
    fn a_sparse_flows_datagrams_leave_ahead_of_the_window_in_their_order() {
        let mut s = one_path();
        let t0 = Instant::from_nanos(1_000_000_000);
        for _ in 0..200 {
            s.send_flow(t0, 1, vec![7; 1000]).unwrap();
        }
        // Pacing lets one out; the window holds the next 63.
        assert_eq!(sent_headers(&mut s), vec![(0, 0, 1000)]);
        assert_eq!(s.next_gseq, 64);
        // Two small flows' datagrams, then a second of the first: numbered
        // after the whole window, they leave first, in their order, when
        // the path may send again (300 bytes and more: smaller ones would
        // not wait for pacing).
        s.send_flow(t0, 2, vec![9; 300]).unwrap();
        s.send_flow(t0, 3, vec![9; 302]).unwrap();
        s.send_flow(t0, 2, vec![9; 301]).unwrap();
        assert_eq!(sent_headers(&mut s), vec![]);
        ack_all(&mut s, t0 + ms(40), 0, 0);
        run_until(&mut s, t0 + ms(60));
        let next = sent_headers(&mut s);
        assert_eq!(next[..3], [(64, 64, 300), (65, 1, 302), (66, 1, 301)]);
        // The window's lower numbers still go out on the same path after
        // them, in order; the falling gap is sent as unknown.
        assert_eq!(next[3], (1, 0, 1000));
        let bulk: Vec<u64> = next[3..].iter().map(|h| h.0).collect();
        assert_eq!(bulk, (1..1 + bulk.len() as u64).collect::<Vec<_>>());
        assert!(bulk.len() > 5 && next[4..].iter().all(|h| h.1 == 1));
        assert_eq!(s.counters.sent_express, 3);
        assert_eq!(s.counters.sent_datagrams, 1 + next.len() as u64);
        // The path's view counts those three, and only those, as express
        // traffic taking its rate: about 1,000 IP bytes over the shortest
        // span a rate is taken over (20 ms).
        let express = s.paths[0].express.bps(t0 + ms(60));
        assert!((0.3e6..0.5e6).contains(&express), "{express}");
        assert!(s.view_of(0, t0 + ms(60), 1_000).express_share > 0.0);
    }

    #[test]
    fn a_datagram_sent_again_stays_ahead_of_a_sparse_flows() {
        let mut s = one_path();
        let t0 = Instant::from_nanos(1_000_000_000);
        for _ in 0..200 {
            s.send_flow(t0, 1, vec![7; 1000]).unwrap();
        }
        assert_eq!(sent_headers(&mut s), vec![(0, 0, 1000)]);
        // 0 is lost while pacing holds the path: it heads the window...
        let lost = Kept {
            gseq: 0,
            flow_gap: 0,
            payload: vec![7; 1000],
            enqueued: t0,
            express: false,
            due: None,
            hedged: false,
        };
        s.send_again(t0 + ms(1), vec![lost], Again::Lost);
        assert_eq!(sent_headers(&mut s), vec![]);
        // ...and a sparse flow's datagram goes behind it, not before.
        s.send_flow(t0 + ms(1), 2, vec![9; 100]).unwrap();
        ack_all(&mut s, t0 + ms(40), 0, 0);
        run_until(&mut s, t0 + ms(60));
        let next = sent_headers(&mut s);
        assert_eq!(next[..3], [(0, 0, 1000), (64, 64, 100), (1, 0, 1000)]);
        assert_eq!((s.counters.resent, s.counters.sent_express), (1, 1));
    }

    #[test]
    fn a_sparse_flow_never_passes_its_own_datagram_in_the_window() {
        let mut s = one_path();
        let t0 = Instant::from_nanos(1_000_000_000);
        s.send_flow(t0, 2, vec![9; 100]).unwrap();
        // Pacing is closed now: the next one waits in the window, at its
        // tail (there was nothing to pass), and the flow is still sparse
        // when its third comes, which must not pass the second.
        s.send_flow(t0, 2, vec![9; 101]).unwrap();
        s.send_flow(t0, 2, vec![9; 102]).unwrap();
        run_until(&mut s, t0 + ms(30));
        let sent: Vec<(u64, usize)> = sent_headers(&mut s).iter().map(|h| (h.0, h.2)).collect();
        assert_eq!(sent, [(0, 100), (1, 101), (2, 102)]);
        assert_eq!(s.counters.sent_express, 0);
    }

    #[test]
    fn a_flows_datagram_lands_after_its_paths_lead_over_the_quickest() {
        let t0 = Instant::from_nanos(1_000_000_000);
        let mut clock = OwdClock::for_sender();
        // Path 0: one-way 50 ms, path 1: 10 ms, one sample each (delays
        // count from the first sample's, so path 1's floor is below 0).
        let mut paths: Vec<PathSender> = [50, 10]
            .iter()
            .enumerate()
            .map(|(i, &owd)| {
                let mut p = PathSender::new(i as u8, 1.0, CcKind::Bbr.build());
                p.on_sent(t0, 0, 1000, false);
                let ack = wire::AckFrame {
                    path: i as u8,
                    largest_pseq: 0,
                    ack_delay_us: 0,
                    recv_ts_us: (t0 + ms(owd)).wire_micros(),
                    bitmap: 0,
                };
                p.on_ack_observed(t0 + ms(2 * owd), &ack, &mut clock, |_, _| {});
                assert!(p.owd.has_samples());
                p
            })
            .collect();
        let t1 = t0 + ms(100);
        assert!(landed(&paths, None, t1));
        assert!(landed(&paths, Some((t1, 1)), t1));
        assert!(!landed(&paths, Some((t1, 0)), t1 + ms(39)));
        assert!(landed(&paths, Some((t1, 0)), t1 + ms(40)));
        // A path with no delay sample counts as quickest.
        paths.push(PathSender::new(2, 1.0, CcKind::Bbr.build()));
        assert!(landed(&paths, Some((t1, 2)), t1));
    }

    #[test]
    fn codel_drops_and_marks_in_the_flow_queue_are_counted() {
        // An ECN-capable IPv4 packet (ECT(0)).
        let mut ect = vec![7; 1000];
        ect[..2].copy_from_slice(&[0x45, 0b10]);
        for (mark_ecn, payload) in [(false, vec![7; 1000]), (false, ect.clone()), (true, ect)] {
            let mut config = SenderConfig::new(two_paths("", ms(2000)).paths[..1].to_vec());
            config.fq.mark_ecn = mark_ecn;
            let mut s = Sender::new(config).unwrap();
            let t0 = Instant::from_nanos(1_000_000_000);
            // A standing queue in the flow queue (put there directly: the
            // window would take it otherwise). Its head waits past CoDel's
            // target (25 ms) at the first dequeue, and for an interval (100
            // ms) more at the second, which drops or marks.
            for _ in 0..1000 {
                s.flows.enqueue(t0, 1, payload.clone());
            }
            for (at, sparse) in [(200, false), (301, false), (302, true)] {
                s.take_from_flows(t0 + ms(at), sparse);
            }
            let c = &s.counters;
            let (acted, idle) = if mark_ecn {
                (c.marked_codel, c.dropped_codel)
            } else {
                (c.dropped_codel, c.marked_codel)
            };
            assert!(acted > 0, "mark_ecn {mark_ecn}");
            assert_eq!(idle, 0, "mark_ecn {mark_ecn}");
            assert_eq!(c.dropped_codel, s.flows.counters.codel_drops);
            assert_eq!(c.marked_codel, s.flows.counters.codel_marks);
        }
    }

    /// Two paths limited to 100 kbit/s (a 1000-byte datagram every 80 ms),
    /// round trips of 20 ms measured, then 100 datagrams offered at the
    /// returned instant with a 100-ms queue delay limit: most wait.
    fn queue_behind_slow_paths() -> (Sender, Instant) {
        let mut s = Sender::new(two_paths(sched::DEFAULT, ms(100))).unwrap();
        let t0 = Instant::from_nanos(1_000_000_000);
        for p in 0..2 {
            s.set_rate_limit(p, Some(100_000));
        }
        s.send(t0, vec![7; 1000]).unwrap();
        s.send(t0, vec![7; 1000]).unwrap();
        assert_eq!(sent_gseqs(&mut s).len(), 2);
        ack_all(&mut s, t0 + ms(20), 0, 0);
        ack_all(&mut s, t0 + ms(20), 1, 0);
        let t1 = t0 + ms(20);
        for _ in 0..100 {
            s.send(t1, vec![7; 1000]).unwrap();
        }
        (s, t1)
    }

    /// Runs the sender for `span` from `from`; every 10 ms the `acking`
    /// paths acknowledge what they have been sent.
    fn pace(s: &mut Sender, from: Instant, span: Duration, acking: &[u8]) {
        // The first datagram of each path went out and was acknowledged.
        let mut largest = [1u32; 2];
        let mut t = from;
        while t < from + span {
            t = (t + ms(10)).min(from + span);
            run_until(s, t);
            for (path, _) in sent_gseqs(s) {
                largest[usize::from(path)] += 1;
            }
            for &p in acking {
                ack_all(s, t, p, largest[usize::from(p)] - 1);
            }
        }
    }

    /// Runs the sender's timers until the rate limit lets the first
    /// queued datagram go; returns when. Nothing was in flight before: the
    /// answer to that one is due a round trip and an acknowledgement's
    /// delay (28 ms) later, and the queue's clock stands from then if none
    /// comes.
    fn first_in_flight(s: &mut Sender, t1: Instant) -> Instant {
        let (mut first, mut firings) = (t1, 0);
        while s.counters.sent_datagrams == 2 {
            first = fire_next(s, &mut firings);
        }
        first
    }

    #[test]
    fn queued_datagrams_do_not_age_while_no_path_answers() {
        let (mut s, t1) = queue_behind_slow_paths();
        let first = first_in_flight(&mut s, t1);
        let stands_at = first + ms(28);
        // Silence for 400 ms, four times the limit: datagrams leave at the
        // paths' rate, none waiting goes stale.
        pace(&mut s, first, ms(400), &[]);
        assert_eq!(s.counters.dropped_stale, 0);
        let left = s.counters.sent_datagrams - 2;
        assert_eq!(s.queued_bytes() as u64, (100 - left) * 1000);
        // Feedback again: the clock runs from where it stood, and the
        // oldest, offered at t1, goes stale after the rest of its 100 ms.
        let back = first + ms(400);
        ack_all(&mut s, back, 0, 1);
        let stale_at = back + (ms(100) - (stands_at - t1));
        run_until(&mut s, stale_at.saturating_sub(ms(1)));
        assert_eq!(s.counters.dropped_stale, 0);
        run_until(&mut s, stale_at);
        assert!(s.counters.dropped_stale > 0);
    }

    #[test]
    fn an_answer_is_due_a_round_trip_after_a_live_path_sent() {
        let (mut s, t1) = queue_behind_slow_paths();
        // Both paths answered, nothing is in flight: none is awaited.
        assert_eq!(s.answer_due_within(), None);
        let first = first_in_flight(&mut s, t1);
        // One 20-ms path has a datagram in flight.
        assert_eq!(s.answer_due_within(), Some(ms(20) + SMALL_ACK_DELAY));
        // Silent until both are down: the probe a down path has in flight
        // is not awaited.
        pace(&mut s, first, ms(400), &[]);
        assert!((0..2).all(|p| s.path(p).liveness.is_down()));
        let mut firings = 0;
        while (0..2).all(|p| s.path(p).bytes_in_flight() == 0) {
            fire_next(&mut s, &mut firings);
        }
        assert_eq!(s.answer_due_within(), None);
    }

    #[test]
    fn queued_datagrams_age_while_one_path_answers() {
        let (mut s, t1) = queue_behind_slow_paths();
        let first = first_in_flight(&mut s, t1);
        // b acknowledges what it sends: only a is silent, and the oldest
        // goes stale 100 ms after it was offered.
        pace(&mut s, first, t1 + ms(99) - first, &[1]);
        assert_eq!(s.counters.dropped_stale, 0);
        pace(&mut s, t1 + ms(99), ms(10), &[1]);
        assert!(s.counters.dropped_stale > 0);
    }

    #[test]
    fn queued_datagrams_age_again_after_a_second_of_silence() {
        let (mut s, t1) = queue_behind_slow_paths();
        let first = first_in_flight(&mut s, t1);
        let stands_at = first + ms(28);
        // The clock stands for a second, then runs again: the oldest goes
        // stale after the rest of its 100 ms.
        let stale_at = stands_at + crate::queue_clock::MAX_STAND + (ms(100) - (stands_at - t1));
        run_until(&mut s, stale_at.saturating_sub(ms(1)));
        assert_eq!(s.counters.dropped_stale, 0);
        run_until(&mut s, stale_at);
        assert!(s.counters.dropped_stale > 0);
    }
}
