//! `server.toml`: the server's key, where it listens, its tunnel, its peers.

use std::net::SocketAddr;
use std::path::PathBuf;

use ipnet::IpNet;
use serde::Deserialize;
use toml::Spanned;

use braid_core::crypto::{PresharedKey, PrivateKey, PublicKey};

use super::tunnel::TunnelConfig;
use super::values::{Key, ListenAddr};
use super::{Invalid, Validate};

/// Default control socket of a server.
pub const DEFAULT_CONTROL_SOCKET: &str = "/run/braid/server.sock";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// The server's static private key (base64, `braid genkey`).
    pub private_key: Key<PrivateKey>,
    /// UDP addresses to listen on, `ADDR:PORT` (IPv6 as `[ADDR]:PORT`).
    pub listen: Spanned<Vec<ListenAddr>>,
    pub tunnel: Spanned<TunnelConfig>,
    /// Masquerade the tunnel's traffic out of an uplink (nftables).
    pub nat: Option<Nat>,
    pub control_socket: Option<Spanned<PathBuf>>,
    /// Serve Prometheus metrics on this TCP address.
    pub metrics: Option<SocketAddr>,
    #[serde(rename = "peer", default)]
    pub peers: Vec<Spanned<PeerConfig>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Nat {
    /// The interface the tunnel's traffic leaves through, masqueraded.
    pub uplink: Spanned<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PeerConfig {
    /// A name for logs and `braid status`.
    #[serde(default, deserialize_with = "super::values::name")]
    pub name: Option<String>,
    /// The client's static public key (base64).
    pub public_key: Key<PublicKey>,
    pub preshared_key: Option<Key<PresharedKey>>,
    /// The inner source addresses this client may send from (and the
    /// destinations the server sends to it). A packet from any other
    /// source is dropped and counted.
    pub allowed: Vec<IpNet>,
}

impl ServerConfig {
    pub fn control_socket(&self) -> PathBuf {
        super::control_socket_or(self.control_socket.as_ref(), DEFAULT_CONTROL_SOCKET)
    }
}

impl Validate for ServerConfig {
    fn validate(&self) -> Result<(), Invalid> {
        if self.listen.get_ref().is_empty() {
            return Err(Invalid::new(
                self.listen.span(),
                "listen",
                "at least one listen address is needed",
            ));
        }
        if let Some(ListenAddr(addr)) = self.listen.get_ref().iter().find(|a| a.0.port() == 0) {
            return Err(Invalid::new(
                self.listen.span(),
                "listen",
                format!("{addr}: port 0 (the system would pick a port no client knows; give the port clients name in their endpoint, such as 51820)"),
            ));
        }
        if let Some(ListenAddr(addr)) = super::repeated(self.listen.get_ref(), |a| **a) {
            return Err(Invalid::new(
                self.listen.span(),
                "listen",
                format!("{addr} is listed twice"),
            ));
        }
        if let Some(nat) = &self.nat {
            super::tunnel::check_interface_name("uplink", &nat.uplink)?;
        }
        if self.peers.is_empty() {
            return Err(Invalid::new(
                0..0,
                "peer",
                "no [[peer]]: the server would accept no client (add one [[peer]] per client, with its public_key and allowed addresses)",
            ));
        }
        self.tunnel.get_ref().validate_table(self.tunnel.span())?;
        super::check_file_path("control_socket", self.control_socket.as_ref())?;
        let named = self.peers.iter().filter(|p| p.get_ref().name.is_some());
        if let Some(peer) = super::repeated(named, |p| p.get_ref().name.clone()) {
            let name = peer.get_ref().name.as_deref().unwrap_or_default();
            return Err(Invalid::new(
                peer.span(),
                "name",
                format!("two peers are called {name:?}: give each a distinct name"),
            ));
        }
        if let Some(peer) = super::repeated(&self.peers, |p| p.get_ref().public_key.0) {
            return Err(Invalid::new(
                peer.span(),
                "public_key",
                "two peers have the same public key",
            ));
        }
        let own_key = self.private_key.0.public_key();
        let mut seen: Vec<&IpNet> = Vec::new();
        for peer in &self.peers {
            let p = peer.get_ref();
            if p.public_key.0 == own_key {
                return Err(Invalid::new(
                    peer.span(),
                    "public_key",
                    "this is the server's own public key (of its private_key), not a client's",
                ));
            }
            if p.allowed.is_empty() {
                return Err(Invalid::new(
                    peer.span(),
                    "allowed",
                    "a peer needs at least one allowed tunnel address",
                ));
            }
            // 10.77.0.2/24 admits the whole /24: more likely a client's
            // address written with the tunnel's prefix than a network.
            if let Some(net) = p.allowed.iter().find(|net| **net != net.trunc()) {
                return Err(Invalid::new(
                    peer.span(),
                    "allowed",
                    format!(
                        "{net} has bits set after the prefix: write {} for the whole network \
                         or {}/{} for one address",
                        net.trunc(),
                        net.addr(),
                        net.max_prefix_len()
                    ),
                ));
            }
            for net in &p.allowed {
                if let Some(other) = seen
                    .iter()
                    .find(|o| o.contains(&net.network()) || net.contains(&o.network()))
                {
                    return Err(Invalid::new(
                        peer.span(),
                        "allowed",
                        format!("{net} overlaps {other} of another peer: each client's addresses are its own"),
                    ));
                }
            }
            if let Some(net) = super::repeated(&p.allowed, |net| **net) {
                return Err(Invalid::new(
                    peer.span(),
                    "allowed",
                    format!("{net} is listed twice"),
                ));
            }
            for net in &p.allowed {
                if let Some(addr) = self.tunnel.get_ref().addrs().find(|a| net.contains(a)) {
                    return Err(Invalid::new(
                        peer.span(),
                        "allowed",
                        format!("{net} holds the server's own tunnel address {addr}"),
                    ));
                }
            }
            seen.extend(&p.allowed);
        }
        Ok(())
    }
}
