//! A tunnel session with one peer, both directions, as a sans-IO state
//! machine (quinn-proto's `Connection`, boringtun's `Tunn`): the Noise
//! handshake, every packet encrypted and authenticated, the bonding
//! [`Sender`] and [`Receiver`] inside, per-path liveness probes, NAT
//! rebinding, key rotation and peer restarts.
//!
//! Method families: `handle_*` and `send` take input; `poll_*` give output;
//! time is passed in. A client builds its session with
//! [`Session::client`]; a server gets one per client from its
//! [`Endpoint`].
//!
//! # Overhead per packet
//!
//! An inner packet of `n` bytes leaves as a UDP datagram of
//! `n + SESSION_OVERHEAD` = `n + 38` bytes: a data message
//! (`crate::crypto`), whose header (kind 1, receiver index 4, path 1, path
//! number 4) is the data packet's own first byte, path and path number,
//! then the rest of the bonding data header (12) and the payload
//! encrypted, then the AEAD tag (16). The path number is the nonce, so
//! no second counter travels. With IPv4 + UDP (28) that is 66 bytes per
//! packet, 86 over IPv6. Everything else the session says (probes,
//! feedback, trains, stream packets) travels as a message with a counter
//! of its own (9 + 16 bytes around it). Feedback that rides with data in
//! a bundle costs 4 bytes, the 5 bytes by which the data packet's whole
//! header in a message exceeds a data message's, and the feedback packet,
//! instead of a datagram of its own.
//!
//! # Probing
//!
//! A client probes each path on which it has received nothing
//! authenticated, or sent nothing, for [`PROBE_INTERVAL`], at most once
//! per interval; the server answers every probe on the same path. A
//! server probes a path it hears on only until one answer gives it the
//! path's round trip (so does a server's handshake answer: the client's
//! next message on that path): before data measures the paths' delays,
//! earliest-arrival breaks a tie between paths by their probes' round
//! trips (`sched::earliest_arrival`). While
//! traffic flows both ways on a path (data one way, acknowledgements the
//! other) it is never silent that long, so probes cost nothing then; an
//! idle path
//! carries one probe (59 bytes over IPv4, 79 over IPv6) each way per
//! 65 ms: 7.3 kbit/s (IPv4) or 9.7 kbit/s (IPv6) per direction, 0.73 % or
//! 0.97 % of a 1 Mbit/s link. A path silent for [`PATH_DOWN_AFTER`]
//! (250 ms) is marked down: its last packet arrived at most one one-way
//! delay after the cut, so the cut is noticed within 250 ms plus that
//! delay (under 300 ms for one-way delays under 50 ms). A working path
//! falls silent for one probe interval plus its round trip when traffic
//! on it stops (the probe leaves after the interval, its answer one round
//! trip later), so a path whose round trip is known to be above about 150
//! ms may stay silent for a probe interval plus 1.25 times its round trip
//! instead (`Session::down_after`): with the fixed limit, an 18-Mbit/s
//! path 100 ms away went down three times in a 10-s transfer in the lab,
//! and a simulated 300-ms one at its handshake and when a transfer ended.
//!
//! # Packet trains
//!
//! A path that comes up with no rate known, while the session carries no
//! data, is measured once with a train of 32 full-size packets sent back
//! to back; the peer reports their spacing and the path's estimates start
//! from the rate it gives (`train.rs`; [`SessionConfig::path_trains`]
//! switches it off). A train reported too thin to measure, or not
//! reported within a second, marks the path failed for the scheduler
//! (`PathView::train_failed`) until one measures it.
//!
//! # Buffers
//!
//! A caller that offers inner packets with [`Session::send_flow_from`] and
//! gives delivered payloads back with [`Session::recycle`] makes the
//! session allocate nothing per packet once traffic is steady: its sender
//! and receiver reuse the buffers of the packets they are done with
//! ([`crate::pool`]), within their own byte bounds.
//! `crates/braid-core/tests/allocations.rs` counts it.

mod config;
mod endpoint;
mod event;
mod frame;
mod hello;
mod stats;
mod stream_carrier;
#[cfg(test)]
mod tests;
mod train;

pub use config::{
    tunnel_mtu, ClientConfig, ConfigError, EndpointConfig, PathConfig, PathRole, PeerConfig,
    SessionConfig, MAX_SESSION_PATHS, MAX_TUNNEL_MTU, MIN_TUNNEL_MTU, SESSION_OVERHEAD,
};
pub use endpoint::{Endpoint, EndpointStats, PeerId};
pub use event::{Event, PathDownReason};
pub use stats::{DropCounters, DropReason, PathState, PathStats, SessionStats};
pub use stream_carrier::STREAM_OVERHEAD;

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::time::Duration;

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

use crate::crypto::handshake::{
    self, HandshakeError, Initiator, INITIATION_TYPE, MAX_INITIATION_LEN, MAX_PAYLOAD,
    RESPONSE_TYPE,
};
use crate::crypto::{
    PresharedKey, PublicKey, ReplayError, StaticKeypair, TransportError, TransportKeys,
    DATA_MESSAGE_HEADER_LEN, TRANSPORT_HEADER_LEN, TRANSPORT_OVERHEAD, TRANSPORT_TYPE,
};
use crate::receiver::{Receiver, ReceiverConfig};
use crate::reseq::Delivery;
use crate::sched::{PathInfo, PathSet};
use crate::sender::{self, Sender, SenderConfig};
use crate::time::Instant;

use frame::Inner;
pub use hello::PROTOCOL_VERSION;
use hello::{HelloError, Initiation};

/// Default probe interval (see the module documentation for the budget).
pub const PROBE_INTERVAL: Duration = Duration::from_millis(65);
/// How long a probe waits for its answer to measure the path's round
/// trip: later probes go out meanwhile (on a path longer than the probe
/// interval, every round trip) and do not take its place, or no answer
/// would ever match the probe last sent.
const PROBE_ANSWER_WAIT: Duration = Duration::from_secs(2);
/// How long a server's path that waits for acknowledgements may send
/// nothing before the server probes it (and again after as long): the
/// client's probes keep the path alive, so this is for what the data does
/// not show (see `PathSender::on_probe_answered`). Rare enough to cost a
/// path in a 50-kbit/s fade about 1 %; a path in use sends more often.
const QUIET_PATH_PROBE: Duration = Duration::from_secs(1);
/// Default silence after which a path is marked down.
pub const PATH_DOWN_AFTER: Duration = Duration::from_millis(250);
/// How long after a client's probe says it hears nothing on a path that
/// carries data the server also sends that path's acknowledgements on
/// another path (the next such probe renews it).
const RETURN_SILENT_SPAN: Duration = Duration::from_secs(1);
/// Set in a probe's sequence number (31 bits of count below it): the
/// client has heard nothing on the path for one and a half of its probes'
/// round trips while data it sent there waits for acknowledgements:
/// its return direction is silent while its forward one may work (a
/// radio downlink in a fade). The server then relays the path's
/// acknowledgements on another path ([`Receiver::return_silent`]).
const PROBE_RETURN_SILENT: u32 = 1 << 31;

/// Bytes a caller's buffer for [`Session::poll_transmit`] must hold: the
/// largest datagram a session sends.
pub const MAX_DATAGRAM_LEN: usize = sender::MAX_DATAGRAM + SESSION_OVERHEAD + 64;

/// How long a session must carry no data before it sends packet trains.
const TRAIN_AFTER_QUIET: Duration = Duration::from_millis(200);

