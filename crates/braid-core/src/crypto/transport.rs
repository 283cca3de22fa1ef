//! One session's traffic keys and the transport (data) message they
//! protect:
//!
//! ```text
//! type=3 (1) | receiver_index (4) | counter, low 32 bits (4) | ciphertext | tag (16)
//! ```
//!
//! The 9-byte header is authenticated as associated data. The counter is a
//! 64-bit nonce; only its low 32 bits travel, and the receiver widens them
//! to the value nearest the next one it expects (as QUIC decodes packet
//! numbers, RFC 9000 appendix A.3). That is exact as long as packets are
//! reordered by less than 2^31, far more than the replay window admits.

use super::aead::{DataKey, OpenError, TAG_LEN};
use super::replay::{ReplayError, ReplayWindow};
use super::KEY_LEN;
use crate::time::Instant;

/// First byte of a transport message.
pub const TRANSPORT_TYPE: u8 = 3;
/// Bytes before the ciphertext.
pub const TRANSPORT_HEADER_LEN: usize = 9;
/// Bytes a transport message adds to its plaintext.
pub const TRANSPORT_OVERHEAD: usize = TRANSPORT_HEADER_LEN + TAG_LEN;

/// Packets one key may protect: the AES-GCM confidentiality limit of
/// RFC 9001 section 6.6 (2^23). The session rekeys well before.
pub const REJECT_AFTER_MESSAGES: u64 = 1 << 23;

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum TransportError {
    #[error("transport message truncated ({0} bytes)")]
    Truncated(usize),
    #[error("not a transport message")]
    NotTransport,
    #[error("key used for its maximum number of packets")]
    KeyExhausted,
    #[error("replay: {0}")]
    Replay(#[from] ReplayError),
    #[error("{0}")]
    Open(#[from] OpenError),
    #[error("output buffer too small")]
    BufferTooSmall,
}

/// Reads a transport message's receiver index (which session it is for).
pub fn receiver_index(packet: &[u8]) -> Result<u32, TransportError> {
    if packet.len() < TRANSPORT_OVERHEAD {
        return Err(TransportError::Truncated(packet.len()));
    }
    if packet[0] != TRANSPORT_TYPE {
        return Err(TransportError::NotTransport);
    }
    Ok(u32::from_be_bytes([
        packet[1], packet[2], packet[3], packet[4],
    ]))
}

/// Keys for both directions of one handshake, the send counter and the
/// receive replay window.
#[derive(Debug)]
pub struct TransportKeys {
    send: DataKey,
    recv: DataKey,
    next_send: u64,
    replay: ReplayWindow,
    /// Index the peer puts on packets for us.
    pub local_index: u32,
    /// Index we put on packets for the peer.
    pub remote_index: u32,
    /// When the handshake completed.
    pub created: Instant,
}

impl TransportKeys {
    pub fn new(
        send: &[u8; KEY_LEN],
        recv: &[u8; KEY_LEN],
        local_index: u32,
        remote_index: u32,
        created: Instant,
    ) -> TransportKeys {
        TransportKeys {
            send: DataKey::new(send),
            recv: DataKey::new(recv),
            next_send: 0,
            replay: ReplayWindow::default(),
            local_index,
            remote_index,
            created,
        }
    }

    /// Packets sealed so far.
    pub fn sent(&self) -> u64 {
        self.next_send
    }

    /// Packets received so far (one past the newest counter).
    pub fn received(&self) -> u64 {
        self.replay.next_expected()
    }

    /// Seals the plaintext at `buf[TRANSPORT_HEADER_LEN..][..plain_len]`,
    /// writing the header before it and the tag after it; returns the
    /// message length. `buf` must hold `plain_len + TRANSPORT_OVERHEAD`.
    pub fn seal(&mut self, buf: &mut [u8], plain_len: usize) -> Result<usize, TransportError> {
        let total = plain_len + TRANSPORT_OVERHEAD;
        if buf.len() < total {
            return Err(TransportError::BufferTooSmall);
        }
        if self.next_send >= REJECT_AFTER_MESSAGES {
            return Err(TransportError::KeyExhausted);
        }
        let counter = self.next_send;
        self.next_send += 1;
        let (header, body) = buf.split_at_mut(TRANSPORT_HEADER_LEN);
        header[0] = TRANSPORT_TYPE;
        header[1..5].copy_from_slice(&self.remote_index.to_be_bytes());
        header[5..9].copy_from_slice(&(counter as u32).to_be_bytes());
        self.send.seal(counter, header, body, plain_len);
        Ok(total)
    }

    /// Authenticates and decrypts a transport message in place; returns the
    /// plaintext's range in `packet`. The replay window moves only for a
    /// packet that authenticated.
    pub fn open(&mut self, packet: &mut [u8]) -> Result<std::ops::Range<usize>, TransportError> {
        receiver_index(packet)?;
        let truncated = u32::from_be_bytes([packet[5], packet[6], packet[7], packet[8]]);
        let counter = crate::wire::widen(truncated, self.replay.next_expected());
        if counter >= REJECT_AFTER_MESSAGES {
            return Err(TransportError::KeyExhausted);
        }
        self.replay.check(counter)?;
        let (header, body) = packet.split_at_mut(TRANSPORT_HEADER_LEN);
        let len = self.recv.open(counter, header, body)?;
        self.replay.accept(counter)?;
        Ok(TRANSPORT_HEADER_LEN..TRANSPORT_HEADER_LEN + len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pair() -> (TransportKeys, TransportKeys) {
        let a = TransportKeys::new(&[1; 32], &[2; 32], 10, 20, Instant::ZERO);
        let b = TransportKeys::new(&[2; 32], &[1; 32], 20, 10, Instant::ZERO);
        (a, b)
    }

    fn seal(keys: &mut TransportKeys, msg: &[u8]) -> Vec<u8> {
        let mut buf = vec![0u8; msg.len() + TRANSPORT_OVERHEAD];
        buf[TRANSPORT_HEADER_LEN..][..msg.len()].copy_from_slice(msg);
        let n = keys.seal(&mut buf, msg.len()).unwrap();
        buf.truncate(n);
        buf
    }

    #[test]
    fn round_trip_and_header() {
        let (mut a, mut b) = pair();
        let mut p = seal(&mut a, b"payload");
        assert_eq!(p.len(), 7 + TRANSPORT_OVERHEAD);
        assert_eq!(p[0], TRANSPORT_TYPE);
        assert_eq!(receiver_index(&p), Ok(20));
        let range = b.open(&mut p).unwrap();
        assert_eq!(&p[range], b"payload");
        assert_eq!(a.sent(), 1);
        assert_eq!(b.received(), 1);
    }

    #[test]
    fn replayed_and_forged_are_rejected_without_moving_the_window() {
        let (mut a, mut b) = pair();
        let p = seal(&mut a, b"x");
        b.open(&mut p.clone()).unwrap();
        assert_eq!(
            b.open(&mut p.clone()),
            Err(TransportError::Replay(ReplayError::Replayed))
        );
        // A forged counter far ahead fails authentication and leaves the
        // window where it was.
        let mut forged = seal(&mut a, b"y");
        forged[5..9].copy_from_slice(&1_000_000u32.to_be_bytes());
        assert_eq!(
            b.open(&mut forged),
            Err(TransportError::Open(OpenError::Authentication))
        );
        assert_eq!(b.received(), 1);
        // Flipping the index (authenticated header) fails too.
        let mut moved = seal(&mut a, b"z");
        moved[1] ^= 0x80;
        assert_eq!(
            b.open(&mut moved),
            Err(TransportError::Open(OpenError::Authentication))
        );
    }

    #[test]
    fn truncated_and_wrong_type() {
        let (mut a, mut b) = pair();
        let p = seal(&mut a, b"");
        assert_eq!(p.len(), TRANSPORT_OVERHEAD);
        b.open(&mut p.clone()).unwrap();
        assert_eq!(
            b.open(&mut p[..TRANSPORT_OVERHEAD - 1].to_vec()),
            Err(TransportError::Truncated(TRANSPORT_OVERHEAD - 1))
        );
        let mut other = p.clone();
        other[0] = 1;
        assert_eq!(b.open(&mut other), Err(TransportError::NotTransport));
    }

    #[test]
    fn send_counter_exhaustion() {
        let (mut a, mut b) = pair();
        a.next_send = REJECT_AFTER_MESSAGES - 1;
        let mut last = seal(&mut a, b"last");
        let mut buf = vec![0u8; 64];
        assert_eq!(a.seal(&mut buf, 4), Err(TransportError::KeyExhausted));
        assert_eq!(a.sent(), REJECT_AFTER_MESSAGES);
        // The receiver widens the counter correctly far from zero.
        b.replay.accept(REJECT_AFTER_MESSAGES - 100).unwrap();
        let range = b.open(&mut last).unwrap();
        assert_eq!(&last[range], b"last");
    }

    #[test]
    fn receive_counter_at_limit_is_refused() {
        let (_, mut b) = pair();
        b.replay.accept(REJECT_AFTER_MESSAGES - 1).unwrap();
        let mut p = vec![0u8; TRANSPORT_OVERHEAD];
        p[0] = TRANSPORT_TYPE;
        p[5..9].copy_from_slice(&(REJECT_AFTER_MESSAGES as u32).to_be_bytes());
        assert_eq!(b.open(&mut p), Err(TransportError::KeyExhausted));
    }

    #[test]
    fn received_counts_one_past_the_newest_counter() {
        let (mut a, mut b) = pair();
        let packets: Vec<_> = (0..5).map(|_| seal(&mut a, b"p")).collect();
        // Out of order: the count follows the newest counter, not arrivals.
        for i in [0, 3, 1] {
            b.open(&mut packets[i].clone()).unwrap();
        }
        assert_eq!(b.received(), 4);
        b.open(&mut packets[4].clone()).unwrap();
        assert_eq!(b.received(), 5);
    }

    #[test]
    fn debug_output_never_shows_key_material() {
        let (a, _) = pair();
        let text = format!("{a:?}");
        assert!(text.contains("send: DataKey(..)"), "{text}");
        assert!(text.contains("ReplayWindow { next: 0 }"), "{text}");
    }
}
