//! Errors of the I/O layer, each a sentence a user can act on.

use std::io;
use std::net::SocketAddr;

#[derive(Debug, thiserror::Error)]
pub enum SocketError {
    #[error("interface {0:?} does not exist")]
    NoSuchInterface(String),
    #[error("interface name {0:?} is not valid (1 to 15 bytes, no '/', ':', spaces or NUL)")]
    BadInterfaceName(String),
    #[error("binding to interface {0:?} needs root (CAP_NET_RAW)")]
    BindToDeviceNotPermitted(String),
    #[error("cannot bind UDP socket to {addr}: {}", bind_reason(.addr, .source))]
    Bind { addr: SocketAddr, source: io::Error },
    #[error("UDP socket: {0}")]
    Io(#[from] io::Error),
}

impl SocketError {
    /// Whether the path's link is missing (no such interface, or the
    /// source address is on no interface): something that may appear
    /// later, unlike a bad name or a missing permission.
    pub fn is_missing_link(&self) -> bool {
        match self {
            SocketError::NoSuchInterface(_) => true,
            SocketError::Bind { source, .. } => source.raw_os_error() == Some(libc::EADDRNOTAVAIL),
            _ => false,
        }
    }
}

/// The kernel's reason, in the user's terms where it has one usual cause
/// ("Cannot assign requested address" means the address is not this
/// host's), with the kernel's own words after it.
fn bind_reason(addr: &SocketAddr, source: &io::Error) -> String {
    match source.raw_os_error() {
        Some(libc::EADDRNOTAVAIL) => format!(
            "no interface of this host has the address {} ({source})",
            addr.ip()
        ),
        Some(libc::EADDRINUSE) => {
            format!("another socket has port {} ({source})", addr.port())
        }
        _ => source.to_string(),
    }
}

#[derive(Debug, thiserror::Error)]
pub enum TunError {
    #[error("no /dev/net/tun: load the tun kernel module (modprobe tun) or run where it exists")]
    NoTunDevice,
    #[error("creating TUN device {0:?} needs root (CAP_NET_ADMIN)")]
    NotPermitted(String),
    #[error("cannot give TUN device {name:?} the address {addr} (is IPv6 disabled?): {source}")]
    Address {
        name: String,
        addr: String,
        source: io::Error,
    },
    #[error("an interface named {0:?} exists and is not a TUN device braid may take: choose another name")]
    NameTaken(String),
    #[error("TUN device {name:?}: {source}")]
    Io { name: String, source: io::Error },
}
