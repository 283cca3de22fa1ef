//! Whether a client path's link can carry it now: its interface exists,
//! is up with a carrier and holds an address of the server's family; or
//! its source address is on an interface that is up.

use std::fmt;

use crate::interfaces::InterfaceList;
use crate::path_socket::Binding;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkStatus {
    /// The path can send, through the interface with this index.
    Usable { index: u32 },
    /// No such interface, or no interface holds the source address.
    Missing,
    /// The interface is there but down or without a carrier.
    Down,
    /// The interface holds no address of the server's family.
    NoAddress,
}

impl LinkStatus {
    /// The status of `binding`'s link in `list`, for a server of the
    /// family `ipv6` says.
    pub fn of(binding: &Binding, list: &InterfaceList, ipv6: bool) -> LinkStatus {
        let interface = match binding {
            Binding::Interface(name) => list.named(name),
            Binding::Source(ip) => list.holding(*ip),
        };
        match interface {
            None => LinkStatus::Missing,
            Some(i) if !i.running => LinkStatus::Down,
            Some(i) if !i.has_address_for(ipv6) => LinkStatus::NoAddress,
            Some(i) => LinkStatus::Usable { index: i.index },
        }
    }

    pub fn is_usable(self) -> bool {
        matches!(self, LinkStatus::Usable { .. })
    }

    /// A sentence about `binding`'s link in this status, for logs and
    /// `braid status`.
    pub fn describe(self, binding: &Binding) -> String {
        Described(self, binding).to_string()
    }
}

struct Described<'a>(LinkStatus, &'a Binding);

impl fmt::Display for Described<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.0, self.1) {
            (LinkStatus::Usable { .. }, Binding::Interface(name)) => {
                write!(f, "interface {name:?} is up")
            }
            (LinkStatus::Usable { .. }, Binding::Source(ip)) => {
                write!(f, "address {ip} is on an interface that is up")
            }
            (LinkStatus::Missing, Binding::Interface(name)) => {
                write!(f, "interface {name:?} does not exist")
            }
            (LinkStatus::Missing, Binding::Source(ip)) => {
                write!(f, "address {ip} is on no interface")
            }
            (LinkStatus::Down, Binding::Interface(name)) => {
                write!(f, "interface {name:?} is down or has no carrier")
            }
            (LinkStatus::Down, Binding::Source(ip)) => {
                write!(f, "the interface holding {ip} is down or has no carrier")
            }
            (LinkStatus::NoAddress, Binding::Interface(name)) => {
                write!(
                    f,
                    "interface {name:?} has no address for the server's family"
                )
            }
            (LinkStatus::NoAddress, Binding::Source(ip)) => {
                unreachable!("an interface holding {ip} has an address of its family")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::IpAddr;

    use super::*;
    use crate::interfaces::Interface;

    fn list() -> InterfaceList {
        let iface = |name: &str, index, running, addresses: &[&str]| Interface {
            name: name.into(),
            index,
            running,
            loopback: false,
            addresses: addresses.iter().map(|a| a.parse().unwrap()).collect(),
        };
        InterfaceList(vec![
            iface("dsl", 2, true, &["192.0.2.10", "fe80::1"]),
            iface("lte", 3, false, &["198.51.100.7"]),
            iface("bare", 4, true, &[]),
            iface("v6", 5, true, &["2001:db8::5"]),
        ])
    }

    #[test]
    fn each_binding_is_judged_by_its_interface() {
        let l = list();
        let by_name = |n: &str| Binding::Interface(n.into());
        let by_ip = |ip: &str| Binding::Source(ip.parse::<IpAddr>().unwrap());
        assert_eq!(
            LinkStatus::of(&by_name("dsl"), &l, false),
            LinkStatus::Usable { index: 2 }
        );
        // A link-local address does not reach an IPv6 server.
        assert_eq!(
            LinkStatus::of(&by_name("dsl"), &l, true),
            LinkStatus::NoAddress
        );
        assert_eq!(
            LinkStatus::of(&by_name("v6"), &l, true),
            LinkStatus::Usable { index: 5 }
        );
        assert_eq!(LinkStatus::of(&by_name("lte"), &l, false), LinkStatus::Down);
        assert_eq!(
            LinkStatus::of(&by_name("bare"), &l, false),
            LinkStatus::NoAddress
        );
        assert_eq!(
            LinkStatus::of(&by_name("wwan0"), &l, false),
            LinkStatus::Missing
        );
        assert_eq!(
            LinkStatus::of(&by_ip("192.0.2.10"), &l, false),
            LinkStatus::Usable { index: 2 }
        );
        assert_eq!(
            LinkStatus::of(&by_ip("198.51.100.7"), &l, false),
            LinkStatus::Down
        );
        assert_eq!(
            LinkStatus::of(&by_ip("203.0.113.1"), &l, false),
            LinkStatus::Missing
        );
    }

    #[test]
    fn descriptions_name_the_interface_or_address() {
        assert_eq!(
            LinkStatus::Missing.describe(&Binding::Interface("wwan0".into())),
            "interface \"wwan0\" does not exist"
        );
        assert_eq!(
            LinkStatus::Down.describe(&Binding::Source("192.0.2.1".parse().unwrap())),
            "the interface holding 192.0.2.1 is down or has no carrier"
        );
    }
}
