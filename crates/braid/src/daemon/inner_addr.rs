//! The addresses of an inner IP packet, and the flow it belongs to, read
//! without trusting it: a packet too short for its header has none.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// IP protocol numbers whose first 4 bytes are the source and destination
/// ports: TCP, UDP, SCTP, UDP-Lite.
const PORTS_PROTOCOLS: [u8; 4] = [6, 17, 132, 136];

/// Source and destination of an IPv4 or IPv6 packet.
pub fn addresses(packet: &[u8]) -> Option<(IpAddr, IpAddr)> {
    match packet.first()? >> 4 {
        4 if packet.len() >= 20 => {
            let src: [u8; 4] = packet[12..16].try_into().ok()?;
            let dst: [u8; 4] = packet[16..20].try_into().ok()?;
            Some((Ipv4Addr::from(src).into(), Ipv4Addr::from(dst).into()))
        }
        6 if packet.len() >= 40 => {
            let src: [u8; 16] = packet[8..24].try_into().ok()?;
            let dst: [u8; 16] = packet[24..40].try_into().ok()?;
            Some((Ipv6Addr::from(src).into(), Ipv6Addr::from(dst).into()))
        }
        _ => None,
    }
}

/// Whether a packet belongs to the TUN device's own link and has no
/// business crossing to the other end: from a link-local address
/// (169.254.0.0/16, fe80::/10) or to a link-local multicast group
/// (224.0.0.0/24, ff02::/16): the kernel's own IPv6 router solicitations
/// and MLD reports, for instance, which the server would refuse anyway as
/// not from the client's tunnel addresses.
pub fn link_scoped(packet: &[u8]) -> bool {
    match addresses(packet) {
        Some((IpAddr::V4(src), IpAddr::V4(dst))) => {
            src.is_link_local() || dst.octets()[..3] == [224, 0, 0]
        }
        Some((IpAddr::V6(src), IpAddr::V6(dst))) => {
            src.is_unicast_link_local() || dst.segments()[0] == 0xff02
        }
        _ => false,
    }
}

/// The flow id of an inner packet for the session's flow queue: a hash of
/// its addresses, protocol and, for TCP and UDP, ports (the 5-tuple).
/// IPv6 extension headers and IPv4 fragments after the first are hashed
/// without ports; a packet without an IP header is flow 0.
pub fn flow_id(packet: &[u8]) -> u64 {
    let Some((src, dst)) = addresses(packet) else {
        return 0;
    };
    let (protocol, transport) = match src {
        IpAddr::V4(_) => {
            let header = usize::from(packet[0] & 0x0f) * 4;
            let fragment_offset = u16::from_be_bytes([packet[6], packet[7]]) & 0x1fff;
            let rest = packet.get(header..).filter(|_| fragment_offset == 0);
            (packet[9], rest)
        }
        IpAddr::V6(_) => (packet[6], packet.get(40..)),
    };
    let ports = transport
        .filter(|_| PORTS_PROTOCOLS.contains(&protocol))
        .and_then(|t| t.get(..4));
    let mut h = DefaultHasher::new();
    (src, dst, protocol, ports).hash(&mut h);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v6(src: &str, dst: &str) -> Vec<u8> {
        let mut p = vec![0u8; 40];
        p[0] = 0x60;
        p[8..24].copy_from_slice(&src.parse::<Ipv6Addr>().unwrap().octets());
        p[24..40].copy_from_slice(&dst.parse::<Ipv6Addr>().unwrap().octets());
        p
    }

    fn v4(src: [u8; 4], dst: [u8; 4]) -> Vec<u8> {
        let mut p = vec![0u8; 20];
        p[0] = 0x45;
        p[12..16].copy_from_slice(&src);
        p[16..20].copy_from_slice(&dst);
        p
    }

    #[test]
    fn link_scoped_packets_are_told_apart() {
        // An MLD report and a router solicitation from the TUN device's
        // link-local address.
        assert!(link_scoped(&v6("fe80::1", "ff02::16")));
        assert!(link_scoped(&v6("::", "ff02::2")));
        assert!(link_scoped(&v6("fd77::2", "ff02::1")));
        assert!(link_scoped(&v4([169, 254, 3, 4], [10, 77, 0, 1])));
        assert!(link_scoped(&v4([10, 77, 0, 2], [224, 0, 0, 251])));
        // Ordinary traffic, including wider multicast scopes, crosses.
        assert!(!link_scoped(&v6("fd77::2", "fd77::1")));
        assert!(!link_scoped(&v6("fd77::2", "ff05::2")));
        assert!(!link_scoped(&v4([10, 77, 0, 2], [10, 77, 0, 1])));
        assert!(!link_scoped(&v4([10, 77, 0, 2], [224, 0, 1, 1])));
        assert!(!link_scoped(&[0x60; 10]));
    }

    fn tcp_v4(src_port: u16, dst_port: u16) -> Vec<u8> {
        let mut p = vec![0u8; 40];
        p[0] = 0x45;
        p[9] = 6;
        p[12..16].copy_from_slice(&[10, 0, 0, 1]);
        p[16..20].copy_from_slice(&[10, 0, 0, 2]);
        p[20..22].copy_from_slice(&src_port.to_be_bytes());
        p[22..24].copy_from_slice(&dst_port.to_be_bytes());
        p
    }

    #[test]
    fn flows_differ_by_ports_and_agree_on_the_same_tuple() {
        let a = tcp_v4(40000, 5201);
        let mut a_later = a.clone();
        a_later[30] = 0xff; // sequence number: not part of the flow
        assert_eq!(flow_id(&a), flow_id(&a_later));
        assert_ne!(flow_id(&a), flow_id(&tcp_v4(40001, 5201)));
        // A later fragment has no ports to read: hashed without them,
        // never out of bounds.
        let mut fragment = a.clone();
        fragment[6] = 0x00;
        fragment[7] = 0x10;
        assert_ne!(flow_id(&fragment), flow_id(&a));
        // Truncated or not IP: flow 0, no panic.
        assert_eq!(flow_id(&a[..19]), 0);
        assert_eq!(flow_id(&[]), 0);
        let mut short_header = tcp_v4(1, 2);
        short_header[0] = 0x4f; // IHL 60 bytes, longer than the packet
        let _ = flow_id(&short_header);
    }

    #[test]
    fn reads_v4_and_v6_and_refuses_short_or_unknown() {
        let mut v4 = [0u8; 20];
        v4[0] = 0x45;
        v4[12..16].copy_from_slice(&[10, 0, 0, 1]);
        v4[16..20].copy_from_slice(&[10, 0, 0, 2]);
        assert_eq!(
            addresses(&v4),
            Some(("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap()))
        );
        assert_eq!(addresses(&v4[..19]), None);

        let mut v6 = [0u8; 40];
        v6[0] = 0x60;
        v6[23] = 1;
        v6[39] = 2;
        assert_eq!(
            addresses(&v6),
            Some(("::1".parse().unwrap(), "::2".parse().unwrap()))
        );
        assert_eq!(addresses(&v6[..39]), None);
        assert_eq!(addresses(&[0x50; 40]), None);
        assert_eq!(addresses(&[]), None);
    }
}
