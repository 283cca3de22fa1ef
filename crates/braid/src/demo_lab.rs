//! `braid demo` as root: the demo's two lines emulated in `braid lab`,
//! braid's real tunnel (client and server daemons) over them, and one TCP
//! upload through it. Each line alone first (plain TCP, no tunnel), then
//! the bonded upload, with the DSL line cut for the middle third and back
//! for the last: bonded rate, failover and reuse, as a user would see them.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use braid_lab::{EmulatorProgram, LabError, LabStatus, Side, UpOptions};
use socket2::{Domain, Protocol, SockAddr, Socket, Type};

use crate::lab_tunnel::{CLIENT_TUN, SERVER_TUN};
use crate::Failure;

const LAB: &str = "braid-demo";
const DSL: &str = "16mbit,8ms,name=dsl";
const LTE: &str = "12mbit,25ms,name=lte";
const PORT: u16 = 47_300;
/// Throughput is reported per bin of this length.
const BIN: Duration = Duration::from_millis(500);
/// A bonded bin counts as recovered at this share of the LTE line alone.
const RECOVERED: f64 = 0.8;

/// Takes the lab (and the tunnel's daemons) down however the demo ends.
struct LabGuard;

impl Drop for LabGuard {
    fn drop(&mut self) {
        let _ = braid_lab::down(LAB);
        let _ = crate::lab_tunnel::remove(LAB);
    }
}

fn lab_failure(e: LabError) -> Failure {
    Failure::Runtime(format!("braid demo: {e}"))
}

/// Bytes received per bin, and per path the emulator's forwarded bytes
/// (client to server) in each bin.
struct Trace {
    goodput: Vec<u64>,
    path_bytes: Vec<Vec<u64>>,
    /// The connection carried data to the end without an error.
    survived: bool,
}

pub fn run(seconds: u64) -> Result<(), Failure> {
    let bonded_secs = seconds.clamp(6, 120);
    let alone_secs = (bonded_secs / 3).max(2);
    crate::write_stdout(&format!(
        "braid demo (as root: braid's real tunnel in braid lab): one TCP upload (CUBIC)\n\
         over two emulated lines, each alone first, then bonded by braid with the DSL\n\
         line cut for the middle third of the run:\n  \
         dsl  {DSL:<24} 16 Mbit/s, 8 ms one way\n  \
         lte  {LTE:<24} 12 Mbit/s, 25 ms one way\n\
         bringing up the lab and the tunnel ...\n"
    ))?;
    let program = std::env::current_exe()
        .map_err(|e| Failure::Runtime(format!("locating the braid binary: {e}")))?;
    let status = braid_lab::up(&UpOptions {
        name: LAB.into(),
        specs: vec![DSL.into(), LTE.into()],
        seed: Some(1),
        emulator: EmulatorProgram {
            program,
            args: vec!["lab".into(), "_emulate".into()],
        },
        nat: false,
    })
    .map_err(lab_failure)?;
    let _guard = LabGuard;
    crate::lab_tunnel::start(&status, true).map_err(lab_failure)?;

    let mut alone = Vec::new();
    for (i, p) in status.paths.iter().enumerate() {
        let source = SocketAddr::from((p.layout.client_addr, 0));
        let target = SocketAddr::from((status.server_addr, PORT + 1 + i as u16));
        let trace = upload(&status, Some(source), target, alone_secs, None)?;
        alone.push(mean_bps(&trace.goodput));
    }
    let cut_at = bonded_secs / 3;
    let cut_len = bonded_secs / 3;
    let cut = (cut_at, cut_len);
    let target = SocketAddr::from((SERVER_TUN, PORT));
    let trace = upload(&status, None, target, bonded_secs, Some(cut))?;
    crate::write_stdout(&report(&trace, &alone, bonded_secs, cut))
}

