//! Where a session's server is: the client's `[server] endpoint`, and
//! `braid send --to` (the receiver is the session's server). An address
//! (`203.0.113.1:51820`, `[2001:db8::1]:51820`) or a DNS name and port
//! (`vpn.example.net:51820`), which the client resolves at start and again
//! while the server stays silent (a dynamic-DNS host that got a new
//! address).

use std::fmt;
use std::io;
use std::net::{SocketAddr, ToSocketAddrs};

use serde::Deserialize;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ServerAddr {
    Addr(SocketAddr),
    Name { host: String, port: u16 },
}

/// Longest DNS name (RFC 1035, without the root's dot).
const MAX_NAME_LEN: usize = 253;
/// Longest label of a DNS name.
const MAX_LABEL_LEN: usize = 63;

impl ServerAddr {
    pub fn parse(text: &str) -> Result<ServerAddr, String> {
        if let Ok(addr) = text.parse::<SocketAddr>() {
            return Ok(ServerAddr::Addr(addr));
        }
        let expected = "expected ADDR:PORT or NAME:PORT (IPv6 as [ADDR]:PORT)";
        let Some((host, port)) = text.rsplit_once(':') else {
            return Err(format!("{text:?}: no port ({expected})"));
        };
        if host.contains(':') || host.starts_with('[') {
            return Err(format!("{text:?}: {expected}"));
        }
        let port: u16 = port
            .parse()
            .map_err(|_| format!("{text:?}: bad port {port:?} ({expected})"))?;
        if !is_dns_name(host) {
            return Err(format!(
                "{text:?}: {host:?} is neither an IP address nor a DNS name ({expected})"
            ));
        }
        Ok(ServerAddr::Name {
            host: host.to_ascii_lowercase(),
            port,
        })
    }

    /// The address to send to: the literal one, or the name's address of
    /// the family `ipv6` asks for (`None`: IPv4 when the name has both).
    pub fn resolve(&self, ipv6: Option<bool>) -> io::Result<SocketAddr> {
        let (host, port) = match self {
            ServerAddr::Addr(addr) => return Ok(*addr),
            ServerAddr::Name { host, port } => (host, *port),
        };
        let found: Vec<SocketAddr> = (host.as_str(), port).to_socket_addrs()?.collect();
        pick(&found, ipv6).ok_or_else(|| {
            let family = match ipv6 {
                Some(true) => "IPv6 ",
                Some(false) => "IPv4 ",
                None => "",
            };
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("{host} has no {family}address"),
            )
        })
    }
}

/// The first of `found` of the family asked for; with none asked, the
/// first IPv4 address, else the first.
fn pick(found: &[SocketAddr], ipv6: Option<bool>) -> Option<SocketAddr> {
    match ipv6 {
        Some(v6) => found.iter().find(|a| a.is_ipv6() == v6).copied(),
        None => found
            .iter()
            .find(|a| a.is_ipv4())
            .or(found.first())
            .copied(),
    }
}

/// Letters, digits, hyphens and underscores (some internal DNS zones have
/// them, and resolvers take them) in dot-separated labels of 1 to 63
/// characters, no label starting or ending with a hyphen, 253 at most; a
/// trailing dot (the root) is allowed.
fn is_dns_name(name: &str) -> bool {
    let name = name.strip_suffix('.').unwrap_or(name);
    !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name.split('.').all(|label| {
            (1..=MAX_LABEL_LEN).contains(&label.len())
                && !label.starts_with('-')
                && !label.ends_with('-')
                && label
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        })
}

impl fmt::Display for ServerAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ServerAddr::Addr(addr) => addr.fmt(f),
            ServerAddr::Name { host, port } => write!(f, "{host}:{port}"),
        }
    }
}

impl<'de> Deserialize<'de> for ServerAddr {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        ServerAddr::parse(&text).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(host: &str, port: u16) -> ServerAddr {
        ServerAddr::Name {
            host: host.into(),
            port,
        }
    }

