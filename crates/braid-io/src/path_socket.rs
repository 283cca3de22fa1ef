//! One UDP socket per path.
//!
//! A client path is pinned to its link: either to an interface with
//! `SO_BINDTODEVICE` (the kernel then sends out of that interface whatever
//! the routing table says) or to a source address. A server listens on one
//! socket per listen address. Receive and send go through `quinn-udp`:
//! recvmmsg and GRO in, GSO out, so one system call moves many datagrams.
//! A client path's socket also collects the ICMP errors its datagrams
//! brought back ([`DeliveryErrors`]).

use std::cell::Cell;
use std::ffi::CString;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use quinn_udp::{Transmit, UdpSocketState};
use socket2::{Domain, Protocol, Socket, Type};
use tokio::io::Interest;
use tokio::net::UdpSocket;

use crate::batch::RecvBatch;
use crate::delivery_error::{DeliveryError, DeliveryErrors};
use crate::error::SocketError;

/// What pins a client path to its link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Binding {
    /// Send out of this interface (`SO_BINDTODEVICE`), from any of its addresses.
    Interface(String),
    /// Send from this source address (the routing table picks the interface).
    Source(IpAddr),
}

/// Socket buffer size asked for: a burst of a few milliseconds at a Gbit/s.
const SOCKET_BUFFER_BYTES: usize = 4 << 20;

/// ICMP errors read from the kernel's queue at a time: the queue is
/// bounded by the receive buffer, the work per wake-up by this.
const ERRORS_PER_DRAIN: usize = 64;

pub struct PathSocket {
    io: UdpSocket,
    state: UdpSocketState,
    /// Where it is bound, read once (a server asks for every datagram).
    local: SocketAddr,
    /// What the kernel's error queue held, since the owner last asked.
    delivery_errors: Cell<Option<DeliveryErrors>>,
}

/// Whether a socket asks the kernel for the ICMP errors its datagrams
/// bring back.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reports {
    /// A client path: one server, whose silence the user wants explained.
    DeliveryErrors,
    /// A server: an error about one of many peers is no event, and would
    /// cost a failed call on the data path.
    None,
}

impl PathSocket {
    /// A client path's socket, pinned by `binding`, for talking to `server`
    /// (whose address family it takes). Needs a tokio runtime.
    pub fn client(binding: &Binding, server: SocketAddr) -> Result<PathSocket, SocketError> {
        let socket = new_socket(server)?;
        let local = match binding {
            Binding::Interface(name) => {
                bind_to_device(&socket2::SockRef::from(&socket), name)?;
                SocketAddr::new(unspecified_like(server.ip()), 0)
            }
            Binding::Source(ip) => SocketAddr::new(*ip, 0),
        };
        bind(&socket, local)?;
        PathSocket::from_socket(socket, Reports::DeliveryErrors)
    }

    /// A client path's socket for a link that is not there yet (see
    /// [`LinkStatus`](crate::LinkStatus)): bound to the source address
    /// even though no interface holds it yet (`IP_FREEBIND`), or, for an
    /// interface, bound to no interface at all. Nothing may be sent on it
    /// until [`attach`](Self::attach) succeeded: unattached, it would leave
    /// wherever the routing table says.
    pub fn client_unattached(
        binding: &Binding,
        server: SocketAddr,
    ) -> Result<PathSocket, SocketError> {
        let socket = new_socket(server)?;
        let local = match binding {
            Binding::Interface(_) => SocketAddr::new(unspecified_like(server.ip()), 0),
            Binding::Source(ip) => {
                if ip.is_ipv6() {
                    socket.set_freebind_v6(true)?;
                } else {
                    socket.set_freebind_v4(true)?;
                }
                SocketAddr::new(*ip, 0)
            }
        };
        bind(&socket, local)?;
        PathSocket::from_socket(socket, Reports::DeliveryErrors)
    }

    /// Pins the socket to its link again, once the link is there: for an
    /// interface, `SO_BINDTODEVICE` by name, which finds the interface even
    /// if it was deleted and made again (a new index) since the last time.
    /// A source address needs nothing: the socket is bound to it, and it
    /// works again as soon as an interface holds the address.
    pub fn attach(&self, binding: &Binding) -> Result<(), SocketError> {
        match binding {
            Binding::Interface(name) => bind_to_device(&socket2::SockRef::from(&self.io), name),
            Binding::Source(_) => Ok(()),
        }
    }