/// A datagram to send: `buf[..len]` of the buffer passed to `poll_transmit`,
/// on the client's path `path`, to `remote`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Transmit {
    pub path: u8,
    pub remote: SocketAddr,
    pub len: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SessionSendError {
    #[error("no session keys yet (handshake pending)")]
    NotConnected,
    #[error("inner packet of {0} bytes exceeds the tunnel MTU")]
    TooLarge(usize),
    #[error("send queue full")]
    QueueFull,
}

/// Why [`Session::set_path_role`] refused a role change.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SetRoleError {
    #[error("no path {0}")]
    UnknownPath(u8),
    #[error("only a client sets its paths' roles (a server learns them from the handshake)")]
    NotClient,
    #[error("scheduler {0} cannot keep a path for overflow: use earliest-arrival")]
    OverflowUnsupported(&'static str),
}

/// Client or server side.
#[derive(Debug)]
enum Role {
    Client(Box<ClientState>),
    Server,
}

#[derive(Debug)]
struct ClientState {
    local: StaticKeypair,
    server: PublicKey,
    psk: PresharedKey,
    pending: Option<Pending>,
    /// Path the next initiation goes out on.
    next_handshake_path: u8,
    last_initiation: Option<Instant>,
    /// A path's role changed since the last initiation: the server learns
    /// roles only from a handshake, so one is due now.
    roles_changed: bool,
    /// The server's other protocol version, reported until a handshake
    /// succeeds.
    refused_version: Option<u8>,
}

#[derive(Debug)]
struct Pending {
    initiator: Initiator,
    /// The path the initiation went out on, and when: its response's
    /// arrival there is the path's first round trip.
    path: u8,
    sent: Instant,
}

/// The session's view of one path.
#[derive(Debug)]
struct Path {
    name: String,
    role: PathRole,
    cost: f64,
    remote: Option<SocketAddr>,
    state: PathState,
    last_rx: Option<Instant>,
    last_tx: Option<Instant>,
    last_probe: Option<Instant>,
    /// A probe must go out now (after a handshake).
    probe_now: bool,
    probe_seq: u32,
    probe_sent: Option<(u32, Instant)>,
    /// Server: when it answered a handshake on this path, until the
    /// client's first message there, which is a round trip later however
    /// long the path (it measures that round trip; see `down_after`).
    answered_at: Option<Instant>,
    tx_bytes: u64,
    rx_bytes: u64,
    tx_packets: u64,
    rx_packets: u64,
    probes_sent: u64,
    times_down: u64,
    /// Why the path went down last; `None` while it has never been down.
    down_reason: Option<PathDownReason>,
    /// The owner reported the path's link gone: nothing is sent on it and
    /// nothing heard on it brings it up until the link is back.
    link_lost: bool,
    trains: train::PathTrains,
}

impl Path {
    fn new(name: String, role: PathRole, cost: f64, remote: Option<SocketAddr>) -> Path {
        Path {
            name,
            role,
            cost,
            remote,
            state: PathState::Unvalidated,
            last_rx: None,
            last_tx: None,
            last_probe: None,
            probe_now: false,
            probe_seq: 0,
            probe_sent: None,
            answered_at: None,
            tx_bytes: 0,
            rx_bytes: 0,
            tx_packets: 0,
            rx_packets: 0,
            probes_sent: 0,
            times_down: 0,
            down_reason: None,
            link_lost: false,
            trains: train::PathTrains::default(),
        }
    }

    /// Marks the path down for `reason`; returns whether it was not down.
    fn go_down(&mut self, reason: PathDownReason) -> bool {
        self.down_reason = Some(reason);
        if self.state == PathState::Down {
            return false;
        }
        self.state = PathState::Down;
        self.times_down += 1;
        true
    }
}

/// Session-level messages waiting to be sealed.
#[derive(Debug, Clone, Copy)]
enum Control {
    /// A probe or probe ack (`kind`).
    Probe { kind: u8, path: u8, seq: u32 },
    Train {
        path: u8,
        packet: frame::TrainPacket,
    },
    TrainReport {
        path: u8,
        report: frame::TrainReport,
    },
}

/// The keys of up to three handshakes.
#[derive(Debug, Default)]
struct KeySlots {
    current: Option<TransportKeys>,
    /// Replaced keys, still accepted until the instant beside them.
    previous: Option<(TransportKeys, Instant)>,
    /// Server: keys of a rekey the client has not used yet.
    next: Option<TransportKeys>,
}

/// One tunnel session. See the module documentation.
#[derive(Debug)]
pub struct Session {
    role: Role,
    config: SessionConfig,
    rng: ChaCha20Rng,
    instance: u64,
    peer_instance: Option<u64>,
    paths: Vec<Path>,
    sender: Sender,
    receiver: Receiver,
    /// The reliable stream, the second payload kind (`stream_carrier.rs`).
    stream: Option<crate::stream::Connection>,
    keys: KeySlots,
    handshake_out: VecDeque<(u8, SocketAddr, Vec<u8>)>,
    control_out: VecDeque<Control>,
    feedback_out: VecDeque<crate::sender::Transmit>,
    events: VecDeque<Event>,
    drops: DropCounters,
    last_rx_any: Option<Instant>,
    handshakes: u64,
    rekeys: u64,
    delivered: u64,
    reseq_delay_max: Duration,
    reseq_delay_sum: Duration,
    last_now: Instant,
    /// When data last went out or came in (packet trains wait for quiet).
    last_data_at: Option<Instant>,
}

fn build_streams(
    config: &SessionConfig,
    paths: &[Path],
) -> Result<(Sender, Receiver), ConfigError> {
    let infos = paths
        .iter()
        .map(|p| PathInfo {
            name: p.name.clone(),
            cost: p.cost,
            weight_throughput: None,
            overflow: p.role == PathRole::Overflow,
        })
        .collect();
    let mut sc = SenderConfig::new(infos);
    sc.scheduler = scheduler_for(config, paths);
    sc.cc = config.cc;
    sc.max_queue_bytes = config.max_queue_bytes;
    sc.resend_losses = config.resend_losses;
    sc.fq.mark_ecn = config.mark_ecn;
    let sender = Sender::new(sc).map_err(|e| ConfigError::Scheduler(e.to_string()))?;
    let mut rc = ReceiverConfig::new(paths.len());
    rc.reseq = config.reseq;
    // Schedulers that learn from loss reports set their interval.
    rc.report_interval = crate::sched::report_interval(&config.scheduler)
        .map_err(|e| ConfigError::Scheduler(e.to_string()))?;
    Ok((sender, Receiver::new(rc)))
}

/// The configured scheduler; the default one puts cheaper paths first
/// (`cost_first`) when the paths' costs differ, so that a path given a
/// higher cost carries only what the cheaper ones cannot, in both
/// directions (the server has the costs' order from the handshake).
fn scheduler_for(config: &SessionConfig, paths: &[Path]) -> String {
    let priced = paths
        .windows(2)
        .any(|w| w[0].cost.total_cmp(&w[1].cost).is_ne());
    if priced && config.scheduler == crate::sched::DEFAULT {
        format!("{}:cost_first=1", crate::sched::DEFAULT)
    } else {
        config.scheduler.clone()
    }
}

fn check_config(config: &SessionConfig, paths: usize) -> Result<(), ConfigError> {
    if paths == 0 {
        return Err(ConfigError::NoPaths);
    }
    if paths > MAX_SESSION_PATHS {
        return Err(ConfigError::TooManyPaths(paths));
    }
    if !(MIN_TUNNEL_MTU..=MAX_TUNNEL_MTU).contains(&config.tunnel_mtu) {
        return Err(ConfigError::TunnelMtu(config.tunnel_mtu));
    }
    Ok(())
}

