//! `braid recv --listen ADDR:PORT --out DIR`: the session's server. It
//! takes one transfer (from the first sender it knows that connects) and
//! exits: 0 if every file arrived and verified, 1 otherwise.
//!
//! A file is written to `DIR/.NAME.XXXXXX.braid-partial` (six random
//! characters) while it arrives and renamed to `DIR/NAME` only once its
//! SHA-256 matches the sender's and its length the announced one (and it
//! is synced to disk). A failed or interrupted file's partial copy is
//! removed, or kept under its `.braid-partial` name with `--keep-partial`.
//! Nothing in DIR is ever replaced or written through: the partial file is
//! created new (never an existing file or a link someone put there, such
//! as a partial file kept from an earlier try, or another file of the same
//! transfer), and the rename refuses an existing `DIR/NAME`, a dangling
//! link included.

use std::fs::OpenOptions;
use std::io::Write;
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::rc::Rc;
use std::time::Duration;

use braid_core::crypto::StaticKeypair;
use braid_core::session::{Endpoint, EndpointConfig, Event, PeerConfig, PeerId};
use braid_core::stream::{Connection, ReadOutcome};
use braid_core::time::Instant;
use braid_io::{PathSocket, TransmitBatch};
use serde_json::json;
use sha2::{Digest, Sha256};
use tempfile::NamedTempFile;

use super::give_up::{self, GiveUp};
use super::header::{FileHeader, Reply, DIGEST_LEN, UNKNOWN_SIZE};
use super::progress::Progress;
use super::stall::StallWatch;
use super::stdout::StdoutWriter;
use super::{hex, mbit_per_s, path_bytes, paths_json, peer_silent, KeyArgs, LINGER, TICK};
use crate::daemon::event_loop::{send_datagrams, Driver, Outgoing, SocketCore};
use crate::daemon::throttle::{Refused, RefusedHandshakes};
use crate::daemon::{self, os_seed, runtime, shutdown_signal};
use crate::{write_stdout, Failure};

/// Bytes read from the connection at a time.
const READ_CHUNK: usize = 64 << 10;
/// After the last file, how long the replies may take to be acknowledged.
const REPLY_GRACE: Duration = Duration::from_secs(3);

#[derive(clap::Args, Debug)]
#[command(group(clap::ArgGroup::new("output").required(true).args(["out", "stdout"])))]
pub struct RecvArgs {
    /// Address and UDP port to listen on
    #[arg(long, value_name = "ADDR:PORT")]
    pub listen: SocketAddr,
    /// Directory the files are written into (or give --stdout)
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Write what arrives to standard output instead, as it arrives; it is
    /// verified at the end: trust it only if braid exits 0
    #[arg(long, conflicts_with_all = ["out", "json"])]
    pub stdout: bool,
    /// A sender's public key (base64); repeat to accept several
    #[arg(long = "peer", value_name = "PUBKEY", required = true)]
    pub peers: Vec<String>,
    /// Keep a failed file's partial data (as DIR/.NAME.XXXXXX.braid-partial)
    #[arg(long, conflicts_with = "stdout")]
    pub keep_partial: bool,
    #[command(flatten)]
    pub common: KeyArgs,
}

/// Where a file's data goes.
enum Sink {
    File {
        /// Under its partial name; removed when dropped unless kept.
        file: NamedTempFile,
        target: PathBuf,
    },
    Stdout(Rc<StdoutWriter>),
    /// After an error: read and dropped, so the transfer goes on.
    Discard,
}

/// The file being received.
struct Incoming {
    head: Vec<u8>,
    header: Option<FileHeader>,
    sink: Sink,
    hasher: Sha256,
    /// The stream's last bytes seen, held back: the digest is the last 32.
    tail: Vec<u8>,
    data_bytes: u64,
    error: Option<String>,
}

struct FileResult {
    name: String,
    bytes: u64,
    sha256: Option<String>,
    error: Option<String>,
}

