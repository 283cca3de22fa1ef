//! The receiving side of a bonded datagram session: per-path sequence
//! tracking (loss detection, acknowledgements with receive timestamps),
//! periodic loss reports every `T_report`, one-way-delay estimates that set
//! the resequencer's timeout, and the resequencer itself.

use std::collections::VecDeque;
use std::time::Duration;

use crate::path::{OwdClock, OwdEstimator};
use crate::pool::BufferPool;
use crate::reseq::{Delivery, FlowLink, PathGap, ReseqConfig, Resequencer, SentAs};
use crate::sender::{Transmit, BUFFER_CAPACITY};
use crate::time::Instant;
use crate::wire::{self, AckFrame, Frame, LossEntry, LossReport, Packet, WireError};

#[derive(Debug, Clone)]
pub struct ReceiverConfig {
    pub paths: usize,
    pub reseq: ReseqConfig,
    /// Loss report interval (paper multipath-bonding-layer3: 50 ms).
    pub report_interval: Duration,
    /// Acknowledge after this many full data packets on a path (a small
    /// one counts as `SMALL_PACKET_WEIGHT` of one)...
    pub ack_every: u32,
    /// ...or when the oldest unacknowledged one has waited this long (or,
    /// while every unacknowledged one is small, [`SMALL_ACK_DELAY`]).
    pub max_ack_delay: Duration,
}

/// A data packet whose payload is shorter than this is small: an inner
/// TCP acknowledgement, a voice frame. Acknowledging every second one cost
/// an acknowledgement of about 80 bytes per 130 bytes carried (in a TCP
/// upload through the tunnel, 3 % of the fast path's forward capacity went
/// to acknowledging the returning TCP acknowledgements), so small packets
/// are acknowledged a quarter as often.
pub const SMALL_PAYLOAD: usize = 256;

/// How much of a full packet a small one counts for towards `ack_every`.
const SMALL_PACKET_WEIGHT: u32 = 4;

/// The longest a receiver holds an acknowledgement of a full packet
/// ([`ReceiverConfig::max_ack_delay`]'s default).
pub const MAX_ACK_DELAY: Duration = Duration::from_millis(2);

/// The longest a receiver holds an acknowledgement of small packets only;
/// a constant, not a setting, because the sender relies on it: its silence
/// deadline allows for it, and its delivery-rate samples take out what it
/// adds beyond [`MAX_ACK_DELAY`] (see `PathSender`).
pub const SMALL_ACK_DELAY: Duration = Duration::from_millis(8);

impl ReceiverConfig {
    pub fn new(paths: usize) -> ReceiverConfig {
        ReceiverConfig {
            paths,
            reseq: ReseqConfig::default(),
            report_interval: Duration::from_millis(50),
            ack_every: 2,
            max_ack_delay: MAX_ACK_DELAY,
        }
    }
}

#[derive(Debug, Default)]
struct PathReceiver {
    /// Next per-path number expected.
    expected: u64,
    started: bool,
    largest: u64,
    largest_at: Instant,
    /// Global number of the last packet that arrived in sequence.
    last_gseq: Option<u64>,
    /// Bit i: `largest - 1 - i` received.
    bitmap: u64,
    /// Unacknowledged data packets, a full one counting
    /// [`SMALL_PACKET_WEIGHT`] and a small one 1.
    unacked_weight: u32,
    ack_due: Option<Instant>,
    owd: OwdEstimator,
    interval_received: u32,
    interval_lost: u32,
    last_heard: Option<Instant>,
    /// Until then each acknowledgement of this path is also sent on the
    /// path that delivered data last (see [`Receiver::return_silent`]).
    copy_acks_until: Option<Instant>,
}

impl PathReceiver {
    /// Heard from recently enough to receive loss reports.
    fn alive(&self, now: Instant) -> bool {
        self.last_heard.is_some_and(|t| now - t <= REPORT_ALIVE)
    }
}

#[derive(Debug)]
pub struct Receiver {
    config: ReceiverConfig,
    paths: Vec<PathReceiver>,
    reseq: Resequencer,
    owd_clock: OwdClock,
    next_report: Option<Instant>,
    report_seq: u32,
    out: VecDeque<Transmit>,
    /// Buffers of feedback sent and of payloads the caller is done with,
    /// for the next ones.
    buffers: BufferPool,
    pub malformed: u64,
    /// Data packets whose per-path number was too far ahead to be honest.
    pub out_of_window: u64,
    /// Arrival of the first data packet, from which a silent path's grace runs.
    first_data: Option<Instant>,
}

/// Hole timeout while some path has delivered nothing yet: a path's first
/// packets may take a long path's whole one-way delay (a geostationary
/// satellite hop is about 280 ms), and a hole released before them is a
/// reordering the application sees (an inner TCP's first window, sent over
/// every path at once, took a spurious fast retransmit on a 150 ms path
/// with 100 ms here, and left slow start at 10 segments).
const UNKNOWN_PATH_TIMEOUT: Duration = Duration::from_millis(400);

/// How long after the first data packet a path that has delivered nothing
/// still counts as one whose packets may be on their way. Beyond it the
/// path is silent (down, unplugged, or a backup the sender does not use),
/// and waiting for it would hold every hole for nothing.
const UNKNOWN_PATH_GRACE: Duration = Duration::from_secs(1);