impl Session {
    /// A client session; its first handshake goes out at the first
    /// `poll_transmit`/`handle_timeout`. `rng_seed` seeds every random
    /// choice (ephemeral keys, indices): pass OS randomness outside tests.
    pub fn client(config: ClientConfig, rng_seed: [u8; 32]) -> Result<Session, ConfigError> {
        check_config(&config.session, config.paths.len())?;
        let paths: Vec<Path> = config
            .paths
            .iter()
            .map(|p| Path::new(p.name.clone(), p.role, p.cost, Some(p.remote)))
            .collect();
        let (mut sender, receiver) = build_streams(&config.session, &paths)?;
        for (i, p) in config.paths.iter().enumerate() {
            sender.set_rate_limit(i, p.rate_limit_bps);
        }
        let role = Role::Client(Box::new(ClientState {
            local: config.local,
            server: config.server,
            psk: config.psk.unwrap_or(PresharedKey::ZERO),
            pending: None,
            next_handshake_path: 0,
            last_initiation: None,
            roles_changed: false,
            refused_version: None,
        }));
        Ok(Session::assemble(
            role,
            config.session,
            rng_seed,
            paths,
            sender,
            receiver,
        ))
    }

    fn assemble(
        role: Role,
        config: SessionConfig,
        rng_seed: [u8; 32],
        paths: Vec<Path>,
        sender: Sender,
        receiver: Receiver,
    ) -> Session {
        let mut rng = ChaCha20Rng::from_seed(rng_seed);
        let instance = rng.next_u64() & hello::INSTANCE_MASK;
        let mut s = Session {
            role,
            config,
            rng,
            instance,
            peer_instance: None,
            paths,
            sender,
            receiver,
            stream: None,
            keys: KeySlots::default(),
            handshake_out: VecDeque::new(),
            control_out: VecDeque::new(),
            feedback_out: VecDeque::new(),
            events: VecDeque::new(),
            drops: DropCounters::default(),
            last_rx_any: None,
            handshakes: 0,
            rekeys: 0,
            delivered: 0,
            reseq_delay_max: Duration::ZERO,
            reseq_delay_sum: Duration::ZERO,
            last_now: Instant::ZERO,
            last_data_at: None,
        };
        s.update_usable(Instant::ZERO);
        s
    }

    /// A server session from an accepted initiation (the [`Endpoint`]
    /// checked the peer, its timestamp and the payload).
    fn server(
        config: &SessionConfig,
        rng_seed: [u8; 32],
        hello: &Initiation,
    ) -> Result<Session, ConfigError> {
        check_config(config, hello.roles.len())?;
        let paths: Vec<Path> = hello
            .roles
            .iter()
            .enumerate()
            .zip(&hello.prices)
            .map(|((i, &role), &price)| Path::new(format!("path{i}"), role, f64::from(price), None))
            .collect();
        let (sender, receiver) = build_streams(config, &paths)?;
        let mut s = Session::assemble(
            Role::Server,
            config.clone(),
            rng_seed,
            paths,
            sender,
            receiver,
        );
        s.peer_instance = Some(hello.instance);
        Ok(s)
    }

    /// Whether keys are established (data can flow).
    pub fn is_connected(&self) -> bool {
        self.keys.current.is_some()
    }

    /// Client: path `path` takes `role` from now on (a data cap demoting a
    /// metered path to backup, and restoring it). The sender's usable paths
    /// follow at once; the server, which knows roles only from the
    /// handshake, is told by a handshake started now, or a retry interval
    /// (`handshake_retry`) after the previous one if that was more recent
    /// (a rekey: no data is lost). Setting the role a path already has
    /// changes nothing.
    pub fn set_path_role(
        &mut self,
        now: Instant,
        path: u8,
        role: PathRole,
    ) -> Result<(), SetRoleError> {
        let Role::Client(client) = &mut self.role else {
            return Err(SetRoleError::NotClient);
        };
        let index = usize::from(path);
        let p = self
            .paths
            .get_mut(index)
            .ok_or(SetRoleError::UnknownPath(path))?;
        if p.role == role {
            return Ok(());
        }
        let scheduler = self.sender.scheduler_name();
        if role == PathRole::Overflow && scheduler != "earliest-arrival" {
            return Err(SetRoleError::OverflowUnsupported(scheduler));
        }
        p.role = role;
        client.roles_changed = true;
        self.last_now = now;
        self.sender
            .set_path_overflow(index, role == PathRole::Overflow);
        self.update_usable(now);
        Ok(())
    }

    /// When anything authenticated last arrived from the peer, on any path.
    pub fn last_heard(&self) -> Option<Instant> {
        self.last_rx_any
    }

    /// Client: the server is now at `server` (its name resolved to a new
    /// address). Every path sends there from now on, handshakes included;
    /// an answer from there brings the paths up as usual. Returns whether
    /// anything changed (never, on a server: its peers' addresses are
    /// what their packets come from).
    pub fn set_server_address(&mut self, server: SocketAddr) -> bool {
        if !matches!(self.role, Role::Client(_)) {
            return false;
        }
        let mut changed = false;
        for p in &mut self.paths {
            changed |= p.remote.replace(server) != Some(server);
        }
        changed
    }

    /// The bonding sender inside (per-path estimators, counters).
    pub fn sender(&self) -> &Sender {
        &self.sender
    }

    /// The bonding receiver inside (resequencer, counters).
    pub fn receiver(&self) -> &Receiver {
        &self.receiver
    }

    /// Offers an inner packet of flow 0 for the peer (see
    /// [`Session::send_flow`]).
    pub fn send(&mut self, now: Instant, packet: Vec<u8>) -> Result<(), SessionSendError> {
        self.send_flow(now, 0, packet)
    }

    /// Offers an inner packet of flow `flow` for the peer: an id the caller
    /// derives from the packet (a hash of the inner 5-tuple), so that the
    /// send queue keeps each flow's standing queue apart and fair
    /// ([`Sender::send_flow`]). Packets of one flow keep their order.
    pub fn send_flow(
        &mut self,
        now: Instant,
        flow: u64,
        packet: Vec<u8>,
    ) -> Result<(), SessionSendError> {
        self.last_now = now;
        if self.keys.current.is_none() {
            self.drops.add(DropReason::NotConnected);
            return Err(SessionSendError::NotConnected);
        }
        if packet.len() > self.config.tunnel_mtu {
            return Err(SessionSendError::TooLarge(packet.len()));
        }
        self.sender
            .send_flow(now, flow, packet)
            .map_err(|e| match e {
                sender::SendError::QueueFull => SessionSendError::QueueFull,
                sender::SendError::TooLarge(n) => SessionSendError::TooLarge(n),
            })
    }

    /// Offers an inner packet of flow `flow` as [`Session::send_flow`]
    /// does, copied into a buffer the session reuses: a steady stream of
    /// packets offered this way, whose deliveries are given back with
    /// [`Session::recycle`], allocates nothing per packet.
    pub fn send_flow_from(
        &mut self,
        now: Instant,
        flow: u64,
        packet: &[u8],
    ) -> Result<(), SessionSendError> {
        let payload = self.sender.copy_payload(packet);
        self.send_flow(now, flow, payload)
    }

