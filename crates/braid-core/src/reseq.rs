//! Resequencer, after paper multilink-udp-proxy §III-C.
//!
//! Packets carry a global sequence number (order across paths) and a
//! per-path one. Paths do not reorder internally, so a gap in a path's own
//! sequence is loss: the caller reports the global number it can pin down
//! (the packet before the current one on that path, from the header's
//! `prev_gap`) and the resequencer skips it at once. Any other hole waits for
//! a timeout computed like TCP's RTO but from one-way delays; the first and
//! second consecutive expiry each release one packet (skipping the holes
//! before it), the third releases everything held. The buffer is bounded in
//! bytes and in holding time. Pass-through mode delivers at once and only
//! drops duplicates, for traffic that does not need order.
//!
//! Order is kept per flow, not across flows: a packet may also name its
//! flow's previous packet (the header's `flow_gap`, a [`FlowLink`]), and
//! goes out at once, ahead of global order, when that one has gone: it
//! was delivered, or the delivery point passed it. A packet whose
//! predecessor is still missing waits, indexed by the predecessor, and the
//! predecessor's delivery (or the delivery point passing it) releases it
//! and whatever waits on it in turn. So a small flow's packet that came on
//! a fast path does not wait behind a bulk flow's holes on a slow one. A
//! predecessor known lost does not count as gone: the packet before it in
//! the flow may still be missing too, and waiting for the delivery point
//! to pass it keeps each flow in order. Holes ahead of packets delivered
//! early still time out like holes ahead of held ones, so the numbers the
//! delivery point has not passed stay bounded.
//!
//! When the sender re-sends what its paths lose (a gap's `resent`), a
//! number a path gap pins down is not skipped at once: the sender, having
//! seen the same gap in the path's acknowledgements, sends the datagram
//! again or a skip notice for it, and the hole waits for whichever comes
//! first, or at most [`RESEND_WAIT`] (the follow-up itself may be lost).
//! An inner TCP that sees a hole filled a round trip late keeps its
//! window; one that sees it skipped takes it as congestion.
//!
//! An express packet (see [`crate::wire`]) was sent ahead of lower numbers
//! the sender still held: it is delivered at once, in order for its flow
//! (the sender waits until its flow's previous packet should have
//! arrived; one that has not is passed all the same, and counted), and its
//! number is passed like any delivered ahead, but it is no sign of a hole:
//! it arms no timer, and a timeout never skips up to it.
//!
//! A packet the sender sent behind lower numbers it still held
//! ([`SentAs::Behind`]) is no sign that they left: the sender expected
//! them to land first, from rate estimates that may be wrong (a path
//! whose estimate rests on light traffic sends slower than predicted).
//! A hole that only such packets have passed waits as long as a number
//! awaited from the sender ([`RESEND_WAIT`]); the first packet sent in
//! order that passes it says every lower number has left the sender, and
//! the hole timeout runs from then.
//!
//! A packet arriving after its number was skipped is delivered at once,
//! marked out of order: the network delivered it and the application (an
//! inner TCP, say) is better served by late data than by none. It is never
//! delivered twice.
//!
//! Every number comes from the network, so nothing here costs more than a
//! bounded amount per packet: numbers more than `window` ahead of the
//! delivery point are dropped and counted, losses and skips are kept as
//! ranges (one entry however wide), and the packets held, the ranges known
//! lost and the ranges remembered as skipped are each capped.

pub(crate) mod ranges;
mod sorted;

use std::collections::VecDeque;

use ranges::RangeSet;
use sorted::SortedDeque;

use crate::cc::WindowedMax;
use std::time::Duration;

use crate::time::Instant;
use crate::wire::GAP_SATURATED;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReseqMode {
    Ordered,
    PassThrough,
}

#[derive(Debug, Clone, Copy)]
pub struct ReseqConfig {
    pub mode: ReseqMode,
    /// Most payload bytes held.
    pub max_bytes: usize,
    /// Longest a packet is held.
    pub max_hold: Duration,
    /// Most packets held (bounds memory when payloads are tiny).
    pub max_packets: usize,
    /// Numbers at or beyond `window` ahead of the next one to deliver are
    /// dropped: no honest sender runs that far ahead of the receiver. At
    /// most [`MAX_WINDOW`] (larger values are taken as it): the wire
    /// carries numbers as their low 32 bits.
    pub window: u64,
}