/// One TCP upload from the client namespace to `target` for `secs`,
/// optionally cutting the first path at `cut` (start, length, seconds).
fn upload(
    lab: &LabStatus,
    source: Option<SocketAddr>,
    target: SocketAddr,
    secs: u64,
    cut: Option<(u64, u64)>,
) -> Result<Trace, Failure> {
    let listener = braid_lab::run_in(LAB, Side::Server, || {
        TcpListener::bind(target).map_err(LabError::io(format!("listening on {target}")))
    })
    .map_err(lab_failure)?;
    let stream = braid_lab::run_in(LAB, Side::Client, || {
        connect(source, target).map_err(LabError::io(format!("connecting to {target}")))
    })
    .map_err(lab_failure)?;
    let (server, _) = listener
        .accept()
        .map_err(|e| Failure::Runtime(format!("accepting the upload: {e}")))?;
    let bins = (Duration::from_secs(secs).as_millis() / BIN.as_millis()) as usize;
    let received = Arc::new(Mutex::new(vec![0u64; bins]));
    let done = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let reader = {
        let (received, done) = (received.clone(), done.clone());
        std::thread::spawn(move || drain(server, start, &received, &done))
    };
    let writer = {
        let done = done.clone();
        std::thread::spawn(move || fill(stream, &done))
    };
    let forwarded = || -> Result<Vec<u64>, Failure> {
        let now = braid_lab::status(LAB).map_err(lab_failure)?;
        Ok(now
            .paths
            .iter()
            .map(|p| p.up.as_ref().map_or(0, |d| d.counters.forwarded_bytes))
            .collect())
    };
    let mut last = forwarded()?;
    let mut path_bytes = vec![Vec::with_capacity(bins); lab.paths.len()];
    let mut cut_done = false;
    for bin in 1..=bins {
        std::thread::sleep((start + BIN * bin as u32).saturating_duration_since(Instant::now()));
        let due = |(at, _): &(u64, u64)| BIN * bin as u32 >= Duration::from_secs(*at);
        if let Some((_, len)) = cut.filter(|c| !cut_done && due(c)) {
            let spec = format!("{DSL},blackout=0s+{len}s");
            braid_lab::set(LAB, &lab.paths[0].layout.name, &spec).map_err(lab_failure)?;
            cut_done = true;
        }
        let now = forwarded()?;
        for (i, (n, l)) in now.iter().zip(&last).enumerate() {
            path_bytes[i].push(n.saturating_sub(*l));
        }
        last = now;
    }
    done.store(true, Ordering::Relaxed);
    let wrote_to_end = writer.join().unwrap_or(false);
    let read_to_end = reader.join().unwrap_or(false);
    let goodput = received.lock().expect("no panics hold it").clone();
    Ok(Trace {
        goodput,
        path_bytes,
        survived: wrote_to_end && read_to_end,
    })
}

/// A CUBIC connection (namespaces here default to BBR), bound to `source`
/// if given: the lab routes a path's client address over that path.
fn connect(source: Option<SocketAddr>, target: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = Socket::new(Domain::IPV4, Type::STREAM, Some(Protocol::TCP))?;
    socket.set_tcp_congestion(b"cubic")?;
    if let Some(s) = source {
        socket.bind(&SockAddr::from(s))?;
    }
    socket.connect_timeout(&SockAddr::from(target), Duration::from_secs(5))?;
    socket.set_write_timeout(Some(Duration::from_millis(200)))?;
    Ok(socket.into())
}

