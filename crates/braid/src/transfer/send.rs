//! `braid send FILE... --to HOST:PORT --via IFACE|ADDR ...`: the session's
//! client. Each file goes on its own stream, one after the other: header,
//! data (hashed with SHA-256 as it is read), digest. The sender is done
//! when the receiver has answered for every file.

use std::fs::{File, OpenOptions};
use std::io::Read;
use std::net::{IpAddr, SocketAddr};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, SystemTime};

use braid_core::crypto::StaticKeypair;
use braid_core::session::{self, Event, PathRole, Session};
use braid_core::stream::{ReadOutcome, StreamError};
use braid_core::time::Instant;
use braid_io::{Binding, DeliveryError, PathSocket, TransmitBatch};
use serde_json::json;
use sha2::{Digest, Sha256};

use super::give_up::{self, GiveUp};
use super::header::{self, FileHeader, Reply, MAX_FILES, UNKNOWN_SIZE};
use super::progress::Progress;
use super::stall::StallWatch;
use super::{hex, mbit_per_s, path_bytes, paths_json, peer_silent, KeyArgs, LINGER, TICK};
use crate::config::ServerAddr;
use crate::daemon::event_loop::{send_datagrams, Driver, Outgoing, SocketCore};
use crate::daemon::{self, os_seed, runtime, shutdown_signal};
use crate::{write_stdout, Failure};

/// Bytes read from a file or stdin at a time.
const CHUNK: usize = 64 << 10;

#[derive(clap::Args, Debug)]
pub struct SendArgs {
    /// Files to send, or `-` alone for standard input
    #[arg(value_name = "FILE", required = true)]
    pub files: Vec<PathBuf>,
    /// The receiver (`braid recv --listen`)
    #[arg(long, value_name = "HOST:PORT")]
    pub to: String,
    /// One path per --via: an interface name (SO_BINDTODEVICE) or a local
    /// address to send from. Without any: one path per interface that is up,
    /// not loopback and has an address of the receiver's family (for a
    /// loopback receiver, one path)
    #[arg(long = "via", value_name = "IFACE|ADDR")]
    pub via: Vec<String>,
    /// The receiver's public key (base64, `braid pubkey` of its key)
    #[arg(long, value_name = "PUBKEY")]
    pub peer: String,
    #[command(flatten)]
    pub common: KeyArgs,
}

/// Where a file's bytes come from.
enum Input {
    File(File),
    /// Chunks from a thread reading stdin; disconnected at its end.
    Stdin(mpsc::Receiver<std::io::Result<Vec<u8>>>),
}

struct Source {
    /// The name the receiver writes.
    name: String,
    /// Shown in messages.
    shown: String,
    input: Input,
    size: u64,
    modified: Option<SystemTime>,
}

/// What one read of a source gave.
enum Chunk {
    Data(usize),
    /// Nothing yet (stdin).
    Wait,
    End,
}

impl Source {
    fn read(&mut self, buf: &mut Vec<u8>, max: usize) -> Result<Chunk, String> {
        match &mut self.input {
            Input::File(f) => {
                buf.resize(max, 0);
                let n = f
                    .read(buf)
                    .map_err(|e| format!("reading {}: {e}", self.shown))?;
                buf.truncate(n);
                Ok(if n == 0 { Chunk::End } else { Chunk::Data(n) })
            }
            Input::Stdin(rx) => match rx.try_recv() {
                Ok(Ok(data)) => {
                    let n = data.len();
                    *buf = data;
                    Ok(Chunk::Data(n))
                }
                Ok(Err(e)) => Err(format!("reading standard input: {e}")),
                Err(mpsc::TryRecvError::Empty) => Ok(Chunk::Wait),
                Err(mpsc::TryRecvError::Disconnected) => Ok(Chunk::End),
            },
        }
    }