impl Default for ReseqConfig {
    fn default() -> Self {
        ReseqConfig {
            mode: ReseqMode::Ordered,
            max_bytes: 4 << 20,
            max_hold: Duration::from_millis(500),
            max_packets: 1 << 16,
            window: 1 << 20,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Delivery {
    pub gseq: u64,
    pub payload: Vec<u8>,
    /// False for a packet released after a later one of its flow (it
    /// arrived after its number had been skipped, or pass-through mode
    /// delivered it early). A packet released ahead of global order once
    /// its flow's previous one has gone is in order.
    pub in_order: bool,
    /// Time the resequencer held it.
    pub held: Duration,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ReseqCounters {
    pub delivered: u64,
    pub delivered_late: u64,
    /// Delivered ahead of global order, in order for their flow (counted in
    /// `delivered` too).
    pub delivered_early: u64,
    pub duplicates: u64,
    /// Global numbers skipped: known lost, or given up on at a timeout or bound.
    pub skipped: u64,
    pub timeouts: u64,
    /// Packets and skip notices dropped for numbers outside the window.
    pub out_of_window: u64,
    /// Express packets delivered before their flow's previous packet.
    pub express_unordered: u64,
}

#[derive(Debug)]
struct Held {
    payload: Vec<u8>,
    arrived: Instant,
    /// Sent behind lower numbers the sender still held.
    behind: bool,
    /// Its entry in `waiting`, while it waits for its flow's previous packet.
    waits_on: Option<Waiter>,
}

/// How the sender sent a packet relative to the numbers below it (the
/// data header's type bits, see [`crate::wire`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SentAs {
    /// From the head of the sender's window: every lower number had left
    /// the sender (sent, or dropped and notified) before it.
    InOrder,
    /// Ahead of lower numbers the sender held for a path it expected to
    /// deliver them sooner: they may still be at the sender.
    Behind,
    /// A sparse flow's datagram put ahead of lower numbers not sent yet.
    Express,
}

/// Where a packet's flow's previous packet is, from the header's `flow_gap`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FlowLink {
    /// No flow information: the packet waits for global order.
    Unknown,
    /// The flow has no earlier packet.
    First,
    /// The flow's previous packet has this number.
    After(u64),
    /// The flow's previous packet is at or below this number: it has gone
    /// once the delivery point is beyond it.
    AtOrBelow(u64),
}

impl FlowLink {
    /// Reads a header's `flow_gap` (see [`crate::wire`]).
    pub fn from_wire(gseq: u64, flow_gap: u16) -> FlowLink {
        let back = gseq.checked_sub(u64::from(flow_gap));
        match flow_gap {
            0 => FlowLink::Unknown,
            GAP_SATURATED => back.map_or(FlowLink::First, FlowLink::AtOrBelow),
            // A predecessor below 0 is no predecessor.
            _ => back.map_or(FlowLink::First, FlowLink::After),
        }
    }
}

/// A held packet waiting for its flow's previous packet: (that packet's
/// number, whether the link is only "at or below" it, the packet's number).
/// Ordered so that the exact links to one number form one range.
type Waiter = (u64, bool, u64);

/// A hole in one path's own sequence, seen when a packet arrives after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PathGap {
    /// Global number of the last packet the path delivered before the hole.
    pub after: Option<u64>,
    /// How many of the path's packets are missing.
    pub lost: u64,
    /// Global number of the packet sent on the path just before this one.
    pub last_lost: Option<u64>,
    /// The sender re-sends lost datagrams (the header's flag): the numbers
    /// the gap pins down are awaited, not skipped.
    pub resent: bool,
}

/// The most the learned fill time may stretch the caller's timeout.
const LEARNED_STRETCH_MAX: u32 = 4;

/// How long the hole timeout remembers a slow fill, in milliseconds.
const FILL_WINDOW_MS: u64 = 10_000;

/// Widest per-path hole `note_gap` will resolve by counting (it counts the
/// packets held inside it).
const MAX_GAP_SCAN: u64 = 1 << 12;

/// How far below `next` the resequencer remembers what it skipped, to tell a
/// late packet from a duplicate...
const SKIP_MEMORY: u64 = 1 << 16;
/// ...in at most this many ranges.
const MAX_SKIPPED_RANGES: usize = 1 << 12;
/// Most separate ranges of numbers known lost ahead of `next`.
const MAX_LOST_RANGES: usize = 1 << 12;
/// Longest a number a path gap pinned down waits for the sender's re-send
/// or skip notice when neither arrives (never less than the hole
/// timeout). The follow-up normally comes within the lossy path's one-way
/// delay back plus the quickest path's forward (the sender detects the
/// loss from the same gap); the wait bounds it when the follow-up is
/// itself lost, or never sent (a datagram sent as copies on several paths
/// is not re-sent). A re-send the sender holds past its queue delay limit
/// becomes a skip notice, so the wait rarely runs out.
pub const RESEND_WAIT: Duration = Duration::from_millis(200);
/// Most separate ranges of numbers awaiting a re-send ahead of `next`.
const MAX_AWAITED_RANGES: usize = 1 << 12;
/// Most express numbers remembered ahead of `next`, well under
/// `SKIP_MEMORY`.
const MAX_EXPRESS_AHEAD: usize = 1024;

/// The widest [`ReseqConfig::window`]: numbers within it of the next one to
/// deliver, and the late ones the receiver still recognises, stay within
/// 2^31 of it, so they widen from 32 bits unambiguously.
pub const MAX_WINDOW: u64 = 1 << 30;

#[derive(Debug)]
pub struct Resequencer {
    config: ReseqConfig,
    /// Next global number to deliver in order.
    next: u64,
    held: SortedDeque<u64, Held>,
    held_bytes: usize,
    /// Numbers at or above `next` known lost (per-path gap, skip notice).
    /// May cover held packets (a forged notice); those are still delivered.
    known_lost: RangeSet,
    /// Numbers at or above `next` a path gap pinned down while the sender
    /// re-sends losses: awaited for up to `RESEND_WAIT`, not skipped.
    awaiting_resend: RangeSet,
    /// Ranges below `next` skipped without delivery: start -> (end, when).
    skipped: SortedDeque<u64, (u64, Instant)>,
    /// How long holes take to fill: the time from the first packet held
    /// behind a hole to the hole's packet, including ones that came after
    /// their number was given up on. The sender may hold earlier packets
    /// back for a faster path (`SendBehind`), so holes can outlast what
    /// one-way delays predict. Fill times are bimodal (most holes close in
    /// a millisecond, some take a path's delay), so the timeout follows the
    /// largest recent one rather than a mean and variance.
    fill_max: WindowedMax,
    /// Time of the latest input, stamped on skipped numbers.
    now: Instant,
    /// (arrival, number) of held packets in arrival order; entries of
    /// packets already released are pruned lazily from the front.
    arrivals: VecDeque<(Instant, u64)>,
    /// Numbers at or above `next` already delivered: in pass-through mode,
    /// or early for their flow...
    seen_ahead: SortedDeque<u64, ()>,
    /// ...of which these came express: no sign of a hole...
    express_ahead: SortedDeque<u64, ()>,
    /// ...and these were sent behind lower numbers (`SentAs::Behind`).
    behind_ahead: SortedDeque<u64, ()>,
    /// Held packets not sent behind.
    held_in_order: usize,
    /// Held packets waiting for their flow's previous packet; one entry per
    /// such packet, removed when it is released.
    waiting: SortedDeque<Waiter, ()>,
    /// Numbers `deliver_early` has delivered whose waiters it has yet to
    /// release (kept for its room).
    chain: Vec<u64>,
    /// Deadline of the hole at `timer_hole`: a hole gets its full timeout
    /// from the moment it becomes the head of the line.
    timer: Option<Instant>,
    timer_hole: u64,
    /// The timer waits for the sender (`resend_wait`) because only packets
    /// sent behind have passed the hole.
    timer_waits_sender: bool,
    expiries: u32,
    timeout: Duration,
    out: VecDeque<Delivery>,
    pub counters: ReseqCounters,
}

impl Resequencer {
    pub fn new(config: ReseqConfig) -> Resequencer {
        Resequencer {
            config: ReseqConfig {
                window: config.window.min(MAX_WINDOW),
                ..config
            },
            next: 0,
            held: SortedDeque::default(),
            held_bytes: 0,
            known_lost: RangeSet::default(),
            awaiting_resend: RangeSet::default(),
            skipped: SortedDeque::default(),
            fill_max: WindowedMax::new(FILL_WINDOW_MS),
            now: Instant::ZERO,
            arrivals: VecDeque::new(),
            seen_ahead: SortedDeque::default(),
            express_ahead: SortedDeque::default(),
            behind_ahead: SortedDeque::default(),
            held_in_order: 0,
            waiting: SortedDeque::default(),
            chain: Vec::new(),
            timer: None,
            timer_hole: 0,
            timer_waits_sender: false,
            expiries: 0,
            timeout: Duration::from_millis(50),
            out: VecDeque::new(),
            counters: ReseqCounters::default(),
        }
    }

