//! `braid client --config client.toml`: one session to the server over one
//! UDP socket per path, and the TUN device.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use braid_core::crypto::StaticKeypair;
use braid_core::session::{self, Event, PathDownReason, PathRole, Session};
use braid_core::time::Instant;
use braid_io::{
    interface_mtu, Binding, DeliveryError, InterfaceList, LinkWatch, PathSocket, SocketError,
    TransmitBatch,
};
use serde_json::json;
use tracing::{debug, info, warn};

use super::control::ControlSocket;
use super::data_cap::{DataCaps, PathSetup};
use super::event_loop::{self, Core, Outgoing, TunWriter};
use super::inner_addr;
use super::links::{self, PathLinks};
use super::no_answer::NoAnswer;
use super::routing;
use super::server_name;
use super::{
    configured_mtu, create_tun, os_seed, session_config, status_json, tunnel_mtu_for_paths,
};
use crate::config::client::ClientConfig;
use crate::config::{self, Role};
use crate::Failure;

#[derive(clap::Args, Debug)]
pub struct ClientArgs {
    /// The client's config file (see examples/client.toml)
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,
}

/// What the daemon counts besides the session.
#[derive(Debug, Default)]
struct Counters {
    tun_rx_packets: u64,
    tun_rx_refused: u64,
    /// Link-local packets (IPv6 router solicitations, MLD) kept off the
    /// tunnel.
    tun_rx_link_local: u64,
    udp_send_errors: u64,
    /// Datagrams not sent because their path's link is gone.
    udp_link_lost: u64,
    /// ICMP errors (port or host unreachable, ...) for datagrams sent.
    udp_icmp_errors: u64,
}

struct Client {
    session: Session,
    counters: Counters,
    path_names: Vec<String>,
    /// The paths' data caps, if any path has one.
    caps: Option<DataCaps>,
    links: PathLinks,
    tx: TransmitBatch,
    no_answer: NoAnswer,
    /// What to check when the server does not answer, for the log.
    no_answer_hint: String,
    /// Each path's last ICMP error, and when it came: the likeliest
    /// reason for a silence.
    path_icmp_errors: Vec<Option<(Instant, DeliveryError)>>,
}

pub fn run(args: &ClientArgs) -> Result<(), Failure> {
    let config: ClientConfig =
        config::load(&args.config).map_err(|e| Failure::Usage(e.to_string()))?;
    let routing_plan = routing::plan_for(&args.config, &config)?;
    super::init_logging();
    let server =
        server_name::resolve_at_start(config.server.endpoint.get_ref(), config.server_family())
            .map_err(|e| Failure::Runtime(format!("{}: {e}", args.config.display())))?;
    let runtime = super::runtime().map_err(|e| Failure::Runtime(format!("runtime: {e}")))?;
    tokio::task::LocalSet::new()
        .block_on(&runtime, serve(&args.config, config, server, routing_plan))
}

/// The tunnel MTU when the config names none: fitted to the MTUs of the
/// paths' interfaces (paths pinned to a source address follow the routing
/// table, whose MTU the client cannot know ahead).
fn mtu_from_paths(config: &ClientConfig, server_ipv6: bool) -> u16 {
    let known: Vec<(String, u32)> = config
        .paths
        .iter()
        .filter_map(|p| p.get_ref().interface.clone())
        .filter_map(|name| interface_mtu(&name).ok().map(|mtu| (name, mtu)))
        .collect();
    let mtu = tunnel_mtu_for_paths(known.iter().map(|(_, mtu)| *mtu), server_ipv6);
    if known.is_empty() {
        info!(
            mtu,
            "tunnel MTU: the default for 1500-byte links (no path names an interface whose \
             MTU could be read; set [tunnel] mtu for smaller links)"
        );
    } else {
        info!(mtu, paths = ?known, "tunnel MTU fitted to the paths' interface MTUs");
    }
    mtu
}

fn core_role(role: Role) -> PathRole {
    match role {
        Role::Primary => PathRole::Primary,
        Role::Overflow => PathRole::Overflow,
        Role::Backup => PathRole::Backup,
    }
}

