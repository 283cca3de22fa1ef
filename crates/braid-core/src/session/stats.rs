//! Counters and snapshots for `braid status`.

use std::net::SocketAddr;
use std::time::Duration;

use super::config::PathRole;
use super::event::PathDownReason;

/// Why a datagram was dropped. Every drop is counted under one reason.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// Shorter than any message of its type.
    Truncated,
    /// Longer than anything a peer sends.
    Oversized,
    /// First byte names no message type.
    UnknownType,
    /// A transport message for a receiver index nobody holds.
    UnknownIndex,
    /// Did not authenticate.
    Authentication,
    /// Counter already seen.
    Replayed,
    /// Counter behind the replay window.
    TooOld,
    /// Counter at the key's limit.
    KeyExhausted,
    /// Authenticated, but its content does not parse.
    Malformed,
    /// Authenticated, but names another path than the one it came in on.
    WrongPath,
    /// Handshake message malformed, or not for this key (mac1), or its
    /// Noise part did not authenticate.
    HandshakeInvalid,
    /// Initiation from a static key the server does not know.
    UnknownPeer,
    /// Initiation with a timestamp not newer than the last accepted one.
    HandshakeReplayed,
    /// Initiation over the handshake rate limit.
    RateLimited,
    /// Handshake of another protocol version (answered, at a server, with
    /// its own version; see [`super::Event::ProtocolMismatch`]).
    ProtocolMismatch,
    /// A message the receiving side does not expect (an initiation at a
    /// client, a response with no handshake pending).
    Unexpected,
    /// An inner packet to send when no keys are established.
    NotConnected,
    /// No address known yet for the path a packet must leave on.
    NoRemote,
    /// A packet for a path whose link is gone (feedback for what arrived
    /// on it before).
    LinkLost,
    /// A data packet whose path number is not above the last one sealed
    /// on its path under the current key (a numbering bug; sealing it
    /// could reuse a nonce).
    NumberNotIncreasing,
}

impl DropReason {
    pub const ALL: [DropReason; 20] = [
        DropReason::Truncated,
        DropReason::Oversized,
        DropReason::UnknownType,
        DropReason::UnknownIndex,
        DropReason::Authentication,
        DropReason::Replayed,
        DropReason::TooOld,
        DropReason::KeyExhausted,
        DropReason::Malformed,
        DropReason::WrongPath,
        DropReason::HandshakeInvalid,
        DropReason::UnknownPeer,
        DropReason::HandshakeReplayed,
        DropReason::RateLimited,
        DropReason::ProtocolMismatch,
        DropReason::Unexpected,
        DropReason::NotConnected,
        DropReason::NoRemote,
        DropReason::LinkLost,
        DropReason::NumberNotIncreasing,
    ];

    /// A stable snake_case name (for JSON and metrics).
    pub fn name(self) -> &'static str {
        match self {
            DropReason::Truncated => "truncated",
            DropReason::Oversized => "oversized",
            DropReason::UnknownType => "unknown_type",
            DropReason::UnknownIndex => "unknown_index",
            DropReason::Authentication => "authentication",
            DropReason::Replayed => "replayed",
            DropReason::TooOld => "too_old",
            DropReason::KeyExhausted => "key_exhausted",
            DropReason::Malformed => "malformed",
            DropReason::WrongPath => "wrong_path",
            DropReason::HandshakeInvalid => "handshake_invalid",
            DropReason::UnknownPeer => "unknown_peer",
            DropReason::HandshakeReplayed => "handshake_replayed",
            DropReason::RateLimited => "rate_limited",
            DropReason::ProtocolMismatch => "protocol_mismatch",
            DropReason::Unexpected => "unexpected",
            DropReason::NotConnected => "not_connected",
            DropReason::NoRemote => "no_remote",
            DropReason::LinkLost => "link_lost",
            DropReason::NumberNotIncreasing => "number_not_increasing",
        }
    }

    fn slot(self) -> usize {
        DropReason::ALL
            .iter()
            .position(|&r| r == self)
            .expect("every reason is in ALL")
    }
}

/// Drops counted by reason.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DropCounters([u64; DropReason::ALL.len()]);

impl DropCounters {
    pub fn count(&self, reason: DropReason) -> u64 {
        self.0[reason.slot()]
    }
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }
    pub fn iter(&self) -> impl Iterator<Item = (DropReason, u64)> + '_ {
        DropReason::ALL.iter().map(|&r| (r, self.count(r)))
    }
    /// Adds another set of counters to these (an endpoint's and its
    /// sessions', say).
    pub fn merge(&mut self, other: &DropCounters) {
        for (a, b) in self.0.iter_mut().zip(other.0.iter()) {
            *a = a.saturating_add(*b);
        }
    }
    pub(crate) fn add(&mut self, reason: DropReason) {
        let c = &mut self.0[reason.slot()];
        *c = c.saturating_add(1);
    }
}

/// A path's state as the session sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PathState {
    /// Nothing authenticated received on it yet.
    Unvalidated,
    Up,
    Down,
}

impl PathState {
    pub fn name(self) -> &'static str {
        match self {
            PathState::Unvalidated => "unvalidated",
            PathState::Up => "up",
            PathState::Down => "down",
        }
    }
}

