//! `[tunnel]`, the same in both configs: the TUN device's name, its
//! addresses inside the tunnel, its MTU, and whether lost datagrams are
//! re-sent.

use serde::Deserialize;
use toml::Spanned;

use super::values::TunnelAddr;
use super::{Invalid, Validate};

/// Smallest MTU an IPv6 link may have (RFC 8200 §5).
pub const MIN_TUNNEL_MTU: u16 = 1280;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TunnelConfig {
    /// TUN device name.
    #[serde(default = "default_tun_name")]
    pub name: String,
    pub ipv4: Option<Spanned<TunnelAddr>>,
    pub ipv6: Option<Spanned<TunnelAddr>>,
    /// MTU of the TUN device: inner packets up to this size.
    pub mtu: Option<Spanned<u16>>,
    /// Whether this end re-sends, on another path or the same one, a
    /// datagram its acknowledgements show a path lost, while it can still
    /// arrive within the queue delay limit. On by default: a tunnel carries
    /// TCP, and a lossy path's losses otherwise reach every inner flow.
    #[serde(default = "default_resend_losses")]
    pub resend_losses: bool,
}

fn default_resend_losses() -> bool {
    true
}

fn default_tun_name() -> String {
    "braid0".to_owned()
}

impl Validate for TunnelConfig {
    fn validate(&self) -> Result<(), Invalid> {
        if self.ipv4.is_none() && self.ipv6.is_none() {
            return Err(Invalid::new(
                0..0,
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
            if *mtu.get_ref() < MIN_TUNNEL_MTU {
                return Err(Invalid::new(
                    mtu.span(),
                    "mtu",
                    format!(
                        "{} is below {MIN_TUNNEL_MTU}, the least IPv6 allows",
                        mtu.get_ref()
                    ),
                ));
            }
        }
        Ok(())
    }
}
