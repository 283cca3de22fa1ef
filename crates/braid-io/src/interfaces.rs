//! The host's interfaces and their addresses, as one snapshot: what
//! `braid send` offers as paths when told no `--via`, and what the client
//! checks its paths' links against whenever the kernel reports a change
//! ([`LinkWatch`](crate::LinkWatch)); and their MTUs, from which the
//! client sizes its tunnel.

use std::ffi::CStr;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Longest interface name Linux takes (IFNAMSIZ less its NUL).
pub const MAX_INTERFACE_NAME_LEN: usize = libc::IFNAMSIZ - 1;

/// Whether Linux takes `name` for an interface (the kernel's
/// `dev_valid_name`): 1 to [`MAX_INTERFACE_NAME_LEN`] bytes, no '/', ':',
/// white space or NUL, and not "." or "..".
pub fn is_valid_interface_name(name: &str) -> bool {
    (1..=MAX_INTERFACE_NAME_LEN).contains(&name.len())
        && name != "."
        && name != ".."
        && !name
            .chars()
            .any(|c| c == '/' || c == ':' || c == '\0' || c.is_whitespace())
}

/// One interface.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interface {
    pub name: String,
    /// The kernel's index; a deleted and recreated interface gets a new one.
    pub index: u32,
    /// Administratively up and with a carrier (`IFF_UP` and `IFF_RUNNING`).
    pub running: bool,
    pub loopback: bool,
    pub addresses: Vec<IpAddr>,
}

impl Interface {
    /// Whether it holds an address a path to a server of this family can
    /// send from (IPv6: one that is not link-local).
    pub fn has_address_for(&self, ipv6: bool) -> bool {
        self.addresses.iter().any(|a| match a {
            IpAddr::V4(_) => !ipv6,
            IpAddr::V6(v6) => ipv6 && !v6.is_unicast_link_local(),
        })
    }
}

/// Every interface of the host (of the network namespace), in the order
/// the kernel lists them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InterfaceList(pub Vec<Interface>);

impl InterfaceList {
    /// A snapshot from `getifaddrs`, which lists every interface (with its
    /// link-layer entry) and each of its addresses.
    pub fn read() -> io::Result<InterfaceList> {
        let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
        // SAFETY: getifaddrs writes a list head we free below.
        if unsafe { libc::getifaddrs(&mut list) } != 0 {
            return Err(io::Error::last_os_error());
        }
        let mut interfaces: Vec<Interface> = Vec::new();
        let mut entry = list;
        while !entry.is_null() {
            // SAFETY: a non-null entry of the list getifaddrs returned,
            // alive until freeifaddrs.
            let e = unsafe { &*entry };
            entry = e.ifa_next;
            // SAFETY: ifa_name is a NUL-terminated string while the list lives.
            let name = unsafe { CStr::from_ptr(e.ifa_name) }.to_string_lossy();
            let i = match interfaces.iter().position(|i| i.name == name) {
                Some(i) => i,
                None => {
                    let flags = e.ifa_flags;
                    interfaces.push(Interface {
                        name: name.into_owned(),
                        index: 0,
                        running: flags & (libc::IFF_UP as u32) != 0
                            && flags & (libc::IFF_RUNNING as u32) != 0,
                        loopback: flags & (libc::IFF_LOOPBACK as u32) != 0,
                        addresses: Vec::new(),
                    });
                    interfaces.len() - 1
                }
            };
            if e.ifa_addr.is_null() {
                continue;
            }
            // SAFETY: ifa_addr is non-null and points at a sockaddr whose
            // family says which larger struct it is.
            match i32::from(unsafe { (*e.ifa_addr).sa_family }) {
                libc::AF_INET => {
                    // SAFETY: family AF_INET, so a sockaddr_in.
                    let sin = unsafe { &*e.ifa_addr.cast::<libc::sockaddr_in>() };
                    let ip = Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr));
                    interfaces[i].addresses.push(ip.into());
                }
                libc::AF_INET6 => {
                    // SAFETY: family AF_INET6, so a sockaddr_in6.
                    let sin6 = unsafe { &*e.ifa_addr.cast::<libc::sockaddr_in6>() };
                    let ip = Ipv6Addr::from(sin6.sin6_addr.s6_addr);
                    interfaces[i].addresses.push(ip.into());
                }
                libc::AF_PACKET => {
                    // SAFETY: family AF_PACKET, so a sockaddr_ll.
                    let sll = unsafe { &*e.ifa_addr.cast::<libc::sockaddr_ll>() };
                    interfaces[i].index = u32::try_from(sll.sll_ifindex).unwrap_or(0);
                }
                _ => {}
            }
        }
        // SAFETY: the list getifaddrs returned, freed once.
        unsafe { libc::freeifaddrs(list) };
        Ok(InterfaceList(interfaces))
    }

    pub fn named(&self, name: &str) -> Option<&Interface> {
        self.0.iter().find(|i| i.name == name)
    }

    /// The interface that holds `ip`.
    pub fn holding(&self, ip: IpAddr) -> Option<&Interface> {
        self.0.iter().find(|i| i.addresses.contains(&ip))
    }
}