struct Receiver {
    endpoint: Endpoint,
    tx: TransmitBatch,
    peer: Option<PeerId>,
    out_dir: Option<PathBuf>,
    /// With `--stdout`.
    stdout: Option<Rc<StdoutWriter>>,
    keep_partial: bool,
    total_files: Option<u32>,
    next_file: u32,
    incoming: Option<Incoming>,
    results: Vec<FileResult>,
    replies: Vec<u8>,
    replies_at: usize,
    reply_stream: Option<u32>,
    reply_finished: bool,
    connected_at: Option<Instant>,
    done_at: Option<Instant>,
    failure: Option<String>,
    /// Why, as the sender is told when the transfer is aborted.
    give_up: GiveUp,
    buf: Vec<u8>,
    udp_send_errors: u64,
    /// Stream bytes read so far (headers, data, digests): the transfer's progress.
    read_bytes: u64,
    stall_timeout: Duration,
    /// From the connection on.
    stall: Option<StallWatch>,
    /// Handshakes refused: from a key not among `--peer`, or that do not
    /// authenticate (a sender with another key for this receiver).
    refused: RefusedHandshakes,
}

/// At most one line per this for handshakes the receiver refuses.
const REFUSED_SAY_EVERY: Duration = Duration::from_secs(10);

pub fn run(args: &RecvArgs) -> Result<(), Failure> {
    if args.stdout {
        crate::fail_on_closed_pipe();
    }
    let local = StaticKeypair::from_private(super::load_private_key(&args.common.key)?);
    let peers = args
        .peers
        .iter()
        .map(|p| {
            Ok(PeerConfig {
                public_key: super::parse_public_key(p, &local)?,
                psk: None,
            })
        })
        .collect::<Result<Vec<_>, Failure>>()?;
    if let Some(dir) = &args.out {
        if !dir.is_dir() {
            return Err(Failure::Usage(format!(
                "--out {}: not a directory",
                dir.display()
            )));
        }
        check_writable(dir)?;
    }
    let timeout = Duration::from_secs(args.common.timeout);
    let endpoint = Endpoint::new(
        EndpointConfig {
            local,
            peers,
            session: super::session_config(timeout),
            handshakes_per_second: 20,
        },
        os_seed(),
    )
    .map_err(|e| Failure::Usage(format!("--peer: {e}")))?;
    let runtime = runtime().map_err(|e| Failure::Runtime(format!("runtime: {e}")))?;
    tokio::task::LocalSet::new().block_on(&runtime, receive(args, endpoint, timeout))
}

async fn receive(args: &RecvArgs, endpoint: Endpoint, timeout: Duration) -> Result<(), Failure> {
    let socket = PathSocket::listen(args.listen)
        .map_err(|e| Failure::Usage(format!("--listen {}: {e}", args.listen)))?;
    // With port 0 the kernel picks one: say which.
    eprintln!("braid: listening on {}", socket.local_addr());
    let receiver = Receiver {
        endpoint,
        tx: TransmitBatch::new(super::MAX_STREAM_DATAGRAM),
        peer: None,
        out_dir: args.out.clone().filter(|_| !args.stdout),
        stdout: args.stdout.then(|| Rc::new(StdoutWriter::start())),
        keep_partial: args.keep_partial,
        total_files: None,
        next_file: 0,
        incoming: None,
        results: Vec::new(),
        replies: Vec::new(),
        replies_at: 0,
        reply_stream: None,
        reply_finished: false,
        connected_at: None,
        done_at: None,
        failure: None,
        give_up: GiveUp::Other,
        buf: vec![0; READ_CHUNK],
        udp_send_errors: 0,
        read_bytes: 0,
        stall_timeout: Duration::from_secs(args.common.stall_timeout),
        stall: None,
        refused: RefusedHandshakes::new(REFUSED_SAY_EVERY),
    };
    let driver = Driver::start(receiver, vec![socket]);
    let mut progress = Progress::new();
    let mut tick = tokio::time::interval(TICK);
    let signal = shutdown_signal();
    tokio::pin!(signal);
    let outcome = loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = &mut signal => {
                driver.input(|r, _| r.give_up = GiveUp::Interrupted);
                break Err("interrupted".to_owned());
            }
        }
        let state = driver.input(|r, now| r.state(now, timeout));
        let (done, paths) = driver.inspect(|r, now| {
            let paths = r
                .peer
                .and_then(|p| r.endpoint.session(p))
                .map(|s| path_bytes(&s.stats(now), false))
                .unwrap_or_default();
            (r.received(), paths)
        });
        progress.update(done, None, &paths);
        match state {
            State::Running => {}
            State::Done => break Ok(()),
            State::Failed(msg) => break Err(msg),
        }
    };
    progress.finish();
    if outcome.is_err() {
        let kept = driver.input(|r, _| r.abandon());
        if let Some(path) = kept {
            eprintln!("braid: partial data kept in {}", path.display());
        }
        tokio::time::sleep(LINGER).await;
        driver.input(|_, _| ());
    }
    let summary = driver.inspect(|r, now| r.summary(now));
    if args.common.json {
        write_stdout(&format!("{summary}\n"))?;
    }
    let failed = driver.inspect(|r, _| {
        r.results
            .iter()
            .filter_map(|f| Some(format!("{}: {}", f.name, f.error.as_ref()?)))
            .collect::<Vec<_>>()
    });
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

