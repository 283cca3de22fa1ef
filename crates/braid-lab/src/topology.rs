//! Builds a lab's namespaces, links, addresses, neighbours and routes (see
//! the crate documentation for the picture) with rtnetlink and ioctls.

use std::fs::File;
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::path::Path;

use crate::iface::IfaceControl;
use braid_nft::{Masquerade, Table};

use crate::layout::{LabLayout, NatLayout, PathLayout, NAT_TABLE, NETNS_ROOT, SERVER_ADDR};
use crate::netns;
use crate::rtnl::{Mac, Route, Rtnl, MAIN_TABLE};
use crate::LabError;

/// Sockets that act in one namespace.
struct Namespace {
    name: String,
    file: File,
    rtnl: Rtnl,
    iface: IfaceControl,
}

impl Namespace {
    /// Creates namespace `name` and readies it: loopback up, no IPv6, no
    /// reverse-path filtering.
    fn create(name: &str) -> Result<Namespace, LabError> {
        netns::add(name)?;
        let (rtnl, iface) = netns::run_in(name, || {
            // IPv6 would add router solicitations and DAD chatter to every
            // path (a kernel without IPv6 has none to switch off); strict
            // reverse-path filtering would drop replies that come back over
            // a path other than the main route's.
            if Path::new("/proc/sys/net/ipv6").exists() {
                netns::sysctl("net.ipv6.conf.all.disable_ipv6", "1")?;
                netns::sysctl("net.ipv6.conf.default.disable_ipv6", "1")?;
            }
            netns::sysctl("net.ipv4.conf.all.rp_filter", "0")?;
            netns::sysctl("net.ipv4.conf.default.rp_filter", "0")?;
            let rtnl = Rtnl::open().map_err(LabError::io(format!("netlink socket in {name}")))?;
            let iface =
                IfaceControl::open().map_err(LabError::io(format!("ioctl socket in {name}")))?;
            Ok((rtnl, iface))
        })?;
        let path = Path::new(NETNS_ROOT).join(name);
        let file =
            File::open(&path).map_err(LabError::io(format!("opening {}", path.display())))?;
        let mut ns = Namespace {
            name: name.to_owned(),
            file,
            rtnl,
            iface,
        };
        let lo = ns.index("lo")?;
        ns.rtnl
            .set_up(lo)
            .map_err(LabError::io(format!("bringing lo up in {name}")))?;
        Ok(ns)
    }

    fn index(&self, iface: &str) -> Result<u32, LabError> {
        self.iface.index(iface).map_err(LabError::io(format!(
            "finding interface {iface:?} in {}",
            self.name
        )))
    }

    fn failed(&self, what: String) -> impl FnOnce(std::io::Error) -> LabError {
        LabError::io(format!("{what} in {}", self.name))
    }
}

/// A path to build: through the emulator, or one direct veth pair.
pub struct PathLink {
    pub layout: PathLayout,
    pub direct: bool,
}

pub fn build(lab: &LabLayout, paths: &[PathLink]) -> Result<(), LabError> {
    let mut client = Namespace::create(&lab.ns_client())?;
    let mut server = Namespace::create(&lab.ns_server())?;
    let mut emu = Namespace::create(&lab.ns_emulator())?;
    let lo = server.index("lo")?;
    server
        .rtnl
        .add_address(lo, SERVER_ADDR, 32)
        .map_err(server.failed(format!("adding {SERVER_ADDR}/32 on lo")))?;
    for p in paths {
        link_path(&mut client, &mut server, &mut emu, &p.layout, p.direct)?;
    }
    let nats: Vec<&NatLayout> = paths.iter().filter_map(|p| p.layout.nat.as_ref()).collect();
    if !nats.is_empty() {
        masquerade(&emu.name, &nats)?;
    }
    Ok(())
}

