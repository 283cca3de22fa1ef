//! The emulator's control channel: one JSON datagram per request and per
//! answer over a Unix socket in the lab's state directory. Datagrams keep the
//! emulator's loop simple: a request arrives whole or not at all, and no
//! connection can stall forwarding.

use std::os::unix::net::UnixDatagram;
use std::path::PathBuf;
use std::time::Duration;

use crate::layout::LabLayout;
use crate::LabError;

/// Largest request or answer.
pub const MAX_MESSAGE: usize = 1 << 16;

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub enum Request {
    Status,
    Set {
        path: String,
        spec: String,
        cwd: PathBuf,
    },
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub enum Response {
    Status(EmulatorStatus),
    Applied,
    Rejected(String),
}

#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Counters {
    pub forwarded_packets: u64,
    /// IP bytes, as rates count them.
    pub forwarded_bytes: u64,
    pub dropped_queue: u64,
    pub dropped_loss: u64,
    pub dropped_blackout: u64,
    /// Frames larger than the emulator's buffers (never on an MTU-1500 link).
    pub dropped_oversize: u64,
    /// Frames dropped on arrival because the direction already held its
    /// limit of frames (queued plus in propagation), as netem's `limit`.
    pub dropped_limit: u64,
    /// Frames sent more than 0.5 ms after their due time (the emulator's own
    /// delay error; the accuracy target is under 1 % of frames).
    pub late_over_500us: u64,
    /// The largest such lateness seen, in microseconds.
    pub max_late_us: u64,
    /// How long, in all, a frame of this direction was overdue by more than
    /// 0.5 ms: the stretches the emulator ran behind its schedule (not
    /// scheduled, or its machine not running), counted once however many
    /// frames waited in them. The emulator's lateness left the link idle
    /// for at most this long.
    #[serde(default)]
    pub behind_us: u64,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GilbertElliottSettings {
    pub p_good_to_bad_pct: f64,
    pub p_bad_to_good_pct: f64,
    pub loss_in_bad_pct: f64,
}

/// One direction's settings in plain units, for status output.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct LinkSettings {
    /// Constant rate of IP bytes, or `None` for a trace.
    pub rate_bps: Option<u64>,
    pub trace: Option<String>,
    pub delay_ms: f64,
    pub jitter_ms: f64,
    pub loss_pct: f64,
    pub gilbert_elliott: Option<GilbertElliottSettings>,
    pub queue_bytes: usize,
    /// Most frames the direction holds at once, queued or in propagation:
    /// bounds the emulator's memory whatever rate × delay a SPEC gives.
    pub held_limit_packets: usize,
}

/// How long the emulator held the frames it forwarded since the SPEC in
/// force took effect: from the kernel's receive stamp of a frame to the
/// start of the send batch that handed it back to the kernel. This is the
/// emulator's own record of the delay it applied, lateness included.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct HeldTimes {
    pub frames: u64,
    pub min_ns: Option<u64>,
    pub max_ns: Option<u64>,
    pub total_ns: u64,
    /// The largest lateness among these frames: how long after its due
    /// time the latest of them was sent.
    pub max_late_ns: u64,
}

impl HeldTimes {
    pub fn record(&mut self, held_ns: u64, late_ns: u64) {
        self.frames += 1;
        self.min_ns = Some(self.min_ns.map_or(held_ns, |m| m.min(held_ns)));
        self.max_ns = Some(self.max_ns.map_or(held_ns, |m| m.max(held_ns)));
        self.total_ns = self.total_ns.saturating_add(held_ns);
        self.max_late_ns = self.max_late_ns.max(late_ns);
    }
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DirectionStatus {
    pub settings: LinkSettings,
    pub counters: Counters,
    /// Since the SPEC in force took effect (`up`, or `set` of this path).
    pub held: HeldTimes,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PathStatus {
    pub name: String,
    pub spec: String,
    /// Blackout windows as `START+LEN` seconds since the spec took effect.
    pub blackouts: Vec<String>,
    /// Client to server.
    pub up: DirectionStatus,
    /// Server to client.
    pub down: DirectionStatus,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct EmulatorStatus {
    pub pid: u32,
    pub uptime_s: f64,
    pub paths: Vec<PathStatus>,
}

/// Sends `request` to the lab's emulator and waits for its answer.
pub fn ask(layout: &LabLayout, request: &Request) -> Result<Response, LabError> {
    let own = layout.state_dir().join(format!(
        "client-{}-{:?}.sock",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_file(&own);
    let socket =
        UnixDatagram::bind(&own).map_err(LabError::io(format!("binding {}", own.display())));
    let result = socket.and_then(|socket| exchange(&socket, layout, request));
    let _ = std::fs::remove_file(&own);
    result
}

fn exchange(
    socket: &UnixDatagram,
    layout: &LabLayout,
    request: &Request,
) -> Result<Response, LabError> {
    let not_running = |_| LabError::EmulatorNotRunning(layout.name.clone());
    socket
        .set_read_timeout(Some(Duration::from_secs(3)))
        .map_err(LabError::io("control socket timeout"))?;
    let bytes = serde_json::to_vec(request).expect("request serializes");
    socket
        .send_to(&bytes, layout.control_socket())
        .map_err(not_running)?;
    let mut buf = vec![0u8; MAX_MESSAGE];
    let n = socket.recv(&mut buf).map_err(not_running)?;
    serde_json::from_slice(&buf[..n]).map_err(|e| LabError::Control(format!("bad answer: {e}")))
}
