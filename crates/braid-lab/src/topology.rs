//! Builds a lab's namespaces, links, addresses, neighbours and routes (see
//! the crate documentation for the picture).

use std::net::Ipv4Addr;

use crate::layout::{LabLayout, PathLayout, SERVER_ADDR};
use crate::netns::{add, exec_in, ip_in};
use crate::LabError;

pub fn build(lab: &LabLayout, paths: &[PathLayout]) -> Result<(), LabError> {
    let (client, server, emu) = (lab.ns_client(), lab.ns_server(), lab.ns_emulator());
    for ns in [&client, &server, &emu] {
        add(ns)?;
        // IPv6 would add router solicitations and DAD chatter to every path;
        // strict reverse-path filtering would drop replies that come back
        // over a path other than the main route's.
        exec_in(
            ns,
            "sysctl",
            &[
                "-qw",
                "net.ipv6.conf.all.disable_ipv6=1",
                "net.ipv6.conf.default.disable_ipv6=1",
                "net.ipv4.conf.all.rp_filter=0",
                "net.ipv4.conf.default.rp_filter=0",
            ],
        )?;
        ip_in(ns, &["link", "set", "lo", "up"])?;
    }
    let server_addr = SERVER_ADDR.to_string();
    ip_in(
        &server,
        &["addr", "add", &format!("{server_addr}/32"), "dev", "lo"],
    )?;
    for p in paths {
        link_path(&client, &server, &emu, p)?;
    }
    Ok(())
}

fn link_path(client: &str, server: &str, emu: &str, p: &PathLayout) -> Result<(), LabError> {
    let iface = p.client_iface.as_str();
    let (client_mac, server_mac) = (p.client_mac(), p.server_mac());
    for (emu_iface, ns, mac) in [
        (&p.emu_client_iface, client, &client_mac),
        (&p.emu_server_iface, server, &server_mac),
    ] {
        ip_in(
            emu,
            &[
                "link", "add", emu_iface, "type", "veth", "peer", "name", iface, "netns", ns,
                "address", mac,
            ],
        )?;
        ip_in(emu, &["link", "set", emu_iface, "up"])?;
        // One frame per wire packet with a finished checksum: the emulator
        // forwards frames as they are and counts each as one packet.
        exec_in(
            ns,
            "ethtool",
            &[
                "-K", iface, "tx", "off", "tso", "off", "gso", "off", "gro", "off",
            ],
        )?;
        ip_in(ns, &["link", "set", iface, "up"])?;
    }
    let client_addr = p.client_addr.to_string();
    let gateway = p.gateway.to_string();
    ip_in(
        client,
        &["addr", "add", &format!("{client_addr}/24"), "dev", iface],
    )?;
    ip_in(
        server,
        &["addr", "add", &format!("{gateway}/24"), "dev", iface],
    )?;
    // The server answers from its one address, as a server on the internet
    // does, also on sockets it connects itself (iperf3's UDP test does).
    let subnet = Ipv4Addr::from(u32::from(p.client_addr) & 0xffff_ff00);
    let server_addr = SERVER_ADDR.to_string();
    ip_in(
        server,
        &[
            "route",
            "replace",
            &format!("{subnet}/24"),
            "dev",
            iface,
            "proto",
            "kernel",
            "scope",
            "link",
            "src",
            &server_addr,
        ],
    )?;
    ip_in(
        client,
        &[
            "neigh",
            "replace",
            &gateway,
            "lladdr",
            &server_mac,
            "dev",
            iface,
            "nud",
            "permanent",
        ],
    )?;
    ip_in(
        server,
        &[
            "neigh",
            "replace",
            &client_addr,
            "lladdr",
            &client_mac,
            "dev",
            iface,
            "nud",
            "permanent",
        ],
    )?;
    // A route to the server through every path, the first path preferred;
    // and one table per path for traffic from that path's address, so that a
    // socket bound to an address (as MPTCP subflows are) leaves through it.
    let table = p.table.to_string();
    for selector in ["metric", "table"] {
        ip_in(
            client,
            &[
                "route",
                "add",
                &server_addr,
                "via",
                &gateway,
                "dev",
                iface,
                selector,
                &table,
            ],
        )?;
    }
    ip_in(
        client,
        &[
            "rule",
            "add",
            "from",
            &client_addr,
            "table",
            &table,
            "priority",
            &table,
        ],
    )?;
    Ok(())
}
