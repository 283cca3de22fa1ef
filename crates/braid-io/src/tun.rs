//! The TUN device: IP packets in and out of the kernel's stack.
//!
//! Made with `tun-rs`. With offload on (the default), the device takes
//! the virtio-net header (`IFF_VNET_HDR`) and TSO/USO: a local TCP sender
//! hands the device segments of up to 64 KB, which one read brings in and
//! tun-rs cuts into MTU-sized packets ([`TunReadBatch`]); packets on their
//! way in are merged into such segments where they continue one another
//! ([`TunWriteBatch`]), so that the kernel's TCP receives one large segment
//! instead of dozens. Per packet, what is left is a copy.

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr};
use std::path::Path;

use crate::error::TunError;

mod read_batch;
mod write_batch;

pub use read_batch::TunReadBatch;
pub use write_batch::{TunWriteBatch, TunWriteFailure};

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
    /// Ask for TSO/GRO on the device (the virtio-net header). A kernel
    /// that refuses gets a device without it.
    pub offload: bool,
}

pub struct Tun {
    device: tun_rs::AsyncDevice,
    name: String,
    mtu: u16,
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
        let build = |offload: bool| {
            tun_rs::DeviceBuilder::new()
                .name(&config.name)
                .mtu(config.mtu)
                .offload(offload)
                .enable(true)
                .build_async()
        };
        let device = match build(config.offload) {
            Ok(device) => device,
            // Whatever the failure was, a device without offload either
            // works or fails with the error that matters.
            Err(e) if config.offload => {
                let device = build(false).map_err(|e| classify(&config.name, e))?;
                tracing::warn!(
                    "TUN device {}: no offload ({e}); every packet is one read and one write",
                    config.name
                );
                device
            }
            Err(e) => return Err(classify(&config.name, e)),
        };
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
            mtu: config.mtu,
        })
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The MTU the device was made with.
    pub fn mtu(&self) -> u16 {
        self.mtu
    }

    /// Whether the device has TSO/GRO (the virtio-net header).
    pub fn offload(&self) -> bool {
        self.device.tcp_gso()
    }

    /// Waits for the device's next read and brings it into `batch`: one IP
    /// packet, or with offload up to a 64-KB segment's worth. Returns how
    /// many packets it holds.
    pub async fn recv_batch(&self, batch: &mut TunReadBatch) -> io::Result<usize> {
        batch.count = 0;
        let count = self
            .device
            .recv_multiple(&mut batch.raw, &mut batch.bufs, &mut batch.sizes, 0)
            .await?;
        Ok(batch.filled(count))
    }

    /// [`recv_batch`](Self::recv_batch) if a read is waiting, else fails
    /// with `WouldBlock`.
    pub fn try_recv_batch(&self, batch: &mut TunReadBatch) -> io::Result<usize> {
        batch.count = 0;
        let count =
            self.device
                .try_recv_multiple(&mut batch.raw, &mut batch.bufs, &mut batch.sizes, 0)?;
        Ok(batch.filled(count))
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