    /// A file that changed while it was read is not sent as if it had not.
    fn check_unchanged(&self, read: u64) -> Result<(), String> {
        let Input::File(f) = &self.input else {
            return Ok(());
        };
        let now = f.metadata().ok();
        let changed = read != self.size
            || now.as_ref().map(std::fs::Metadata::len) != Some(self.size)
            || now.and_then(|m| m.modified().ok()) != self.modified;
        if changed {
            return Err(format!(
                "{} changed while it was being sent (read {read} of {} bytes)",
                self.shown, self.size
            ));
        }
        Ok(())
    }
}

/// The file being written into the connection.
struct Current {
    stream: u32,
    hasher: Sha256,
    read: u64,
    /// The digest is queued: finish the stream once `pending` is written.
    ended: bool,
}

struct Sender {
    session: Session,
    tx: TransmitBatch,
    sources: Vec<Source>,
    next_file: usize,
    current: Option<Current>,
    /// Bytes for the current stream the connection has not taken yet.
    pending: Vec<u8>,
    pending_at: usize,
    chunk: Vec<u8>,
    /// File data written into the connection.
    written: u64,
    digests: Vec<Option<[u8; 32]>>,
    reply_buf: Vec<u8>,
    replies: Vec<Option<Reply>>,
    connected_at: Option<Instant>,
    done_at: Option<Instant>,
    failure: Option<String>,
    /// Why, as the receiver is told when the transfer is aborted.
    give_up: GiveUp,
    udp_send_errors: u64,
    /// The last ICMP error the paths' datagrams brought back.
    last_icmp_error: Option<DeliveryError>,
    /// Before the connection, an ICMP port unreachable: nothing listens
    /// at `--to`.
    refused: Option<DeliveryError>,
    /// The last pump found the input with nothing to give yet (stdin).
    waiting_for_input: bool,
    stall_timeout: Duration,
    /// From the connection on.
    stall: Option<StallWatch>,
}

pub fn run(args: &SendArgs) -> Result<(), Failure> {
    let remote = resolve(&args.to, &args.via)?;
    let local = StaticKeypair::from_private(super::load_private_key(&args.common.key)?);
    let server = super::parse_public_key(&args.peer, &local)?;
    let bindings = bindings(&args.via, remote)?;
    let sources = open_sources(&args.files)?;
    let runtime = runtime().map_err(|e| Failure::Runtime(format!("runtime: {e}")))?;
    tokio::task::LocalSet::new().block_on(
        &runtime,
        transfer(args, remote, local, server, bindings, sources),
    )
}

/// `--to` as an address: a name gives its address of the family of the
/// first `--via` address, if any (else IPv4 first), so that a receiver
/// with both kinds of address is reached from the paths asked for.
fn resolve(to: &str, via: &[String]) -> Result<SocketAddr, Failure> {
    let receiver = ServerAddr::parse(to).map_err(|e| Failure::Usage(format!("--to {e}")))?;
    let family = via
        .iter()
        .find_map(|v| v.parse::<IpAddr>().ok())
        .map(|ip| ip.is_ipv6());
    let addr = receiver
        .resolve(family)
        .map_err(|e| Failure::Usage(format!("--to {to:?}: {e}")))?;
    match crate::unsendable(addr) {
        Some(problem) => Err(Failure::Usage(format!("--to {to:?}: {problem}"))),
        None => Ok(addr),
    }
}