    /// The next number to deliver in order: what the wire's 32-bit
    /// numbers are widened against ([`crate::wire::widen`]).
    pub fn next_in_order(&self) -> u64 {
        self.next
    }

    /// Sets the hole timeout (the caller derives it from one-way delays).
    pub fn set_timeout(&mut self, timeout: Duration) {
        self.timeout = timeout.min(self.config.max_hold);
    }

    fn on_fill(&mut self, waited: Duration) {
        let now_ms = self.now.as_nanos() / 1_000_000;
        self.fill_max.update(now_ms, waited.as_secs_f64());
    }

    /// The caller's timeout, or longer if holes have recently taken longer.
    fn hole_timeout(&self) -> Duration {
        let learned =
            Duration::from_secs_f64(self.fill_max.get().unwrap_or(0.0)) + Duration::from_millis(2);
        // Learning may stretch the timeout, not replace it: a path stuck in a
        // fade must not make every hole wait for the holding bound.
        self.timeout
            .max(learned.min(self.timeout * LEARNED_STRETCH_MAX))
            .min(self.config.max_hold)
    }

    pub fn held_bytes(&self) -> usize {
        self.held_bytes
    }

    pub fn held_packets(&self) -> usize {
        self.held.len()
    }

    /// Accepts a packet; `gap` describes a hole in its path's own sequence
    /// just before it, `flow` where its flow's previous packet is.
    pub fn push(
        &mut self,
        now: Instant,
        gseq: u64,
        payload: Vec<u8>,
        gap: Option<PathGap>,
        flow: FlowLink,
    ) {
        self.push_marked(now, gseq, payload, gap, flow, SentAs::InOrder);
    }

