//! The plan's routes and rules as rtnetlink requests, sent over the same
//! netlink socket the lab uses (`braid_lab::rtnl`).

use std::io;
use std::net::IpAddr;

use braid_lab::rtnl::{Rtnl, MAIN_TABLE};
use ipnet::IpNet;
use netlink_packet_core::{NLM_F_CREATE, NLM_F_EXCL, NLM_F_REPLACE};
use netlink_packet_route::route::{
    RouteAddress, RouteAttribute, RouteMessage, RouteProtocol, RouteScope, RouteType,
};
use netlink_packet_route::rule::{
    RuleAction as NlRuleAction, RuleAttribute, RuleFlags, RuleMessage,
};
use netlink_packet_route::{AddressFamily, RouteNetlinkMessage};

use super::plan::{Family, Rule, RuleAction, TunnelRoute};
use super::Kernel;

/// Every bit of the mark counts.
const FULL_MASK: u32 = u32::MAX;

fn address_family(family: Family) -> AddressFamily {
    match family {
        Family::V4 => AddressFamily::Inet,
        Family::V6 => AddressFamily::Inet6,
    }
}

/// A table id in a header byte; ids above 255 travel in the attribute only.
fn header_table(table: u32) -> u8 {
    u8::try_from(table).unwrap_or(0)
}

fn route_message(route: &TunnelRoute, oif: u32) -> RouteMessage {
    let mut message = RouteMessage::default();
    message.header.address_family = address_family(route.family());
    message.header.destination_prefix_length = route.prefix.prefix_len();
    message.header.table = header_table(route.table);
    message.header.protocol = RouteProtocol::Static;
    message.header.kind = RouteType::Unicast;
    // A route out of a device without gateway: the destination is "on the
    // link" (IPv6 ignores the scope).
    message.header.scope = match route.prefix {
        IpNet::V4(_) => RouteScope::Link,
        IpNet::V6(_) => RouteScope::Universe,
    };
    let destination = match route.prefix.network() {
        IpAddr::V4(a) => RouteAddress::Inet(a),
        IpAddr::V6(a) => RouteAddress::Inet6(a),
    };
    message.attributes = vec![
        RouteAttribute::Destination(destination),
        RouteAttribute::Oif(oif),
        RouteAttribute::Table(route.table),
    ];
    message
}

fn rule_message(rule: &Rule) -> RuleMessage {
    let mut message = RuleMessage::default();
    message.header.family = address_family(rule.family);
    message.header.action = NlRuleAction::ToTable;
    let mut attributes = vec![RuleAttribute::Priority(rule.priority)];
    match rule.action {
        RuleAction::MainWithoutDefault => {
            message.header.table = header_table(MAIN_TABLE);
            attributes.push(RuleAttribute::Table(MAIN_TABLE));
            attributes.push(RuleAttribute::SuppressPrefixLen(0));
        }
        RuleAction::TableUnlessMarked { table, mark } => {
            message.header.table = header_table(table);
            message.header.flags = RuleFlags::Invert;
            attributes.push(RuleAttribute::Table(table));
            attributes.push(RuleAttribute::FwMark(mark));
            attributes.push(RuleAttribute::FwMask(FULL_MASK));
        }
    }
    message.attributes = attributes;
    message
}

impl Kernel for Rtnl {
    fn add_route(&mut self, route: &TunnelRoute, oif: u32) -> io::Result<()> {
        // Replace: a route the table holds already for the same prefix
        // (left by hand, say) is braid's from now on, and removed on exit.
        self.request(
            RouteNetlinkMessage::NewRoute(route_message(route, oif)),
            NLM_F_CREATE | NLM_F_REPLACE,
        )
    }

    fn delete_route(&mut self, route: &TunnelRoute, oif: u32) -> io::Result<()> {
        self.request(RouteNetlinkMessage::DelRoute(route_message(route, oif)), 0)
    }

    fn add_rule(&mut self, rule: &Rule) -> io::Result<()> {
        self.request(
            RouteNetlinkMessage::NewRule(rule_message(rule)),
            NLM_F_CREATE | NLM_F_EXCL,
        )
    }

    fn delete_rule(&mut self, rule: &Rule) -> io::Result<()> {
        self.request(RouteNetlinkMessage::DelRule(rule_message(rule)), 0)
    }

    fn delete_rule_at(&mut self, family: Family, priority: u32) -> io::Result<()> {
        // Only the priority given: the kernel deletes the first rule there,
        // whatever it says (as `ip rule del priority N`).
        let mut message = RuleMessage::default();
        message.header.family = address_family(family);
        message.attributes = vec![RuleAttribute::Priority(priority)];
        self.request(RouteNetlinkMessage::DelRule(message), 0)
    }
}