/// One binding per `--via`, each with a path name. Without any: every
/// usable interface (bound with SO_BINDTODEVICE), or for a loopback
/// receiver one path from the routing table's choice.
fn bindings(via: &[String], remote: SocketAddr) -> Result<Vec<(String, Binding)>, Failure> {
    if via.is_empty() && remote.ip().is_loopback() {
        let any = if remote.is_ipv4() {
            IpAddr::from([0, 0, 0, 0])
        } else {
            IpAddr::from([0u16; 8])
        };
        return Ok(vec![("default".to_owned(), Binding::Source(any))]);
    }
    if via.is_empty() {
        let names = braid_io::usable_interfaces(remote.is_ipv6())
            .map_err(|e| Failure::Runtime(format!("listing interfaces: {e}")))?;
        if names.is_empty() {
            return Err(Failure::Usage(
                "no usable interface (up, not loopback, with an address of the receiver's \
                 family): name the paths with --via"
                    .to_owned(),
            ));
        }
        return bindings(&names, remote);
    }
    if via.len() > session::MAX_SESSION_PATHS {
        return Err(Failure::Usage(format!(
            "{} --via paths: at most {}",
            via.len(),
            session::MAX_SESSION_PATHS
        )));
    }
    via.iter()
        .enumerate()
        .map(|(i, v)| {
            let binding = match v.parse::<IpAddr>() {
                Ok(ip) if ip.is_ipv4() != remote.is_ipv4() => {
                    return Err(Failure::Usage(format!(
                        "--via {v} and --to {remote} are of different IP families"
                    )))
                }
                Ok(ip) => Binding::Source(ip),
                Err(_) => Binding::Interface(v.clone()),
            };
            // Two paths may share an address (several sockets on one link).
            let name = if via[..i].contains(v) {
                format!("{v}#{i}")
            } else {
                v.clone()
            };
            Ok((name, binding))
        })
        .collect()
}

fn open_sources(files: &[PathBuf]) -> Result<Vec<Source>, Failure> {
    let stdin = PathBuf::from("-");
    if files.contains(&stdin) {
        if files.len() > 1 {
            return Err(Failure::Usage(
                "`-` (standard input) must be the only FILE".to_owned(),
            ));
        }
        let (tx, rx) = mpsc::sync_channel(8);
        std::thread::spawn(move || read_stdin(&tx));
        return Ok(vec![Source {
            name: "stdin".to_owned(),
            shown: "standard input".to_owned(),
            input: Input::Stdin(rx),
            size: UNKNOWN_SIZE,
            modified: None,
        }]);
    }
    if files.len() > MAX_FILES as usize {
        return Err(Failure::Usage(format!(
            "{} files: at most {MAX_FILES} per transfer",
            files.len()
        )));
    }
    files
        .iter()
        .map(|path| {
            let shown = path.display().to_string();
            // Without O_NONBLOCK, opening a FIFO blocks until a writer
            // comes; it is refused below like any other non-regular file
            // (on a regular file the flag changes nothing).
            let file = OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_NONBLOCK)
                .open(path)
                .map_err(|e| Failure::Usage(format!("{shown}: {e}")))?;
            let meta = file
                .metadata()
                .map_err(|e| Failure::Usage(format!("{shown}: {e}")))?;
            if !meta.is_file() {
                return Err(Failure::Usage(format!("{shown}: not a regular file")));
            }
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .ok_or_else(|| Failure::Usage(format!("{shown}: no UTF-8 file name")))?
                .to_owned();
            header::check_name(&name).map_err(|e| Failure::Usage(e.to_string()))?;
            Ok(Source {
                name,
                shown,
                input: Input::File(file),
                size: meta.len(),
                modified: meta.modified().ok(),
            })
        })
        .collect::<Result<Vec<_>, _>>()
        .and_then(refuse_same_names)
}

/// The receiver writes every file into one directory under its own name:
/// two with the same name would fail mid-transfer, so they fail here.
fn refuse_same_names(sources: Vec<Source>) -> Result<Vec<Source>, Failure> {
    for (i, s) in sources.iter().enumerate() {
        if let Some(other) = sources[..i].iter().find(|o| o.name == s.name) {
            return Err(Failure::Usage(format!(
                "{} and {} are both named {:?} at the receiver: send them in separate transfers",
                other.shown, s.shown, s.name
            )));
        }
    }
    Ok(sources)
}

