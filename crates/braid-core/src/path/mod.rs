//! The sender's view of one path: sequence numbers, packets in flight, loss
//! detection from acknowledgements, delivery-rate sampling, pacing, and the
//! estimators schedulers read.

mod express_rate;
mod kalman;
mod liveness;
mod loss;
mod owd;
mod rtt;

pub use express_rate::ExpressRate;
pub use kalman::KalmanRate;
pub use liveness::{Liveness, PROBE_INTERVAL};
pub use loss::LossEstimator;
pub use owd::{OwdClock, OwdEstimator};
pub use rtt::RttEstimator;

use std::collections::VecDeque;
use std::time::Duration;

use crate::cc::{AckSample, Controller};
use crate::receiver::{MAX_ACK_DELAY, SMALL_ACK_DELAY, SMALL_PAYLOAD};
use crate::time::Instant;
use crate::wire::{self, AckFrame};

/// A packet this short on the path (IP bytes) is one whose acknowledgement
/// the receiver may hold for [`SMALL_ACK_DELAY`], and one the controller's
/// pacing does not hold back (see [`PathSender::ready_at`]).
const SMALL_PACKET_BYTES: u64 = wire::ip_packet_len(SMALL_PAYLOAD) as u64;

/// A packet is lost once this many later packets of its path are acked
/// (paths do not reorder internally, the threshold absorbs what little they do).
const PACKET_THRESHOLD: u64 = 3;
/// Lateness a paced sender may make up for by sending closer together
/// (quinn's pacer allows bursts of about 2 ms of its rate). A daemon's
/// timers fire up to about a millisecond late; this covers that with room.
pub const PACING_CREDIT: Duration = Duration::from_millis(3);
/// A probe answered in a round trip this many times under the smoothed one
/// shows the path's silence deadline stale (see
/// [`PathSender::on_probe_answered`]). In a TCP flow's start-up a path's
/// smoothed round trip runs at about twice its floor (the queue the flow
/// builds), and a probe that shows a loss there 12 ms before the deadline
/// does sent the simulated grid's start-ups elsewhere (3:1 at 100 / 5 ms
/// with a small flow: 0.94 of the ideal went to 0.66).
const STALE_RTT_FACTOR: u32 = 4;
/// The share of its window under which a path's packet does not count as
/// the path being loaded, although the sender holds data (see
/// [`PathSender::underused`]; BBR then does not take its start-up as
/// finished on a loaded path). On 18 + 2 Mbit/s with 1 Mbit/s of light
/// traffic, the 18 Mbit/s path carried a few packets whenever the short
/// one was busy, ended start-up at 0.57 Mbit/s as if loaded, and a TCP
/// transfer that came next found it there, climbing a quarter per probe
/// (BENCHMARKS.md, "The small flow on a 2 Mbit/s fast path"). A path in
/// use has about one BDP, 0.8 of BBR's window, in flight.
const UNDERUSED_SHARE: f64 = 0.25;

#[derive(Debug, Clone)]
struct SentPacket {
    pseq: u64,
    bytes: u64,
    sent: Instant,
    /// Path's delivered bytes / time / first-sent time when this was sent:
    /// the start of its delivery-rate sample.
    delivered: u64,
    delivered_time: Instant,
    first_sent_time: Instant,
    app_limited: bool,
    underused: bool,
    resolved: bool,
}

/// Per-path counters, as exact totals.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct PathCounters {
    pub sent_packets: u64,
    pub sent_bytes: u64,
    pub acked_packets: u64,
    pub lost_packets: u64,
    /// Silences of about a round trip past the oldest packet in flight
    /// (see [`Liveness`]): everything in flight was declared lost.
    pub timeouts: u64,
    /// Times the path went down (silent after being heard from).
    pub down_events: u64,
    /// Copies sent to probe a down path.
    pub probe_packets: u64,
    /// Packets declared lost by a silence whose acknowledgement came later.
    pub late_acks: u64,
    /// Acks for a number never sent on the path: ignored.
    pub rejected_acks: u64,
    /// Acks claiming the receiver held a packet longer than its whole round
    /// trip (an ack delay from the future): their timing is not used.
    pub rejected_timestamps: u64,
}

#[derive(Debug)]
pub struct PathSender {
    pub id: u8,
    pub cost: f64,
    cc: Box<dyn Controller>,
    pub rtt: RttEstimator,
    /// The path's round trip as the session measured it apart from data:
    /// its last answered probe, or its handshake before one (see
    /// `PathView::probe_rtt`). The session's only copy.
    pub probe_rtt: Option<Duration>,
    /// See `PathView::train_failed`; set by the session.
    pub train_failed: bool,
    /// The last probe answered: when it was sent, when its answer came
    /// (see [`PathSender::on_probe_answered`]).
    answered_probe: Option<(Instant, Instant)>,
    /// See `PathView::rate_shown`.
    rate_shown: bool,
    pub owd: OwdEstimator,
    pub kalman: KalmanRate,
    pub express: ExpressRate,
    pub loss: LossEstimator,
    next_pseq: u64,
    prev_gseq: Option<u64>,
    in_flight: VecDeque<SentPacket>,
    bytes_in_flight: u64,
    delivered: u64,
    delivered_time: Instant,
    first_sent_time: Instant,
    /// When pacing next lets a full packet go (the controller's rate and
    /// the rate limit).
    next_send_time: Instant,
    /// When the rate limit next lets a small packet go.
    next_small_send_time: Instant,
    /// Lateness pacing may make up for (see [`PACING_CREDIT`]).
    pacing_credit: Duration,
    /// Last time this path showed life (an ack), for its timeout.
    last_progress: Instant,
    /// When an acknowledgement of this path last came on another path.
    relayed_ack_at: Option<Instant>,
    /// Packets numbered below this were declared lost by a silence; an ack
    /// for one still counts as delivered and measures the round trip.
    first_live_pseq: u64,
    pub liveness: Liveness,
    /// Never send faster than this (a user's rate limit), bits per second.
    rate_limit_bps: Option<f64>,
    pub counters: PathCounters,
}

/// What [`PathSender::on_sent`] gives the packet's header.
#[derive(Debug, Clone, Copy)]
pub struct PathStamp {
    pub pseq: u32,
    pub prev_gap: u16,
}

impl PathSender {
    pub fn new(id: u8, cost: f64, cc: Box<dyn Controller>) -> PathSender {
        PathSender {
            id,
            cost,
            cc,
            rtt: RttEstimator::default(),
            probe_rtt: None,
            train_failed: false,
            answered_probe: None,
            rate_shown: false,
            owd: OwdEstimator::default(),
            kalman: KalmanRate::default(),
            express: ExpressRate::default(),
            loss: LossEstimator::default(),
            next_pseq: 0,
            prev_gseq: None,
            in_flight: VecDeque::new(),
            bytes_in_flight: 0,
            delivered: 0,
            delivered_time: Instant::ZERO,
            first_sent_time: Instant::ZERO,
            next_send_time: Instant::ZERO,
            next_small_send_time: Instant::ZERO,
            pacing_credit: Duration::ZERO,
            last_progress: Instant::ZERO,
            relayed_ack_at: None,
            first_live_pseq: 0,
            liveness: Liveness::default(),
            rate_limit_bps: None,
            counters: PathCounters::default(),
        }
    }