    /// A server's socket listening on `addr`. Needs a tokio runtime.
    pub fn listen(addr: SocketAddr) -> Result<PathSocket, SocketError> {
        let socket = new_socket(addr)?;
        bind(&socket, addr)?;
        PathSocket::from_socket(socket, Reports::None)
    }

    fn from_socket(socket: Socket, reports: Reports) -> Result<PathSocket, SocketError> {
        socket.set_nonblocking(true)?;
        let state = UdpSocketState::new((&socket).into())?;
        // Larger buffers absorb bursts; the kernel caps them at its
        // rmem_max/wmem_max, which is not an error.
        let _ = state.set_recv_buffer_size((&socket).into(), SOCKET_BUFFER_BYTES);
        let _ = state.set_send_buffer_size((&socket).into(), SOCKET_BUFFER_BYTES);
        allow_fragmentation(&socket)?;
        if reports == Reports::DeliveryErrors {
            state.enable_transport_errors((&socket).into())?;
        }
        let io = UdpSocket::from_std(socket.into())?;
        let local = io.local_addr()?;
        Ok(PathSocket {
            io,
            state,
            local,
            delivery_errors: Cell::new(None),
        })
    }

    /// The ICMP errors (port or host unreachable, ...) that came back for
    /// this socket's datagrams since the last call. Only a client path's
    /// socket collects them.
    pub fn take_delivery_errors(&self) -> Option<DeliveryErrors> {
        self.delivery_errors.take()
    }

    /// Moves what the kernel's error queue holds into `delivery_errors`;
    /// returns how many, and whether the queue is empty now. Left queued,
    /// the errors would take up the receive buffer that datagrams need.
    fn drain_error_queue(&self) -> (usize, bool) {
        for taken in 0..ERRORS_PER_DRAIN {
            match self.state.recv_transport_error((&self.io).into()) {
                Ok(Some(e)) => {
                    let collected = self.delivery_errors.get();
                    self.delivery_errors
                        .set(Some(DeliveryErrors::add(collected, DeliveryError::from(e))));
                }
                Ok(None) | Err(_) => return (taken, true),
            }
        }
        (ERRORS_PER_DRAIN, false)
    }

    /// Marks every packet the socket sends with `mark` (`SO_MARK`, needs
    /// CAP_NET_ADMIN), so that policy routing can tell the path's own
    /// packets from the traffic routed into the tunnel.
    pub fn set_mark(&self, mark: u32) -> io::Result<()> {
        socket2::SockRef::from(&self.io).set_mark(mark)
    }

    pub fn local_addr(&self) -> SocketAddr {
        self.local
    }

    /// How many datagrams one GSO send may carry (1 without GSO).
    pub fn max_gso_segments(&self) -> usize {
        self.state.max_gso_segments()
    }

    /// Waits for datagrams and receives as many as one batch holds; returns
    /// how many receive slots were filled (see [`RecvBatch::datagrams`]).
    /// ICMP errors that come meanwhile are collected, not returned.
    pub async fn recv(&self, batch: &mut RecvBatch) -> io::Result<usize> {
        loop {
            let ready = self.io.ready(Interest::READABLE | Interest::ERROR).await?;
            if ready.is_error() {
                // Readiness is cleared only once the queue is empty.
                let _ = self
                    .io
                    .try_io(Interest::ERROR, || match self.drain_error_queue() {
                        (_, true) => Err::<(), _>(io::ErrorKind::WouldBlock.into()),
                        (_, false) => Ok(()),
                    });
            }
            if !ready.is_readable() {
                continue;
            }
            let got = self.io.try_io(Interest::READABLE, || self.try_recv(batch));
            match got {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                other => return other,
            }
        }
    }

    /// Receives what is already waiting, as many as one batch holds,
    /// without waiting: fails with `WouldBlock` when nothing is. Asks the
    /// kernel whatever the runtime last saw of the socket's readiness, so
    /// it finds datagrams that came while this process did not run.
    pub fn try_recv(&self, batch: &mut RecvBatch) -> io::Result<usize> {
        self.retried_after_report(|| {
            batch.fill_with(|slots, meta| self.state.recv((&self.io).into(), slots, meta))
        })
    }

