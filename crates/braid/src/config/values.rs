//! Value types of the config, each parsed from its text form so that toml
//! reports a bad value at its own line.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use braid_core::crypto::{KeyError, PresharedKey, PrivateKey, PublicKey};

use crate::keys_cmd::{MAKE_KEY_HINT, PUBLIC_KEY_HINT};
use ipnet::IpNet;
use serde::{Deserialize, Serialize};

/// What a path is for (multipath-bonding-layer3's fixed-line-first policy).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// Carries traffic whenever it is up.
    #[default]
    Primary,
    /// Carries only what the primary paths cannot.
    Overflow,
    /// Carries data only when no primary or overflow path is up.
    Backup,
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Role::Primary => "primary",
            Role::Overflow => "overflow",
            Role::Backup => "backup",
        })
    }
}

/// A rate in bits per second, written as `tc` writes it (`20mbit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct Rate {
    pub bps: u64,
}

impl TryFrom<String> for Rate {
    type Error = String;
    fn try_from(text: String) -> Result<Rate, String> {
        braid_sim::spec::parse_rate(&text)
            .map(|bps| Rate { bps })
            .map_err(|e| e.to_string())
    }
}

/// How long a data cap runs before it starts again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Period {
    Day,
    Month,
}

/// A UDP address the server listens on: `IP:PORT`, IPv6 as `[IP]:PORT`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct ListenAddr(pub SocketAddr);

impl TryFrom<String> for ListenAddr {
    type Error = String;
    fn try_from(text: String) -> Result<ListenAddr, String> {
        text.parse().map(ListenAddr).map_err(|_| {
            format!(
                "invalid listen address {text:?}: expected IP:PORT, such as \"0.0.0.0:51820\" \
                 or \"[::]:51820\" (a name is not looked up)"
            )
        })
    }
}

/// A data cap: after `bytes` in one `period`, the path is demoted to backup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct DataCap {
    pub bytes: u64,
    pub period: Period,
}

impl TryFrom<String> for DataCap {
    type Error = String;
    fn try_from(text: String) -> Result<DataCap, String> {
        let err = || {
            format!(
                "invalid data cap {text:?}: expected AMOUNT/day or AMOUNT/month, \
                 AMOUNT in B, kB, MB, GB, TB or KiB, MiB, GiB, TiB (e.g. 10GB/month)"
            )
        };
        let (amount, period) = text.split_once('/').ok_or_else(err)?;
        let period = match period.trim() {
            "day" => Period::Day,
            "month" => Period::Month,
            _ => return Err(err()),
        };
        let amount = amount.trim();
        let split = amount
            .find(|c: char| !c.is_ascii_digit() && c != '.')
            .ok_or_else(err)?;
        let (number, unit) = amount.split_at(split);
        let number: f64 = number.parse().map_err(|_| err())?;
        let scale: f64 = match unit {
            "B" => 1.0,
            "kB" => 1e3,
            "MB" => 1e6,
            "GB" => 1e9,
            "TB" => 1e12,
            "KiB" => 1024.0,
            "MiB" => 1024.0 * 1024.0,
            "GiB" => 1024.0 * 1024.0 * 1024.0,
            "TiB" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
            _ => return Err(err()),
        };
        let bytes = number * scale;
        if bytes < 1.0 {
            return Err(format!(
                "invalid data cap {text:?}: at least one byte (a path that should carry \
                 nothing is role = \"backup\")"
            ));
        }
        // 16 EiB: no cap a path could reach.
        if bytes >= u64::MAX as f64 {
            return Err(format!(
                "invalid data cap {text:?}: more than any path carries (leave data_cap out \
                 for no cap)"
            ));
        }
        Ok(DataCap {
            bytes: bytes as u64,
            period,
        })
    }
}

/// A kind of address that is no host's own unicast address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpecialAddr {
    Unspecified,
    Loopback,
    Multicast,
    /// 255.255.255.255.
    Broadcast,
    /// 169.254.0.0/16, fe80::/10.
    LinkLocal,
}

impl SpecialAddr {
    pub fn of(ip: IpAddr) -> Option<SpecialAddr> {
        let (unspecified, loopback, multicast, broadcast, link_local) = match ip {
            IpAddr::V4(a) => (
                a.is_unspecified(),
                a.is_loopback(),
                a.is_multicast(),
                a.is_broadcast(),
                a.is_link_local(),
            ),
            IpAddr::V6(a) => (
                a.is_unspecified(),
                a.is_loopback(),
                a.is_multicast(),
                false,
                // Ipv6Addr::is_unicast_link_local needs Rust 1.84.
                a.segments()[0] & 0xffc0 == 0xfe80,
            ),
        };
        [
            (unspecified, SpecialAddr::Unspecified),
            (loopback, SpecialAddr::Loopback),
            (multicast, SpecialAddr::Multicast),
            (broadcast, SpecialAddr::Broadcast),
            (link_local, SpecialAddr::LinkLocal),
        ]
        .into_iter()
        .find_map(|(is, kind)| is.then_some(kind))
    }
}

impl fmt::Display for SpecialAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            SpecialAddr::Unspecified => "an unspecified address",
            SpecialAddr::Loopback => "a loopback address",
            SpecialAddr::Multicast => "a multicast address",
            SpecialAddr::Broadcast => "the broadcast address",
            SpecialAddr::LinkLocal => "a link-local address",
        })
    }
}

/// A path's `source`: an address the host has, to send from.
pub fn path_source<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<IpAddr>, D::Error> {
    let source = IpAddr::deserialize(deserializer)?;
    match SpecialAddr::of(source) {
        Some(
            kind @ (SpecialAddr::Unspecified | SpecialAddr::Multicast | SpecialAddr::Broadcast),
        ) => Err(serde::de::Error::custom(format!(
            "{source} is {kind}, not one a path can send from"
        ))),
        _ => Ok(Some(source)),
    }
}

