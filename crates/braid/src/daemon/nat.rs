//! The server's `[nat]`: what comes out of the tunnel and leaves through
//! the uplink is masqueraded to the uplink's address, so that hosts beyond
//! the server answer without a route back to the clients' tunnel
//! addresses.
//!
//! The rule lives in a table of braid's own, `inet braid_nat_<TUN>`
//! (one table for IPv4 and IPv6), made at start and deleted when the
//! server stops, on a signal or an error ([`NatTable`]'s `Drop`); a table
//! of that name left by a run that was killed is replaced at start, in the
//! same nft transaction. The rule matches packets that came in through
//! the TUN device (`iifname`): that is every client's allowed addresses,
//! also prefixes routed behind a client, and nothing the server host sends
//! itself. Forwarding is switched on for the tunnel's families and left on
//! at exit (another service may rely on it by then); the log says so.

use std::ffi::CString;

use braid_nft::{Masquerade, NftError, Table};
use ipnet::IpNet;
use tracing::{info, warn};

use crate::config::server::ServerConfig;
use crate::Failure;

/// The sysctl that lets the kernel forward each family.
const IPV4_FORWARDING: &str = "/proc/sys/net/ipv4/ip_forward";
const IPV6_FORWARDING: &str = "/proc/sys/net/ipv6/conf/all/forwarding";

/// The table's name for the TUN device `tun`.
pub fn table_name(tun: &str) -> String {
    format!("braid_nat_{tun}")
}

/// Refuses an uplink the kernel does not know, before anything is made.
pub fn check_uplink(uplink: &str) -> Result<(), String> {
    let exists = CString::new(uplink)
        // SAFETY: a NUL-terminated string that outlives the call.
        .is_ok_and(|name| unsafe { libc::if_nametoindex(name.as_ptr()) } != 0);
    if exists {
        Ok(())
    } else {
        Err(format!("[nat] uplink: interface {uplink:?} does not exist"))
    }
}

/// The server's `[nat]` table, if the config asks for one, for the TUN
/// device `tun`. The families to forward are those of the tunnel's own
/// addresses and of every client's allowed prefixes.
pub fn start(config: &ServerConfig, tun: &str) -> Result<Option<NatTable>, Failure> {
    let Some(nat) = &config.nat else {
        return Ok(None);
    };
    let nets = config
        .peers
        .iter()
        .flat_map(|p| p.get_ref().allowed.iter())
        .chain(config.tunnel.get_ref().ipv4.iter().map(|a| &a.get_ref().0))
        .chain(config.tunnel.get_ref().ipv6.iter().map(|a| &a.get_ref().0));
    let (ipv4, ipv6) = nets.fold((false, false), |(v4, v6), net| {
        (
            v4 || matches!(net, IpNet::V4(_)),
            v6 || matches!(net, IpNet::V6(_)),
        )
    });
    NatTable::create(tun, nat.uplink.get_ref(), ipv4, ipv6).map(Some)
}

/// The NAT table while the server runs; deleted on drop.
pub struct NatTable {
    table: Table,
}

impl NatTable {
    /// Makes the table, replacing a stale one, and switches forwarding on
    /// for the families the tunnel carries (the table first: if nft is
    /// missing, nothing is changed).
    fn create(tun: &str, uplink: &str, ipv4: bool, ipv6: bool) -> Result<NatTable, Failure> {
        let table = Table {
            family: "inet",
            name: table_name(tun),
        };
        braid_nft::apply(&table.replace_with_masquerade(&[Masquerade {
            iifname: Some(tun.to_owned()),
            oifname: uplink.to_owned(),
            fully_random_ports: false,
        }]))
        .map_err(|e| Failure::Runtime(format!("[nat]: {e}")))?;
        // From here on, an error deletes the table again (drop).
        let nat = NatTable { table };
        for (carried, is_ipv6) in [(ipv4, false), (ipv6, true)] {
            if carried {
                enable_forwarding(is_ipv6)?;
            }
        }
        info!(
            table = %format!("inet {}", nat.table.name),
            tun,
            uplink,
            "NAT on: the tunnel's traffic leaves {uplink} masqueraded"
        );
        Ok(nat)
    }
}

impl Drop for NatTable {
    fn drop(&mut self) {
        match braid_nft::apply(&self.table.delete()) {
            Ok(()) => info!(table = %format!("inet {}", self.table.name), "NAT off: table deleted"),
            Err(NftError::Refused(why)) => warn!(
                table = %format!("inet {}", self.table.name),
                "NAT table already gone or not deletable: {why}"
            ),
            Err(e) => warn!("deleting the NAT table: {e}"),
        }
    }
}

/// Writes 1 to the family's forwarding switch unless it is on already.
fn enable_forwarding(ipv6: bool) -> Result<(), Failure> {
    let (file, family) = if ipv6 {
        (IPV6_FORWARDING, "IPv6")
    } else {
        (IPV4_FORWARDING, "IPv4")
    };
    let now = std::fs::read_to_string(file)
        .map_err(|e| Failure::Runtime(format!("[nat]: reading {file}: {e}")))?;
    if now.trim() == "1" {
        info!("{family} forwarding already on ({file})");
        return Ok(());
    }
    std::fs::write(file, "1").map_err(|e| {
        Failure::Runtime(format!(
            "[nat]: switching {family} forwarding on ({file}): {e}"
        ))
    })?;
    info!("{family} forwarding switched on ({file} = 1); left on when the server stops");
    Ok(())
}
