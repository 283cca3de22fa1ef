//! Packet schedulers behind one trait, selectable by name with parameters:
//! `NAME[:key=value,...]`. A scheduler sees a snapshot of every path and the
//! packet at the head of the send queue, and decides: send it on one or more
//! paths, wait for a path to open, or drop it.
//!
//! Two families: window-free schedulers (`rr`, `wrr`, `lawrr`) send at once
//! on the path their weights pick, like the bonding routers of the papers,
//! and learn about capacity only through loss; the others respect each
//! path's congestion window and pacing.

mod batcp;
mod earliest_arrival;
mod lawrr;
mod min_rtt;
mod most_free_cwnd;
mod params;
mod redundant;
mod smooth_wrr;
mod wrr;

pub use params::{ParamError, Params};

use std::fmt;
use std::time::Duration;

use crate::time::Instant;
use crate::wire::LossEntry;

/// A set of path indices (at most 64 paths).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PathSet(pub u64);

impl PathSet {
    pub fn one(index: usize) -> PathSet {
        PathSet(1 << index)
    }
    /// Paths `0..n`.
    pub fn all(n: usize) -> PathSet {
        PathSet(if n >= 64 { u64::MAX } else { (1 << n) - 1 })
    }
    pub fn contains(self, index: usize) -> bool {
        index < 64 && self.0 & (1 << index) != 0
    }
    pub fn insert(&mut self, index: usize) {
        self.0 |= 1 << index;
    }
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
    pub fn iter(self) -> impl Iterator<Item = usize> {
        (0..64).filter(move |i| self.0 & (1 << i) != 0)
    }
}

/// Most paths a session may have.
pub const MAX_PATHS: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Send the head of the queue on these paths.
    Send(PathSet),
    /// Send on `path` the first queued datagram with at least `ahead_bytes`
    /// (wire bytes) queued before it; those stay for faster paths, which
    /// will deliver them no later than `path` delivers this one.
    SendBehind {
        path: usize,
        ahead_bytes: u64,
    },
    /// Keep the packet queued until a path's window or pacing opens.
    Wait,
    Drop,
}

/// A scheduler's snapshot of one path.
#[derive(Debug, Clone)]
pub struct PathView {
    pub index: usize,
    /// The congestion window has room for the packet.
    pub cwnd_open: bool,
    /// Window and pacing both allow sending now.
    pub can_send: bool,
    /// When pacing next allows a packet.
    pub ready_at: Instant,
    pub cwnd_bytes: u64,
    pub in_flight_bytes: u64,
    pub srtt: Option<Duration>,
    pub min_rtt: Option<Duration>,
    /// The round trip the session measured on the path apart from data:
    /// its last answered probe's, or its handshake's before one (`None`
    /// without a session). Known before any data measures one.
    pub probe_rtt: Option<Duration>,
    /// The session's packet train came back from the path too thin to
    /// measure it, or not at all: a thin or lossy path (3G in a fade),
    /// not given a transfer's first packets before its rate is known.
    pub train_failed: bool,
    /// Smallest relative one-way delay seen, µs: the propagation part
    /// (comparable across paths only; the queue is in `queueing`).
    pub owd_us: Option<f64>,
    /// Smoothed one-way delay above the path's minimum: its queue.
    pub queueing: Duration,
    /// Congestion controller's rate estimate.
    pub bandwidth_bps: Option<f64>,
    /// Kalman-filtered delivery rate (paper batcp).
    pub kalman_bps: Option<f64>,
    /// A sample taken with the path loaded (neither app-limited nor with
    /// under a quarter of its window in flight) or a packet train has
    /// shown its rate. Light traffic's samples show only what it was
    /// given: a path the scheduler passed over, priced by them, is not
    /// known to be thin.
    pub rate_shown: bool,
    /// Share of the path's sending rate that express datagrams (sparse
    /// flows' packets, which overtake whatever waits for it) took lately.
    pub express_share: f64,
    pub cost: f64,
    /// See [`PathInfo::overflow`].
    pub overflow: bool,
    /// Timed out and not heard from since.
    pub suspect: bool,
    /// Window full and no acknowledgement for an RTT (a fade, an outage).
    pub stalled: bool,
}

pub struct SchedContext<'a> {
    pub now: Instant,
    pub paths: &'a [PathView],
    pub packet_bytes: u64,
    /// Bytes waiting in the send queue, this packet included.
    pub backlog_bytes: u64,
    /// How long a datagram may wait in the send queue before it is dropped.
    pub queue_delay_limit: Duration,
}

