//! `braid genkey` and `braid pubkey`: static X25519 keys in base64, as the
//! config files hold them.

use std::io::Read;

use braid_core::crypto::{PrivateKey, StaticKeypair};
use rand::rngs::OsRng;

use crate::{write_stdout, Failure};

/// Where a private or pre-shared key comes from, said with a key refused.
pub const MAKE_KEY_HINT: &str = "make one with `braid genkey`";
/// Where a public key comes from, said with a key refused.
pub const PUBLIC_KEY_HINT: &str = "a public key comes from `braid pubkey < KEYFILE`";

/// Longest stdin `braid pubkey` reads: a key is 44 characters.
const MAX_KEY_TEXT: u64 = 1024;

/// Prints a fresh private key, drawn from the operating system's RNG.
pub fn genkey() -> Result<(), Failure> {
    let pair = StaticKeypair::generate(&mut OsRng);
    write_stdout(&format!("{}\n", pair.private.to_base64()))
}

/// Reads a private key on stdin and prints its public key.
pub fn pubkey() -> Result<(), Failure> {
    let mut text = String::new();
    std::io::stdin()
        .take(MAX_KEY_TEXT + 1)
        .read_to_string(&mut text)
        .map_err(|e| Failure::Usage(format!("cannot read a private key on stdin: {e}")))?;
    if text.len() as u64 > MAX_KEY_TEXT {
        return Err(Failure::Usage(format!(
            "stdin: more than {MAX_KEY_TEXT} bytes; a private key is one line of 44 characters"
        )));
    }
    let private = PrivateKey::from_base64(&text)
        .map_err(|e| Failure::Usage(format!("stdin: not a private key: {e} ({MAKE_KEY_HINT})")))?;
    write_stdout(&format!("{}\n", private.public_key().to_base64()))
}