    /// Caps the path's sending rate (pacing and the rate schedulers see)
    /// at `bps`, whatever the congestion controller would allow.
    pub fn set_rate_limit(&mut self, bps: Option<u64>) {
        self.rate_limit_bps = bps.filter(|b| *b > 0).map(|b| b as f64);
    }

    /// What the path may send, bits per second: the controller's pacing
    /// rate or the rate limit, whichever is lower (`None`: unpaced and
    /// unlimited; a zero pacing rate does not pace).
    fn sending_rate_bps(&self) -> Option<f64> {
        let pacing = self.cc.pacing_rate_bps().filter(|r| *r > 0.0);
        match (pacing, self.rate_limit_bps) {
            (Some(c), Some(l)) => Some(c.min(l)),
            (c, l) => c.or(l),
        }
    }

    /// How long after a packet of `bytes` the next full one may leave at
    /// the sending rate (`bytes` are IP packet bytes, as a link's rate
    /// counts them).
    fn pacing_gap(&self, bytes: u64) -> Option<Duration> {
        self.sending_rate_bps()
            .map(|r| Duration::from_secs_f64(bytes as f64 * 8.0 / r))
    }

    /// Share of what the path may send that express datagrams took lately
    /// (0 to 1; 0 unpaced).
    pub fn express_share(&self, now: Instant) -> f64 {
        self.sending_rate_bps()
            .map_or(0.0, |r| (self.express.bps(now) / r).min(1.0))
    }

    /// Seconds the rate limit puts after a packet of `bytes`.
    fn rate_limit_gap(&self, bytes: u64) -> Option<f64> {
        self.rate_limit_bps.map(|l| bytes as f64 * 8.0 / l)
    }

    /// Lets pacing make up for up to `credit` of lateness (none by
    /// default). The datagram sender uses [`PACING_CREDIT`], the reliable
    /// stream its `Config::pacing_credit` (the same by default).
    pub fn with_pacing_credit(mut self, credit: Duration) -> PathSender {
        self.pacing_credit = credit;
        self
    }

    pub fn cc(&self) -> &dyn Controller {
        &*self.cc
    }

    /// Less than [`UNDERUSED_SHARE`] of the window in flight: the
    /// scheduler gives this path only what the others leave, so a packet
    /// sent now does not show the path loaded, even with data waiting.
    fn underused(&self) -> bool {
        (self.bytes_in_flight as f64) < UNDERUSED_SHARE * self.cc.cwnd_bytes() as f64
    }

    pub fn bytes_in_flight(&self) -> u64 {
        self.bytes_in_flight
    }

    /// The number the next packet sent on this path will carry.
    pub fn next_pseq(&self) -> u64 {
        self.next_pseq
    }

    /// Whether the congestion window has room for `bytes` more.
    pub fn cwnd_open(&self, bytes: u64) -> bool {
        self.bytes_in_flight + bytes <= self.cc.cwnd_bytes().max(bytes)
    }

    /// When pacing next allows a full packet.
    pub fn pacing_ready_at(&self) -> Instant {
        self.next_send_time
    }

    /// When pacing next allows a packet of `bytes`. A small one (a pure
    /// TCP acknowledgement coming back, a call's voice frame) waits only
    /// for the rate limit, as Linux's fq qdisc does not pace pure ACKs: a
    /// path that has carried little has a low rate estimate, and pacing
    /// the returning acknowledgements of a TCP transfer that starts on the
    /// other direction at that estimate queued them, stretched the inner
    /// round trip and slowed the transfer's start (BENCHMARKS.md, "Small
    /// packets not paced"). The window still bounds them.
    pub fn ready_at(&self, bytes: u64) -> Instant {
        if bytes < SMALL_PACKET_BYTES {
            self.next_small_send_time
        } else {
            self.next_send_time
        }
    }

    pub fn can_send(&self, now: Instant, bytes: u64) -> bool {
        self.cwnd_open(bytes) && self.ready_at(bytes) <= now
    }

    /// Records a packet leaving on this path; returns its header fields.
    pub fn on_sent(&mut self, now: Instant, gseq: u64, bytes: u64, app_limited: bool) -> PathStamp {
        let idle = self.bytes_in_flight == 0;
        if idle {
            // Idle restart: the rate sample must not span the idle period.
            self.first_sent_time = now;
            self.delivered_time = now;
            self.last_progress = now;
        }
        let underused = self.underused();
        let pseq = self.next_pseq;
        self.next_pseq += 1;
        self.in_flight.push_back(SentPacket {
            pseq,
            bytes,
            sent: now,
            delivered: self.delivered,
            delivered_time: self.delivered_time,
            first_sent_time: self.first_sent_time,
            app_limited,
            underused,
            resolved: false,
        });
        self.bytes_in_flight += bytes;
        self.counters.sent_packets += 1;
        self.counters.sent_bytes += bytes;
        self.cc.on_sent(now, bytes, self.bytes_in_flight);
        // A sender that woke late (a timer's granularity, a busy thread)
        // may catch up on up to its credit of lateness: without it every
        // late wake-up lowers the rate actually sent, the delivery rate the
        // controller measures follows it down, and the pacing rate spirals
        // down with it. After an idle period there is nothing to catch up on.
        let credit = if idle {
            Duration::ZERO
        } else {
            self.pacing_credit
        };
        let earliest = Instant::from_duration(now.since_epoch().saturating_sub(credit));
        let small = bytes < SMALL_PACKET_BYTES;
        // A small packet spends only the rate limit's budget.
        let gap = if small {
            self.rate_limit_gap(bytes).map(Duration::from_secs_f64)
        } else {
            self.pacing_gap(bytes)
        };
        if let Some(gap) = gap {
            self.next_send_time = self.next_send_time.max(earliest) + gap;
        }
        if let Some(gap) = self.rate_limit_gap(bytes) {
            let gap = Duration::from_secs_f64(gap);
            self.next_small_send_time = self.next_small_send_time.max(earliest) + gap;
        }
        // 0 means "no usable hint": first packet, or a number below the
        // previous one on this path (the sender sent a later datagram here
        // first, see `Decision::SendBehind`); a gap too wide saturates.
        let prev_gap = crate::wire::saturating_gap(gseq, self.prev_gseq);
        self.prev_gseq = Some(gseq);
        PathStamp {
            pseq: pseq as u32,
            prev_gap,
        }
    }

    /// Processes an acknowledgement for this path. `owd_clock` is shared
    /// by all paths so their one-way delays compare (see [`OwdClock`]).
    pub fn on_ack(&mut self, now: Instant, ack: &AckFrame, owd_clock: &mut OwdClock) {
        self.on_ack_observed(now, ack, owd_clock, |_, _| {});
    }