impl Receiver {
    fn state(&mut self, now: Instant, timeout: Duration) -> State {
        if let Some(msg) = &self.failure {
            return State::Failed(msg.clone());
        }
        if let Some(why) = self.stdout.as_ref().and_then(|w| w.broken()) {
            self.give_up = GiveUp::OutputClosed;
            return State::Failed(why.to_owned());
        }
        if let Some(done) = self.done_at {
            let acked =
                self.reply_finished && self.conn().is_some_and(Connection::is_send_complete);
            if acked || now - done >= REPLY_GRACE {
                return State::Done;
            }
            return State::Running;
        }
        let Some(connected) = self.connected_at else {
            return State::Running; // waiting for a sender, for as long as it takes
        };
        let stats = self
            .peer
            .and_then(|p| self.endpoint.session(p))
            .map(|s| s.stats(now));
        if now - connected >= timeout && stats.is_some_and(|s| peer_silent(&s, timeout)) {
            return State::Failed(format!(
                "lost the sender: nothing heard on any path for {} s",
                timeout.as_secs()
            ));
        }
        // A slow reader of --stdout holds the transfer back, not the sender.
        let waiting = self.stdout.as_ref().is_some_and(|w| !w.has_room());
        let progress = self.read_bytes + u64::from(self.next_file);
        let (nothing_yet, stall) = (progress == 0, self.stall.as_mut());
        if let Some(still) = stall.and_then(|w| w.check(now, progress, waiting)) {
            self.give_up = GiveUp::Stalled;
            let what = if nothing_yet {
                "the sender connected but sent no file"
            } else {
                "the transfer stalled: no data from the sender"
            };
            return State::Failed(format!(
                "{what} for {} s although it still answers (--stall-timeout)",
                still.as_secs()
            ));
        }
        State::Running
    }

    /// File data received so far (digests and headers not counted).
    fn received(&self) -> u64 {
        let done: u64 = self.results.iter().map(|f| f.bytes).sum();
        done + self.incoming.as_ref().map_or(0, |i| i.data_bytes)
    }

    fn conn(&self) -> Option<&Connection> {
        self.endpoint.session(self.peer?)?.stream()
    }

    fn fail(&mut self, msg: String) {
        if self.failure.is_none() {
            self.failure = Some(msg);
        }
    }

    /// The transfer failed: the partial file goes (or stays, marked), the
    /// sender is told. Returns the partial file kept, if any.
    fn abandon(&mut self) -> Option<PathBuf> {
        if let Some(peer) = self.peer {
            if let Some(conn) = self.endpoint.session_mut(peer).and_then(|s| s.stream_mut()) {
                conn.abort(self.give_up.code());
            }
        }
        let incoming = self.incoming.take()?;
        match incoming.sink {
            Sink::File { file, .. } if self.keep_partial => keep(file),
            _ => None,
        }
    }

    fn handle_events(&mut self, now: Instant) {
        while let Some((peer, event)) = self.endpoint.poll_event() {
            if let Event::ProtocolMismatch { peer_version } = event {
                // Refused before anything is written; the receiver waits on.
                eprintln!(
                    "braid: a sender was refused: {}",
                    daemon::protocol_mismatch("it", peer_version)
                );
                continue;
            }
            let Event::Connected { peer_restarted } = event else {
                continue;
            };
            match self.peer {
                None => {
                    self.peer = Some(peer);
                    self.connected_at = Some(now);
                    self.stall = Some(StallWatch::new(self.stall_timeout, now));
                }
                Some(p) if p == peer && peer_restarted && self.received() > 0 => {
                    self.fail("the sender restarted during the transfer".to_owned());
                }
                _ => {}
            }
        }
        if let Some(e) = self.conn().and_then(Connection::error) {
            let msg = give_up::describe(e, "sender");
            self.fail(msg);
        }
    }

