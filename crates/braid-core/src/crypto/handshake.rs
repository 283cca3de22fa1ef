//! The Noise `IKpsk2` handshake (through `snow`) and its two messages:
//!
//! ```text
//! initiation: type=1 (1) | sender_index (4) | noise e, s, payload (96 + payload) | mac1 (16)
//! response:   type=2 (1) | sender_index (4) | receiver_index (4) | noise e, payload (48 + payload)
//! ```
//!
//! `mac1` is HMAC-SHA256, truncated to 16 bytes, over the initiation before
//! it, keyed with SHA-256("braid mac1" || responder's public key): a
//! responder drops initiations not meant for it with one hash instead of
//! two Diffie-Hellman operations, and an observer cannot make valid ones
//! without knowing whom they address. The payloads are opaque here (the
//! session puts its timestamp and path list in them); Noise encrypts and
//! authenticates them.
//!
//! Randomness: the ephemeral key is drawn from a ChaCha20 RNG seeded by the
//! caller, through a `snow` resolver, so a seeded session is reproducible.

use aws_lc_rs::{digest, hmac};
use rand_chacha::rand_core::{CryptoRng, RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use snow::params::{CipherChoice, DHChoice, HashChoice};
use snow::resolvers::{CryptoResolver, DefaultResolver};
use snow::types::{Cipher, Dh, Hash, Random};
use snow::{Builder, HandshakeState};

use super::keys::{PresharedKey, PublicKey, StaticKeypair, KEY_LEN};

pub const NOISE_PARAMS: &str = "Noise_IKpsk2_25519_ChaChaPoly_BLAKE2s";
const PROLOGUE: &[u8] = b"braid handshake v1";
const MAC1_LABEL: &[u8] = b"braid mac1";

pub const INITIATION_TYPE: u8 = 1;
pub const RESPONSE_TYPE: u8 = 2;
pub const MAC_LEN: usize = 16;
/// Noise overhead of the initiation: ephemeral key, encrypted static key, payload tag.
const NOISE_INIT_OVERHEAD: usize = 32 + 48 + 16;
/// Noise overhead of the response: ephemeral key, payload tag.
const NOISE_RESP_OVERHEAD: usize = 32 + 16;
/// Largest handshake payload either side may send.
pub const MAX_PAYLOAD: usize = 64;
/// Initiation length for a payload of `payload` bytes.
pub const fn initiation_len(payload: usize) -> usize {
    1 + 4 + NOISE_INIT_OVERHEAD + payload + MAC_LEN
}
/// Response length for a payload of `payload` bytes.
pub const fn response_len(payload: usize) -> usize {
    1 + 4 + 4 + NOISE_RESP_OVERHEAD + payload
}
pub const MAX_INITIATION_LEN: usize = initiation_len(MAX_PAYLOAD);
pub const MAX_RESPONSE_LEN: usize = response_len(MAX_PAYLOAD);

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum HandshakeError {
    #[error("handshake message has a bad length ({0} bytes)")]
    Length(usize),
    #[error("not a handshake message of the expected type")]
    Type,
    #[error("mac1 does not match this responder's key")]
    Mac1,
    #[error("handshake did not authenticate")]
    Noise,
    #[error("response names another handshake")]
    WrongIndex,
    #[error("payload too large")]
    PayloadTooLarge,
}

/// The two data-plane keys a handshake yields.
#[derive(Clone, PartialEq, Eq)]
pub struct SplitKeys {
    pub send: [u8; KEY_LEN],
    pub recv: [u8; KEY_LEN],
}

impl std::fmt::Debug for SplitKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SplitKeys(..)")
    }
}

struct SeededRandom(ChaCha20Rng);

impl RngCore for SeededRandom {
    fn next_u32(&mut self) -> u32 {
        self.0.next_u32()
    }
    fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }
    fn fill_bytes(&mut self, dest: &mut [u8]) {
        self.0.fill_bytes(dest)
    }
    fn try_fill_bytes(&mut self, dest: &mut [u8]) -> Result<(), rand_chacha::rand_core::Error> {
        self.0.try_fill_bytes(dest)
    }
}
impl CryptoRng for SeededRandom {}
impl Random for SeededRandom {}