    /// As `push`, for a packet the sender sent as `sent` (see the module
    /// documentation).
    pub fn push_marked(
        &mut self,
        now: Instant,
        gseq: u64,
        payload: Vec<u8>,
        gap: Option<PathGap>,
        flow: FlowLink,
        sent: SentAs,
    ) {
        self.now = now;
        if gseq >= self.window_end() {
            self.counters.out_of_window += 1;
            return;
        }
        if let Some(gap) = gap {
            self.note_gap(now, gseq, gap);
        }
        if gseq < self.next {
            return self.push_late(now, gseq, payload);
        }
        // Past the cap an express packet is taken as an ordinary one, so
        // that ordinary numbers always outnumber express ones beyond
        // `SKIP_MEMORY`.
        let express = sent == SentAs::Express
            && gseq != self.next
            && self.express_ahead.len() < MAX_EXPRESS_AHEAD;
        // Past the same cap a packet sent behind is taken as one sent in
        // order: its hole gets the shorter timeout.
        let behind = sent == SentAs::Behind && self.behind_ahead.len() < MAX_EXPRESS_AHEAD;
        match self.config.mode {
            ReseqMode::PassThrough => self.push_pass_through(now, gseq, payload),
            ReseqMode::Ordered if express => self.push_express_ahead(now, gseq, payload, flow),
            ReseqMode::Ordered => self.push_ordered(now, gseq, payload, flow, behind),
        }
    }

    /// Delivers an express packet ahead of `next` at once.
    fn push_express_ahead(&mut self, now: Instant, gseq: u64, payload: Vec<u8>, flow: FlowLink) {
        if self.held.contains(&gseq) || self.seen_ahead.contains(&gseq) {
            self.counters.duplicates += 1;
            return;
        }
        if !self.flow_ready(flow) {
            self.counters.express_unordered += 1;
        }
        self.express_ahead.insert(gseq, ());
        self.deliver_early(now, gseq, payload, Duration::ZERO, false);
        self.bound_seen_ahead(now);
        self.update_timer(now);
    }

