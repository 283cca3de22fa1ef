//! The traffic sources of a run, each with its own figures: datagram
//! sources (CBR, ramp) and closed-loop TCP connections.
//!
//! Every simulated datagram starts with a tag: its offer time (8 bytes,
//! see [`crate::metrics::Metrics::on_offered`]), the index of its source,
//! the index of its TCP connection within the source, and its TCP segment
//! number (8 bytes). A TCP segment is one datagram of the run's payload
//! size: an inner IP packet, so the TCP payload is that less 40 bytes of
//! TCP/IP headers. Each source (and each TCP connection) is its own flow
//! for the sender's flow queue.
//!
//! TCP ACKs return on the down direction of the path with the shortest
//! down delay, as IP packets of their own size (headers, timestamps and
//! SACK option) plus braid's per-datagram overhead, sharing that link with
//! braid's feedback and subject to its loss, blackouts and queue; they are
//! not scheduled by a second braid sender. Runs through the tunnel session
//! ([`crate::session_run`]) carry them instead as inner packets
//! ([`AckInFlight::encode`]) through the server's session.

use std::time::Duration;

use braid_core::reseq::Delivery;
use serde::Serialize;

use crate::metrics::{Distribution, Percentiles};
use crate::tcp::{Ack, TcpCounters, TcpReceiver, TcpSender, MAX_SACK_BLOCKS, TCP_IP_HEADERS};
use crate::traffic::{Source, TrafficSpec};

/// Bytes of the tag at the start of every simulated datagram.
pub const TAG_BYTES: usize = 18;

/// A datagram a source wants sent now.
#[derive(Debug)]
pub struct Outgoing {
    pub flow: u64,
    pub payload: Vec<u8>,
}

/// An ACK leaving a TCP receiver for its sender.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AckInFlight {
    pub source: usize,
    pub connection: usize,
    pub ack: Ack,
}

/// Bytes of an encoded ACK before its SACK blocks: source, connection,
/// cumulative, echo, block count.
const ACK_FIXED_BYTES: usize = 1 + 1 + 8 + 8 + 1;

impl AckInFlight {
    /// The flow id of the connection the ACK belongs to.
    pub fn flow(&self) -> u64 {
        flow_id(self.source, self.connection)
    }

    /// The ACK as an inner packet of its IP size, for a run that carries
    /// ACKs through the tunnel's reverse direction.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.ack.ip_bytes());
        out.push(self.source as u8);
        out.push(self.connection as u8);
        out.extend_from_slice(&self.ack.cumulative.to_be_bytes());
        out.extend_from_slice(&self.ack.echo_nanos.to_be_bytes());
        out.push(self.ack.sack.len() as u8);
        for &(start, end) in &self.ack.sack {
            out.extend_from_slice(&start.to_be_bytes());
            out.extend_from_slice(&end.to_be_bytes());
        }
        // The SACK option's 8 bytes per block hold two 8-byte numbers here,
        // so a full ACK is the longer one; the IP size wins when it is more.
        let len = out.len().max(self.ack.ip_bytes());
        out.resize(len, 0);
        out
    }

    /// Reads what [`AckInFlight::encode`] wrote; `None` for anything else.
    pub fn decode(bytes: &[u8]) -> Option<AckInFlight> {
        let u64_at = |i: usize| -> Option<u64> {
            Some(u64::from_be_bytes(bytes.get(i..i + 8)?.try_into().ok()?))
        };
        let blocks = usize::from(*bytes.get(ACK_FIXED_BYTES - 1)?);
        if blocks > MAX_SACK_BLOCKS {
            return None;
        }
        let sack = (0..blocks)
            .map(|b| {
                let at = ACK_FIXED_BYTES + 16 * b;
                Some((u64_at(at)?, u64_at(at + 8)?))
            })
            .collect::<Option<Vec<_>>>()?;
        Some(AckInFlight {
            source: usize::from(*bytes.first()?),
            connection: usize::from(*bytes.get(1)?),
            ack: Ack {
                cumulative: u64_at(2)?,
                echo_nanos: u64_at(10)?,
                sack,
            },
        })
    }
}

#[derive(Debug)]
struct Connection {
    sender: TcpSender,
    receiver: TcpReceiver,
}

#[derive(Debug)]
enum Kind {
    Datagrams(Source),
    Tcp(Vec<Connection>),
}

#[derive(Debug)]
struct Flow {
    spec: String,
    kind: Kind,
    /// When the source starts: its rates are over the run's time from then.
    start: Duration,
    offered_bytes: u64,
    delivered_bytes: u64,
    /// Offer to delivery by braid's receiver.
    one_way: Distribution,
    /// TCP only: round trips the senders measured, and segments delivered
    /// in order to the TCP receivers within the run.
    rtt: Distribution,
    tcp_in_order_segments: u64,
}