    /// Gives back a delivered payload once the caller is done with it:
    /// the next packets from the peer reuse its buffer.
    pub fn recycle(&mut self, payload: Vec<u8>) {
        self.receiver.recycle(payload);
    }

    /// A datagram from the network. `path` is the client's path it came in
    /// on (`None` at a server, where the path is read from the
    /// authenticated content); `bytes` is decrypted in place. Anything
    /// that does not authenticate changes nothing but a drop counter.
    pub fn handle_datagram(
        &mut self,
        now: Instant,
        path: Option<u8>,
        remote: SocketAddr,
        bytes: &mut [u8],
    ) -> Result<(), DropReason> {
        self.last_now = now;
        self.trim_buffers(now);
        let result = self.dispatch(now, path, remote, bytes);
        if let Err(reason) = result {
            self.drops.add(reason);
        }
        result
    }

    fn dispatch(
        &mut self,
        now: Instant,
        path: Option<u8>,
        remote: SocketAddr,
        bytes: &mut [u8],
    ) -> Result<(), DropReason> {
        if bytes.len() > MAX_DATAGRAM_LEN {
            return Err(DropReason::Oversized);
        }
        match bytes.first() {
            None => Err(DropReason::Truncated),
            Some(&RESPONSE_TYPE) => self.handle_response(now, path, remote, bytes),
            Some(&INITIATION_TYPE) => Err(DropReason::Unexpected),
            // A message, a data message, or unknown (`receiver_index`
            // tells them apart).
            Some(_) => self.handle_transport(now, path, remote, bytes),
        }
    }

    fn handle_response(
        &mut self,
        now: Instant,
        path: Option<u8>,
        remote: SocketAddr,
        bytes: &[u8],
    ) -> Result<(), DropReason> {
        let Role::Client(client) = &mut self.role else {
            return Err(DropReason::Unexpected);
        };
        let pending = &mut client.pending;
        // Cheap checks first, so a stray response does not cost the
        // pending handshake.
        if bytes.len() < handshake::response_len(0) || bytes.len() > handshake::MAX_RESPONSE_LEN {
            return Err(DropReason::Truncated);
        }
        let Some(p) = pending.as_ref() else {
            return Err(DropReason::Unexpected);
        };
        let index = u32::from_be_bytes([bytes[5], bytes[6], bytes[7], bytes[8]]);
        if index != p.initiator.local_index {
            return Err(DropReason::UnknownIndex);
        }
        let p = pending.take().expect("checked above");
        let local_index = p.initiator.local_index;
        let mut payload = [0u8; MAX_PAYLOAD];
        let (split, remote_index, n) = p
            .initiator
            .finish(bytes, &mut payload)
            .map_err(|_| DropReason::HandshakeInvalid)?;
        let peer_instance = match hello::decode_response(&payload[..n]) {
            Ok(instance) => instance,
            Err(HelloError::Protocol(peer_version)) => {
                // The server kept nothing; the next try may meet an
                // upgraded one. Each version is reported once until then.
                if client.refused_version != Some(peer_version) {
                    client.refused_version = Some(peer_version);
                    self.events
                        .push_back(Event::ProtocolMismatch { peer_version });
                }
                return Err(DropReason::ProtocolMismatch);
            }
            Err(HelloError::Malformed) => return Err(DropReason::HandshakeInvalid),
        };
        client.refused_version = None;
        let keys = TransportKeys::new(&split.send, &split.recv, local_index, remote_index, now);
        let first = self.peer_instance.is_none();
        let restarted = self.peer_instance.is_some_and(|i| i != peer_instance);
        self.peer_instance = Some(peer_instance);
        self.install_keys(now, keys);
        self.handshakes += 1;
        if restarted {
            self.reset_streams(now);
        }
        if first || restarted {
            self.start_stream(now);
            self.events.push_back(Event::Connected {
                peer_restarted: restarted,
            });
        } else {
            self.rekeys += 1;
            self.events.push_back(Event::Rekeyed);
        }
        if let Some(i) = path.filter(|&i| usize::from(i) < self.paths.len()) {
            self.path_heard(now, i, remote, bytes.len());
            // Until a probe measures it: the silence this path may keep
            // (see `down_after`) on a path longer than the limit.
            let i = usize::from(i);
            if i == usize::from(p.path) && self.sender.path(i).probe_rtt.is_none() {
                self.sender.set_probe_rtt(i, now - p.sent);
            }
        }
        // Confirm the keys to the server and validate every path now.
        for p in &mut self.paths {
            p.probe_now = true;
        }
        Ok(())
    }

    /// Makes `keys` current; the current ones become previous.
    fn install_keys(&mut self, now: Instant, keys: TransportKeys) {
        if let Some(old) = self.keys.current.replace(keys) {
            self.keys.previous = Some((old, now + self.config.old_keys_kept));
        }
    }

    /// The peer restarted: its sequence numbers start over, so do ours.
    /// The paths' probe round trips measure the paths, not the streams,
    /// and stay.
    fn reset_streams(&mut self, now: Instant) {
        let (mut sender, receiver) = match build_streams(&self.config, &self.paths) {
            Ok(s) => s,
            Err(_) => unreachable!("the configuration was checked when the session was built"),
        };
        for i in 0..self.paths.len() {
            if let Some(rtt) = self.sender.path(i).probe_rtt {
                sender.set_probe_rtt(i, rtt);
            }
        }
        self.sender = sender;
        self.receiver = receiver;
        self.feedback_out.clear();
        self.update_usable(now);
    }

    fn handle_transport(
        &mut self,
        now: Instant,
        path: Option<u8>,
        remote: SocketAddr,
        bytes: &mut [u8],
    ) -> Result<(), DropReason> {
        let index = crate::crypto::receiver_index(bytes).map_err(transport_drop)?;
        let slot = self.slot_for(index).ok_or(DropReason::UnknownIndex)?;
        let keys = match slot {
            Slot::Current => self.keys.current.as_mut(),
            Slot::Previous => self.keys.previous.as_mut().map(|(k, _)| k),
            Slot::Next => self.keys.next.as_mut(),
        }
        .expect("slot_for found it");
        let range = keys.open(bytes).map_err(transport_drop)?;
        if slot == Slot::Next {
            // The client uses the keys of its latest handshake: confirmed.
            let next = self.keys.next.take().expect("slot_for found it");
            self.install_keys(now, next);
            self.rekeys += 1;
            self.events.push_back(Event::Rekeyed);
        }
        let wire_len = bytes.len();
        if bytes[0] == TRANSPORT_TYPE {
            return self.handle_plain(now, path, remote, &bytes[range], wire_len);
        }
        // A data message: its header ends with the data packet's path and
        // path number, and its kind byte is the packet's first byte. Put
        // that byte before them, and the data packet is whole again.
        let start = DATA_MESSAGE_HEADER_LEN - crate::wire::DATA_HEADER_IN_MESSAGE;
        bytes[start] = bytes[0];
        let packet = &bytes[start..range.end];
        self.handle_messages(
            now,
            path,
            remote,
            packet[1],
            Inner::Data(packet),
            None,
            wire_len,
        )
    }

    fn slot_for(&self, index: u32) -> Option<Slot> {
        if self
            .keys
            .current
            .as_ref()
            .is_some_and(|k| k.local_index == index)
        {
            Some(Slot::Current)
        } else if self
            .keys
            .next
            .as_ref()
            .is_some_and(|k| k.local_index == index)
        {
            Some(Slot::Next)
        } else if self
            .keys
            .previous
            .as_ref()
            .is_some_and(|(k, _)| k.local_index == index)
        {
            Some(Slot::Previous)
        } else {
            None
        }
    }