/// snow's default primitives, with randomness from a caller's seed.
struct SeededResolver([u8; 32]);

impl CryptoResolver for SeededResolver {
    fn resolve_rng(&self) -> Option<Box<dyn Random>> {
        Some(Box::new(SeededRandom(ChaCha20Rng::from_seed(self.0))))
    }
    fn resolve_dh(&self, choice: &DHChoice) -> Option<Box<dyn Dh>> {
        DefaultResolver.resolve_dh(choice)
    }
    fn resolve_hash(&self, choice: &HashChoice) -> Option<Box<dyn Hash>> {
        DefaultResolver.resolve_hash(choice)
    }
    fn resolve_cipher(&self, choice: &CipherChoice) -> Option<Box<dyn Cipher>> {
        DefaultResolver.resolve_cipher(choice)
    }
}

fn builder(seed: [u8; 32]) -> Builder<'static> {
    Builder::with_resolver(
        NOISE_PARAMS.parse().expect("valid Noise parameters"),
        Box::new(SeededResolver(seed)),
    )
}

fn mac1(responder: &PublicKey, msg: &[u8]) -> [u8; MAC_LEN] {
    let mut ctx = digest::Context::new(&digest::SHA256);
    ctx.update(MAC1_LABEL);
    ctx.update(&responder.0);
    let key = hmac::Key::new(hmac::HMAC_SHA256, ctx.finish().as_ref());
    let tag = hmac::sign(&key, msg);
    let mut out = [0u8; MAC_LEN];
    out.copy_from_slice(&tag.as_ref()[..MAC_LEN]);
    out
}

fn be32(b: &[u8]) -> u32 {
    u32::from_be_bytes([b[0], b[1], b[2], b[3]])
}

/// A client's handshake in flight.
pub struct Initiator {
    state: HandshakeState,
    pub local_index: u32,
}

impl std::fmt::Debug for Initiator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Initiator")
            .field("local_index", &self.local_index)
            .finish()
    }
}

impl Initiator {
    /// Writes an initiation to `server` into `out`; returns the pending
    /// handshake and the message length.
    pub fn start(
        local: &StaticKeypair,
        server: &PublicKey,
        psk: &PresharedKey,
        seed: [u8; 32],
        local_index: u32,
        payload: &[u8],
        out: &mut [u8],
    ) -> Result<(Initiator, usize), HandshakeError> {
        if payload.len() > MAX_PAYLOAD {
            return Err(HandshakeError::PayloadTooLarge);
        }
        let len = initiation_len(payload.len());
        if out.len() < len {
            return Err(HandshakeError::Length(out.len()));
        }
        let mut state = builder(seed)
            .local_private_key(local.private.as_bytes())
            .remote_public_key(&server.0)
            .psk(2, &psk.0)
            .prologue(PROLOGUE)
            .build_initiator()
            .map_err(|_| HandshakeError::Noise)?;
        out[0] = INITIATION_TYPE;
        out[1..5].copy_from_slice(&local_index.to_be_bytes());
        let noise_end = len - MAC_LEN;
        let written = state
            .write_message(payload, &mut out[5..noise_end])
            .map_err(|_| HandshakeError::Noise)?;
        debug_assert_eq!(written, noise_end - 5);
        let mac = mac1(server, &out[..noise_end]);
        out[noise_end..len].copy_from_slice(&mac);
        Ok((Initiator { state, local_index }, len))
    }

