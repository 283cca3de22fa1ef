//! The kernel's word that a link or an address changed: an rtnetlink
//! socket subscribed to link, IPv4-address and IPv6-address notifications.
//!
//! The notifications are not parsed: each wake-up tells the caller to take
//! a fresh [`InterfaceList`](crate::InterfaceList) snapshot, which is the
//! truth whatever was said, in whatever order, and also after the socket
//! overflowed (`ENOBUFS`: notifications were lost, so look again).

use std::io;

use netlink_sys::protocols::NETLINK_ROUTE;
use netlink_sys::{Socket, SocketAddr};
use tokio::io::unix::AsyncFd;
use tokio::io::Interest;

/// Notifications read per wake-up before taking the snapshot anyway: a
/// flood of changes cannot hold the loop.
const MAX_DRAIN: usize = 256;

pub struct LinkWatch {
    socket: AsyncFd<Socket>,
}

impl LinkWatch {
    /// Subscribes in the calling thread's network namespace. Needs a tokio
    /// runtime.
    pub fn open() -> io::Result<LinkWatch> {
        let mut socket = Socket::new(NETLINK_ROUTE)?;
        socket.bind(&SocketAddr::new(0, 0))?;
        for group in [
            libc::RTNLGRP_LINK,
            libc::RTNLGRP_IPV4_IFADDR,
            libc::RTNLGRP_IPV6_IFADDR,
        ] {
            socket.add_membership(group)?;
        }
        socket.set_non_blocking(true)?;
        Ok(LinkWatch {
            // SAFETY: the AsyncFd owns the socket, whose descriptor stays
            // open and the same until the AsyncFd is dropped.
            socket: unsafe { AsyncFd::register_with_interest(socket, Interest::READABLE) }?,
        })
    }

    /// Waits for the next notification and reads every one waiting (up to
    /// `MAX_DRAIN`): the links may have changed.
    pub async fn changed(&self) -> io::Result<()> {
        let mut guard = self.socket.readable().await?;
        // Only whether something came matters: a small buffer, the rest of
        // a longer message is discarded.
        let mut buf = [0u8; 512];
        for _ in 0..MAX_DRAIN {
            match guard.get_inner().recv(&mut &mut buf[..], 0) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    guard.clear_ready();
                    return Ok(());
                }
                // Notifications were lost: a change all the same.
                Err(e) if e.raw_os_error() == Some(libc::ENOBUFS) => {}
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::test_support::{have_root, runtime};

    /// Adding and deleting an interface (a veth pair: the dummy module may
    /// not be there) wakes the watcher. Needs root
    /// and its own network namespace (unshare), so it never touches the
    /// host's links.
    #[test]
    fn a_new_interface_wakes_the_watcher() {
        if !have_root() {
            return;
        }
        // A thread of its own: unshare moves only the calling thread.
        std::thread::spawn(|| {
            // SAFETY: unshare on this thread only; it ends with the test.
            assert_eq!(unsafe { libc::unshare(libc::CLONE_NEWNET) }, 0);
            runtime().block_on(async {
                let watch = LinkWatch::open().unwrap();
                let ip = |args: &[&str]| {
                    let ok = std::process::Command::new("ip")
                        .args(args)
                        .status()
                        .unwrap()
                        .success();
                    assert!(ok, "ip {args:?}");
                };
                ip(&[
                    "link",
                    "add",
                    "hp-watch0",
                    "type",
                    "veth",
                    "peer",
                    "name",
                    "hp-watch1",
                ]);
                tokio::time::timeout(Duration::from_secs(5), watch.changed())
                    .await
                    .expect("a notification within 5 s")
                    .unwrap();
                let list = crate::InterfaceList::read().unwrap();
                assert!(list.named("hp-watch0").is_some());
                ip(&["link", "del", "hp-watch0"]);
                tokio::time::timeout(Duration::from_secs(5), watch.changed())
                    .await
                    .expect("a notification within 5 s")
                    .unwrap();
                let list = crate::InterfaceList::read().unwrap();
                assert!(list.named("hp-watch0").is_none());
            });
        })
        .join()
        .unwrap();
    }
}