    /// [`PathSender::on_ack`], telling `observe` the fate of each packet it
    /// resolves: `(pseq, true)` acknowledged, `(pseq, false)` declared lost.
    /// The reliable stream uses this to know which of its data to resend.
    pub fn on_ack_observed(
        &mut self,
        now: Instant,
        ack: &AckFrame,
        owd_clock: &mut OwdClock,
        observe: impl FnMut(u64, bool),
    ) {
        self.on_ack_via(now, ack, true, owd_clock, observe);
    }

    /// [`PathSender::on_ack_observed`] for an acknowledgement that came
    /// back on this path (`own_path`) or on another (the peer relays them
    /// while this path's return direction is silent, for a while only). A
    /// relayed one resolves packets and shows the path delivers, but its
    /// round trip is another path's return: it would shrink this path's
    /// minimum RTT, and with it the window, for the next ten seconds.
    pub fn on_ack_via(
        &mut self,
        now: Instant,
        ack: &AckFrame,
        own_path: bool,
        owd_clock: &mut OwdClock,
        mut observe: impl FnMut(u64, bool),
    ) {
        let largest = crate::wire::widen(ack.largest_pseq, self.next_pseq);
        if largest >= self.next_pseq {
            self.counters.rejected_acks += 1;
            return;
        }
        // Any ack of a packet really sent shows the path is alive, even one
        // for packets a silence already declared lost.
        self.liveness.on_heard();
        self.last_progress = now;
        if !own_path {
            self.relayed_ack_at = Some(now);
        }
        let Some(front) = self.in_flight.front().map(|p| p.pseq) else {
            return;
        };
        if largest < front {
            return; // everything it covers is already resolved
        }
        // Data counts as delivered when the receiver had it: an
        // acknowledgement of small packets held longer than a full one's
        // would otherwise stretch the delivery-rate sample by the hold,
        // and BBR, pacing at its estimate, would slow the returning TCP
        // acknowledgements and with them the inner flow's start (an inner
        // CUBIC start on 10 + 10 Mbit/s took twice as long in the
        // simulator). A hold up to MAX_ACK_DELAY stays in, as it always has.
        let hold = Duration::from_micros(u64::from(ack.ack_delay_us)).saturating_sub(MAX_ACK_DELAY);
        let received_at = match self.in_flight.get((largest - front) as usize) {
            Some(p) if !hold.is_zero() && hold < now - p.sent => {
                Instant::from_duration(now.since_epoch() - hold)
            }
            _ => now,
        };
        let mut acked_bytes = 0u64;
        // Acked bytes still counted in flight (not declared lost before).
        let mut freed_bytes = 0u64;
        let mut acked_packets = 0u64;
        let mut newest: Option<SentPacket> = None;
        let mut lost: Vec<(Instant, u64)> = Vec::new();
        let end = (largest - front) as usize;
        for idx in 0..=end {
            let p = &mut self.in_flight[idx];
            if p.resolved {
                continue;
            }
            let below = largest - p.pseq;
            let is_acked = below == 0 || (below <= 64 && ack.bitmap & (1u64 << (below - 1)) != 0);
            let declared_lost = p.pseq < self.first_live_pseq;
            if is_acked {
                observe(p.pseq, true);
                p.resolved = true;
                if declared_lost {
                    self.counters.late_acks += 1;
                } else {
                    freed_bytes += p.bytes;
                }
                acked_bytes += p.bytes;
                acked_packets += 1;
                self.delivered += p.bytes;
                self.delivered_time = self.delivered_time.max(received_at);
                newest = Some(p.clone());
            } else if below >= PACKET_THRESHOLD {
                p.resolved = true;
                // One declared lost at a timeout was reported then.
                if !declared_lost {
                    observe(p.pseq, false);
                    lost.push((p.sent, p.bytes));
                }
            }
        }
        for (sent, bytes) in lost {
            self.bytes_in_flight -= bytes;
            self.counters.lost_packets += 1;
            self.loss.on_lost();
            self.cc.on_loss(now, sent, bytes, self.bytes_in_flight);
        }
        let Some(p) = newest else {
            self.pop_resolved();
            return;
        };
        self.bytes_in_flight -= freed_bytes;
        self.counters.acked_packets += acked_packets;
        for _ in 0..acked_packets {
            self.loss.on_acked();
        }
        self.first_sent_time = p.sent;
        // Only the largest carries timestamps; an ack that only fills holes
        // below it measures nothing.
        let ack_delay = Duration::from_micros(u64::from(ack.ack_delay_us));
        let impossible = ack_delay > now - p.sent;
        if impossible && p.pseq == largest {
            self.counters.rejected_timestamps += 1;
        }
        let rtt = (own_path && p.pseq == largest && !impossible).then(|| now - p.sent - ack_delay);
        if let Some(rtt) = rtt {
            self.rtt.on_sample(rtt.max(Duration::from_micros(1)));
            let raw = ack.recv_ts_us.wrapping_sub(p.sent.wire_micros());
            self.owd
                .on_sample(p.sent, owd_clock, usize::from(self.id), raw);
        }
        let interval = received_at
            .saturating_duration_since(p.delivered_time)
            .max(p.sent - p.first_sent_time);
        let rate = (!interval.is_zero())
            .then(|| (self.delivered - p.delivered) as f64 * 8.0 / interval.as_secs_f64());
        if let Some(r) = rate.filter(|_| !p.app_limited) {
            self.kalman.on_sample(r);
            self.rate_shown |= !p.underused;
        }
        self.cc.on_ack(
            now,
            &AckSample {
                bytes: acked_bytes,
                rtt,
                delivery_rate_bps: rate,
                app_limited: p.app_limited,
                underused: p.underused,
                prior_delivered: p.delivered,
                delivered: self.delivered,
                bytes_in_flight: self.bytes_in_flight,
            },
        );
        self.pop_resolved();
    }

    fn pop_resolved(&mut self) {
        while self.in_flight.front().is_some_and(|p| p.resolved) {
            self.in_flight.pop_front();
        }
    }

    /// When this path's silence would mark it down, if packets are in
    /// flight: about a round trip past the oldest packet not yet declared
    /// lost, or past the last acknowledgement if that came later.
    pub fn timeout_at(&self) -> Option<Instant> {
        if self.bytes_in_flight == 0 {
            return None;
        }
        let oldest = self.oldest_live()?;
        // The receiver may hold its acknowledgement of small packets.
        let held = if oldest.bytes < SMALL_PACKET_BYTES {
            SMALL_ACK_DELAY
        } else {
            Duration::ZERO
        };
        let silence =
            oldest.sent.max(self.last_progress) + Liveness::silence_span(&self.rtt) + held;
        let last_sent = self.last_sent_awaiting_acks()?;
        let shown = self
            .answered_probe
            .filter(|&(sent, answered)| last_sent < sent && self.rtt_stale_by(answered - sent))
            .map(|(sent, answered)| answered + SMALL_ACK_DELAY + (answered - sent) / 4);
        Some(shown.map_or(silence, |t| t.min(silence)))
    }

    /// Whether a round trip of `rtt` puts the smoothed one at least
    /// [`STALE_RTT_FACTOR`] times over it: the data's estimate then
    /// describes a queue or a fade that has passed, and the silence
    /// deadline it sets is that far too late.
    fn rtt_stale_by(&self, rtt: Duration) -> bool {
        self.rtt.srtt().is_some_and(|s| rtt * STALE_RTT_FACTOR <= s)
    }

