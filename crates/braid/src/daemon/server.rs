//! `braid server --config server.toml`: one endpoint for many clients, one
//! UDP socket per listen address, and the TUN device. A client may send
//! only from its own tunnel addresses; packets to the TUN device go to the
//! client whose addresses hold their destination.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};

use braid_core::crypto::StaticKeypair;
use braid_core::session::{self, Endpoint, EndpointConfig, Event, PathDownReason, PeerId};
use braid_core::time::Instant;
use braid_io::{PathSocket, TransmitBatch};
use ipnet::IpNet;
use serde_json::json;
use tracing::{debug, info, warn};

use super::control::ControlSocket;
use super::event_loop::{self, Core, Outgoing, TunWriter};
use super::inner_addr::{addresses, flow_id};
use super::nat;
use super::throttle::{Refused, RefusedHandshakes};
use super::{configured_mtu, create_tun, default_tunnel_mtu, os_seed, session_config, status_json};
use crate::config::server::ServerConfig;
use crate::config::values::ListenAddr;
use crate::config::{self};
use crate::Failure;

#[derive(clap::Args, Debug)]
pub struct ServerArgs {
    /// The server's config file (see examples/server.toml)
    #[arg(long, value_name = "FILE")]
    pub config: PathBuf,
}

/// Handshakes the server processes per second, over all clients.
const HANDSHAKES_PER_SECOND: u32 = 100;

#[derive(Debug, Default)]
struct Counters {
    tun_rx_packets: u64,
    tun_rx_no_peer: u64,
    tun_rx_refused: u64,
    /// Inner packets from a client with a source outside its allowed
    /// addresses (or unreadable): dropped.
    inner_source_refused: u64,
    udp_send_errors: u64,
}

struct Peer {
    name: String,
    public_key: String,
    allowed: Vec<IpNet>,
}

struct Server {
    endpoint: Endpoint,
    peers: Vec<Peer>,
    counters: Counters,
    tx: TransmitBatch,
    /// Logs of handshakes from keys no `[[peer]]` has, and of ones that
    /// do not authenticate (a client with another server public key).
    refused: RefusedHandshakes,
}

/// At most one log line per this for handshakes the server refuses.
const REFUSED_LOG_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

pub fn run(args: &ServerArgs) -> Result<(), Failure> {
    let config: ServerConfig =
        config::load(&args.config).map_err(|e| Failure::Usage(e.to_string()))?;
    if let Some(nat) = &config.nat {
        nat::check_uplink(nat.uplink.get_ref()).map_err(|e| {
            let at = config::place(&args.config, nat.uplink.span().start);
            Failure::Usage(format!("{at}: {e}"))
        })?;
    }
    super::init_logging();
    let runtime = super::runtime().map_err(|e| Failure::Runtime(format!("runtime: {e}")))?;
    tokio::task::LocalSet::new().block_on(&runtime, serve(&args.config, config))
}

