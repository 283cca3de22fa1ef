//! `braid client` and `braid server`: thin tokio loops around the sans-IO
//! session (client) or endpoint (server).
//!
//! One thread, one `LocalSet`: a task per socket and one for the TUN device
//! read into buffers allocated once and feed the core; after each batch the
//! core's output is flushed (datagrams to the sockets, inner packets to the
//! TUN device, events to the log); a timer task sleeps until the core's
//! next timeout. The core never sees a clock: `Clock` turns tokio's
//! monotonic time into the core's `Instant`.

pub mod client;
mod clock;
mod control;
mod data_cap;
pub(crate) mod event_loop;
mod inner_addr;
mod links;
mod metrics;
mod nat;
mod no_answer;
mod routing;
pub mod server;
mod server_name;
mod status_json;
pub(crate) mod throttle;

use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use braid_core::session::{tunnel_mtu, SessionConfig};
use braid_io::{Tun, TunConfig, TunError};
use ipnet::IpNet;

use crate::config::tunnel::{TunnelConfig, MIN_TUNNEL_MTU};
use crate::config::TunnelAddr;
use crate::Failure;

pub use control::query;

/// The TUN MTU when the config names none: fits 1500-byte paths over IPv6
/// (the worst case of the two families), so both ends agree by default.
pub fn default_tunnel_mtu() -> u16 {
    tunnel_mtu(1500, true) as u16
}

/// Session settings both daemons share: the tunnel MTU, whether this end
/// re-sends what its paths lose and measures them with packet trains, ECN
/// marks on the inner IP packets, and the wall clock at the core's time
/// zero (handshake timestamps must grow across restarts).
pub(crate) fn session_config(mtu: u16, resend_losses: bool, path_trains: bool) -> SessionConfig {
    SessionConfig {
        tunnel_mtu: usize::from(mtu),
        resend_losses,
        path_trains,
        mark_ecn: true,
        wall_clock_at_epoch: SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or(Duration::ZERO),
        ..SessionConfig::default()
    }
}

/// A daemon's send batch: a full data packet of a tunnel of `mtu` fits its
/// paths (the MTU was chosen so), so datagrams up to that size go into GSO
/// runs; larger ones (feedback bundled in) leave alone.
pub(crate) fn transmit_batch(mtu: u16) -> braid_io::TransmitBatch {
    braid_io::TransmitBatch::new(usize::from(mtu) + braid_core::session::SESSION_OVERHEAD)
}

/// What to tell a user whose peer (`who`: "the server", "the receiver")
/// speaks another version of braid's protocol.
pub(crate) fn protocol_mismatch(who: &str, peer_version: u8) -> String {
    format!(
        "{who} speaks braid protocol {peer_version}, this braid {} speaks protocol {}: \
         run the same braid release at both ends",
        env!("CARGO_PKG_VERSION"),
        braid_core::session::PROTOCOL_VERSION
    )
}

/// 32 bytes from the operating system for the core's RNG seed.
pub(crate) fn os_seed() -> [u8; 32] {
    use rand::RngCore;
    let mut seed = [0u8; 32];
    rand::rngs::OsRng.fill_bytes(&mut seed);
    seed
}

/// Logs to stderr; `RUST_LOG` overrides the default level (info). Colours
/// only on a terminal (a journal or a log file gets plain text) and never
/// with `NO_COLOR` set.
pub fn init_logging() {
    use std::io::IsTerminal;
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal() && !no_color)
        .try_init();
}

/// A one-thread runtime: the daemons are one event loop.
pub(crate) fn runtime() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}

/// The tunnel MTU a client uses when its config names none: the default,
/// lowered so that a full inner packet still fits the smallest of
/// `path_mtus` (its paths' interfaces) with the tunnel's overhead, but never
/// below the 1280 bytes IPv6 needs (such a path then fragments). Never
/// raised above the default, which is also the server's.
fn tunnel_mtu_for_paths(path_mtus: impl IntoIterator<Item = u32>, ipv6_paths: bool) -> u16 {
    let default = default_tunnel_mtu();
    path_mtus
        .into_iter()
        .map(|m| tunnel_mtu(usize::try_from(m).unwrap_or(usize::MAX), ipv6_paths))
        .map(|m| u16::try_from(m).unwrap_or(u16::MAX))
        .fold(default, u16::min)
        .max(MIN_TUNNEL_MTU)
}

