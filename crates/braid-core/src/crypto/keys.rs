//! X25519 static keys and their text form (standard base64 of the 32 raw
//! bytes, as WireGuard prints them).

use std::fmt;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use rand_core::{CryptoRng, RngCore};
use snow::params::DHChoice;
use snow::resolvers::{CryptoResolver, DefaultResolver};

/// Bytes of an X25519 key (public, private) and of a pre-shared key.
pub const KEY_LEN: usize = 32;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("key is not valid base64")]
    Base64,
    #[error("key has {0} bytes, expected {KEY_LEN}")]
    Length(usize),
    #[error("key is all zeros: a placeholder, not a key")]
    AllZero,
}

/// A key's 32 bytes from its text. All zeros is refused: a placeholder
/// left in a config, and as a public key a low-order point whose
/// Diffie-Hellman result is zero whatever the other side's key.
fn decode(text: &str) -> Result<[u8; KEY_LEN], KeyError> {
    let bytes = STANDARD.decode(text.trim()).map_err(|_| KeyError::Base64)?;
    let key =
        <[u8; KEY_LEN]>::try_from(bytes.as_slice()).map_err(|_| KeyError::Length(bytes.len()))?;
    if key == [0; KEY_LEN] {
        return Err(KeyError::AllZero);
    }
    Ok(key)
}

/// An X25519 public key.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct PublicKey(pub [u8; KEY_LEN]);

/// An X25519 private key. `Debug` does not print it.
#[derive(Clone, PartialEq, Eq)]
pub struct PrivateKey([u8; KEY_LEN]);

/// A pre-shared key mixed into the handshake (Noise `psk2`). `Debug` does
/// not print it.
#[derive(Clone, PartialEq, Eq)]
pub struct PresharedKey(pub [u8; KEY_LEN]);

/// A peer's long-term identity.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StaticKeypair {
    pub private: PrivateKey,
    pub public: PublicKey,
}

impl PublicKey {
    pub fn to_base64(&self) -> String {
        STANDARD.encode(self.0)
    }
    /// Parses the base64 text form; surrounding whitespace is ignored.
    pub fn from_base64(text: &str) -> Result<PublicKey, KeyError> {
        decode(text).map(PublicKey)
    }
}

impl fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PublicKey({})", self.to_base64())
    }
}

impl PrivateKey {
    pub fn from_bytes(bytes: [u8; KEY_LEN]) -> PrivateKey {
        PrivateKey(bytes)
    }
    pub fn as_bytes(&self) -> &[u8; KEY_LEN] {
        &self.0
    }
    /// The matching public key (X25519 base-point multiplication; the
    /// scalar is clamped as RFC 7748 says, so any 32 bytes are a key).
    pub fn public_key(&self) -> PublicKey {
        let mut dh = DefaultResolver
            .resolve_dh(&DHChoice::Curve25519)
            .expect("snow's default resolver has X25519");
        dh.set(&self.0);
        let mut public = [0u8; KEY_LEN];
        public.copy_from_slice(dh.pubkey());
        PublicKey(public)
    }
    pub fn to_base64(&self) -> String {
        STANDARD.encode(self.0)
    }
    pub fn from_base64(text: &str) -> Result<PrivateKey, KeyError> {
        decode(text).map(PrivateKey)
    }
}

impl fmt::Debug for PrivateKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PrivateKey(..)")
    }
}

impl PresharedKey {
    /// All zeros: the key Noise `psk2` mixes in when none is configured.
    pub const ZERO: PresharedKey = PresharedKey([0; KEY_LEN]);

    pub fn generate(rng: &mut (impl RngCore + CryptoRng)) -> PresharedKey {
        let mut key = [0u8; KEY_LEN];
        rng.fill_bytes(&mut key);
        PresharedKey(key)
    }
    pub fn to_base64(&self) -> String {
        STANDARD.encode(self.0)
    }
    pub fn from_base64(text: &str) -> Result<PresharedKey, KeyError> {
        decode(text).map(PresharedKey)
    }
}

impl fmt::Debug for PresharedKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("PresharedKey(..)")
    }
}

impl StaticKeypair {
    /// A fresh key pair from `rng` (pass an OS-seeded RNG outside tests).
    pub fn generate(rng: &mut (impl RngCore + CryptoRng)) -> StaticKeypair {
        let mut private = [0u8; KEY_LEN];
        rng.fill_bytes(&mut private);
        StaticKeypair::from_private(PrivateKey(private))
    }

    pub fn from_private(private: PrivateKey) -> StaticKeypair {
        let public = private.public_key();
        StaticKeypair { private, public }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::rand_core::SeedableRng;
    use rand_chacha::ChaCha20Rng;

    #[test]
    fn public_key_matches_rfc7748_vector() {
        // RFC 7748 section 6.1, Alice's key pair.
        let private = hex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a");
        let public = hex("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a");
        assert_eq!(
            PrivateKey::from_bytes(private).public_key(),
            PublicKey(public)
        );
    }

    #[test]
    fn base64_round_trip_and_errors() {
        let pair = StaticKeypair::generate(&mut ChaCha20Rng::seed_from_u64(1));
        let text = pair.private.to_base64();
        assert_eq!(text.len(), 44);
        assert_eq!(
            PrivateKey::from_base64(&format!(" {text}\n")),
            Ok(pair.private.clone())
        );
        let public = pair.public.to_base64();
        assert_eq!(PublicKey::from_base64(&public), Ok(pair.public));
        assert_eq!(PublicKey::from_base64("not base64!"), Err(KeyError::Base64));
        assert_eq!(PublicKey::from_base64("AAAA"), Err(KeyError::Length(3)));
        let zeros = STANDARD.encode([0u8; KEY_LEN]);
        assert_eq!(PublicKey::from_base64(&zeros), Err(KeyError::AllZero));
        assert_eq!(PrivateKey::from_base64(&zeros), Err(KeyError::AllZero));
        assert_eq!(PresharedKey::from_base64(&zeros), Err(KeyError::AllZero));
        let psk = PresharedKey::generate(&mut ChaCha20Rng::seed_from_u64(2));
        assert_eq!(format!("{psk:?}"), "PresharedKey(..)");
        assert_eq!(PresharedKey::from_base64(&psk.to_base64()), Ok(psk));
        assert_eq!(format!("{:?}", pair.private), "PrivateKey(..)");
        // A public key is shown as configs write it.
        assert_eq!(format!("{:?}", pair.public), format!("PublicKey({public})"));
    }

    #[test]
    fn generate_is_deterministic_per_seed() {
        let a = StaticKeypair::generate(&mut ChaCha20Rng::seed_from_u64(7));
        let b = StaticKeypair::generate(&mut ChaCha20Rng::seed_from_u64(7));
        let c = StaticKeypair::generate(&mut ChaCha20Rng::seed_from_u64(8));
        assert_eq!(a, b);
        assert_ne!(a.public, c.public);
    }

    fn hex(s: &str) -> [u8; 32] {
        let mut out = [0u8; 32];
        for (i, b) in out.iter_mut().enumerate() {
            *b = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap();
        }
        out
    }
}