    /// When the path last sent a packet, if some of what it sent still
    /// waits for its acknowledgement.
    pub fn last_sent_awaiting_acks(&self) -> Option<Instant> {
        if self.bytes_in_flight == 0 {
            return None;
        }
        Some(self.in_flight.back()?.sent)
    }

    /// A probe of the path sent at `sent` was answered now. It measures
    /// the path's round trip apart from data (`probe_rtt`), and it shows
    /// what became of the packets sent before it: a path delivers in
    /// order, and the receiver acknowledges on the path a packet came by,
    /// at most [`SMALL_ACK_DELAY`] after it. So if the path has sent no
    /// data since, what it still has in flight that long after the answer
    /// (and a quarter of the probe's round trip, for the return's jitter)
    /// was lost, and the path is silent for data: its silence deadline
    /// ([`PathSender::timeout_at`]) comes then. Only where the probe's
    /// round trip is far below the smoothed one, which stretches that
    /// deadline (see `STALE_RTT_FACTOR`). No later packet's
    /// acknowledgement will show it: a path held back after a fade had 56
    /// packets the fade's queue dropped counted in flight for five seconds
    /// after it came back at 2 Mbit/s, its probes answered in 84 ms
    /// against a smoothed round trip of 1.6 s. Priced 15 s away by them,
    /// it got no data until that deadline (BENCHMARKS.md, "A path back
    /// from a fade, told by its probes").
    pub fn on_probe_answered(&mut self, now: Instant, sent: Instant) {
        self.probe_rtt = Some(now - sent);
        self.answered_probe = Some((sent, now));
    }

    /// When the oldest packet in flight not declared lost was sent.
    pub fn oldest_live_sent(&self) -> Option<Instant> {
        Some(self.oldest_live()?.sent)
    }

    fn oldest_live(&self) -> Option<&SentPacket> {
        // Packets are numbered consecutively in the queue; resolved ones
        // leave only from the front.
        let front = self.in_flight.front()?.pseq;
        let index = self.first_live_pseq.saturating_sub(front) as usize;
        self.in_flight.get(index)
    }

    /// The path is silent: everything in flight is declared lost (and kept,
    /// so that a late acknowledgement still counts), the path is down until
    /// heard from, and the controller is told (a loss-based one collapses
    /// its window; BBR keeps its model, see `cc::bbr`).
    pub fn on_timeout(&mut self, now: Instant) {
        self.on_timeout_observed(now, |_| {});
    }

    /// [`PathSender::on_timeout`], telling `observe` each packet it declares lost.
    pub fn on_timeout_observed(&mut self, now: Instant, mut observe: impl FnMut(u64)) {
        let front = self.in_flight.front().map_or(self.next_pseq, |p| p.pseq);
        let start = self.first_live_pseq.saturating_sub(front) as usize;
        let lost: Vec<(Instant, u64)> = self
            .in_flight
            .iter()
            .skip(start)
            .filter(|p| !p.resolved)
            .map(|p| {
                observe(p.pseq);
                (p.sent, p.bytes)
            })
            .collect();
        self.first_live_pseq = self.next_pseq;
        for (sent, bytes) in lost {
            self.bytes_in_flight -= bytes;
            self.counters.lost_packets += 1;
            self.loss.on_lost();
            self.cc.on_loss(now, sent, bytes, self.bytes_in_flight);
        }
        // Late acks are matched only within the ack bitmap's reach.
        let keep = 2 * 64;
        while self.in_flight.len() > keep {
            self.in_flight.pop_front();
        }
        self.counters.timeouts += 1;
        if self.liveness.on_silence(now) {
            self.counters.down_events += 1;
        }
        self.cc.on_timeout(now);
    }

    /// The window is full and no acknowledgement came for a smoothed RTT:
    /// the path is in a fade or outage, whatever its estimates say.
    pub fn is_stalled(&self, now: Instant, bytes: u64) -> bool {
        let patience = self.srtt_or_guess();
        !self.cwnd_open(bytes) && now - self.last_progress > patience
    }

    /// The window is full and its oldest packet has been in flight for
    /// two smoothed RTTs: the path delivers, but far slower than its
    /// estimates say (a fade that lets a trickle through, heard through
    /// acknowledgements that keep [`PathSender::is_stalled`] from firing).
    pub fn is_overdue(&self, now: Instant, bytes: u64) -> bool {
        let patience = self.srtt_or_guess() * 2;
        !self.cwnd_open(bytes) && self.oldest_live_sent().is_some_and(|t| now - t > patience)
    }

    /// When an acknowledgement of this path last came on another path.
    pub fn relayed_ack_at(&self) -> Option<Instant> {
        self.relayed_ack_at
    }

    /// Its oldest unacknowledged packet (declared lost by a silence or
    /// not) has waited for its acknowledgement over a smoothed RTT (100 ms
    /// before one is measured).
    pub fn awaits_acks(&self, now: Instant) -> bool {
        let rtt = self.srtt_or_guess();
        self.in_flight
            .iter()
            .find(|p| !p.resolved)
            .is_some_and(|p| now - p.sent > rtt)
    }

    /// The smoothed RTT, or 100 ms before one is measured: how long the
    /// stall and overdue checks expect an acknowledgement to take.
    fn srtt_or_guess(&self) -> Duration {
        self.rtt.srtt().unwrap_or(Duration::from_millis(100))
    }

    /// A path is suspect while it is down (silent, not heard from since).
    pub fn is_suspect(&self) -> bool {
        self.liveness.is_down()
    }

    /// Another path went down or out of use (see
    /// [`Controller::on_load_shift`]).
    pub fn on_load_shift(&mut self) {
        self.cc.on_load_shift();
    }

    /// Whether this down path is due a probe.
    pub fn probe_due(&self, now: Instant) -> bool {
        self.liveness.probe_due(now)
    }

    /// Records that the packet just sent was a probe.
    pub fn on_probe_sent(&mut self, now: Instant) {
        self.liveness.on_probe(now);
        self.counters.probe_packets += 1;
    }

    /// Whether the path's rate is unknown: no full-load sample has fed
    /// its Kalman filter, and no seed.
    pub fn rate_unmeasured(&self) -> bool {
        self.kalman.estimate_bps().is_none()
    }

    /// A rate measured apart from the traffic (IP bits per second):
    /// taken by the controller if it has not found the rate itself, and
    /// by the Kalman filter then or while it has no estimate. Returns
    /// whether anything took it.
    pub fn seed_rate(&mut self, bps: f64) -> bool {
        if !(bps.is_finite() && bps > 0.0) {
            return false;
        }
        let cc = self.cc.seed_bandwidth(bps);
        let kalman = cc || self.rate_unmeasured();
        if kalman {
            let current = self.kalman.estimate_bps().unwrap_or(0.0);
            self.kalman.seed(bps.max(current));
        }
        self.rate_shown |= cc || kalman;
        cc || kalman
    }