    #[test]
    fn addresses_and_names_parse_and_print_back() {
        for (text, parsed) in [
            (
                "192.0.2.1:51820",
                ServerAddr::Addr("192.0.2.1:51820".parse().unwrap()),
            ),
            (
                "[2001:db8::1]:443",
                ServerAddr::Addr("[2001:db8::1]:443".parse().unwrap()),
            ),
            ("vpn.example.net:51820", name("vpn.example.net", 51820)),
            ("VPN.Example.NET.:1", name("vpn.example.net.", 1)),
            ("localhost:9", name("localhost", 9)),
            ("gw_1.corp.example:9", name("gw_1.corp.example", 9)),
            (
                "xn--bcher-kva.example:65535",
                name("xn--bcher-kva.example", 65535),
            ),
        ] {
            let got = ServerAddr::parse(text).unwrap();
            assert_eq!(got, parsed, "{text}");
            assert_eq!(got.to_string(), text.to_ascii_lowercase(), "{text}");
        }
    }

    #[test]
    fn what_is_neither_an_address_nor_a_name_is_refused_saying_why() {
        let long_label = format!("{}.example:1", "a".repeat(64));
        let long_name = format!("{}:1", ["abcdefghi"; 26].join("."));
        assert_eq!(long_name.len() - 2, 259);
        for (text, says) in [
            ("vpn.example.net", "no port"),
            ("2001:db8::1:51820", "(IPv6 as [ADDR]:PORT)"),
            ("[2001:db8::1:51820", "(IPv6 as [ADDR]:PORT)"),
            ("vpn.example.net:http", "bad port \"http\""),
            ("vpn.example.net:65536", "bad port"),
            ("vpn.example.net:", "bad port \"\""),
            (":51820", "\"\" is neither"),
            ("vpn..example:1", "is neither"),
            ("-vpn.example:1", "is neither"),
            ("vpn-.example:1", "is neither"),
            ("vpn:1.example:1", "(IPv6 as [ADDR]:PORT)"),
            ("vpn*.example:1", "is neither"),
            ("vpn example:1", "is neither"),
            ("bücher.example:1", "is neither"),
            (long_label.as_str(), "is neither"),
            (long_name.as_str(), "is neither"),
        ] {
            let err = ServerAddr::parse(text).unwrap_err();
            assert!(err.contains(says), "{text}: {err}");
            assert!(err.starts_with(&format!("{text:?}: ")), "{err}");
        }
        let longest_label = format!("{}.example:1", "a".repeat(63));
        assert!(ServerAddr::parse(&longest_label).is_ok());
        let longest_name = format!("{}.{}:1", ["abcdefghi"; 24].join("."), "a".repeat(13));
        assert_eq!(longest_name.len() - 2, MAX_NAME_LEN);
        assert!(ServerAddr::parse(&longest_name).is_ok());
    }

    #[test]
    fn a_name_gives_the_family_asked_for_and_ipv4_first() {
        let v4: SocketAddr = "192.0.2.1:1".parse().unwrap();
        let v6: SocketAddr = "[2001:db8::1]:1".parse().unwrap();
        assert_eq!(pick(&[v6, v4], None), Some(v4));
        assert_eq!(pick(&[v6], None), Some(v6));
        assert_eq!(pick(&[v6, v4], Some(true)), Some(v6));
        assert_eq!(pick(&[v4], Some(true)), None);
        assert_eq!(pick(&[v6, v4], Some(false)), Some(v4));
        assert_eq!(pick(&[], None), None);
    }

    /// `localhost` is in every hosts file: resolving it sends nothing.
    #[test]
    fn localhost_resolves_to_loopback_and_an_address_to_itself() {
        let got = name("localhost", 4433).resolve(Some(false)).unwrap();
        assert_eq!(got, "127.0.0.1:4433".parse().unwrap());
        let addr: SocketAddr = "198.51.100.7:9".parse().unwrap();
        assert_eq!(ServerAddr::Addr(addr).resolve(Some(true)).unwrap(), addr);
    }
}