/// One path, for `braid status`.
#[derive(Debug, Clone, PartialEq)]
pub struct PathStats {
    pub name: String,
    pub role: PathRole,
    pub state: PathState,
    /// The peer's address on this path (learned, on a server).
    pub remote: Option<SocketAddr>,
    /// Smoothed RTT from data acknowledgements, else from probes.
    pub rtt: Option<Duration>,
    pub min_rtt: Option<Duration>,
    /// Smoothed one-way delay above the path's floor (its queue).
    pub queueing_delay: Duration,
    /// Relative one-way delay floor, µs (comparable across paths only).
    pub owd_floor_us: Option<f64>,
    /// Recent loss rate of data sent on the path (0..1).
    pub loss: f64,
    pub cwnd_bytes: u64,
    pub in_flight_bytes: u64,
    /// Congestion controller's rate estimate.
    pub send_rate_bps: Option<f64>,
    /// The rate a packet train measured when the path came up (this
    /// end's sending direction), IP bits per second.
    pub train_rate_bps: Option<f64>,
    /// UDP payload bytes and datagrams, everything the session sent or
    /// accepted (authenticated) on the path.
    pub tx_bytes: u64,
    pub rx_bytes: u64,
    pub tx_packets: u64,
    pub rx_packets: u64,
    pub probes_sent: u64,
    pub times_down: u64,
    /// Why the path is down (`None` unless it is).
    pub down_reason: Option<PathDownReason>,
    /// The owner reported the path's link gone
    /// ([`Session::handle_link_change`](super::Session::handle_link_change)).
    pub link_lost: bool,
    /// Time since something authenticated arrived on the path.
    pub silent_for: Option<Duration>,
}

/// A whole session, for `braid status`.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionStats {
    pub established: bool,
    pub paths: Vec<PathStats>,
    pub handshakes: u64,
    pub rekeys: u64,
    /// Inner packets the resequencer holds, and their bytes.
    pub reseq_held_packets: usize,
    pub reseq_held_bytes: usize,
    /// Resequencing delay of delivered packets: largest seen and mean.
    pub reseq_delay_max: Duration,
    pub reseq_delay_mean: Duration,
    /// Packets delivered out of order: they arrived after the resequencer
    /// had given up on their number (a hole timeout or a bound).
    pub reseq_delivered_late: u64,
    /// Packets delivered ahead of global order, in order for their flow
    /// (their flow's previous packet had gone; other flows' holes remain).
    pub reseq_delivered_early: u64,
    /// Express packets delivered before their flow's previous packet (the
    /// sender's guess that the previous one had landed was wrong).
    pub reseq_express_unordered: u64,
    /// Numbers the resequencer skipped: known lost, or given up on.
    pub reseq_skipped: u64,
    /// Times the resequencer's hole timer ran out (each gives up on the
    /// hole at the head of the line, or on all of them at the third).
    pub reseq_timeouts: u64,
    pub delivered: u64,
    pub send_queue_bytes: usize,
    /// Inner packets dropped in the send queue: stale, refused, pushed out
    /// of a full queue (from its longest flow), or no path could take them.
    pub send_dropped: u64,
    /// Inner packets a path had in flight when it went down, sent again on
    /// another path, and their bytes.
    pub send_reinjected: u64,
    pub send_reinjected_bytes: u64,
    /// Inner packets a live path lost, sent again (`resend_losses`), and
    /// their bytes.
    pub send_resent: u64,
    pub send_resent_bytes: u64,
    /// Lost inner packets not sent again because they had waited past the
    /// queue delay limit (the receiver is told to skip them).
    pub send_resend_stale: u64,
    /// Inner packets a path had in flight when it went silent, too old to
    /// send again: the receiver is told to skip them, though a path in a
    /// fade may still deliver them (then late, out of order).
    pub send_reinject_stale: u64,
    /// Inner packets still in flight on a minor path that the receiver
    /// waited for, copied onto a quicker path (see `Sender::hedge_overdue`).
    pub send_overdue_copies: u64,
    /// Inner packets the send queue's CoDel dropped (a sojourn time above
    /// its target for an interval): the inner flows' congestion signal.
    /// Not in `send_dropped`, and unknown to the peer (they had no number).
    pub send_codel_dropped: u64,
    /// ECN-capable inner packets CoDel marked Congestion Experienced
    /// instead of dropping them (`SessionConfig::mark_ecn`).
    pub send_codel_marked: u64,
    /// Sparse flows' datagrams sent ahead of lower numbers (express).
    pub send_express: u64,
    pub drops: DropCounters,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Status JSON and metrics key on these names: each is distinct and
    /// snake_case, and none changes by accident.
    #[test]
    fn names_are_distinct_snake_case_and_stable() {
        let mut names: Vec<&str> = DropReason::ALL.iter().map(|r| r.name()).collect();
        assert_eq!(names[..3], ["truncated", "oversized", "unknown_type"]);
        assert_eq!(DropReason::LinkLost.name(), "link_lost");
        names.extend([PathState::Unvalidated, PathState::Up, PathState::Down].map(PathState::name));
        assert_eq!(names[names.len() - 3..], ["unvalidated", "up", "down"]);
        for n in &names {
            assert!(!n.is_empty() && n.chars().all(|c| c.is_ascii_lowercase() || c == '_'));
        }
        let mut unique = names.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), names.len());
    }

    #[test]
    fn counters_list_every_reason_and_merge_by_reason() {
        let mut a = DropCounters::default();
        a.add(DropReason::Replayed);
        a.add(DropReason::Replayed);
        let mut b = DropCounters::default();
        b.add(DropReason::Replayed);
        b.add(DropReason::LinkLost);
        a.merge(&b);
        let listed: Vec<(DropReason, u64)> = a.iter().collect();
        assert_eq!(listed.len(), DropReason::ALL.len());
        assert!(listed.contains(&(DropReason::Replayed, 3)));
        assert!(listed.contains(&(DropReason::LinkLost, 1)));
        assert_eq!(listed.iter().map(|(_, n)| n).sum::<u64>(), 4);
        assert_eq!(a.total(), 4);
    }
}
