//! A scenario run through the real tunnel session: a client
//! [`Session`] and a server [`Endpoint`] (handshake, encryption, probes,
//! path state, rekeying) over the same simulated links as [`crate::sim`],
//! with the same traffic sources ([`Flows`]). Traffic flows client to
//! server (or, for a download, server to client), each source (and TCP
//! connection) its own flow in the send queue; the other end sends
//! feedback, probe answers and handshake responses back, and TCP ACKs as
//! inner packets through its own session, as the real tunnel carries them.
//! Keys and every random choice come from the scenario's seed, so runs
//! are reproducible to the packet.
//!
//! Scripted incidents ([`SessionSpec`]): a NAT rebinding of a path (the
//! client's address on it changes), a server restart (the endpoint is
//! replaced by a fresh one with the same key), and a client configured
//! with a key the server does not know.

use std::net::SocketAddr;
use std::time::Duration;

use braid_core::crypto::{PublicKey, StaticKeypair};
use braid_core::reseq::Delivery;
use braid_core::sender::Sender;
use braid_core::session::{
    tunnel_mtu, ClientConfig, DropCounters, Endpoint, EndpointConfig, Event, PathConfig,
    PeerConfig, PeerId, Session, SessionConfig, MAX_DATAGRAM_LEN,
};
use braid_core::time::Instant;
use braid_core::wire::IP_UDP_OVERHEAD;
use rand::SeedableRng;
use rand_chacha::{ChaCha20Rng, ChaCha8Rng};
use serde::Serialize;

use crate::flows::{AckInFlight, Flows, Outgoing, TAG_BYTES};
use crate::link::Link;
use crate::metrics::{Metrics, Report, SenderView};
use crate::sim::{build_links, forward, Events, Hop, Scenario, SimError, DRAIN};
use crate::traffic::TrafficSpec;

/// Largest payload a session scenario may use: the tunnel MTU of a
/// 1500-byte IPv4 path.
pub const MAX_SESSION_PAYLOAD: usize = tunnel_mtu(1500, false);

/// What the session run does besides carrying traffic.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionSpec {
    /// Replace keys this often (default: the session's 120 s).
    pub rekey_after: Option<Duration>,
    /// At each (time, path), the client's address on the path changes.
    pub rebind: Vec<(Duration, usize)>,
    /// The server restarts (loses all state) at this time.
    pub server_restart_at: Option<Duration>,
    /// The client uses a key pair the server does not know.
    pub unknown_client: bool,
    /// The traffic flows server to client: the server's session sends it
    /// and the client's sends its ACKs (paths are still given client
    /// side: a SPEC's first rate is the client's uplink, which then
    /// carries the ACKs). The report's figures are of the data's
    /// direction.
    pub download: bool,
}

/// One end of the tunnel as the traffic sees it: where packets go in and
/// come out.
trait FlowEnd {
    fn deliver(&mut self) -> Option<Delivery>;
    /// Offers a packet; a full queue or a session not up yet loses it,
    /// as it would any inner packet.
    fn send(&mut self, now: Instant, flow: u64, packet: Vec<u8>);
    /// Its sender, once its session exists.
    fn sender(&self) -> Option<&Sender>;
}

impl FlowEnd for Session {
    fn deliver(&mut self) -> Option<Delivery> {
        self.poll_deliver()
    }

    fn send(&mut self, now: Instant, flow: u64, packet: Vec<u8>) {
        let _ = self.send_flow(now, flow, packet);
    }

    fn sender(&self) -> Option<&Sender> {
        Some(Session::sender(self))
    }
}

/// The server's end, for its one client.
struct ServerEnd<'a> {
    endpoint: &'a mut Endpoint,
    peer: PeerId,
}

impl FlowEnd for ServerEnd<'_> {
    fn deliver(&mut self) -> Option<Delivery> {
        self.endpoint.poll_deliver().map(|(_, d)| d)
    }

    fn send(&mut self, now: Instant, flow: u64, packet: Vec<u8>) {
        let _ = self.endpoint.send_flow(now, self.peer, flow, packet);
    }

    fn sender(&self) -> Option<&Sender> {
        self.endpoint.session(self.peer).map(Session::sender)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Side {
    Client,
    Server,
}

/// A session event and when (simulated time) it happened.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionEventRecord {
    pub t_s: f64,
    pub side: Side,
    pub event: String,
    #[serde(skip)]
    pub raw: Event,
}