    /// Reads the file streams in order and answers for each file.
    fn read_files(&mut self, now: Instant) {
        let Some(peer) = self.peer else {
            return;
        };
        while self.failure.is_none() && self.done_at.is_none() {
            if self.stdout.as_ref().is_some_and(|w| !w.has_room()) {
                return; // a slow reader holds the sender back (flow control)
            }
            let Some(conn) = self.endpoint.session_mut(peer).and_then(|s| s.stream_mut()) else {
                return;
            };
            let outcome = match conn.read(now, self.next_file, &mut self.buf) {
                Ok(o) => o,
                Err(_) => return, // the connection failed: handle_events reports it
            };
            match outcome {
                ReadOutcome::Blocked => return,
                ReadOutcome::Data(n) => {
                    self.read_bytes += n as u64;
                    let data = std::mem::take(&mut self.buf);
                    let r = self.on_data(&data[..n]);
                    self.buf = data;
                    if let Err(e) = r {
                        self.fail(e);
                    }
                }
                ReadOutcome::Finished => {
                    self.on_end();
                    self.next_file += 1;
                    if self.total_files.is_some_and(|t| self.next_file >= t) {
                        self.done_at = Some(now);
                    }
                }
            }
        }
    }

    /// Bytes of the current file's stream; an error here breaks the
    /// protocol and ends the transfer.
    fn on_data(&mut self, data: &[u8]) -> Result<(), String> {
        let incoming = self.incoming.get_or_insert_with(|| Incoming {
            head: Vec::new(),
            header: None,
            sink: Sink::Discard,
            hasher: Sha256::new(),
            tail: Vec::new(),
            data_bytes: 0,
            error: None,
        });
        if incoming.header.is_some() {
            incoming.feed(data);
            return Ok(());
        }
        incoming.head.extend_from_slice(data);
        let Some((header, len)) =
            FileHeader::parse(&incoming.head).map_err(|e| format!("from the sender: {e}"))?
        else {
            return Ok(());
        };
        match self.total_files {
            None => self.total_files = Some(header.total_files),
            Some(t) if t != header.total_files => {
                return Err(format!(
                    "from the sender: file count changed from {t} to {}",
                    header.total_files
                ))
            }
            Some(_) => {}
        }
        if header.total_files <= self.next_file {
            return Err("from the sender: more files than announced".to_owned());
        }
        incoming.sink = match &self.out_dir {
            None => match &self.stdout {
                Some(w) => Sink::Stdout(w.clone()),
                None => Sink::Discard,
            },
            Some(dir) => open_sink(dir, &header.name).unwrap_or_else(|e| {
                incoming.error = Some(e);
                Sink::Discard
            }),
        };
        incoming.header = Some(header);
        let rest = incoming.head.split_off(len);
        incoming.feed(&rest);
        Ok(())
    }

    /// The current file's stream ended: verify, put in place, answer.
    fn on_end(&mut self) {
        let incoming = self.incoming.take();
        let (result, reply_error) = match incoming.filter(|i| i.header.is_some()) {
            None => (
                FileResult {
                    name: format!("file {}", self.next_file),
                    bytes: 0,
                    sha256: None,
                    error: Some("the stream ended before its header".to_owned()),
                },
                Some("stream ended before its header".to_owned()),
            ),
            Some(incoming) => incoming.finish(self.keep_partial),
        };
        let reply = Reply {
            file: self.next_file,
            error: reply_error,
        };
        self.replies.extend(reply.encode());
        self.results.push(result);
    }

    /// Writes queued replies into the reply stream; finishes it after the last.
    fn send_replies(&mut self) {
        let Some(peer) = self.peer else {
            return;
        };
        let done = self.done_at.is_some();
        let Some(conn) = self.endpoint.session_mut(peer).and_then(|s| s.stream_mut()) else {
            return;
        };
        let nothing_to_write = self.replies_at == self.replies.len();
        let fin_due = done && !self.reply_finished;
        if nothing_to_write && !fin_due {
            return;
        }
        let id = match self.reply_stream {
            Some(id) => id,
            None => match conn.open_stream() {
                Ok(id) => *self.reply_stream.insert(id),
                Err(_) => return,
            },
        };
        if let Ok(n) = conn.write(id, &self.replies[self.replies_at..]) {
            self.replies_at += n;
        }
        if done && self.replies_at == self.replies.len() && !self.reply_finished {
            self.reply_finished = conn.finish(id).is_ok();
        }
    }

