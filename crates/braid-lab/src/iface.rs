//! Per-interface settings that rtnetlink does not carry: the interface
//! index by name, whether it has carrier, and offloads through the ethtool ioctl (`ethtool -K`
//! without the `ethtool` program).

use std::ffi::c_char;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Commands of `SIOCETHTOOL` (linux/ethtool.h, a fixed kernel ABI) that set
/// one offload on or off with a `struct ethtool_value`.
const ETHTOOL_STXCSUM: u32 = 0x17;
const ETHTOOL_STSO: u32 = 0x1f;
const ETHTOOL_SGSO: u32 = 0x24;
const ETHTOOL_SGRO: u32 = 0x2c;

/// `struct ethtool_value`.
#[repr(C)]
struct EthtoolValue {
    cmd: u32,
    data: u32,
}

/// A socket for interface ioctls; like a netlink socket, it acts in the
/// namespace it was made in.
pub struct IfaceControl {
    fd: OwnedFd,
}

impl IfaceControl {
    /// A socket acting in the calling thread's network namespace.
    pub fn open() -> io::Result<IfaceControl> {
        // SAFETY: plain socket(2); the descriptor is wrapped at once.
        let raw = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh descriptor that nothing else owns.
        Ok(IfaceControl {
            fd: unsafe { OwnedFd::from_raw_fd(raw) },
        })
    }

    fn request(name: &str) -> io::Result<libc::ifreq> {
        let bytes = name.as_bytes();
        if bytes.is_empty() || bytes.len() >= libc::IFNAMSIZ || bytes.contains(&0) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("bad interface name {name:?}"),
            ));
        }
        // SAFETY: ifreq is plain data; all-zero is a valid value.
        let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
        for (slot, b) in req.ifr_name.iter_mut().zip(bytes) {
            *slot = *b as c_char;
        }
        Ok(req)
    }

    /// The index of interface `name`.
    pub fn index(&self, name: &str) -> io::Result<u32> {
        let mut req = Self::request(name)?;
        // SAFETY: SIOCGIFINDEX reads the name and writes the index into `req`.
        if unsafe { libc::ioctl(self.fd.as_raw_fd(), libc::SIOCGIFINDEX, &mut req) } < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the kernel filled the union's ifindex member.
        let index = unsafe { req.ifr_ifru.ifru_ifindex };
        u32::try_from(index).map_err(|_| io::Error::other(format!("interface index {index}")))
    }

    /// Whether `name` is up and has carrier (`IFF_RUNNING`).
    pub fn is_running(&self, name: &str) -> io::Result<bool> {
        let mut req = Self::request(name)?;
        // SAFETY: SIOCGIFFLAGS reads the name and writes the flags into `req`.
        if unsafe { libc::ioctl(self.fd.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req) } < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the kernel filled the union's flags member.
        let flags = i32::from(unsafe { req.ifr_ifru.ifru_flags });
        Ok(flags & libc::IFF_RUNNING != 0 && flags & libc::IFF_UP != 0)
    }

    /// Switches off checksum offload on transmit, TSO, GSO and GRO on
    /// `name`, so that every frame on it is one wire packet with a finished
    /// checksum (`ethtool -K NAME tx off tso off gso off gro off`).
    pub fn offloads_off(&self, name: &str) -> io::Result<()> {
        for cmd in [ETHTOOL_STXCSUM, ETHTOOL_STSO, ETHTOOL_SGSO, ETHTOOL_SGRO] {
            let mut value = EthtoolValue { cmd, data: 0 };
            let mut req = Self::request(name)?;
            req.ifr_ifru.ifru_data = (&mut value as *mut EthtoolValue).cast();
            // SAFETY: SIOCETHTOOL reads `value` through ifru_data, which
            // points at a live struct ethtool_value for the whole call.
            if unsafe { libc::ioctl(self.fd.as_raw_fd(), libc::SIOCETHTOOL, &mut req) } < 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }
}