    fn handle_plain(
        &mut self,
        now: Instant,
        hint: Option<u8>,
        remote: SocketAddr,
        plain: &[u8],
        wire_len: usize,
    ) -> Result<(), DropReason> {
        let (path, first, second) = frame::parse(plain).map_err(|_| DropReason::Malformed)?;
        self.handle_messages(now, hint, remote, path, first, second, wire_len)
    }

    /// One or two authenticated messages that came in one datagram of
    /// `wire_len` bytes saying it was sent on `path`.
    #[allow(clippy::too_many_arguments)]
    fn handle_messages(
        &mut self,
        now: Instant,
        hint: Option<u8>,
        remote: SocketAddr,
        path: u8,
        first: Inner<'_>,
        second: Option<Inner<'_>>,
        wire_len: usize,
    ) -> Result<(), DropReason> {
        if usize::from(path) >= self.paths.len() {
            return Err(DropReason::Malformed);
        }
        if hint.is_some_and(|h| h != path) {
            return Err(DropReason::WrongPath);
        }
        self.path_heard(now, path, remote, wire_len);
        let i = usize::from(path);
        let measured = self.sender.path(i).probe_rtt.is_some();
        if let Some(at) = self.paths[i].answered_at.take().filter(|_| !measured) {
            self.sender.set_probe_rtt(i, now - at);
        }
        self.handle_inner(now, path, first, wire_len)?;
        if let Some(second) = second {
            self.handle_inner(now, path, second, wire_len)?;
        }
        Ok(())
    }

    fn handle_inner(
        &mut self,
        now: Instant,
        path: u8,
        inner: Inner<'_>,
        wire_len: usize,
    ) -> Result<(), DropReason> {
        if matches!(inner, Inner::Data(_)) {
            self.last_data_at = Some(now);
        }
        match inner {
            Inner::Data(msg) | Inner::Skips(msg) => self
                .receiver
                .handle_datagram(now, path, msg)
                .map_err(|_| DropReason::Malformed),
            Inner::Feedback(msg) => self
                .sender
                .handle_feedback_on(now, msg, path)
                .map_err(|_| DropReason::Malformed),
            Inner::Probe(seq) => {
                if seq & PROBE_RETURN_SILENT != 0 {
                    self.receiver.return_silent(now, path, RETURN_SILENT_SPAN);
                }
                self.control_out.push_back(Control::Probe {
                    kind: frame::PROBE_ACK,
                    path,
                    seq,
                });
                Ok(())
            }
            Inner::Train(packet) => {
                let p = &mut self.paths[usize::from(path)];
                if let Some(report) = p.trains.on_packet(now, packet, wire_len) {
                    self.control_out
                        .push_back(Control::TrainReport { path, report });
                }
                Ok(())
            }
            Inner::TrainReport(report) => {
                let p = &mut self.paths[usize::from(path)];
                let ipv6 = p.remote.is_some_and(|r| r.is_ipv6());
                let ip_overhead = crate::wire::ip_udp_overhead(ipv6);
                let measured = p.trains.on_report(report, ip_overhead);
                self.sender
                    .set_train_failed(usize::from(path), p.trains.failed());
                if let Some(bps) = measured {
                    self.sender.seed_path_rate(usize::from(path), bps);
                    self.events.push_back(Event::PathMeasured {
                        path,
                        bps: bps as u64,
                    });
                }
                Ok(())
            }
            Inner::Stream(packet) => self.handle_stream_packet(now, path, packet),
            Inner::ProbeAck(seq) => {
                let p = &mut self.paths[usize::from(path)];
                if let Some((sent_seq, at)) = p.probe_sent {
                    if sent_seq == seq {
                        p.probe_sent = None;
                        self.sender.on_probe_answered(now, usize::from(path), at);
                    }
                }
                Ok(())
            }
        }
    }

    /// Something authenticated arrived on `path` from `remote`.
    fn path_heard(&mut self, now: Instant, path: u8, remote: SocketAddr, len: usize) {
        self.last_rx_any = Some(now);
        let p = &mut self.paths[usize::from(path)];
        p.last_rx = Some(now);
        p.rx_bytes += len as u64;
        p.rx_packets += 1;
        match p.remote {
            Some(old) if old != remote => {
                p.remote = Some(remote);
                self.events.push_back(Event::PathRebound {
                    path,
                    from: old,
                    to: remote,
                });
            }
            None => p.remote = Some(remote),
            _ => {}
        }
        // What was already on its way when the link went comes in, but
        // the path stays down until the owner says the link is back.
        if p.state != PathState::Up && !p.link_lost {
            p.state = PathState::Up;
            p.down_reason = None;
            self.events.push_back(Event::PathUp { path, remote });
            self.update_usable(now);
        }
    }

    /// Tells the sender which paths it may use: the up ones, and backups
    /// only while no primary or overflow path is up.
    fn update_usable(&mut self, now: Instant) {
        let mut main = PathSet::default();
        let mut backup = PathSet::default();
        for (i, p) in self.paths.iter().enumerate() {
            if p.state == PathState::Up {
                if p.role == PathRole::Backup {
                    backup.insert(i);
                } else {
                    main.insert(i);
                }
            }
        }
        let usable = if main.is_empty() { backup } else { main };
        if usable != self.sender.usable_paths() {
            self.sender.set_usable_paths(now, usable);
        }
    }

    /// The owner's word on a client path's link: `available = false` when
    /// its interface disappeared, went down or lost its address (the path
    /// goes down at once, [`PathDownReason::LinkLost`], instead of after
    /// [`PATH_DOWN_AFTER`] of silence, and is not probed); `true` when it
    /// is back (a probe goes out now, and the path is up when answered).
    /// Repeating the current state changes nothing; an unknown path is
    /// ignored.
    pub fn handle_link_change(&mut self, now: Instant, path: u8, available: bool) {
        self.last_now = now;
        let Some(p) = self.paths.get_mut(usize::from(path)) else {
            return;
        };
        if p.link_lost != available {
            return;
        }
        p.link_lost = !available;
        if available {
            p.probe_now = true;
            return;
        }
        p.probe_sent = None;
        if p.go_down(PathDownReason::LinkLost) {
            self.events.push_back(Event::PathDown {
                path,
                reason: PathDownReason::LinkLost,
            });
            self.update_usable(now);
        }
    }

