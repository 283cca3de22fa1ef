//! The relay process: one thread, one loop, every path of the lab (see the
//! crate documentation for why it is built this way).

use std::collections::VecDeque;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use braid_sim::spec::{Capacity, PathSpec};

use crate::control::{
    Counters, DirectionStatus, EmulatorStatus, GilbertElliottSettings, HeldTimes, LinkSettings,
    PathStatus, Request, Response, MAX_MESSAGE,
};
use crate::direct;
use crate::lateness::Lateness;
use crate::layout::{LabLayout, NETNS_ROOT};
use crate::link::{LinkModel, Verdict};
use crate::packet_socket::PacketSocket;
use crate::state::{parse_spec, write_whole, LabConfig};
use crate::LabError;

/// Frames per `recvmmsg`/`sendmmsg`.
pub const BATCH: usize = 64;
/// Bytes per frame buffer: an MTU-1500 frame with room to spare.
const FRAME_CAPACITY: usize = 2048;
const ETH_HEADER: usize = 14;
/// Buffers made at start; more are made only if a burst outgrows them.
const INITIAL_BUFFERS: usize = 8192;
/// Most frames one direction holds at once (netem's `limit`, whose default
/// is 1000): 16384 full frames are 25 MB of traffic, 1 Gbit/s for 200 ms,
/// more than a lab path needs, and 32 MiB of buffers at most per direction
/// whatever rate × delay a SPEC asks for.
pub const MAX_HELD_FRAMES: usize = 16_384;
/// Batches read from one socket per wake-up before serving the others.
const MAX_BATCHES_PER_WAKEUP: usize = 8;
/// How soon to retry when a socket buffer was full.
const SEND_RETRY: Duration = Duration::from_micros(50);
/// The real-time priority: above every normal task, below the kernel's own
/// real-time threads (which use 50).
const RT_PRIORITY: libc::c_int = 10;

struct Pending {
    /// The kernel's receive time of the frame.
    arrived: Instant,
    deliver_at: Instant,
    len: usize,
    buf: Vec<u8>,
}

struct Direction {
    model: LinkModel,
    queue: VecDeque<Pending>,
    counters: Counters,
    held: HeldTimes,
    lateness: Lateness,
}

/// Sockets and directions are indexed by side: 0 faces the client (frames
/// read there travel up), 1 faces the server (frames read there travel down).
struct EmulatedPath {
    name: String,
    spec: PathSpec,
    spec_text: String,
    sockets: [PacketSocket; 2],
    dirs: [Direction; 2],
}

struct Emulator {
    paths: Vec<EmulatedPath>,
    control: UnixDatagram,
    control_buf: Vec<u8>,
    pool: Vec<Vec<u8>>,
    rx_bufs: Vec<Vec<u8>>,
    rx_lens: [usize; BATCH],
    rx_stamps: [Option<Duration>; BATCH],
    pollfds: Vec<libc::pollfd>,
    started: Instant,
    send_blocked: bool,
}