/// Per-path numbers at or beyond this far ahead of the next expected one are
/// dropped: one forged packet must not move a path's sequence for good.
const PSEQ_WINDOW: u64 = 1 << 20;

/// A path counts as alive for loss reports if heard from this recently.
const REPORT_ALIVE: Duration = Duration::from_secs(1);
/// A path that delivered data this recently is carrying data now.
const CARRYING_DATA: Duration = Duration::from_millis(100);

impl Receiver {
    pub fn new(config: ReceiverConfig) -> Receiver {
        Receiver {
            paths: (0..config.paths).map(|_| PathReceiver::default()).collect(),
            reseq: Resequencer::new(config.reseq),
            config,
            owd_clock: OwdClock::for_receiver(),
            next_report: None,
            report_seq: 0,
            out: VecDeque::new(),
            buffers: BufferPool::new(BUFFER_CAPACITY),
            malformed: 0,
            out_of_window: 0,
            first_data: None,
        }
    }

    /// Gives back a buffer: a delivered payload once written out, or a
    /// [`Transmit`]'s once copied out. The next payloads and feedback
    /// packets reuse it.
    pub fn recycle(&mut self, buffer: Vec<u8>) {
        // The resequencer's unused room: what it holds and the pool
        // together stay within its bound.
        let room = self
            .config
            .reseq
            .max_bytes
            .saturating_sub(self.reseq.held_bytes());
        self.buffers.put(buffer, room);
    }

    /// Frees pooled buffers unused for a while (see [`BufferPool::trim`]).
    pub fn trim_buffers(&mut self, now: Instant) {
        self.buffers.trim(now);
    }

    /// Bytes of buffers kept for reuse.
    pub fn pooled_bytes(&self) -> usize {
        self.buffers.bytes()
    }

    pub fn resequencer(&self) -> &Resequencer {
        &self.reseq
    }

    /// A packet arriving on path `path` (the path it physically came in on;
    /// a data header's path id must agree): data, or the sender's skip notices.
    pub fn handle_datagram(
        &mut self,
        now: Instant,
        path: u8,
        bytes: &[u8],
    ) -> Result<(), WireError> {
        let parsed = Packet::parse(bytes);
        let (header, payload) = match parsed {
            Ok(Packet::Data { header, payload }) if header.path == path => (header, payload),
            Ok(Packet::Feedback { frames, .. }) => {
                for frame in frames {
                    match frame {
                        Frame::Skip(k) => self.reseq.skip(now, k.from, k.count),
                        // Acks and reports flow the other way.
                        Frame::Ack(_) | Frame::LossReport(_) => self.malformed += 1,
                    }
                }
                return Ok(());
            }
            Ok(_) => {
                self.malformed += 1;
                return Err(WireError::PacketType(2));
            }
            Err(e) => {
                self.malformed += 1;
                return Err(e);
            }
        };
        let Some(p) = self.paths.get_mut(usize::from(path)) else {
            self.malformed += 1;
            return Err(WireError::PacketType(1));
        };
        let pseq = wire::widen(header.pseq, p.expected);
        let gseq = wire::widen(header.gseq, self.reseq.next_in_order());
        if p.started && pseq >= p.expected.saturating_add(PSEQ_WINDOW) {
            self.out_of_window += 1;
            return Ok(());
        }
        p.last_heard = Some(now);
        self.first_data.get_or_insert(now);
        let mut gap = None;
        if !p.started || pseq >= p.expected {
            if p.started && pseq > p.expected {
                let lost = pseq - p.expected;
                let lost_u32 = u32::try_from(lost).unwrap_or(u32::MAX);
                p.interval_lost = p.interval_lost.saturating_add(lost_u32);
                gap = Some(PathGap {
                    // An express packet's number lies beyond numbers not
                    // sent yet: the range below it pins nothing down.
                    after: p.last_gseq.filter(|_| !header.express),
                    lost,
                    // The packet just before this one on the path is among
                    // the lost, if the hint names it (not 0, not saturated).
                    last_lost: (header.prev_gap != 0 && header.prev_gap != wire::GAP_SATURATED)
                        .then(|| gseq.checked_sub(u64::from(header.prev_gap)))
                        .flatten(),
                    resent: header.resends,
                });
            }
            // An express number lies beyond numbers this path may still
            // carry: the gap after a later packet counts from the one before.
            if !header.express {
                p.last_gseq = Some(gseq);
            }
            // Shift the ack bitmap to the new largest.
            let shift = if p.started { pseq - p.largest } else { 0 };
            p.bitmap = if shift == 0 {
                p.bitmap
            } else if shift > 64 {
                0
            } else {
                ((p.bitmap << 1) | 1) << (shift - 1)
            };
            p.started = true;
            p.largest = pseq;
            p.largest_at = now;
            p.expected = pseq + 1;
            let raw = now.wire_micros().wrapping_sub(header.send_ts_us);
            p.owd
                .on_sample(now, &mut self.owd_clock, usize::from(path), raw);
        } else if let Some(below) = (p.largest - pseq).checked_sub(1).filter(|b| *b < 64) {
            // Late within the path (rare: paths are FIFO); count it back.
            p.bitmap |= 1 << below;
        }
        p.interval_received = p.interval_received.saturating_add(1);
        let small = payload.len() < SMALL_PAYLOAD;
        let (weight, delay) = if small {
            (1, SMALL_ACK_DELAY)
        } else {
            (SMALL_PACKET_WEIGHT, self.config.max_ack_delay)
        };
        p.unacked_weight = p.unacked_weight.saturating_add(weight);
        let due = now + delay;
        p.ack_due = Some(p.ack_due.map_or(due, |d| d.min(due)));
        let flush = p.unacked_weight >= self.config.ack_every.saturating_mul(SMALL_PACKET_WEIGHT)
            || gap.is_some();
        if flush {
            self.send_ack(now, usize::from(path));
        }
        self.next_report
            .get_or_insert(now + self.config.report_interval);
        self.reseq.set_timeout(self.reseq_timeout(now));
        let flow = FlowLink::from_wire(gseq, header.flow_gap);
        let copy = self.buffers.copy_of(payload);
        self.reseq.push_marked(
            now,
            gseq,
            copy,
            gap,
            flow,
            if header.express {
                SentAs::Express
            } else if header.behind {
                SentAs::Behind
            } else {
                SentAs::InOrder
            },
        );
        Ok(())
    }

