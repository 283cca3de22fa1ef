//! What a session reports to its owner (`poll_event`).

use std::net::SocketAddr;
use std::time::Duration;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The first handshake completed, or one after the peer restarted
    /// (its stream state was reset).
    Connected {
        peer_restarted: bool,
    },
    /// Keys were replaced by a new handshake; nothing was reset.
    Rekeyed,
    /// A path answered (first time, or again after being down).
    PathUp {
        path: u8,
        remote: SocketAddr,
    },
    PathDown {
        path: u8,
        reason: PathDownReason,
    },
    /// A packet train measured the path's rate in this end's sending
    /// direction, IP bits per second; the path's estimates start from it.
    PathMeasured {
        path: u8,
        bps: u64,
    },
    /// The peer speaks another version of braid's protocol than
    /// [`PROTOCOL_VERSION`](super::PROTOCOL_VERSION), so no session can
    /// be made with it. Each end reports a version once until a handshake
    /// succeeds (a server per client); a client goes on trying every
    /// `handshake_retry` (the server may be upgraded meanwhile).
    ProtocolMismatch {
        peer_version: u8,
    },
    /// The peer's address on a path changed (NAT rebinding); adopted
    /// because the packet from the new address authenticated.
    PathRebound {
        path: u8,
        from: SocketAddr,
        to: SocketAddr,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathDownReason {
    /// Nothing authenticated arrived on the path for this long.
    Silent(Duration),
    /// The session's keys were lost (handshake pending after the peer
    /// stopped answering everywhere, or the peer restarted).
    SessionReset,
    /// The owner said the path's link is gone ([`Session::handle_link_change`]):
    /// its interface disappeared, went down or lost its address.
    ///
    /// [`Session::handle_link_change`]: super::Session::handle_link_change
    LinkLost,
}