/// Reads stdin to its end in chunks; a full channel holds the reader back.
fn read_stdin(tx: &mpsc::SyncSender<std::io::Result<Vec<u8>>>) {
    let mut stdin = std::io::stdin().lock();
    loop {
        let mut buf = vec![0u8; CHUNK];
        match stdin.read(&mut buf) {
            Ok(0) => return,
            Ok(n) => {
                buf.truncate(n);
                if tx.send(Ok(buf)).is_err() {
                    return;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => {
                let _ = tx.send(Err(e));
                return;
            }
        }
    }
}

async fn transfer(
    args: &SendArgs,
    remote: SocketAddr,
    local: StaticKeypair,
    server: braid_core::crypto::PublicKey,
    bindings: Vec<(String, Binding)>,
    sources: Vec<Source>,
) -> Result<(), Failure> {
    let timeout = Duration::from_secs(args.common.timeout);
    let mut sockets = Vec::new();
    let mut paths = Vec::new();
    for (name, binding) in &bindings {
        let socket = PathSocket::client(binding, remote)
            .map_err(|e| Failure::Usage(format!("--via {name}: {e}")))?;
        sockets.push(socket);
        paths.push(session::PathConfig {
            name: name.clone(),
            role: PathRole::Primary,
            cost: 0.0,
            remote,
            rate_limit_bps: None,
        });
    }
    let session = Session::client(
        session::ClientConfig {
            local,
            server,
            psk: None,
            paths,
            session: super::session_config(timeout),
        },
        os_seed(),
    )
    .map_err(|e| Failure::Usage(format!("session: {e}")))?;
    let files = sources.len();
    let total: Option<u64> = sources
        .iter()
        .map(|s| (s.size != UNKNOWN_SIZE).then_some(s.size))
        .sum();
    let sender = Sender {
        session,
        tx: TransmitBatch::new(super::MAX_STREAM_DATAGRAM),
        sources,
        next_file: 0,
        current: None,
        pending: Vec::new(),
        pending_at: 0,
        chunk: Vec::with_capacity(CHUNK),
        written: 0,
        digests: vec![None; files],
        reply_buf: Vec::new(),
        replies: vec![None; files],
        connected_at: None,
        done_at: None,
        failure: None,
        give_up: GiveUp::Other,
        udp_send_errors: 0,
        last_icmp_error: None,
        refused: None,
        waiting_for_input: false,
        stall_timeout: Duration::from_secs(args.common.stall_timeout),
        stall: None,
    };
    let driver = Driver::start(sender, sockets);
    let mut progress = Progress::new();
    let mut tick = tokio::time::interval(TICK);
    let signal = shutdown_signal();
    tokio::pin!(signal);
    let outcome = loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = &mut signal => {
                driver.input(|s, _| {
                    s.give_up = GiveUp::Interrupted;
                    s.abort();
                });
                break Err("interrupted".to_owned());
            }
        }
        // Lets stdin move on even while no datagram arrives.
        let state = driver.input(|s, now| s.state(now, timeout, remote));
        let (done, paths) =
            driver.inspect(|s, now| (s.acknowledged(), path_bytes(&s.session.stats(now), true)));
        progress.update(done, total, &paths);
        match state {
            State::Running => {}
            State::Done => break Ok(()),
            State::Failed(msg) => {
                driver.input(|s, _| s.abort());
                break Err(msg);
            }
        }
    };
    progress.finish();
    // The last acknowledgements (and an abort notice) get out.
    tokio::time::sleep(LINGER).await;
    driver.input(|_, _| ());
    let summary = driver.inspect(|s, now| s.summary(now));
    if args.common.json {
        write_stdout(&format!("{summary}\n"))?;
    }
    let failed = driver.inspect(|s, _| s.failed_files());
    match outcome {
        Err(msg) => Err(Failure::Runtime(msg)),
        Ok(()) if !failed.is_empty() => Err(Failure::Runtime(failed.join("; "))),
        Ok(()) => Ok(()),
    }
}

enum State {
    Running,
    Done,
    Failed(String),
}