    /// First number beyond the window ahead of the delivery point.
    fn window_end(&self) -> u64 {
        self.next.saturating_add(self.config.window)
    }

    /// The sender dropped `from .. from + count` unsent: never wait for them.
    pub fn skip(&mut self, now: Instant, from: u64, count: u32) {
        self.now = now;
        let end = from.saturating_add(u64::from(count));
        if end > self.window_end() {
            self.counters.out_of_window += 1;
        }
        self.mark_lost(from, end);
        self.release_in_order(now);
        if self.config.mode == ReseqMode::Ordered {
            self.update_timer(now);
        }
    }

    /// Records `lo..hi` as lost, clipped to the window.
    fn mark_lost(&mut self, lo: u64, hi: u64) {
        let (lo, hi) = (lo.max(self.next), hi.min(self.window_end()));
        self.known_lost.insert(lo, hi);
        if self.known_lost.len() > MAX_LOST_RANGES {
            self.known_lost.pop_last();
        }
    }

    /// Turns a per-path gap into known losses. The packet sent just before
    /// this one on the path is lost for sure. Beyond that: the path's lost
    /// packets all lie between the last one it delivered (`after`) and this
    /// one; if exactly as many numbers are missing there as the path lost,
    /// every missing number there is one of them.
    fn note_gap(&mut self, now: Instant, gseq: u64, gap: PathGap) {
        let lost = |this: &mut Self, lo: u64, hi: u64| {
            if gap.resent {
                this.await_resend(now, lo, hi);
            } else {
                this.mark_lost(lo, hi);
            }
        };
        if let Some(l) = gap.last_lost.filter(|&l| l < gseq) {
            lost(self, l, l + 1);
        }
        let Some(after) = gap.after.filter(|&a| a < gseq) else {
            return;
        };
        let (lo, hi) = (after + 1, gseq);
        if hi - lo > MAX_GAP_SCAN || self.skipped_any(lo, hi.min(self.next)) {
            // Numbers of the hole already given up on may have been this
            // path's: then the counts no longer pin anything down.
            return;
        }
        let start = lo.max(self.next);
        if start >= hi {
            return;
        }
        let present = self.held.count_in(&start, &hi) + self.seen_ahead.count_in(&start, &hi);
        if hi - start - present as u64 == gap.lost {
            // Held numbers inside the range are delivered all the same.
            lost(self, start, hi);
        }
    }

    /// Records `lo..hi` as awaiting a re-send, clipped to the window. When
    /// the head of the line is among them, its timer is stretched to
    /// the awaited wait from now (`resend_wait`).
    fn await_resend(&mut self, now: Instant, lo: u64, hi: u64) {
        let (lo, hi) = (lo.max(self.next), hi.min(self.window_end()));
        if lo >= hi {
            return;
        }
        // Numbers delivered since are no longer awaited.
        self.awaiting_resend.remove_below(self.next);
        self.awaiting_resend.insert(lo, hi);
        if self.awaiting_resend.len() > MAX_AWAITED_RANGES {
            self.awaiting_resend.pop_last();
        }
        if (lo..hi).contains(&self.next) && self.timer_hole == self.next {
            let until = now + self.resend_wait();
            if let Some(t) = self.timer.as_mut() {
                *t = (*t).max(until);
            }
        }
    }

    /// Whether `gseq` is awaited from the sender (re-send or skip notice).
    fn awaits_resend(&self, gseq: u64) -> bool {
        self.awaiting_resend.end_of_range_holding(gseq).is_some()
    }

    /// How long an awaited hole waits: never less than any other hole.
    fn resend_wait(&self) -> Duration {
        let hole = self.hole_timeout();
        RESEND_WAIT.min(self.config.max_hold).max(hole)
    }

    /// Whether a number in `lo..hi` (below `next`) was skipped.
    fn skipped_any(&self, lo: u64, hi: u64) -> bool {
        lo < hi
            && self
                .skipped
                .at_or_before(&(hi - 1))
                .is_some_and(|(_, &(end, _))| end > lo)
    }

