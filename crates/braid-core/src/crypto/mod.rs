//! Packet protection: static keys, the Noise handshake that turns them into
//! per-session traffic keys, the data-plane AEAD and the anti-replay window.
//!
//! The handshake is `Noise_IKpsk2_25519_ChaChaPoly_BLAKE2s` through `snow`:
//! the client (initiator) knows the server's static public key; an optional
//! pre-shared key is mixed in (all zeros when absent). The handshake's two
//! split keys become the data-plane keys of the two directions, used with
//! AES-256-GCM from `aws-lc-rs`, with a 64-bit message counter or a bonding
//! data packet's own per-path number as nonce.
//!
//! Nothing here draws from a global random source: ephemeral keys come from
//! a seed the caller passes in (see [`handshake`]).

mod aead;
pub mod handshake;
mod keys;
mod replay;
mod transport;

pub use aead::{DataKey, OpenError, PacketNonce, TAG_LEN};
pub use keys::{KeyError, PresharedKey, PrivateKey, PublicKey, StaticKeypair, KEY_LEN};
pub use replay::{ReplayError, ReplayWindow, REPLAY_WINDOW};
pub use transport::{
    receiver_index, TransportError, TransportKeys, DATA_MESSAGE_HEADER_LEN, DATA_MESSAGE_OVERHEAD,
    MAX_DATA_PATHS, REJECT_AFTER_MESSAGES, TRANSPORT_HEADER_LEN, TRANSPORT_OVERHEAD,
    TRANSPORT_TYPE,
};
