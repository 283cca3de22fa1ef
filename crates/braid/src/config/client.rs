//! `client.toml`: the client's keys, its server, its tunnel and its paths.

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;

use ipnet::IpNet;
use serde::Deserialize;
use toml::Spanned;

use braid_core::crypto::{PresharedKey, PrivateKey, PublicKey};

use super::tunnel::TunnelConfig;
use super::values::{DataCap, Key, Rate, Role};
use super::{Invalid, ServerAddr, Validate};
use braid_core::session::MAX_SESSION_PATHS;

/// Default control socket of a client.
pub const DEFAULT_CONTROL_SOCKET: &str = "/run/braid/client.sock";

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClientConfig {
    /// This client's static private key (base64, `braid genkey`).
    pub private_key: Key<PrivateKey>,
    pub server: ServerEndpoint,
    pub tunnel: Spanned<TunnelConfig>,
    #[serde(default)]
    pub routing: Routing,
    #[serde(rename = "path")]
    pub paths: Vec<Spanned<PathConfig>>,
    pub control_socket: Option<Spanned<PathBuf>>,
    /// Where data caps keep each path's usage across restarts (default:
    /// `/var/lib/braid/<config file stem>.usage.json`).
    pub usage_file: Option<Spanned<PathBuf>>,
    /// Serve Prometheus metrics on this TCP address.
    pub metrics: Option<SocketAddr>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServerEndpoint {
    /// The server's static public key (base64, `braid pubkey`).
    pub public_key: Spanned<Key<PublicKey>>,
    /// The server's UDP address, `ADDR:PORT` (IPv6 as `[ADDR]:PORT`), or
    /// `NAME:PORT`.
    pub endpoint: Spanned<ServerAddr>,
    /// An optional pre-shared key (base64), mixed into the handshake.
    pub preshared_key: Option<Key<PresharedKey>>,
}

/// What the client routes into the tunnel.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Routing {
    /// Everything (IPv4 and IPv6 for the families the tunnel has), except
    /// the paths' own packets to the server.
    pub route_all: Option<Spanned<bool>>,
    /// Only these prefixes.
    #[serde(default, deserialize_with = "super::values::route_prefixes")]
    pub prefixes: Vec<IpNet>,
    /// The policy-routing table braid's routes go into.
    #[serde(default = "default_table")]
    pub table: u32,
}

/// The default policy-routing table (braid's default port number, so that
/// it is easy to recognize in `ip rule`).
pub const DEFAULT_TABLE: u32 = 51820;