    /// See `PathView::rate_shown`.
    pub fn rate_shown(&self) -> bool {
        self.rate_shown
    }

    /// Bandwidth estimate for schedulers: the controller's, else the Kalman filter's.
    /// Capped by the rate limit.
    pub fn bandwidth_bps(&self) -> Option<f64> {
        let estimate = self
            .cc
            .bandwidth_bps(self.rtt.srtt())
            .or_else(|| self.kalman.estimate_bps());
        match (estimate, self.rate_limit_bps) {
            (Some(e), Some(l)) => Some(e.min(l)),
            (e, _) => e,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::Ccid2;

    fn ack(largest: u32, bitmap: u64) -> AckFrame {
        AckFrame {
            path: 0,
            largest_pseq: largest,
            ack_delay_us: 0,
            recv_ts_us: 0,
            bitmap,
        }
    }

    #[test]
    fn a_rate_limit_spaces_packets() {
        let t0 = Instant::from_nanos(1_000_000_000);
        // CCID2 does not pace: without a limit, packets may leave at once.
        let mut p = PathSender::new(0, 1.0, Box::new(Ccid2::new()));
        p.on_sent(t0, 0, 1250, false);
        assert!(p.can_send(t0, 1250));
        // 1,250 bytes at 1 Mbit/s: 10 ms apart.
        let ms = Duration::from_millis;
        p.set_rate_limit(Some(1_000_000));
        p.on_sent(t0, 1, 1250, false);
        let ready = t0 + ms(10);
        assert_eq!(p.pacing_ready_at(), ready);
        assert!(!p.can_send(t0 + ms(9), 1250));
        assert!(p.can_send(ready, 1250));
        // A packet sent before its time still takes its gap after the
        // previous one's.
        p.on_sent(t0 + ms(4), 2, 1250, false);
        assert_eq!(p.pacing_ready_at(), ready + ms(10));
        // BBR paces faster than the limit at start: the limit wins.
        let mut p = PathSender::new(0, 1.0, crate::cc::CcKind::Bbr.build());
        p.set_rate_limit(Some(1_000_000));
        p.on_sent(t0, 0, 1250, false);
        assert_eq!(p.pacing_ready_at(), ready);
        p.set_rate_limit(None);
        p.on_sent(ready, 1, 1250, false);
        assert!(p.pacing_ready_at() < ready + ms(10));
    }

    /// A controller with a fixed pacing rate (and rate estimate) and an
    /// open window, which keeps every sample the path hands it: the path's
    /// own arithmetic can be checked to the nanosecond.
    #[derive(Debug, Default)]
    struct FixedPacing {
        rate: Option<f64>,
        acks: std::sync::Arc<std::sync::Mutex<Vec<crate::cc::AckSample>>>,
    }

    fn fixed_pacing(rate: Option<f64>) -> Box<FixedPacing> {
        Box::new(FixedPacing {
            rate,
            ..FixedPacing::default()
        })
    }

    impl crate::cc::Controller for FixedPacing {
        fn name(&self) -> &'static str {
            "fixed"
        }
        fn on_sent(&mut self, _: Instant, _: u64, _: u64) {}
        fn on_ack(&mut self, _: Instant, ack: &crate::cc::AckSample) {
            self.acks.lock().unwrap().push(*ack);
        }
        fn on_loss(&mut self, _: Instant, _: Instant, _: u64, _: u64) {}
        fn on_timeout(&mut self, _: Instant) {}
        fn cwnd_bytes(&self) -> u64 {
            1 << 30
        }
        fn pacing_rate_bps(&self) -> Option<f64> {
            self.rate
        }
        fn bandwidth_bps(&self, _: Option<Duration>) -> Option<f64> {
            self.rate
        }
    }

    #[test]
    fn express_share_is_of_the_pacing_rate_or_the_rate_limit() {
        let t0 = Instant::from_nanos(1_000_000_000);
        let feed = |p: &mut PathSender| {
            // 1,250 bytes every 10 ms: 1 Mbit/s.
            for i in 0..100 {
                p.express.on_sent(t0 + Duration::from_millis(10 * i), 1_250);
            }
        };
        let at = t0 + Duration::from_millis(995);
        let mut p = PathSender::new(0, 1.0, fixed_pacing(Some(4e6)));
        assert_eq!(p.express_share(at), 0.0);
        feed(&mut p);
        let share = p.express_share(at);
        assert!((0.22..0.28).contains(&share), "{share}");
        // A rate limit below the pacing rate is what the path may send.
        p.set_rate_limit(Some(2_000_000));
        let share = p.express_share(at);
        assert!((0.45..0.55).contains(&share), "{share}");
        p.set_rate_limit(Some(500_000));
        assert_eq!(p.express_share(at), 1.0);
        // Unpaced and unlimited (no rate, or a zero one, which does not
        // pace): no share of anything.
        for rate in [None, Some(0.0)] {
            let mut p = PathSender::new(0, 1.0, fixed_pacing(rate));
            feed(&mut p);
            assert_eq!(p.express_share(at), 0.0);
        }
    }

    #[test]
    fn pacing_gap_is_bits_over_rate_and_zero_rates_do_not_pace() {
        let t0 = Instant::from_nanos(1_000_000_000);
        // 1,000 bytes at 8 Mbit/s: 1 ms.
        let mut p = PathSender::new(0, 1.0, fixed_pacing(Some(8e6)));
        p.on_sent(t0, 0, 1000, false);
        assert_eq!(p.pacing_ready_at(), t0 + Duration::from_millis(1));
        // A controller reporting a zero rate does not pace (and a zero
        // rate limit is no limit): the next packet may leave at once.
        let mut p = PathSender::new(0, 1.0, fixed_pacing(Some(0.0)));
        p.set_rate_limit(Some(0));
        p.on_sent(t0, 0, 1000, false);
        assert!(p.can_send(t0, 1000));
        let mut p = PathSender::new(0, 1.0, fixed_pacing(None));
        p.set_rate_limit(Some(0));
        p.on_sent(t0, 0, 1000, false);
        assert!(p.can_send(t0, 1000));
    }

    #[test]
    fn pacing_credit_makes_up_for_lateness_but_not_for_idleness() {
        let t0 = Instant::from_nanos(1_000_000_000);
        let ms = Duration::from_millis;
        let mut p = PathSender::new(0, 1.0, fixed_pacing(Some(8e6))).with_pacing_credit(ms(3));
        // Idle: no credit, the gap counts from now.
        p.on_sent(t0, 0, 1000, false);
        assert_eq!(p.pacing_ready_at(), t0 + ms(1));
        // Busy and 4 ms late: 3 ms of it is made up.
        p.on_sent(t0 + ms(5), 1, 1000, false);
        assert_eq!(p.pacing_ready_at(), t0 + ms(3));
        assert_eq!((p.counters.sent_packets, p.counters.sent_bytes), (2, 2000));
        assert_eq!(p.bytes_in_flight(), 2000);
    }

    #[test]
    fn small_packets_wait_for_the_rate_limit_but_not_for_the_controllers_pacing() {
        let t0 = Instant::from_nanos(1_000_000_000);
        let ms = Duration::from_millis;
        let small = SMALL_PACKET_BYTES - 1;
        // 1,000 bytes at 8 Mbit/s: the next full packet waits 1 ms, a small
        // one does not, and sending it spends none of the full ones' time.
        let mut p = PathSender::new(0, 1.0, fixed_pacing(Some(8e6)));
        p.on_sent(t0, 0, 1000, false);
        assert!(!p.can_send(t0, SMALL_PACKET_BYTES));
        assert!(p.can_send(t0, small));
        assert_eq!(p.ready_at(small), Instant::ZERO);
        p.on_sent(t0, 1, small, false);
        assert_eq!(p.pacing_ready_at(), t0 + ms(1));
        assert_eq!(p.ready_at(SMALL_PACKET_BYTES), t0 + ms(1));
        assert!(p.can_send(t0, small));
        // The window still counts them.
        assert_eq!(p.bytes_in_flight(), 1000 + small);
        // One of exactly the boundary's size is a full packet: it spends
        // the controller's pacing time.
        p.on_sent(t0 + ms(1), 2, SMALL_PACKET_BYTES, false);
        let gap = Duration::from_secs_f64(SMALL_PACKET_BYTES as f64 * 8.0 / 8e6);
        assert_eq!(p.pacing_ready_at(), t0 + ms(1) + gap);
        // A rate limit of 1 Mbit/s holds both: 125 bytes take 1 ms, and
        // the full packet after them waits for its own gap and theirs.
        let mut p = PathSender::new(0, 1.0, fixed_pacing(Some(8e6)));
        p.set_rate_limit(Some(1_000_000));
        p.on_sent(t0, 0, 125, false);
        assert_eq!(p.ready_at(125), t0 + ms(1));
        assert_eq!(p.pacing_ready_at(), t0 + ms(1));
        assert!(!p.can_send(t0, 125));
        p.on_sent(t0 + ms(1), 1, 1250, false);
        // 1,250 bytes at the limit: 10 ms, longer than the controller's 1.25.
        assert_eq!(p.pacing_ready_at(), t0 + ms(11));
        assert_eq!(p.ready_at(125), t0 + ms(11));
    }

    #[test]
    fn an_ack_hands_the_controller_bytes_delivery_and_rate() {
        let cc = fixed_pacing(None);
        let acks = cc.acks.clone();
        let mut p = PathSender::new(0, 1.0, cc);
        let t0 = Instant::from_nanos(1_000_000_000);
        for g in 0..3 {
            p.on_sent(t0, g, 1000, false);
        }
        // All three acknowledged 20 ms later: 3,000 bytes in 20 ms.
        p.on_ack(
            t0 + Duration::from_millis(20),
            &ack(2, 0b11),
            &mut OwdClock::for_sender(),
        );
        let samples = acks.lock().unwrap();
        let [s] = samples.as_slice() else {
            panic!("one sample per ack, got {}", samples.len());
        };
        assert_eq!(s.bytes, 3000);
        assert_eq!((s.prior_delivered, s.delivered), (0, 3000));
        assert_eq!(s.bytes_in_flight, 0);
        assert_eq!(s.rtt, Some(Duration::from_millis(20)));
        assert_eq!(s.delivery_rate_bps, Some(1.2e6));
        assert!(!s.app_limited);
        assert_eq!(p.counters.acked_packets, 3);
        drop(samples);
        // Two more, sent when 3,000 bytes were delivered, acked 20 ms
        // later: 2,000 bytes over 20 ms.
        let t1 = t0 + Duration::from_millis(20);
        for g in 3..5 {
            p.on_sent(t1, g, 1000, false);
        }
        p.on_ack(
            t1 + Duration::from_millis(20),
            &ack(4, 0b1),
            &mut OwdClock::for_sender(),
        );
        let samples = acks.lock().unwrap();
        let s = samples.last().unwrap();
        assert_eq!((s.prior_delivered, s.delivered), (3000, 5000));
        assert_eq!(s.delivery_rate_bps, Some(0.8e6));
        // Everything resolved is forgotten: memory follows what is in flight.
        assert!(p.in_flight.is_empty());
    }

    #[test]
    fn a_hold_beyond_max_ack_delay_is_taken_out_of_the_delivery_rate() {
        let ms = Duration::from_millis;
        let rate_of = |ack_delay: Duration| {
            let cc = fixed_pacing(None);
            let acks = cc.acks.clone();
            let mut p = PathSender::new(0, 1.0, cc);
            let t0 = Instant::from_nanos(1_000_000_000);
            // Two packets acknowledged before: the held ones are not the
            // path's first, and are found in flight by their distance from
            // the oldest there (cargo-mutants: `+` for `-` went unnoticed).
            let before = Instant::from_nanos(900_000_000);
            p.on_sent(before, 0, 100, false);
            p.on_sent(before, 1, 100, false);
            p.on_ack(before + ms(20), &ack(1, 0b1), &mut OwdClock::for_sender());
            for g in 2..5 {
                p.on_sent(t0, g, 100, false);
            }
            let held = AckFrame {
                ack_delay_us: ack_delay.as_micros() as u32,
                ..ack(4, 0b11)
            };
            p.on_ack(t0 + ms(20), &held, &mut OwdClock::for_sender());
            let s = *acks.lock().unwrap().last().unwrap();
            (s.delivery_rate_bps, s.rtt)
        };
        // A hold within MAX_ACK_DELAY counts, as it always has: 300 bytes
        // over 20 ms.
        assert_eq!(rate_of(MAX_ACK_DELAY), (Some(120_000.0), Some(ms(18))));
        // An 8-ms hold: 6 ms of it taken out, 300 bytes over 14 ms.
        let (rate, rtt) = rate_of(ms(8));
        assert!((rate.unwrap() - 2400.0 / 0.014).abs() < 1e-6, "{rate:?}");
        assert_eq!(rtt, Some(ms(12)));
        // A hold as long as the round trip or longer is a lie: the rate
        // keeps its 20 ms.
        assert_eq!(rate_of(ms(20) + MAX_ACK_DELAY).0, Some(120_000.0));
        assert_eq!(rate_of(ms(25)).0, Some(120_000.0));
    }

    #[test]
    fn a_seeded_rate_prices_an_unmeasured_path_once() {
        let mut p = PathSender::new(0, 1.0, crate::cc::CcKind::Bbr.build());
        assert!(p.rate_unmeasured());
        for nonsense in [f64::NAN, f64::INFINITY, 0.0, -1.0] {
            assert!(!p.seed_rate(nonsense), "{nonsense}");
        }
        assert!(p.rate_unmeasured());
        assert!(p.seed_rate(20e6));
        assert!(!p.rate_unmeasured());
        assert_eq!(p.bandwidth_bps(), Some(20e6));
        assert_eq!(p.kalman.estimate_bps(), Some(20e6));
        // Seeded: a second seed is refused by both estimates.
        assert!(!p.seed_rate(40e6));
        assert_eq!(p.kalman.estimate_bps(), Some(20e6));
        // Light traffic, one packet per 10-ms round trip, for longer than
        // BBR's window: the seed still prices the path.
        let mut now = Instant::ZERO;
        for k in 0..30 {
            p.on_sent(now, k, 200, true);
            now += Duration::from_millis(10);
            p.on_ack(now, &ack(k as u32, 1), &mut OwdClock::for_sender());
        }
        assert_eq!(p.bandwidth_bps(), Some(20e6));
        // A controller without a rate model still lets the Kalman filter
        // of an unmeasured path take it.
        let mut c = PathSender::new(0, 1.0, Box::new(Ccid2::new()));
        assert!(c.seed_rate(5e6));
        assert_eq!(c.kalman.estimate_bps(), Some(5e6));
        assert!(!c.seed_rate(6e6));
    }

    #[test]
    fn app_limited_samples_do_not_feed_the_kalman_filter() {
        let mut p = PathSender::new(0, 1.0, Box::new(Ccid2::new()));
        let t0 = Instant::from_nanos(1_000_000_000);
        let ms = Duration::from_millis;
        for g in 0..3 {
            p.on_sent(t0, g, 1000, true);
        }
        p.on_ack(t0 + ms(20), &ack(2, 0b11), &mut OwdClock::for_sender());
        assert_eq!(p.kalman.estimate_bps(), None);
        for g in 3..6 {
            p.on_sent(t0 + ms(20), g, 1000, false);
        }
        p.on_ack(t0 + ms(40), &ack(5, 0b11), &mut OwdClock::for_sender());
        assert!(p.kalman.estimate_bps().is_some());
    }

    /// Under a quarter of the window in flight when a packet leaves, its
    /// acknowledgement says the path was underused.
    #[test]
    fn packets_sent_with_little_of_the_window_in_flight_are_underused() {
        let mut p = PathSender::new(0, 1.0, Box::new(Ccid2::new()));
        let cwnd = p.cc.cwnd_bytes();
        assert_eq!(cwnd % 4, 0, "a quarter of {cwnd} is whole");
        let quarter = cwnd / 4;
        let t0 = Instant::from_nanos(1_000_000_000);
        // In flight before each: 0, a byte under a quarter, a quarter, more.
        for (g, bytes) in [quarter - 1, 1, 1, 1].into_iter().enumerate() {
            p.on_sent(t0, g as u64, bytes, false);
        }
        let marks: Vec<bool> = p.in_flight.iter().map(|s| s.underused).collect();
        assert_eq!(marks, [true, true, false, false]);
    }

    /// A rate sample shows the path's rate only when the path was loaded:
    /// not app-limited, and not underused. A seed shows it too.
    #[test]
    fn only_a_loaded_sample_or_a_seed_shows_the_rate() {
        let t0 = Instant::from_nanos(1_000_000_000);
        let ms = Duration::from_millis;
        let mut p = PathSender::new(0, 1.0, Box::new(Ccid2::new()));
        let quarter = p.cc.cwnd_bytes() / 4;
        // Alone in flight: underused. Its sample feeds the Kalman filter,
        // but shows nothing.
        p.on_sent(t0, 0, 1000, false);
        p.on_ack(t0 + ms(20), &ack(0, 0), &mut OwdClock::for_sender());
        assert!(p.kalman.estimate_bps().is_some());
        assert!(!p.rate_shown());
        // A quarter of the window in flight before the second: loaded.
        p.on_sent(t0 + ms(20), 1, quarter, false);
        p.on_sent(t0 + ms(20), 2, 1000, false);
        p.on_ack(t0 + ms(40), &ack(2, 0b1), &mut OwdClock::for_sender());
        assert!(p.rate_shown());
        let mut seeded = PathSender::new(0, 1.0, Box::new(Ccid2::new()));
        assert!(seeded.seed_rate(5e6));
        assert!(seeded.rate_shown());
    }

    #[test]
    fn a_small_packets_silence_waits_for_its_held_acknowledgement() {
        let t0 = Instant::from_nanos(1_000_000_000);
        let deadline = |bytes: u64| {
            let mut p = PathSender::new(0, 1.0, fixed_pacing(None));
            p.on_sent(t0, 0, bytes, false);
            p.timeout_at().expect("a packet in flight")
        };
        // No RTT yet: the initial silence, and for a small packet the
        // receiver's longest hold on top.
        assert_eq!(
            deadline(SMALL_PACKET_BYTES),
            t0 + Duration::from_millis(500)
        );
        assert_eq!(
            deadline(SMALL_PACKET_BYTES - 1),
            t0 + Duration::from_millis(500) + SMALL_ACK_DELAY
        );
    }

    #[test]
    fn a_silence_keeps_only_what_late_acks_can_still_reach() {
        let mut p = PathSender::new(0, 1.0, fixed_pacing(None));
        let t0 = Instant::from_nanos(1_000_000_000);
        for g in 0..200 {
            p.on_sent(t0, g, 1000, false);
        }
        p.on_timeout(t0 + Duration::from_secs(1));
        assert_eq!(p.counters.timeouts, 1);
        assert_eq!(p.counters.lost_packets, 200);
        // Two ack bitmaps' reach: 128 packets.
        assert_eq!(p.in_flight.len(), 128);
        assert_eq!(p.in_flight.front().map(|s| s.pseq), Some(72));
    }

    #[test]
    fn a_full_window_without_progress_for_a_round_trip_is_stalled() {
        let mut p = PathSender::new(0, 1.0, Box::new(Ccid2::new()));
        let t0 = Instant::from_nanos(1_000_000_000);
        let mut g = 0;
        while p.cwnd_open(1000) {
            p.on_sent(t0, g, 1000, false);
            g += 1;
        }
        // No RTT measured yet: 100 ms of patience, counted from the send.
        let patience = Duration::from_millis(100);
        assert!(!p.is_stalled(t0 + patience, 1000));
        assert!(p.is_stalled(t0 + patience + Duration::from_nanos(1), 1000));
    }

    #[test]
    fn a_full_window_whose_oldest_packet_is_two_round_trips_old_is_overdue() {
        let t0 = Instant::from_nanos(1_000_000_000);
        let mut full = PathSender::new(0, 1.0, Box::new(Ccid2::new()));
        let mut g = 0;
        while full.cwnd_open(1000) {
            full.on_sent(t0, g, 1000, false);
            g += 1;
        }
        let mut open = PathSender::new(1, 1.0, Box::new(Ccid2::new()));
        open.on_sent(t0, 0, 1000, false);
        // No RTT measured yet: twice 100 ms, counted from the oldest send.
        let late = Duration::from_millis(200);
        assert!(!full.is_overdue(t0 + late, 1000));
        assert!(full.is_overdue(t0 + late + Duration::from_nanos(1), 1000));
        assert!(
            !open.is_overdue(t0 + late * 2, 1000),
            "a path with room in its window is not overdue"
        );
    }

    #[test]
    fn acks_measure_rtt_and_detect_loss() {
        let mut p = PathSender::new(0, 1.0, Box::new(Ccid2::new()));
        let t0 = Instant::from_nanos(1_000_000);
        for g in 0..5 {
            p.on_sent(t0, g, 1000, false);
        }
        assert_eq!(p.bytes_in_flight(), 5000);
        // Packet 1 missing: 4 acked, bitmap says 3, 2 and 0 arrived.
        let now = t0 + Duration::from_millis(30);
        p.on_ack(now, &ack(4, 0b1011), &mut OwdClock::for_sender());
        assert_eq!(p.counters.lost_packets, 1);
        assert_eq!(p.bytes_in_flight(), 0);
        assert_eq!(p.rtt.srtt(), Some(Duration::from_millis(30)));
        // A duplicate ack changes nothing.
        p.on_ack(now, &ack(4, 0b1011), &mut OwdClock::for_sender());
        assert_eq!(p.counters.acked_packets, 4);
        assert_eq!(p.counters.lost_packets, 1);
    }

    #[test]
    fn forged_acks_are_rejected_and_counted() {
        let mut p = PathSender::new(0, 1.0, Box::new(Ccid2::new()));
        let t0 = Instant::from_nanos(1_000_000);
        for g in 0..3 {
            p.on_sent(t0, g, 1000, false);
        }
        let now = t0 + Duration::from_millis(30);
        // An ack for number 7, never sent: nothing changes.
        p.on_ack(now, &ack(7, u64::MAX), &mut OwdClock::for_sender());
        assert_eq!(p.counters.rejected_acks, 1);
        assert_eq!(p.counters.acked_packets, 0);
        assert_eq!(p.bytes_in_flight(), 3000);
        // An ack delay longer than the round trip: the packet counts as
        // delivered, its timing does not (it used to set the RTT to 1 µs).
        let mut forged = ack(0, 0);
        forged.ack_delay_us = u32::MAX;
        p.on_ack(now, &forged, &mut OwdClock::for_sender());
        assert_eq!(p.counters.acked_packets, 1);
        assert_eq!(p.counters.rejected_timestamps, 1);
        assert_eq!(p.rtt.srtt(), None);
        assert!(!p.owd.has_samples());
        // An honest ack measures.
        p.on_ack(now, &ack(1, 0b1), &mut OwdClock::for_sender());
        assert_eq!(p.rtt.min_rtt(), Some(Duration::from_millis(30)));
        assert_eq!(p.counters.rejected_timestamps, 1);
    }

    #[test]
    fn silence_marks_the_path_down_until_heard_and_late_acks_still_count() {
        let mut p = PathSender::new(0, 1.0, Box::new(Ccid2::new()));
        let t0 = Instant::from_nanos(1_000_000);
        let rtt = Duration::from_millis(40);
        // A steady round trip, so its deviation is small.
        for g in 0..40 {
            p.on_sent(t0 + rtt * g, u64::from(g), 1000, false);
            p.on_ack(t0 + rtt * (g + 1), &ack(g, 0), &mut OwdClock::for_sender());
        }
        let t1 = t0 + rtt * 40;
        for g in 41..44 {
            p.on_sent(t1, g, 1000, false);
        }
        // Silent for the round trip plus a quarter of it: down, all lost.
        assert_eq!(p.timeout_at(), Some(t1 + Duration::from_millis(50)));
        p.on_timeout(t1 + Duration::from_millis(50));
        assert!(p.is_suspect());
        assert_eq!(p.bytes_in_flight(), 0);
        assert_eq!(p.counters.lost_packets, 3);
        assert_eq!(p.counters.down_events, 1);
        assert_eq!(p.timeout_at(), None);
        assert!(p.probe_due(t1 + Duration::from_millis(50)));
        // A probe goes out; the next silence is counted from it.
        let t2 = t1 + Duration::from_millis(60);
        p.on_sent(t2, 44, 1000, false);
        p.on_probe_sent(t2);
        assert_eq!(p.counters.probe_packets, 1);
        assert!(!p.probe_due(t2));
        // The ack of the probe also covers a packet declared lost: the path
        // is up, the late one counts as delivered, nothing is freed twice.
        p.on_ack(t2 + rtt, &ack(43, 0b1), &mut OwdClock::for_sender());
        assert!(!p.is_suspect());
        assert_eq!(p.counters.late_acks, 1);
        assert_eq!(p.counters.acked_packets, 42);
        assert_eq!(p.bytes_in_flight(), 0);
        assert_eq!(p.counters.down_events, 1);
    }

    /// A probe answered while a path sends nothing tells what became of
    /// the packets sent before it, where the data's round trip is stale.
    #[test]
    fn a_probe_answered_after_the_last_packet_shows_it_lost() {
        let ms = Duration::from_millis;
        let t0 = Instant::from_nanos(1_000_000);
        // A path whose data has seen a steady 400-ms round trip (a fade's
        // queue): silent only 500 ms past its oldest packet.
        let steady = |rtt: Duration| {
            let mut p = PathSender::new(0, 1.0, Box::new(Ccid2::new()));
            for g in 0..40 {
                p.on_sent(t0 + rtt * g, u64::from(g), 1000, false);
                p.on_ack(t0 + rtt * (g + 1), &ack(g, 0), &mut OwdClock::for_sender());
            }
            p
        };
        let mut p = steady(ms(400));
        let t1 = t0 + ms(400) * 40;
        for g in 40..43 {
            p.on_sent(t1, g, 1000, false);
        }
        let silence = t1 + ms(500);
        assert_eq!(p.timeout_at(), Some(silence));
        assert_eq!(p.last_sent_awaiting_acks(), Some(t1));
        // A probe sent with the last packet may have left before it.
        p.on_probe_answered(t1 + ms(40), t1);
        assert_eq!(p.probe_rtt, Some(ms(40)));
        assert_eq!(p.timeout_at(), Some(silence));
        // One sent after it and answered in 100 ms, a quarter of the
        // data's round trip: by the answer, the acknowledgement's hold
        // and a quarter of the probe's round trip, all three are lost.
        p.on_probe_answered(t1 + ms(150), t1 + ms(50));
        assert_eq!(p.timeout_at(), Some(t1 + ms(150 + 8 + 25)));
        // Answered in a little more, it shows nothing the deadline does not.
        p.on_probe_answered(t1 + ms(151), t1 + ms(50));
        assert_eq!(p.timeout_at(), Some(silence));
        // Nor does it once a packet has left after the probe.
        p.on_probe_answered(t1 + ms(150), t1 + ms(50));
        p.on_sent(t1 + ms(50), 43, 1000, false);
        assert_eq!(p.timeout_at(), Some(silence));
        assert_eq!(p.last_sent_awaiting_acks(), Some(t1 + ms(50)));
        // The deadline it shows is a silence's: all in flight lost.
        let mut p = steady(ms(400));
        p.on_sent(t1, 40, 1000, false);
        p.on_probe_answered(t1 + ms(150), t1 + ms(50));
        let shown = t1 + ms(183);
        assert_eq!(p.timeout_at(), Some(shown));
        p.on_timeout(shown);
        assert_eq!(p.bytes_in_flight(), 0);
        assert_eq!(p.counters.lost_packets, 1);
        assert_eq!(p.timeout_at(), None);
        assert_eq!(p.last_sent_awaiting_acks(), None);
    }
}
