//! A scenario run: a braid sender on the client and a braid receiver on the
//! server, joined by one simulated [`Link`] per path and direction, driven by
//! a traffic source, on virtual time. Events are packet arrivals; endpoint
//! timers are polled each step. All randomness comes from one seed.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Duration;

use braid_core::cc::CcKind;
use braid_core::receiver::{Receiver, ReceiverConfig};
use braid_core::reseq::ReseqMode;
use braid_core::sched::{self, PathInfo, SchedError};
use braid_core::sender::{Sender, SenderConfig, Transmit};
use braid_core::wire::IP_UDP_OVERHEAD;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use crate::clock::ClockSpec;
use crate::link::{Link, Offer};
use crate::metrics::{Metrics, Report};
use crate::spec::PathSpec;
use crate::traffic::{Source, TrafficSpec};

/// Elastic traffic keeps at most this much waiting in the sender's queue.
const ELASTIC_QUEUE_BYTES: usize = 256 * 1024;

/// After the traffic stops, the run continues this long so packets in
/// flight can arrive (they count toward loss, not toward goodput).
const DRAIN: Duration = Duration::from_secs(3);

#[derive(Debug, Clone)]
pub struct Scenario {
    pub paths: Vec<PathSpec>,
    pub scheduler: String,
    pub cc: CcKind,
    pub traffic: TrafficSpec,
    pub duration: Duration,
    pub seed: u64,
    pub payload_bytes: usize,
    pub reseq_mode: ReseqMode,
    /// Bin width of the throughput time series (for plots).
    pub series_bin: Duration,
    /// The receiver's clock relative to the sender's.
    pub clock: ClockSpec,
}

impl Scenario {
    pub fn new(paths: Vec<PathSpec>) -> Scenario {
        Scenario {
            paths,
            scheduler: sched::DEFAULT.to_owned(),
            cc: CcKind::Bbr,
            traffic: TrafficSpec::CbrFraction { fraction: 1.1 },
            duration: Duration::from_secs(30),
            seed: 1,
            payload_bytes: 1400,
            reseq_mode: ReseqMode::Ordered,
            series_bin: Duration::from_millis(100),
            clock: ClockSpec::default(),
        }
    }