/// TCP figures of one traffic source (all its connections together).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct TcpReport {
    pub cc: String,
    pub connections: u32,
    /// TCP payload per segment.
    pub mss: usize,
    /// TCP payload delivered in order to the TCP receivers within the run.
    pub goodput_bps: f64,
    /// `goodput_bps` against the most TCP payload the paths could carry:
    /// the ideal goodput times MSS over datagram payload.
    pub utilization: f64,
    /// Round trips measured by the TCP senders (each ACK's echoed send time).
    pub rtt_ms: Option<Percentiles>,
    pub counters: TcpCounters,
}

/// Figures of one traffic source.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct FlowReport {
    pub traffic: String,
    pub offered_bps: f64,
    /// Datagram payload delivered by braid within the run (for TCP this
    /// counts retransmissions that arrived).
    pub goodput_bps: f64,
    /// From offer to delivery by braid's receiver.
    pub one_way_delay_ms: Option<Percentiles>,
    pub tcp: Option<TcpReport>,
}

#[derive(Debug)]
pub struct Flows {
    flows: Vec<Flow>,
    payload_bytes: usize,
    duration: Duration,
    /// Polled at or after the run's end: what was still to be sent is
    /// never sent (a tunnel that came up only after the run's end leaves
    /// its sources due at a time long past, which must not stay due).
    ended: bool,
}

fn tag(payload: &mut [u8], source: usize, connection: usize, seq: u64) {
    payload[8] = source as u8;
    payload[9] = connection as u8;
    payload[10..TAG_BYTES].copy_from_slice(&seq.to_be_bytes());
}

/// The flow id the sender's flow queue sees.
fn flow_id(source: usize, connection: usize) -> u64 {
    ((source as u64) << 8) | connection as u64
}

impl Flows {
    /// `specs` with their text; `ideal_bps` resolves `cbr:PCT%`.
    pub fn new(
        specs: &[(String, TrafficSpec)],
        ideal_bps: f64,
        payload_bytes: usize,
        duration: Duration,
    ) -> Flows {
        let flows = specs
            .iter()
            .map(|(text, spec)| Flow {
                spec: text.clone(),
                kind: match *spec {
                    TrafficSpec::Tcp {
                        cc, flows, hystart, ..
                    } => Kind::Tcp(
                        (0..flows)
                            .map(|_| Connection {
                                sender: if hystart {
                                    TcpSender::with_hystart(cc)
                                } else {
                                    TcpSender::new(cc)
                                },
                                receiver: TcpReceiver::new(),
                            })
                            .collect(),
                    ),
                    _ => Kind::Datagrams(Source::new(spec.clone(), ideal_bps, payload_bytes)),
                },
                start: spec.start(),
                offered_bytes: 0,
                delivered_bytes: 0,
                one_way: Distribution::new(),
                rtt: Distribution::new(),
                tcp_in_order_segments: 0,
            })
            .collect();
        Flows {
            flows,
            payload_bytes,
            duration,
            ended: false,
        }
    }

