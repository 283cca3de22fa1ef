//! A server configured by name (`endpoint = "vpn.example.net:51820"`):
//! resolved once at start (a name that does not resolve stops the client
//! with one line), and again while the server stays silent, so that a
//! dynamic-DNS host that got a new address is found without a restart.

use std::net::SocketAddr;
use std::time::Duration;

use braid_core::time::Instant;
use tracing::{info, warn};

use crate::config::ServerAddr;

/// Silence from the server after which its name is resolved again: longer
/// than a server restart takes to answer a new handshake (about a second),
/// so a server that merely restarted is not looked up.
pub const SILENT_BEFORE_RESOLVING: Duration = Duration::from_secs(10);
/// How often a silent server's name is resolved again: a lookup per 10 s
/// costs nothing, and a moved server is found within 20 s.
pub const RESOLVE_EVERY: Duration = Duration::from_secs(10);

/// The address to start with, or why there is none.
pub fn resolve_at_start(server: &ServerAddr, ipv6: Option<bool>) -> Result<SocketAddr, String> {
    let addr = server
        .resolve(ipv6)
        .map_err(|e| format!("server endpoint {server}: cannot resolve it: {e}"))?;
    match crate::unsendable(addr) {
        None => Ok(addr),
        Some(problem) => Err(format!(
            "server endpoint {server} resolves to {addr}: {problem}"
        )),
    }
}

/// Whether a server last heard at `last_heard` (never: `None`, counted
/// from `started`) has been silent long enough to look its name up again.
pub fn silent(now: Instant, last_heard: Option<Instant>, started: Instant) -> bool {
    now - last_heard.unwrap_or(started) >= SILENT_BEFORE_RESOLVING
}

/// Every [`RESOLVE_EVERY`] while `is_silent` says so, resolves `server`
/// (same family as `current`) and hands a new address to `moved`.
pub async fn follow(
    server: ServerAddr,
    mut current: SocketAddr,
    is_silent: impl Fn() -> bool,
    moved: impl Fn(SocketAddr),
) {
    loop {
        tokio::time::sleep(RESOLVE_EVERY).await;
        if !is_silent() {
            continue;
        }
        let name = server.clone();
        let ipv6 = current.is_ipv6();
        let found = tokio::task::spawn_blocking(move || name.resolve(Some(ipv6))).await;
        match found {
            Ok(Ok(addr)) if addr == current => {}
            Ok(Ok(addr)) => match crate::unsendable(addr) {
                Some(problem) => {
                    warn!(%server, %addr, "server name resolves to an unusable address: {problem}")
                }
                None => {
                    info!(%server, from = %current, to = %addr, "server silent and its name resolves to a new address: sending there");
                    moved(addr);
                    current = addr;
                }
            },
            Ok(Err(e)) => warn!(%server, "server silent and its name does not resolve: {e}"),
            Err(e) => warn!(%server, "resolving the server's name failed: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_is_looked_up_again_only_after_ten_silent_seconds() {
        let start = Instant::ZERO;
        let at = |s: u64| start + Duration::from_secs(s);
        assert!(!silent(at(9), None, start), "never heard, 9 s in");
        assert!(silent(at(10), None, start), "never heard, 10 s in");
        assert!(!silent(at(100), Some(at(91)), start));
        assert!(silent(at(100), Some(at(90)), start));
    }

    #[test]
    fn an_address_no_datagram_reaches_is_refused_at_start() {
        let unspecified = ServerAddr::Addr("0.0.0.0:51820".parse().unwrap());
        assert_eq!(
            resolve_at_start(&unspecified, None).unwrap_err(),
            "server endpoint 0.0.0.0:51820 resolves to 0.0.0.0:51820: an unspecified address (0.0.0.0 or ::) is no peer's address"
        );
        let local = ServerAddr::parse("localhost:51820").unwrap();
        assert_eq!(
            resolve_at_start(&local, Some(false)).unwrap(),
            "127.0.0.1:51820".parse().unwrap()
        );
    }
}
