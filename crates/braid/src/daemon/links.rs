//! The client's paths' links, followed as interfaces come and go.
//!
//! Whenever the kernel reports a link or address change ([`LinkWatch`]),
//! every path is checked against a fresh snapshot of the interfaces: a
//! path whose interface was deleted, renamed away, went down or lost its
//! address (or whose source address left every interface) is marked down
//! in the session at once, instead of after its probes go unanswered; when
//! the link is back, the path's socket is pinned to it again (a recreated
//! interface has a new index) and the session probes the path, which is up
//! as soon as the server answers. Nothing is sent on a path while its link
//! is gone: its socket may be pinned to nothing, and would then leave
//! wherever the routing table says.

use std::time::Duration;

use braid_core::session::Session;
use braid_core::time::Instant;
use braid_io::{Binding, InterfaceList, LinkStatus, LinkWatch, PathSocket};
use serde_json::Value;
use tracing::{info, warn};

/// After a failed read of the notifications, look again this much later.
const RETRY_AFTER_ERROR: Duration = Duration::from_secs(1);

/// One path's link.
struct PathLink {
    name: String,
    binding: Binding,
    status: LinkStatus,
    /// The interface index the socket is pinned to (0 for a source
    /// address, which needs no pinning); `None` until pinned once.
    pinned: Option<u32>,
    /// What the session was last told: whether the link is available.
    told_available: bool,
}

impl PathLink {
    /// Whether the path can send now: its link is there and its socket
    /// pinned to it.
    fn available(&self) -> bool {
        match self.status {
            LinkStatus::Usable { index } => self.pinned == Some(self.key(index)),
            _ => false,
        }
    }

    /// What `pinned` must be for a usable link on interface `index`.
    fn key(&self, index: u32) -> u32 {
        match self.binding {
            Binding::Interface(_) => index,
            Binding::Source(_) => 0,
        }
    }
}

/// Every path's link, in path order (path number = socket number).
pub struct PathLinks {
    ipv6: bool,
    paths: Vec<PathLink>,
}

impl PathLinks {
    /// Paths named `names` pinned by `bindings`, to a server of the family
    /// `ipv6` says. Nothing is known until the first [`update`](Self::update).
    pub fn new(paths: impl IntoIterator<Item = (String, Binding)>, ipv6: bool) -> PathLinks {
        PathLinks {
            ipv6,
            paths: paths
                .into_iter()
                .map(|(name, binding)| PathLink {
                    name,
                    binding,
                    status: LinkStatus::Missing,
                    pinned: None,
                    told_available: true,
                })
                .collect(),
        }
    }

    /// Checks every path against `list`: pins the sockets of links that
    /// came (back), and tells `session` about every path whose link went
    /// or came. Logs each change.
    pub fn update(
        &mut self,
        now: Instant,
        list: &InterfaceList,
        sockets: &[PathSocket],
        session: &mut Session,
    ) {
        for (i, (link, socket)) in self.paths.iter_mut().zip(sockets).enumerate() {
            let status = LinkStatus::of(&link.binding, list, self.ipv6);
            if let LinkStatus::Usable { index } = status {
                let key = link.key(index);
                if link.pinned != Some(key) {
                    match socket.attach(&link.binding) {
                        Ok(()) => link.pinned = Some(key),
                        Err(e) => warn!(
                            path = link.name,
                            "cannot pin the path's socket to its link: {e}"
                        ),
                    }
                }
            }
            let changed = link.status != status;
            link.status = status;
            let available = link.available();
            let Ok(path) = u8::try_from(i) else {
                continue;
            };
            if available != link.told_available {
                link.told_available = available;
                session.handle_link_change(now, path, available);
                if available {
                    info!(
                        path = link.name,
                        "link back: {}; probing the path",
                        status.describe(&link.binding)
                    );
                } else {
                    info!(
                        path = link.name,
                        "link lost: {}; waiting for it",
                        status.describe(&link.binding)
                    );
                }
            } else if changed && !available {
                info!(path = link.name, "link: {}", status.describe(&link.binding));
            }
        }
    }

    /// Whether path `path` may send now (see [`PathLink::available`]).
    pub fn may_send(&self, path: u8) -> bool {
        self.paths
            .get(usize::from(path))
            .is_some_and(PathLink::available)
    }

