//! `--mode reliable`: a bulk transfer over a [`braid_core::stream`]
//! connection, client to server, over the same simulated links as datagram
//! mode: bare, or carried by the tunnel session (`--session`: handshake,
//! AEAD, probes and packet trains, as `braid send` and `braid recv` run
//! it). The client writes one stream as fast as its send buffer takes it;
//! the server reads every byte as soon as it is in order and checks it
//! against the pattern written. The run ends when the transfer completes
//! (bulk:SIZE), fails, or the simulated time is up.

use rand::SeedableRng;
use rand_chacha::{ChaCha20Rng, ChaCha8Rng};
use std::net::SocketAddr;
use std::time::Duration;

use braid_core::cc::CcKind;
use braid_core::reseq::ReseqCounters;
use braid_core::session::{Endpoint, PeerId, Session, MAX_DATAGRAM_LEN};
use braid_core::stream::{Config, Connection, ReadOutcome};
use braid_core::time::Instant;

use crate::metrics::{Metrics, ReliableReport, Report, SenderView};
use crate::session_run::{self, SessionEventRecord, SessionReport, SessionSpec, Side};
use crate::sim::{build_links, forward, Events, Hop, Scenario, SimError};
use crate::traffic::TrafficSpec;

/// The transfer's bytes repeat with this period (a prime, so that a
/// segment in the wrong place reads as wrong).
const PATTERN_PERIOD: usize = 251;
/// Most bytes written or read in one step.
const CHUNK: usize = 1 << 20;

/// The byte at stream offset `offset`.
fn pattern_at(offset: u64) -> u8 {
    (offset % PATTERN_PERIOD as u64) as u8
}

/// One end of the transfer: its stream connection and how that
/// connection's packets leave and arrive (bare, or inside a session).
trait StreamEnd {
    /// The connection, once it exists (a session makes it with its first
    /// keys).
    fn conn(&mut self) -> Option<&mut Connection>;
    fn conn_ref(&self) -> Option<&Connection>;
    /// The next packet to send at `now`: its path and bytes.
    fn poll_transmit(&mut self, now: Instant) -> Option<(u8, Vec<u8>)>;
    fn poll_timeout(&self) -> Option<Instant>;
    fn handle_timeout(&mut self, now: Instant);
    /// A packet that arrived on `path`; what is malformed or refused in it
    /// the end counts itself.
    fn handle_packet(&mut self, now: Instant, path: u8, data: Vec<u8>);
    /// What the end's session reported since the last call (`t`: the
    /// simulated time).
    fn drain_events(&mut self, _t: Duration, _into: &mut Vec<SessionEventRecord>) {}
}

impl StreamEnd for Connection {
    fn conn(&mut self) -> Option<&mut Connection> {
        Some(self)
    }

    fn conn_ref(&self) -> Option<&Connection> {
        Some(self)
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<(u8, Vec<u8>)> {
        Connection::poll_transmit(self, now).map(|t| (t.path, t.data))
    }

    fn poll_timeout(&self) -> Option<Instant> {
        Connection::poll_timeout(self)
    }

    fn handle_timeout(&mut self, now: Instant) {
        Connection::handle_timeout(self, now);
    }

    fn handle_packet(&mut self, now: Instant, path: u8, data: Vec<u8>) {
        let _ = Connection::handle_packet(self, now, path, &data);
    }
}

/// The client's session, sending to the server's one address.
struct ClientSession {
    session: Session,
    server: SocketAddr,
    buf: Vec<u8>,
}

impl StreamEnd for ClientSession {
    fn conn(&mut self) -> Option<&mut Connection> {
        self.session.stream_mut()
    }

    fn conn_ref(&self) -> Option<&Connection> {
        self.session.stream()
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<(u8, Vec<u8>)> {
        let t = self.session.poll_transmit(now, &mut self.buf)?;
        Some((t.path, self.buf[..t.len].to_vec()))
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.session.poll_timeout()
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.session.handle_timeout(now);
    }

    fn handle_packet(&mut self, now: Instant, path: u8, mut data: Vec<u8>) {
        let _ = self
            .session
            .handle_datagram(now, Some(path), self.server, &mut data);
    }

    fn drain_events(&mut self, t: Duration, into: &mut Vec<SessionEventRecord>) {
        while let Some(e) = self.session.poll_event() {
            into.push(session_run::record(t, Side::Client, e));
        }
    }
}

/// The server's endpoint with its one client, whose path `i` comes from
/// `session_run::client_addr(i, 0)`.
struct ServerSession {
    endpoint: Endpoint,
    peer: PeerId,
    paths: usize,
    buf: Vec<u8>,
    datagrams: u64,
}

impl StreamEnd for ServerSession {
    fn conn(&mut self) -> Option<&mut Connection> {
        self.endpoint.session_mut(self.peer)?.stream_mut()
    }

