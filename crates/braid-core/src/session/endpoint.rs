//! A server's demultiplexer: one UDP socket, many clients, one
//! [`Session`] per client.
//!
//! Nothing that fails to authenticate allocates state or gets a reply: an
//! initiation must pass mac1 (addressed to this server's key), the rate
//! limit, Noise (`es`, `ss`: the sender holds the private key of the static
//! key it claims), come from a configured client, and carry a timestamp
//! newer than that client's last one. Only then does the server keep
//! anything (one session per configured client, so state is bounded by the
//! configuration) and answer. Transport messages are routed by receiver
//! index; an unknown index is dropped and counted.

use std::collections::{HashMap, VecDeque};
use std::net::SocketAddr;

use rand_chacha::rand_core::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;

use super::{
    hello::{self, HelloError},
    DropCounters, DropReason, EndpointConfig, Event, Session, SessionSendError, Transmit,
    MAX_DATAGRAM_LEN,
};
use crate::crypto::handshake::{self, Responder, INITIATION_TYPE, MAX_RESPONSE_LEN, RESPONSE_TYPE};
use crate::crypto::{PresharedKey, PublicKey, TransportKeys};
use crate::reseq::Delivery;
use crate::time::Instant;

use super::config::ConfigError;

/// Where a drop was counted.
enum Dropped {
    Here(DropReason),
    InSession(DropReason),
}

/// A configured client, by its position in [`EndpointConfig::peers`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PeerId(pub usize);

#[derive(Debug)]
struct Peer {
    psk: PresharedKey,
    /// Timestamp of the newest initiation accepted from this client.
    last_timestamp: Option<u64>,
    session: Option<Session>,
    /// Receiver indices of `session`, as entered in the index map.
    indices: Vec<u32>,
    /// The other protocol version of an initiation refused, until the
    /// owner polls it as an event...
    refused_version: Option<u8>,
    /// ...and the version last reported so, until a handshake succeeds:
    /// a client retrying every second is reported once.
    reported_version: Option<u8>,
}

/// Endpoint-level counters (session-level ones are in each session's stats).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EndpointStats {
    pub sessions: usize,
    pub handshakes_accepted: u64,
    pub drops: DropCounters,
}

#[derive(Debug)]
pub struct Endpoint {
    config: EndpointConfig,
    rng: ChaCha20Rng,
    peers: Vec<Peer>,
    by_key: HashMap<PublicKey, usize>,
    by_index: HashMap<u32, usize>,
    responses: VecDeque<(PeerId, SocketAddr, Vec<u8>)>,
    tokens: f64,
    tokens_at: Instant,
    stats: EndpointStats,
    /// Where the round-robin over sessions resumes in `poll_*`.
    next_transmit: usize,
    next_deliver: usize,
    next_event: usize,
}

impl Endpoint {
    /// `rng_seed` seeds every random choice (ephemeral keys, indices).
    pub fn new(config: EndpointConfig, rng_seed: [u8; 32]) -> Result<Endpoint, ConfigError> {
        let mut by_key = HashMap::new();
        let mut peers = Vec::with_capacity(config.peers.len());
        for (i, p) in config.peers.iter().enumerate() {
            if by_key.insert(p.public_key, i).is_some() {
                return Err(ConfigError::DuplicatePeer(p.public_key));
            }
            peers.push(Peer {
                psk: p.psk.clone().unwrap_or(PresharedKey::ZERO),
                last_timestamp: None,
                session: None,
                indices: Vec::new(),
                refused_version: None,
                reported_version: None,
            });
        }
        super::check_config(&config.session, 1)?;
        Ok(Endpoint {
            tokens: f64::from(config.handshakes_per_second),
            config,
            rng: ChaCha20Rng::from_seed(rng_seed),
            peers,
            by_key,
            by_index: HashMap::new(),
            responses: VecDeque::new(),
            tokens_at: Instant::ZERO,
            stats: EndpointStats::default(),
            next_transmit: 0,
            next_deliver: 0,
            next_event: 0,
        })
    }