    /// The next instant a source has something to do.
    pub fn next_event(&self) -> Option<Duration> {
        self.flows
            .iter()
            .flat_map(|f| -> Box<dyn Iterator<Item = Duration> + '_> {
                match &f.kind {
                    Kind::Datagrams(s) => Box::new(
                        Some(s.peek())
                            .filter(|t| *t < self.duration && !self.ended)
                            .into_iter(),
                    ),
                    // A connection opens at its flow's start.
                    Kind::Tcp(conns) => Box::new(conns.iter().filter_map(|c| {
                        let opening = c.sender.counters.segments_sent == 0 && !self.ended;
                        c.sender.poll_timeout().or(opening.then_some(f.start))
                    })),
                }
            })
            .min()
    }

    /// Runs what is due at `now`: datagram sources whose time has come,
    /// TCP timers that expired, and every TCP connection sends what its
    /// window allows (nothing after the run's end). `stamp` is the metrics'
    /// offer hook.
    pub fn poll(
        &mut self,
        now: Duration,
        mut stamp: impl FnMut(&mut [u8]),
        out: &mut Vec<Outgoing>,
    ) {
        let payload_bytes = self.payload_bytes;
        let in_run = now < self.duration;
        self.ended |= !in_run;
        for (i, f) in self.flows.iter_mut().enumerate() {
            match &mut f.kind {
                Kind::Datagrams(s) => {
                    while in_run && s.peek() <= now {
                        s.next_send();
                        let mut payload = vec![0u8; payload_bytes];
                        stamp(&mut payload);
                        tag(&mut payload, i, 0, 0);
                        f.offered_bytes += payload_bytes as u64;
                        out.push(Outgoing {
                            flow: flow_id(i, 0),
                            payload,
                        });
                    }
                }
                Kind::Tcp(_) if now < f.start => {}
                Kind::Tcp(conns) => {
                    for (c, conn) in conns.iter_mut().enumerate() {
                        if conn.sender.poll_timeout().is_some_and(|t| t <= now) {
                            conn.sender.on_timeout(now);
                        }
                        if !in_run {
                            continue;
                        }
                        while let Some(seg) = conn.sender.poll_segment(now) {
                            let mut payload = vec![0u8; payload_bytes];
                            stamp(&mut payload);
                            tag(&mut payload, i, c, seg.seq);
                            f.offered_bytes += payload_bytes as u64;
                            out.push(Outgoing {
                                flow: flow_id(i, c),
                                payload,
                            });
                        }
                    }
                }
            }
        }
    }

    /// A datagram braid's receiver delivered at `now`; returns the ACK it
    /// causes if it is a TCP segment.
    pub fn on_delivered(&mut self, d: &Delivery, now: Duration) -> Option<AckInFlight> {
        let tag_bytes = d.payload.get(..TAG_BYTES)?;
        let sent = u64::from_be_bytes(tag_bytes[..8].try_into().expect("8 bytes"));
        let (source, connection) = (usize::from(tag_bytes[8]), usize::from(tag_bytes[9]));
        let seq = u64::from_be_bytes(tag_bytes[10..].try_into().expect("8 bytes"));
        let in_run = now < self.duration;
        let f = self.flows.get_mut(source)?;
        if in_run {
            f.delivered_bytes += d.payload.len() as u64;
            f.one_way
                .record(now.saturating_sub(Duration::from_nanos(sent)));
        }
        let Kind::Tcp(conns) = &mut f.kind else {
            return None;
        };
        let conn = conns.get_mut(connection)?;
        let before = conn.receiver.delivered();
        let ack = conn.receiver.on_segment(seq, sent);
        if in_run {
            f.tcp_in_order_segments += conn.receiver.delivered() - before;
        }
        Some(AckInFlight {
            source,
            connection,
            ack,
        })
    }

    /// An ACK reached its TCP sender.
    pub fn on_ack(&mut self, now: Duration, a: &AckInFlight) {
        let Some(f) = self.flows.get_mut(a.source) else {
            return;
        };
        let Kind::Tcp(conns) = &mut f.kind else {
            return;
        };
        if let Some(conn) = conns.get_mut(a.connection) {
            if let Some(rtt) = conn.sender.on_ack(now, &a.ack) {
                if now < self.duration {
                    f.rtt.record(rtt);
                }
            }
        }
    }

    pub fn report(&self, ideal_bps: f64) -> Vec<FlowReport> {
        let mss = self.payload_bytes.saturating_sub(TCP_IP_HEADERS);
        self.flows
            .iter()
            .map(|f| (f, self.duration.saturating_sub(f.start).as_secs_f64()))
            .map(|(f, secs)| FlowReport {
                traffic: f.spec.clone(),
                offered_bps: f.offered_bytes as f64 * 8.0 / secs,
                goodput_bps: f.delivered_bytes as f64 * 8.0 / secs,
                one_way_delay_ms: f.one_way.percentiles(),
                tcp: match &f.kind {
                    Kind::Datagrams(_) => None,
                    Kind::Tcp(conns) => {
                        let goodput = (f.tcp_in_order_segments * mss as u64) as f64 * 8.0 / secs;
                        let ideal_tcp = ideal_bps * mss as f64 / self.payload_bytes as f64;
                        let mut counters = TcpCounters::default();
                        for c in conns {
                            counters += &c.sender.counters;
                        }
                        Some(TcpReport {
                            cc: conns.first().map_or(String::new(), |c| {
                                c.sender.cc().label(c.sender.uses_hystart())
                            }),
                            connections: conns.len() as u32,
                            mss,
                            goodput_bps: goodput,
                            utilization: if ideal_tcp > 0.0 {
                                goodput / ideal_tcp
                            } else {
                                0.0
                            },
                            rtt_ms: f.rtt.percentiles(),
                            counters,
                        })
                    }
                },
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ack_survives_its_encoding_and_garbage_is_refused() {
        let a = AckInFlight {
            source: 2,
            connection: 7,
            ack: Ack {
                cumulative: 1_000_000,
                sack: vec![(1_000_002, 1_000_005), (1_000_009, 1_000_010)],
                echo_nanos: 123_456_789,
            },
        };
        let bytes = a.encode();
        assert_eq!(bytes.len(), a.ack.ip_bytes().max(19 + 2 * 16));
        assert_eq!(AckInFlight::decode(&bytes), Some(a.clone()));
        assert_eq!(AckInFlight::decode(&bytes[..20]), None);
        let mut too_many = bytes.clone();
        too_many[18] = (MAX_SACK_BLOCKS + 1) as u8;
        assert_eq!(AckInFlight::decode(&too_many), None);
        assert_eq!(AckInFlight::decode(&[]), None);
    }
}