    /// Reads the server's response; returns the keys and the response
    /// payload's length (written to `payload`).
    pub fn finish(
        mut self,
        response: &[u8],
        payload: &mut [u8],
    ) -> Result<(SplitKeys, u32, usize), HandshakeError> {
        if response.len() < response_len(0) || response.len() > MAX_RESPONSE_LEN {
            return Err(HandshakeError::Length(response.len()));
        }
        if response[0] != RESPONSE_TYPE {
            return Err(HandshakeError::Type);
        }
        let remote_index = be32(&response[1..5]);
        if be32(&response[5..9]) != self.local_index {
            return Err(HandshakeError::WrongIndex);
        }
        let mut plain = [0u8; MAX_PAYLOAD];
        let n = self
            .state
            .read_message(&response[9..], &mut plain)
            .map_err(|_| HandshakeError::Noise)?;
        if !self.state.is_handshake_finished() || payload.len() < n {
            return Err(HandshakeError::Noise);
        }
        payload[..n].copy_from_slice(&plain[..n]);
        let (i2r, r2i) = self.state.dangerously_get_raw_split();
        Ok((
            SplitKeys {
                send: i2r,
                recv: r2i,
            },
            remote_index,
            n,
        ))
    }
}

/// An initiation that passed mac1 and Noise: the initiator's static key
/// is known and authenticated by `es`/`ss`, but the response (and with it
/// the psk check) is still to come.
pub struct Responder {
    state: HandshakeState,
    /// The initiator's static public key.
    pub peer: PublicKey,
    /// The index the initiator wants on packets for it.
    pub initiator_index: u32,
    payload: [u8; MAX_PAYLOAD],
    payload_len: usize,
}

impl std::fmt::Debug for Responder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Responder")
            .field("peer", &self.peer)
            .field("initiator_index", &self.initiator_index)
            .finish()
    }
}

/// Cheap check an initiation is well-formed and addressed to `local`
/// (length, type, mac1), before any Diffie-Hellman work.
pub fn check_initiation(local: &PublicKey, msg: &[u8]) -> Result<(), HandshakeError> {
    if msg.len() < initiation_len(0) || msg.len() > MAX_INITIATION_LEN {
        return Err(HandshakeError::Length(msg.len()));
    }
    if msg[0] != INITIATION_TYPE {
        return Err(HandshakeError::Type);
    }
    let (body, mac) = msg.split_at(msg.len() - MAC_LEN);
    let expected = mac1(local, body);
    // Constant time is not needed: mac1 keys on a public value.
    if mac != expected {
        return Err(HandshakeError::Mac1);
    }
    Ok(())
}

impl Responder {
    /// Reads an initiation (after [`check_initiation`]).
    pub fn read(
        local: &StaticKeypair,
        seed: [u8; 32],
        msg: &[u8],
    ) -> Result<Responder, HandshakeError> {
        check_initiation(&local.public, msg)?;
        let mut state = builder(seed)
            .local_private_key(local.private.as_bytes())
            .psk(2, &PresharedKey::ZERO.0)
            .prologue(PROLOGUE)
            .build_responder()
            .map_err(|_| HandshakeError::Noise)?;
        let mut payload = [0u8; MAX_PAYLOAD];
        let payload_len = state
            .read_message(&msg[5..msg.len() - MAC_LEN], &mut payload)
            .map_err(|_| HandshakeError::Noise)?;
        let remote = state.get_remote_static().ok_or(HandshakeError::Noise)?;
        let peer = PublicKey(<[u8; KEY_LEN]>::try_from(remote).map_err(|_| HandshakeError::Noise)?);
        Ok(Responder {
            state,
            peer,
            initiator_index: be32(&msg[1..5]),
            payload,
            payload_len,
        })
    }

    /// The initiator's payload.
    pub fn payload(&self) -> &[u8] {
        &self.payload[..self.payload_len]
    }