async fn serve(file: &Path, config: ServerConfig) -> Result<(), Failure> {
    let mut sockets = Vec::new();
    for &ListenAddr(addr) in config.listen.get_ref() {
        let socket = PathSocket::listen(addr).map_err(|e| {
            let at = config::place(file, config.listen.span().start);
            Failure::Runtime(format!("{at}: listen {addr}: {e}"))
        })?;
        sockets.push(socket);
    }
    let mtu = configured_mtu(config.tunnel.get_ref(), default_tunnel_mtu);
    let peers: Vec<Peer> = config
        .peers
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let p = p.get_ref();
            Peer {
                name: p.name.clone().unwrap_or_else(|| format!("peer{i}")),
                public_key: p.public_key.0.to_base64(),
                allowed: p.allowed.clone(),
            }
        })
        .collect();
    let endpoint = Endpoint::new(
        EndpointConfig {
            local: StaticKeypair::from_private(config.private_key.0.clone()),
            peers: config
                .peers
                .iter()
                .map(|p| session::PeerConfig {
                    public_key: p.get_ref().public_key.0,
                    psk: p.get_ref().preshared_key.as_ref().map(|k| k.0.clone()),
                })
                .collect(),
            session: session_config(
                mtu,
                config.tunnel.get_ref().resend_losses,
                config.tunnel.get_ref().path_trains,
            ),
            handshakes_per_second: HANDSHAKES_PER_SECOND,
        },
        os_seed(),
    )
    .map_err(|e| Failure::Usage(format!("endpoint: {e}")))?;
    let control = ControlSocket::bind(&config.control_socket())
        .map_err(|e| Failure::Runtime(format!("control socket: {e}")))?;
    let metrics = super::bind_metrics(config.metrics).await?;
    let tun = create_tun(file, config.tunnel.get_ref(), mtu)?;
    // Deleted again when `serve` returns, on a signal or an error.
    let _nat = nat::start(&config, tun.name())?;
    info!(
        tun = tun.name(),
        metrics = ?metrics.as_ref().and_then(|l| l.local_addr().ok()),
        mtu,
        listen = ?config.listen.get_ref().iter().map(|a| a.0).collect::<Vec<_>>(),
        peers = peers.len(),
        "server started"
    );

    let server = Server {
        endpoint,
        peers,
        counters: Counters::default(),
        tx: super::transmit_batch(mtu),
        refused: RefusedHandshakes::new(REFUSED_LOG_EVERY),
    };
    event_loop::run(server, sockets, tun, control, metrics).await
}

impl Server {
    /// The client whose allowed addresses hold `dst`.
    fn peer_for(&self, dst: IpAddr) -> Option<PeerId> {
        self.peers
            .iter()
            .position(|p| p.allowed.iter().any(|net| net.contains(&dst)))
            .map(PeerId)
    }

    fn log(&self, peer: PeerId, event: Event) {
        let name = self.peers.get(peer.0).map_or("?", |p| p.name.as_str());
        match event {
            Event::Connected { peer_restarted } => {
                info!(peer = name, peer_restarted, "client connected")
            }
            Event::Rekeyed => debug!(peer = name, "keys rotated"),
            Event::PathUp { path, remote } => info!(peer = name, path, %remote, "path up"),
            Event::PathDown { path, reason } => match reason {
                PathDownReason::Silent(d) => info!(
                    peer = name,
                    path,
                    "path down: nothing heard on it for {} ms",
                    d.as_millis()
                ),
                PathDownReason::SessionReset => {
                    info!(peer = name, path, "path down: session reset")
                }
                PathDownReason::LinkLost => info!(peer = name, path, "path down: link lost"),
            },
            Event::PathRebound { path, from, to } => {
                info!(peer = name, path, %from, %to, "path rebound (NAT)")
            }
            Event::PathMeasured { path, bps } => info!(
                peer = name,
                path,
                "path measured by a packet train: {:.2} Mbit/s downstream",
                bps as f64 / 1e6
            ),
            Event::ProtocolMismatch { peer_version } => warn!(
                peer = name,
                "client refused: {}",
                crate::daemon::protocol_mismatch("it", peer_version)
            ),
        }
    }
}

impl Core for Server {
    fn handle_datagram(
        &mut self,
        now: Instant,
        _socket: usize,
        from: SocketAddr,
        bytes: &mut [u8],
    ) {
        // What does not authenticate is counted by the endpoint and
        // answered with nothing; refused handshakes are also logged, at
        // most once a minute each, for whoever configures a client.
        let Err(reason) = self.endpoint.handle_datagram(now, from, bytes) else {
            return;
        };
        match self.refused.note(now, reason) {
            Some((Refused::UnknownKey, n)) => warn!(
                %from,
                handshakes = n,
                "handshake from a key no [[peer]] has: add the client's public key \
                 (braid pubkey < its private key) to a [[peer]]"
            ),
            Some((Refused::Invalid, n)) => warn!(
                %from,
                handshakes = n,
                "handshake that does not authenticate: the client may name another \
                 public_key for this server (braid pubkey < this server's private key)"
            ),
            None => {}
        }
    }