    fn conn_ref(&self) -> Option<&Connection> {
        self.endpoint.session(self.peer)?.stream()
    }

    fn poll_transmit(&mut self, now: Instant) -> Option<(u8, Vec<u8>)> {
        loop {
            let (_, t) = self.endpoint.poll_transmit(now, &mut self.buf)?;
            self.datagrams += 1;
            let path = (0..self.paths).find(|&i| session_run::client_addr(i, 0) == t.remote);
            if let Some(path) = path {
                return Some((path as u8, self.buf[..t.len].to_vec()));
            }
        }
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.endpoint.poll_timeout()
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.endpoint.handle_timeout(now);
    }

    fn handle_packet(&mut self, now: Instant, path: u8, mut data: Vec<u8>) {
        let from = session_run::client_addr(usize::from(path), 0);
        let _ = self.endpoint.handle_datagram(now, from, &mut data);
    }

    fn drain_events(&mut self, t: Duration, into: &mut Vec<SessionEventRecord>) {
        while let Some((_, e)) = self.endpoint.poll_event() {
            into.push(session_run::record(t, Side::Server, e));
        }
    }
}

/// How a transfer ended.
struct Transfer {
    written: u64,
    read: u64,
    completion: Option<Duration>,
    error: Option<String>,
    /// The simulated time the run stopped at.
    end: Duration,
}

/// The bulk size, or why the scenario is not a reliable transfer.
fn bulk_size(s: &Scenario) -> Result<Option<u64>, SimError> {
    match s.traffic {
        TrafficSpec::Bulk { bytes } => Ok(bytes),
        _ => Err(SimError::ReliableNeedsBulk),
    }
}

pub fn run(s: &Scenario) -> Result<Report, SimError> {
    let total = bulk_size(s)?;
    let ccs: Vec<CcKind> = (0..s.paths.len()).map(|i| s.cc_of(i)).collect();
    let (client_clock, server_clock) = s.clock.clocks();
    let config = Config::default();
    let mut client = Connection::new(config.clone(), &ccs, client_clock.read(Duration::ZERO));
    let mut server = Connection::new(config, &ccs, server_clock.read(Duration::ZERO));
    let mut metrics = Metrics::new(s);
    let (t, links) = transfer(
        s,
        total,
        &mut client,
        &mut server,
        &mut metrics,
        &mut Vec::new(),
    )?;
    Ok(report(s, total, t, &client, &server, metrics, &links))
}

/// Through the session (`--mode reliable --session`). The session's
/// scripted incidents are datagram mode's and refused here but for
/// rekeying; so is a download (the transfer goes client to server).
pub fn run_in_session(s: &Scenario, spec: &SessionSpec) -> Result<Report, SimError> {
    let total = bulk_size(s)?;
    let refused = [
        (!spec.rebind.is_empty(), "a NAT rebinding"),
        (spec.server_restart_at.is_some(), "a server restart"),
        (spec.unknown_client, "an unknown client"),
        (spec.download, "--download"),
        (s.cc_names() != s.cc.name(), "one controller per path"),
    ];
    if let Some((_, what)) = refused.iter().find(|(on, _)| *on) {
        return Err(SimError::Session(format!(
            "--mode reliable through the session does not take {what}"
        )));
    }
    let ccs = vec![s.cc; s.paths.len()];
    let mut keys_rng = ChaCha20Rng::seed_from_u64(s.seed ^ 0x5e55_1011);
    let server_key = session_run::keypair(&mut keys_rng);
    let client_key = session_run::keypair(&mut keys_rng);
    let mut config = session_run::session_config(s, spec);
    config.stream = Some(Config::default());
    let client_config =
        session_run::client_config(s, &config, client_key.clone(), server_key.public);
    let session = Session::client(client_config, session_run::seed(&mut keys_rng))
        .map_err(|e| SimError::Session(e.to_string()))?;
    let endpoint = session_run::endpoint(
        &config,
        &server_key,
        client_key.public,
        session_run::seed(&mut keys_rng),
    );
    let peer = endpoint
        .peer_id(&client_key.public)
        .expect("configured peer");
    let mut client = ClientSession {
        session,
        server: session_run::SERVER_ADDR.parse().expect("valid address"),
        buf: vec![0u8; MAX_DATAGRAM_LEN],
    };
    let mut server = ServerSession {
        endpoint,
        peer,
        paths: s.paths.len(),
        buf: vec![0u8; MAX_DATAGRAM_LEN],
        datagrams: 0,
    };
    let mut metrics = Metrics::new(s);
    let mut records = Vec::new();
    let (t, links) = transfer(
        s,
        total,
        &mut client,
        &mut server,
        &mut metrics,
        &mut records,
    )?;
    // Without a handshake no connection was made and nothing was sent: an
    // unused one stands in for its figures, and `connected` says so.
    let unused = || Connection::new(Config::default(), &ccs, Instant::ZERO);
    let (client_unused, server_unused) = (unused(), unused());
    let connected = client.conn_ref().is_some();
    let client_conn = client.conn_ref().unwrap_or(&client_unused);
    let server_conn = server.conn_ref().unwrap_or(&server_unused);
    let end = t.end;
    let mut r = report(s, total, t, client_conn, server_conn, metrics, &links);
    let (client_clock, server_clock) = s.clock.clocks();
    let client_stats = client.session.stats(client_clock.read(end));
    let server_drops = session_run::total_server_drops(&server.endpoint, server_clock.read(end));
    r.session = Some(SessionReport {
        events: records,
        client_drops: session_run::drops_list(&client_stats.drops),
        server_drops: session_run::drops_list(&server_drops),
        client_handshakes: client_stats.handshakes,
        connected,
        server_sessions: server.endpoint.stats().sessions,
        server_datagrams: server.datagrams,
        // A full segment's packet less its data: IP, UDP, session and stream headers.
        overhead_bytes_per_packet: braid_core::stream::frame::PATH_MTU - s.payload_bytes,
    });
    Ok(r)
}

/// Runs the transfer from `client` to `server` until it completes, fails
/// or the scenario's time is up.
fn transfer(
    s: &Scenario,
    total: Option<u64>,
    client: &mut dyn StreamEnd,
    server: &mut dyn StreamEnd,
    metrics: &mut Metrics,
    records: &mut Vec<SessionEventRecord>,
) -> Result<(Transfer, Vec<(crate::link::Link, crate::link::Link)>), SimError> {
    let (client_clock, server_clock) = s.clock.clocks();
    let mut master = ChaCha8Rng::seed_from_u64(s.seed);
    let mut links = build_links(s, &mut master);
    let mut events = Events::default();
    // One period more than a chunk, so any offset's pattern is one slice.
    let source: Vec<u8> = (0..(CHUNK + PATTERN_PERIOD) as u64)
        .map(pattern_at)
        .collect();
    let mut buf = vec![0u8; CHUNK];
    let (mut written, mut read) = (0u64, 0u64);
    let mut stream: Option<u32> = None;
    let mut finished_writing = false;
    let mut completion: Option<Duration> = None;
    let mut error: Option<String> = None;
    let mut now = Duration::ZERO;
    let mut stall = crate::stall::StallGuard::default();

    loop {
        let client_now = client_clock.read(now);
        let server_now = server_clock.read(now);
        // The application opens its stream once there is a connection,
        // and writes what the send buffer takes.
        if let Some(conn) = client.conn() {
            let id = *stream.get_or_insert_with(|| {
                conn.open_stream().expect("a new connection opens a stream")
            });
            if !finished_writing {
                let left = total.map_or(u64::MAX, |t| t - written);
                let n = (conn.send_capacity() as u64).min(left).min(CHUNK as u64) as usize;
                let start = (written % PATTERN_PERIOD as u64) as usize;
                let took = conn.write(id, &source[start..start + n]).unwrap_or(0);
                written += took as u64;
                if total == Some(written) {
                    finished_writing = conn.finish(id).is_ok();
                }
            }
        }
        // The receiving application reads and checks everything in order.
        if let (Some(id), Some(conn)) = (stream, server.conn()) {
            loop {
                match conn.read(server_now, id, &mut buf) {
                    Ok(ReadOutcome::Data(k)) => {
                        let expected = (read..read + k as u64).map(pattern_at);
                        if !buf[..k].iter().copied().eq(expected) {
                            error = Some(format!("bytes {read}..{} read wrong", read + k as u64));
                        }
                        read += k as u64;
                        metrics.on_stream_read(k as u64, now);
                    }
                    Ok(ReadOutcome::Finished) => {
                        completion = Some(now);
                        break;
                    }
                    Ok(ReadOutcome::Blocked) | Err(_) => break,
                }
            }
        }
        let failed = [client.conn_ref(), server.conn_ref()]
            .into_iter()
            .flatten()
            .find_map(Connection::error);
        if let Some(e) = failed {
            error.get_or_insert_with(|| e.to_string());
        }
        if completion.is_some() || error.is_some() {
            break;
        }
        while let Some((path, data)) = client.poll_transmit(client_now) {
            let link = &mut links[usize::from(path)].0;
            forward(link, now, Hop::Up, path, data, &mut events);
        }
        while let Some((path, data)) = server.poll_transmit(server_now) {
            let link = &mut links[usize::from(path)].1;
            forward(link, now, Hop::Down, path, data, &mut events);
        }
        client.drain_events(now, records);
        server.drain_events(now, records);
        let t_client = client
            .poll_timeout()
            .map(|t| client_clock.true_time_of(t, now));
        let t_server = server
            .poll_timeout()
            .map(|t| server_clock.true_time_of(t, now));
        let Some(next) = [events.peek_time(), t_client, t_server]
            .into_iter()
            .flatten()
            .min()
        else {
            break;
        };
        if next >= s.duration {
            break;
        }
        now = stall.advance(now, next)?;
        let client_now = client_clock.read(now);
        let server_now = server_clock.read(now);
        while events.peek_time().is_some_and(|t| t <= now) {
            let e = events.pop().expect("peeked");
            match e.hop {
                Hop::Up => {
                    let ip_bytes = e.data.len() + braid_core::wire::IP_UDP_OVERHEAD;
                    metrics.on_path_arrival(usize::from(e.path), now, ip_bytes);
                    server.handle_packet(server_now, e.path, e.data);
                }
                Hop::Down => client.handle_packet(client_now, e.path, e.data),
                // Reliable mode carries no TCP sources (refused in `sim::run`).
                Hop::TcpAck => {}
            }
        }
        if t_client.is_some_and(|t| t <= now) {
            client.handle_timeout(client_now);
        }
        if t_server.is_some_and(|t| t <= now) {
            server.handle_timeout(server_now);
        }
    }
    let t = Transfer {
        written,
        read,
        completion,
        error,
        end: now,
    };
    Ok((t, links))
}

/// The run's report from the transfer's outcome and both connections.
fn report(
    s: &Scenario,
    total: Option<u64>,
    t: Transfer,
    client: &Connection,
    server: &Connection,
    metrics: Metrics,
    links: &[(crate::link::Link, crate::link::Link)],
) -> Report {
    // A completed transfer is measured over its own length.
    let mut measured = s.clone();
    if let Some(done) = t.completion.filter(|d| !d.is_zero()) {
        measured.duration = done;
    }
    let view = SenderView {
        scheduler: "late-binding",
        paths: (0..s.paths.len()).filter_map(|i| client.path(i)).collect(),
        queue_drops: 0,
        scheduler_drops: 0,
        counters: None,
    };
    let mut report = metrics.finish(&measured, &view, &ReseqCounters::default(), links);
    let secs = measured.duration.as_secs_f64();
    report.offered_bps = t.written as f64 * 8.0 / secs;
    // Bytes still in flight when the clock ran out are not lost; only a
    // failed transfer loses what it never delivered.
    report.loss_rate = match (&t.error, t.written) {
        (Some(_), w) if w > 0 => 1.0 - t.read as f64 / w as f64,
        _ => 0.0,
    };
    report.reliable = Some(ReliableReport {
        transfer_bytes: total,
        read_bytes: t.read,
        completion_s: t.completion.map(|d| d.as_secs_f64()),
        retransmitted_bytes: client.counters.retransmitted_bytes,
        redundant_bytes: server.counters.redundant_bytes,
        error: t.error,
        stream: client.counters.clone(),
    });
    report
}