/// Names of the interfaces that are up and running, not loopback, and hold
/// an address of the family asked for (IPv6: one that is not link-local),
/// in the order the kernel lists them.
pub fn usable_interfaces(ipv6: bool) -> io::Result<Vec<String>> {
    Ok(InterfaceList::read()?
        .0
        .into_iter()
        .filter(|i| i.running && !i.loopback && i.has_address_for(ipv6))
        .map(|i| i.name)
        .collect())
}

/// The MTU of the interface called `name`, from sysfs.
pub fn interface_mtu(name: &str) -> io::Result<u32> {
    // An interface name is at most 15 bytes and never holds a '/': refuse
    // anything else rather than read some other sysfs file.
    if name.is_empty() || name.len() > 15 || name.contains('/') || name.starts_with('.') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{name:?} is not an interface name"),
        ));
    }
    let text = std::fs::read_to_string(format!("/sys/class/net/{name}/mtu"))?;
    text.trim()
        .parse()
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("mtu {text:?}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_loopback_mtu_and_refuses_paths() {
        let lo = interface_mtu("lo").unwrap();
        assert!(lo >= 1280, "{lo}");
        for bad in ["", "../lo", "a/b", ".", "sixteen-letters!"] {
            let err = interface_mtu(bad).unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{bad:?}");
        }
        assert_eq!(
            interface_mtu("nosuchif0").unwrap_err().kind(),
            io::ErrorKind::NotFound
        );
    }

    #[test]
    fn loopback_is_never_a_path() {
        for ipv6 in [false, true] {
            let names = usable_interfaces(ipv6).unwrap();
            assert!(!names.iter().any(|n| n == "lo"), "{names:?}");
            let mut unique = names.clone();
            unique.dedup();
            assert_eq!(unique, names);
        }
    }

    #[test]
    fn the_snapshot_has_loopback_with_its_index_and_addresses() {
        let list = InterfaceList::read().unwrap();
        let lo = list.named("lo").expect("every namespace has lo");
        assert!(lo.loopback);
        assert!(lo.index >= 1);
        assert!(lo.addresses.contains(&IpAddr::V4(Ipv4Addr::LOCALHOST)));
        assert_eq!(list.holding(Ipv4Addr::LOCALHOST.into()), Some(lo));
        assert!(lo.has_address_for(false));
    }

    #[test]
    fn interface_names_follow_the_kernels_rule() {
        for good in ["lo", "eth0", "wwan0.1", "bond-15-chars00"] {
            assert!(is_valid_interface_name(good), "{good}");
        }
        let long = "x".repeat(MAX_INTERFACE_NAME_LEN + 1);
        for bad in ["", ".", "..", "a/b", "a:b", "a b", "a\0b", long.as_str()] {
            assert!(!is_valid_interface_name(bad), "{bad:?}");
        }
    }
}
