//! The data-plane AEAD: AES-256-GCM (aws-lc-rs) keyed per direction. A
//! key protects two kinds of message, each with its own nonce space
//! ([`PacketNonce`]): session messages numbered by one 64-bit counter, and
//! bonding data numbered per path. A key never sees a nonce twice as long
//! as neither numbering repeats (see [`super::TransportKeys`]).

use aws_lc_rs::aead::{Aad, LessSafeKey, Nonce, UnboundKey, AES_256_GCM, NONCE_LEN};

use super::KEY_LEN;

/// Bytes the AEAD adds to every packet.
pub const TAG_LEN: usize = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum OpenError {
    #[error("authentication failed")]
    Authentication,
    #[error("ciphertext shorter than the tag")]
    Truncated,
}

/// One direction's key.
pub struct DataKey(LessSafeKey);

impl std::fmt::Debug for DataKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DataKey(..)")
    }
}

/// A message's nonce. The first byte separates the two spaces, so a
/// session message's counter and a data packet's path number never give
/// the same nonce:
///
/// ```text
/// session message  0x00 0x00 0x00 0x00 counter(8)
/// bonding data     0x01 path 0x00 0x00 0x00 0x00 0x00 0x00 path_number(4)
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PacketNonce([u8; NONCE_LEN]);

impl PacketNonce {
    pub fn message(counter: u64) -> PacketNonce {
        let mut n = [0u8; NONCE_LEN];
        n[4..].copy_from_slice(&counter.to_be_bytes());
        PacketNonce(n)
    }

    pub fn data(path: u8, number: u32) -> PacketNonce {
        let mut n = [0u8; NONCE_LEN];
        n[0] = 1;
        n[1] = path;
        n[8..].copy_from_slice(&number.to_be_bytes());
        PacketNonce(n)
    }

    fn get(self) -> Nonce {
        Nonce::assume_unique_for_key(self.0)
    }
}

impl DataKey {
    pub fn new(key: &[u8; KEY_LEN]) -> DataKey {
        let unbound = UnboundKey::new(&AES_256_GCM, key).expect("32-byte key fits AES-256");
        DataKey(LessSafeKey::new(unbound))
    }

    /// Encrypts `buf[..len]` in place and writes the tag after it; `buf`
    /// must hold `len + TAG_LEN` bytes. `header` is authenticated, not
    /// encrypted. Returns the ciphertext length (`len + TAG_LEN`).
    pub fn seal(&self, nonce: PacketNonce, header: &[u8], buf: &mut [u8], len: usize) -> usize {
        let (plain, rest) = buf.split_at_mut(len);
        let tag = self
            .0
            .seal_in_place_separate_tag(nonce.get(), Aad::from(header), plain)
            .expect("AES-GCM seals any packet-sized input");
        rest[..TAG_LEN].copy_from_slice(tag.as_ref());
        len + TAG_LEN
    }

    /// Decrypts and checks `buf` (ciphertext then tag) in place; returns the
    /// plaintext length. On failure `buf` holds garbage.
    pub fn open(
        &self,
        nonce: PacketNonce,
        header: &[u8],
        buf: &mut [u8],
    ) -> Result<usize, OpenError> {
        if buf.len() < TAG_LEN {
            return Err(OpenError::Truncated);
        }
        self.0
            .open_in_place(nonce.get(), Aad::from(header), buf)
            .map(|plain| plain.len())
            .map_err(|_| OpenError::Authentication)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sealed(key: &DataKey, counter: u64, header: &[u8], msg: &[u8]) -> Vec<u8> {
        sealed_with(key, PacketNonce::message(counter), header, msg)
    }

    fn sealed_with(key: &DataKey, nonce: PacketNonce, header: &[u8], msg: &[u8]) -> Vec<u8> {
        let mut buf = vec![0u8; msg.len() + TAG_LEN];
        buf[..msg.len()].copy_from_slice(msg);
        assert_eq!(
            key.seal(nonce, header, &mut buf, msg.len()),
            msg.len() + TAG_LEN
        );
        buf
    }

    #[test]
    fn round_trip() {
        let key = DataKey::new(&[3; 32]);
        let mut buf = sealed(&key, 9, b"hdr", b"hello");
        assert_ne!(&buf[..5], b"hello");
        assert_eq!(key.open(PacketNonce::message(9), b"hdr", &mut buf), Ok(5));
        assert_eq!(&buf[..5], b"hello");
    }

    #[test]
    fn every_input_is_authenticated() {
        let key = DataKey::new(&[3; 32]);
        let good = sealed(&key, 9, b"hdr", b"hello");
        // Another counter (nonce), header, key, flipped ciphertext or tag bit.
        assert_eq!(
            key.open(PacketNonce::message(10), b"hdr", &mut good.clone()),
            Err(OpenError::Authentication)
        );
        assert_eq!(
            key.open(PacketNonce::message(9), b"hdr!", &mut good.clone()),
            Err(OpenError::Authentication)
        );
        let other = DataKey::new(&[4; 32]);
        assert_eq!(
            other.open(PacketNonce::message(9), b"hdr", &mut good.clone()),
            Err(OpenError::Authentication)
        );
        for i in [0, good.len() - 1] {
            let mut bad = good.clone();
            bad[i] ^= 1;
            assert_eq!(
                key.open(PacketNonce::message(9), b"hdr", &mut bad),
                Err(OpenError::Authentication)
            );
        }
        assert_eq!(
            key.open(
                PacketNonce::message(9),
                b"hdr",
                &mut good.clone()[..TAG_LEN - 1].to_vec()
            ),
            Err(OpenError::Truncated)
        );
    }

    #[test]
    fn the_two_nonce_spaces_never_meet() {
        let key = DataKey::new(&[3; 32]);
        // Same numbers, other space: neither opens as the other.
        let data = sealed_with(&key, PacketNonce::data(0, 7), b"h", b"x");
        assert_eq!(
            key.open(PacketNonce::message(7), b"h", &mut data.clone()),
            Err(OpenError::Authentication)
        );
        let mut opened = data.clone();
        assert_eq!(key.open(PacketNonce::data(0, 7), b"h", &mut opened), Ok(1));
        // Another path's same number is another nonce.
        assert_eq!(
            key.open(PacketNonce::data(1, 7), b"h", &mut data.clone()),
            Err(OpenError::Authentication)
        );
        let all = [
            PacketNonce::message(0),
            PacketNonce::message(u64::from(u32::MAX)),
            PacketNonce::data(0, 0),
            PacketNonce::data(0, u32::MAX),
            PacketNonce::data(255, 0),
        ];
        for (i, a) in all.iter().enumerate() {
            for b in &all[i + 1..] {
                assert_ne!(a, b);
            }
        }
    }
}
