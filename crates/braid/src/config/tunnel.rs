//! `[tunnel]`, the same in both configs: the TUN device's name, its
//! addresses inside the tunnel, its MTU, its offload, and whether lost
//! datagrams are re-sent.

use std::net::IpAddr;

use serde::Deserialize;
use toml::Spanned;

use braid_core::session::MAX_TUNNEL_MTU;
use braid_io::{is_valid_interface_name, MAX_INTERFACE_NAME_LEN};

use super::values::TunnelAddr;
use super::Invalid;

/// Smallest MTU an IPv6 link may have (RFC 8200 §5).
pub const MIN_TUNNEL_MTU: u16 = 1280;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TunnelConfig {
    /// TUN device name.
    #[serde(default = "default_tun_name")]
    pub name: Spanned<String>,
    pub ipv4: Option<Spanned<TunnelAddr>>,
    pub ipv6: Option<Spanned<TunnelAddr>>,
    /// MTU of the TUN device: inner packets up to this size.
    pub mtu: Option<Spanned<u16>>,
    /// Whether this end re-sends, on another path or the same one, a
    /// datagram its acknowledgements show a path lost, while it can still
    /// arrive within the queue delay limit. On by default: a tunnel carries
    /// TCP, and a lossy path's losses otherwise reach every inner flow.
    #[serde(default = "default_true")]
    pub resend_losses: bool,
    /// TSO/GRO on the TUN device: inner TCP leaves the kernel in segments
    /// of up to 64 KB, which braid cuts into packets, and arrives in
    /// packets merged into such segments. On by default (fewer system
    /// calls and a kernel TCP that handles segments, not packets); off for
    /// a kernel or a setup that misbehaves with it.
    #[serde(default = "default_true")]
    pub offload: bool,
    /// Whether this end measures each path's rate in its sending
    /// direction with a packet train (32 full-size packets, once per path,
    /// while the tunnel is idle) when the path comes up with no rate
    /// known. On by default: a fresh tunnel's first transfer otherwise
    /// finds its slower paths' rates from the traffic, more slowly.
    #[serde(default = "default_true")]
    pub path_trains: bool,
}

fn default_true() -> bool {
    true
}

fn default_tun_name() -> Spanned<String> {
    Spanned::new(0..0, "braid0".to_owned())
}

/// The TUN device's name: exact (no `%`) and one Linux takes.
fn check_tun_name(name: &Spanned<String>) -> Result<(), Invalid> {
    let n = name.get_ref();
    if n.contains('%') {
        // The kernel would number the device itself (braid%d -> braid0),
        // and the name in the config would be no device's.
        return Err(Invalid::new(
            name.span(),
            "name",
            format!(
                "{n:?}: '%' would let the kernel choose the name; give the device's exact name"
            ),
        ));
    }
    check_interface_name("name", name)
}

/// `field` holds a name Linux takes for an interface
/// ([`is_valid_interface_name`]).
pub(super) fn check_interface_name(field: &str, name: &Spanned<String>) -> Result<(), Invalid> {
    let n = name.get_ref();
    if is_valid_interface_name(n) {
        return Ok(());
    }
    let problem = if (1..=MAX_INTERFACE_NAME_LEN).contains(&n.len()) {
        format!("{n:?} is not an interface name (no '/', ':' or spaces, not \".\" or \"..\")")
    } else {
        format!("{n:?} is not 1 to {MAX_INTERFACE_NAME_LEN} bytes long")
    };
    Err(Invalid::new(name.span(), field, problem))
}

impl TunnelConfig {
    /// This end's addresses inside the tunnel.
    pub fn addrs(&self) -> impl Iterator<Item = IpAddr> + '_ {
        [&self.ipv4, &self.ipv6]
            .into_iter()
            .flatten()
            .map(|a| a.get_ref().addr())
    }
}

impl TunnelConfig {
    /// Checks the `[tunnel]` table that spans `table` in its file (a rule
    /// broken by what the table lacks is reported at the table).
    pub fn validate_table(&self, table: std::ops::Range<usize>) -> Result<(), Invalid> {
        if self.ipv4.is_none() && self.ipv6.is_none() {
            return Err(Invalid::new(
                table,
                "tunnel",
                "[tunnel] needs an ipv4 or an ipv6 address",
            ));
        }
        for (family, addr) in [("ipv4", &self.ipv4), ("ipv6", &self.ipv6)] {
            if let Some(addr) = addr {
                let right = match family {
                    "ipv4" => addr.get_ref().addr().is_ipv4(),
                    _ => addr.get_ref().addr().is_ipv6(),
                };
                if !right {
                    return Err(Invalid::new(
                        addr.span(),
                        family,
                        format!("not an {family} address"),
                    ));
                }
            }
        }
        if let Some(mtu) = &self.mtu {
            let value = *mtu.get_ref();
            let problem = if value < MIN_TUNNEL_MTU {
                Some(format!("below {MIN_TUNNEL_MTU}, the least IPv6 allows"))
            } else if usize::from(value) > MAX_TUNNEL_MTU {
                Some(format!(
                    "above {MAX_TUNNEL_MTU}, the largest inner packet braid carries"
                ))
            } else {
                None
            };
            if let Some(problem) = problem {
                let text = format!("{value} is {problem}");
                return Err(Invalid::new(mtu.span(), "mtu", text));
            }
        }
        check_tun_name(&self.name)?;
        Ok(())
    }
}