fn default_table() -> u32 {
    DEFAULT_TABLE
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathConfig {
    /// A name for logs and `braid status` (default: the interface or address).
    #[serde(default, deserialize_with = "super::values::name")]
    pub name: Option<String>,
    /// Send out of this interface (SO_BINDTODEVICE).
    pub interface: Option<String>,
    /// Or send from this source address.
    #[serde(default, deserialize_with = "super::values::path_source")]
    pub source: Option<IpAddr>,
    /// The interface (or the source address) may be missing at start: the
    /// client waits for it instead of refusing to start.
    #[serde(default)]
    pub optional: bool,
    #[serde(default)]
    pub role: Role,
    /// Never send faster than this on the path.
    pub rate_limit: Option<Rate>,
    /// After this much data in a day or month, the path is demoted to backup.
    pub data_cap: Option<DataCap>,
    /// The path's price against the others, in [0, 1] (0 when absent):
    /// while prices differ, a pricier path carries only what the cheaper
    /// ones cannot (`Session`'s cost-first scheduling).
    pub cost_weight: Option<Spanned<f64>>,
}

impl PathConfig {
    pub fn display_name(&self) -> String {
        match (&self.name, &self.interface, &self.source) {
            (Some(name), _, _) => name.clone(),
            (None, Some(interface), _) => interface.clone(),
            (None, None, Some(source)) => source.to_string(),
            (None, None, None) => "?".to_owned(),
        }
    }
}

impl Default for Routing {
    fn default() -> Routing {
        Routing {
            route_all: None,
            prefixes: Vec::new(),
            table: DEFAULT_TABLE,
        }
    }
}

impl Routing {
    pub fn route_all(&self) -> bool {
        self.route_all.as_ref().is_some_and(|all| *all.get_ref())
    }
}

/// Where the usage file goes when the config names none.
pub const DEFAULT_USAGE_DIR: &str = "/var/lib/braid";

impl ClientConfig {
    /// The data caps' usage file of the config read from `config_file`.
    pub fn usage_file(&self, config_file: &std::path::Path) -> PathBuf {
        self.usage_file
            .as_ref()
            .map(|f| f.get_ref().clone())
            .unwrap_or_else(|| {
                let stem = config_file
                    .file_stem()
                    .map_or("client".into(), |s| s.to_string_lossy());
                PathBuf::from(DEFAULT_USAGE_DIR).join(format!("{stem}.usage.json"))
            })
    }

    /// The server address's family when the config fixes it (`true`:
    /// IPv6): a literal address's, or else the paths' source addresses'.
    /// `None`: a name with paths bound to interfaces only, resolved to
    /// IPv4 when it has both.
    pub fn server_family(&self) -> Option<bool> {
        match self.server.endpoint.get_ref() {
            ServerAddr::Addr(addr) => Some(addr.is_ipv6()),
            ServerAddr::Name { .. } => self.sources_ipv6(),
        }
    }

    /// The family of the first path pinned to a source address.
    fn sources_ipv6(&self) -> Option<bool> {
        self.paths
            .iter()
            .find_map(|p| p.get_ref().source)
            .map(|s| s.is_ipv6())
    }

    pub fn control_socket(&self) -> PathBuf {
        super::control_socket_or(self.control_socket.as_ref(), DEFAULT_CONTROL_SOCKET)
    }
}

impl Validate for ClientConfig {
    fn validate(&self) -> Result<(), Invalid> {
        if self.paths.is_empty() {
            return Err(Invalid::new(
                0..0,
                "path",
                "at least one [[path]] is needed",
            ));
        }
        if let Some(extra) = self.paths.get(MAX_SESSION_PATHS) {
            return Err(Invalid::new(
                extra.span(),
                "path",
                format!(
                    "{} paths: a session carries at most {MAX_SESSION_PATHS}",
                    self.paths.len()
                ),
            ));
        }
        self.tunnel.get_ref().validate_table(self.tunnel.span())?;
        check_endpoint(&self.server.endpoint)?;
        let server_key = &self.server.public_key;
        if server_key.get_ref().0 == self.private_key.0.public_key() {
            return Err(Invalid::new(
                server_key.span(),
                "public_key",
                "this is the client's own public key (of its private_key), not the server's",
            ));
        }
        super::check_file_path("control_socket", self.control_socket.as_ref())?;
        super::check_file_path("usage_file", self.usage_file.as_ref())?;
        let route_all = self.routing.route_all.as_ref();
        if let Some(all) = route_all.filter(|all| *all.get_ref()) {
            if !self.routing.prefixes.is_empty() {
                return Err(Invalid::new(
                    all.span(),
                    "route_all",
                    "route_all = true routes everything: leave prefixes out",
                ));
            }
        }
        for path in &self.paths {
            let span = path.span();
            let p = path.get_ref();
            if p.interface.as_ref() == Some(self.tunnel.get_ref().name.get_ref()) {
                return Err(Invalid::new(
                    span,
                    "interface",
                    format!(
                        "{:?} is the tunnel's own device ([tunnel] name): a path must leave through another interface",
                        self.tunnel.get_ref().name.get_ref()
                    ),
                ));
            }
            match (&p.interface, &p.source) {
                (Some(_), Some(_)) => {
                    return Err(Invalid::new(
                        span,
                        "source",
                        "a path has an interface or a source address, not both",
                    ))
                }
                (None, None) => {
                    return Err(Invalid::new(
                        span,
                        "interface",
                        "a path needs an interface or a source address",
                    ))
                }
                (None, Some(source))
                    if self
                        .server_family()
                        .is_some_and(|ipv6| source.is_ipv6() != ipv6) =>
                {
                    return Err(Invalid::new(
                        span,
                        "source",
                        format!(
                            "source {source} and server endpoint {} are of different IP families",
                            self.server.endpoint.get_ref()
                        ),
                    ))
                }
                (None, Some(source))
                    if self
                        .sources_ipv6()
                        .is_some_and(|ipv6| source.is_ipv6() != ipv6) =>
                {
                    return Err(Invalid::new(
                        span,
                        "source",
                        "the paths' source addresses are of different IP families: one server address cannot serve both",
                    ))
                }
                _ => {}
            }
            if let Some(weight) = &p.cost_weight {
                if !(0.0..=1.0).contains(weight.get_ref()) {
                    return Err(Invalid::new(
                        weight.span(),
                        "cost_weight",
                        format!("{} is outside [0, 1]", weight.get_ref()),
                    ));
                }
            }
        }
        if let Some(path) = super::repeated(&self.paths, |p| p.get_ref().display_name()) {
            return Err(Invalid::new(
                path.span(),
                "name",
                format!(
                    "two paths are called {:?}: give each a distinct name",
                    path.get_ref().display_name()
                ),
            ));
        }
        Ok(())
    }
}

/// The server's address must be one a datagram can be sent to.
fn check_endpoint(endpoint: &Spanned<ServerAddr>) -> Result<(), Invalid> {
    let problem = match endpoint.get_ref() {
        ServerAddr::Addr(addr) => crate::unsendable(*addr),
        ServerAddr::Name { port: 0, .. } => Some("port 0"),
        ServerAddr::Name { .. } => None,
    };
    match problem {
        None => Ok(()),
        Some(problem) => Err(Invalid::new(
            endpoint.span(),
            "endpoint",
            format!("{}: {problem}", endpoint.get_ref()),
        )),
    }
}
