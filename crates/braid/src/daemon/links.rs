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