impl Sender {
    fn state(&mut self, now: Instant, timeout: Duration, remote: SocketAddr) -> State {
        if let Some(msg) = &self.failure {
            return State::Failed(msg.clone());
        }
        if self.done_at.is_some() {
            return State::Done;
        }
        let Some(connected) = self.connected_at else {
            if let Some(refused) = self.refused {
                return State::Failed(format!(
                    "nothing listens at {remote}: {refused} (is braid recv running there, on \
                     that port?)"
                ));
            }
            if now.since_epoch() >= timeout {
                return State::Failed(format!(
                    "no answer from {remote} within {} s: no receiver there, unreachable on \
                     every path, or it does not accept this key (--key) or we do not know its \
                     key (--peer){}",
                    timeout.as_secs(),
                    self.last_icmp_said()
                ));
            }
            return State::Running;
        };
        if now - connected >= timeout && peer_silent(&self.session.stats(now), timeout) {
            return State::Failed(format!(
                "lost the receiver: nothing heard on any path for {} s{}",
                timeout.as_secs(),
                self.last_icmp_said()
            ));
        }
        // Waiting for stdin with everything sent acknowledged is this
        // end's own pause.
        let all_acked = self
            .session
            .stream()
            .is_some_and(|c| c.send_capacity() == stream_send_buffer());
        let waiting = self.waiting_for_input && all_acked;
        let answered = self.replies.iter().filter(|r| r.is_some()).count() as u64;
        let progress = self.acknowledged() + answered;
        let stall = self.stall.as_mut();
        if let Some(still) = stall.and_then(|w| w.check(now, progress, waiting)) {
            self.give_up = GiveUp::Stalled;
            return State::Failed(format!(
                "the transfer stalled: the receiver acknowledged no data and answered for no \
                 file in {} s, though it still answers on its paths (--stall-timeout)",
                still.as_secs()
            ));
        }
        State::Running
    }

    /// The last ICMP error, for a message about the receiver's silence.
    fn last_icmp_said(&self) -> String {
        self.last_icmp_error
            .map_or(String::new(), |e| format!("; the last ICMP error: {e}"))
    }

    /// Takes what the sockets collected. A port unreachable before the
    /// connection fails the transfer at once, as it would fail a TCP
    /// connect; after it, the receiver's silence says more than an ICMP
    /// error anyone on the way could forge.
    fn take_icmp_errors(&mut self, sockets: &[PathSocket]) {
        for errors in sockets.iter().filter_map(PathSocket::take_delivery_errors) {
            self.last_icmp_error = Some(errors.last);
            if self.connected_at.is_none() {
                self.refused = self.refused.or(errors.port_unreachable);
            }
        }
    }

    /// File bytes the receiver has acknowledged, about (bytes written less
    /// what the connection still holds).
    fn acknowledged(&self) -> u64 {
        let Some(conn) = self.session.stream() else {
            return 0;
        };
        let buffer = stream_send_buffer();
        let held = buffer.saturating_sub(conn.send_capacity()) as u64;
        self.written.saturating_sub(held)
    }

    fn fail(&mut self, msg: String) {
        if self.failure.is_none() {
            self.failure = Some(msg);
        }
    }

    /// Ends the transfer, telling the receiver why (`give_up`).
    fn abort(&mut self) {
        if let Some(conn) = self.session.stream_mut() {
            conn.abort(self.give_up.code());
        }
    }

    /// Writes file data into the connection as far as its buffer allows.
    fn pump(&mut self) {
        if self.failure.is_some() {
            return;
        }
        if let Err(e) = self.pump_inner() {
            self.give_up = GiveUp::InputFailed;
            self.fail(e);
        }
    }

