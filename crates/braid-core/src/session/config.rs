//! What a session needs to know: keys, paths with their roles, timers.

use std::net::SocketAddr;
use std::time::Duration;

use crate::cc::CcKind;
use crate::crypto::{
    PresharedKey, PublicKey, StaticKeypair, DATA_MESSAGE_OVERHEAD, MAX_DATA_PATHS,
};
use crate::reseq::ReseqConfig;
use crate::sched;
use crate::wire::{DATA_HEADER_IN_MESSAGE, DATA_HEADER_LEN};

/// Most paths one session may have (the handshake carries the list).
pub const MAX_SESSION_PATHS: usize = MAX_DATA_PATHS;

/// Bytes a session adds to each inner packet inside the UDP payload: a
/// data message's header and tag (10 + 16) and the rest of the bonding
/// data header (18 - 6) in its ciphertext: 38.
pub const SESSION_OVERHEAD: usize =
    DATA_MESSAGE_OVERHEAD + DATA_HEADER_LEN - DATA_HEADER_IN_MESSAGE;

/// Smallest and largest tunnel MTU a session takes: IPv4's minimum
/// datagram, and the largest datagram the bonding sender carries.
pub const MIN_TUNNEL_MTU: usize = 576;
pub const MAX_TUNNEL_MTU: usize = crate::sender::MAX_DATAGRAM;

/// Largest inner packet that fits a path MTU of `path_mtu` bytes, with the
/// outer IPv4 (20) or IPv6 (40) and UDP (8) headers.
pub const fn tunnel_mtu(path_mtu: usize, ipv6_paths: bool) -> usize {
    let ip_udp = crate::wire::ip_udp_overhead(ipv6_paths);
    path_mtu.saturating_sub(ip_udp + SESSION_OVERHEAD)
}

/// How a path is used (paper multipath-bonding-layer3's fixed-line-first
/// policy). The session enforces `Backup`; the scheduler `Overflow`
/// (earliest-arrival; the others refuse it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum PathRole {
    #[default]
    Primary,
    /// Carries what the primary paths cannot.
    Overflow,
    /// Carries data only while no primary or overflow path is up.
    Backup,
}

impl PathRole {
    /// As configs and `braid status` spell it.
    pub fn name(self) -> &'static str {
        match self {
            PathRole::Primary => "primary",
            PathRole::Overflow => "overflow",
            PathRole::Backup => "backup",
        }
    }
    pub(crate) fn to_wire(self) -> u8 {
        match self {
            PathRole::Primary => 0,
            PathRole::Overflow => 1,
            PathRole::Backup => 2,
        }
    }
    pub(crate) fn from_wire(b: u8) -> Option<PathRole> {
        match b {
            0 => Some(PathRole::Primary),
            1 => Some(PathRole::Overflow),
            2 => Some(PathRole::Backup),
            _ => None,
        }
    }
}

/// One path of a client.
#[derive(Debug, Clone, PartialEq)]
pub struct PathConfig {
    pub name: String,
    pub role: PathRole,
    /// BATCP cost weight (see [`crate::sched::PathInfo`]).
    pub cost: f64,
    /// Where the client sends this path's packets (the server's address).
    pub remote: SocketAddr,
    /// Never send faster than this on the path, bits per second: a limit
    /// on the client's direction (what it sends), below the link's rate.
    pub rate_limit_bps: Option<u64>,
}