    /// A number below `next`: delivered once if it had been skipped, else a
    /// duplicate. (In pass-through mode the fill sample goes unused.)
    fn push_late(&mut self, now: Instant, gseq: u64, payload: Vec<u8>) {
        let Some((start, &(end, skipped_at))) = self
            .skipped
            .at_or_before(&gseq)
            .filter(|(_, &(end, _))| end > gseq)
        else {
            self.counters.duplicates += 1;
            return;
        };
        // Cut the number out of its range: a second copy is a duplicate.
        self.skipped.remove(&start);
        if start < gseq {
            self.skipped.insert(start, (gseq, skipped_at));
        }
        if gseq + 1 < end {
            self.skipped.insert(gseq + 1, (end, skipped_at));
        }
        self.trim_skipped();
        // The hole was open for about one timeout before the skip.
        self.on_fill(now - skipped_at + self.hole_timeout());
        self.emit(gseq, payload, false, Duration::ZERO);
    }

    fn push_pass_through(&mut self, now: Instant, gseq: u64, payload: Vec<u8>) {
        if self.seen_ahead.insert(gseq, ()).is_some() {
            self.counters.duplicates += 1;
            return;
        }
        let in_order = gseq == self.next;
        self.emit(gseq, payload, in_order, Duration::ZERO);
        self.release_in_order(now);
        self.bound_seen_ahead(now);
    }

    /// Holes that never fill must not grow memory without bound: beyond
    /// `SKIP_MEMORY` numbers delivered ahead, the first hole is given up.
    fn bound_seen_ahead(&mut self, now: Instant) {
        while self.seen_ahead.len() as u64 > SKIP_MEMORY {
            self.release_first(now);
        }
    }

    /// Whether the flow's previous packet has gone: delivered, or passed
    /// by the delivery point.
    fn flow_ready(&self, flow: FlowLink) -> bool {
        match flow {
            FlowLink::Unknown => false,
            FlowLink::First => true,
            FlowLink::After(p) => p < self.next || self.seen_ahead.contains(&p),
            FlowLink::AtOrBelow(p) => p < self.next,
        }
    }

    fn push_ordered(
        &mut self,
        now: Instant,
        gseq: u64,
        payload: Vec<u8>,
        flow: FlowLink,
        behind: bool,
    ) {
        if self.held.contains(&gseq) || self.seen_ahead.contains(&gseq) {
            self.counters.duplicates += 1;
            return;
        }
        if gseq != self.next && self.flow_ready(flow) {
            self.deliver_early(now, gseq, payload, Duration::ZERO, behind);
            self.bound_seen_ahead(now);
            self.update_timer(now);
            return;
        }
        let waits_on = match flow {
            FlowLink::After(p) if gseq != self.next => Some((p, false, gseq)),
            FlowLink::AtOrBelow(p) if gseq != self.next => Some((p, true, gseq)),
            _ => None,
        };
        if let Some(w) = waits_on {
            self.waiting.insert(w, ());
        }
        // A re-sent packet's wait is a round trip, not the paths' delay
        // spread the hole timeout learns.
        if gseq == self.next && !self.awaits_resend(gseq) {
            if let Some((_, first)) = self.held.first() {
                let waited = now - first.arrived;
                self.on_fill(waited);
            }
        }
        self.held_bytes += payload.len();
        self.held_in_order += usize::from(!behind);
        self.held.insert(
            gseq,
            Held {
                payload,
                arrived: now,
                behind,
                waits_on,
            },
        );
        self.release_in_order(now);
        if self.held.contains(&gseq) {
            self.arrivals.push_back((now, gseq));
        }
        self.enforce_bounds(now);
        self.update_timer(now);
    }

    /// Delivers `gseq` (at or beyond `next`) ahead of global order, then
    /// the held packets of its flow that waited for it, in a chain.
    fn deliver_early(
        &mut self,
        now: Instant,
        gseq: u64,
        payload: Vec<u8>,
        held: Duration,
        behind: bool,
    ) {
        self.emit_early(gseq, payload, held, behind);
        let mut delivered = std::mem::take(&mut self.chain);
        delivered.push(gseq);
        while let Some(p) = delivered.pop() {
            while let Some((w, _)) = self
                .waiting
                .at_or_after(&(p, false, 0))
                .filter(|&((q, at_or_below, _), _)| q == p && !at_or_below)
            {
                // Its number lies beyond `p`, itself at or beyond `next`.
                let h = self.take_held(w.2).expect("every waiter is held");
                self.emit_early(w.2, h.payload, now - h.arrived, h.behind);
                delivered.push(w.2);
            }
        }
        self.chain = delivered;
    }