    /// A datagram from `remote`, decrypted in place. Returns the client it
    /// belonged to, if it authenticated as one.
    pub fn handle_datagram(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        bytes: &mut [u8],
    ) -> Result<PeerId, DropReason> {
        match self.dispatch(now, remote, bytes) {
            Ok(peer) => Ok(peer),
            Err(Dropped::Here(reason)) => {
                self.stats.drops.add(reason);
                Err(reason)
            }
            // The session counted it.
            Err(Dropped::InSession(reason)) => Err(reason),
        }
    }

    fn dispatch(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        bytes: &mut [u8],
    ) -> Result<PeerId, Dropped> {
        if bytes.len() > MAX_DATAGRAM_LEN {
            return Err(Dropped::Here(DropReason::Oversized));
        }
        match bytes.first() {
            None => Err(Dropped::Here(DropReason::Truncated)),
            Some(&INITIATION_TYPE) => self
                .handle_initiation(now, remote, bytes)
                .map_err(Dropped::Here),
            Some(&RESPONSE_TYPE) => Err(Dropped::Here(DropReason::Unexpected)),
            // A message, a data message, or unknown (`receiver_index`
            // tells them apart, as in the session's own dispatch).
            Some(_) => {
                let index = crate::crypto::receiver_index(bytes)
                    .map_err(|e| Dropped::Here(super::transport_drop(e)))?;
                let &peer = self
                    .by_index
                    .get(&index)
                    .ok_or(Dropped::Here(DropReason::UnknownIndex))?;
                let session = self.peers[peer]
                    .session
                    .as_mut()
                    .expect("indexed peers have a session");
                let result = session.handle_datagram(now, None, remote, bytes);
                self.sync_indices(peer);
                result.map(|()| PeerId(peer)).map_err(Dropped::InSession)
            }
        }
    }

    /// Takes a handshake token if one is left.
    fn take_token(&mut self, now: Instant) -> bool {
        let rate = f64::from(self.config.handshakes_per_second);
        let elapsed = (now - self.tokens_at).as_secs_f64();
        self.tokens = (self.tokens + elapsed * rate).min(rate);
        self.tokens_at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }

    fn handle_initiation(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        bytes: &[u8],
    ) -> Result<PeerId, DropReason> {
        handshake::check_initiation(&self.config.local.public, bytes)
            .map_err(|_| DropReason::HandshakeInvalid)?;
        if !self.take_token(now) {
            return Err(DropReason::RateLimited);
        }
        let mut seed = [0u8; 32];
        self.rng.fill_bytes(&mut seed);
        let responder = Responder::read(&self.config.local, seed, bytes)
            .map_err(|_| DropReason::HandshakeInvalid)?;
        let &peer = self
            .by_key
            .get(&responder.peer)
            .ok_or(DropReason::UnknownPeer)?;
        let hello = match hello::Initiation::decode(responder.payload()) {
            Ok(hello) => hello,
            Err(HelloError::Protocol(version)) => {
                return Err(self.refuse_protocol(peer, remote, responder, version))
            }
            Err(HelloError::Malformed) => return Err(DropReason::HandshakeInvalid),
        };
        if self.peers[peer]
            .last_timestamp
            .is_some_and(|t| hello.timestamp_ns <= t)
        {
            return Err(DropReason::HandshakeReplayed);
        }
        let same_instance = self.peers[peer].session.as_ref().is_some_and(|s| {
            s.peer_instance == Some(hello.instance) && s.paths.len() == hello.roles.len()
        });
        let mut session = if same_instance {
            self.peers[peer].session.take().expect("checked above")
        } else {
            let mut seed = [0u8; 32];
            self.rng.fill_bytes(&mut seed);
            Session::server(&self.config.session, seed, &hello)
                .map_err(|_| DropReason::HandshakeInvalid)?
        };
        let local_index = self.fresh_index();
        let initiator_index = responder.initiator_index;
        let mut out = vec![0u8; MAX_RESPONSE_LEN];
        let responded = responder.respond(
            &self.peers[peer].psk,
            local_index,
            &hello::encode_response(session.instance),
            &mut out,
        );
        let (split, len) = match responded {
            Ok(r) => r,
            Err(_) => {
                if same_instance {
                    self.peers[peer].session = Some(session);
                }
                return Err(DropReason::HandshakeInvalid);
            }
        };
        out.truncate(len);
        let keys = TransportKeys::new(&split.send, &split.recv, local_index, initiator_index, now);
        let first = !same_instance;
        session.accept_handshake(now, keys, &hello, remote, bytes.len());
        if first {
            session.events.push_front(Event::Connected {
                peer_restarted: self.peers[peer].session.is_some(),
            });
        }
        self.peers[peer].last_timestamp = Some(hello.timestamp_ns);
        self.peers[peer].reported_version = None;
        self.peers[peer].session = Some(session);
        self.stats.handshakes_accepted += 1;
        self.sync_indices(peer);
        self.responses.push_back((PeerId(peer), remote, out));
        Ok(PeerId(peer))
    }