/// The wall clock in Unix seconds, for the data caps' calendar.
fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A path's socket; for an `optional` path whose link is missing, one
/// that waits for it (see `links`).
/// The socket of `path`, whose `[[path]]` begins at byte `at` of `file`.
fn open_path_socket(
    file: &std::path::Path,
    at: usize,
    path: &crate::config::client::PathConfig,
    binding: &Binding,
    server: SocketAddr,
) -> Result<PathSocket, Failure> {
    let failed = |e: SocketError| {
        let hint = if e.is_missing_link() {
            " (with optional = true on the path the client waits for it)"
        } else {
            ""
        };
        Failure::Usage(format!(
            "{}: path {:?}: {e}{hint}",
            config::place(file, at),
            path.display_name()
        ))
    };
    match PathSocket::client(binding, server) {
        Err(e) if path.optional && e.is_missing_link() => {
            info!(path = path.display_name(), "{e}: waiting for it");
            PathSocket::client_unattached(binding, server).map_err(failed)
        }
        other => other.map_err(failed),
    }
}

async fn serve(
    file: &Path,
    config: ClientConfig,
    endpoint: SocketAddr,
    routing_plan: Option<routing::Plan>,
) -> Result<(), Failure> {
    // Subscribed before the first look at the interfaces, so that no
    // change after it goes unnoticed.
    let watch =
        LinkWatch::open().map_err(|e| Failure::Runtime(format!("link notifications: {e}")))?;
    let mut sockets = Vec::new();
    let mut paths = Vec::new();
    let mut bindings = Vec::new();
    for path in &config.paths {
        let p = path.get_ref();
        let binding = match (&p.interface, p.source) {
            (Some(name), _) => Binding::Interface(name.clone()),
            (None, Some(ip)) => Binding::Source(ip),
            (None, None) => unreachable!("config validation requires one"),
        };
        let socket = open_path_socket(file, path.span().start, p, &binding, endpoint)?;
        if let Some(plan) = &routing_plan {
            socket.set_mark(plan.mark).map_err(|e| {
                Failure::Runtime(format!(
                    "path {:?}: cannot mark its packets: {e}",
                    p.display_name()
                ))
            })?;
        }
        sockets.push(socket);
        bindings.push((p.display_name(), binding));
        paths.push(session::PathConfig {
            name: p.display_name(),
            role: core_role(p.role),
            cost: p.cost_weight.as_ref().map_or(0.0, |w| *w.get_ref()),
            remote: endpoint,
            rate_limit_bps: p.rate_limit.as_ref().map(|r| r.bps),
        });
    }
    let mtu = configured_mtu(config.tunnel.get_ref(), || {
        mtu_from_paths(&config, endpoint.is_ipv6())
    });
    let path_names: Vec<String> = paths.iter().map(|p| p.name.clone()).collect();
    let mut session = Session::client(
        session::ClientConfig {
            local: StaticKeypair::from_private(config.private_key.0.clone()),
            server: config.server.public_key.get_ref().0,
            psk: config.server.preshared_key.as_ref().map(|k| k.0.clone()),
            paths,
            session: session_config(
                mtu,
                config.tunnel.get_ref().resend_losses,
                config.tunnel.get_ref().path_trains,
            ),
        },
        os_seed(),
    )
    .map_err(|e| Failure::Usage(format!("session: {e}")))?;
    let caps = DataCaps::start(
        config.usage_file(file),
        &config
            .paths
            .iter()
            .map(|p| PathSetup {
                name: p.get_ref().display_name(),
                role: core_role(p.get_ref().role),
                cap: p.get_ref().data_cap,
            })
            .collect::<Vec<_>>(),
        unix_now(),
    )
    .map_err(Failure::Runtime)?;
    let control = ControlSocket::bind(&config.control_socket())
        .map_err(|e| Failure::Runtime(format!("control socket: {e}")))?;
    let metrics = super::bind_metrics(config.metrics).await?;
    let tun = create_tun(file, config.tunnel.get_ref(), mtu)?;
    // Held to the end of this function: dropping it removes the routes.
    let _installed_routing = routing_plan
        .map(|plan| routing::install(&plan, tun.name()))
        .transpose()?;
    let mut links = PathLinks::new(bindings, endpoint.is_ipv6());
    let interfaces =
        InterfaceList::read().map_err(|e| Failure::Runtime(format!("reading interfaces: {e}")))?;
    links.update(Instant::ZERO, &interfaces, &sockets, &mut session);
    info!(
        tun = tun.name(),
        metrics = ?metrics.as_ref().and_then(|l| l.local_addr().ok()),
        mtu,
        server = %endpoint,
        name = %config.server.endpoint.get_ref(),
        paths = ?path_names,
        "client started"
    );
    let server_name = config.server.endpoint.get_ref();
    let server_name =
        matches!(server_name, config::ServerAddr::Name { .. }).then(|| server_name.clone());

    let path_icmp_errors = vec![None; path_names.len()];
    let client = Client {
        session,
        counters: Counters::default(),
        path_names,
        caps,
        links,
        tx: super::transmit_batch(mtu),
        no_answer: NoAnswer::default(),
        no_answer_hint: format!(
            "check in {} the [server] public_key and endpoint ({endpoint}), that the server's \
             [[peer]] has this client's public key (braid pubkey < this client's private key), \
             and that UDP reaches the server",
            file.display()
        ),
        path_icmp_errors,
    };
    event_loop::run_with(client, sockets, tun, control, metrics, |handle| {
        if let Some(name) = server_name {
            let (asks, moves) = (handle.clone(), handle.clone());
            tokio::task::spawn_local(server_name::follow(
                name,
                endpoint,
                move || {
                    asks.input(|c: &mut Client, now, _| {
                        server_name::silent(now, c.session.last_heard(), Instant::ZERO)
                    })
                },
                move |addr| {
                    moves.input(|c: &mut Client, _, _| c.session.set_server_address(addr));
                },
            ));
        }
        tokio::task::spawn_local(links::follow(watch, move |list| {
            handle.input(|c: &mut Client, now, sockets| {
                c.links.update(now, list, sockets, &mut c.session);
            });
        }));
    })
    .await
}