/// What the session layer did in a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionReport {
    pub events: Vec<SessionEventRecord>,
    /// Datagrams dropped, by reason, at the client and at the server
    /// (endpoint and its session together).
    pub client_drops: Vec<(String, u64)>,
    pub server_drops: Vec<(String, u64)>,
    pub client_handshakes: u64,
    /// The client completed a handshake, so the sources ran.
    pub connected: bool,
    pub server_sessions: usize,
    /// Datagrams the server sent (all kinds).
    pub server_datagrams: u64,
    /// Bytes each data packet carries on a path besides its payload (IPv4).
    pub overhead_bytes_per_packet: usize,
}

impl SessionReport {
    /// Time of the first event of `side` matching `pred`.
    pub fn first(&self, side: Side, pred: impl Fn(&Event) -> bool) -> Option<Duration> {
        self.events
            .iter()
            .find(|r| r.side == side && pred(&r.raw))
            .map(|r| Duration::from_secs_f64(r.t_s))
    }
}

pub(crate) fn drops_list(d: &DropCounters) -> Vec<(String, u64)> {
    d.iter()
        .filter(|&(_, n)| n > 0)
        .map(|(r, n)| (r.name().to_owned(), n))
        .collect()
}

pub(crate) fn keypair(rng: &mut ChaCha20Rng) -> StaticKeypair {
    StaticKeypair::generate(rng)
}

pub(crate) fn seed(rng: &mut ChaCha20Rng) -> [u8; 32] {
    let mut s = [0u8; 32];
    rand::RngCore::fill_bytes(rng, &mut s);
    s
}

pub(crate) const SERVER_ADDR: &str = "10.255.0.1:51820";

pub(crate) fn client_addr(path: usize, generation: u32) -> SocketAddr {
    SocketAddr::from(([10, path as u8, 0, 2], 40000 + generation as u16))
}

pub(crate) fn session_config(s: &Scenario, spec: &SessionSpec) -> SessionConfig {
    let mut c = SessionConfig {
        scheduler: s.scheduler.clone(),
        cc: s.cc,
        tunnel_mtu: MAX_SESSION_PAYLOAD,
        ..SessionConfig::default()
    };
    c.reseq.mode = s.reseq_mode;
    c.resend_losses = s.resend_losses;
    if let Some(r) = spec.rekey_after {
        c.rekey_after = r;
    }
    c
}

pub(crate) fn endpoint(
    config: &SessionConfig,
    server: &StaticKeypair,
    client: PublicKey,
    seed: [u8; 32],
) -> Endpoint {
    Endpoint::new(
        EndpointConfig {
            local: server.clone(),
            peers: vec![PeerConfig {
                public_key: client,
                psk: None,
            }],
            session: config.clone(),
            handshakes_per_second: 50,
        },
        seed,
    )
    .expect("the scenario's session configuration is valid")
}

/// The client's configuration: one path per scenario path, all to the
/// server's address.
pub(crate) fn client_config(
    s: &Scenario,
    config: &SessionConfig,
    local: StaticKeypair,
    server: PublicKey,
) -> ClientConfig {
    ClientConfig {
        local,
        server,
        psk: None,
        paths: s
            .paths
            .iter()
            .enumerate()
            .map(|(i, p)| PathConfig {
                name: p.name_or_default(i),
                role: p.role,
                cost: p.cost,
                remote: SERVER_ADDR.parse().expect("valid address"),
                rate_limit_bps: p.rate_limit_bps,
            })
            .collect(),
        session: config.clone(),
    }
}