    /// Writes the next datagram to send into `buf` (at least
    /// [`MAX_DATAGRAM_LEN`] bytes). Call until `None` after any input.
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<Transmit> {
        assert!(
            buf.len() >= MAX_DATAGRAM_LEN,
            "poll_transmit buffer too small"
        );
        self.last_now = now;
        if let Some((path, remote, msg)) = self.handshake_out.pop_front() {
            buf[..msg.len()].copy_from_slice(&msg);
            self.count_tx(path, msg.len());
            return Some(Transmit {
                path,
                remote,
                len: msg.len(),
            });
        }
        while let Some(t) = self.receiver.poll_transmit() {
            self.feedback_out.push_back(t);
        }
        if self.keys.current.is_none() {
            // Nothing can be sealed; whatever the streams produced is lost.
            while self.sender.poll_transmit().is_some() {}
            self.feedback_out.clear();
            self.control_out.clear();
            return None;
        }
        // The plaintext of a message as long as a full data message (a
        // full tunnel-MTU inner packet): a train packet's size, and the
        // most a bundle may take (larger, it would exceed the path MTU
        // and leave fragmented).
        let room = self.config.tunnel_mtu + SESSION_OVERHEAD - TRANSPORT_OVERHEAD;
        while let Some(c) = self.control_out.pop_front() {
            let body = &mut buf[TRANSPORT_HEADER_LEN..];
            let (path, len) = match c {
                Control::Probe { kind, path, seq } => {
                    (path, frame::emit_probe(kind, path, seq, body))
                }
                Control::Train { path, packet } => {
                    (path, frame::emit_train(path, packet, room, body))
                }
                Control::TrainReport { path, report } => {
                    (path, frame::emit_train_report(path, report, body))
                }
            };
            if let Some(t) = self.seal(path, buf, len) {
                return Some(t);
            }
        }
        if let Some(t) = self.poll_stream_transmit(now, buf) {
            return Some(t);
        }
        while let Some(t) = self.sender.poll_transmit() {
            self.last_data_at = Some(now);
            let body = &mut buf[TRANSPORT_HEADER_LEN..];
            let fb = self.feedback_out.iter().position(|f| {
                f.path == t.path
                    && frame::BUNDLE_HEADER_LEN + f.data.len() + t.data.len() <= room
                    && f.data.len() <= usize::from(u16::MAX)
            });
            let sealed = match fb {
                Some(i) => {
                    let f = self.feedback_out.remove(i).expect("position found it");
                    let len = frame::emit_bundle(t.path, &f.data, &t.data, body);
                    self.receiver.recycle(f.data);
                    self.seal(t.path, buf, len)
                }
                None if crate::wire::is_data_first_byte(t.data[0]) => self.seal_data(buf, &t.data),
                None => {
                    // Skip notices.
                    body[..t.data.len()].copy_from_slice(&t.data);
                    self.seal(t.path, buf, t.data.len())
                }
            };
            self.sender.recycle(t.data);
            if let Some(out) = sealed {
                return Some(out);
            }
        }
        while let Some(f) = self.feedback_out.pop_front() {
            let len = f.data.len();
            buf[TRANSPORT_HEADER_LEN..][..len].copy_from_slice(&f.data);
            self.receiver.recycle(f.data);
            if let Some(out) = self.seal(f.path, buf, len) {
                return Some(out);
            }
        }
        None
    }

    /// Seals the plaintext at `buf[TRANSPORT_HEADER_LEN..][..len]` for
    /// `path` as a message; `None` (and a drop counted) if it cannot leave.
    fn seal(&mut self, path: u8, buf: &mut [u8], len: usize) -> Option<Transmit> {
        let remote = self.destination(path)?;
        let sealed = self.keys.current.as_mut()?.seal(buf, len);
        self.sealed(path, remote, sealed)
    }

    /// Seals the bonding data packet `data` into `buf` as a data message:
    /// its first six bytes (first byte, path, path number) become the
    /// message's header, the rest its ciphertext.
    fn seal_data(&mut self, buf: &mut [u8], data: &[u8]) -> Option<Transmit> {
        let (head, body) = data.split_at(crate::wire::DATA_HEADER_IN_MESSAGE);
        let path = head[1];
        let remote = self.destination(path)?;
        let number = u32::from_be_bytes([head[2], head[3], head[4], head[5]]);
        buf[DATA_MESSAGE_HEADER_LEN..][..body.len()].copy_from_slice(body);
        let keys = self.keys.current.as_mut()?;
        let sealed = keys.seal_data(buf, head[0], path, number, body.len());
        self.sealed(path, remote, sealed)
    }

    /// Where a datagram for `path` goes; `None` (and a drop counted) if it
    /// cannot leave.
    fn destination(&mut self, path: u8) -> Option<SocketAddr> {
        let Some(p) = self.paths.get(usize::from(path)) else {
            self.drops.add(DropReason::NoRemote);
            return None;
        };
        if p.link_lost {
            self.drops.add(DropReason::LinkLost);
            return None;
        }
        let remote = p.remote;
        if remote.is_none() {
            self.drops.add(DropReason::NoRemote);
        }
        remote
    }

    fn sealed(
        &mut self,
        path: u8,
        remote: SocketAddr,
        sealed: Result<usize, TransportError>,
    ) -> Option<Transmit> {
        match sealed {
            Ok(n) => {
                self.count_tx(path, n);
                Some(Transmit {
                    path,
                    remote,
                    len: n,
                })
            }
            Err(e) => {
                self.drops.add(transport_drop(e));
                None
            }
        }
    }

    fn count_tx(&mut self, path: u8, len: usize) {
        if let Some(p) = self.paths.get_mut(usize::from(path)) {
            p.last_tx = Some(self.last_now);
            p.tx_bytes += len as u64;
            p.tx_packets += 1;
        }
    }

    /// Gives back what the buffer pools kept and did not use for a while:
    /// a session idle after a burst does not keep the burst's buffers.
    /// On every input, so an idle session's probes trim too.
    fn trim_buffers(&mut self, now: Instant) {
        self.sender.trim_buffers(now);
        self.receiver.trim_buffers(now);
    }

    /// The next inner packet from the peer, in order.
    pub fn poll_deliver(&mut self) -> Option<Delivery> {
        let d = self.receiver.poll_deliver()?;
        self.delivered += 1;
        self.reseq_delay_max = self.reseq_delay_max.max(d.held);
        self.reseq_delay_sum = self.reseq_delay_sum.saturating_add(d.held);
        Some(d)
    }

    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// When `handle_timeout` next has work.
    pub fn poll_timeout(&self) -> Option<Instant> {
        let mut t = [self.sender.poll_timeout(), self.receiver.poll_timeout()]
            .into_iter()
            .flatten()
            .min();
        let mut take = |x: Option<Instant>| {
            if let Some(x) = x {
                t = Some(t.map_or(x, |t| t.min(x)));
            }
        };
        for (i, p) in self.paths.iter().enumerate() {
            take(self.down_deadline(i));
            take(self.probe_due(i));
            take(self.train_due(i));
            take(p.trains.report_due());
            take(p.trains.expires_at());
        }
        take(self.handshake_due());
        take(self.stream.as_ref().and_then(|s| s.poll_timeout()));
        take(self.keys.previous.as_ref().map(|(_, until)| *until));
        // Never in the past: the caller would spin.
        t.map(|t| t.max(self.last_now))
    }

    /// When path `i` last showed it works for sending: something heard on
    /// it, or an acknowledgement of what it carried relayed on another
    /// path (see `Receiver::return_silent`).
    fn alive_at(&self, i: usize) -> Option<Instant> {
        self.paths[i]
            .last_rx
            .max(self.sender.path(i).relayed_ack_at())
    }

    /// Nothing heard on path `i` for half again its probes' round trip
    /// (and a probe interval at least) while data sent on it waits for
    /// acknowledgements: its return direction looks silent (see
    /// [`PROBE_RETURN_SILENT`]).
    fn return_silent(&self, i: usize, now: Instant) -> bool {
        let p = &self.paths[i];
        let probe_rtt = self.sender.path(i).probe_rtt;
        let quiet = (probe_rtt.unwrap_or(Duration::from_millis(100)) * 3 / 2)
            .max(self.config.probe_interval);
        p.last_rx.is_some_and(|t| now - t > quiet) && self.sender.path(i).awaits_acks(now)
    }

    fn down_deadline(&self, i: usize) -> Option<Instant> {
        (self.paths[i].state == PathState::Up)
            .then(|| self.alive_at(i).map(|t| t + self.down_after(i)))
            .flatten()
    }