    /// Answers an authenticated initiation of another protocol version
    /// with a response naming ours, so that the client can say why it
    /// cannot connect, and keeps nothing of it: the keys the response
    /// makes are dropped, and a session the client has stays as it was.
    fn refuse_protocol(
        &mut self,
        peer: usize,
        remote: SocketAddr,
        responder: Responder,
        version: u8,
    ) -> DropReason {
        let mut out = vec![0u8; MAX_RESPONSE_LEN];
        let index = self.fresh_index();
        let response = hello::encode_response(0);
        if let Ok((_, len)) = responder.respond(&self.peers[peer].psk, index, &response, &mut out) {
            out.truncate(len);
            self.responses.push_back((PeerId(peer), remote, out));
        }
        let p = &mut self.peers[peer];
        if p.reported_version != Some(version) {
            p.refused_version = Some(version);
            p.reported_version = Some(version);
        }
        DropReason::ProtocolMismatch
    }

    /// A receiver index no session uses (never 0 at random, though 0 would
    /// work too).
    fn fresh_index(&mut self) -> u32 {
        loop {
            let i = self.rng.next_u32();
            if !self.by_index.contains_key(&i) {
                return i;
            }
        }
    }

    /// Re-enters a peer's receiver indices after its keys changed.
    fn sync_indices(&mut self, peer: usize) {
        let p = &mut self.peers[peer];
        for i in p.indices.drain(..) {
            self.by_index.remove(&i);
        }
        if let Some(s) = &p.session {
            p.indices.extend(s.local_indices());
        }
        for &i in &p.indices {
            self.by_index.insert(i, peer);
        }
    }

    /// Offers an inner packet of flow 0 for client `peer`.
    pub fn send(
        &mut self,
        now: Instant,
        peer: PeerId,
        packet: Vec<u8>,
    ) -> Result<(), SessionSendError> {
        self.send_flow(now, peer, 0, packet)
    }

    /// Offers an inner packet of flow `flow` for client `peer` (see
    /// [`Session::send_flow`]).
    pub fn send_flow(
        &mut self,
        now: Instant,
        peer: PeerId,
        flow: u64,
        packet: Vec<u8>,
    ) -> Result<(), SessionSendError> {
        match self.peers.get_mut(peer.0).and_then(|p| p.session.as_mut()) {
            Some(s) => s.send_flow(now, flow, packet),
            None => Err(SessionSendError::NotConnected),
        }
    }

    /// Offers an inner packet for client `peer`, copied into a buffer its
    /// session reuses (see [`Session::send_flow_from`]).
    pub fn send_flow_from(
        &mut self,
        now: Instant,
        peer: PeerId,
        flow: u64,
        packet: &[u8],
    ) -> Result<(), SessionSendError> {
        match self.peers.get_mut(peer.0).and_then(|p| p.session.as_mut()) {
            Some(s) => s.send_flow_from(now, flow, packet),
            None => Err(SessionSendError::NotConnected),
        }
    }