/// Runs `s` through the session with the checked sources `specs`.
pub(crate) fn run(
    s: &Scenario,
    spec: &SessionSpec,
    specs: &[(String, TrafficSpec)],
) -> Result<Report, SimError> {
    if s.payload_bytes > MAX_SESSION_PAYLOAD || s.payload_bytes < TAG_BYTES {
        return Err(SimError::Session(format!(
            "payload of {} bytes: must be {} to {MAX_SESSION_PAYLOAD} bytes (a 1500-byte packet less {} bytes of IP, UDP, tunnel and braid headers)",
            s.payload_bytes,
            TAG_BYTES,
            1500 - MAX_SESSION_PAYLOAD
        )));
    }
    // A download's data goes on each path's down link: the scenario seen
    // from the data's side has up and down swapped, so that the report
    // (which reads the up links) describes the data's direction.
    let mirrored;
    let s = if spec.download {
        mirrored = s.mirrored();
        &mirrored
    } else {
        s
    };
    let mut keys_rng = ChaCha20Rng::seed_from_u64(s.seed ^ 0x5e55_1011);
    let server_key = keypair(&mut keys_rng);
    let client_key = keypair(&mut keys_rng);
    let stranger = keypair(&mut keys_rng);
    let config = session_config(s, spec);
    let local = if spec.unknown_client {
        stranger
    } else {
        client_key.clone()
    };
    let client_config = client_config(s, &config, local, server_key.public);
    let mut client = Session::client(client_config, seed(&mut keys_rng))
        .map_err(|e| SimError::Session(e.to_string()))?;
    let mut server = endpoint(&config, &server_key, client_key.public, seed(&mut keys_rng));
    let server_addr: SocketAddr = SERVER_ADDR.parse().expect("valid address");
    let peer = server.peer_id(&client_key.public).expect("configured peer");
    // The data's side of each path is its first link (see `mirrored`
    // above), and datagrams arriving there are the data's.
    let client_sends_data = !spec.download;
    let data_hop = if spec.download { Hop::Down } else { Hop::Up };

    let mut master = ChaCha8Rng::seed_from_u64(s.seed);
    let mut links = build_links(s, &mut master);
    let mut generation = vec![0u32; s.paths.len()];
    let mut rebinds = spec.rebind.clone();
    rebinds.sort();
    let mut rebinds = rebinds.into_iter().peekable();
    let mut restart = spec.server_restart_at;

    let ideal = s.ideal_goodput_bps();
    let mut flows = Flows::new(specs, ideal, s.payload_bytes, s.duration);
    let mut outgoing: Vec<Outgoing> = Vec::new();
    let mut started = false;
    let mut metrics = Metrics::new(s);
    let mut events = Events::default();
    let mut records = Vec::new();
    let mut server_datagrams = 0u64;
    let mut server_drops_before_restart = DropCounters::default();
    let end = s.duration + DRAIN;
    let mut now = Duration::ZERO;
    let mut stall = crate::stall::StallGuard::default();
    let (client_clock, server_clock) = s.clock.clocks();
    let mut buf = vec![0u8; MAX_DATAGRAM_LEN];

    loop {
        // Sources start once the tunnel is up, as an application would
        // (a TCP connection opened before would lose its first window).
        started |= client.is_connected()
            && (!spec.download || server.session(peer).is_some_and(Session::is_connected));
        let t_source = flows.next_event().filter(|_| started);
        let t_event = events.peek_time();
        let t_client = client
            .poll_timeout()
            .map(|t| client_clock.true_time_of(t, now));
        let t_server = server
            .poll_timeout()
            .map(|t| server_clock.true_time_of(t, now));
        let t_rebind = rebinds.peek().map(|(t, _)| *t);
        let Some(next) = [t_source, t_event, t_client, t_server, t_rebind, restart]
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
        let client_now = client_clock.read(now);
        let server_now = server_clock.read(now);

        if restart == Some(now) {
            restart = None;
            server_drops_before_restart = total_server_drops(&server, server_now);
            server = endpoint(&config, &server_key, client_key.public, seed(&mut keys_rng));
        } else if t_rebind == Some(now) {
            let (_, path) = rebinds.next().expect("peeked");
            if let Some(g) = generation.get_mut(path) {
                *g += 1;
            }
        } else if t_source == Some(now) {
            // Sources are polled below, after every step.
        } else if t_event == Some(now) {
            let mut e = events.pop().expect("peeked");
            let path = usize::from(e.path);
            if e.hop == data_hop {
                metrics.on_path_arrival(path, now, e.data.len() + IP_UDP_OVERHEAD);
            }
            match e.hop {
                Hop::Up => {
                    let from = client_addr(path, generation[path]);
                    let _ = server.handle_datagram(server_now, from, &mut e.data);
                }
                Hop::Down => {
                    let _ =
                        client.handle_datagram(client_now, Some(e.path), server_addr, &mut e.data);
                }
                // ACKs travel through the server's session here.
                Hop::TcpAck => {}
            }
        } else {
            if t_client.is_some_and(|t| t <= now) {
                client.handle_timeout(client_now);
            }
            if t_server.is_some_and(|t| t <= now) {
                server.handle_timeout(server_now);
            }
        }

        // Deliveries first: what they cause (ACKs, new segments) leaves in
        // this step.
        {
            let mut server_end = ServerEnd {
                endpoint: &mut server,
                peer,
            };
            let ((sender, sender_now), (receiver, receiver_now)): (
                (&mut dyn FlowEnd, _),
                (&mut dyn FlowEnd, _),
            ) = if spec.download {
                ((&mut server_end, server_now), (&mut client, client_now))
            } else {
                ((&mut client, client_now), (&mut server_end, server_now))
            };
            while let Some(d) = receiver.deliver() {
                metrics.on_delivered(&d, now);
                if let Some(a) = flows.on_delivered(&d, now) {
                    receiver.send(receiver_now, a.flow(), a.encode());
                }
            }
            while let Some(d) = sender.deliver() {
                if let Some(a) = AckInFlight::decode(&d.payload) {
                    flows.on_ack(now, &a);
                }
            }
            if let Some(s) = sender.sender() {
                metrics.on_sender_state(now, s);
            }
            if started {
                flows.poll(now, |p| metrics.on_offered(p, now), &mut outgoing);
            }
            for o in outgoing.drain(..) {
                // Not connected yet or queue full: application loss, counted.
                sender.send(sender_now, o.flow, o.payload);
            }
        }
        while let Some(t) = client.poll_transmit(client_now, &mut buf) {
            forward(
                link_of(&mut links[usize::from(t.path)], client_sends_data),
                now,
                Hop::Up,
                t.path,
                buf[..t.len].to_vec(),
                &mut events,
            );
        }
        while let Some((_, t)) = server.poll_transmit(server_now, &mut buf) {
            server_datagrams += 1;
            // The datagram reaches the client only through the NAT mapping
            // of the path's current address.
            let path = (0..s.paths.len()).find(|&i| client_addr(i, generation[i]) == t.remote);
            if let Some(path) = path {
                forward(
                    link_of(&mut links[path], !client_sends_data),
                    now,
                    Hop::Down,
                    path as u8,
                    buf[..t.len].to_vec(),
                    &mut events,
                );
            }
        }
        while let Some(e) = client.poll_event() {
            records.push(record(now, Side::Client, e));
        }
        while let Some((_, e)) = server.poll_event() {
            records.push(record(now, Side::Server, e));
        }
    }
    let reseq_counters = |s: &Session| s.receiver().resequencer().counters.clone();
    let (data_sender, reseq) = match server.session(peer) {
        Some(sess) if spec.download => (sess, reseq_counters(&client)),
        Some(sess) => (&client, reseq_counters(sess)),
        None => (&client, Default::default()),
    };
    let client_stats = client.stats(client_clock.read(now));
    let mut server_drops = total_server_drops(&server, server_clock.read(now));
    server_drops.merge(&server_drops_before_restart);
    let view = SenderView::of(data_sender.sender(), s.paths.len());
    let mut report = metrics.finish(s, &view, &reseq, &links);
    report.flows = flows.report(ideal);
    report.session = Some(SessionReport {
        events: records,
        client_drops: drops_list(&client_stats.drops),
        server_drops: drops_list(&server_drops),
        client_handshakes: client_stats.handshakes,
        connected: started,
        server_sessions: server.stats().sessions,
        server_datagrams,
        overhead_bytes_per_packet: braid_core::session::SESSION_OVERHEAD + IP_UDP_OVERHEAD,
    });
    Ok(report)
}

/// A path's link in the data's direction (its first), or the other one.
fn link_of(pair: &mut (Link, Link), data: bool) -> &mut Link {
    if data {
        &mut pair.0
    } else {
        &mut pair.1
    }
}

/// The endpoint's drops and its session's.
pub(crate) fn total_server_drops(
    server: &Endpoint,
    now: braid_core::time::Instant,
) -> DropCounters {
    let mut d = server.stats().drops;
    if let Some(sess) = server.session(braid_core::session::PeerId(0)) {
        d.merge(&sess.stats(now).drops);
    }
    d
}

pub(crate) fn record(now: Duration, side: Side, event: Event) -> SessionEventRecord {
    SessionEventRecord {
        t_s: now.as_secs_f64(),
        side,
        event: format!("{event:?}"),
        raw: event,
    }
}