impl Core for Client {
    fn handle_datagram(&mut self, now: Instant, socket: usize, from: SocketAddr, bytes: &mut [u8]) {
        // One socket per path, in path order. Drops are counted by the
        // session; nothing to do here.
        if let Ok(path) = u8::try_from(socket) {
            let _ = self.session.handle_datagram(now, Some(path), from, bytes);
        }
    }

    /// An inner packet from the TUN device, offered to the session.
    fn offer(&mut self, now: Instant, packet: &[u8]) {
        self.counters.tun_rx_packets += 1;
        if inner_addr::link_scoped(packet) {
            self.counters.tun_rx_link_local += 1;
            return;
        }
        let flow = inner_addr::flow_id(packet);
        if self.session.send_flow_from(now, flow, packet).is_err() {
            // Not connected yet, too large or queue full: the session
            // counts what it refused; the daemon counts the total.
            self.counters.tun_rx_refused += 1;
        }
    }

    /// Everything the session has to say: datagrams to the paths, inner
    /// packets to the TUN device, events to the log.
    fn flush(&mut self, now: Instant, sockets: &[PathSocket], tun: &mut TunWriter) {
        self.take_icmp_errors(now, sockets);
        let (session, links, counters) = (&mut self.session, &self.links, &mut self.counters);
        let failed = event_loop::send_datagrams(&mut self.tx, sockets, |buf| {
            let t = session.poll_transmit(now, buf)?;
            if !links.may_send(t.path) {
                counters.udp_link_lost += 1;
                return Some(None);
            }
            Some(Some(Outgoing {
                socket: usize::from(t.path),
                to: t.remote,
                len: t.len,
            }))
        });
        self.counters.udp_send_errors += failed;
        while let Some(d) = self.session.poll_deliver() {
            tun.write(&d.payload);
            self.session.recycle(d.payload);
        }
        while let Some(event) = self.session.poll_event() {
            self.log(now, event);
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        let session = self.session.poll_timeout();
        match &self.caps {
            Some(caps) => Some(session.map_or(caps.poll_timeout(), |t| t.min(caps.poll_timeout()))),
            None => session,
        }
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.session.handle_timeout(now);
        if let Some(waited) = self.no_answer.check(now, self.session.is_connected()) {
            let last = self
                .icmp_errors_within(now, waited)
                .max_by_key(|&(_, at, _)| at);
            let icmp = last.map_or(String::new(), |(path, _, e)| {
                format!(" (the last ICMP error, on path {}: {e})", self.name(path))
            });
            warn!(
                "no answer from the server for {} s on any path{icmp}: {}",
                waited.as_secs(),
                self.no_answer_hint
            );
        }
        if let Some(caps) = &mut self.caps {
            caps.handle_timeout(now, unix_now(), &mut self.session);
        }
    }

    fn stop(&mut self, now: Instant) {
        if let Some(caps) = &mut self.caps {
            caps.save(now);
        }
    }

    fn status(&self, now: Instant) -> serde_json::Value {
        let c = &self.counters;
        let mut session = status_json::session(&self.session.stats(now));
        if let (Some(caps), Some(paths)) = (&self.caps, session["paths"].as_array_mut()) {
            for (i, path) in paths.iter_mut().enumerate() {
                if let Some(cap) = caps.status(i) {
                    path["data_cap"] = cap;
                }
            }
        }
        let mut doc = json!({
            "role": "client",
            "session": session,
            "daemon": {
                "tun_rx_packets": c.tun_rx_packets,
                "tun_rx_refused": c.tun_rx_refused,
                "tun_rx_link_local": c.tun_rx_link_local,
                "udp_send_errors": c.udp_send_errors,
                "udp_datagrams_sent": self.tx.counts().1,
                "udp_send_calls": self.tx.counts().0,
                "udp_link_lost": c.udp_link_lost,
                "udp_icmp_errors": c.udp_icmp_errors,
            },
        });
        self.links.annotate(&mut doc["session"]["paths"]);
        doc
    }
}

impl Client {
    /// Counts what the paths' sockets collected, and logs it: a path that
    /// draws ICMP errors says why the server does not answer on it.
    fn take_icmp_errors(&mut self, now: Instant, sockets: &[PathSocket]) {
        for (index, socket) in sockets.iter().enumerate() {
            let (Some(errors), Ok(path)) = (socket.take_delivery_errors(), u8::try_from(index))
            else {
                continue;
            };
            self.counters.udp_icmp_errors += errors.count;
            debug!(
                path = self.name(path),
                count = errors.count,
                "ICMP errors for datagrams sent on this path, the last: {}",
                errors.last
            );
            if let Some(slot) = self.path_icmp_errors.get_mut(index) {
                *slot = Some((now, errors.last));
            }
        }
    }

