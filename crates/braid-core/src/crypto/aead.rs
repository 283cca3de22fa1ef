//! The data-plane AEAD: AES-256-GCM (aws-lc-rs) keyed per direction, with
//! the 64-bit packet counter as nonce (32 zero bits, then the counter
//! big-endian), so a key never sees a nonce twice as long as the counter
//! never repeats (see [`super::TransportKeys`]).

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

fn nonce(counter: u64) -> Nonce {
    let mut n = [0u8; NONCE_LEN];
    n[4..].copy_from_slice(&counter.to_be_bytes());
    Nonce::assume_unique_for_key(n)
}

impl DataKey {
    pub fn new(key: &[u8; KEY_LEN]) -> DataKey {
        let unbound = UnboundKey::new(&AES_256_GCM, key).expect("32-byte key fits AES-256");
        DataKey(LessSafeKey::new(unbound))
    }

    /// Encrypts `buf[..len]` in place and writes the tag after it; `buf`
    /// must hold `len + TAG_LEN` bytes. `header` is authenticated, not
    /// encrypted. Returns the ciphertext length (`len + TAG_LEN`).
    pub fn seal(&self, counter: u64, header: &[u8], buf: &mut [u8], len: usize) -> usize {
        let (plain, rest) = buf.split_at_mut(len);
        let tag = self
            .0
            .seal_in_place_separate_tag(nonce(counter), Aad::from(header), plain)
            .expect("AES-GCM seals any packet-sized input");
        rest[..TAG_LEN].copy_from_slice(tag.as_ref());
        len + TAG_LEN
    }

    /// Decrypts and checks `buf` (ciphertext then tag) in place; returns the
    /// plaintext length. On failure `buf` holds garbage.
    pub fn open(&self, counter: u64, header: &[u8], buf: &mut [u8]) -> Result<usize, OpenError> {
        if buf.len() < TAG_LEN {
            return Err(OpenError::Truncated);
        }
        self.0
            .open_in_place(nonce(counter), Aad::from(header), buf)
            .map(|plain| plain.len())
            .map_err(|_| OpenError::Authentication)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sealed(key: &DataKey, counter: u64, header: &[u8], msg: &[u8]) -> Vec<u8> {
        let mut buf = vec![0u8; msg.len() + TAG_LEN];
        buf[..msg.len()].copy_from_slice(msg);
        assert_eq!(
            key.seal(counter, header, &mut buf, msg.len()),
            msg.len() + TAG_LEN
        );
        buf
    }

    #[test]
    fn round_trip() {
        let key = DataKey::new(&[3; 32]);
        let mut buf = sealed(&key, 9, b"hdr", b"hello");
        assert_ne!(&buf[..5], b"hello");
        assert_eq!(key.open(9, b"hdr", &mut buf), Ok(5));
        assert_eq!(&buf[..5], b"hello");
    }

    #[test]
    fn every_input_is_authenticated() {
        let key = DataKey::new(&[3; 32]);
        let good = sealed(&key, 9, b"hdr", b"hello");
        // Another counter (nonce), header, key, flipped ciphertext or tag bit.
        assert_eq!(
            key.open(10, b"hdr", &mut good.clone()),
            Err(OpenError::Authentication)
        );
        assert_eq!(
            key.open(9, b"hdr!", &mut good.clone()),
            Err(OpenError::Authentication)
        );
        let other = DataKey::new(&[4; 32]);
        assert_eq!(
            other.open(9, b"hdr", &mut good.clone()),
            Err(OpenError::Authentication)
        );
        for i in [0, good.len() - 1] {
            let mut bad = good.clone();
            bad[i] ^= 1;
            assert_eq!(
                key.open(9, b"hdr", &mut bad),
                Err(OpenError::Authentication)
            );
        }
        assert_eq!(
            key.open(9, b"hdr", &mut good.clone()[..TAG_LEN - 1].to_vec()),
            Err(OpenError::Truncated)
        );
    }
}
