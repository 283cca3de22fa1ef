//! A scenario run: a braid sender on the client and a braid receiver on the
//! server, joined by one simulated [`Link`] per path and direction, driven by
//! traffic sources ([`crate::flows`]), on virtual time. Events are packet arrivals; endpoint
//! timers are polled each step. All randomness comes from one seed.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use braid_core::cc::CcKind;
use braid_core::receiver::{Receiver, ReceiverConfig};
use braid_core::reseq::ReseqMode;
use braid_core::sched::{self, PathInfo, SchedError};
use braid_core::sender::{Sender, SenderConfig};
use braid_core::wire::IP_UDP_OVERHEAD;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::clock::ClockSpec;
use crate::flows::{AckInFlight, Flows, Outgoing, TAG_BYTES};
use crate::link::{Link, Offer};
use crate::metrics::{Metrics, Report, SenderView};
use crate::session_run::SessionSpec;
use crate::spec::PathSpec;
use crate::tcp::TCP_IP_HEADERS;
use crate::traffic::TrafficSpec;
use braid_core::session::{PathRole, SESSION_OVERHEAD};

/// After the traffic stops, the run continues this long so packets in
/// flight can arrive (they count toward loss, not toward goodput).
pub(crate) const DRAIN: Duration = Duration::from_secs(3);

/// What the client sends: datagrams through the bonding tunnel, or a
/// reliable stream ([`braid_core::stream`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Datagram,
    Reliable,
}

#[derive(Debug, Clone)]
pub struct Scenario {
    pub paths: Vec<PathSpec>,
    pub mode: Mode,
    pub scheduler: String,
    pub cc: CcKind,
    /// Congestion control per path, overriding `cc` (reliable mode; empty: `cc` everywhere).
    pub path_cc: Vec<CcKind>,
    pub traffic: TrafficSpec,
    /// Further sources running at the same time, each its own flow.
    pub more_traffic: Vec<TrafficSpec>,
    pub duration: Duration,
    pub seed: u64,
    pub payload_bytes: usize,
    pub reseq_mode: ReseqMode,
    /// The sender re-sends what its paths lose, and the receiver waits for
    /// it (`SenderConfig::resend_losses`).
    pub resend_losses: bool,
    /// Bin width of the throughput time series (for plots).
    pub series_bin: Duration,
    /// The receiver's clock relative to the sender's.
    pub clock: ClockSpec,
    /// Run through the encrypted tunnel session (handshake, probes,
    /// path state) instead of a bare sender and receiver.
    pub session: Option<SessionSpec>,
}

impl Scenario {
    pub fn new(paths: Vec<PathSpec>) -> Scenario {
        Scenario {
            paths,
            mode: Mode::Datagram,
            scheduler: sched::DEFAULT.to_owned(),
            cc: CcKind::Bbr,
            path_cc: Vec::new(),
            traffic: TrafficSpec::CbrFraction { fraction: 1.1 },
            more_traffic: Vec::new(),
            duration: Duration::from_secs(30),
            seed: 1,
            payload_bytes: 1400,
            reseq_mode: ReseqMode::Ordered,
            resend_losses: false,
            series_bin: Duration::from_millis(100),
            clock: ClockSpec::default(),
            session: None,
        }
    }

    /// Bytes on the path per datagram (or segment) of payload.
    pub fn wire_bytes(&self) -> usize {
        match (self.mode, &self.session) {
            // Segments are cut to fill the path MTU.
            (Mode::Reliable, _) => braid_core::stream::frame::PATH_MTU,
            (Mode::Datagram, Some(_)) => self.payload_bytes + SESSION_OVERHEAD + IP_UDP_OVERHEAD,
            (Mode::Datagram, None) => braid_core::wire::ip_packet_len(self.payload_bytes),
        }
    }

    /// Congestion controller of path `i`.
    pub fn cc_of(&self, i: usize) -> CcKind {
        self.path_cc.get(i).copied().unwrap_or(self.cc)
    }

    /// The controllers' names, one per path when they differ.
    pub fn cc_names(&self) -> String {
        let names: Vec<&str> = (0..self.paths.len())
            .map(|i| self.cc_of(i).name())
            .collect();
        if names.windows(2).all(|w| w[0] == w[1]) {
            self.cc.name().to_owned()
        } else {
            names.join(",")
        }
    }

    /// The scenario with each path's two directions swapped: a download
    /// seen from the data's side.
    pub fn mirrored(&self) -> Scenario {
        let mut m = self.clone();
        for p in &mut m.paths {
            std::mem::swap(&mut p.up, &mut p.down);
        }
        m
    }