/// The tunnel's MTU: the config's, or `default_mtu()` when it names none
/// (only then is the default worked out).
fn configured_mtu(tunnel: &TunnelConfig, default_mtu: impl FnOnce() -> u16) -> u16 {
    tunnel
        .mtu
        .as_ref()
        .map_or_else(default_mtu, |m| *m.get_ref())
}

/// Creates the TUN device `tunnel` describes, with `mtu`. The daemons call
/// it after everything else a config can get wrong (session, data caps,
/// control socket, metrics), so that such a mistake fails before any
/// device or route exists. A name another device has is named with its
/// line in `file`, the config.
fn create_tun(file: &Path, tunnel: &TunnelConfig, mtu: u16) -> Result<Tun, Failure> {
    let address =
        |family: &Option<toml::Spanned<TunnelAddr>>| family.as_ref().map(|a| a.get_ref().0);
    let config = TunConfig {
        name: tunnel.name.get_ref().clone(),
        mtu,
        ipv4: address(&tunnel.ipv4).and_then(|net| match net {
            IpNet::V4(n) => Some((n.addr(), n.prefix_len())),
            IpNet::V6(_) => None,
        }),
        ipv6: address(&tunnel.ipv6).and_then(|net| match net {
            IpNet::V6(n) => Some((n.addr(), n.prefix_len())),
            IpNet::V4(_) => None,
        }),
        offload: tunnel.offload,
    };
    let tun = Tun::create(&config).map_err(|e| match e {
        TunError::NameTaken(_) => Failure::Usage(format!(
            "{}: [tunnel] name: {e}",
            crate::config::place(file, tunnel.name.span().start)
        )),
        e => Failure::Runtime(e.to_string()),
    })?;
    Ok(tun)
}

/// The Prometheus endpoint's listener, bound now so that a bad address
/// fails at start.
async fn bind_metrics(
    addr: Option<std::net::SocketAddr>,
) -> Result<Option<tokio::net::TcpListener>, Failure> {
    let Some(addr) = addr else {
        return Ok(None);
    };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|e| Failure::Runtime(format!("metrics {addr}: {e}")))?;
    Ok(Some(listener))
}

/// Resolves on SIGINT, SIGTERM or SIGHUP. A hangup (the terminal a
/// daemon runs in closes) stops it as the others do, with its routes,
/// rules and control socket taken down: by default it killed the process
/// and left them behind. braid has no configuration reload for it to mean.
pub(crate) async fn shutdown_signal() -> std::io::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let mut hup = signal(SignalKind::hangup())?;
    tokio::select! {
        _ = term.recv() => {}
        _ = int.recv() => {}
        _ = hup.recv() => {}
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tunnel_mtu_fits_the_smallest_path_and_stays_within_bounds() {
        // No path MTU known, or all large: the default (the server's too).
        assert_eq!(tunnel_mtu_for_paths([], false), default_tunnel_mtu());
        assert_eq!(
            tunnel_mtu_for_paths([1500, 9000], true),
            default_tunnel_mtu()
        );
        // PPPoE DSL (1492) beside a 1500 LTE path, IPv4 paths: 1492 - 66
        // = 1426 fits, but the default (sized for IPv6 paths) is smaller.
        assert_eq!(tunnel_mtu_for_paths([1500, 1492], false), 1414);
        // A 1460-byte path over IPv4: 1460 - 66.
        assert_eq!(tunnel_mtu_for_paths([1500, 1460], false), 1394);
        // The same over IPv6 paths: 1492 - 86.
        assert_eq!(tunnel_mtu_for_paths([1492, 1500], true), 1406);
        // A tiny path cannot push the tunnel below what IPv6 needs.
        assert_eq!(tunnel_mtu_for_paths([1300, 576], false), MIN_TUNNEL_MTU);
        assert_eq!(
            tunnel_mtu_for_paths([u32::MAX], false),
            default_tunnel_mtu()
        );
    }

    #[test]
    fn the_daemons_sessions_carry_ip_and_mark_ecn_instead_of_dropping() {
        for (resend, trains) in [(true, true), (false, false)] {
            let c = session_config(1414, resend, trains);
            assert!(c.mark_ecn);
            assert_eq!((c.resend_losses, c.path_trains), (resend, trains));
        }
    }
}
