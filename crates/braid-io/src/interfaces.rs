//! The host's interfaces that could carry a path: what `braid send` uses
//! when told no `--via`, and their MTUs, from which the client sizes its
//! tunnel.

use std::ffi::CStr;
use std::io;
use std::net::Ipv6Addr;

/// Names of the interfaces that are up and running, not loopback, and hold
/// an address of the family asked for (IPv6: one that is not link-local),
/// in the order the kernel lists them, each once.
pub fn usable_interfaces(ipv6: bool) -> io::Result<Vec<String>> {
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs writes a list head we free below.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let mut names = Vec::new();
    let mut entry = list;
    while !entry.is_null() {
        // SAFETY: a non-null entry of the list getifaddrs returned, alive
        // until freeifaddrs.
        let e = unsafe { &*entry };
        entry = e.ifa_next;
        let flags = e.ifa_flags;
        let up = flags & (libc::IFF_UP as u32) != 0 && flags & (libc::IFF_RUNNING as u32) != 0;
        if !up || flags & (libc::IFF_LOOPBACK as u32) != 0 || e.ifa_addr.is_null() {
            continue;
        }
        // SAFETY: ifa_addr is non-null and points at a sockaddr whose
        // family says which larger struct it is.
        let family = i32::from(unsafe { (*e.ifa_addr).sa_family });
        let wanted = match (ipv6, family) {
            (false, libc::AF_INET) => true,
            (true, libc::AF_INET6) => {
                // SAFETY: family AF_INET6, so a sockaddr_in6.
                let sin6 = unsafe { &*e.ifa_addr.cast::<libc::sockaddr_in6>() };
                !Ipv6Addr::from(sin6.sin6_addr.s6_addr).is_unicast_link_local()
            }
            _ => false,
        };
        if !wanted {
            continue;
        }
        // SAFETY: ifa_name is a NUL-terminated string while the list lives.
        let name = unsafe { CStr::from_ptr(e.ifa_name) }
            .to_string_lossy()
            .into_owned();
        if !names.contains(&name) {
            names.push(name);
        }
    }
    // SAFETY: the list getifaddrs returned, freed once.
    unsafe { libc::freeifaddrs(list) };
    Ok(names)
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
}