    fn summary(&self, now: Instant) -> serde_json::Value {
        let seconds = match (self.connected_at, self.done_at) {
            (Some(a), Some(b)) => (b - a).as_secs_f64(),
            (Some(a), None) => (now - a).as_secs_f64(),
            _ => 0.0,
        };
        let paths = self
            .peer
            .and_then(|p| self.endpoint.session(p))
            .map(|s| path_bytes(&s.stats(now), false))
            .unwrap_or_default();
        let files: Vec<serde_json::Value> = self
            .results
            .iter()
            .map(|f| {
                json!({
                    "name": f.name,
                    "bytes": f.bytes,
                    "sha256": f.sha256,
                    "verified": f.error.is_none(),
                    "error": f.error,
                })
            })
            .collect();
        json!({
            "role": "recv",
            "ok": self.failure.is_none() && self.done_at.is_some()
                && self.results.iter().all(|f| f.error.is_none()),
            "error": self.failure,
            "bytes": self.received(),
            "seconds": seconds,
            "goodput_mbit_s": mbit_per_s(self.received(), seconds),
            "udp_send_errors": self.udp_send_errors,
            "paths": paths_json(&paths),
            "files": files,
        })
    }
}

/// The partial file for `name` in `dir`, refusing to replace a file.
/// Refuses an --out directory no file can be created in (read-only, not
/// ours, /proc) now, not once a sender has connected: a probe file is
/// created and removed.
fn check_writable(dir: &std::path::Path) -> Result<(), Failure> {
    let probe = dir.join(format!(".braid-probe-{}", std::process::id()));
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&probe)
        .map_err(|e| Failure::Usage(format!("--out {}: cannot write there: {e}", dir.display())))?;
    let _ = std::fs::remove_file(&probe);
    Ok(())
}

/// Longest file name Linux file systems take (NAME_MAX).
const NAME_MAX: usize = 255;
const PARTIAL_SUFFIX: &str = ".braid-partial";
/// Random characters in a partial file's name.
const PARTIAL_RANDOM: usize = 6;

/// `.NAME.` before a partial file's random characters; a name too long
/// for the whole to fit NAME_MAX is cut (the random part tells apart
/// names that share the kept start), so that every name a file system
/// takes can be received.
fn partial_prefix(name: &str) -> String {
    let room = NAME_MAX - 2 - PARTIAL_RANDOM - PARTIAL_SUFFIX.len();
    let cut = (0..=room.min(name.len()))
        .rev()
        .find(|&i| name.is_char_boundary(i))
        .unwrap_or(0);
    format!(".{}.", &name[..cut])
}

fn open_sink(dir: &std::path::Path, name: &str) -> Result<Sink, String> {
    let target = dir.join(name);
    if target.symlink_metadata().is_ok() {
        return Err(format!("{} exists; not replaced", target.display()));
    }
    // Created with O_EXCL under a name no one could have chosen: never an
    // existing file, never through a link.
    let file = tempfile::Builder::new()
        .prefix(&partial_prefix(name))
        .rand_bytes(PARTIAL_RANDOM)
        .suffix(PARTIAL_SUFFIX)
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)
        .map_err(|e| {
            format!(
                "cannot create a partial file for {name} in {}: {e}",
                dir.display()
            )
        })?;
    Ok(Sink::File { file, target })
}

/// Keeps a partial file under its name; its path, if that worked.
fn keep(file: NamedTempFile) -> Option<PathBuf> {
    match file.keep() {
        Ok((_, path)) => Some(path),
        Err(e) => {
            eprintln!("braid: cannot keep the partial file: {e}");
            None
        }
    }
}

impl Incoming {
    /// File data and (at the very end) the digest. Of a file whose size
    /// was announced, the first `size` bytes are data and go out at once;
    /// of a stream of unknown length (stdin), everything but the last 32
    /// bytes seen, which may yet be the digest.
    fn feed(&mut self, data: &[u8]) {
        let size = self.header.as_ref().map_or(UNKNOWN_SIZE, |h| h.size);
        if size != UNKNOWN_SIZE {
            let left = size.saturating_sub(self.data_bytes);
            let n = usize::try_from(left).unwrap_or(usize::MAX).min(data.len());
            self.emit(&data[..n]);
            // One byte past the digest is enough to know there was more.
            let room = (DIGEST_LEN + 1).saturating_sub(self.tail.len());
            let rest = &data[n..];
            self.tail.extend_from_slice(&rest[..rest.len().min(room)]);
            return;
        }
        if data.len() >= DIGEST_LEN {
            let tail = std::mem::take(&mut self.tail);
            self.emit(&tail);
            let cut = data.len() - DIGEST_LEN;
            self.emit(&data[..cut]);
            self.tail.extend_from_slice(&data[cut..]);
        } else {
            self.tail.extend_from_slice(data);
            let excess = self.tail.len().saturating_sub(DIGEST_LEN);
            let out: Vec<u8> = self.tail.drain(..excess).collect();
            self.emit(&out);
        }
    }

