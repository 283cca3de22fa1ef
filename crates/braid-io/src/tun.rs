//! The TUN device: IP packets in and out of the kernel's stack.
//!
//! Made with `tun-rs`, which on Linux also offers multi-queue and the
//! virtio-net offload (GSO/GRO on the device); braid reads one packet per
//! call for now and keeps the door open for `recv_multiple`.

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::Path;

use crate::error::TunError;

/// The character device every TUN device is opened through.
const TUN_CLONE_DEVICE: &str = "/dev/net/tun";

/// What the device is called and which tunnel addresses it gets.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TunConfig {
    pub name: String,
    pub mtu: u16,
    /// The tunnel's IPv4 address and prefix length.
    pub ipv4: Option<(Ipv4Addr, u8)>,
    /// The tunnel's IPv6 address and prefix length.
    pub ipv6: Option<(Ipv6Addr, u8)>,
}

pub struct Tun {
    device: tun_rs::AsyncDevice,
    name: String,
}

impl Tun {
    /// Creates the device, gives it its addresses and MTU and brings it up.
    /// Needs a tokio runtime, root (CAP_NET_ADMIN) and `/dev/net/tun`. A
    /// device given an IPv6 address gets IPv6 switched on even where new
    /// devices have it off by default (`net.ipv6.conf.default.disable_ipv6`):
    /// the config asked for it on this device.
    pub fn create(config: &TunConfig) -> Result<Tun, TunError> {
        if !Path::new(TUN_CLONE_DEVICE).exists() {
            return Err(TunError::NoTunDevice);
        }
        let device = tun_rs::DeviceBuilder::new()
            .name(&config.name)
            .mtu(config.mtu)
            .enable(true)
            .build_async()
            .map_err(|e| classify(&config.name, e))?;
        // Addresses after the device exists, so that a failure here (IPv6
        // disabled, say) is not mistaken for a missing permission.
        let address_error = |addr: String, source: io::Error| TunError::Address {
            name: config.name.clone(),
            addr,
            source,
        };
        if let Some((addr, prefix)) = config.ipv4 {
            device
                .add_address_v4(addr, prefix)
                .map_err(|e| address_error(format!("{addr}/{prefix}"), e))?;
        }
        if let Some((addr, prefix)) = config.ipv6 {
            enable_ipv6(&config.name).map_err(|e| address_error(format!("{addr}/{prefix}"), e))?;
            device
                .add_address_v6(addr, prefix)
                .map_err(|e| address_error(format!("{addr}/{prefix}"), e))?;
        }
        Ok(Tun {
            device,
            name: config.name.clone(),
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// Reads one IP packet into `buf`; returns its length.
    pub async fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.device.recv(buf).await
    }

    /// Reads one IP packet if one is waiting, else fails with `WouldBlock`.
    pub fn try_recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        self.device.try_recv(buf)
    }

    /// Writes one IP packet if the device takes it now, else fails with
    /// `WouldBlock` (the caller drops it: a full TUN queue is congestion).
    pub fn try_send(&self, packet: &[u8]) -> io::Result<()> {
        self.device.try_send(packet).map(drop)
    }

    /// Writes one IP packet.
    pub async fn send(&self, packet: &[u8]) -> io::Result<()> {
        self.device.send(packet).await.map(drop)
    }
}

/// Clears `disable_ipv6` on device `name` if it is set. A kernel without
/// IPv6 has no such file; adding the address then fails with its own error.
fn enable_ipv6(name: &str) -> io::Result<()> {
    let path = format!("/proc/sys/net/ipv6/conf/{name}/disable_ipv6");
    match std::fs::read_to_string(&path) {
        Ok(value) if value.trim() == "1" => std::fs::write(&path, "0"),
        Ok(_) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

fn classify(name: &str, e: io::Error) -> TunError {
    match e.raw_os_error() {
        Some(libc::EPERM) | Some(libc::EACCES) => TunError::NotPermitted(name.to_owned()),
        Some(libc::ENOENT) | Some(libc::ENODEV) => TunError::NoTunDevice,
        Some(libc::EINVAL) | Some(libc::EBUSY)
            if Path::new("/sys/class/net").join(name).exists() =>
        {
            TunError::NameTaken(name.to_owned())
        }
        _ => TunError::Io {
            name: name.to_owned(),
            source: e,
        },
    }
}

#[cfg(test)]
mod tests;
