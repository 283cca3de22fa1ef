//! `braid send` and `braid recv`: files over every path at once, on the
//! reliable stream inside an encrypted session (the tunnel's handshake and
//! AEAD, `braid_core::session` with `SessionConfig::stream`), driven by the
//! daemons' event loop (`daemon::event_loop::Driver`).
//!
//! The sender is the session's client (one UDP socket per `--via`), the
//! receiver its server (an `Endpoint` on `--listen`). Keys work like the
//! tunnel's: each end has a private key (`--key FILE`, from `braid
//! genkey`) and names the other's public key (`--peer`, from `braid
//! pubkey`); a receiver answers only the senders it names, so a wrong key
//! gets no answer at all and nothing is written. What travels inside the
//! streams is in [`header`].

mod give_up;
mod header;
mod progress;
pub mod recv;
pub mod send;
mod stall;
mod stdout;

use std::path::{Path, PathBuf};
use std::time::Duration;

use braid_core::crypto::{PrivateKey, PublicKey};
use braid_core::session::{SessionConfig, SessionStats};
use braid_core::stream;
use serde_json::json;

use crate::daemon;
use crate::Failure;

/// Longest key file read.
const MAX_KEY_FILE_BYTES: u64 = 1024;
/// How often the command looks at the transfer (progress, end, timeouts)
/// and lets a reader without network input (stdin) move on.
const TICK: Duration = Duration::from_millis(50);
/// After the end, time for the last acknowledgements to leave.
const LINGER: Duration = Duration::from_millis(300);

/// Keys, as in the tunnel's configs: this end's private key and the other
/// end's public key.
#[derive(clap::Args, Debug)]
pub struct KeyArgs {
    /// This end's private key file (base64, as `braid genkey` writes it)
    #[arg(long, value_name = "FILE")]
    pub key: PathBuf,
    /// Give up after this many seconds (1 to 3600) without hearing the
    /// peer once connected (send: also without an answer to its
    /// handshake, and at once if its address answers ICMP port
    /// unreachable; recv waits for its first sender as long as it takes)
    #[arg(long, value_name = "SECS", default_value_t = 15, allow_negative_numbers = true, value_parser = |s: &str| seconds(s, 3600))]
    pub timeout: u64,
    /// Give up after this many seconds (1 to 86400) in which the transfer does not move
    /// although the peer still answers (no file data arriving, or none
    /// acknowledged and no answer for a sent file). A sender waiting for
    /// its standard input does not count; a receiver fed by `braid send -`
    /// gives up on a pause of its input longer than this
    #[arg(long, value_name = "SECS", default_value_t = 60, allow_negative_numbers = true, value_parser = |s: &str| seconds(s, 86_400))]
    pub stall_timeout: u64,
    /// Print a JSON summary on stdout at the end
    #[arg(long)]
    pub json: bool,
}

/// Whole seconds from 1 to `max`, written `20` or `20s`.
fn seconds(text: &str, max: u64) -> Result<u64, String> {
    text.strip_suffix('s')
        .unwrap_or(text)
        .parse::<u64>()
        .ok()
        .filter(|n| (1..=max).contains(n))
        .ok_or_else(|| format!("expected whole seconds from 1 to {max} (20 or 20s)"))
}

fn load_private_key(path: &Path) -> Result<PrivateKey, Failure> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_KEY_FILE_BYTES).read_to_string(&mut text))
        .map_err(|e| Failure::Usage(format!("--key {}: {e}", path.display())))?;
    PrivateKey::from_base64(text.trim()).map_err(|e| {
        Failure::Usage(format!(
            "--key {}: not a private key: {e} ({})",
            path.display(),
            crate::keys_cmd::MAKE_KEY_HINT
        ))
    })
}

/// The other end's public key from `--peer`; never this end's own (of
/// `local`, the `--key`), which no handshake could complete with.
fn parse_public_key(
    text: &str,
    local: &braid_core::crypto::StaticKeypair,
) -> Result<PublicKey, Failure> {
    let key = PublicKey::from_base64(text.trim()).map_err(|e| {
        Failure::Usage(format!(
            "--peer {text:?}: not a public key: {e} ({})",
            crate::keys_cmd::PUBLIC_KEY_HINT
        ))
    })?;
    if key == local.public {
        return Err(Failure::Usage(format!(
            "--peer {text:?}: this is this end's own public key (of --key), not the other end's"
        )));
    }
    Ok(key)
}

/// Largest datagram a transfer's session sends for one stream packet: a
/// full one fills a 1500-byte IPv4 packet. Larger ones (feedback bundled
/// in) go out alone, not in GSO runs.
const MAX_STREAM_DATAGRAM: usize = 1500 - braid_core::wire::IP_UDP_OVERHEAD;

/// The session both ends use: the daemons' settings plus the stream. The
/// stream re-sends what is lost itself, so datagrams are not re-sent below
/// it, and its paths measure their rates themselves (packet trains seed
/// only the datagram paths').
fn session_config(timeout: Duration) -> SessionConfig {
    let mut config = daemon::session_config(daemon::default_tunnel_mtu(), false, false);
    config.stream = Some(stream::Config {
        // One stream per file from the sender, one reply stream back.
        max_streams: header::MAX_FILES,
        idle_timeout: timeout,
        ..stream::Config::default()
    });
    config
}

/// Bytes per second as Mbit/s, for summaries.
fn mbit_per_s(bytes: u64, seconds: f64) -> f64 {
    if seconds > 0.0 {
        bytes as f64 * 8.0 / seconds / 1e6
    } else {
        0.0
    }
}

/// Per path: name and UDP payload bytes it carried (sent or received).
fn path_bytes(stats: &SessionStats, sent: bool) -> Vec<(String, u64)> {
    stats
        .paths
        .iter()
        .map(|p| (p.name.clone(), if sent { p.tx_bytes } else { p.rx_bytes }))
        .collect()
}

fn paths_json(paths: &[(String, u64)]) -> serde_json::Value {
    paths
        .iter()
        .map(|(name, bytes)| json!({ "name": name, "wire_bytes": bytes }))
        .collect()
}

/// Whether every path has been silent for `limit` (the peer is gone).
fn peer_silent(stats: &SessionStats, limit: Duration) -> bool {
    stats
        .paths
        .iter()
        .all(|p| p.silent_for.is_none_or(|s| s >= limit))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::seconds;

    #[test]
    fn timeouts_are_whole_seconds_in_range_with_or_without_s() {
        assert_eq!(seconds("20", 3600), Ok(20));
        assert_eq!(seconds("20s", 3600), Ok(20));
        assert_eq!(seconds("1", 3600), Ok(1));
        assert_eq!(seconds("3600s", 3600), Ok(3600));
        for bad in ["0", "0s", "3601", "-1", "1.5", "20ms", "s", "", "20ss"] {
            assert!(seconds(bad, 3600).is_err(), "{bad:?}");
        }
    }
}
