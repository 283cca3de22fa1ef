//! The sending side of a bonded datagram session: a bounded send queue, the
//! scheduler that places each datagram on one or more paths, and per-path
//! state fed by the receiver's feedback.
//!
//! Method families, as in quinn-proto: `send` and `handle_*` take input,
//! `poll_*` give output, time is passed in.

use std::collections::VecDeque;
use std::time::Duration;

use crate::cc::CcKind;
use crate::path::{PathCounters, PathSender};
use crate::sched::{self, Decision, PathInfo, PathView, SchedContext, SchedError, Scheduler};
use crate::time::Instant;
use crate::wire::{DataHeader, Frame, Packet, WireError, DATA_HEADER_LEN};

#[derive(Debug, Clone)]
pub struct SenderConfig {
    pub paths: Vec<PathInfo>,
    /// `NAME[:key=value,...]`, see [`sched::build`].
    pub scheduler: String,
    pub cc: CcKind,
    /// Datagrams waiting longer than this are dropped from the queue head.
    /// `None`: 50 ms plus the spread of the paths' one-way delays, which a
    /// scheduler that waits for the faster path needs as backlog.
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
    pub malformed_feedback: u64,
}

#[derive(Debug)]
struct Queued {
    payload: Vec<u8>,
    enqueued: Instant,
}

/// Largest datagram the sender accepts: a 1500-byte path MTU less IPv4/UDP
/// headers and braid's own.
pub const MAX_DATAGRAM: usize = 1500 - 28 - DATA_HEADER_LEN;

#[derive(Debug)]
pub struct Sender {
    paths: Vec<PathSender>,
    scheduler: Box<dyn Scheduler>,
    config: SenderConfig,
    queue: VecDeque<Queued>,
    queue_bytes: usize,
    next_gseq: u64,
    owd_anchor: Option<u32>,
    last_report_seq: Option<u32>,
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
        Ok(Sender {
            paths,
            scheduler,
            config,
            queue: VecDeque::new(),
            queue_bytes: 0,
            next_gseq: 0,
            owd_anchor: None,
            last_report_seq: None,
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

    pub fn path_counters(&self) -> Vec<PathCounters> {
        self.paths.iter().map(|p| p.counters.clone()).collect()
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
            payload,
            enqueued: now,
        });
        self.drain(now);
        Ok(())
    }

    fn max_queue_delay(&self) -> Duration {
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
        Duration::from_millis(50) + Duration::from_secs_f64(spread.min(1.0))
    }

    fn drop_stale(&mut self, now: Instant) {
        let limit = self.max_queue_delay();
        while self
            .queue
            .front()
            .is_some_and(|q| now - q.enqueued >= limit)
        {
            let q = self.queue.pop_front().expect("front exists");
            self.queue_bytes -= q.payload.len();
            self.counters.dropped_stale += 1;
        }
    }

    fn refresh_views(&mut self, now: Instant, bytes: u64) {
        self.views.clear();
        self.views
            .extend(self.paths.iter().enumerate().map(|(i, p)| PathView {
                index: i,
                cwnd_open: p.cwnd_open(bytes),
                can_send: p.can_send(now, bytes),
                ready_at: p.pacing_ready_at().max(now),
                cwnd_bytes: p.cc().cwnd_bytes(),
                in_flight_bytes: p.bytes_in_flight(),
                srtt: p.rtt.srtt(),
                min_rtt: p.rtt.min_rtt(),
                owd_us: p.owd.has_samples().then(|| p.owd.smoothed_us()),
                bandwidth_bps: p.bandwidth_bps(),
                kalman_bps: p.kalman.estimate_bps(),
                cost: p.cost,
                suspect: p.is_suspect(),
            }));
    }

    /// Hands queued datagrams to the scheduler until it waits or the queue empties.
    fn drain(&mut self, now: Instant) {
        while let Some(head) = self.queue.front() {
            let wire_bytes = (head.payload.len() + DATA_HEADER_LEN + 28) as u64;
            self.refresh_views(now, wire_bytes);
            let decision = self.scheduler.pick(&SchedContext {
                now,
                paths: &self.views,
                packet_bytes: wire_bytes,
                backlog_bytes: self.queue_bytes as u64,
            });
            match decision {
                Decision::Wait => break,
                Decision::Drop => {
                    let q = self.queue.pop_front().expect("head exists");
                    self.queue_bytes -= q.payload.len();
                    self.counters.dropped_by_scheduler += 1;
                }
                Decision::Send(set) => {
                    let q = self.queue.pop_front().expect("head exists");
                    self.queue_bytes -= q.payload.len();
                    let app_limited = self.queue.is_empty();
                    let gseq = self.next_gseq;
                    self.next_gseq += 1;
                    self.counters.sent_datagrams += 1;
                    for (n, i) in set.iter().enumerate() {
                        if n > 0 {
                            self.counters.sent_copies += 1;
                        }
                        self.transmit(now, i, gseq, &q.payload, wire_bytes, app_limited);
                    }
                }
            }
        }
    }

    fn transmit(
        &mut self,
        now: Instant,
        index: usize,
        gseq: u64,
        payload: &[u8],
        wire_bytes: u64,
        app_limited: bool,
    ) {
        let path = &mut self.paths[index];
        let stamp = path.on_sent(now, gseq, wire_bytes, app_limited);
        let header = DataHeader {
            path: path.id,
            gseq,
            pseq: stamp.pseq,
            send_ts_us: now.wire_micros(),
            prev_gap: stamp.prev_gap,
        };
        let mut data = vec![0u8; DATA_HEADER_LEN + payload.len()];
        header
            .emit(payload, &mut data)
            .expect("buffer sized for header and payload");
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
                Frame::LossReport(report) => {
                    // Reports go out on several paths; act on each once.
                    let fresh = self
                        .last_report_seq
                        .is_none_or(|last| report.report_seq.wrapping_sub(last) as i32 > 0);
                    if fresh {
                        self.last_report_seq = Some(report.report_seq);
                        self.scheduler.on_loss_report(now, &report.entries);
                    }
                }
            }
        }
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
            let stale = q.enqueued + self.max_queue_delay();
            let pacing = self
                .paths
                .iter()
                .map(PathSender::pacing_ready_at)
                .filter(|&t| t > self.last_now)
                .min();
            pacing.map_or(stale, |p| p.min(stale))
        });
        path_timeouts.chain(head).min()
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