    fn emit(&mut self, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        self.hasher.update(data);
        self.data_bytes += data.len() as u64;
        let written = match &mut self.sink {
            Sink::File { file, .. } => file
                .write_all(data)
                .map_err(|e| format!("cannot write {}: {e}", file.path().display())),
            Sink::Stdout(w) => w.write(data),
            Sink::Discard => Ok(()),
        };
        if let Err(e) = written {
            self.drop_sink();
            self.error.get_or_insert(e);
        }
    }

    /// Removes the partial file (an error makes it worthless): dropping
    /// it removes it.
    fn drop_sink(&mut self) {
        self.sink = Sink::Discard;
    }

    /// Verifies the file; renames it into place if it is whole.
    fn finish(mut self, keep_partial: bool) -> (FileResult, Option<String>) {
        let header = self.header.take().expect("data after a header");
        let digest: [u8; 32] = self.hasher.clone().finalize().into();
        let mut error = self.error.take();
        // Of an announced size, whatever followed the data is the digest.
        if error.is_none() && header.size != UNKNOWN_SIZE && self.tail.len() != DIGEST_LEN {
            error = Some(if self.tail.len() > DIGEST_LEN {
                format!("more than the {} bytes announced arrived", header.size)
            } else {
                let arrived =
                    (self.data_bytes + self.tail.len() as u64).saturating_sub(DIGEST_LEN as u64);
                format!("{arrived} bytes arrived, {} announced", header.size)
            });
        }
        if error.is_none() && self.tail.as_slice() != digest.as_slice() {
            error = Some("SHA-256 mismatch: the data is not what was sent".to_owned());
        }
        if error.is_none() {
            error = self.put_in_place().err();
        }
        if let Some(e) = &error {
            match std::mem::replace(&mut self.sink, Sink::Discard) {
                Sink::File { file, .. } if keep_partial => {
                    if let Some(path) = keep(file) {
                        eprintln!("braid: {e}; partial data kept in {}", path.display());
                    }
                }
                _ => self.drop_sink(),
            }
        }
        let result = FileResult {
            name: header.name,
            bytes: self.data_bytes,
            sha256: Some(hex(&digest)),
            error: error.clone(),
        };
        (result, error)
    }

    /// Syncs the file and renames it to its name, which must not exist
    /// (a dangling link included): the rename does not replace. On an
    /// error the partial file stays the sink's, to drop or keep.
    fn put_in_place(&mut self) -> Result<(), String> {
        if let Sink::Stdout(w) = &self.sink {
            return w.flush();
        }
        let Sink::File { file, target } = std::mem::replace(&mut self.sink, Sink::Discard) else {
            return Ok(());
        };
        if let Err(e) = file.as_file().sync_all() {
            let error = format!("cannot sync {}: {e}", file.path().display());
            self.sink = Sink::File { file, target };
            return Err(error);
        }
        match file.persist_noclobber(&target) {
            Ok(_) => Ok(()),
            Err(e) => {
                let why = if e.error.kind() == std::io::ErrorKind::AlreadyExists {
                    "exists; not replaced".to_owned()
                } else {
                    format!("cannot rename into place: {}", e.error)
                };
                let error = format!("{} {why}", target.display());
                self.sink = Sink::File {
                    file: e.file,
                    target,
                };
                Err(error)
            }
        }
    }
}

impl SocketCore for Receiver {
    fn handle_datagram(
        &mut self,
        now: Instant,
        _socket: usize,
        from: SocketAddr,
        bytes: &mut [u8],
    ) {
        // Refused handshakes are said, at most every 10 s each: a sender
        // with a key mix-up otherwise waits out its timeout in silence.
        let Err(reason) = self.endpoint.handle_datagram(now, from, bytes) else {
            return;
        };
        match self.refused.note(now, reason) {
            Some((Refused::UnknownKey, n)) => eprintln!(
                "braid: refused {n} handshake(s) from {from}: its key is not among --peer \
                 (braid pubkey < the sender's key)"
            ),
            Some((Refused::Invalid, n)) => eprintln!(
                "braid: refused {n} handshake(s) from {from} that do not authenticate: \
                 the sender may have another public key for this receiver"
            ),
            None => {}
        }
    }

