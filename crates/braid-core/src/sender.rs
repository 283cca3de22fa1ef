//! The sending side of a bonded datagram session: a bounded send queue, the
//! scheduler that places each datagram on one or more paths, and per-path
//! state fed by the receiver's feedback.
//!
//! Method families, as in quinn-proto: `send` and `handle_*` take input,
//! `poll_*` give output, time is passed in.

use std::collections::VecDeque;
use std::time::Duration;

use crate::cc::CcKind;
use crate::path::PathSender;
use crate::sched::{self, Decision, PathInfo, PathView, SchedContext, SchedError, Scheduler};
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
}

impl SenderConfig {
    pub fn new(paths: Vec<PathInfo>) -> SenderConfig {
        SenderConfig {
            paths,
            scheduler: sched::DEFAULT.to_owned(),
            cc: CcKind::Bbr,
            max_queue_delay: None,
            max_queue_bytes: 8 << 20,
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
pub struct SenderCounters {
    pub accepted: u64,
    pub rejected_queue_full: u64,
    /// Dropped from the queue head for waiting too long.
    pub dropped_stale: u64,
    /// Dropped by the scheduler (no path could take it).
    pub dropped_by_scheduler: u64,
    pub sent_datagrams: u64,
    /// Extra copies sent by redundant scheduling.
    pub sent_copies: u64,
    /// Datagrams a slow path carried ahead of earlier ones (`SendBehind`).
    pub sent_behind: u64,
    /// Packets telling the receiver which numbers were dropped unsent.
    pub skip_packets: u64,
    pub malformed_feedback: u64,
}

/// A datagram waiting to be scheduled. Its global number is given when it
/// is queued, so that a slow path may carry a later datagram before the
/// earlier ones leave on a faster path without changing their order at the
/// receiver.
#[derive(Debug)]
struct Queued {
    gseq: u64,
    payload: Vec<u8>,
    enqueued: Instant,
}

fn wire_bytes(payload: usize) -> u64 {
    wire::ip_packet_len(payload) as u64
}

/// Largest datagram the sender accepts: a 1500-byte path MTU less IPv4/UDP
/// headers and braid's own.
pub const MAX_DATAGRAM: usize = 1500 - IP_UDP_OVERHEAD - DATA_HEADER_LEN;

/// Shortest time between two skip notices.
const SKIP_NOTICE_INTERVAL: Duration = Duration::from_millis(5);

/// Skip frames per notice: 2 + 64 * 13 bytes, well under the MTU.
const MAX_SKIP_FRAMES: usize = 64;

#[derive(Debug)]
pub struct Sender {
    paths: Vec<PathSender>,
    scheduler: Box<dyn Scheduler>,
    config: SenderConfig,
    queue: VecDeque<Queued>,
    queue_bytes: usize,
    next_gseq: u64,
    /// Global number last sent on each path.
    last_gseq_on: Vec<Option<u64>>,
    /// Numbers dropped unsent since the last skip notice...
    pending_skips: Vec<SkipFrame>,
    /// ...and those the last notice carried, which the next one repeats, so
    /// that losing one notice costs the receiver no hole timeout.
    repeat_skips: Vec<SkipFrame>,
    last_skip_notice: Option<Instant>,
    owd_anchor: Option<u32>,
    last_report_seq: Option<u32>,
    /// How long a datagram may wait in the queue; follows the path
    /// estimates, so it is recomputed when feedback arrives.
    queue_delay_limit: Duration,
    /// Latest time seen, so `poll_timeout` never returns a past instant.
    last_now: Instant,
    out: VecDeque<Transmit>,
    views: Vec<PathView>,
    pub counters: SenderCounters,
}

impl Sender {
    pub fn new(config: SenderConfig) -> Result<Sender, SchedError> {
        let scheduler = sched::build(&config.scheduler, &config.paths)?;
        let paths = config
            .paths
            .iter()
            .enumerate()
            .map(|(i, p)| PathSender::new(i as u8, p.cost, config.cc.build()))
            .collect();
        let last_gseq_on = vec![None; config.paths.len()];
        let queue_delay_limit = config.max_queue_delay.unwrap_or(Duration::from_millis(50));
        Ok(Sender {
            paths,
            scheduler,
            config,
            queue: VecDeque::new(),
            queue_bytes: 0,
            next_gseq: 0,
            last_gseq_on,
            pending_skips: Vec::new(),
            repeat_skips: Vec::new(),
            last_skip_notice: None,
            owd_anchor: None,
            last_report_seq: None,
            queue_delay_limit,
            last_now: Instant::ZERO,
            out: VecDeque::new(),
            views: Vec::new(),
            counters: SenderCounters::default(),
        })
    }

    pub fn scheduler_name(&self) -> &'static str {
        self.scheduler.name()
    }

    pub fn path(&self, index: usize) -> &PathSender {
        &self.paths[index]
    }

    pub fn queued_bytes(&self) -> usize {
        self.queue_bytes
    }

    /// Whether the queue can take a datagram of `len` bytes now.
    pub fn has_room(&self, len: usize) -> bool {
        self.queue_bytes + len <= self.config.max_queue_bytes
    }

    /// Offers an application datagram.
    pub fn send(&mut self, now: Instant, payload: Vec<u8>) -> Result<(), SendError> {
        if payload.len() > MAX_DATAGRAM {
            return Err(SendError::TooLarge(payload.len()));
        }
        self.last_now = now;
        self.drop_stale(now);
        if !self.has_room(payload.len()) {
            self.counters.rejected_queue_full += 1;
            return Err(SendError::QueueFull);
        }
        self.counters.accepted += 1;
        self.queue_bytes += payload.len();
        self.queue.push_back(Queued {
            gseq: self.next_gseq,
            payload,
            enqueued: now,
        });
        self.next_gseq += 1;
        self.drain(now);
        Ok(())
    }

    fn compute_queue_delay_limit(&self) -> Duration {
        if let Some(d) = self.config.max_queue_delay {
            return d;
        }
        let owds = self
            .paths
            .iter()
            .filter(|p| p.owd.has_samples())
            .map(|p| p.owd.smoothed_us());
        let (lo, hi) = owds.fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), o| {
            (lo.min(o), hi.max(o))
        });
        let spread = if hi >= lo { (hi - lo) / 1e6 } else { 0.0 };
        // At least one round trip of the slowest path, as a bottleneck buffer
        // holds one bandwidth-delay product: rate probing moves in RTT steps.
        let max_srtt = self
            .paths
            .iter()
            .filter_map(|p| p.rtt.srtt())
            .max()
            .unwrap_or(Duration::ZERO);
        (Duration::from_millis(50) + Duration::from_secs_f64(spread.min(1.0)))
            .max(max_srtt.min(Duration::from_secs(1)))
    }