    /// The most application traffic the paths could carry in the run.
    pub fn ideal_goodput_bps(&self) -> f64 {
        let capacity: f64 = self
            .paths
            .iter()
            .map(|p| p.up_capacity_bps(Duration::ZERO, self.duration))
            .sum();
        capacity * self.payload_bytes as f64 / self.wire_bytes() as f64
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SimError {
    #[error(transparent)]
    Scheduler(#[from] SchedError),
    #[error("bad scheduler parameters: {0}")]
    Params(#[from] braid_core::sched::ParamError),
    #[error(
        "payload of {0} bytes: must be {min} to {max} bytes (a 1500-byte packet less {overhead} bytes of IP, UDP and braid headers)",
        min = TAG_BYTES,
        max = braid_core::sender::MAX_DATAGRAM,
        overhead = 1500 - braid_core::sender::MAX_DATAGRAM
    )]
    Payload(usize),
    #[error("payload of {0} bytes is too small for TCP segments (at least {min}: {hdr} bytes of TCP/IP headers and one of data)", min = TCP_IP_HEADERS + 1, hdr = TCP_IP_HEADERS)]
    TcpPayload(usize),
    #[error("TCP traffic {0} starts at or after the run's end ({1:?})")]
    TcpStart(String, Duration),
    #[error(transparent)]
    Budget(#[from] crate::budget::BudgetError),
    #[error("duration must be positive")]
    Duration,
    #[error("session: {0}")]
    Session(String),
    #[error("bulk traffic needs --mode reliable")]
    BulkNeedsReliable,
    #[error("--mode reliable needs --traffic bulk[:SIZE]")]
    ReliableNeedsBulk,
    #[error("--mode reliable runs one bulk transfer: give --traffic bulk[:SIZE] once")]
    ReliableOneTransfer,
    #[error("--cc names {given} controllers for {paths} paths (give one, or one per path)")]
    CcCount { given: usize, paths: usize },
    #[error("path {path}: {option} {needs}")]
    PathOption {
        path: String,
        option: &'static str,
        needs: &'static str,
    },
    #[error("simulation made no progress at t={0:?} (a timer that never clears)")]
    Stuck(Duration),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hop {
    /// Client to server, data.
    Up,
    /// Server to client, feedback.
    Down,
    /// Server to client, a TCP ACK.
    TcpAck,
}

/// A packet in flight. The event heap orders small keys; packets stay put
/// in a slab so heap operations never move their bytes.
#[derive(Debug)]
pub(crate) struct InFlight {
    pub(crate) hop: Hop,
    pub(crate) path: u8,
    pub(crate) data: Vec<u8>,
    pub(crate) ack: Option<AckInFlight>,
}

/// Heap key: arrival time, then insertion order (equal-time events keep
/// FIFO order), then the slab slot.
type EventKey = Reverse<(Duration, u64, usize)>;

#[derive(Debug, Default)]
pub(crate) struct Events {
    heap: BinaryHeap<EventKey>,
    slab: Vec<Option<InFlight>>,
    free: Vec<usize>,
    seq: u64,
}

impl Events {
    pub(crate) fn push(&mut self, at: Duration, packet: InFlight) {
        let slot = match self.free.pop() {
            Some(i) => {
                self.slab[i] = Some(packet);
                i
            }
            None => {
                self.slab.push(Some(packet));
                self.slab.len() - 1
            }
        };
        self.seq += 1;
        self.heap.push(Reverse((at, self.seq, slot)));
    }

    pub(crate) fn peek_time(&self) -> Option<Duration> {
        self.heap.peek().map(|Reverse((at, _, _))| *at)
    }

    pub(crate) fn pop(&mut self) -> Option<InFlight> {
        let Reverse((_, _, slot)) = self.heap.pop()?;
        self.free.push(slot);
        self.slab[slot].take()
    }
}

/// Offers a packet to a link; schedules its arrival unless the link drops it.
pub(crate) fn forward(
    link: &mut Link,
    now: Duration,
    hop: Hop,
    path: u8,
    data: Vec<u8>,
    events: &mut Events,
) {
    if let Offer::Arrives(at) = link.offer(now, data.len() + IP_UDP_OVERHEAD) {
        events.push(
            at,
            InFlight {
                hop,
                path,
                data,
                ack: None,
            },
        );
    }
}

/// One link per path and direction, each with its own RNG from `master`.
pub(crate) fn build_links(s: &Scenario, master: &mut ChaCha8Rng) -> Vec<(Link, Link)> {
    s.paths
        .iter()
        .map(|p| {
            let rtt = p.up.delay + p.down.delay;
            let up = Link::new(
                &p.up,
                &p.blackouts,
                rtt,
                ChaCha8Rng::from_rng(&mut *master).expect("chacha"),
            );
            let down = Link::new(
                &p.down,
                &p.blackouts,
                rtt,
                ChaCha8Rng::from_rng(&mut *master).expect("chacha"),
            );
            (up, down)
        })
        .collect()
}

/// Backup paths need the session's path liveness (a plain sender has
/// none), and the reliable stream schedules and paces by its own rules.
fn check_path_options(s: &Scenario) -> Result<(), SimError> {
    for (i, p) in s.paths.iter().enumerate() {
        if p.rate_limit_bps.is_some() && s.mode == Mode::Reliable {
            return Err(SimError::PathOption {
                path: p.name_or_default(i),
                option: "rate_limit",
                needs: "is for datagram runs",
            });
        }
        let (role, needs) = match (p.role, s.mode, s.session.is_some()) {
            (PathRole::Primary, _, _) => continue,
            (PathRole::Overflow, Mode::Reliable, _) => ("role=overflow", "is for datagram runs"),
            (PathRole::Backup, Mode::Reliable, _) => ("role=backup", "is for datagram runs"),
            (PathRole::Backup, Mode::Datagram, false) => ("role=backup", "needs --session"),
            _ => continue,
        };
        return Err(SimError::PathOption {
            path: p.name_or_default(i),
            option: role,
            needs,
        });
    }
    Ok(())
}

/// The run's traffic sources with their text, checked: TCP segments need
/// room for their headers.
pub(crate) fn traffic_specs(s: &Scenario) -> Result<Vec<(String, TrafficSpec)>, SimError> {
    let specs: Vec<(String, TrafficSpec)> = std::iter::once(&s.traffic)
        .chain(&s.more_traffic)
        .map(|t| (t.to_string(), t.clone()))
        .collect();
    if specs
        .iter()
        .any(|(_, t)| matches!(t, TrafficSpec::Tcp { .. }))
        && s.payload_bytes <= TCP_IP_HEADERS
    {
        return Err(SimError::TcpPayload(s.payload_bytes));
    }
    if let Some((text, _)) = specs
        .iter()
        .find(|(_, t)| matches!(t, TrafficSpec::Tcp { .. }) && t.start() >= s.duration)
    {
        return Err(SimError::TcpStart(text.clone(), s.duration));
    }
    Ok(specs)
}

pub fn run(s: &Scenario) -> Result<Report, SimError> {
    if s.duration.is_zero() {
        return Err(SimError::Duration);
    }
    if !s.path_cc.is_empty() && s.path_cc.len() != s.paths.len() {
        return Err(SimError::CcCount {
            given: s.path_cc.len(),
            paths: s.paths.len(),
        });
    }
    check_path_options(s)?;
    let bulk = matches!(s.traffic, TrafficSpec::Bulk { .. });
    match s.mode {
        Mode::Reliable if !bulk => return Err(SimError::ReliableNeedsBulk),
        Mode::Reliable if !s.more_traffic.is_empty() => return Err(SimError::ReliableOneTransfer),
        Mode::Reliable => {
            // Segments fill the packet; the payload size is not a choice.
            let mut r = s.clone();
            r.payload_bytes = braid_core::stream::frame::FIRST_GIB_SEGMENT_DATA;
            if s.session.is_some() {
                r.payload_bytes -= braid_core::session::STREAM_OVERHEAD;
            }
            crate::budget::check(&r)?;
            return match &s.session {
                Some(spec) => crate::reliable::run_in_session(&r, spec),
                None => crate::reliable::run(&r),
            };
        }
        Mode::Datagram if bulk => return Err(SimError::BulkNeedsReliable),
        Mode::Datagram => {}
    }
    if let Some(spec) = &s.session {
        let specs = traffic_specs(s)?;
        crate::budget::check(s)?;
        return crate::session_run::run(s, spec, &specs);
    }
    if s.payload_bytes > braid_core::sender::MAX_DATAGRAM || s.payload_bytes < TAG_BYTES {
        return Err(SimError::Payload(s.payload_bytes));
    }
    let specs = traffic_specs(s)?;
    crate::budget::check(s)?;
    let infos: Vec<PathInfo> = s
        .paths
        .iter()
        .enumerate()
        .map(|(i, p)| PathInfo {
            name: p.name_or_default(i),
            cost: p.cost,
            weight_throughput: p.weight_throughput,
            overflow: p.role == PathRole::Overflow,
        })
        .collect();
    let mut sender_cfg = SenderConfig::new(infos);
    sender_cfg.scheduler = s.scheduler.clone();
    sender_cfg.cc = s.cc;
    sender_cfg.resend_losses = s.resend_losses;
    let mut sender = Sender::new(sender_cfg)?;
    for (i, p) in s.paths.iter().enumerate() {
        sender.set_rate_limit(i, p.rate_limit_bps);
    }
    let mut receiver_cfg = ReceiverConfig::new(s.paths.len());
    receiver_cfg.report_interval = sched::report_interval(&s.scheduler)?;
    receiver_cfg.reseq.mode = s.reseq_mode;
    let mut receiver = Receiver::new(receiver_cfg);

    let mut master = ChaCha8Rng::seed_from_u64(s.seed);
    let mut links = build_links(s, &mut master);

    let ideal = s.ideal_goodput_bps();
    let mut flows = Flows::new(&specs, ideal, s.payload_bytes, s.duration);
    let mut outgoing: Vec<Outgoing> = Vec::new();
    // TCP ACKs go back on the down direction of the path with the shortest
    // down delay (see `crate::flows`).
    let ack_path = (0..s.paths.len())
        .min_by_key(|&i| s.paths[i].down.delay)
        .expect("at least one path");
    let mut metrics = Metrics::new(s);
    let mut events = Events::default();
    let end = s.duration + DRAIN;
    let mut now = Duration::ZERO;
    let mut stall = crate::stall::StallGuard::default();
    // Event time is true time; each endpoint runs on its own clock.
    let (sender_clock, receiver_clock) = s.clock.clocks();

    loop {
        let t_source = flows.next_event();
        let t_event = events.peek_time();
        let t_sender = sender
            .poll_timeout()
            .map(|t| sender_clock.true_time_of(t, now));
        let t_receiver = receiver
            .poll_timeout()
            .map(|t| receiver_clock.true_time_of(t, now));
        let Some(next) = [t_source, t_event, t_sender, t_receiver]
            .into_iter()
            .flatten()
            .min()
        else {
            break;
        };
        if next > end {
            break;
        }
        now = stall.advance(now, next)?;
        let sender_now = sender_clock.read(now);
        let receiver_now = receiver_clock.read(now);

        if t_source == Some(now) {
            // Sources are polled below, after every step.
        } else if t_event == Some(now) {
            let e = events.pop().expect("peeked");
            match e.hop {
                Hop::Up => {
                    metrics.on_path_arrival(
                        usize::from(e.path),
                        now,
                        e.data.len() + IP_UDP_OVERHEAD,
                    );
                    // Malformed input is counted by the receiver.
                    let _ = receiver.handle_datagram(receiver_now, e.path, &e.data);
                }
                Hop::Down => {
                    let _ = sender.handle_datagram(sender_now, &e.data);
                }
                Hop::TcpAck => {
                    if let Some(a) = &e.ack {
                        flows.on_ack(now, a);
                    }
                }
            }
        } else {
            if t_sender.is_some_and(|t| t <= now) {
                sender.handle_timeout(sender_now);
            }
            if t_receiver.is_some_and(|t| t <= now) {
                receiver.handle_timeout(receiver_now);
            }
        }

        metrics.on_sender_state(now, &sender);
        flows.poll(now, |p| metrics.on_offered(p, now), &mut outgoing);
        for o in outgoing.drain(..) {
            // A full queue is application loss, counted by the metrics.
            let _ = sender.send_flow(sender_now, o.flow, o.payload);
        }
        while let Some(tx) = sender.poll_transmit() {
            let link = &mut links[usize::from(tx.path)].0;
            forward(link, now, Hop::Up, tx.path, tx.data, &mut events);
        }
        while let Some(tx) = receiver.poll_transmit() {
            let link = &mut links[usize::from(tx.path)].1;
            forward(link, now, Hop::Down, tx.path, tx.data, &mut events);
        }
        while let Some(d) = receiver.poll_deliver() {
            metrics.on_delivered(&d, now);
            if let Some(a) = flows.on_delivered(&d, now) {
                let bytes = braid_core::wire::ip_packet_len(a.ack.ip_bytes());
                if let Offer::Arrives(at) = links[ack_path].1.offer(now, bytes) {
                    events.push(
                        at,
                        InFlight {
                            hop: Hop::TcpAck,
                            path: ack_path as u8,
                            data: Vec::new(),
                            ack: Some(a),
                        },
                    );
                }
            }
        }
    }
    let view = SenderView::of(&sender, s.paths.len());
    let mut report = metrics.finish(s, &view, &receiver.resequencer().counters, &links);
    report.flows = flows.report(ideal);
    Ok(report)
}