    /// Delivers `gseq` ahead of global order, in order for its flow.
    fn emit_early(&mut self, gseq: u64, payload: Vec<u8>, held: Duration, behind: bool) {
        self.seen_ahead.insert(gseq, ());
        if behind {
            self.behind_ahead.insert(gseq, ());
        }
        self.counters.delivered_early += 1;
        self.emit(gseq, payload, true, held);
    }

    /// Removes held packet `gseq`, with its `waiting` entry if it has one.
    fn take_held(&mut self, gseq: u64) -> Option<Held> {
        let h = self.held.remove(&gseq)?;
        if let Some(w) = h.waits_on {
            self.waiting.remove(&w);
        }
        self.held_bytes -= h.payload.len();
        self.held_in_order -= usize::from(!h.behind);
        Some(h)
    }

    /// Releases the held packets whose flow's previous packet `next` has
    /// now passed. One at `next` itself stays for in-order delivery.
    fn release_passed(&mut self, now: Instant) {
        while let Some((w, _)) = self.waiting.first().filter(|(w, _)| w.0 < self.next) {
            if w.2 == self.next {
                self.waiting.remove(&w);
                if let Some(h) = self.held.get_mut(&w.2) {
                    h.waits_on = None;
                }
            } else {
                let h = self.take_held(w.2).expect("every waiter is held");
                self.deliver_early(now, w.2, h.payload, now - h.arrived, h.behind);
            }
        }
    }

    /// Delivers everything that is now in order, skipping known losses and
    /// passing numbers delivered ahead.
    fn release_in_order(&mut self, now: Instant) {
        loop {
            if let Some(h) = self.take_held(self.next) {
                let gseq = self.next;
                self.next += 1;
                self.expiries = 0;
                self.emit(gseq, h.payload, true, now - h.arrived);
                self.release_passed(now);
            } else if self.seen_ahead.first().is_some_and(|(s, _)| s == self.next) {
                self.skip_to(now, self.next + 1);
            } else if let Some(end) = self.known_lost.end_of_range_holding(self.next) {
                // Never past a held packet, even one a notice called lost.
                let first_held = self.held.first().map_or(u64::MAX, |(g, _)| g);
                self.skip_to(now, end.min(first_held));
                self.expiries = 0;
            } else {
                break;
            }
        }
    }

    /// Skips every number below `to` that was not delivered, as ranges,
    /// and releases the packets whose flow waited for one of them.
    /// Callers never pass a `to` beyond the first held packet.
    fn skip_to(&mut self, now: Instant, to: u64) {
        let mut from = self.next;
        // Numbers delivered ahead are passed, not skipped.
        while let Some((seen, _)) = self.seen_ahead.first().filter(|&(s, _)| s < to) {
            self.seen_ahead.pop_first();
            self.express_ahead.remove(&seen);
            self.behind_ahead.remove(&seen);
            self.record_skip(from, seen);
            from = seen + 1;
        }
        self.record_skip(from, to);
        self.next = self.next.max(to);
        self.known_lost.remove_below(self.next);
        self.awaiting_resend.remove_below(self.next);
        self.trim_skipped();
        self.release_passed(now);
    }

    fn record_skip(&mut self, from: u64, to: u64) {
        if from < to {
            self.skipped.insert(from, (to, self.now));
            self.counters.skipped += to - from;
        }
    }

    /// Forgets skips far below `next`, and the oldest beyond the range cap.
    fn trim_skipped(&mut self) {
        let floor = self.next.saturating_sub(SKIP_MEMORY);
        while let Some((start, &(end, at))) = self.skipped.first() {
            if end <= floor || self.skipped.len() > MAX_SKIPPED_RANGES {
                self.skipped.pop_first();
            } else {
                if start < floor {
                    self.skipped.pop_first();
                    self.skipped.insert(floor, (end, at));
                }
                break;
            }
        }
    }

    /// Gives up on the holes before the first packet held or delivered
    /// ahead, and releases what follows in order.
    fn release_first(&mut self, now: Instant) {
        let first_held = self.held.first().map(|(g, _)| g);
        let first_seen = self
            .seen_ahead
            .iter()
            .map(|(g, _)| g)
            .find(|g| !self.express_ahead.contains(g));
        if let Some(first) = first_held.into_iter().chain(first_seen).min() {
            self.skip_to(now, first);
            self.release_in_order(now);
        }
    }