    /// Gives back a payload delivered from client `peer` (see
    /// [`Session::recycle`]); freed if that client has no session now.
    pub fn recycle(&mut self, peer: PeerId, payload: Vec<u8>) {
        if let Some(s) = self.peers.get_mut(peer.0).and_then(|p| p.session.as_mut()) {
            s.recycle(payload);
        }
    }

    /// Writes the next datagram into `buf` (at least [`MAX_DATAGRAM_LEN`]).
    pub fn poll_transmit(&mut self, now: Instant, buf: &mut [u8]) -> Option<(PeerId, Transmit)> {
        if let Some((peer, remote, msg)) = self.responses.pop_front() {
            buf[..msg.len()].copy_from_slice(&msg);
            // Path unknown here: the client reads it from its socket.
            let path = 0;
            return Some((
                peer,
                Transmit {
                    path,
                    remote,
                    len: msg.len(),
                },
            ));
        }
        let n = self.peers.len();
        for k in 0..n {
            let i = (self.next_transmit + k) % n;
            if let Some(t) = self.peers[i]
                .session
                .as_mut()
                .and_then(|s| s.poll_transmit(now, buf))
            {
                self.next_transmit = (i + 1) % n;
                return Some((PeerId(i), t));
            }
        }
        None
    }

    /// The next inner packet from any client.
    pub fn poll_deliver(&mut self) -> Option<(PeerId, Delivery)> {
        let n = self.peers.len();
        for k in 0..n {
            let i = (self.next_deliver + k) % n;
            if let Some(d) = self.peers[i]
                .session
                .as_mut()
                .and_then(Session::poll_deliver)
            {
                self.next_deliver = (i + 1) % n;
                return Some((PeerId(i), d));
            }
        }
        None
    }

    pub fn poll_event(&mut self) -> Option<(PeerId, Event)> {
        if let Some(i) = self.peers.iter().position(|p| p.refused_version.is_some()) {
            let peer_version = self.peers[i].refused_version.take().expect("found above");
            return Some((PeerId(i), Event::ProtocolMismatch { peer_version }));
        }
        let n = self.peers.len();
        for k in 0..n {
            let i = (self.next_event + k) % n;
            if let Some(e) = self.peers[i].session.as_mut().and_then(Session::poll_event) {
                self.next_event = i;
                return Some((PeerId(i), e));
            }
        }
        None
    }

    pub fn poll_timeout(&self) -> Option<Instant> {
        self.peers
            .iter()
            .filter_map(|p| p.session.as_ref().and_then(Session::poll_timeout))
            .min()
    }

    pub fn handle_timeout(&mut self, now: Instant) {
        for i in 0..self.peers.len() {
            if let Some(s) = self.peers[i].session.as_mut() {
                if s.poll_timeout().is_some_and(|t| t <= now) {
                    s.handle_timeout(now);
                    self.sync_indices(i);
                }
            }
        }
    }

    /// A client's session, if it has one.
    pub fn session(&self, peer: PeerId) -> Option<&Session> {
        self.peers.get(peer.0).and_then(|p| p.session.as_ref())
    }

    /// A client's session, to use its stream connection.
    pub fn session_mut(&mut self, peer: PeerId) -> Option<&mut Session> {
        self.peers.get_mut(peer.0).and_then(|p| p.session.as_mut())
    }

    /// The client with this public key.
    pub fn peer_id(&self, key: &PublicKey) -> Option<PeerId> {
        self.by_key.get(key).copied().map(PeerId)
    }

    pub fn stats(&self) -> EndpointStats {
        EndpointStats {
            sessions: self.peers.iter().filter(|p| p.session.is_some()).count(),
            ..self.stats.clone()
        }
    }
}