    /// How long path `i` may be silent before it is marked down: the
    /// configured limit, or a probe interval plus 1.25 times the path's
    /// round trip where that is longer (see the module documentation).
    /// The round trip is the smoothed one of the path's data, else its
    /// last probe's: a server's, or a busy client path's, is the one
    /// sample its handshake gave, and a single slow one must not slow the
    /// path's failover for as long as the session lasts. A server
    /// that has answered a handshake on a path of unknown round trip
    /// waits for the client's next message as long as the client waits
    /// before it tries again.
    fn down_after(&self, i: usize) -> Duration {
        let p = &self.paths[i];
        let s = self.sender.path(i);
        let answered_within = match s.rtt.srtt().or(s.probe_rtt) {
            Some(rtt) => self.config.probe_interval + rtt * 5 / 4,
            None if p.answered_at.is_some() => self.config.handshake_retry,
            None => Duration::ZERO,
        };
        answered_within.max(self.config.path_down_after)
    }

    /// When a client next probes `p` (only with keys).
    fn probe_due(&self, i: usize) -> Option<Instant> {
        let p = &self.paths[i];
        if self.keys.current.is_none() || p.link_lost {
            return None;
        }
        let interval = self.config.probe_interval;
        if !matches!(self.role, Role::Client(_)) {
            // A server probes a path it hears on until one answer gives
            // it the path's round trip (see `PathView::probe_rtt`): the
            // client's probes keep the path alive, not the server's. And,
            // every [`QUIET_PATH_PROBE`], a path that has sent no data for
            // that long while some waits for its acknowledgement: the
            // answer may show it lost (see `PathSender::on_probe_answered`).
            let s = self.sender.path(i);
            let up = p.state == PathState::Up;
            let measuring = up && s.probe_rtt.is_none() && p.answered_at.is_none();
            let measuring = measuring.then(|| p.last_probe.map_or(self.last_now, |t| t + interval));
            let quiet = s.last_sent_awaiting_acks().filter(|_| up).map(|t| {
                let again = p.last_probe.map_or(Instant::ZERO, |t| t + QUIET_PATH_PROBE);
                (t + QUIET_PATH_PROBE).max(again)
            });
            return measuring.into_iter().chain(quiet).min();
        }
        if p.probe_now {
            return Some(self.last_now);
        }
        // Either direction silent for an interval: a path the scheduler
        // leaves idle still gets loss reports from the server, and a path
        // that only carries data still needs to hear back.
        let heard = p.last_rx.map_or(Instant::ZERO, |t| t + interval);
        let said = p.last_tx.map_or(Instant::ZERO, |t| t + interval);
        let after_probe = p.last_probe.map_or(Instant::ZERO, |t| t + interval);
        Some(heard.min(said).max(after_probe))
    }

    /// When path `i` next sends a packet train: only while it is up, its
    /// rate is still unknown (see `train.rs`), and the session has carried
    /// no data either way for [`TRAIN_AFTER_QUIET`] since its keys were
    /// made. A train overfills a short link queue for a moment: data that
    /// met it there was lost (one TCP flow starting with the session lost
    /// its first packets and waited a retransmission timeout, simulated).
    fn train_due(&self, i: usize) -> Option<Instant> {
        let p = &self.paths[i];
        let s = self.sender.path(i);
        let keys = self.keys.current.as_ref()?;
        let ready = self.config.path_trains
            && p.state == PathState::Up
            && !p.link_lost
            && self.stream.is_none()
            && s.rate_unmeasured()
            && s.bytes_in_flight() == 0
            && self.sender.queued_bytes() == 0;
        let quiet = self
            .last_data_at
            .map_or(keys.created, |t| t.max(keys.created));
        ready
            .then(|| p.trains.due())
            .flatten()
            .map(|t| t.max(quiet + TRAIN_AFTER_QUIET))
    }

    /// When a client next starts a handshake.
    fn handshake_due(&self) -> Option<Instant> {
        let Role::Client(client) = &self.role else {
            return None;
        };
        let retry = client
            .last_initiation
            .map_or(Instant::ZERO, |t| t + self.config.handshake_retry);
        if client.pending.is_some() {
            return Some(retry);
        }
        let Some(current) = &self.keys.current else {
            return Some(retry);
        };
        if client.roles_changed {
            return Some(retry);
        }
        let mut due = current.created + self.config.rekey_after;
        if current.sent() >= self.config.rekey_after_packets {
            due = Instant::ZERO;
        }
        if let Some(t) = self.last_rx_any {
            // Nothing heard anywhere: the server may have lost our keys.
            due = due.min(t + self.config.session_dead_after);
        }
        Some(due.max(retry))
    }

    pub fn handle_timeout(&mut self, now: Instant) {
        self.last_now = now;
        self.trim_buffers(now);
        self.sender.handle_timeout(now);
        self.receiver.handle_timeout(now);
        if let Some(stream) = &mut self.stream {
            stream.handle_timeout(now);
        }
        let mut changed = false;
        for i in 0..self.paths.len() {
            let silent = self.alive_at(i).map(|t| now - t);
            let limit = self.down_after(i);
            let p = &mut self.paths[i];
            if p.state == PathState::Up && silent.is_some_and(|s| s >= limit) {
                let reason = PathDownReason::Silent(silent.unwrap_or_default());
                p.go_down(reason);
                changed = true;
                self.events.push_back(Event::PathDown {
                    path: i as u8,
                    reason,
                });
            }
        }
        if changed {
            self.update_usable(now);
        }
        for i in 0..self.paths.len() {
            if self.probe_due(i).is_some_and(|t| t <= now) {
                let client = matches!(self.role, Role::Client(_));
                let flag = if client && self.return_silent(i, now) {
                    PROBE_RETURN_SILENT
                } else {
                    0
                };
                let p = &mut self.paths[i];
                p.probe_now = false;
                p.last_probe = Some(now);
                p.probe_seq = p.probe_seq.wrapping_add(1) & !PROBE_RETURN_SILENT;
                let seq = p.probe_seq | flag;
                if p.probe_sent
                    .is_none_or(|(_, at)| now - at >= PROBE_ANSWER_WAIT)
                {
                    p.probe_sent = Some((seq, now));
                }
                p.probes_sent += 1;
                self.control_out.push_back(Control::Probe {
                    kind: frame::PROBE,
                    path: i as u8,
                    seq,
                });
            }
            if let Some(report) = self.paths[i].trains.on_quiet(now) {
                self.control_out.push_back(Control::TrainReport {
                    path: i as u8,
                    report,
                });
            }
            if self.paths[i].trains.expire(now) {
                self.sender
                    .set_train_failed(i, self.paths[i].trains.failed());
            }
            if self.train_due(i).is_some_and(|t| t <= now) {
                let head = self.paths[i].trains.start(now);
                self.sender
                    .set_train_failed(i, self.paths[i].trains.failed());
                let path = i as u8;
                self.control_out
                    .extend((0..head.count).map(|index| Control::Train {
                        path,
                        packet: frame::TrainPacket { index, ..head },
                    }));
            }
        }
        if self
            .keys
            .previous
            .as_ref()
            .is_some_and(|(_, until)| *until <= now)
        {
            self.keys.previous = None;
        }
        if self.handshake_due().is_some_and(|t| t <= now) {
            self.initiate(now);
        }
    }