    /// Packets held or delivered ahead of `next`, not express: a hole is
    /// open.
    fn hole_open(&self) -> bool {
        !self.held.is_empty() || self.seen_ahead.len() > self.express_ahead.len()
    }

    fn enforce_bounds(&mut self, now: Instant) {
        while self.held_bytes > self.config.max_bytes || self.held.len() > self.config.max_packets {
            self.release_first(now);
        }
        // The packet held longest goes out, with every number below it.
        while let Some(&(arrived, gseq)) = self.oldest_held() {
            if now - arrived < self.config.max_hold {
                break;
            }
            while self.held.contains(&gseq) {
                self.release_first(now);
            }
        }
        self.prune_arrivals();
    }

    /// The earliest-arriving packet still held (arrivals come in time order,
    /// so the front of `arrivals` is it once released ones are gone).
    fn oldest_held(&mut self) -> Option<&(Instant, u64)> {
        self.prune_arrivals();
        self.arrivals.front()
    }

    /// Drops entries of released packets: from the front at once, and from
    /// anywhere once they outnumber the held packets (amortised O(1)).
    fn prune_arrivals(&mut self) {
        while self
            .arrivals
            .front()
            .is_some_and(|(_, g)| !self.held.contains(g))
        {
            self.arrivals.pop_front();
        }
        if self.arrivals.len() > 2 * self.held.len() + 16 {
            let held = &self.held;
            self.arrivals.retain(|(_, g)| held.contains(g));
        }
    }

    /// Keeps one timer, for the hole at the head of the line: a new head
    /// (delivery advanced) gets a full timeout of its own.
    /// A hole that only packets sent behind it have passed may still be
    /// at the sender, which expected it to land first: it waits as long as
    /// a number awaited from the sender. The first packet sent in order
    /// past it says it has left, and the hole timeout runs from then.
    fn update_timer(&mut self, now: Instant) {
        if !self.hole_open() {
            self.timer = None;
            self.expiries = 0;
            return;
        }
        let awaited = self.awaits_resend(self.next);
        let passed_in_order = self.passed_in_order();
        if self.timer.is_none() || self.timer_hole != self.next {
            let wait = if awaited || !passed_in_order {
                self.resend_wait()
            } else {
                self.hole_timeout()
            };
            self.timer = Some(now + wait);
            self.timer_hole = self.next;
            self.timer_waits_sender = !awaited && !passed_in_order;
        } else if self.timer_waits_sender && passed_in_order && !awaited {
            self.timer = self.timer.map(|t| t.min(now + self.hole_timeout()));
            self.timer_waits_sender = false;
        }
    }

    /// Whether a packet sent in order is held or was delivered ahead of
    /// the delivery point.
    fn passed_in_order(&self) -> bool {
        self.held_in_order > 0
            || self.seen_ahead.len() > self.express_ahead.len() + self.behind_ahead.len()
    }

    pub fn poll_timeout(&self) -> Option<Instant> {
        let hold_deadline = self
            .arrivals
            .front()
            .map(|(arrived, _)| *arrived + self.config.max_hold);
        match (self.timer, hold_deadline) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    pub fn handle_timeout(&mut self, now: Instant) {
        self.now = now;
        if self.timer.is_some_and(|t| t <= now) {
            self.timer = None;
            self.expiries += 1;
            self.counters.timeouts += 1;
            if self.expiries >= 3 {
                while self.hole_open() {
                    self.release_first(now);
                }
                self.expiries = 0;
            } else {
                let before = self.expiries;
                self.release_first(now);
                // release_in_order resets the count when the head fills; a
                // forced release must keep counting toward the third expiry.
                self.expiries = before;
            }
        }
        self.enforce_bounds(now);
        self.update_timer(now);
    }

    fn emit(&mut self, gseq: u64, payload: Vec<u8>, in_order: bool, held: Duration) {
        self.counters.delivered += 1;
        if !in_order {
            self.counters.delivered_late += 1;
        }
        self.out.push_back(Delivery {
            gseq,
            payload,
            in_order,
            held,
        });
    }

    pub fn poll_deliver(&mut self) -> Option<Delivery> {
        self.out.pop_front()
    }
}

#[cfg(test)]
mod tests;