    fn drop_stale(&mut self, now: Instant) {
        let limit = self.queue_delay_limit;
        while self
            .queue
            .front()
            .is_some_and(|q| now - q.enqueued >= limit)
        {
            self.counters.dropped_stale += 1;
            self.discard(0);
        }
    }

    /// Drops queued datagram `index` unsent; the receiver is told to skip
    /// its number.
    fn discard(&mut self, index: usize) {
        let q = self.queue.remove(index).expect("index in queue");
        self.queue_bytes -= q.payload.len();
        match self.pending_skips.last_mut() {
            Some(k) if k.from + u64::from(k.count) == q.gseq && k.count < u32::MAX => k.count += 1,
            _ => self.pending_skips.push(SkipFrame {
                from: q.gseq,
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
        let path = self
            .paths
            .iter()
            .filter(|p| !p.is_suspect() && p.owd.has_samples())
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
    /// each path, or the receiver's loss inference breaks.
    fn index_behind(&self, ahead_bytes: u64, path: usize) -> Option<usize> {
        let floor = self.last_gseq_on[path];
        let mut before = 0u64;
        for (i, q) in self.queue.iter().enumerate() {
            if before >= ahead_bytes && floor.is_none_or(|f| q.gseq > f) {
                return Some(i);
            }
            before += wire_bytes(q.payload.len());
        }
        None
    }

    fn view_of(&self, i: usize, now: Instant, bytes: u64) -> PathView {
        let p = &self.paths[i];
        PathView {
            index: i,
            cwnd_open: p.cwnd_open(bytes),
            can_send: p.can_send(now, bytes),
            ready_at: p.pacing_ready_at().max(now),
            cwnd_bytes: p.cc().cwnd_bytes(),
            in_flight_bytes: p.bytes_in_flight(),
            srtt: p.rtt.srtt(),
            min_rtt: p.rtt.min_rtt(),
            owd_us: p.owd.has_samples().then(|| p.owd.floor_us(now)),
            queueing: p.owd.queueing(now),
            bandwidth_bps: p.bandwidth_bps(),
            kalman_bps: p.kalman.estimate_bps(),
            cost: p.cost,
            suspect: p.is_suspect(),
            stalled: p.is_stalled(now, bytes),
        }
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
        // Views are rebuilt when the packet size changes; within one drain
        // only the paths that sent change, and only those are re-read.
        let mut views_for = None;
        while let Some(head) = self.queue.front() {
            let head_bytes = wire_bytes(head.payload.len());
            if views_for != Some(head_bytes) {
                self.refresh_views(now, head_bytes);
                views_for = Some(head_bytes);
            }
            let decision = self.scheduler.pick(&SchedContext {
                now,
                paths: &self.views,
                packet_bytes: head_bytes,
                backlog_bytes: wire_bytes(0) * self.queue.len() as u64 + self.queue_bytes as u64,
                queue_delay_limit: self.queue_delay_limit,
            });
            match decision {
                Decision::Wait => break,
                Decision::Drop => {
                    self.counters.dropped_by_scheduler += 1;
                    self.discard(0);
                }
                Decision::Send(set) => {
                    let q = self.take(0);
                    for (n, i) in set.iter().enumerate() {
                        if n > 0 {
                            self.counters.sent_copies += 1;
                        }
                        self.transmit(now, i, &q);
                        self.refresh_view(i, now, head_bytes);
                    }
                }
                Decision::SendBehind { path, ahead_bytes } => {
                    let Some(index) = self.index_behind(ahead_bytes, path) else {
                        break;
                    };
                    let q = self.take(index);
                    self.counters.sent_behind += 1;
                    self.transmit(now, path, &q);
                    self.refresh_view(path, now, head_bytes);
                }
            }
        }
        self.flush_skips(now);
    }

    fn take(&mut self, index: usize) -> Queued {
        let q = self.queue.remove(index).expect("index in queue");
        self.queue_bytes -= q.payload.len();
        self.counters.sent_datagrams += 1;
        q
    }

    fn transmit(&mut self, now: Instant, index: usize, q: &Queued) {
        let app_limited = self.queue.is_empty();
        self.last_gseq_on[index] = Some(q.gseq);
        let bytes = wire_bytes(q.payload.len());
        let path = &mut self.paths[index];
        let stamp = path.on_sent(now, q.gseq, bytes, app_limited);
        let header = DataHeader {
            path: path.id,
            gseq: q.gseq,
            pseq: stamp.pseq,
            send_ts_us: now.wire_micros(),
            prev_gap: stamp.prev_gap,
        };
        let mut data = Vec::with_capacity(DATA_HEADER_LEN + q.payload.len());
        header.append_to(&q.payload, &mut data);
        self.out.push_back(Transmit {
            path: path.id,
            data,
        });
    }

    /// Feedback from the receiver. Ack frames name their own path, so the
    /// path the packet came in on does not matter.
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
        for frame in frames {
            match frame {
                Frame::Ack(ack) => {
                    if let Some(p) = self.paths.get_mut(usize::from(ack.path)) {
                        p.on_ack(now, &ack, &mut self.owd_anchor);
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
        self.queue_delay_limit = self.compute_queue_delay_limit();
        self.drain(now);
        Ok(())
    }

    pub fn poll_transmit(&mut self) -> Option<Transmit> {
        self.out.pop_front()
    }

    /// Next instant `handle_timeout` has work: a path timeout, the pacing
    /// release of a waiting head, or the queue head going stale.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let path_timeouts = self.paths.iter().filter_map(PathSender::timeout_at);
        let head = self.queue.front().map(|q| {
            let stale = q.enqueued + self.queue_delay_limit;
            let pacing = self
                .paths
                .iter()
                .map(PathSender::pacing_ready_at)
                .filter(|&t| t > self.last_now)
                .min();
            pacing.map_or(stale, |p| p.min(stale))
        });
        path_timeouts
            .chain(head)
            .chain(self.skip_notice_due().map(|t| t.max(self.last_now)))
            .min()
    }

    pub fn handle_timeout(&mut self, now: Instant) {
        self.last_now = now;
        for p in &mut self.paths {
            if p.timeout_at().is_some_and(|t| t <= now) {
                p.on_timeout(now);
            }
        }
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

    #[test]
    fn dropped_numbers_go_out_coalesced_in_two_notices() {
        let mut config = SenderConfig::new(vec![PathInfo {
            name: "a".into(),
            cost: 1.0,
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
        // At 10 ms the rest go stale: one range, in one notice, at once.
        s.handle_timeout(t0 + ms(10));
        let range = SkipFrame {
            from: sent as u64,
            count: 200 - sent as u32,
        };
        assert_eq!(transmits(&mut s), (0, vec![range]));
        assert_eq!(s.counters.dropped_stale, u64::from(range.count));
        // The repeat follows one interval later, then nothing more.
        assert_eq!(s.poll_timeout(), Some(t0 + ms(15)));
        s.handle_timeout(t0 + ms(15));
        assert_eq!(transmits(&mut s), (0, vec![range]));
        assert_eq!(s.counters.skip_packets, 2);
        assert!(s.poll_timeout().is_none_or(|t| t > t0 + ms(40)));
    }
}
