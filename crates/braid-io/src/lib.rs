//! braid's I/O layer: the kernel side of a tunnel endpoint, kept apart from
//! the sans-IO protocol in `braid-core`.
//!
//! - [`PathSocket`]: one UDP socket per path, pinned to its interface
//!   (`SO_BINDTODEVICE`) or source address, so that each path leaves through
//!   its own link whatever the routing table says. Receive and send go
//!   through `quinn-udp` (recvmmsg, GRO, GSO) into buffers allocated once.
//!   A client path's socket collects the ICMP errors its datagrams brought
//!   back ([`DeliveryErrors`]).
//! - [`RecvBatch`]: those buffers, and an iterator over the datagrams one
//!   receive call brought in.
//! - [`TransmitBatch`]: datagrams on their way out, consecutive ones for
//!   one destination coalesced into one GSO send.
//! - [`Tun`]: the TUN device, with one clear line when it cannot be made;
//!   [`TunReadBatch`] and [`TunWriteBatch`]: its packets in and out, cut
//!   from and merged into 64-KB segments where the device has offload.
//! - [`usable_interfaces`]: the interfaces a path could use;
//!   [`interface_mtu`]: their MTUs.
//! - [`InterfaceList`], [`LinkStatus`], [`LinkWatch`]: the interfaces and
//!   addresses as one snapshot, whether a path's link can carry it, and the
//!   kernel's notifications that something changed, so that a client
//!   follows its links as they come and go.

mod batch;
mod delivery_error;
mod error;
mod interfaces;
mod link_status;
mod link_watch;
mod path_socket;
mod transmit_batch;
mod tun;

pub use batch::{Datagram, RecvBatch, MAX_DATAGRAM_BYTES};
pub use delivery_error::{DeliveryError, DeliveryErrors, DeliveryProblem};
pub use error::{SocketError, TunError};
pub use interfaces::{
    interface_mtu, is_valid_interface_name, usable_interfaces, Interface, InterfaceList,
    MAX_INTERFACE_NAME_LEN,
};
pub use link_status::LinkStatus;
pub use link_watch::LinkWatch;
pub use path_socket::{Binding, PathSocket};
pub use transmit_batch::{SendFailure, TransmitBatch};
pub use tun::{Tun, TunConfig, TunReadBatch, TunWriteBatch, TunWriteFailure};

#[cfg(test)]
mod test_support;