    /// An inner packet from the TUN device, offered to its client's session.
    fn offer(&mut self, now: Instant, packet: &[u8]) {
        self.counters.tun_rx_packets += 1;
        let Some(peer) = addresses(packet).and_then(|(_, dst)| self.peer_for(dst)) else {
            self.counters.tun_rx_no_peer += 1;
            return;
        };
        let flow = flow_id(packet);
        if self
            .endpoint
            .send_flow_from(now, peer, flow, packet)
            .is_err()
        {
            self.counters.tun_rx_refused += 1;
        }
    }

    fn flush(&mut self, now: Instant, sockets: &[PathSocket], tun: &mut TunWriter) {
        let (endpoint, counters) = (&mut self.endpoint, &mut self.counters);
        let failed = event_loop::send_datagrams(&mut self.tx, sockets, |buf| {
            let (_, t) = endpoint.poll_transmit(now, buf)?;
            let Some(socket) = socket_for(sockets, t.remote) else {
                counters.udp_send_errors += 1;
                return Some(None);
            };
            Some(Some(Outgoing {
                socket,
                to: t.remote,
                len: t.len,
            }))
        });
        self.counters.udp_send_errors += failed;
        while let Some((peer, d)) = self.endpoint.poll_deliver() {
            // A client may send only from its own tunnel addresses.
            let allowed = addresses(&d.payload).is_some_and(|(src, _)| {
                self.peers[peer.0]
                    .allowed
                    .iter()
                    .any(|net| net.contains(&src))
            });
            if allowed {
                tun.write(&d.payload);
            } else {
                self.counters.inner_source_refused += 1;
            }
            self.endpoint.recycle(peer, d.payload);
        }
        while let Some((peer, event)) = self.endpoint.poll_event() {
            self.log(peer, event);
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.endpoint.poll_timeout()
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.endpoint.handle_timeout(now);
    }

    fn status(&self, now: Instant) -> serde_json::Value {
        let stats = self.endpoint.stats();
        let drops: serde_json::Map<String, serde_json::Value> = stats
            .drops
            .iter()
            .filter(|&(_, n)| n > 0)
            .map(|(reason, n)| (reason.name().to_owned(), n.into()))
            .collect();
        let peers: Vec<serde_json::Value> = self
            .peers
            .iter()
            .enumerate()
            .map(|(i, p)| {
                json!({
                    "name": p.name,
                    "public_key": p.public_key,
                    "allowed": p.allowed.iter().map(ToString::to_string).collect::<Vec<_>>(),
                    "session": self
                        .endpoint
                        .session(PeerId(i))
                        .map(|s| status_json::session(&s.stats(now))),
                })
            })
            .collect();
        let c = &self.counters;
        json!({
            "role": "server",
            "sessions": stats.sessions,
            "handshakes_accepted": stats.handshakes_accepted,
            "drops": drops,
            "peers": peers,
            "daemon": {
                "tun_rx_packets": c.tun_rx_packets,
                "tun_rx_no_peer": c.tun_rx_no_peer,
                "tun_rx_refused": c.tun_rx_refused,
                "inner_source_refused": c.inner_source_refused,
                "udp_send_errors": c.udp_send_errors,
                "udp_datagrams_sent": self.tx.counts().1,
                "udp_send_calls": self.tx.counts().0,
            },
        })
    }
}

/// The number of the listen socket of `remote`'s address family.
fn socket_for(sockets: &[PathSocket], remote: SocketAddr) -> Option<usize> {
    sockets
        .iter()
        .position(|s| s.local_addr().is_ipv4() == remote.is_ipv4())
}