pub trait Scheduler: fmt::Debug + Send {
    fn name(&self) -> &'static str;
    fn pick(&mut self, ctx: &SchedContext<'_>) -> Decision;
    /// A periodic loss report from the receiver (every `T_report`), with a
    /// snapshot of the paths.
    fn on_loss_report(&mut self, _now: Instant, _entries: &[LossEntry], _paths: &[PathView]) {}
}

/// What a scheduler needs to know about the paths when it is built.
#[derive(Debug, Clone)]
pub struct PathInfo {
    pub name: String,
    /// Relative monetary cost: finite and positive.
    pub cost: f64,
    /// BATCP's per-path weight of throughput (its cost weight is one minus
    /// it); `None`: the scheduler's own.
    pub weight_throughput: Option<f64>,
    /// An overflow path (paper multipath-bonding-layer3's fixed-line-first
    /// policy): it carries only what the other paths cannot. Only
    /// earliest-arrival honours it; `build` refuses it for the others.
    pub overflow: bool,
}

#[derive(Debug, thiserror::Error)]
pub enum SchedError {
    #[error("unknown scheduler {0:?} (known: {known})", known = NAMES.join(", "))]
    Unknown(String),
    #[error("scheduler {scheduler}: {source}")]
    Param {
        scheduler: &'static str,
        source: ParamError,
    },
    #[error("too many paths: {0} (at most {MAX_PATHS})")]
    TooManyPaths(usize),
    #[error("no paths")]
    NoPaths,
    #[error("scheduler {0} cannot keep a path for overflow (path {1:?}): use earliest-arrival")]
    OverflowUnsupported(&'static str, String),
}

pub const NAMES: &[&str] = &[
    "earliest-arrival",
    "min-rtt",
    "most-free-cwnd",
    "redundant",
    "rr",
    "wrr",
    "batcp",
    "lawrr",
];

/// The default: see BENCHMARKS.md for why.
pub const DEFAULT: &str = "earliest-arrival";

/// Builds a scheduler from `NAME[:key=value,...]`.
pub fn build(spec: &str, paths: &[PathInfo]) -> Result<Box<dyn Scheduler>, SchedError> {
    if paths.is_empty() {
        return Err(SchedError::NoPaths);
    }
    if paths.len() > MAX_PATHS {
        return Err(SchedError::TooManyPaths(paths.len()));
    }
    let (name, rest) = spec.split_once(':').unwrap_or((spec, ""));
    let Some(&name) = NAMES.iter().find(|n| **n == name) else {
        return Err(SchedError::Unknown(name.to_owned()));
    };
    if let Some(p) = paths.iter().find(|p| p.overflow) {
        if name != "earliest-arrival" {
            return Err(SchedError::OverflowUnsupported(name, p.name.clone()));
        }
    }
    let wrap = |source| SchedError::Param {
        scheduler: name,
        source,
    };
    let mut params = Params::parse(rest).map_err(wrap)?;
    let s: Box<dyn Scheduler> = match name {
        "rr" => Box::new(wrr::Wrr::round_robin(paths.len())),
        "wrr" => Box::new(wrr::Wrr::from_params(&mut params, paths.len()).map_err(wrap)?),
        "batcp" => Box::new(batcp::Batcp::from_params(&mut params, paths).map_err(wrap)?),
        "most-free-cwnd" => Box::new(most_free_cwnd::MostFreeCwnd),
        "lawrr" => Box::new(lawrr::LossAdaptiveWrr::from_params(&mut params, paths).map_err(wrap)?),
        "min-rtt" => Box::new(min_rtt::MinRtt),
        "earliest-arrival" => {
            Box::new(earliest_arrival::EarliestArrival::from_params(&mut params).map_err(wrap)?)
        }
        "redundant" => Box::new(redundant::Redundant),
        _ => unreachable!("name comes from NAMES"),
    };
    params.finish().map_err(wrap)?;
    Ok(s)
}

/// The papers' loss-report interval, the default for every scheduler but lawrr.
pub const PAPERS_T_REPORT: Duration = Duration::from_millis(50);

/// The report interval a scheduler spec asks the receiver for (`t_report=`),
/// or that scheduler's default.
pub fn report_interval(spec: &str) -> Result<Duration, ParamError> {
    let (name, rest) = spec.split_once(':').unwrap_or((spec, ""));
    let mut params = Params::parse(rest)?;
    let default = if name == "lawrr" {
        lawrr::DEFAULT_T_REPORT
    } else {
        PAPERS_T_REPORT
    };
    Ok(params.duration("t_report")?.unwrap_or(default))
}

#[cfg(test)]
mod tests;