    /// Adds `"link"` (a sentence about the path's link) to each path of a
    /// `braid status` document's `session.paths`.
    pub fn annotate(&self, paths: &mut Value) {
        let Some(paths) = paths.as_array_mut() else {
            return;
        };
        for (p, link) in paths.iter_mut().zip(&self.paths) {
            if let Some(p) = p.as_object_mut() {
                let mut text = link.status.describe(&link.binding);
                if link.status.is_usable() && !link.available() {
                    text += ", but the path's socket could not be pinned to it";
                }
                p.insert("link".to_owned(), text.into());
            }
        }
    }
}

/// Calls `apply` with a fresh snapshot of the interfaces whenever the
/// kernel reports a link or address change, for as long as the client runs.
pub async fn follow(watch: LinkWatch, mut apply: impl FnMut(&InterfaceList)) {
    loop {
        if let Err(e) = watch.changed().await {
            warn!(
                "link notifications: {e}; looking again in {} s",
                RETRY_AFTER_ERROR.as_secs()
            );
            tokio::time::sleep(RETRY_AFTER_ERROR).await;
        }
        match InterfaceList::read() {
            Ok(list) => apply(&list),
            Err(e) => warn!("reading the interfaces: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::net::{IpAddr, Ipv4Addr, SocketAddr};

    use braid_core::crypto::{PrivateKey, StaticKeypair};
    use braid_core::session::{
        ClientConfig, PathConfig, PathDownReason, PathRole, PathState, SessionConfig,
    };
    use braid_io::Interface;

    use super::*;

    const SERVER: SocketAddr = SocketAddr::new(IpAddr::V4(Ipv4Addr::LOCALHOST), 9);

    fn session(paths: usize) -> Session {
        let key = |b| StaticKeypair::from_private(PrivateKey::from_bytes([b; 32]));
        Session::client(
            ClientConfig {
                local: key(1),
                server: key(2).public,
                psk: None,
                paths: (0..paths)
                    .map(|i| PathConfig {
                        name: format!("p{i}"),
                        role: PathRole::Primary,
                        cost: 0.0,
                        remote: SERVER,
                        rate_limit_bps: None,
                    })
                    .collect(),
                session: SessionConfig::default(),
            },
            [3; 32],
        )
        .unwrap()
    }

    /// One interface `eth0` with index `index`, holding `addresses`.
    fn list(index: u32, running: bool, addresses: &[IpAddr]) -> InterfaceList {
        InterfaceList(vec![Interface {
            name: "eth0".into(),
            index,
            running,
            loopback: false,
            addresses: addresses.to_vec(),
        }])
    }

    /// A path pinned to a source address (a socket that needs no root):
    /// the session hears of each change of its link, once.
    #[test]
    fn the_session_hears_when_a_link_goes_and_comes_back() {
        let runtime = crate::daemon::runtime().unwrap();
        let _guard = runtime.enter();
        let source = IpAddr::V4(Ipv4Addr::LOCALHOST);
        let binding = Binding::Source(source);
        let sockets = vec![PathSocket::client_unattached(&binding, SERVER).unwrap()];
        let mut links = PathLinks::new([("p0".to_owned(), binding)], false);
        let mut session = session(1);
        let state = |s: &Session| {
            let p = &s.stats(Instant::ZERO).paths[0];
            (p.state, p.link_lost)
        };

        links.update(
            Instant::ZERO,
            &list(2, true, &[source]),
            &sockets,
            &mut session,
        );
        assert!(links.may_send(0));
        assert_eq!(state(&session), (PathState::Unvalidated, false));

        // The address leaves the interface: down at once, with the reason.
        links.update(Instant::ZERO, &list(2, true, &[]), &sockets, &mut session);
        assert!(!links.may_send(0));
        assert_eq!(state(&session), (PathState::Down, true));
        let reason = session.stats(Instant::ZERO).paths[0].down_reason;
        assert_eq!(reason, Some(PathDownReason::LinkLost));
        let mut doc = serde_json::json!([{}]);
        links.annotate(&mut doc);
        assert_eq!(doc[0]["link"], "address 127.0.0.1 is on no interface");

        // Back on an interface that is down: still lost.
        links.update(
            Instant::ZERO,
            &list(3, false, &[source]),
            &sockets,
            &mut session,
        );
        assert!(!links.may_send(0));
        assert_eq!(state(&session), (PathState::Down, true));

        // Up again: the session may probe it (up once the server answers).
        links.update(
            Instant::ZERO,
            &list(3, true, &[source]),
            &sockets,
            &mut session,
        );
        assert!(links.may_send(0));
        assert_eq!(state(&session), (PathState::Down, false));
        assert!(!links.may_send(1), "no such path");
    }
}
