//! Builds a lab's namespaces, links, addresses, neighbours and routes (see
//! the crate documentation for the picture) with rtnetlink and ioctls.

use std::fs::File;
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::path::Path;

use crate::iface::IfaceControl;
use crate::layout::{LabLayout, PathLayout, NETNS_ROOT, SERVER_ADDR};
use crate::netns;
use crate::rtnl::{Route, Rtnl, MAIN_TABLE};
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
        let [client_index, server_index] = if p.direct {
            direct_link(&mut client, &mut server, &p.layout)?
        } else {
            emulated_link(&mut client, &mut server, &mut emu, &p.layout)?
        };
        address_and_route(
            &mut client,
            &mut server,
            &p.layout,
            client_index,
            server_index,
        )?;
    }
    Ok(())
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

/// Two veth pairs, client to emulator and emulator to server; the end
/// interfaces' indexes.
fn emulated_link(
    client: &mut Namespace,
    server: &mut Namespace,
    emu: &mut Namespace,
    p: &PathLayout,
) -> Result<[u32; 2], LabError> {
    let iface = p.client_iface.as_str();
    let mut index = [0u32; 2];
    for (slot, (emu_iface, ns, mac)) in index.iter_mut().zip([
        (&p.emu_client_iface, &mut *client, p.client_mac()),
        (&p.emu_server_iface, &mut *server, p.server_mac()),
    ]) {
        emu.rtnl
            .add_veth(emu_iface, iface, ns.file.as_raw_fd(), mac, None)
            .map_err(emu.failed(format!("adding veth {emu_iface} (peer {iface:?})")))?;
        let emu_index = emu.index(emu_iface)?;
        emu.rtnl
            .set_up(emu_index)
            .map_err(emu.failed(format!("bringing {emu_iface} up")))?;
        // One frame per wire packet with a finished checksum: the emulator
        // forwards frames as they are and counts each as one packet.
        ns.iface
            .offloads_off(iface)
            .map_err(ns.failed(format!("switching offloads off on {iface:?}")))?;
        *slot = ns.index(iface)?;
        ns.rtnl
            .set_up(*slot)
            .map_err(ns.failed(format!("bringing {iface:?} up")))?;
    }
    Ok(index)
}

/// Addresses, static neighbours and routes of a path whose interfaces exist.
fn address_and_route(
    client: &mut Namespace,
    server: &mut Namespace,
    p: &PathLayout,
    client_index: u32,
    server_index: u32,
) -> Result<(), LabError> {
    let iface = p.client_iface.as_str();
    client
        .rtnl
        .add_address(client_index, p.client_addr, 24)
        .map_err(client.failed(format!("adding {}/24 on {iface:?}", p.client_addr)))?;
    server
        .rtnl
        .add_address(server_index, p.gateway, 24)
        .map_err(server.failed(format!("adding {}/24 on {iface:?}", p.gateway)))?;
    // The server answers from its one address, as a server on the internet
    // does, also on sockets it connects itself (iperf3's UDP test does): the
    // link's own route, replaced by one with that source.
    let subnet = Ipv4Addr::from(u32::from(p.client_addr) & 0xffff_ff00);
    server
        .rtnl
        .replace_route(&Route {
            destination: subnet,
            prefix_len: 24,
            oif: server_index,
            gateway: None,
            source: Some(SERVER_ADDR),
            table: MAIN_TABLE,
            metric: None,
        })
        .map_err(server.failed(format!("routing {subnet}/24 from {SERVER_ADDR}")))?;
    client
        .rtnl
        .replace_neighbour(client_index, p.gateway, p.server_mac())
        .map_err(client.failed(format!("adding neighbour {}", p.gateway)))?;
    server
        .rtnl
        .replace_neighbour(server_index, p.client_addr, p.client_mac())
        .map_err(server.failed(format!("adding neighbour {}", p.client_addr)))?;
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