    fn pump_inner(&mut self) -> Result<(), String> {
        let Some(conn) = self.session.stream_mut() else {
            return Ok(());
        };
        self.waiting_for_input = false;
        loop {
            if self.pending_at < self.pending.len() {
                let id = self
                    .current
                    .as_ref()
                    .expect("pending bytes have a stream")
                    .stream;
                let n = conn
                    .write(id, &self.pending[self.pending_at..])
                    .map_err(|e| e.to_string())?;
                self.pending_at += n;
                if self.pending_at < self.pending.len() {
                    return Ok(());
                }
                continue;
            }
            let Some(cur) = &mut self.current else {
                let Some(source) = self.sources.get(self.next_file) else {
                    return Ok(());
                };
                let stream = conn.open_stream().map_err(|e| e.to_string())?;
                self.pending = FileHeader {
                    total_files: self.sources.len() as u32,
                    size: source.size,
                    name: source.name.clone(),
                }
                .encode();
                self.pending_at = 0;
                self.current = Some(Current {
                    stream,
                    hasher: Sha256::new(),
                    read: 0,
                    ended: false,
                });
                continue;
            };
            if cur.ended {
                conn.finish(cur.stream).map_err(|e| e.to_string())?;
                self.current = None;
                self.next_file += 1;
                continue;
            }
            let room = conn.send_capacity().min(CHUNK);
            if room == 0 {
                return Ok(());
            }
            let source = &mut self.sources[self.next_file];
            match source.read(&mut self.chunk, room)? {
                Chunk::Wait => {
                    self.waiting_for_input = true;
                    return Ok(());
                }
                Chunk::Data(n) => {
                    cur.hasher.update(&self.chunk[..n]);
                    cur.read += n as u64;
                    self.written += n as u64;
                    std::mem::swap(&mut self.pending, &mut self.chunk);
                    self.pending_at = 0;
                }
                Chunk::End => {
                    source.check_unchanged(cur.read)?;
                    let digest: [u8; 32] = std::mem::take(&mut cur.hasher).finalize().into();
                    self.digests[self.next_file] = Some(digest);
                    self.pending = digest.to_vec();
                    self.pending_at = 0;
                    cur.ended = true;
                }
            }
        }
    }

    /// Reads the receiver's replies.
    fn read_replies(&mut self, now: Instant) {
        let Some(conn) = self.session.stream_mut() else {
            return;
        };
        let mut buf = [0u8; 4096];
        let ids: Vec<u32> = conn.received_streams().collect();
        for id in ids {
            loop {
                match conn.read(now, id, &mut buf) {
                    Ok(ReadOutcome::Data(n)) if self.reply_buf.len() < (1 << 20) => {
                        self.reply_buf.extend_from_slice(&buf[..n]);
                    }
                    Ok(ReadOutcome::Data(_)) => {
                        self.fail("the receiver sent too much reply data".to_owned());
                        return;
                    }
                    _ => break,
                }
            }
        }
        loop {
            match Reply::parse(&self.reply_buf) {
                Ok(None) => break,
                Ok(Some((reply, n))) => {
                    self.reply_buf.drain(..n);
                    match self.replies.get_mut(reply.file as usize) {
                        Some(slot) => *slot = Some(reply),
                        None => {
                            self.fail(format!("reply for unknown file {}", reply.file));
                            return;
                        }
                    }
                }
                Err(e) => {
                    self.fail(format!("from the receiver: {e}"));
                    return;
                }
            }
        }
        if self.done_at.is_none() && self.replies.iter().all(Option::is_some) {
            self.done_at = Some(now);
        }
    }

    fn handle_events(&mut self, now: Instant) {
        while let Some(event) = self.session.poll_event() {
            match event {
                Event::Connected {
                    peer_restarted: true,
                } => {
                    self.fail("the receiver restarted during the transfer".to_owned());
                }
                Event::Connected { .. } if self.connected_at.is_none() => {
                    self.connected_at = Some(now);
                    self.stall = Some(StallWatch::new(self.stall_timeout, now));
                }
                Event::ProtocolMismatch { peer_version } => {
                    self.fail(daemon::protocol_mismatch("the receiver", peer_version));
                }
                _ => {}
            }
        }
        if let Some(e) = self.session.stream().and_then(|c| c.error()) {
            let mut msg = give_up::describe(e, "receiver");
            if matches!(e, StreamError::IdleTimeout(_)) {
                msg.push_str(&self.last_icmp_said());
            }
            self.fail(msg);
        }
    }

    fn failed_files(&self) -> Vec<String> {
        self.replies
            .iter()
            .zip(&self.sources)
            .filter_map(|(r, s)| {
                let e = r.as_ref()?.error.as_ref()?;
                Some(format!("{}: refused by the receiver: {e}", s.shown))
            })
            .collect()
    }