    /// Hole timeout, TCP-RTO style from one-way delays (paper
    /// multilink-udp-proxy §III-C): a missing packet may still be on the
    /// slowest path, so wait for that path's `owd + 4 * var` beyond the
    /// fastest path's delay.
    fn reseq_timeout(&self, now: Instant) -> Duration {
        let known = self.paths.iter().filter(|p| p.owd.has_samples());
        let (lo, hi) = known.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), p| {
            (lo.min(p.owd.floor_us(now)), hi.max(p.owd.upper_us()))
        });
        let spread_us = if hi >= lo { hi - lo } else { 0.0 };
        // A path not heard from yet may be the slowest: until every path has
        // spoken, or the silent ones have had their grace, do not give up on
        // a hole quickly.
        let waiting_for_a_path = !self.paths.iter().all(|p| p.owd.has_samples())
            && self
                .first_data
                .is_none_or(|first| now - first < UNKNOWN_PATH_GRACE);
        let floor = if waiting_for_a_path {
            UNKNOWN_PATH_TIMEOUT
        } else {
            Duration::from_millis(2)
        };
        Duration::from_micros(spread_us as u64).max(floor) + Duration::from_millis(1)
    }

    fn send_ack(&mut self, now: Instant, index: usize) {
        let p = &mut self.paths[index];
        p.unacked_weight = 0;
        p.ack_due = None;
        let frame = Frame::Ack(AckFrame {
            path: index as u8,
            largest_pseq: p.largest as u32,
            ack_delay_us: u32::try_from((now - p.largest_at).as_micros()).unwrap_or(u32::MAX),
            recv_ts_us: p.largest_at.wire_micros(),
            bitmap: p.bitmap,
        });
        let frames = std::slice::from_ref(&frame);
        self.push_feedback(index as u8, frames);
        if self.paths[index].copy_acks_until.is_some_and(|t| now < t) {
            if let Some(other) = self.latest_other_path(index, now) {
                self.push_feedback(other, frames);
            }
        }
    }

    /// The peer says it hears nothing on `path` (it probes it while
    /// sending on it): when data is arriving on the path, its return
    /// direction is down (a radio downlink in a fade) while its forward
    /// direction works, so an acknowledgement of the path goes out now,
    /// and for `span` each one also goes out on the path that delivered
    /// data last. The peer's sender then keeps using the path, and keeps
    /// it up, on what those copies tell it. A path that carries nothing (a
    /// probe that keeps an idle path's mapping open) is left alone.
    pub fn return_silent(&mut self, now: Instant, path: u8, span: Duration) {
        if let Some(p) = self.paths.get_mut(usize::from(path)) {
            if p.last_heard.is_some_and(|t| now - t <= CARRYING_DATA) {
                p.copy_acks_until = Some(now + span);
                // At once: the acknowledgements sent into the silence were
                // lost, and a sender whose window they would have opened
                // sends nothing new to be acknowledged.
                p.ack_due = Some(now);
            }
        }
    }

    /// The path other than `index` that delivered data most recently, if
    /// any did within [`CARRYING_DATA`].
    fn latest_other_path(&self, index: usize, now: Instant) -> Option<u8> {
        self.paths
            .iter()
            .enumerate()
            .filter(|&(i, _)| i != index)
            .filter_map(|(i, p)| p.last_heard.map(|t| (t, i)))
            .filter(|&(t, _)| now - t <= CARRYING_DATA)
            .max()
            .map(|(_, i)| i as u8)
    }

    fn push_feedback(&mut self, path: u8, frames: &[Frame]) {
        let mut data = self.buffers.take(wire::feedback_len(frames));
        wire::write_feedback(path, frames, &mut data).expect("reports hold at most 255 entries");
        self.out.push_back(Transmit { path, data });
    }

    fn send_report(&mut self, now: Instant) {
        self.report_seq = self.report_seq.wrapping_add(1);
        let entries: Vec<LossEntry> = self
            .paths
            .iter_mut()
            .enumerate()
            .take(wire::MAX_LOSS_ENTRIES)
            .map(|(i, p)| {
                let e = LossEntry {
                    path: i as u8,
                    received: p.interval_received,
                    lost: p.interval_lost,
                };
                p.interval_received = 0;
                p.interval_lost = 0;
                e
            })
            .collect();
        let frame = Frame::LossReport(LossReport {
            report_seq: self.report_seq,
            entries,
        });
        // On every live path: one lost report must not hide a loss.
        let alive: Vec<u8> = (0..self.paths.len())
            .filter(|&i| self.paths[i].alive(now))
            .map(|i| i as u8)
            .collect();
        for path in alive {
            self.push_feedback(path, std::slice::from_ref(&frame));
        }
    }

    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.out.pop_front()
    }

    pub fn poll_deliver(&mut self) -> Option<Delivery> {
        self.reseq.poll_deliver()
    }

    pub fn poll_timeout(&self) -> Option<Instant> {
        let acks = self.paths.iter().filter_map(|p| p.ack_due);
        acks.chain(self.next_report)
            .chain(self.reseq.poll_timeout())
            .min()
    }

    pub fn handle_timeout(&mut self, now: Instant) {
        for i in 0..self.paths.len() {
            if self.paths[i].ack_due.is_some_and(|t| t <= now) {
                self.send_ack(now, i);
            }
        }
        if let Some(t) = self.next_report.filter(|t| *t <= now) {
            self.send_report(now);
            let heard_recently = self.paths.iter().any(|p| p.alive(now));
            // Reports stop while nothing arrives; the next packet restarts them.
            self.next_report = heard_recently.then(|| t + self.config.report_interval);
        }
        self.reseq.handle_timeout(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::DataHeader;

    fn data(gseq: u64, pseq: u32) -> Vec<u8> {
        packet(gseq, pseq, 0, 0)
    }

    fn packet(gseq: u64, pseq: u32, prev_gap: u16, flow_gap: u16) -> Vec<u8> {
        header_packet(header(gseq, pseq, prev_gap, flow_gap))
    }

    /// A header of path 0.
    fn header(gseq: u64, pseq: u32, prev_gap: u16, flow_gap: u16) -> DataHeader {
        DataHeader {
            path: 0,
            gseq: gseq as u32,
            pseq,
            send_ts_us: 0,
            prev_gap,
            flow_gap,
            express: false,
            resends: false,
            behind: false,
        }
    }

    /// A data packet of `header` with a full (not small) payload.
    fn header_packet(header: DataHeader) -> Vec<u8> {
        let mut d = Vec::new();
        header.append_to(&[0; SMALL_PAYLOAD], &mut d);
        d
    }

    /// A data packet naming path `path`, without gap hints.
    fn data_on(path: u8, gseq: u64, pseq: u32) -> Vec<u8> {
        header_packet(DataHeader {
            path,
            ..header(gseq, pseq, 0, 0)
        })
    }

    /// An express packet of path 0.
    fn express_packet(gseq: u64, pseq: u32, prev_gap: u16, flow_gap: u16) -> Vec<u8> {
        header_packet(DataHeader {
            express: true,
            ..header(gseq, pseq, prev_gap, flow_gap)
        })
    }

    fn delivered(rx: &mut Receiver) -> Vec<u64> {
        std::iter::from_fn(|| rx.poll_deliver())
            .map(|d| d.gseq)
            .collect()
    }

    fn skip_notice(from: u64, count: u32) -> Vec<u8> {
        let frame = Frame::Skip(wire::SkipFrame { from, count });
        wire::feedback_packet(0, &[frame]).unwrap()
    }

    #[test]
    fn a_saturated_path_hint_names_no_lost_packet() {
        // Packet 70,000 arrives after a path loss. Its hint names the
        // packet sent before it on the path: exactly 65,534 back, or (when
        // saturated) somewhere at least 65,535 back, which pins nothing.
        for (prev_gap, named_lost) in [(65_534, true), (wire::GAP_SATURATED, false)] {
            let mut rx = Receiver::new(ReceiverConfig::new(1));
            let t = Instant::from_nanos(1_000_000);
            rx.handle_datagram(t, 0, &data(0, 0)).unwrap();
            rx.handle_datagram(t, 0, &packet(70_000, 2, prev_gap, 0))
                .unwrap();
            // The sender dropped 1 up to the number the hint points at
            // unsent; that number is skipped too only if the hint names it.
            let pointed = 70_000 - u64::from(prev_gap);
            let count = u32::try_from(pointed - 1).unwrap();
            rx.handle_datagram(t, 0, &skip_notice(1, count)).unwrap();
            let skipped = rx.resequencer().counters.skipped;
            assert_eq!(
                skipped,
                pointed - 1 + u64::from(named_lost),
                "hint {prev_gap}"
            );
        }
    }

    /// The wire carries a global number's low 32 bits: past 2^32 the
    /// receiver widens them to the numbers the sender gave, and a late
    /// packet from below the epoch boundary is still recognised as late.
    #[test]
    fn numbers_past_two_to_the_32_are_widened() {
        let mut rx = Receiver::new(ReceiverConfig::new(1));
        let t = Instant::from_nanos(1_000_000);
        let start = (1u64 << 32) - 3;
        // The sender skipped everything below `start` (in window-sized
        // notices, as far as the window lets one reach).
        let chunk = 1u64 << 20;
        let mut from = 0;
        while from < start {
            let count = (start - from).min(chunk);
            rx.handle_datagram(t, 0, &skip_notice(from, count as u32))
                .unwrap();
            from += count;
        }
        assert_eq!(rx.resequencer().next_in_order(), start);
        // Five numbers across the boundary.
        for (pseq, gseq) in (start..start + 5).enumerate() {
            rx.handle_datagram(t, 0, &data(gseq, pseq as u32)).unwrap();
        }
        assert_eq!(delivered(&mut rx), (start..start + 5).collect::<Vec<_>>());
        // A copy of a number already delivered, from before the boundary.
        rx.handle_datagram(t, 0, &data(start + 1, 5)).unwrap();
        assert!(delivered(&mut rx).is_empty());
        assert_eq!(rx.resequencer().counters.out_of_window, 0);
    }

    /// Loss reports go out on every path heard from within the last
    /// second, not on one that has fallen silent.
    #[test]
    fn a_path_silent_for_a_second_gets_no_loss_reports() {
        let mut rx = Receiver::new(ReceiverConfig::new(2));
        let t = Instant::from_nanos(1_000_000);
        rx.handle_datagram(t, 0, &data(0, 0)).unwrap();
        rx.handle_datagram(t, 1, &data_on(1, 1, 0)).unwrap();
        run_timeouts(&mut rx, t + ms(60));
        let is_report = |f: &Frame| matches!(f, Frame::LossReport(_));
        assert_eq!(paths_carrying(&mut rx, is_report), vec![0, 1]);
        // Only path 0 speaks again, 1.5 s later.
        let later = t + ms(1500);
        run_timeouts(&mut rx, later);
        feedback(&mut rx);
        rx.handle_datagram(later, 0, &data(2, 1)).unwrap();
        run_timeouts(&mut rx, later + ms(60));
        assert_eq!(paths_carrying(&mut rx, is_report), vec![0]);
    }

    /// A path whose return direction is silent has its acknowledgements
    /// copied, for the span, onto the other path that delivered data last
    /// (of three), and no longer once the span is over.
    #[test]
    fn a_silent_return_copies_acks_to_the_latest_other_path() {
        let mut rx = Receiver::new(ReceiverConfig::new(3));
        let t = Instant::from_nanos(1_000_000);
        rx.handle_datagram(t, 1, &data_on(1, 0, 0)).unwrap();
        rx.handle_datagram(t + ms(5), 2, &data_on(2, 1, 0)).unwrap();
        rx.handle_datagram(t + ms(10), 0, &data(2, 0)).unwrap();
        run_timeouts(&mut rx, t + ms(10));
        feedback(&mut rx);
        let is_ack_of_path_0 = |f: &Frame| matches!(f, Frame::Ack(a) if a.path == 0);
        let now = t + ms(10);
        rx.return_silent(now, 0, ms(20));
        run_timeouts(&mut rx, now);
        assert_eq!(paths_carrying(&mut rx, is_ack_of_path_0), vec![0, 2]);
        // A gap (number 1 lost) acknowledges at once: at the span's end,
        // on path 0 alone.
        let end = now + ms(20);
        rx.handle_datagram(end, 0, &data(4, 2)).unwrap();
        assert_eq!(paths_carrying(&mut rx, is_ack_of_path_0), vec![0]);
    }

    /// A delivered payload given back is kept for the next one and
    /// counted; kept unused past the trim interval, it is freed.
    #[test]
    fn recycled_payloads_are_pooled_counted_and_trimmed() {
        let mut rx = Receiver::new(ReceiverConfig::new(1));
        let t = Instant::from_nanos(1_000_000);
        let mut packet = Vec::new();
        header(0, 0, 0, 0).append_to(&[7; 1200], &mut packet);
        rx.handle_datagram(t, 0, &packet).unwrap();
        let payload = rx.poll_deliver().unwrap().payload;
        let capacity = payload.capacity();
        assert!(capacity >= 1200);
        assert_eq!(rx.pooled_bytes(), 0);
        rx.recycle(payload);
        assert_eq!(rx.pooled_bytes(), capacity);
        rx.trim_buffers(t);
        rx.trim_buffers(t + crate::pool::TRIM_INTERVAL * 3);
        rx.trim_buffers(t + crate::pool::TRIM_INTERVAL * 6);
        assert_eq!(rx.pooled_bytes(), 0);
    }

    #[test]
    fn a_flow_gap_lets_a_packet_past_another_flows_hole() {
        let mut rx = Receiver::new(ReceiverConfig::new(1));
        let t = Instant::from_nanos(1_000_000);
        rx.handle_datagram(t, 0, &packet(0, 0, 0, wire::GAP_SATURATED))
            .unwrap();
        // 1 is another flow's, still on its way; 2 follows 0 in its flow.
        rx.handle_datagram(t, 0, &packet(2, 1, 2, 2)).unwrap();
        // 3 carries no flow information: it waits for 1.
        rx.handle_datagram(t, 0, &packet(3, 2, 1, 0)).unwrap();
        assert_eq!(delivered(&mut rx), vec![0, 2]);
        rx.handle_datagram(t, 0, &packet(1, 3, 0, 1)).unwrap();
        assert_eq!(delivered(&mut rx), vec![1, 3]);
        assert_eq!(rx.resequencer().counters.delivered_early, 1);
    }

    #[test]
    fn hostile_numbers_are_dropped_and_counted() {
        let mut rx = Receiver::new(ReceiverConfig::new(1));
        let t = Instant::from_nanos(1_000_000);
        rx.handle_datagram(t, 0, &data(0, 0)).unwrap();
        // A global number 2^30 ahead (as far as 32 bits reach either way):
        // the resequencer drops it at once.
        rx.handle_datagram(t, 0, &data(1 << 30, 1)).unwrap();
        assert_eq!(rx.resequencer().counters.out_of_window, 1);
        // A path number 2^31 ahead would have moved the path's sequence.
        rx.handle_datagram(t, 0, &data(2, 1 << 31)).unwrap();
        assert_eq!(rx.out_of_window, 1);
        rx.handle_datagram(t, 0, &data(1, 2)).unwrap();
        let delivered: Vec<u64> = std::iter::from_fn(|| rx.poll_deliver())
            .map(|d| d.gseq)
            .collect();
        assert_eq!(delivered, vec![0, 1]);
        assert_eq!(rx.resequencer().counters.skipped, 0);
    }

    #[test]
    fn a_gap_before_an_express_packet_pins_down_only_its_named_loss() {
        let mut rx = Receiver::new(ReceiverConfig::new(2));
        let t = Instant::from_nanos(1_000_000);
        rx.handle_datagram(t, 0, &packet(0, 0, 0, 0)).unwrap();
        for (pseq, gseq) in (2..10).enumerate() {
            rx.handle_datagram(t, 1, &data_on(1, gseq, pseq as u32))
                .unwrap();
        }
        // Path 0 lost one packet (its number not named) before the express
        // 10. Only 1 is missing below 10 and one packet was lost, but 1 may
        // still be at the sender: nothing is given up on.
        let express = express_packet(10, 2, 0, wire::GAP_SATURATED);
        rx.handle_datagram(t, 0, &express).unwrap();
        rx.handle_datagram(t, 1, &data_on(1, 11, 8)).unwrap();
        assert_eq!(delivered(&mut rx), vec![0, 10]);
        assert_eq!(rx.resequencer().counters.skipped, 0);
        rx.handle_datagram(t, 0, &packet(1, 3, 0, 0)).unwrap();
        let mut expected: Vec<u64> = (1..10).collect();
        expected.push(11);
        assert_eq!(delivered(&mut rx), expected);
        assert_eq!(rx.resequencer().counters.delivered_late, 0);
    }

    /// (path, frame) of every feedback packet the receiver sent.
    fn feedback(rx: &mut Receiver) -> Vec<(u8, Frame)> {
        let mut out = Vec::new();
        while let Some(t) = rx.poll_transmit() {
            let Packet::Feedback { path, frames } = Packet::parse(&t.data).unwrap() else {
                panic!("the receiver sent data");
            };
            assert_eq!(path, t.path);
            out.extend(frames.into_iter().map(|f| (path, f)));
        }
        out
    }

    /// The paths the receiver's pending feedback frames that `is` picks
    /// go out on, in order.
    fn paths_carrying(rx: &mut Receiver, is: impl Fn(&Frame) -> bool) -> Vec<u8> {
        feedback(rx)
            .into_iter()
            .filter(|(_, f)| is(f))
            .map(|(path, _)| path)
            .collect()
    }

    fn acks(rx: &mut Receiver) -> Vec<(u32, u64)> {
        feedback(rx)
            .into_iter()
            .filter_map(|(_, f)| match f {
                Frame::Ack(a) => Some((a.largest_pseq, a.bitmap)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn acks_name_the_largest_and_a_bitmap_of_what_arrived_below_it() {
        let mut rx = Receiver::new(ReceiverConfig::new(1));
        let t = Instant::from_nanos(1_000_000);
        rx.handle_datagram(t, 0, &data(0, 0)).unwrap();
        assert_eq!(acks(&mut rx), vec![], "every second packet is acknowledged");
        rx.handle_datagram(t, 0, &data(1, 1)).unwrap();
        assert_eq!(acks(&mut rx), vec![(1, 0b1)]);
        // Path packet 2 is missing: acknowledged at once (0 and 1 below 3).
        rx.handle_datagram(t, 0, &data(3, 3)).unwrap();
        assert_eq!(acks(&mut rx), vec![(3, 0b110)]);
        // 2 arrives late on its path: counted back, acknowledged with 4.
        rx.handle_datagram(t, 0, &data(2, 2)).unwrap();
        assert_eq!(acks(&mut rx), vec![]);
        rx.handle_datagram(t, 0, &data(4, 4)).unwrap();
        assert_eq!(acks(&mut rx), vec![(4, 0b1111)]);
        // 65 ahead: nothing of the bitmap is left (64 missing below it).
        rx.handle_datagram(t, 0, &data(5, 69)).unwrap();
        assert_eq!(acks(&mut rx), vec![(69, 0)]);
        rx.handle_datagram(t, 0, &data(6, 70)).unwrap();
        rx.handle_datagram(t, 0, &data(7, 71)).unwrap();
        assert_eq!(acks(&mut rx), vec![(71, 0b11)]);
        // A lone packet waits for the ack delay.
        rx.handle_datagram(t, 0, &data(8, 72)).unwrap();
        assert_eq!(acks(&mut rx), vec![]);
        assert_eq!(rx.poll_timeout(), Some(t + ms(2)));
        rx.handle_timeout(t + ms(2));
        assert_eq!(acks(&mut rx), vec![(72, 0b111)]);
    }

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn loss_reports_count_each_paths_packets_per_interval_on_every_live_path() {
        let mut rx = Receiver::new(ReceiverConfig::new(2));
        let t = Instant::from_nanos(1_000_000);
        // a: 0, 1, (2 lost), 3, (4, 5 lost), 6, then 2 late; b: 0, 1.
        for pseq in [0, 1, 3, 6, 2] {
            rx.handle_datagram(t, 0, &data(u64::from(pseq) * 2, pseq))
                .unwrap();
        }
        rx.handle_datagram(t, 1, &data_on(1, 1, 0)).unwrap();
        rx.handle_datagram(t, 1, &data_on(1, 3, 1)).unwrap();
        feedback(&mut rx);
        rx.handle_timeout(t + ms(50));
        let reports: Vec<(u8, LossReport)> = feedback(&mut rx)
            .into_iter()
            .filter_map(|(path, f)| match f {
                Frame::LossReport(r) => Some((path, r)),
                _ => None,
            })
            .collect();
        let entries = vec![
            LossEntry {
                path: 0,
                received: 5,
                lost: 3,
            },
            LossEntry {
                path: 1,
                received: 2,
                lost: 0,
            },
        ];
        let report = LossReport {
            report_seq: 1,
            entries,
        };
        assert_eq!(reports, vec![(0, report.clone()), (1, report)]);
        // The next interval starts from zero.
        rx.handle_datagram(t + ms(60), 0, &data(20, 7)).unwrap();
        feedback(&mut rx);
        rx.handle_timeout(t + ms(100));
        let second = feedback(&mut rx);
        assert!(second.iter().any(|(_, f)| matches!(f, Frame::LossReport(r)
            if r.report_seq == 2 && r.entries[0].received == 1 && r.entries[0].lost == 0
                && r.entries[1].received == 0)));
    }

    #[test]
    fn packets_that_are_not_data_for_this_path_are_counted_malformed() {
        let mut rx = Receiver::new(ReceiverConfig::new(2));
        let t = Instant::from_nanos(1_000_000);
        // Data naming path 1 arriving on path 0.
        assert!(rx.handle_datagram(t, 0, &data_on(1, 0, 0)).is_err());
        assert_eq!(rx.malformed, 1);
        // A path the receiver does not have.
        assert!(rx.handle_datagram(t, 2, &data_on(2, 0, 0)).is_err());
        assert_eq!(rx.malformed, 2);
        // Garbage, and feedback that flows the other way: one per frame.
        assert!(rx.handle_datagram(t, 0, &[0xff, 0]).is_err());
        assert_eq!(rx.malformed, 3);
        let ack = Frame::Ack(AckFrame {
            path: 0,
            largest_pseq: 0,
            ack_delay_us: 0,
            recv_ts_us: 0,
            bitmap: 0,
        });
        let report = Frame::LossReport(LossReport {
            report_seq: 1,
            entries: vec![],
        });
        let packet = wire::feedback_packet(0, &[ack, report]).unwrap();
        rx.handle_datagram(t, 0, &packet).unwrap();
        assert_eq!(rx.malformed, 5);
        assert_eq!(delivered(&mut rx), vec![]);
        assert_eq!(feedback(&mut rx), vec![]);
    }

    #[test]
    fn a_paths_gap_counts_from_its_last_ordinary_packet() {
        let mut rx = Receiver::new(ReceiverConfig::new(2));
        let t = Instant::from_nanos(1_000_000);
        rx.handle_datagram(t, 0, &packet(0, 0, 0, 0)).unwrap();
        let express = express_packet(10, 1, 10, wire::GAP_SATURATED);
        rx.handle_datagram(t, 0, &express).unwrap();
        for (pseq, gseq) in [(0, 2), (1, 3)] {
            rx.handle_datagram(t, 1, &data_on(1, gseq, pseq)).unwrap();
        }
        // Path 0 lost one packet (not named) before 4. Counting from its
        // last ordinary packet, 0, only 1 is missing: that is it, and 2, 3
        // and 4 go at once. (Counting from the express 10 would pin
        // nothing down, and they would wait for a timeout.)
        rx.handle_datagram(t, 0, &packet(4, 3, 0, 0)).unwrap();
        assert_eq!(delivered(&mut rx), vec![0, 10, 2, 3, 4]);
        assert_eq!(rx.resequencer().counters.skipped, 1);
    }

    #[test]
    fn small_packets_are_acknowledged_in_eights_or_after_their_longer_delay() {
        let ms = Duration::from_millis;
        let mut rx = Receiver::new(ReceiverConfig::new(1));
        let small = |n: u32| {
            let mut d = Vec::new();
            header(u64::from(n), n, 0, 0).append_to(&[0; SMALL_PAYLOAD - 1], &mut d);
            d
        };
        let t = Instant::from_nanos(1_000_000);
        for n in 0..7 {
            rx.handle_datagram(t, 0, &small(n)).unwrap();
        }
        assert_eq!(
            acks(&mut rx),
            vec![],
            "seven small ones weigh less than two full ones"
        );
        assert_eq!(rx.poll_timeout(), Some(t + SMALL_ACK_DELAY));
        rx.handle_datagram(t, 0, &small(7)).unwrap();
        assert_eq!(acks(&mut rx), vec![(7, 0b111_1111)]);
        // One alone waits the longer delay, not max_ack_delay.
        rx.handle_datagram(t, 0, &small(8)).unwrap();
        rx.handle_timeout(t + ms(2));
        assert_eq!(acks(&mut rx), vec![]);
        rx.handle_timeout(t + SMALL_ACK_DELAY);
        assert_eq!(acks(&mut rx), vec![(8, 0xff)]);
        // A full packet behind a small one brings the acknowledgement in
        // to its own max_ack_delay; a full and four small weigh two full.
        let t = t + ms(20);
        rx.handle_datagram(t, 0, &small(9)).unwrap();
        rx.handle_datagram(t + ms(1), 0, &data(10, 10)).unwrap();
        assert_eq!(rx.poll_timeout(), Some(t + ms(3)));
        rx.handle_timeout(t + ms(3));
        assert_eq!(acks(&mut rx), vec![(10, 0x3ff)]);
        rx.handle_datagram(t + ms(4), 0, &data(11, 11)).unwrap();
        for n in 12..15 {
            rx.handle_datagram(t + ms(4), 0, &small(n)).unwrap();
        }
        assert_eq!(acks(&mut rx), vec![]);
        rx.handle_datagram(t + ms(4), 0, &small(15)).unwrap();
        assert_eq!(acks(&mut rx), vec![(15, 0x7fff)]);
    }

    #[test]
    fn a_packet_late_on_its_path_sets_its_bit_below_the_largest() {
        let mut rx = Receiver::new(ReceiverConfig::new(1));
        let t = Instant::from_nanos(1_000_000);
        rx.handle_datagram(t, 0, &data(0, 0)).unwrap();
        // 1-4 missing: acknowledged at once, 0 four below 5.
        rx.handle_datagram(t, 0, &data(5, 5)).unwrap();
        assert_eq!(acks(&mut rx), vec![(5, 0b1_0000)]);
        // 2 arrives late: its bit is two below 5.
        rx.handle_datagram(t, 0, &data(2, 2)).unwrap();
        rx.handle_datagram(t, 0, &data(6, 6)).unwrap();
        assert_eq!(acks(&mut rx), vec![(6, 0b10_1001)]);
        // 64 ahead: 6 is the bitmap's last bit; 5, now 65 below the
        // largest, is beyond it and ignored.
        rx.handle_datagram(t, 0, &data(70, 70)).unwrap();
        assert_eq!(acks(&mut rx), vec![(70, 1 << 63)]);
        rx.handle_datagram(t, 0, &data(9, 5)).unwrap();
        rx.handle_datagram(t, 0, &data(71, 71)).unwrap();
        assert_eq!(acks(&mut rx), vec![(71, 1)]);
    }

    /// Runs every timeout due up to `until`.
    fn run_timeouts(rx: &mut Receiver, until: Instant) {
        while let Some(t) = rx.poll_timeout().filter(|&t| t <= until) {
            rx.handle_timeout(t);
        }
    }

    #[test]
    fn a_hole_waits_for_a_path_not_heard_from_yet() {
        let mut rx = Receiver::new(ReceiverConfig::new(2));
        let t = Instant::from_nanos(1_000_000);
        // 1 comes on path 1; 0 is on path 0, a long path that has not
        // delivered anything yet.
        rx.handle_datagram(t, 1, &data_on(1, 1, 0)).unwrap();
        let arrives = t + Duration::from_millis(350);
        run_timeouts(&mut rx, arrives);
        assert_eq!(delivered(&mut rx), vec![]);
        rx.handle_datagram(arrives, 0, &data_on(0, 0, 0)).unwrap();
        assert_eq!(delivered(&mut rx), vec![0, 1]);
        assert_eq!(rx.resequencer().counters.timeouts, 0);
    }

    #[test]
    fn a_path_silent_past_its_grace_no_longer_holds_holes() {
        let mut rx = Receiver::new(ReceiverConfig::new(2));
        // Sent when it arrives: a steady one-way delay.
        let sent_now = |now: Instant, gseq, pseq| {
            header_packet(DataHeader {
                path: 1,
                send_ts_us: now.wire_micros(),
                ..header(gseq, pseq, 0, 0)
            })
        };
        let t = Instant::from_nanos(1_000_000);
        rx.handle_datagram(t, 1, &sent_now(t, 0, 0)).unwrap();
        assert_eq!(delivered(&mut rx), vec![0]);
        // Path 0 never speaks. From the end of the grace on, a hole (1) is
        // given up on after the heard paths' spread plus 3 ms (the 2 ms
        // floor and 1 ms), not after the wait for a path whose packets may
        // still be coming.
        let later = t + UNKNOWN_PATH_GRACE;
        rx.handle_datagram(later, 1, &sent_now(later, 2, 1))
            .unwrap();
        run_timeouts(&mut rx, later + Duration::from_micros(2500));
        assert_eq!(delivered(&mut rx), vec![]);
        run_timeouts(&mut rx, later + Duration::from_millis(10));
        assert_eq!(delivered(&mut rx), vec![2]);
        assert_eq!(rx.resequencer().counters.timeouts, 1);
    }
}