/// Runs the emulator of the lab whose state is in `state_dir`; returns only
/// on a setup or socket error.
pub fn run(state_dir: &Path) -> Result<(), LabError> {
    let name = state_dir
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| LabError::BadName(state_dir.display().to_string()))?;
    let layout = LabLayout::new(name)?;
    let config = LabConfig::load(&layout)?;
    enter_namespace(&config.namespaces.emulator)?;
    let now = Instant::now();
    let mut paths = Vec::with_capacity(config.paths.len());
    for (index, p) in config.paths.iter().enumerate() {
        // A direct path's veth pair joins client and server: nothing to relay.
        if direct::is_direct(&p.spec) {
            continue;
        }
        let spec = parse_spec(&p.spec, &p.cwd)?;
        let open = |iface: &str| {
            PacketSocket::open(iface).map_err(LabError::io(format!("packet socket on {iface}")))
        };
        let seed = config.seed.wrapping_add(2 * index as u64);
        paths.push(EmulatedPath {
            name: p.layout.name.clone(),
            sockets: [
                open(&p.layout.emu_client_iface)?,
                open(&p.layout.emu_server_iface)?,
            ],
            dirs: directions(&spec, now, seed),
            spec,
            spec_text: p.spec.clone(),
        });
    }
    let control_path = layout.control_socket();
    let _ = std::fs::remove_file(&control_path);
    let control =
        UnixDatagram::bind(&control_path).map_err(LabError::io("binding the control socket"))?;
    control
        .set_nonblocking(true)
        .map_err(LabError::io("control socket"))?;
    if let Err(e) = make_realtime() {
        eprintln!("braid-lab emulator: running without real-time priority: {e}");
    }
    let mut pollfds: Vec<libc::pollfd> = paths
        .iter()
        .flat_map(|p| p.sockets.iter())
        .map(|s| libc::pollfd {
            fd: s.raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    pollfds.push(libc::pollfd {
        fd: control.as_raw_fd(),
        events: libc::POLLIN,
        revents: 0,
    });
    // Whole or not at all: `braid lab up` polls for this file and took an
    // empty one (created, not yet written) for an emulator that had exited.
    write_whole(&layout.pid_file(), &std::process::id().to_string())
        .map_err(LabError::io("writing the pid file"))?;
    let mut emulator = Emulator {
        paths,
        control,
        control_buf: vec![0; MAX_MESSAGE],
        pool: (0..INITIAL_BUFFERS)
            .map(|_| vec![0; FRAME_CAPACITY])
            .collect(),
        rx_bufs: (0..BATCH).map(|_| vec![0; FRAME_CAPACITY]).collect(),
        rx_lens: [0; BATCH],
        rx_stamps: [None; BATCH],
        pollfds,
        started: now,
        send_blocked: false,
    };
    emulator.serve()
}

fn directions(spec: &PathSpec, now: Instant, seed: u64) -> [Direction; 2] {
    let rtt = spec.up.delay + spec.down.delay;
    let dir = |link: &braid_sim::spec::LinkSpec, seed: u64| Direction {
        model: LinkModel::new(link.clone(), spec.blackouts.clone(), rtt, now, seed),
        queue: VecDeque::with_capacity(4096),
        counters: Counters::default(),
        held: HeldTimes::default(),
        lateness: Lateness::default(),
    };
    [dir(&spec.up, seed), dir(&spec.down, seed + 1)]
}

fn enter_namespace(ns: &str) -> Result<(), LabError> {
    let path = Path::new(NETNS_ROOT).join(ns);
    let file =
        std::fs::File::open(&path).map_err(LabError::io(format!("opening {}", path.display())))?;
    // SAFETY: setns on a valid namespace descriptor; the process is still
    // single-threaded, so all of it moves.
    if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        return Err(LabError::io(format!("entering {ns}"))(
            std::io::Error::last_os_error(),
        ));
    }
    Ok(())
}