    fn summary(&self, now: Instant) -> serde_json::Value {
        let seconds = match (self.connected_at, self.done_at) {
            (Some(a), Some(b)) => (b - a).as_secs_f64(),
            (Some(a), None) => (now - a).as_secs_f64(),
            _ => 0.0,
        };
        let stats = self.session.stats(now);
        let counters = self.session.stream().map(|c| c.counters.clone());
        let files: Vec<serde_json::Value> = self
            .sources
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let reply = self.replies[i].as_ref();
                json!({
                    "name": s.name,
                    "bytes": (s.size != UNKNOWN_SIZE).then_some(s.size),
                    "sha256": self.digests[i].map(|d| hex(&d)),
                    "verified": reply.is_some_and(|r| r.error.is_none()),
                    // The file the transfer failed on carries its reason.
                    "error": reply
                        .and_then(|r| r.error.clone())
                        .or_else(|| self.failure.clone().filter(|_| reply.is_none() && i == self.next_file)),
                })
            })
            .collect();
        json!({
            "role": "send",
            "ok": self.failure.is_none() && self.failed_files().is_empty() && self.done_at.is_some(),
            "error": self.failure,
            "bytes": self.written,
            "seconds": seconds,
            "goodput_mbit_s": mbit_per_s(self.written, seconds),
            "handshake_ms": self.connected_at.map(|t| t.since_epoch().as_secs_f64() * 1e3),
            "retransmitted_bytes": counters.as_ref().map(|c| c.retransmitted_bytes),
            "udp_send_errors": self.udp_send_errors,
            "paths": paths_json(&path_bytes(&stats, true)),
            "files": files,
        })
    }
}

/// The connection's send buffer (the default of `stream::Config`).
fn stream_send_buffer() -> usize {
    braid_core::stream::Config::default().send_buffer
}

impl SocketCore for Sender {
    fn handle_datagram(&mut self, now: Instant, socket: usize, from: SocketAddr, bytes: &mut [u8]) {
        if let Ok(path) = u8::try_from(socket) {
            let _ = self.session.handle_datagram(now, Some(path), from, bytes);
        }
    }

    fn flush(&mut self, now: Instant, sockets: &[PathSocket]) {
        self.take_icmp_errors(sockets);
        self.handle_events(now);
        self.read_replies(now);
        self.pump();
        let session = &mut self.session;
        self.udp_send_errors += send_datagrams(&mut self.tx, sockets, |buf| {
            let t = session.poll_transmit(now, buf)?;
            Some(Some(Outgoing {
                socket: usize::from(t.path),
                to: t.remote,
                len: t.len,
            }))
        });
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.session.poll_timeout()
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.session.handle_timeout(now);
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    /// Opening a FIFO for reading blocks until a writer comes: the sender
    /// must refuse it at once, not hang before its `--timeout` starts.
    #[test]
    fn a_fifo_is_refused_without_waiting_for_a_writer() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        let c_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo only reads it.
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(open_sources(&[fifo]).err().map(|f| match f {
                Failure::Usage(m) => m,
                Failure::Runtime(m) => format!("(a run-time failure) {m}"),
            }));
        });
        let err = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("opening a FIFO blocked");
        assert!(err.is_some_and(|e| e.ends_with("not a regular file")));
    }

    #[test]
    fn a_file_that_grows_while_sent_is_reported() {
        let path = std::env::temp_dir().join(format!("braid-send-grow-{}", std::process::id()));
        std::fs::write(&path, vec![1u8; 1000]).unwrap();
        let mut sources = open_sources(std::slice::from_ref(&path)).unwrap();
        let source = &mut sources[0];
        let mut buf = Vec::new();
        let mut read = 0u64;
        while let Chunk::Data(n) = source.read(&mut buf, 300).unwrap() {
            read += n as u64;
        }
        assert_eq!(read, 1000);
        assert_eq!(source.check_unchanged(read), Ok(()));
        // Another writer appends after the sender read to the end.
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(b"more")
            .unwrap();
        let err = source.check_unchanged(read).unwrap_err();
        let _ = std::fs::remove_file(&path);
        assert!(err.contains("changed while it was being sent"), "{err}");
    }
}
