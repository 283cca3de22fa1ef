//! The reliable stream as the session's second payload kind (issue 10:
//! "not a second protocol"). With [`super::SessionConfig::stream`] set,
//! each end's session holds one [`Connection`] over the session's paths
//! (stream path `i` is session path `i`), created when the first keys are
//! installed and created afresh when the peer restarts (the owner sees
//! `Event::Connected { peer_restarted: true }` and must treat streams it
//! had as failed). Its packets travel as `STREAM` frames
//! (`frame.rs`), sealed by the session's AEAD like datagrams; they bypass
//! the bonding sender, since the connection has its own congestion control
//! per path and its own reliability.

use super::frame::{self, STREAM_HEADER_LEN};
use super::{DropReason, Session, Transmit};
use crate::crypto::{TRANSPORT_HEADER_LEN, TRANSPORT_OVERHEAD};
use crate::stream::Connection;
use crate::time::Instant;

/// Bytes a session adds around each stream packet inside the UDP payload:
/// the kind and path bytes (2) and the transport header and tag (9 + 16).
pub const STREAM_OVERHEAD: usize = STREAM_HEADER_LEN + TRANSPORT_OVERHEAD;

impl Session {
    /// The session's stream connection, once keys are established (and
    /// only when configured).
    pub fn stream(&self) -> Option<&Connection> {
        self.stream.as_ref()
    }

    pub fn stream_mut(&mut self) -> Option<&mut Connection> {
        self.stream.as_mut()
    }

    /// A fresh stream connection, if the configuration asks for one.
    pub(super) fn start_stream(&mut self, now: Instant) {
        let Some(config) = &self.config.stream else {
            return;
        };
        let mut config = config.clone();
        config.carrier_overhead = STREAM_OVERHEAD;
        let ccs = vec![self.config.cc; self.paths.len()];
        self.stream = Some(Connection::new(config, &ccs, now));
    }

    /// A stream packet that authenticated on `path`. What the connection
    /// makes of it (including malformed packets) it counts itself.
    pub(super) fn handle_stream_packet(
        &mut self,
        now: Instant,
        path: u8,
        packet: &[u8],
    ) -> Result<(), DropReason> {
        let stream = self.stream.as_mut().ok_or(DropReason::Unexpected)?;
        // An error here is the connection's own business (counted, or the
        // connection failed and its owner reads `error()`).
        let _ = stream.handle_packet(now, path, packet);
        Ok(())
    }

    /// The next stream packet, sealed into `buf`.
    pub(super) fn poll_stream_transmit(
        &mut self,
        now: Instant,
        buf: &mut [u8],
    ) -> Option<Transmit> {
        loop {
            let t = self.stream.as_mut()?.poll_transmit(now)?;
            let body = &mut buf[TRANSPORT_HEADER_LEN..];
            let len = STREAM_HEADER_LEN + t.data.len();
            if len > body.len() - crate::crypto::TAG_LEN {
                // Cannot happen with the connection's segment sizes; never panic.
                self.drops.add(DropReason::Oversized);
                continue;
            }
            frame::emit_stream_header(t.path, body);
            body[STREAM_HEADER_LEN..len].copy_from_slice(&t.data);
            if let Some(out) = self.seal(t.path, buf, len) {
                return Some(out);
            }
        }
    }
}