/// One veth pair from the emulator namespace into `ns`: `emu_iface` there,
/// `iface` (with `mac`) in `ns`, both up, offloads off on `iface` (one
/// frame per wire packet with a finished checksum: the emulator forwards
/// frames as they are and counts each as one packet). Returns `iface`'s
/// index. `ns` None is the emulator namespace itself.
fn veth_from_emulator(
    emu: &mut Namespace,
    emu_iface: &str,
    mut ns: Option<&mut Namespace>,
    iface: &str,
    mac: Mac,
) -> Result<u32, LabError> {
    let fd = ns
        .as_ref()
        .map_or(emu.file.as_raw_fd(), |n| n.file.as_raw_fd());
    emu.rtnl
        .add_veth(emu_iface, iface, fd, mac, None)
        .map_err(emu.failed(format!("adding veth {emu_iface} (peer {iface:?})")))?;
    let emu_index = emu.index(emu_iface)?;
    emu.rtnl
        .set_up(emu_index)
        .map_err(emu.failed(format!("bringing {emu_iface} up")))?;
    let ns = match ns.as_mut() {
        Some(n) => &mut **n,
        None => emu,
    };
    ns.iface
        .offloads_off(iface)
        .map_err(ns.failed(format!("switching offloads off on {iface:?}")))?;
    let index = ns.index(iface)?;
    ns.rtnl
        .set_up(index)
        .map_err(ns.failed(format!("bringing {iface:?} up")))?;
    Ok(index)
}

/// One veth pair from the client's interface to the server's, offloads on
/// (no emulator has to see wire packets); the interfaces' indexes.
fn direct_link(
    client: &mut Namespace,
    server: &mut Namespace,
    p: &PathLayout,
) -> Result<[u32; 2], LabError> {
    let iface = p.client_iface.as_str();
    server
        .rtnl
        .add_veth(
            iface,
            iface,
            client.file.as_raw_fd(),
            p.client_mac(),
            Some(p.server_mac()),
        )
        .map_err(server.failed(format!("adding veth {iface:?} to the client")))?;
    let mut index = [0u32; 2];
    for (slot, ns) in index.iter_mut().zip([&mut *client, &mut *server]) {
        *slot = ns.index(iface)?;
        ns.rtnl
            .set_up(*slot)
            .map_err(ns.failed(format!("bringing {iface:?} up")))?;
    }
    Ok(index)
}

fn link_path(
    client: &mut Namespace,
    server: &mut Namespace,
    emu: &mut Namespace,
    p: &PathLayout,
    direct: bool,
) -> Result<(), LabError> {
    let iface = p.client_iface.as_str();
    let client_index = if direct {
        let [client_index, server_index] = direct_link(client, server, p)?;
        server_end(server, p, server_index)?;
        client_index
    } else {
        let client_index = veth_from_emulator(
            emu,
            &p.emu_client_iface,
            Some(client),
            iface,
            p.client_mac(),
        )?;
        match &p.nat {
            None => {
                let server_index = veth_from_emulator(
                    emu,
                    &p.emu_server_iface,
                    Some(server),
                    iface,
                    p.server_mac(),
                )?;
                server_end(server, p, server_index)?;
            }
            Some(nat) => nat_path(server, emu, p, nat)?,
        }
        client_index
    };
    client
        .rtnl
        .add_address(client_index, p.client_addr, 24)
        .map_err(client.failed(format!("adding {}/24 on {iface:?}", p.client_addr)))?;
    client
        .rtnl
        .replace_neighbour(client_index, p.gateway, p.server_mac())
        .map_err(client.failed(format!("adding neighbour {}", p.gateway)))?;
    // A route to the server through every path, the first path preferred;
    // and one table per path for traffic from that path's address, so that a
    // socket bound to an address (as MPTCP subflows are) leaves through it.
    for (table, metric) in [(MAIN_TABLE, Some(p.table)), (p.table, None)] {
        client
            .rtnl
            .replace_route(&Route {
                destination: SERVER_ADDR,
                prefix_len: 32,
                oif: client_index,
                gateway: Some(p.gateway),
                source: None,
                table,
                metric,
            })
            .map_err(client.failed(format!("routing {SERVER_ADDR} via {iface:?}")))?;
    }
    client
        .rtnl
        .add_source_rule(p.client_addr, p.table, p.table)
        .map_err(client.failed(format!("adding the rule from {}", p.client_addr)))?;
    Ok(())
}

/// The server's end of a path without a NAT: the client's gateway address,
/// the route back from the server's address, a static neighbour.
fn server_end(server: &mut Namespace, p: &PathLayout, index: u32) -> Result<(), LabError> {
    let iface = p.client_iface.as_str();
    server
        .rtnl
        .add_address(index, p.gateway, 24)
        .map_err(server.failed(format!("adding {}/24 on {iface:?}", p.gateway)))?;
    route_to_client(server, index, p.client_addr)?;
    server
        .rtnl
        .replace_neighbour(index, p.client_addr, p.client_mac())
        .map_err(server.failed(format!("adding neighbour {}", p.client_addr)))
}