/// Longest path or peer name.
pub const MAX_NAME_LEN: usize = 64;

/// A path's or a peer's `name`, which logs, `braid status` and the
/// metrics' labels print: 1 to [`MAX_NAME_LEN`] bytes without control
/// characters, which would forge or garble the lines it is printed in.
pub fn name<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<String>, D::Error> {
    let name = String::deserialize(deserializer)?;
    let problem = if name.is_empty() {
        format!("an empty name: give one of 1 to {MAX_NAME_LEN} bytes, or leave name out")
    } else if name.len() > MAX_NAME_LEN {
        format!("{name:?} is longer than {MAX_NAME_LEN} bytes")
    } else if name.chars().any(char::is_control) {
        format!("{name:?} holds a control character (a newline, a tab, an escape)")
    } else {
        return Ok(Some(name));
    };
    Err(serde::de::Error::custom(problem))
}

/// `[routing] prefixes`: networks (no bits set after the prefix length),
/// none of them loopback, each listed once.
pub fn route_prefixes<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> Result<Vec<IpNet>, D::Error> {
    let prefixes = Vec::<RoutePrefix>::deserialize(deserializer)?;
    if let Some(net) = super::repeated(&prefixes, |p| p.0) {
        return Err(serde::de::Error::custom(format!(
            "{} is listed twice",
            net.0
        )));
    }
    Ok(prefixes.into_iter().map(|p| p.0).collect())
}

/// One of `[routing] prefixes`, checked at its own place in the list.
#[derive(Deserialize)]
#[serde(try_from = "IpNet")]
struct RoutePrefix(IpNet);

impl TryFrom<IpNet> for RoutePrefix {
    type Error = String;
    fn try_from(net: IpNet) -> Result<RoutePrefix, String> {
        if net.network().is_loopback() {
            return Err(format!("{net} is loopback: it never leaves the host"));
        }
        if net != net.trunc() {
            return Err(format!(
                "{net} has bits set after the prefix: did you mean {}?",
                net.trunc()
            ));
        }
        Ok(RoutePrefix(net))
    }
}

/// A tunnel address with its prefix length (`10.77.0.2/24`): the address
/// the TUN device gets, and the prefix routed into it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct TunnelAddr(pub IpNet);

impl TryFrom<String> for TunnelAddr {
    type Error = String;
    fn try_from(text: String) -> Result<TunnelAddr, String> {
        let net: IpNet = text.parse().map_err(|_| {
            format!(
                "invalid tunnel address {text:?}: expected ADDRESS/PREFIX_LEN, e.g. 10.77.0.2/24"
            )
        })?;
        let len = net.prefix_len();
        if len == 0 {
            let example = match net {
                IpNet::V4(_) => "10.77.0.2/24",
                IpNet::V6(_) => "fd77::2/64",
            };
            return Err(format!(
                "{text}: a /0 prefix holds every address, not the tunnel's network (e.g. {example})"
            ));
        }
        if let Some(kind) = SpecialAddr::of(net.addr()) {
            return Err(format!("{text}: {kind} cannot be a tunnel's address"));
        }
        // In a /31 or /127 both addresses are hosts' (RFC 3021, RFC 6164).
        if net.max_prefix_len() - len >= 2 {
            if net.addr() == net.network() {
                return Err(format!(
                    "{text} is a network, not a host address in it (e.g. {}/{len})",
                    next(net.network(), true)
                ));
            }
            if net.addr().is_ipv4() && net.addr() == net.broadcast() {
                return Err(format!(
                    "{text} is the broadcast address of {}, not a host address in it (e.g. {}/{len})",
                    net.trunc(),
                    next(net.broadcast(), false)
                ));
            }
        }
        Ok(TunnelAddr(net))
    }
}

/// The address after `ip` (`up`) or before it; the caller stays inside a
/// prefix, away from the ends of the address space.
fn next(ip: IpAddr, up: bool) -> IpAddr {
    let step = |n: u128| if up { n + 1 } else { n - 1 };
    match ip {
        IpAddr::V4(a) => Ipv4Addr::from(step(u32::from(a).into()) as u32).into(),
        IpAddr::V6(a) => Ipv6Addr::from(step(u128::from(a))).into(),
    }
}

impl TunnelAddr {
    pub fn addr(&self) -> IpAddr {
        self.0.addr()
    }
}

/// A key in its base64 text form, checked when the config is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Key<K>(pub K);

/// The key types a config holds, read from base64.
pub trait KeyText: Sized {
    /// Where a key of this kind comes from, said when one is refused.
    const HINT: &'static str;
    fn from_text(text: &str) -> Result<Self, KeyError>;
}

impl KeyText for PrivateKey {
    const HINT: &'static str = MAKE_KEY_HINT;
    fn from_text(text: &str) -> Result<Self, KeyError> {
        PrivateKey::from_base64(text)
    }
}

impl KeyText for PublicKey {
    const HINT: &'static str = PUBLIC_KEY_HINT;
    fn from_text(text: &str) -> Result<Self, KeyError> {
        PublicKey::from_base64(text)
    }
}

impl KeyText for PresharedKey {
    const HINT: &'static str = MAKE_KEY_HINT;
    fn from_text(text: &str) -> Result<Self, KeyError> {
        PresharedKey::from_base64(text)
    }
}

impl<'de, K: KeyText> Deserialize<'de> for Key<K> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        K::from_text(&text)
            .map(Key)
            .map_err(|e| serde::de::Error::custom(format!("{e} ({})", K::HINT)))
    }
}