    /// Writes the response with `psk` (the one configured for `peer`) and
    /// `payload`; returns the keys and the message length.
    pub fn respond(
        mut self,
        psk: &PresharedKey,
        local_index: u32,
        payload: &[u8],
        out: &mut [u8],
    ) -> Result<(SplitKeys, usize), HandshakeError> {
        if payload.len() > MAX_PAYLOAD {
            return Err(HandshakeError::PayloadTooLarge);
        }
        let len = response_len(payload.len());
        if out.len() < len {
            return Err(HandshakeError::Length(out.len()));
        }
        self.state
            .set_psk(2, &psk.0)
            .map_err(|_| HandshakeError::Noise)?;
        out[0] = RESPONSE_TYPE;
        out[1..5].copy_from_slice(&local_index.to_be_bytes());
        out[5..9].copy_from_slice(&self.initiator_index.to_be_bytes());
        self.state
            .write_message(payload, &mut out[9..len])
            .map_err(|_| HandshakeError::Noise)?;
        let (i2r, r2i) = self.state.dangerously_get_raw_split();
        Ok((
            SplitKeys {
                send: r2i,
                recv: i2r,
            },
            len,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An initiation without a pre-shared key, its ephemeral key from the
    /// tests' usual seed.
    fn initiate(
        client: &StaticKeypair,
        server: &PublicKey,
        index: u32,
        payload: &[u8],
        out: &mut [u8],
    ) -> Result<(Initiator, usize), HandshakeError> {
        Initiator::start(
            client,
            server,
            &PresharedKey::ZERO,
            [1; 32],
            index,
            payload,
            out,
        )
    }

    fn keys(seed: u64) -> StaticKeypair {
        StaticKeypair::generate(&mut ChaCha20Rng::seed_from_u64(seed))
    }

    fn handshake(
        client: &StaticKeypair,
        server: &StaticKeypair,
        client_psk: &PresharedKey,
        server_psk: &PresharedKey,
    ) -> Result<(SplitKeys, SplitKeys), HandshakeError> {
        let mut init = [0u8; MAX_INITIATION_LEN];
        let (initiator, n) = Initiator::start(
            client,
            &server.public,
            client_psk,
            [1; 32],
            77,
            b"hi",
            &mut init,
        )?;
        assert_eq!(n, initiation_len(2));
        let responder = Responder::read(server, [2; 32], &init[..n])?;
        assert_eq!(responder.peer, client.public);
        assert_eq!(responder.initiator_index, 77);
        assert_eq!(responder.payload(), b"hi");
        let mut resp = [0u8; MAX_RESPONSE_LEN];
        let (server_keys, m) = responder.respond(server_psk, 99, b"ok!", &mut resp)?;
        let mut payload = [0u8; MAX_PAYLOAD];
        let (client_keys, remote_index, p) = initiator.finish(&resp[..m], &mut payload)?;
        assert_eq!(remote_index, 99);
        assert_eq!(&payload[..p], b"ok!");
        Ok((client_keys, server_keys))
    }

    #[test]
    fn keys_agree_and_differ_per_direction() {
        let (c, s) =
            handshake(&keys(1), &keys(2), &PresharedKey::ZERO, &PresharedKey::ZERO).unwrap();
        assert_eq!(c.send, s.recv);
        assert_eq!(c.recv, s.send);
        assert_ne!(c.send, c.recv);
    }

    #[test]
    fn psk_mismatch_fails_at_the_initiator() {
        let r = handshake(
            &keys(1),
            &keys(2),
            &PresharedKey([5; 32]),
            &PresharedKey::ZERO,
        );
        assert_eq!(r.unwrap_err(), HandshakeError::Noise);
        let (c, s) = handshake(
            &keys(1),
            &keys(2),
            &PresharedKey([5; 32]),
            &PresharedKey([5; 32]),
        )
        .unwrap();
        assert_eq!(c.send, s.recv);
    }

    #[test]
    fn initiation_for_another_server_fails_mac1() {
        let server = keys(2);
        let mut init = [0u8; MAX_INITIATION_LEN];
        let (_, n) = initiate(&keys(1), &keys(3).public, 1, b"", &mut init).unwrap();
        assert_eq!(
            Responder::read(&server, [2; 32], &init[..n]).unwrap_err(),
            HandshakeError::Mac1
        );
    }

    #[test]
    fn every_initiation_check_rejects() {
        let server = keys(2);
        let mut init = [0u8; MAX_INITIATION_LEN];
        let (_, n) = initiate(&keys(1), &server.public, 1, b"abc", &mut init).unwrap();
        let good = init[..n].to_vec();
        assert!(Responder::read(&server, [2; 32], &good).is_ok());
        assert_eq!(
            Responder::read(&server, [2; 32], &good[..initiation_len(0) - 1]).unwrap_err(),
            HandshakeError::Length(initiation_len(0) - 1)
        );
        let long = vec![0u8; MAX_INITIATION_LEN + 1];
        assert_eq!(
            Responder::read(&server, [2; 32], &long).unwrap_err(),
            HandshakeError::Length(MAX_INITIATION_LEN + 1)
        );
        let mut typed = good.clone();
        typed[0] = RESPONSE_TYPE;
        assert_eq!(
            Responder::read(&server, [2; 32], &typed).unwrap_err(),
            HandshakeError::Type
        );
        // A flipped Noise byte with a recomputed mac1 still fails (Noise).
        let mut flipped = good.clone();
        flipped[40] ^= 1;
        let body = flipped.len() - MAC_LEN;
        let mac = mac1(&server.public, &flipped[..body]);
        flipped[body..].copy_from_slice(&mac);
        assert_eq!(
            Responder::read(&server, [2; 32], &flipped).unwrap_err(),
            HandshakeError::Noise
        );
        // A flipped mac byte fails mac1.
        let mut mac_bad = good.clone();
        *mac_bad.last_mut().unwrap() ^= 1;
        assert_eq!(
            Responder::read(&server, [2; 32], &mac_bad).unwrap_err(),
            HandshakeError::Mac1
        );
    }

    #[test]
    fn every_response_check_rejects() {
        let (client, server) = (keys(1), keys(2));
        let run = |mutate: &dyn Fn(&mut Vec<u8>)| {
            let mut init = [0u8; MAX_INITIATION_LEN];
            let (initiator, n) = initiate(&client, &server.public, 5, b"", &mut init).unwrap();
            let responder = Responder::read(&server, [2; 32], &init[..n]).unwrap();
            let mut resp = vec![0u8; MAX_RESPONSE_LEN];
            let (_, m) = responder
                .respond(&PresharedKey::ZERO, 6, b"", &mut resp)
                .unwrap();
            resp.truncate(m);
            mutate(&mut resp);
            initiator.finish(&resp, &mut [0u8; MAX_PAYLOAD]).map(|_| ())
        };
        assert_eq!(run(&|_| ()), Ok(()));
        assert_eq!(run(&|r| r[0] = INITIATION_TYPE), Err(HandshakeError::Type));
        assert_eq!(run(&|r| r[8] ^= 1), Err(HandshakeError::WrongIndex));
        assert_eq!(run(&|r| r[20] ^= 1), Err(HandshakeError::Noise));
        assert_eq!(
            run(&|r| r.truncate(response_len(0) - 1)),
            Err(HandshakeError::Length(response_len(0) - 1))
        );
        assert_eq!(
            run(&|r| r.resize(MAX_RESPONSE_LEN + 1, 0)),
            Err(HandshakeError::Length(MAX_RESPONSE_LEN + 1))
        );
    }

    /// Payloads and buffers of exactly the largest and the needed sizes pass;
    /// one byte more (payload) or less (buffer) is refused, never a panic.
    #[test]
    fn sizes_at_their_limits() {
        let (client, server) = (keys(1), keys(2));
        let full = [7u8; MAX_PAYLOAD];
        let start =
            |payload: &[u8], out: &mut [u8]| initiate(&client, &server.public, 3, payload, out);
        let mut exact = [0u8; MAX_INITIATION_LEN];
        assert_eq!(
            start(&[0u8; MAX_PAYLOAD + 1], &mut [0u8; MAX_INITIATION_LEN + 1]).unwrap_err(),
            HandshakeError::PayloadTooLarge
        );
        assert_eq!(
            start(&full, &mut exact[..MAX_INITIATION_LEN - 1]).unwrap_err(),
            HandshakeError::Length(MAX_INITIATION_LEN - 1)
        );
        let respond_to = |init: &[u8], payload: &[u8], out: &mut [u8]| {
            Responder::read(&server, [2; 32], init).unwrap().respond(
                &PresharedKey::ZERO,
                4,
                payload,
                out,
            )
        };
        let (_, n) = start(&full, &mut exact).unwrap();
        assert_eq!(n, MAX_INITIATION_LEN);
        assert_eq!(check_initiation(&server.public, &exact), Ok(()));
        assert_eq!(
            Responder::read(&server, [2; 32], &exact).unwrap().payload(),
            full
        );
        let mut resp = [0u8; MAX_RESPONSE_LEN];
        assert_eq!(
            respond_to(&exact, &[0u8; MAX_PAYLOAD + 1], &mut resp).unwrap_err(),
            HandshakeError::PayloadTooLarge
        );
        assert_eq!(
            respond_to(&exact, &full, &mut resp[..MAX_RESPONSE_LEN - 1]).unwrap_err(),
            HandshakeError::Length(MAX_RESPONSE_LEN - 1)
        );
        let (_, m) = respond_to(&exact, &full, &mut resp).unwrap();
        assert_eq!(m, MAX_RESPONSE_LEN);
        // The initiator reads a largest response into a buffer of exactly
        // its payload, and refuses one byte less.
        let finish = |into: &mut [u8]| {
            let (initiator, _) = start(&full, &mut [0u8; MAX_INITIATION_LEN]).unwrap();
            initiator.finish(&resp, into)
        };
        let mut payload = [0u8; MAX_PAYLOAD];
        let (_, _, p) = finish(&mut payload).unwrap();
        assert_eq!(&payload[..p], full);
        assert_eq!(
            finish(&mut payload[..MAX_PAYLOAD - 1]).unwrap_err(),
            HandshakeError::Noise
        );
    }

    #[test]
    fn debug_output_never_shows_keys() {
        let (client, server) = (keys(1), keys(2));
        let mut init = [0u8; MAX_INITIATION_LEN];
        let (initiator, n) = initiate(&client, &server.public, 8, b"", &mut init).unwrap();
        assert_eq!(format!("{initiator:?}"), "Initiator { local_index: 8 }");
        let responder = Responder::read(&server, [2; 32], &init[..n]).unwrap();
        assert_eq!(
            format!("{responder:?}"),
            format!(
                "Responder {{ peer: {:?}, initiator_index: 8 }}",
                client.public
            )
        );
        let (split, _) = responder
            .respond(&PresharedKey::ZERO, 9, b"", &mut [0u8; MAX_RESPONSE_LEN])
            .unwrap();
        assert_eq!(format!("{split:?}"), "SplitKeys(..)");
    }

    #[test]
    fn seeded_ephemerals_are_reproducible() {
        let (client, server) = (keys(1), keys(2));
        let mut a = [0u8; MAX_INITIATION_LEN];
        let mut b = [0u8; MAX_INITIATION_LEN];
        let mut c = [0u8; MAX_INITIATION_LEN];
        Initiator::start(
            &client,
            &server.public,
            &PresharedKey::ZERO,
            [9; 32],
            1,
            b"",
            &mut a,
        )
        .unwrap();
        Initiator::start(
            &client,
            &server.public,
            &PresharedKey::ZERO,
            [9; 32],
            1,
            b"",
            &mut b,
        )
        .unwrap();
        Initiator::start(
            &client,
            &server.public,
            &PresharedKey::ZERO,
            [8; 32],
            1,
            b"",
            &mut c,
        )
        .unwrap();
        assert_eq!(a, b);
        assert_ne!(a[5..37], c[5..37]);
    }
}