    fn flush(&mut self, now: Instant, sockets: &[PathSocket]) {
        self.handle_events(now);
        self.read_files(now);
        self.send_replies();
        let endpoint = &mut self.endpoint;
        self.udp_send_errors += send_datagrams(&mut self.tx, sockets, |buf| {
            let (_, t) = endpoint.poll_transmit(now, buf)?;
            Some(Some(Outgoing {
                socket: 0,
                to: t.remote,
                len: t.len,
            }))
        });
    }

    fn poll_timeout(&self) -> Option<Instant> {
        self.endpoint.poll_timeout()
    }

    fn handle_timeout(&mut self, now: Instant) {
        self.endpoint.handle_timeout(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn incoming(dir: &std::path::Path) -> Incoming {
        Incoming {
            head: Vec::new(),
            header: None,
            sink: open_sink(dir, "f.bin").unwrap(),
            hasher: Sha256::new(),
            tail: Vec::new(),
            data_bytes: 0,
            error: None,
        }
    }

    /// A file's stream body (data then digest) fed in uneven pieces,
    /// some shorter than the digest; `corrupt` flips a digest bit.
    fn feed_whole(mut incoming: Incoming, size: u64, corrupt: bool) -> Incoming {
        let data: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let mut digest: [u8; 32] = Sha256::digest(&data).into();
        if corrupt {
            digest[5] ^= 1;
        }
        let mut body = data.clone();
        body.extend_from_slice(&digest);
        incoming.header = Some(FileHeader {
            total_files: 1,
            size,
            name: "f.bin".to_owned(),
        });
        let mut at = 0;
        for (i, step) in [1usize, 31, 5000, 3, 40, 17].iter().cycle().enumerate() {
            if at == body.len() {
                break;
            }
            let n = (*step * (1 + i % 3)).min(body.len() - at);
            incoming.feed(&body[at..at + n]);
            at += n;
        }
        incoming
    }

    fn receive(dir: &std::path::Path, size: u64, corrupt: bool) -> (FileResult, Option<String>) {
        feed_whole(incoming(dir), size, corrupt).finish(false)
    }

    /// A file of announced size is written as it arrives, its last bytes
    /// too: only a stream of unknown length holds back the 32 that may be
    /// its digest.
    #[test]
    fn data_of_an_announced_size_is_not_held_back_for_the_digest() {
        for (size, held) in [(100, 0), (UNKNOWN_SIZE, DIGEST_LEN as u64)] {
            let d = tempfile::tempdir().unwrap();
            let mut incoming = incoming(d.path());
            incoming.header = Some(FileHeader {
                total_files: 1,
                size,
                name: "f.bin".to_owned(),
            });
            incoming.feed(&[9; 60]);
            incoming.feed(&[9; 40]);
            assert_eq!(incoming.data_bytes, 100 - held, "size {size}");
        }
    }

    #[test]
    fn a_whole_file_is_renamed_into_place() {
        let d = tempfile::tempdir().unwrap();
        let (result, error) = receive(d.path(), 100_000, false);
        assert_eq!(error, None);
        assert_eq!(result.bytes, 100_000);
        let expect: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
        assert_eq!(std::fs::read(d.path().join("f.bin")).unwrap(), expect);
        assert_eq!(listing(d.path()), ["f.bin"]);
    }

    #[test]
    fn a_wrong_digest_or_length_leaves_nothing() {
        for (size, corrupt, why) in [
            (100_000, true, "SHA-256 mismatch"),
            (UNKNOWN_SIZE, true, "SHA-256 mismatch"),
            (100_001, false, "100000 bytes arrived, 100001 announced"),
            (99_999, false, "more than the 99999 bytes announced arrived"),
        ] {
            let d = tempfile::tempdir().unwrap();
            let (result, error) = receive(d.path(), size, corrupt);
            let error = error.expect("refused");
            assert!(error.contains(why), "{error}");
            assert_eq!(result.error.as_deref(), Some(error.as_str()));
            assert_eq!(std::fs::read_dir(d.path()).unwrap().count(), 0, "{why}");
        }
    }

    #[test]
    fn every_name_a_file_system_takes_gets_a_partial_file() {
        let d = tempfile::tempdir().unwrap();
        let long = "n".repeat(NAME_MAX);
        let other = format!("{}m", "n".repeat(NAME_MAX - 1));
        let wide = "é".repeat(NAME_MAX / 2);
        // Held at once: names that share the kept start still get partial
        // files of their own.
        let mut partials = Vec::new();
        for name in [long.as_str(), other.as_str(), wide.as_str(), "f.bin"] {
            let Ok(Sink::File { file, .. }) = open_sink(d.path(), name) else {
                panic!("no partial file for {name}");
            };
            let partial = file
                .path()
                .file_name()
                .unwrap()
                .to_str()
                .unwrap()
                .to_owned();
            assert!(partial.len() <= NAME_MAX, "{partial}");
            assert!(partial.starts_with(&partial_prefix(name)), "{partial}");
            assert!(partial.ends_with(PARTIAL_SUFFIX), "{partial}");
            partials.push((partial, file));
        }
        assert!(partials[3].0.starts_with(".f.bin."), "{}", partials[3].0);
        assert_ne!(partials[0].0, partials[1].0);
        drop(partials);
        assert_eq!(
            listing(d.path()),
            Vec::<String>::new(),
            "dropped partial files are removed"
        );
    }

    fn listing(dir: &std::path::Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn files_already_there_are_neither_replaced_nor_written_through() {
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        std::fs::write(&victim, b"victim").unwrap();
        // What an earlier try kept, what an older braid named its partial
        // file, and a link someone planted under that name.
        std::fs::write(d.path().join(".f.bin.braid-partial"), b"kept").unwrap();
        std::os::unix::fs::symlink(&victim, d.path().join(".f.bin.XXXXXX.braid-partial")).unwrap();
        let (_, error) = receive(d.path(), 100_000, false);
        assert_eq!(error, None);
        assert_eq!(std::fs::read(&victim).unwrap(), b"victim");
        assert_eq!(
            std::fs::read(d.path().join(".f.bin.braid-partial")).unwrap(),
            b"kept"
        );
        assert_eq!(
            listing(d.path()),
            [
                ".f.bin.XXXXXX.braid-partial",
                ".f.bin.braid-partial",
                "f.bin",
                "victim"
            ]
        );
    }

    #[test]
    fn a_name_taken_while_the_file_arrived_is_not_replaced() {
        let d = tempfile::tempdir().unwrap();
        let raced = incoming(d.path());
        // A dangling link: `exists()` says no, a plain rename would replace it.
        std::os::unix::fs::symlink(d.path().join("nowhere"), d.path().join("f.bin")).unwrap();
        let (_, error) = feed_whole(raced, 100_000, false).finish(false);
        let error = error.expect("refused");
        assert!(error.ends_with("f.bin exists; not replaced"), "{error}");
        assert!(std::fs::symlink_metadata(d.path().join("f.bin"))
            .unwrap()
            .is_symlink());
        assert_eq!(listing(d.path()), ["f.bin"], "the partial file is removed");
        // With --keep-partial the refused file's data stays, whole.
        std::fs::remove_file(d.path().join("f.bin")).unwrap();
        let kept = incoming(d.path());
        std::os::unix::fs::symlink(d.path().join("nowhere"), d.path().join("f.bin")).unwrap();
        let (_, error) = feed_whole(kept, 100_000, false).finish(true);
        assert!(error.is_some());
        let names = listing(d.path());
        assert_eq!(names.len(), 2, "{names:?}");
        assert!(names[0].starts_with(".f.bin.") && names[0].ends_with(PARTIAL_SUFFIX));
        assert_eq!(
            std::fs::metadata(d.path().join(&names[0])).unwrap().len(),
            100_000
        );
    }

    #[test]
    fn an_existing_file_is_never_replaced() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("f.bin"), b"mine").unwrap();
        assert!(open_sink(d.path(), "f.bin").is_err());
        assert_eq!(std::fs::read(d.path().join("f.bin")).unwrap(), b"mine");
        std::fs::remove_file(d.path().join("f.bin")).unwrap();
        std::os::unix::fs::symlink(d.path().join("nowhere"), d.path().join("f.bin")).unwrap();
        assert!(
            open_sink(d.path(), "f.bin").is_err(),
            "a dangling link is a file there too"
        );
        assert_eq!(listing(d.path()), ["f.bin"]);
    }
}
