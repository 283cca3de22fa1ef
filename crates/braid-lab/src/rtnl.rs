//! Links, addresses, routes, rules and neighbours over rtnetlink: what
//! `ip link/addr/route/rule/neigh` do, as structured requests, so that no
//! name a user gives is ever read as a keyword. One socket per namespace:
//! a netlink socket acts in the namespace it was made in.

use std::io;
use std::net::{IpAddr, Ipv4Addr};
use std::os::fd::RawFd;

use netlink_packet_core::{
    NetlinkHeader, NetlinkMessage, NetlinkPayload, NLM_F_ACK, NLM_F_CREATE, NLM_F_EXCL,
    NLM_F_REPLACE, NLM_F_REQUEST,
};
use netlink_packet_route::address::{AddressAttribute, AddressMessage};
use netlink_packet_route::link::{
    InfoData, InfoKind, InfoVeth, LinkAttribute, LinkFlags, LinkInfo, LinkMessage,
};
use netlink_packet_route::neighbour::{
    NeighbourAddress, NeighbourAttribute, NeighbourMessage, NeighbourState,
};
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteMessage, RouteProtocol, RouteScope, RouteType,
};
use netlink_packet_route::rule::{RuleAction, RuleAttribute, RuleMessage};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};
use netlink_sys::{protocols::NETLINK_ROUTE, Socket, SocketAddr};

/// Room for any answer to a request (an ack, or an error quoting the
/// request's header and extended-ack text).
const RECV_BUFFER: usize = 16 * 1024;
/// Largest request: a veth pair with its peer's attributes.
const SEND_BUFFER: usize = 1024;
/// The kernel's main routing table.
pub const MAIN_TABLE: u32 = 254;

pub struct Rtnl {
    socket: Socket,
    sequence: u32,
    send_buf: Vec<u8>,
    recv_buf: Vec<u8>,
}

/// A 6-byte Ethernet address.
pub type Mac = [u8; 6];

/// An IPv4 route: to `destination/prefix_len` out of interface `oif`.
pub struct Route {
    pub destination: Ipv4Addr,
    pub prefix_len: u8,
    pub oif: u32,
    pub gateway: Option<Ipv4Addr>,
    /// The source address of packets that use the route.
    pub source: Option<Ipv4Addr>,
    pub table: u32,
    pub metric: Option<u32>,
}

impl Rtnl {
    /// A socket acting in the calling thread's network namespace.
    pub fn open() -> io::Result<Rtnl> {
        let mut socket = Socket::new(NETLINK_ROUTE)?;
        socket.bind_auto()?;
        socket.connect(&SocketAddr::new(0, 0))?;
        Ok(Rtnl {
            socket,
            sequence: 0,
            send_buf: vec![0; SEND_BUFFER],
            recv_buf: vec![0; RECV_BUFFER],
        })
    }

    /// Sends one request and waits for the kernel's ack or error.
    pub fn request(&mut self, message: RouteNetlinkMessage, flags: u16) -> io::Result<()> {
        self.sequence = self.sequence.wrapping_add(1);
        let mut header = NetlinkHeader::default();
        header.flags = NLM_F_REQUEST | NLM_F_ACK | flags;
        header.sequence_number = self.sequence;
        let mut packet = NetlinkMessage::new(header, NetlinkPayload::from(message));
        packet.finalize();
        let len = packet.buffer_len();
        if len > self.send_buf.len() {
            return Err(io::Error::other(format!(
                "netlink request of {len} bytes too large"
            )));
        }
        packet.serialize(&mut self.send_buf[..len]);
        self.socket.send(&self.send_buf[..len], 0)?;
        loop {
            let n = self.socket.recv(&mut &mut self.recv_buf[..], 0)?;
            let mut offset = 0;
            while offset < n {
                let answer =
                    NetlinkMessage::<RouteNetlinkMessage>::deserialize(&self.recv_buf[offset..n])
                        .map_err(|e| io::Error::other(format!("bad netlink answer: {e}")))?;
                let size = answer.header.length as usize;
                if answer.header.sequence_number == self.sequence {
                    if let NetlinkPayload::Error(e) = answer.payload {
                        return match e.code {
                            None => Ok(()),
                            Some(_) => Err(e.to_io()),
                        };
                    }
                }
                if size == 0 {
                    break;
                }
                offset += size;
            }
        }
    }