    /// Bytes on the path per datagram of payload.
    pub fn wire_bytes(&self) -> usize {
        braid_core::wire::ip_packet_len(self.payload_bytes)
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
        min = crate::metrics::STAMP_BYTES,
        max = braid_core::sender::MAX_DATAGRAM,
        overhead = 1500 - braid_core::sender::MAX_DATAGRAM
    )]
    Payload(usize),
    #[error(transparent)]
    Budget(#[from] crate::budget::BudgetError),
    #[error("duration must be positive")]
    Duration,
    #[error("simulation made no progress at t={0:?} (a timer that never clears)")]
    Stuck(Duration),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Hop {
    /// Client to server, data.
    Up,
    /// Server to client, feedback.
    Down,
}

/// A packet in flight. The event heap orders small keys; packets stay put
/// in a slab so heap operations never move their bytes.
#[derive(Debug)]
struct InFlight {
    hop: Hop,
    path: u8,
    data: Vec<u8>,
}

/// Heap key: arrival time, then insertion order (equal-time events keep
/// FIFO order), then the slab slot.
type EventKey = Reverse<(Duration, u64, usize)>;

#[derive(Debug, Default)]
struct Events {
    heap: BinaryHeap<EventKey>,
    slab: Vec<Option<InFlight>>,
    free: Vec<usize>,
    seq: u64,
}

impl Events {
    fn push(&mut self, at: Duration, packet: InFlight) {
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

    fn peek_time(&self) -> Option<Duration> {
        self.heap.peek().map(|Reverse((at, _, _))| *at)
    }

    fn pop(&mut self) -> Option<InFlight> {
        let Reverse((_, _, slot)) = self.heap.pop()?;
        self.free.push(slot);
        self.slab[slot].take()
    }
}

/// Offers a packet to a link; schedules its arrival unless the link drops it.
fn forward(link: &mut Link, now: Duration, hop: Hop, tx: Transmit, events: &mut Events) {
    if let Offer::Arrives(at) = link.offer(now, tx.data.len() + IP_UDP_OVERHEAD) {
        events.push(
            at,
            InFlight {
                hop,
                path: tx.path,
                data: tx.data,
            },
        );
    }
}

pub fn run(s: &Scenario) -> Result<Report, SimError> {
    if s.duration.is_zero() {
        return Err(SimError::Duration);
    }
    if s.payload_bytes > braid_core::sender::MAX_DATAGRAM
        || s.payload_bytes < crate::metrics::STAMP_BYTES
    {
        return Err(SimError::Payload(s.payload_bytes));
    }
    crate::budget::check(s)?;
    let infos: Vec<PathInfo> = s
        .paths
        .iter()
        .enumerate()
        .map(|(i, p)| PathInfo {
            name: p.name_or_default(i),
            cost: p.cost,
        })
        .collect();
    let mut sender_cfg = SenderConfig::new(infos);
    sender_cfg.scheduler = s.scheduler.clone();
    sender_cfg.cc = s.cc;
    let mut sender = Sender::new(sender_cfg)?;
    let mut receiver_cfg = ReceiverConfig::new(s.paths.len());
    receiver_cfg.report_interval = sched::report_interval(&s.scheduler)?;
    receiver_cfg.reseq.mode = s.reseq_mode;
    let mut receiver = Receiver::new(receiver_cfg);

    let mut master = ChaCha8Rng::seed_from_u64(s.seed);
    let mut links: Vec<(Link, Link)> = s
        .paths
        .iter()
        .map(|p| {
            let rtt = p.up.delay + p.down.delay;
            let up = Link::new(
                &p.up,
                &p.blackouts,
                rtt,
                ChaCha8Rng::from_rng(&mut master).expect("chacha"),
            );
            let down = Link::new(
                &p.down,
                &p.blackouts,
                rtt,
                ChaCha8Rng::from_rng(&mut master).expect("chacha"),
            );
            (up, down)
        })
        .collect();

    let ideal = s.ideal_goodput_bps();
    let mut source = Source::new(s.traffic.clone(), ideal, s.payload_bytes);
    let mut metrics = Metrics::new(s);
    let mut events = Events::default();
    let end = s.duration + DRAIN;
    let mut now = Duration::ZERO;
    let mut same_time_steps = 0u32;
    // Event time is true time; each endpoint runs on its own clock.
    let (sender_clock, receiver_clock) = s.clock.clocks();

    loop {
        let t_source = Some(source.peek()).filter(|t| *t < s.duration);
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
        let next = next.max(now);
        if next == now {
            same_time_steps += 1;
            if same_time_steps > 1_000_000 {
                return Err(SimError::Stuck(now));
            }
        } else {
            same_time_steps = 0;
        }
        now = next;
        let sender_now = sender_clock.read(now);
        let receiver_now = receiver_clock.read(now);

        if t_source == Some(now) {
            source.next_send();
            let elastic_full = source.is_elastic() && sender.queued_bytes() >= ELASTIC_QUEUE_BYTES;
            if !elastic_full {
                let mut payload = vec![0u8; s.payload_bytes];
                metrics.on_offered(&mut payload, now);
                // A full queue is application loss, counted by the metrics.
                let _ = sender.send(sender_now, payload);
            }
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
            }
        } else {
            if t_sender.is_some_and(|t| t <= now) {
                sender.handle_timeout(sender_now);
            }
            if t_receiver.is_some_and(|t| t <= now) {
                receiver.handle_timeout(receiver_now);
            }
        }

        while let Some(tx) = sender.poll_transmit() {
            forward(
                &mut links[usize::from(tx.path)].0,
                now,
                Hop::Up,
                tx,
                &mut events,
            );
        }
        while let Some(tx) = receiver.poll_transmit() {
            forward(
                &mut links[usize::from(tx.path)].1,
                now,
                Hop::Down,
                tx,
                &mut events,
            );
        }
        while let Some(d) = receiver.poll_deliver() {
            metrics.on_delivered(&d, now);
        }
    }
    Ok(metrics.finish(s, &sender, &receiver.resequencer().counters, &links))
}