    /// Runs `call` again if it failed with an ICMP report pending on the
    /// socket: the kernel returns such a report from the next receive or
    /// send call instead of doing it, and clears it then.
    fn retried_after_report<T>(&self, mut call: impl FnMut() -> io::Result<T>) -> io::Result<T> {
        match call() {
            Err(e) if e.kind() != io::ErrorKind::WouldBlock && self.drain_error_queue().0 > 0 => {
                call()
            }
            other => other,
        }
    }

    /// Sends `contents` to `to` now, or fails with `WouldBlock` when the
    /// socket buffer is full. With `segment_size`, `contents` is several
    /// datagrams of that size back to back (the last may be shorter), sent
    /// with one GSO call.
    pub fn try_send(
        &self,
        to: SocketAddr,
        contents: &[u8],
        segment_size: Option<usize>,
    ) -> io::Result<()> {
        let transmit = Transmit {
            destination: to,
            ecn: None,
            contents,
            segment_size,
            src_ip: None,
        };
        self.io.try_io(Interest::WRITABLE, || {
            self.retried_after_report(|| self.state.try_send((&self.io).into(), &transmit))
        })
    }

    /// Waits until the socket can take a datagram.
    pub async fn writable(&self) -> io::Result<()> {
        self.io.writable().await
    }

    /// Like [`try_send`](Self::try_send), waiting while the socket buffer is full.
    pub async fn send(
        &self,
        to: SocketAddr,
        contents: &[u8],
        segment_size: Option<usize>,
    ) -> io::Result<()> {
        loop {
            match self.try_send(to, contents, segment_size) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => self.io.writable().await?,
                other => return other,
            }
        }
    }
}

fn new_socket(peer: SocketAddr) -> Result<Socket, SocketError> {
    let socket = Socket::new(Domain::for_address(peer), Type::DGRAM, Some(Protocol::UDP))?;
    if peer.is_ipv6() {
        // An IPv6 socket speaks IPv6 only, so that a v4 and a v6 listener
        // can share a port.
        socket.set_only_v6(true)?;
    }
    Ok(socket)
}

fn bind(socket: &Socket, addr: SocketAddr) -> Result<(), SocketError> {
    socket
        .bind(&addr.into())
        .map_err(|source| SocketError::Bind { addr, source })
}

fn bind_to_device(socket: &socket2::SockRef<'_>, name: &str) -> Result<(), SocketError> {
    let bad_name = || SocketError::BadInterfaceName(name.to_owned());
    if !crate::is_valid_interface_name(name) {
        return Err(bad_name());
    }
    let c_name = CString::new(name).map_err(|_| bad_name())?;
    // SAFETY: c_name is a valid NUL-terminated string.
    if unsafe { libc::if_nametoindex(c_name.as_ptr()) } == 0 {
        return Err(SocketError::NoSuchInterface(name.to_owned()));
    }
    socket
        .bind_device(Some(name.as_bytes()))
        .map_err(|e| match e.raw_os_error() {
            Some(libc::EPERM) => SocketError::BindToDeviceNotPermitted(name.to_owned()),
            Some(libc::ENODEV) => SocketError::NoSuchInterface(name.to_owned()),
            _ => SocketError::Io(e),
        })
}

/// Lets the kernel fragment a datagram larger than the path MTU instead of
/// refusing it with EMSGSIZE (quinn-udp sets "don't fragment" for its own
/// path-MTU probing, which braid does not do). The session may still emit
/// a datagram a little above the MTU (a full data packet with feedback
/// bundled into it): fragmented it arrives, refused it is a lost packet.
fn allow_fragmentation(socket: &Socket) -> io::Result<()> {
    if socket.domain()? == Domain::IPV6 {
        set_int_option(
            socket,
            libc::IPPROTO_IPV6,
            libc::IPV6_MTU_DISCOVER,
            libc::IPV6_PMTUDISC_DONT,
        )?;
        set_int_option(socket, libc::IPPROTO_IPV6, libc::IPV6_DONTFRAG, 0)
    } else {
        set_int_option(
            socket,
            libc::IPPROTO_IP,
            libc::IP_MTU_DISCOVER,
            libc::IP_PMTUDISC_DONT,
        )
    }
}

fn set_int_option(
    socket: &Socket,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    // SAFETY: a valid socket, and a c_int option value of the right size.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            level,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn unspecified_like(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
        IpAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
    }
}

#[cfg(test)]
mod tests;