/// Timers and limits shared by both ends.
#[derive(Debug, Clone)]
pub struct SessionConfig {
    /// `NAME[:key=value,...]`, see [`sched::build`].
    pub scheduler: String,
    pub cc: CcKind,
    pub reseq: ReseqConfig,
    pub max_queue_bytes: usize,
    /// Re-send what the paths lose (`SenderConfig::resend_losses`).
    pub resend_losses: bool,
    /// The inner packets are IP packets (a tunnel): the send queue's CoDel
    /// marks ECN-capable ones Congestion Experienced instead of dropping
    /// them (`FqConfig::mark_ecn`). Off for anything else (a stream).
    pub mark_ecn: bool,
    /// Largest inner packet [`super::Session::send`] accepts.
    pub tunnel_mtu: usize,
    /// Measure each path's rate with a packet train when it comes up with
    /// no rate known (see `session::train`): 32 full-size packets each
    /// way, once per path, and not in a session with a stream (whose
    /// paths measure themselves). Off, a fresh tunnel's slower paths find
    /// their rates from the traffic, more slowly.
    pub path_trains: bool,
    /// A client probes a path that has been silent this long (and at most
    /// once per interval). See [`super::PROBE_INTERVAL`] for the choice.
    pub probe_interval: Duration,
    /// A path silent this long is marked down (or silent for a probe
    /// interval plus 1.25 times its round trip, where that is longer).
    pub path_down_after: Duration,
    /// The client starts a new handshake when all paths have been silent
    /// this long (the server may have restarted).
    pub session_dead_after: Duration,
    /// A handshake without a response is retried after this long.
    pub handshake_retry: Duration,
    /// Keys older than this are replaced by a new handshake.
    pub rekey_after: Duration,
    /// ...and so are keys that have protected this many packets.
    pub rekey_after_packets: u64,
    /// Replaced keys still decrypt for this long (packets in flight).
    pub old_keys_kept: Duration,
    /// Wall-clock time (since the Unix epoch) at `Instant::ZERO`: makes
    /// handshake timestamps increase across client restarts, which is how
    /// a server refuses replayed initiations.
    pub wall_clock_at_epoch: Duration,
    /// A reliable stream connection inside the session (both ends must
    /// set it): see `stream_carrier.rs`. `carrier_overhead` is set by the
    /// session.
    pub stream: Option<crate::stream::Config>,
}

impl Default for SessionConfig {
    fn default() -> SessionConfig {
        SessionConfig {
            scheduler: sched::DEFAULT.to_owned(),
            cc: CcKind::Bbr,
            reseq: ReseqConfig::default(),
            max_queue_bytes: 8 << 20,
            resend_losses: false,
            mark_ecn: false,
            tunnel_mtu: tunnel_mtu(1500, true),
            path_trains: true,
            probe_interval: super::PROBE_INTERVAL,
            path_down_after: super::PATH_DOWN_AFTER,
            session_dead_after: Duration::from_millis(500),
            handshake_retry: Duration::from_secs(1),
            rekey_after: Duration::from_secs(120),
            rekey_after_packets: 1 << 22,
            old_keys_kept: Duration::from_secs(10),
            wall_clock_at_epoch: Duration::ZERO,
            stream: None,
        }
    }
}

/// A client: its identity, the server's, and its paths.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    pub local: StaticKeypair,
    pub server: PublicKey,
    pub psk: Option<PresharedKey>,
    pub paths: Vec<PathConfig>,
    pub session: SessionConfig,
}

/// A client the server accepts.
#[derive(Debug, Clone)]
pub struct PeerConfig {
    pub public_key: PublicKey,
    pub psk: Option<PresharedKey>,
}

/// A server: its identity, the clients it accepts, and limits.
#[derive(Debug, Clone)]
pub struct EndpointConfig {
    pub local: StaticKeypair,
    pub peers: Vec<PeerConfig>,
    pub session: SessionConfig,
    /// Handshake initiations processed per second, over all clients (a
    /// token bucket with this burst); the rest are dropped unread.
    pub handshakes_per_second: u32,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    #[error("no paths")]
    NoPaths,
    #[error("too many paths: {0} (at most {MAX_SESSION_PATHS})")]
    TooManyPaths(usize),
    #[error("scheduler: {0}")]
    Scheduler(String),
    #[error("peer {} listed twice", .0.to_base64())]
    DuplicatePeer(PublicKey),
    #[error("tunnel MTU {0} is outside {MIN_TUNNEL_MTU}..={MAX_TUNNEL_MTU}")]
    TunnelMtu(usize),
}