    /// Client: sends a new initiation on the next path in turn, preferring
    /// paths that are up.
    fn initiate(&mut self, now: Instant) {
        let n = self.paths.len();
        let local_index = self.rng.next_u32();
        let mut seed = [0u8; 32];
        self.rng.fill_bytes(&mut seed);
        let Role::Client(client) = &mut self.role else {
            return;
        };
        // Set first: whatever happens below, the next try waits a retry
        // interval (a due timer that is never cleared would spin).
        client.last_initiation = Some(now);
        client.roles_changed = false;
        let start = usize::from(client.next_handshake_path) % n;
        let in_turn = || (0..n).map(|k| (start + k) % n);
        let path = in_turn()
            .find(|&i| self.paths[i].state == PathState::Up)
            .or_else(|| in_turn().find(|&i| !self.paths[i].link_lost))
            .unwrap_or(start);
        client.next_handshake_path = ((path + 1) % n) as u8;
        let timestamp = self.config.wall_clock_at_epoch + now.since_epoch();
        let hello = Initiation {
            timestamp_ns: timestamp.as_nanos() as u64,
            instance: self.instance,
            path: path as u8,
            roles: self.paths.iter().map(|p| p.role).collect(),
            prices: hello::price_ranks(&self.paths.iter().map(|p| p.cost).collect::<Vec<_>>()),
        };
        let mut msg = vec![0u8; MAX_INITIATION_LEN];
        let started = Initiator::start(
            &client.local,
            &client.server,
            &client.psk,
            seed,
            local_index,
            &hello.encode(),
            &mut msg,
        );
        let (initiator, len) = match started {
            Ok(s) => s,
            Err(HandshakeError::PayloadTooLarge | HandshakeError::Length(_)) => {
                unreachable!("{MAX_SESSION_PATHS} roles fit the handshake payload")
            }
            Err(_) => return,
        };
        msg.truncate(len);
        client.pending = Some(Pending {
            initiator,
            path: path as u8,
            sent: now,
        });
        let remote = self.paths[path].remote.expect("client paths have a remote");
        self.handshake_out.push_back((path as u8, remote, msg));
    }

    /// A snapshot for `braid status`.
    pub fn stats(&self, now: Instant) -> SessionStats {
        let paths = self
            .paths
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let s = self.sender.path(i);
                PathStats {
                    name: p.name.clone(),
                    role: p.role,
                    state: p.state,
                    remote: p.remote,
                    rtt: s.rtt.srtt().or(s.probe_rtt),
                    min_rtt: s.rtt.min_rtt(),
                    queueing_delay: s.owd.queueing(now),
                    owd_floor_us: s.owd.has_samples().then(|| s.owd.floor_us(now)),
                    loss: s.loss.recent(),
                    cwnd_bytes: s.cc().cwnd_bytes(),
                    in_flight_bytes: s.bytes_in_flight(),
                    send_rate_bps: s.bandwidth_bps(),
                    train_rate_bps: p.trains.measured_bps(),
                    tx_bytes: p.tx_bytes,
                    rx_bytes: p.rx_bytes,
                    tx_packets: p.tx_packets,
                    rx_packets: p.rx_packets,
                    probes_sent: p.probes_sent,
                    times_down: p.times_down,
                    down_reason: (p.state == PathState::Down)
                        .then_some(p.down_reason)
                        .flatten(),
                    link_lost: p.link_lost,
                    silent_for: p.last_rx.map(|t| now - t),
                }
            })
            .collect();
        let c = &self.sender.counters;
        SessionStats {
            established: self.is_connected(),
            paths,
            handshakes: self.handshakes,
            rekeys: self.rekeys,
            reseq_held_packets: self.receiver.resequencer().held_packets(),
            reseq_held_bytes: self.receiver.resequencer().held_bytes(),
            reseq_delay_max: self.reseq_delay_max,
            reseq_delay_mean: if self.delivered == 0 {
                Duration::ZERO
            } else {
                Duration::from_secs_f64(self.reseq_delay_sum.as_secs_f64() / self.delivered as f64)
            },
            reseq_delivered_late: self.receiver.resequencer().counters.delivered_late,
            reseq_delivered_early: self.receiver.resequencer().counters.delivered_early,
            reseq_express_unordered: self.receiver.resequencer().counters.express_unordered,
            reseq_skipped: self.receiver.resequencer().counters.skipped,
            reseq_timeouts: self.receiver.resequencer().counters.timeouts,
            delivered: self.delivered,
            send_queue_bytes: self.sender.queued_bytes(),
            send_dropped: c.dropped_stale
                + c.rejected_queue_full
                + c.dropped_overflow
                + c.dropped_by_scheduler,
            send_reinjected: c.reinjected,
            send_reinjected_bytes: c.reinjected_bytes,
            send_resent: c.resent,
            send_resent_bytes: c.resent_bytes,
            send_resend_stale: c.resend_stale,
            send_reinject_stale: c.reinject_stale,
            send_overdue_copies: c.hedge_sent,
            send_express: c.sent_express,
            send_codel_dropped: c.dropped_codel,
            send_codel_marked: c.marked_codel,
            drops: self.drops.clone(),
        }
    }

    /// Receiver indices this session's keys answer to (for an endpoint's
    /// demultiplexer).
    fn local_indices(&self) -> impl Iterator<Item = u32> + '_ {
        self.keys
            .current
            .iter()
            .chain(self.keys.next.iter())
            .chain(self.keys.previous.iter().map(|(k, _)| k))
            .map(|k| k.local_index)
    }

    /// Server: installs the keys of an accepted initiation (for a new
    /// session, or a rekey from the same client instance).
    fn accept_handshake(
        &mut self,
        now: Instant,
        keys: TransportKeys,
        hello: &Initiation,
        remote: SocketAddr,
        len: usize,
    ) {
        if self.keys.current.is_none() {
            self.keys.current = Some(keys);
            self.start_stream(now);
        } else {
            self.keys.next = Some(keys);
            self.adopt_roles(now, &hello.roles);
        }
        self.handshakes += 1;
        self.path_heard(now, hello.path, remote, len);
        self.paths[usize::from(hello.path)].answered_at = Some(now);
    }

    /// Server: the roles of a rekey's initiation (the client changed a
    /// path's role, see [`Session::set_path_role`]). The endpoint keeps a
    /// session only when the path count is the same. A scheduler other
    /// than earliest-arrival ignores an overflow role here, as a new
    /// session with one would have been refused.
    fn adopt_roles(&mut self, now: Instant, roles: &[PathRole]) {
        let mut changed = false;
        for (i, (p, &role)) in self.paths.iter_mut().zip(roles).enumerate() {
            if p.role != role {
                p.role = role;
                self.sender.set_path_overflow(i, role == PathRole::Overflow);
                changed = true;
            }
        }
        if changed {
            self.update_usable(now);
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Current,
    Previous,
    Next,
}

fn transport_drop(e: TransportError) -> DropReason {
    match e {
        TransportError::Truncated(_) => DropReason::Truncated,
        TransportError::NotTransport => DropReason::UnknownType,
        TransportError::KeyExhausted => DropReason::KeyExhausted,
        TransportError::Replay(ReplayError::Replayed) => DropReason::Replayed,
        TransportError::Replay(ReplayError::TooOld | ReplayError::Exhausted) => DropReason::TooOld,
        TransportError::Open(_) => DropReason::Authentication,
        TransportError::BufferTooSmall => DropReason::Oversized,
        TransportError::PathOutOfRange(_) => DropReason::Malformed,
        // Only sealing says this: a bug in the sender's numbering, which
        // the key refuses rather than reuse a nonce.
        TransportError::NumberNotIncreasing => DropReason::NumberNotIncreasing,
    }
}
