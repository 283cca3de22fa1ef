//! One session's traffic keys and the two messages they protect:
//!
//! ```text
//! message  type=3 (1) | receiver_index (4) | counter, low 32 bits (4) | ciphertext | tag (16)
//! data     kind (1)   | receiver_index (4) | path (1) | path number, low 32 bits (4) | ciphertext | tag (16)
//! ```
//!
//! A message carries anything the session says (probes, feedback, trains,
//! stream packets, bundles); its counter is a 64-bit nonce of which only
//! the low 32 bits travel, and the receiver widens them to the value
//! nearest the next one it expects (as QUIC decodes packet numbers, RFC
//! 9000 appendix A.3). That is exact as long as packets are reordered by
//! less than 2^31, far more than the replay window admits.
//!
//! A data message carries one bonding data packet, whose own per-path
//! number is its nonce: the packet already numbers itself on its path, so
//! a second counter would cost four bytes on every packet of the bulk
//! flow. Its kind byte is the data packet's first byte (version, type and
//! flags, [`crate::wire::is_data_first_byte`]); path and path number are
//! the data packet's next five bytes. They travel in clear and are
//! authenticated, with the receiver index, as associated data. Each path
//! has its own replay window. Nonces stay unique because a key seals each
//! path's numbers in increasing order ([`TransportKeys::seal_data`]
//! refuses anything else) and far fewer than 2^32 of them
//! ([`REJECT_AFTER_MESSAGES`]).

use super::aead::{DataKey, OpenError, PacketNonce, TAG_LEN};
use super::replay::{ReplayError, ReplayWindow};
use super::KEY_LEN;
use crate::time::Instant;
use crate::wire::is_data_first_byte;

/// First byte of a transport message.
pub const TRANSPORT_TYPE: u8 = 3;
/// Bytes before the ciphertext.
pub const TRANSPORT_HEADER_LEN: usize = 9;
/// Bytes a transport message adds to its plaintext.
pub const TRANSPORT_OVERHEAD: usize = TRANSPORT_HEADER_LEN + TAG_LEN;
/// Bytes before a data message's ciphertext.
pub const DATA_MESSAGE_HEADER_LEN: usize = 10;
/// Bytes a data message adds to the data packet's body (what follows its
/// path number).
pub const DATA_MESSAGE_OVERHEAD: usize = DATA_MESSAGE_HEADER_LEN + TAG_LEN;
/// Most paths a data message may name (`path` below this).
pub const MAX_DATA_PATHS: usize = 16;
/// How far past the last path number sealed under a key the next may lie:
/// far more than a sender skips, far fewer than would wrap 32 bits.
const MAX_NUMBER_STEP: u32 = 1 << 24;

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
    #[error("data message names path {0}")]
    PathOutOfRange(u8),
    #[error("path number not above the last one sealed on its path")]
    NumberNotIncreasing,
}

/// Reads a transport or data message's receiver index (which session it
/// is for).
pub fn receiver_index(packet: &[u8]) -> Result<u32, TransportError> {
    let least = match packet.first() {
        Some(&TRANSPORT_TYPE) => TRANSPORT_OVERHEAD,
        Some(&first) if is_data_first_byte(first) => DATA_MESSAGE_OVERHEAD,
        Some(_) => return Err(TransportError::NotTransport),
        None => return Err(TransportError::Truncated(0)),
    };
    if packet.len() < least {
        return Err(TransportError::Truncated(packet.len()));
    }
    Ok(u32::from_be_bytes([
        packet[1], packet[2], packet[3], packet[4],
    ]))
}

/// The path numbers one key has sealed on one path: the first, and how
/// far past it the last one lies.
#[derive(Debug, Clone, Copy)]
struct SealedNumbers {
    first: u32,
    last_step: u32,
}