fn waiting(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

/// Writes until `done`; false if the connection failed first.
fn fill(mut stream: TcpStream, done: &AtomicBool) -> bool {
    let chunk = vec![0x5a_u8; 64 * 1024];
    while !done.load(Ordering::Relaxed) {
        match stream.write(&chunk) {
            Ok(_) => {}
            Err(e) if waiting(&e) => {}
            Err(_) => return false,
        }
    }
    true
}

/// Reads until `done`, counting bytes per bin; false if the connection
/// ended or failed first.
fn drain(
    mut stream: TcpStream,
    start: Instant,
    received: &Mutex<Vec<u64>>,
    done: &AtomicBool,
) -> bool {
    let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
    let mut buf = vec![0u8; 64 * 1024];
    while !done.load(Ordering::Relaxed) {
        match stream.read(&mut buf) {
            Ok(0) => return false,
            Ok(n) => {
                let bin = (start.elapsed().as_millis() / BIN.as_millis()) as usize;
                if let Some(b) = received.lock().expect("no panics hold it").get_mut(bin) {
                    *b += n as u64;
                }
            }
            Err(e) if waiting(&e) => {}
            Err(_) => return false,
        }
    }
    true
}

fn bps(bytes: u64) -> f64 {
    bytes as f64 * 8.0 / BIN.as_secs_f64()
}

/// Mean rate over the bins after the first second (slow start aside).
fn mean_bps(bins: &[u64]) -> f64 {
    let skip = (Duration::from_secs(1).as_millis() / BIN.as_millis()) as usize;
    let steady = &bins[skip.min(bins.len().saturating_sub(1))..];
    steady.iter().map(|b| bps(*b)).sum::<f64>() / steady.len().max(1) as f64
}

fn report(trace: &Trace, alone: &[f64], secs: u64, (cut_at, cut_len): (u64, u64)) -> String {
    let per_bin = |i: usize| -> Vec<f64> { trace.path_bytes[i].iter().map(|b| bps(*b)).collect() };
    let (dsl, lte) = (per_bin(0), per_bin(1));
    let bin_of = |s: u64| (Duration::from_secs(s).as_millis() / BIN.as_millis()) as usize;
    let (cut_bin, back_bin) = (bin_of(cut_at), bin_of(cut_at + cut_len));
    let mean = |v: &[f64], from: usize, to: usize| {
        let s = &v[from.min(v.len())..to.min(v.len())];
        s.iter().sum::<f64>() / s.len().max(1) as f64
    };
    let goodput: Vec<f64> = trace.goodput.iter().map(|b| bps(*b)).collect();
    let skip = bin_of(1);
    let end = goodput.len();
    let mbit = |v: f64| format!("{:.1}", v / 1e6);
    let mut out = format!(
        "\n{:<34} {:>14} {:>10} {:>10}\n",
        "run (Mbit/s)", "TCP goodput", "dsl", "lte"
    );
    out += &format!("{:<34} {:>14}\n", "dsl alone (no tunnel)", mbit(alone[0]));
    out += &format!("{:<34} {:>14}\n", "lte alone (no tunnel)", mbit(alone[1]));
    for (label, from, to) in [
        (format!("braid: dsl + lte, 1-{cut_at} s"), skip, cut_bin),
        (
            format!("  dsl cut, {cut_at}-{} s", cut_at + cut_len),
            cut_bin,
            back_bin,
        ),
        (
            format!("  dsl back, {}-{secs} s", cut_at + cut_len),
            back_bin,
            end,
        ),
    ] {
        out += &format!(
            "{label:<34} {:>14} {:>10} {:>10}\n",
            mbit(mean(&goodput, from, to)),
            mbit(mean(&dsl, from, to)),
            mbit(mean(&lte, from, to)),
        );
    }
    let recovered = (cut_bin..back_bin).find(|&b| goodput[b] >= RECOVERED * alone[1]);
    let reused = (back_bin..end).find(|&b| dsl[b] >= 0.5 * alone[0]);
    let after = |b: Option<usize>, from: usize, otherwise: &str| {
        b.map_or(otherwise.to_owned(), |b| {
            format!("within {:.1} s", (b + 1 - from) as f64 * BIN.as_secs_f64())
        })
    };
    out += &format!(
        "\nfailover: TCP goodput back to {:.0} % of lte alone: {} of the cut;\n\
         the dsl line carrying half its rate alone again: {} of its return.\n\
         {}\n\n\
         Per {} ms (TCP goodput / dsl / lte, Mbit/s):\n",
        RECOVERED * 100.0,
        after(recovered, cut_bin, "not while the dsl line was cut"),
        after(reused, back_bin, "not before the end of the run"),
        if trace.survived {
            "The TCP connection survived the cut: one connection for the whole run."
        } else {
            "The TCP connection did NOT survive the run: it failed before the end."
        },
        BIN.as_millis(),
    );
    for b in 0..end {
        out += &format!(
            "  {:>5.1} s  {:>6} {:>6} {:>6}{}\n",
            (b + 1) as f64 * BIN.as_secs_f64(),
            mbit(goodput[b]),
            mbit(dsl[b]),
            mbit(lte[b]),
            if b == cut_bin {
                "   <- dsl cut"
            } else if b == back_bin {
                "   <- dsl back"
            } else {
                ""
            }
        );
    }
    out += &format!(
        "\nThe lab is down again. Explore it yourself:\n  \
         braid lab up --tunnel --path {DSL} --path {LTE}\n  \
         (it prints what to try: iperf3 through the tunnel, braid lab set to cut a\n  \
         path, braid status --watch)\n  \
         tunnel addresses: client {CLIENT_TUN}, server {SERVER_TUN}\n"
    );
    out
}

/// Whether this process may run the lab demo: root, and a TUN device.
pub fn available() -> Result<(), String> {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Err("not root".into());
    }
    if !std::path::Path::new("/dev/net/tun").exists() {
        return Err("no /dev/net/tun".into());
    }
    Ok(())
}
