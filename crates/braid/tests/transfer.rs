//! `braid send` and `braid recv` on loopback, no root: several paths are
//! several UDP sockets on 127.0.0.1 (`--via 127.0.0.1` repeated). Every
//! run is bounded (a child still running after its deadline is killed and
//! the test fails), and every directory is removed at the end.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStderr, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use braid_core::crypto::StaticKeypair;
use rand::rngs::StdRng;
use rand::{RngCore, SeedableRng};
use sha2::{Digest, Sha256};

/// Longest any one child may run.
const DEADLINE: Duration = Duration::from_secs(60);

/// A scratch directory, removed on drop (also when the test fails).
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("braid-transfer-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("out")).unwrap();
        Scratch(dir)
    }
    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
    fn out(&self) -> PathBuf {
        self.0.join("out")
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A child killed on drop, so a failed assertion leaves no process behind.
struct Running(Option<Child>);

impl Running {
    fn child(&mut self) -> &mut Child {
        self.0.as_mut().expect("running")
    }

    /// Waits up to [`DEADLINE`]; returns the exit code, stdout and stderr.
    fn finish(mut self) -> (i32, Vec<u8>, String) {
        let mut child = self.0.take().expect("running");
        let start = Instant::now();
        loop {
            if let Some(status) = child.try_wait().unwrap() {
                let mut out = Vec::new();
                let mut err = String::new();
                if let Some(mut o) = child.stdout.take() {
                    o.read_to_end(&mut out).unwrap();
                }
                if let Some(mut e) = child.stderr.take() {
                    e.read_to_string(&mut err).unwrap();
                }
                return (status.code().unwrap_or(-1), out, err);
            }
            if start.elapsed() > DEADLINE {
                let _ = child.kill();
                let _ = child.wait();
                panic!("braid ran past {DEADLINE:?}");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if let Some(child) = &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn braid(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_braid"));
    c.args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// `braid send SOURCE` to `addr` over one loopback path, `extra` after.
fn send_one_path(source: &str, addr: &str, key: &Path, peer: &str, extra: &[&str]) -> Command {
    let mut args = vec![
        "send",
        source,
        "--to",
        addr,
        "--via",
        "127.0.0.1",
        "--key",
        key.to_str().unwrap(),
        "--peer",
        peer,
    ];
    args.extend_from_slice(extra);
    braid(&args)
}

/// Writes a key file made from `seed`; returns it and its public key.
fn key(dir: &Scratch, name: &str, seed: u64) -> (PathBuf, String) {
    let pair = StaticKeypair::generate(&mut StdRng::seed_from_u64(seed));
    let path = dir.path(name);
    std::fs::write(&path, format!("{}\n", pair.private.to_base64())).unwrap();
    (path, pair.public.to_base64())
}

fn random_file(path: &Path, len: usize, seed: u64) -> Vec<u8> {
    let mut data = vec![0u8; len];
    StdRng::seed_from_u64(seed).fill_bytes(&mut data);
    std::fs::write(path, &data).unwrap();
    data
}

fn sha256(data: &[u8]) -> String {
    Sha256::digest(data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Starts `braid recv` on 127.0.0.1, port chosen by the kernel; returns it
/// and the address it listens on (read from its first stderr line).
fn start_recv(extra: &[&str], key: &Path, peer: &str) -> (Running, String, BufReader<ChildStderr>) {
    start_recv_in(&[], "127.0.0.1:0", extra, key, peer)
}

/// [`start_recv`] after `prefix` (a `braid lab exec`), listening on `listen`.
fn start_recv_in(
    prefix: &[&str],
    listen: &str,
    extra: &[&str],
    key: &Path,
    peer: &str,
) -> (Running, String, BufReader<ChildStderr>) {
    let mut args = prefix.to_vec();
    args.extend([
        "recv",
        "--listen",
        listen,
        "--key",
        key.to_str().unwrap(),
        "--peer",
        peer,
    ]);
    args.extend_from_slice(extra);
    let mut running = Running(Some(braid(&args).spawn().unwrap()));
    let mut stderr = BufReader::new(running.child().stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    let addr = line
        .trim()
        .strip_prefix("braid: listening on ")
        .unwrap_or_else(|| panic!("first line of recv: {line:?}"))
        .to_owned();
    (running, addr, stderr)
}

fn rest(mut stderr: BufReader<ChildStderr>) -> String {
    let mut s = String::new();
    stderr.read_to_string(&mut s).unwrap();
    s
}

fn json(bytes: &[u8]) -> serde_json::Value {
    serde_json::from_slice(bytes)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(bytes)))
}

/// Names in `dir`, hidden ones included.
fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    names
}

/// Whether `name` is the receiver's partial file for standard input
/// (`.stdin.XXXXXX.braid-partial`).
fn is_stdin_partial(name: &str) -> bool {
    name.len() == ".stdin.XXXXXX.braid-partial".len()
        && name.starts_with(".stdin.")
        && name.ends_with(".braid-partial")
}

/// The partial file for standard input in `dir`, once there is one.
fn stdin_partial(dir: &Path) -> Option<PathBuf> {
    listing(dir)
        .into_iter()
        .find(|n| is_stdin_partial(n))
        .map(|n| dir.join(n))
}

#[test]
fn files_over_three_loopback_paths_arrive_identical() {
    let dir = Scratch::new("three");
    let (send_key, send_pub) = key(&dir, "send.key", 1);
    let (recv_key, recv_pub) = key(&dir, "recv.key", 2);
    let big = random_file(&dir.path("big.bin"), 6 << 20, 3);
    let small = random_file(&dir.path("small.bin"), 1000, 4);
    let empty = random_file(&dir.path("empty.bin"), 0, 5);
    let out = dir.out();
    let (recv, addr, recv_err) = start_recv(
        &["--out", out.to_str().unwrap(), "--json"],
        &recv_key,
        &send_pub,
    );
    let files = ["big.bin", "small.bin", "empty.bin"].map(|f| dir.path(f));
    let mut args = vec!["send"];
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    args.extend([
        "--to",
        &addr,
        "--via",
        "127.0.0.1",
        "--via",
        "127.0.0.1",
        "--via",
        "127.0.0.1",
        "--key",
    ]);
    args.extend([send_key.to_str().unwrap(), "--peer", &recv_pub, "--json"]);
    let (code, stdout, stderr) = Running(Some(braid(&args).spawn().unwrap())).finish();
    assert_eq!(code, 0, "send: {stderr}");
    let (rcode, rstdout, _) = recv.finish();
    assert_eq!(rcode, 0, "recv: {}", rest(recv_err));

    for (name, data) in [
        ("big.bin", &big),
        ("small.bin", &small),
        ("empty.bin", &empty),
    ] {
        let got = std::fs::read(out.join(name)).unwrap();
        assert_eq!(sha256(&got), sha256(data), "{name}");
    }
    assert_eq!(listing(&out), ["big.bin", "empty.bin", "small.bin"]);

    let sent = json(&stdout);
    let received = json(&rstdout);
    assert_eq!(sent["ok"], true);
    assert_eq!(received["ok"], true);
    let total = (big.len() + small.len()) as u64;
    assert_eq!(sent["bytes"], total);
    assert_eq!(received["bytes"], total);
    assert_eq!(sent["files"][0]["sha256"], sha256(&big));
    assert_eq!(received["files"][0]["sha256"], sha256(&big));
    let paths = sent["paths"].as_array().unwrap();
    assert_eq!(paths.len(), 3);
    for p in paths {
        // Each path carried at least a share of the data (not just probes).
        assert!(p["wire_bytes"].as_u64().unwrap() > 100_000, "{sent}");
    }
    assert!(sent["goodput_mbit_s"].as_f64().unwrap() > 0.0);
}

#[test]
fn a_sender_with_a_key_the_receiver_does_not_know_gets_nothing_written() {
    let dir = Scratch::new("wrongkey");
    let (_, send_pub) = key(&dir, "send.key", 1);
    let (stranger_key, _) = key(&dir, "stranger.key", 9);
    let (recv_key, recv_pub) = key(&dir, "recv.key", 2);
    random_file(&dir.path("f.bin"), 100_000, 3);
    let out = dir.out();
    // Its stderr is kept open: a receiver whose stderr is closed ends at its
    // first message (SIGPIPE), and the sender would meet a closed port.
    let (recv, addr, recv_err) =
        start_recv(&["--out", out.to_str().unwrap()], &recv_key, &send_pub);
    let started = Instant::now();
    let (code, _, stderr) = Running(Some(
        send_one_path(
            dir.path("f.bin").to_str().unwrap(),
            &addr,
            &stranger_key,
            &recv_pub,
            &["--timeout", "2"],
        )
        .spawn()
        .unwrap(),
    ))
    .finish();
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("no answer from"), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(10));
    drop(recv);
    let rerr = rest(recv_err);
    assert!(
        rerr.contains("its key is not among --peer"),
        "the receiver did not say why: {rerr}"
    );
    assert!(listing(&out).is_empty(), "{:?}", listing(&out));
}

/// Nothing listens at `--to`: its ICMP port unreachable fails the sender
/// at once, as it would a TCP connect, not after its `--timeout`.
#[test]
fn a_sender_to_a_port_nothing_listens_on_fails_at_once() {
    let dir = Scratch::new("refused");
    let (send_key, _) = key(&dir, "send.key", 1);
    let (_, recv_pub) = key(&dir, "recv.key", 2);
    random_file(&dir.path("f.bin"), 1000, 3);
    // The port stays taken, by a socket that takes datagrams from port 9
    // alone: the sender's come back as port unreachable.
    let holder = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    holder.connect("127.0.0.1:9").unwrap();
    let closed = holder.local_addr().unwrap().to_string();
    let started = Instant::now();
    let (code, _, stderr) = Running(Some(
        send_one_path(
            dir.path("f.bin").to_str().unwrap(),
            &closed,
            &send_key,
            &recv_pub,
            &["--timeout", "120"],
        )
        .spawn()
        .unwrap(),
    ))
    .finish();
    assert_eq!(code, 1, "{stderr}");
    let said = format!("nothing listens at {closed}: ICMP port unreachable from 127.0.0.1");
    assert!(stderr.contains(&said), "{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn stdin_to_stdout_streams_and_verifies() {
    let dir = Scratch::new("stdio");
    let (send_key, send_pub) = key(&dir, "send.key", 1);
    let (recv_key, recv_pub) = key(&dir, "recv.key", 2);
    let mut data = vec![0u8; 3 << 20];
    StdRng::seed_from_u64(7).fill_bytes(&mut data);
    let (mut recv, addr, recv_err) = start_recv(&["--stdout"], &recv_key, &send_pub);
    // A slow reader: the receiver must keep the session alive meanwhile.
    let mut recv_out = recv.child().stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut got = Vec::new();
        let mut buf = vec![0u8; 64 << 10];
        loop {
            match recv_out.read(&mut buf).unwrap() {
                0 => return got,
                n => got.extend_from_slice(&buf[..n]),
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    });
    let mut send = braid(&[
        "send",
        "-",
        "--to",
        &addr,
        "--via",
        "127.0.0.1",
        "--via",
        "127.0.0.1",
        "--key",
        send_key.to_str().unwrap(),
        "--peer",
        &recv_pub,
    ]);
    send.stdin(Stdio::piped());
    let mut sender = Running(Some(send.spawn().unwrap()));
    let mut stdin = sender.child().stdin.take().unwrap();
    // Written in pieces with pauses: the sender streams what it has.
    for piece in data.chunks(1 << 20) {
        stdin.write_all(piece).unwrap();
        std::thread::sleep(Duration::from_millis(100));
    }
    drop(stdin);
    let (code, _, stderr) = sender.finish();
    assert_eq!(code, 0, "send: {stderr}");
    let (rcode, _, _) = recv.finish();
    assert_eq!(rcode, 0, "recv: {}", rest(recv_err));
    let got = reader.join().unwrap();
    assert_eq!(got.len(), data.len());
    assert_eq!(sha256(&got), sha256(&data));
}

#[test]
fn a_killed_sender_leaves_no_file_that_looks_complete() {
    let dir = Scratch::new("killed");
    let (send_key, send_pub) = key(&dir, "send.key", 1);
    let (recv_key, recv_pub) = key(&dir, "recv.key", 2);
    let out = dir.out();
    let (recv, addr, recv_err) = start_recv(
        &["--out", out.to_str().unwrap(), "--timeout", "2"],
        &recv_key,
        &send_pub,
    );
    let mut send = send_one_path("-", &addr, &send_key, &recv_pub, &[]);
    send.stdin(Stdio::piped());
    let mut sender = Running(Some(send.spawn().unwrap()));
    let mut stdin = sender.child().stdin.take().unwrap();
    stdin.write_all(&vec![7u8; 500_000]).unwrap();
    // The partial file exists while data arrives, under its partial name.
    let start = Instant::now();
    while stdin_partial(&out).is_none() {
        assert!(start.elapsed() < Duration::from_secs(10), "no partial file");
        std::thread::sleep(Duration::from_millis(20));
    }
    drop(sender); // killed, stdin still open: no end of the stream
    drop(stdin);
    let (rcode, _, _) = recv.finish();
    let err = rest(recv_err);
    assert_eq!(rcode, 1, "{err}");
    assert!(err.contains("lost the sender"), "{err}");
    assert!(listing(&out).is_empty(), "{:?}", listing(&out));
}

/// A sender that connects and then sends nothing more (its standard input
/// open and silent): its session stays alive (path probes answer), so only
/// the receiver's stall timeout ends the transfer. Returns the receiver's
/// exit code and stderr, the sender's, and the output directory's listing.
fn stalled_sender(
    name: &str,
    first: usize,
    recv_extra: &[&str],
) -> (i32, String, i32, String, Vec<String>) {
    let dir = Scratch::new(name);
    let (send_key, send_pub) = key(&dir, "send.key", 1);
    let (recv_key, recv_pub) = key(&dir, "recv.key", 2);
    let out = dir.out();
    let mut extra = vec!["--out", out.to_str().unwrap(), "--stall-timeout", "2"];
    extra.extend_from_slice(recv_extra);
    let (recv, addr, recv_err) = start_recv(&extra, &recv_key, &send_pub);
    let mut send = send_one_path("-", &addr, &send_key, &recv_pub, &[]);
    send.stdin(Stdio::piped());
    let mut sender = Running(Some(send.spawn().unwrap()));
    let mut stdin = sender.child().stdin.take().unwrap();
    stdin.write_all(&vec![7u8; first]).unwrap();
    let started = Instant::now();
    let (rcode, _, _) = recv.finish();
    let waited = started.elapsed();
    let rerr = rest(recv_err);
    // 2 s of stall, well short of the 15 s silence timeout: the stall
    // timeout ended it, not the session's.
    assert!(waited < Duration::from_secs(10), "{waited:?}: {rerr}");
    // The receiver's abort ends the sender too, its stdin still open.
    let (scode, _, serr) = sender.finish();
    drop(stdin);
    (rcode, rerr, scode, serr, listing(&out))
}

#[test]
fn a_sender_that_never_sends_its_file_is_given_up() {
    let (rcode, rerr, scode, serr, files) = stalled_sender("nofile", 0, &[]);
    assert_eq!(rcode, 1, "{rerr}");
    assert!(rerr.contains("--stall-timeout"), "{rerr}");
    assert_eq!(scode, 1, "{serr}");
    assert!(
        serr.contains("the receiver gave up (no progress for its --stall-timeout)"),
        "{serr}"
    );
    assert!(files.is_empty(), "{files:?}");
}

#[test]
fn a_sender_that_stalls_mid_file_is_given_up_and_the_partial_file_marked() {
    let (rcode, rerr, _, _, files) = stalled_sender("midfile", 500_000, &[]);
    assert_eq!(rcode, 1, "{rerr}");
    assert!(rerr.contains("the transfer stalled"), "{rerr}");
    assert!(files.is_empty(), "{files:?}");
    // With --keep-partial the data stays, under its partial name only.
    let (rcode, rerr, _, _, files) = stalled_sender("midkeep", 500_000, &["--keep-partial"]);
    assert_eq!(rcode, 1, "{rerr}");
    assert!(rerr.contains("partial data kept"), "{rerr}");
    assert!(files.len() == 1 && is_stdin_partial(&files[0]), "{files:?}");
}

#[test]
fn a_receiver_that_stops_taking_data_is_given_up_by_the_sender() {
    let dir = Scratch::new("stuckrecv");
    let (send_key, send_pub) = key(&dir, "send.key", 1);
    let (recv_key, recv_pub) = key(&dir, "recv.key", 2);
    // More than the receiver's window (16 MiB) plus its stdout backlog
    // (4 MiB) plus a pipe: the receiver stops acknowledging new data.
    random_file(&dir.path("big.bin"), 32 << 20, 3);
    // Its standard output is never read: it keeps its session and its
    // acknowledgements going but takes no more data.
    let (mut recv, addr, recv_err) = start_recv(&["--stdout"], &recv_key, &send_pub);
    let started = Instant::now();
    let (code, _, stderr) = Running(Some(
        send_one_path(
            dir.path("big.bin").to_str().unwrap(),
            &addr,
            &send_key,
            &recv_pub,
            &["--stall-timeout", "2"],
        )
        .spawn()
        .unwrap(),
    ))
    .finish();
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("the transfer stalled"), "{stderr}");
    assert!(
        started.elapsed() < Duration::from_secs(45),
        "{:?}",
        started.elapsed()
    );
    // The sender's abort reaches the receiver, which fails too.
    let _unread = recv.child().stdout.take();
    let (rcode, _, _) = recv.finish();
    let rerr = rest(recv_err);
    assert_eq!(rcode, 1, "{rerr}");
    assert!(
        rerr.contains("the sender gave up (no progress for its --stall-timeout)"),
        "{rerr}"
    );
}

#[test]
fn a_receiver_whose_standard_output_closes_stops_and_tells_the_sender() {
    let dir = Scratch::new("closedout");
    let (send_key, send_pub) = key(&dir, "send.key", 1);
    let (recv_key, recv_pub) = key(&dir, "recv.key", 2);
    random_file(&dir.path("big.bin"), 32 << 20, 3);
    let (mut recv, addr, recv_err) = start_recv(&["--stdout"], &recv_key, &send_pub);
    // A reader that takes a little and goes away (`| head -c`, a failed
    // `| tar x`).
    let mut recv_out = recv.child().stdout.take().unwrap();
    let mut first = [0u8; 1000];
    let started = Instant::now();
    let sender = Running(Some(
        send_one_path(
            dir.path("big.bin").to_str().unwrap(),
            &addr,
            &send_key,
            &recv_pub,
            &[],
        )
        .spawn()
        .unwrap(),
    ));
    recv_out.read_exact(&mut first).unwrap();
    drop(recv_out);
    let (rcode, _, _) = recv.finish();
    let rerr = rest(recv_err);
    assert_eq!(rcode, 1, "{rerr}");
    assert!(rerr.contains("standard output was closed"), "{rerr}");
    let (code, _, stderr) = sender.finish();
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains(
            "the receiver gave up (its standard output was closed or could not be written)"
        ),
        "{stderr}"
    );
    // Told at once, not after the sender's 15-s silence timeout.
    assert!(
        started.elapsed() < Duration::from_secs(12),
        "{:?}",
        started.elapsed()
    );
}

/// `--to` takes a name as well as an address (`localhost` is in every
/// hosts file, so nothing is asked of any DNS server).
#[test]
fn a_receiver_given_by_name_gets_the_file() {
    let dir = Scratch::new("byname");
    let (send_key, send_pub) = key(&dir, "send.key", 1);
    let (recv_key, recv_pub) = key(&dir, "recv.key", 2);
    let data = random_file(&dir.path("f.bin"), 100_000, 3);
    let out = dir.out();
    let (recv, addr, recv_err) =
        start_recv(&["--out", out.to_str().unwrap()], &recv_key, &send_pub);
    let port = addr.rsplit_once(':').unwrap().1;
    let to = format!("localhost:{port}");
    let mut send = send_one_path(
        dir.path("f.bin").to_str().unwrap(),
        &to,
        &send_key,
        &recv_pub,
        &[],
    );
    let (code, _, stderr) = Running(Some(send.spawn().unwrap())).finish();
    assert_eq!(code, 0, "send: {stderr}");
    let (rcode, _, _) = recv.finish();
    assert_eq!(rcode, 0, "recv: {}", rest(recv_err));
    assert_eq!(std::fs::read(out.join("f.bin")).unwrap(), data);
}

/// A `braid send -` to a fresh `braid recv --out`, under way: the
/// receiver has written its partial file. `send_extra` goes after the
/// sender's arguments.
struct StdinTransfer {
    recv: Running,
    recv_err: BufReader<ChildStderr>,
    sender: Running,
    stdin: ChildStdin,
}

fn stdin_transfer_under_way(dir: &Scratch, send_extra: &[&str]) -> StdinTransfer {
    let (send_key, send_pub) = key(dir, "send.key", 1);
    let (recv_key, recv_pub) = key(dir, "recv.key", 2);
    let out = dir.out();
    let (recv, addr, recv_err) =
        start_recv(&["--out", out.to_str().unwrap()], &recv_key, &send_pub);
    let mut send = send_one_path("-", &addr, &send_key, &recv_pub, send_extra);
    send.stdin(Stdio::piped());
    let mut sender = Running(Some(send.spawn().unwrap()));
    let mut stdin = sender.child().stdin.take().unwrap();
    stdin.write_all(&vec![7u8; 100_000]).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    while stdin_partial(&out).is_none() {
        assert!(Instant::now() < deadline, "the transfer never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    StdinTransfer {
        recv,
        recv_err,
        sender,
        stdin,
    }
}

/// A receiver killed mid-transfer (no word to the sender): the sender
/// gives up after its `--timeout` of silence, and names the ICMP error its
/// datagrams met: the receiver's port has closed.
#[test]
fn a_receiver_killed_mid_transfer_is_reported_with_its_closed_port() {
    let dir = Scratch::new("deadrecv");
    let mut t = stdin_transfer_under_way(&dir, &["--timeout", "2"]);
    t.recv.child().kill().unwrap();
    t.recv.child().wait().unwrap();
    // More data to send: it meets the closed port. (Should the sender have
    // ended already, the write fails; what it said is checked below.)
    let _ = t.stdin.write_all(&vec![8u8; 100_000]);
    let (code, _, stderr) = t.sender.finish();
    assert_eq!(code, 1, "{stderr}");
    // Either of the two silences (the session's, the stream's) may end it
    // first; both name the error.
    assert!(
        stderr.contains("; the last ICMP error: ICMP port unreachable from 127.0.0.1"),
        "{stderr}"
    );
    drop(t.stdin);
}

/// Ctrl-C on the sender mid-transfer: it says "interrupted", and the
/// receiver learns at once that the sender was interrupted (not that the
/// transfer merely failed).
#[test]
fn a_sender_stopped_by_a_signal_tells_the_receiver_why() {
    let dir = Scratch::new("sigint");
    let mut t = stdin_transfer_under_way(&dir, &[]);
    let started = Instant::now();
    // SAFETY: signalling a child this test started, by its pid.
    unsafe {
        libc::kill(t.sender.child().id() as i32, libc::SIGINT);
    }
    let (scode, _, serr) = t.sender.finish();
    assert_eq!(scode, 1, "{serr}");
    assert!(serr.contains("interrupted"), "{serr}");
    let (rcode, _, _) = t.recv.finish();
    let rerr = rest(t.recv_err);
    assert_eq!(rcode, 1, "{rerr}");
    assert!(
        rerr.contains("the sender gave up (it was interrupted (Ctrl-C or a signal))"),
        "{rerr}"
    );
    // Told, not left to find out after its 15-s silence timeout.
    assert!(
        started.elapsed() < Duration::from_secs(12),
        "{:?}",
        started.elapsed()
    );
    drop(t.stdin);
}

#[test]
fn bad_arguments_exit_2_with_one_line() {
    let dir = Scratch::new("badargs");
    let (key_path, own) = key(&dir, "k.key", 1);
    let (_, public) = key(&dir, "other.key", 2);
    let k = key_path.to_str().unwrap();
    let missing = dir.path("missing.bin");
    // Two files the receiver would write under one name.
    for sub in ["a", "b"] {
        std::fs::create_dir_all(dir.path(sub)).unwrap();
        std::fs::write(dir.path(sub).join("same.bin"), sub).unwrap();
    }
    let (same_a, same_b) = (
        dir.path("a").join("same.bin"),
        dir.path("b").join("same.bin"),
    );
    // A name that would print a second line on the receiver's terminal.
    let newline = dir.path("two\nlines.bin");
    std::fs::write(&newline, "x").unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec![
            "send",
            newline.to_str().unwrap(),
            "--to",
            "127.0.0.1:9",
            "--key",
            k,
            "--peer",
            &public,
        ],
        vec![
            "send",
            same_a.to_str().unwrap(),
            same_b.to_str().unwrap(),
            "--to",
            "127.0.0.1:9",
            "--key",
            k,
            "--peer",
            &public,
        ],
        vec![
            "send",
            same_a.to_str().unwrap(),
            "--to",
            "127.0.0.1:0",
            "--key",
            k,
            "--peer",
            &public,
        ],
        vec![
            "send",
            same_a.to_str().unwrap(),
            "--to",
            "127.0.0.1:9",
            "--via",
            "::1",
            "--key",
            k,
            "--peer",
            &public,
        ],
        // A directory no file can be created in: refused before any sender.
        vec![
            "recv",
            "--listen",
            "127.0.0.1:0",
            "--out",
            "/proc",
            "--key",
            k,
            "--peer",
            &public,
        ],
        vec![
            "send", "x", "--to", "no-port", "--key", k, "--peer", &public,
        ],
        vec![
            "send",
            "x",
            "--to",
            "127.0.0.1:9",
            "--key",
            k,
            "--peer",
            "not-a-key",
        ],
        vec![
            "send",
            missing.to_str().unwrap(),
            "--to",
            "127.0.0.1:9",
            "--key",
            k,
            "--peer",
            &public,
        ],
        vec![
            "send",
            "-",
            "x",
            "--to",
            "127.0.0.1:9",
            "--key",
            k,
            "--peer",
            &public,
        ],
        vec![
            "recv",
            "--listen",
            "127.0.0.1:0",
            "--out",
            missing.to_str().unwrap(),
            "--key",
            k,
            "--peer",
            &public,
        ],
        vec![
            "recv",
            "--listen",
            "127.0.0.1:0",
            "--stdout",
            "--key",
            "/nonexistent/key",
            "--peer",
            &public,
        ],
    ];
    let send_own = [
        "send",
        "x",
        "--to",
        "127.0.0.1:9",
        "--key",
        k,
        "--peer",
        &own,
    ];
    let recv_own = [
        "recv",
        "--listen",
        "127.0.0.1:0",
        "--stdout",
        "--key",
        k,
        "--peer",
        &own,
    ];
    let broadcast = [
        "send",
        "x",
        "--to",
        "255.255.255.255:9",
        "--key",
        k,
        "--peer",
        &public,
    ];
    let multicast = [
        "send",
        "x",
        "--to",
        "224.0.0.1:9",
        "--key",
        k,
        "--peer",
        &public,
    ];
    let says = [
        (&send_own[..], "this end's own public key"),
        (&recv_own[..], "this end's own public key"),
        (&broadcast[..], "the broadcast address is no peer's address"),
        (&multicast[..], "a multicast address is no peer's address"),
    ];
    for (args, said) in cases
        .iter()
        .map(|a| (&a[..], None))
        .chain(says.iter().map(|&(a, m)| (a, Some(m))))
    {
        let (code, _, stderr) = Running(Some(braid(args).spawn().unwrap())).finish();
        assert_eq!(code, 2, "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("braid: error: "), "{args:?}: {stderr}");
        assert!(
            said.is_none_or(|m| stderr.contains(m)),
            "{args:?}: {stderr}"
        );
    }
}

/// A lab (root): removed on drop, pass or fail.
struct Lab(&'static str);

impl Lab {
    fn up(name: &'static str, specs: &[&str]) -> Lab {
        let _ = braid(&["lab", "down", "--name", name]).output();
        let mut args = vec!["lab", "up", "--name", name, "--seed", "1"];
        for spec in specs {
            args.extend(["--path", spec]);
        }
        let out = braid(&args).output().unwrap();
        assert!(
            out.status.success(),
            "lab up: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Lab(name)
    }

    fn exec(&self, side: &'static str) -> Vec<&'static str> {
        vec![
            "lab",
            "exec",
            "--name",
            self.0,
            side,
            "--",
            env!("CARGO_BIN_EXE_braid"),
        ]
    }

    fn set(&self, path: &str, spec: &str) {
        let out = braid(&["lab", "set", "--name", self.0, path, spec])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "lab set: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        let _ = braid(&["lab", "down", "--name", self.0]).output();
    }
}

#[test]
fn lab_a_file_crosses_loss_and_a_blackout_intact() {
    if !braid_lab::root_guard::have_root_or_skip() {
        return;
    }
    let dir = Scratch::new("lab");
    let (send_key, send_pub) = key(&dir, "send.key", 1);
    let (recv_key, recv_pub) = key(&dir, "recv.key", 2);
    let data = random_file(&dir.path("f.bin"), 4 << 20, 3);
    let lab = Lab::up("sr-lab", &["8mbit,10ms,loss=1%", "2mbit,40ms"]);
    let out = dir.out();
    let (recv, _, recv_err) = start_recv_in(
        &lab.exec("server"),
        "198.19.0.1:47110",
        &["--out", out.to_str().unwrap()],
        &recv_key,
        &send_pub,
    );
    let mut args = lab.exec("client");
    let file = dir.path("f.bin");
    // The lab routes packets from 198.18.i.2 over path i.
    args.extend([
        "send",
        file.to_str().unwrap(),
        "--to",
        "198.19.0.1:47110",
        "--via",
        "198.18.1.2",
        "--via",
        "198.18.2.2",
        "--key",
        send_key.to_str().unwrap(),
        "--peer",
        &recv_pub,
        "--json",
    ]);
    let sender = Running(Some(braid(&args).spawn().unwrap()));
    // A 2-second blackout of the fast path in the middle of the transfer.
    std::thread::sleep(Duration::from_millis(1500));
    lab.set("p1", "8mbit,10ms,loss=100%");
    std::thread::sleep(Duration::from_secs(2));
    lab.set("p1", "8mbit,10ms,loss=1%");
    let (code, stdout, stderr) = sender.finish();
    assert_eq!(code, 0, "send: {stderr}");
    let (rcode, _, _) = recv.finish();
    assert_eq!(rcode, 0, "recv: {}", rest(recv_err));
    assert_eq!(
        sha256(&std::fs::read(out.join("f.bin")).unwrap()),
        sha256(&data)
    );
    let sent = json(&stdout);
    // Reported for the record (`cargo test -- --nocapture`), not asserted: a speed.
    println!(
        "lab transfer: {} Mbit/s over {} s, retransmitted {} bytes",
        sent["goodput_mbit_s"], sent["seconds"], sent["retransmitted_bytes"]
    );
    assert!(
        sent["retransmitted_bytes"].as_u64().unwrap() > 0,
        "loss and a blackout cost resends"
    );
}

#[test]
fn root_a_full_disk_is_reported_on_both_sides_and_leaves_no_file() {
    if !braid_lab::root_guard::have_root_or_skip() {
        return;
    }
    let dir = Scratch::new("full");
    let (send_key, send_pub) = key(&dir, "send.key", 1);
    let (recv_key, recv_pub) = key(&dir, "recv.key", 2);
    random_file(&dir.path("big.bin"), 3_000_000, 3);
    let out = dir.out();
    // A 1 MiB file system in a mount namespace of the receiver's own (gone
    // when it exits); after braid, the shell lists what is left in it.
    let script = format!(
        "mount -t tmpfs -o size=1m tmpfs {out} || exit 99; \
         {bin} recv --listen 127.0.0.1:0 --out {out} --key {key} --peer {peer}; rc=$?; \
         echo left: $(ls -A {out}) >&2; exit $rc",
        out = out.display(),
        bin = env!("CARGO_BIN_EXE_braid"),
        key = recv_key.display(),
        peer = send_pub,
    );
    let mut recv_cmd = Command::new("unshare");
    recv_cmd
        .args(["-m", "--propagation", "private", "sh", "-c", &script])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut recv = Running(Some(recv_cmd.spawn().unwrap()));
    let mut recv_err = BufReader::new(recv.child().stderr.take().unwrap());
    let mut line = String::new();
    recv_err.read_line(&mut line).unwrap();
    let addr = line
        .trim()
        .strip_prefix("braid: listening on ")
        .unwrap_or_else(|| panic!("first line of recv: {line:?}"))
        .to_owned();
    let big = dir.path("big.bin");
    let (code, _, stderr) = Running(Some(
        send_one_path(big.to_str().unwrap(), &addr, &send_key, &recv_pub, &[])
            .spawn()
            .unwrap(),
    ))
    .finish();
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("refused by the receiver") && stderr.contains("No space left"),
        "{stderr}"
    );
    let (rcode, _, _) = recv.finish();
    let err = rest(recv_err);
    assert_eq!(rcode, 1, "{err}");
    assert!(err.contains("No space left"), "{err}");
    assert!(
        err.contains("left: \n") || err.trim_end().ends_with("left:"),
        "{err}"
    );
}

#[test]
fn lab_without_via_every_interface_is_a_path() {
    if !braid_lab::root_guard::have_root_or_skip() {
        return;
    }
    let dir = Scratch::new("lab-auto");
    let (send_key, send_pub) = key(&dir, "send.key", 1);
    let (recv_key, recv_pub) = key(&dir, "recv.key", 2);
    let data = random_file(&dir.path("f.bin"), 2 << 20, 3);
    let lab = Lab::up("sr-auto", &["8mbit,10ms", "4mbit,20ms"]);
    let out = dir.out();
    let (recv, _, recv_err) = start_recv_in(
        &lab.exec("server"),
        "198.19.0.1:47111",
        &["--out", out.to_str().unwrap()],
        &recv_key,
        &send_pub,
    );
    let mut args = lab.exec("client");
    let file = dir.path("f.bin");
    args.extend([
        "send",
        file.to_str().unwrap(),
        "--to",
        "198.19.0.1:47111",
        "--key",
        send_key.to_str().unwrap(),
        "--peer",
        &recv_pub,
        "--json",
    ]);
    let (code, stdout, stderr) = Running(Some(braid(&args).spawn().unwrap())).finish();
    assert_eq!(code, 0, "send: {stderr}");
    let (rcode, _, _) = recv.finish();
    assert_eq!(rcode, 0, "recv: {}", rest(recv_err));
    assert_eq!(
        sha256(&std::fs::read(out.join("f.bin")).unwrap()),
        sha256(&data)
    );
    let sent = json(&stdout);
    let paths = sent["paths"].as_array().unwrap();
    let names: Vec<&str> = paths.iter().map(|p| p["name"].as_str().unwrap()).collect();
    // The lab's client namespace has lo, p1 and p2.
    assert_eq!(names, ["p1", "p2"], "{sent}");
    for p in paths {
        assert!(p["wire_bytes"].as_u64().unwrap() > 200_000, "{sent}");
    }
}