/// Keys for both directions of one handshake, the send counters and the
/// receive replay windows.
#[derive(Debug)]
pub struct TransportKeys {
    send: DataKey,
    recv: DataKey,
    /// The next message counter.
    next_send: u64,
    /// Messages and data messages sealed.
    sealed: u64,
    data_sealed: [Option<SealedNumbers>; MAX_DATA_PATHS],
    replay: ReplayWindow,
    /// One per path that has had a data message authenticated, grown on
    /// the first (so forged packets allocate nothing).
    data_replay: Vec<ReplayWindow>,
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
            sealed: 0,
            data_sealed: [None; MAX_DATA_PATHS],
            replay: ReplayWindow::default(),
            data_replay: Vec::new(),
            local_index,
            remote_index,
            created,
        }
    }

    /// Messages and data messages sealed so far.
    pub fn sent(&self) -> u64 {
        self.sealed
    }

    /// Messages received so far (one past the newest counter).
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
        if self.sealed >= REJECT_AFTER_MESSAGES {
            return Err(TransportError::KeyExhausted);
        }
        let counter = self.next_send;
        self.next_send += 1;
        self.sealed += 1;
        let (header, body) = buf.split_at_mut(TRANSPORT_HEADER_LEN);
        header[0] = TRANSPORT_TYPE;
        header[1..5].copy_from_slice(&self.remote_index.to_be_bytes());
        header[5..9].copy_from_slice(&(counter as u32).to_be_bytes());
        self.send
            .seal(PacketNonce::message(counter), header, body, plain_len);
        Ok(total)
    }

    /// Seals a data message: the body at `buf[DATA_MESSAGE_HEADER_LEN..]
    /// [..body_len]`, under the header `kind`, `path`, `number` (a data
    /// packet's first byte, path and path number's low 32 bits); returns
    /// the message length. `buf` must hold `body_len +
    /// DATA_MESSAGE_OVERHEAD`. Each path's numbers must rise from one call
    /// to the next (by less than 2^24), or the nonce could repeat: anything
    /// else is refused.
    pub fn seal_data(
        &mut self,
        buf: &mut [u8],
        kind: u8,
        path: u8,
        number: u32,
        body_len: usize,
    ) -> Result<usize, TransportError> {
        let total = body_len + DATA_MESSAGE_OVERHEAD;
        if buf.len() < total {
            return Err(TransportError::BufferTooSmall);
        }
        if !is_data_first_byte(kind) {
            return Err(TransportError::NotTransport);
        }
        let slot = self
            .data_sealed
            .get_mut(usize::from(path))
            .ok_or(TransportError::PathOutOfRange(path))?;
        if self.sealed >= REJECT_AFTER_MESSAGES {
            return Err(TransportError::KeyExhausted);
        }
        *slot = Some(match *slot {
            None => SealedNumbers {
                first: number,
                last_step: 0,
            },
            Some(s) => {
                let step = number.wrapping_sub(s.first);
                let rise = step.wrapping_sub(s.last_step);
                if step <= s.last_step || rise > MAX_NUMBER_STEP {
                    return Err(TransportError::NumberNotIncreasing);
                }
                SealedNumbers {
                    first: s.first,
                    last_step: step,
                }
            }
        });
        self.sealed += 1;
        let (header, body) = buf.split_at_mut(DATA_MESSAGE_HEADER_LEN);
        header[0] = kind;
        header[1..5].copy_from_slice(&self.remote_index.to_be_bytes());
        header[5] = path;
        header[6..10].copy_from_slice(&number.to_be_bytes());
        self.send
            .seal(PacketNonce::data(path, number), header, body, body_len);
        Ok(total)
    }

    /// Authenticates and decrypts a transport message in place; returns the
    /// plaintext's range in `packet`. The replay window moves only for a
    /// packet that authenticated.
    pub fn open(&mut self, packet: &mut [u8]) -> Result<std::ops::Range<usize>, TransportError> {
        receiver_index(packet)?;
        if packet[0] != TRANSPORT_TYPE {
            return self.open_data(packet);
        }
        let truncated = u32::from_be_bytes([packet[5], packet[6], packet[7], packet[8]]);
        let counter = crate::wire::widen(truncated, self.replay.next_expected());
        if counter >= REJECT_AFTER_MESSAGES {
            return Err(TransportError::KeyExhausted);
        }
        self.replay.check(counter)?;
        let (header, body) = packet.split_at_mut(TRANSPORT_HEADER_LEN);
        let len = self
            .recv
            .open(PacketNonce::message(counter), header, body)?;
        self.replay.accept(counter)?;
        Ok(TRANSPORT_HEADER_LEN..TRANSPORT_HEADER_LEN + len)
    }

    /// [`Self::open`] for a data message (already checked for its length).
    fn open_data(&mut self, packet: &mut [u8]) -> Result<std::ops::Range<usize>, TransportError> {
        let path = packet[5];
        if usize::from(path) >= MAX_DATA_PATHS {
            return Err(TransportError::PathOutOfRange(path));
        }
        let number = u32::from_be_bytes([packet[6], packet[7], packet[8], packet[9]]);
        let window = self.data_replay.get(usize::from(path));
        let expected = window.map_or(0, ReplayWindow::next_expected);
        let widened = crate::wire::widen(number, expected);
        if let Some(w) = window {
            w.check(widened)?;
        }
        let (header, body) = packet.split_at_mut(DATA_MESSAGE_HEADER_LEN);
        let len = self
            .recv
            .open(PacketNonce::data(path, number), header, body)?;
        if self.data_replay.len() <= usize::from(path) {
            self.data_replay
                .resize_with(usize::from(path) + 1, ReplayWindow::default);
        }
        self.data_replay[usize::from(path)].accept(widened)?;
        Ok(DATA_MESSAGE_HEADER_LEN..DATA_MESSAGE_HEADER_LEN + len)
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
        a.sealed = REJECT_AFTER_MESSAGES - 1;
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

    const DATA_KIND: u8 = 0x31;

    fn seal_data(keys: &mut TransportKeys, path: u8, number: u32, body: &[u8]) -> Vec<u8> {
        let mut buf = vec![0u8; body.len() + DATA_MESSAGE_OVERHEAD];
        buf[DATA_MESSAGE_HEADER_LEN..][..body.len()].copy_from_slice(body);
        let n = keys
            .seal_data(&mut buf, DATA_KIND, path, number, body.len())
            .unwrap();
        buf.truncate(n);
        buf
    }

    #[test]
    fn data_messages_round_trip_with_their_header_in_clear() {
        let (mut a, mut b) = pair();
        let mut p = seal_data(&mut a, 3, 0x0102_0304, b"body");
        assert_eq!(p.len(), 4 + DATA_MESSAGE_OVERHEAD);
        assert_eq!(&p[..10], &[DATA_KIND, 0, 0, 0, 20, 3, 1, 2, 3, 4]);
        assert_eq!(receiver_index(&p), Ok(20));
        let range = b.open(&mut p).unwrap();
        assert_eq!(range, DATA_MESSAGE_HEADER_LEN..DATA_MESSAGE_HEADER_LEN + 4);
        assert_eq!(&p[range], b"body");
        // Data messages count against the key; messages keep their own
        // counter, from 0.
        assert_eq!(a.sent(), 1);
        let m = seal(&mut a, b"m");
        assert_eq!(&m[5..9], &[0, 0, 0, 0]);
        assert_eq!(a.sent(), 2);
        assert_eq!(b.received(), 0);
    }

    #[test]
    fn each_path_has_its_own_replay_window() {
        let (mut a, mut b) = pair();
        let p0 = seal_data(&mut a, 0, 5, b"x");
        let p1 = seal_data(&mut a, 1, 5, b"y");
        b.open(&mut p1.clone()).unwrap();
        // The same number on another path is another packet.
        b.open(&mut p0.clone()).unwrap();
        for p in [&p0, &p1] {
            assert_eq!(
                b.open(&mut p.clone()),
                Err(TransportError::Replay(ReplayError::Replayed))
            );
        }
        // Far ahead on path 0 leaves path 1's window alone.
        let ahead = seal_data(&mut a, 0, 5 + 10_000, b"z");
        b.open(&mut ahead.clone()).unwrap();
        let p1_next = seal_data(&mut a, 1, 6, b"w");
        b.open(&mut p1_next.clone()).unwrap();
        assert_eq!(
            b.open(&mut p0.clone()),
            Err(TransportError::Replay(ReplayError::TooOld))
        );
    }

    #[test]
    fn a_data_messages_header_is_authenticated() {
        let (mut a, mut b) = pair();
        let good = seal_data(&mut a, 2, 9, b"payload");
        // Another kind (flags), path or number: none opens.
        for (at, bit) in [(0, 0x08), (5, 1), (9, 1)] {
            let mut bad = good.clone();
            bad[at] ^= bit;
            assert_eq!(
                b.open(&mut bad),
                Err(TransportError::Open(OpenError::Authentication)),
                "byte {at}"
            );
        }
        // Read as a message (type 3; on path 0 its counter reads as 0),
        // it is another nonce and another header: refused.
        let mut as_message = seal_data(&mut a, 0, 9, b"payload");
        as_message[0] = TRANSPORT_TYPE;
        assert_eq!(
            b.open(&mut as_message),
            Err(TransportError::Open(OpenError::Authentication))
        );
        // A path no session has: refused before the AEAD, nothing kept.
        let mut far = good.clone();
        far[5] = MAX_DATA_PATHS as u8;
        assert_eq!(
            b.open(&mut far),
            Err(TransportError::PathOutOfRange(MAX_DATA_PATHS as u8))
        );
        assert!(b.data_replay.is_empty(), "forgeries allocated windows");
        b.open(&mut good.clone()).unwrap();
        assert_eq!(b.data_replay.len(), 3);
        assert_eq!(
            b.open(&mut good[..DATA_MESSAGE_OVERHEAD - 1].to_vec()),
            Err(TransportError::Truncated(DATA_MESSAGE_OVERHEAD - 1))
        );
    }

    #[test]
    fn sealing_refuses_a_path_number_that_could_repeat_a_nonce() {
        let (mut a, _) = pair();
        let mut buf = vec![0u8; 64];
        let mut seal_n =
            |a: &mut TransportKeys, path: u8, n: u32| a.seal_data(&mut buf, DATA_KIND, path, n, 8);
        assert!(seal_n(&mut a, 0, u32::MAX - 1).is_ok());
        // Rising, across the 32-bit wrap, with gaps.
        assert!(seal_n(&mut a, 0, u32::MAX).is_ok());
        assert!(seal_n(&mut a, 0, 3).is_ok());
        // Again, lower, or so far ahead it could come round: refused.
        for n in [3, 2, u32::MAX - 1, 3 + (1 << 24) + 1] {
            assert_eq!(
                seal_n(&mut a, 0, n),
                Err(TransportError::NumberNotIncreasing),
                "{n}"
            );
        }
        assert!(seal_n(&mut a, 0, 3 + (1 << 24)).is_ok());
        // Other paths number on their own.
        assert!(seal_n(&mut a, 1, 3).is_ok());
        assert_eq!(
            seal_n(&mut a, MAX_DATA_PATHS as u8, 0),
            Err(TransportError::PathOutOfRange(MAX_DATA_PATHS as u8))
        );
        let mut other = vec![0u8; 64];
        assert_eq!(
            a.seal_data(&mut other, TRANSPORT_TYPE, 0, 1 << 30, 8),
            Err(TransportError::NotTransport)
        );
        assert_eq!(a.sent(), 5, "refusals seal nothing");
        a.sealed = REJECT_AFTER_MESSAGES;
        assert_eq!(seal_n(&mut a, 1, 4), Err(TransportError::KeyExhausted));
    }

    #[test]
    fn a_paths_numbers_widen_across_32_bits() {
        let (mut a, mut b) = pair();
        for n in [u32::MAX - 1, u32::MAX, 0, 1] {
            let mut p = seal_data(&mut a, 0, n, b"n");
            b.open(&mut p).unwrap();
        }
        assert_eq!(b.data_replay[0].next_expected(), (1 << 32) + 2);
    }
}