/// The server answers from its one address, as a server on the internet
/// does, also on sockets it connects itself (iperf3's UDP test does): the
/// link's own route to `peer`'s /24, replaced by one with that source.
fn route_to_client(server: &mut Namespace, oif: u32, peer: Ipv4Addr) -> Result<(), LabError> {
    let subnet = Ipv4Addr::from(u32::from(peer) & 0xffff_ff00);
    server
        .rtnl
        .replace_route(&Route {
            destination: subnet,
            prefix_len: 24,
            oif,
            gateway: None,
            source: Some(SERVER_ADDR),
            table: MAIN_TABLE,
            metric: None,
        })
        .map_err(server.failed(format!("routing {subnet}/24 from {SERVER_ADDR}")))
}

/// Path `p` behind its NAT: the emulated link ends at the NAT's inner
/// interface (holding the client's gateway address and MAC), and a plain
/// veth pair (no emulation; ARP works there) joins the NAT's outer
/// interface to the server. Packets from the path's client address are
/// routed out of the outer interface (its own table); the replies find
/// their way back through the NAT's connection tracking.
fn nat_path(
    server: &mut Namespace,
    emu: &mut Namespace,
    p: &PathLayout,
    nat: &NatLayout,
) -> Result<(), LabError> {
    let inner = veth_from_emulator(
        emu,
        &p.emu_server_iface,
        None,
        &nat.inner_iface,
        p.server_mac(),
    )?;
    emu.rtnl
        .add_address(inner, p.gateway, 24)
        .map_err(emu.failed(format!("adding {}/24 on {}", p.gateway, nat.inner_iface)))?;
    emu.rtnl
        .replace_neighbour(inner, p.client_addr, p.client_mac())
        .map_err(emu.failed(format!("adding neighbour {}", p.client_addr)))?;
    let iface = p.client_iface.as_str();
    let server_index = veth_from_emulator(
        emu,
        &nat.outer_iface,
        Some(server),
        iface,
        p.nat_server_mac(),
    )?;
    server
        .rtnl
        .add_address(server_index, nat.server_addr, 24)
        .map_err(server.failed(format!("adding {}/24 on {iface:?}", nat.server_addr)))?;
    route_to_client(server, server_index, nat.outer_addr)?;
    let outer = emu.index(&nat.outer_iface)?;
    emu.rtnl
        .add_address(outer, nat.outer_addr, 24)
        .map_err(emu.failed(format!(
            "adding {}/24 on {}",
            nat.outer_addr, nat.outer_iface
        )))?;
    emu.rtnl
        .replace_route(&Route {
            destination: SERVER_ADDR,
            prefix_len: 32,
            oif: outer,
            gateway: Some(nat.server_addr),
            source: None,
            table: p.table,
            metric: None,
        })
        .map_err(emu.failed(format!("routing {SERVER_ADDR} via {}", nat.outer_iface)))?;
    emu.rtnl
        .add_source_rule(p.client_addr, p.table, p.table)
        .map_err(emu.failed(format!("adding the rule from {}", p.client_addr)))
}

/// Switches forwarding on in the emulator namespace and masquerades what
/// leaves each NAT's outer interface (table `ip braid_lab_nat`), with a
/// random port per mapping as a carrier-grade NAT picks them: a mapping
/// deleted with `conntrack -D` comes back on a new port, a rebinding.
fn masquerade(emu: &str, nats: &[&NatLayout]) -> Result<(), LabError> {
    let table = Table {
        family: "ip",
        name: NAT_TABLE.to_owned(),
    };
    let rules: Vec<Masquerade> = nats
        .iter()
        .map(|n| Masquerade {
            iifname: None,
            oifname: n.outer_iface.clone(),
            fully_random_ports: true,
        })
        .collect();
    netns::run_in(emu, || {
        netns::sysctl("net.ipv4.ip_forward", "1")?;
        braid_nft::apply(&table.replace_with_masquerade(&rules)).map_err(LabError::Nat)
    })
}