/// SCHED_FIFO and 1 ns timer slack: wake-ups on time even while the traffic
/// generators keep both cores busy.
fn make_realtime() -> std::io::Result<()> {
    // SAFETY: plain FFI calls with valid arguments for the calling thread.
    unsafe {
        if libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        let param = libc::sched_param {
            sched_priority: RT_PRIORITY,
        };
        if libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) != 0 {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(())
}

impl Emulator {
    fn serve(&mut self) -> Result<(), LabError> {
        loop {
            self.wait()?;
            let now = Instant::now();
            for p in 0..self.paths.len() {
                for side in 0..2 {
                    if self.pollfds[2 * p + side].revents & libc::POLLIN != 0 {
                        self.receive(p, side, now)?;
                    }
                }
            }
            if self.pollfds.last().expect("control fd").revents & libc::POLLIN != 0 {
                self.serve_control();
            }
            self.transmit(Instant::now())?;
        }
    }

    /// Sleeps until a socket is readable or the earliest delivery is due.
    fn wait(&mut self) -> Result<(), LabError> {
        let next = self
            .paths
            .iter()
            .flat_map(|p| p.dirs.iter())
            .filter_map(|d| d.queue.front().map(|f| f.deliver_at))
            .min();
        let timeout = match next {
            _ if self.send_blocked => Some(SEND_RETRY),
            Some(at) => Some(at.saturating_duration_since(Instant::now())),
            None => None,
        };
        let ts = timeout.map(|d| libc::timespec {
            tv_sec: d.as_secs() as libc::time_t,
            tv_nsec: d.subsec_nanos() as libc::c_long,
        });
        let ts_ptr = ts
            .as_ref()
            .map_or(std::ptr::null(), |t| t as *const libc::timespec);
        // SAFETY: pollfds is a live array of the given length.
        let ret = unsafe {
            libc::ppoll(
                self.pollfds.as_mut_ptr(),
                self.pollfds.len() as libc::nfds_t,
                ts_ptr,
                std::ptr::null(),
            )
        };
        if ret < 0 {
            let err = std::io::Error::last_os_error();
            if err.kind() != std::io::ErrorKind::Interrupted {
                return Err(LabError::io("ppoll")(err));
            }
            for fd in &mut self.pollfds {
                fd.revents = 0;
            }
        }
        Ok(())
    }

    fn receive(&mut self, p: usize, side: usize, now: Instant) -> Result<(), LabError> {
        let Emulator {
            paths,
            pool,
            rx_bufs,
            rx_lens,
            rx_stamps,
            ..
        } = self;
        let path = &mut paths[p];
        let dir = &mut path.dirs[side];
        // Kernel receive times are wall-clock; map them onto the monotonic
        // clock through one pair of readings taken together.
        let wall_now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        for _ in 0..MAX_BATCHES_PER_WAKEUP {
            let n = path.sockets[side]
                .recv_batch(rx_bufs, rx_lens, rx_stamps)
                .map_err(LabError::io(format!("receiving on path {}", path.name)))?;
            for i in 0..n {
                let len = rx_lens[i];
                let arrived = rx_stamps[i]
                    .and_then(|t| now.checked_sub(wall_now.saturating_sub(t)))
                    .unwrap_or(now);
                if !(ETH_HEADER..=FRAME_CAPACITY).contains(&len) {
                    dir.counters.dropped_oversize += 1;
                    continue;
                }
                // Before the model sees it, so a dropped frame leaves its
                // state (queue, loss chain) as if it had never come.
                if dir.queue.len() >= MAX_HELD_FRAMES {
                    dir.counters.dropped_limit += 1;
                    continue;
                }
                match dir.model.admit(arrived, len - ETH_HEADER) {
                    Verdict::Deliver(deliver_at) => {
                        let fresh = pool.pop().unwrap_or_else(|| vec![0; FRAME_CAPACITY]);
                        let buf = std::mem::replace(&mut rx_bufs[i], fresh);
                        dir.queue.push_back(Pending {
                            arrived,
                            deliver_at,
                            len,
                            buf,
                        });
                    }
                    Verdict::DropBlackout => dir.counters.dropped_blackout += 1,
                    Verdict::DropLoss => dir.counters.dropped_loss += 1,
                    Verdict::DropQueue => dir.counters.dropped_queue += 1,
                }
            }
            if n < BATCH {
                break;
            }
        }
        Ok(())
    }

    /// Sends every frame whose delivery time has come, in batches.
    fn transmit(&mut self, now: Instant) -> Result<(), LabError> {
        self.send_blocked = false;
        for path in &mut self.paths {
            for side in 0..2 {
                let dir = &mut path.dirs[side];
                let out = &path.sockets[1 - side];
                loop {
                    let due = dir
                        .queue
                        .iter()
                        .take(BATCH)
                        .take_while(|f| f.deliver_at <= now)
                        .count();
                    if due == 0 {
                        break;
                    }
                    let mut frames: [&[u8]; BATCH] = [&[]; BATCH];
                    for (slot, f) in frames.iter_mut().zip(dir.queue.iter()) {
                        *slot = &f.buf[..f.len];
                    }
                    let sent = out
                        .send_batch(&frames[..due])
                        .map_err(LabError::io(format!("sending on path {}", path.name)))?;
                    for f in dir.queue.drain(..sent) {
                        let late = dir.lateness.record(f.deliver_at, now, &mut dir.counters);
                        let held = now.saturating_duration_since(f.arrived);
                        dir.held.record(nanos(held), nanos(late));
                        dir.counters.forwarded_packets += 1;
                        dir.counters.forwarded_bytes += (f.len - ETH_HEADER) as u64;
                        self.pool.push(f.buf);
                    }
                    if sent < due {
                        self.send_blocked = true;
                        break;
                    }
                }
            }
        }
        Ok(())
    }

    fn serve_control(&mut self) {
        while let Ok((n, from)) = self.control.recv_from(&mut self.control_buf) {
            let response = match serde_json::from_slice::<Request>(&self.control_buf[..n]) {
                Ok(Request::Status) => Response::Status(self.status()),
                Ok(Request::Set { path, spec, cwd }) => self.apply(&path, &spec, &cwd),
                Err(e) => Response::Rejected(format!("bad request: {e}")),
            };
            if let Some(to) = from.as_pathname() {
                let bytes = serde_json::to_vec(&response).expect("response serializes");
                // The asker may have timed out and gone; nothing to do then.
                let _ = self.control.send_to(&bytes, to);
            }
        }
    }

    fn apply(&mut self, name: &str, text: &str, cwd: &Path) -> Response {
        let Some(path) = self.paths.iter_mut().find(|p| p.name == name) else {
            return Response::Rejected(format!("no path named {name:?}"));
        };
        let spec = match parse_spec(text, cwd) {
            Ok(s) => s,
            Err(e) => return Response::Rejected(e.to_string()),
        };
        let now = Instant::now();
        let rtt = spec.up.delay + spec.down.delay;
        for (dir, link) in path.dirs.iter_mut().zip([&spec.up, &spec.down]) {
            dir.model
                .reconfigure(link.clone(), spec.blackouts.clone(), rtt, now);
            dir.held = HeldTimes::default();
        }
        path.spec = spec;
        path.spec_text = text.to_owned();
        Response::Applied
    }

    fn status(&self) -> EmulatorStatus {
        EmulatorStatus {
            pid: std::process::id(),
            uptime_s: self.started.elapsed().as_secs_f64(),
            paths: self
                .paths
                .iter()
                .map(|p| PathStatus {
                    name: p.name.clone(),
                    spec: p.spec_text.clone(),
                    blackouts: p
                        .spec
                        .blackouts
                        .iter()
                        .map(|b| format!("{}s+{}s", b.start.as_secs_f64(), b.len.as_secs_f64()))
                        .collect(),
                    up: direction_status(&p.dirs[0]),
                    down: direction_status(&p.dirs[1]),
                })
                .collect(),
        }
    }
}

fn direction_status(dir: &Direction) -> DirectionStatus {
    let spec = dir.model.spec();
    let (rate_bps, trace) = match &spec.capacity {
        Capacity::Rate { bps } => (Some(*bps), None),
        Capacity::Trace(t) => (None, Some(t.name().to_owned())),
    };
    DirectionStatus {
        settings: LinkSettings {
            rate_bps,
            trace,
            delay_ms: spec.delay.as_secs_f64() * 1e3,
            jitter_ms: spec.jitter.as_secs_f64() * 1e3,
            loss_pct: spec.loss * 100.0,
            gilbert_elliott: spec.burst_loss.map(|ge| GilbertElliottSettings {
                p_good_to_bad_pct: ge.p_good_to_bad * 100.0,
                p_bad_to_good_pct: ge.p_bad_to_good * 100.0,
                loss_in_bad_pct: ge.loss_in_bad * 100.0,
            }),
            queue_bytes: dir.model.queue_limit_bytes(),
            held_limit_packets: MAX_HELD_FRAMES,
        },
        counters: dir.counters.clone(),
        held: dir.held.clone(),
    }
}

fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