    fn name(&self, path: u8) -> &str {
        self.path_names
            .get(usize::from(path))
            .map_or("?", String::as_str)
    }

    /// The paths' last ICMP errors that came during a silence of `silent`
    /// ending `now`: (path, when, error).
    fn icmp_errors_within(
        &self,
        now: Instant,
        silent: Duration,
    ) -> impl Iterator<Item = (u8, Instant, DeliveryError)> + '_ {
        self.path_icmp_errors
            .iter()
            .enumerate()
            .filter_map(|(path, last)| Some((u8::try_from(path).ok()?, (*last)?)))
            .filter(move |&(_, (at, _))| now - at <= silent)
            .map(|(path, (at, e))| (path, at, e))
    }

    /// What the path's datagrams drew during a silence of `silent`.
    fn icmp_during(&self, path: u8, now: Instant, silent: Duration) -> String {
        self.icmp_errors_within(now, silent)
            .find(|&(p, _, _)| p == path)
            .map_or(String::new(), |(_, _, e)| {
                format!("; its datagrams drew {e}")
            })
    }

    fn log(&self, now: Instant, event: Event) {
        match event {
            Event::Connected { peer_restarted } => {
                info!(peer_restarted, "connected to the server")
            }
            Event::Rekeyed => debug!("keys rotated"),
            Event::PathUp { path, remote } => {
                info!(path = self.name(path), %remote, "path up: the server answers on it")
            }
            Event::PathDown { path, reason } => match reason {
                PathDownReason::Silent(d) => info!(
                    path = self.name(path),
                    "path down: nothing heard on it for {} ms{}",
                    d.as_millis(),
                    self.icmp_during(path, now, d)
                ),
                PathDownReason::SessionReset => {
                    info!(
                        path = self.name(path),
                        "path down: session keys lost, reconnecting"
                    )
                }
                PathDownReason::LinkLost => {
                    info!(path = self.name(path), "path down: its link is lost")
                }
            },
            Event::PathRebound { path, from, to } => {
                info!(path = self.name(path), %from, %to, "path rebound: the server's address changed")
            }
            Event::PathMeasured { path, bps } => info!(
                path = self.name(path),
                "path measured by a packet train: {:.2} Mbit/s upstream",
                bps as f64 / 1e6
            ),
            Event::ProtocolMismatch { peer_version } => warn!(
                "{}; still trying every second",
                crate::daemon::protocol_mismatch("the server", peer_version)
            ),
        }
    }
}