    /// Creates veth pair `name` (here) and `peer_name` in the namespace open
    /// as `peer_ns`, the peer with hardware address `peer_mac` and this end
    /// with `mac` (`None`: one the kernel picks).
    pub fn add_veth(
        &mut self,
        name: &str,
        peer_name: &str,
        peer_ns: RawFd,
        peer_mac: Mac,
        mac: Option<Mac>,
    ) -> io::Result<()> {
        let mut peer = LinkMessage::default();
        peer.attributes = vec![
            LinkAttribute::IfName(peer_name.to_owned()),
            LinkAttribute::Address(peer_mac.to_vec()),
            LinkAttribute::NetNsFd(peer_ns),
        ];
        let mut link = LinkMessage::default();
        link.attributes = vec![
            LinkAttribute::IfName(name.to_owned()),
            LinkAttribute::LinkInfo(vec![
                LinkInfo::Kind(InfoKind::Veth),
                LinkInfo::Data(InfoData::Veth(InfoVeth::Peer(peer))),
            ]),
        ];
        if let Some(mac) = mac {
            link.attributes.push(LinkAttribute::Address(mac.to_vec()));
        }
        self.request(
            RouteNetlinkMessage::NewLink(link),
            NLM_F_CREATE | NLM_F_EXCL,
        )
    }

    /// Brings interface `index` up.
    pub fn set_up(&mut self, index: u32) -> io::Result<()> {
        let mut link = LinkMessage::default();
        link.header.index = index;
        link.header.flags = LinkFlags::Up;
        link.header.change_mask = LinkFlags::Up;
        self.request(RouteNetlinkMessage::SetLink(link), 0)
    }

    /// Adds `addr/prefix_len` on interface `index`.
    pub fn add_address(&mut self, index: u32, addr: Ipv4Addr, prefix_len: u8) -> io::Result<()> {
        let mut message = AddressMessage::default();
        message.header.family = AddressFamily::Inet;
        message.header.prefix_len = prefix_len;
        message.header.index = index;
        message.attributes = vec![
            AddressAttribute::Local(IpAddr::V4(addr)),
            AddressAttribute::Address(IpAddr::V4(addr)),
        ];
        self.request(
            RouteNetlinkMessage::NewAddress(message),
            NLM_F_CREATE | NLM_F_EXCL,
        )
    }

    /// Adds or replaces a unicast route: scope link without a gateway (the
    /// destination is on the link), universe with one.
    pub fn replace_route(&mut self, route: &Route) -> io::Result<()> {
        let mut message = RouteMessage::default();
        message.header.address_family = AddressFamily::Inet;
        message.header.destination_prefix_length = route.prefix_len;
        message.header.table = u8::try_from(route.table).unwrap_or(0);
        message.header.protocol = RouteProtocol::Static;
        message.header.kind = RouteType::Unicast;
        message.header.scope = if route.gateway.is_some() {
            RouteScope::Universe
        } else {
            RouteScope::Link
        };
        let mut attributes = vec![
            RouteAttribute::Destination(RouteAddress::Inet(route.destination)),
            RouteAttribute::Oif(route.oif),
            RouteAttribute::Table(route.table),
        ];
        if let Some(gateway) = route.gateway {
            attributes.push(RouteAttribute::Gateway(RouteAddress::Inet(gateway)));
        }
        if let Some(source) = route.source {
            attributes.push(RouteAttribute::PrefSource(RouteAddress::Inet(source)));
        }
        if let Some(metric) = route.metric {
            attributes.push(RouteAttribute::Priority(metric));
        }
        message.attributes = attributes;
        self.request(
            RouteNetlinkMessage::NewRoute(message),
            NLM_F_CREATE | NLM_F_REPLACE,
        )
    }

    /// Adds the rule "from `source` look up `table`" at `priority`.
    pub fn add_source_rule(
        &mut self,
        source: Ipv4Addr,
        table: u32,
        priority: u32,
    ) -> io::Result<()> {
        let mut message = RuleMessage::default();
        message.header.family = AddressFamily::Inet;
        message.header.src_len = 32;
        message.header.table = u8::try_from(table).unwrap_or(0);
        message.header.action = RuleAction::ToTable;
        message.attributes = vec![
            RuleAttribute::Source(IpAddr::V4(source)),
            RuleAttribute::Table(table),
            RuleAttribute::Priority(priority),
        ];
        self.request(
            RouteNetlinkMessage::NewRule(message),
            NLM_F_CREATE | NLM_F_EXCL,
        )
    }

    /// Adds or replaces a permanent neighbour entry: `addr` is at `mac` on
    /// interface `index`, so no ARP ever crosses a path.
    pub fn replace_neighbour(&mut self, index: u32, addr: Ipv4Addr, mac: Mac) -> io::Result<()> {
        let mut message = NeighbourMessage::default();
        message.header.family = AddressFamily::Inet;
        message.header.ifindex = index;
        message.header.state = NeighbourState::Permanent;
        message.attributes = vec![
            NeighbourAttribute::Destination(NeighbourAddress::Inet(addr)),
            NeighbourAttribute::LinkLayerAddress(mac.to_vec()),
        ];
        self.request(
            RouteNetlinkMessage::NewNeighbour(message),
            NLM_F_CREATE | NLM_F_REPLACE,
        )
    }
}
