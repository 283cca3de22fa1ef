//! Data caps: a client path with `data_cap = "50GB/month"` counts the bytes
//! it carries in the current UTC day or month; at the cap it is demoted to
//! role backup (through the session, which tells the server) until the
//! period ends, then restored to its configured role.
//!
//! A path's usage is what `braid status` calls `bytes_used`: UDP payload
//! bytes, sent plus received (handshakes, probes and feedback included;
//! the outer IP and UDP headers, 28 or 48 bytes a datagram, are not). It
//! is read from the session once a second, so a path may overshoot its cap
//! by up to a second of traffic, and saved to the usage file
//! ([`usage_file`]) every minute, on every demotion or restoration, and at
//! exit: a crash loses at most a minute of counting.
//!
//! Periods only move forward: a wall clock that steps back (a router
//! without a battery-backed clock boots in 1970, then NTP sets it) keeps
//! the period already under way and its usage.

pub mod period;
mod usage_file;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use braid_core::session::{PathRole, Session};
use braid_core::time::Instant;
use serde_json::{json, Value};
use tracing::{info, warn};

use crate::config::DataCap;
use period::Bounds;
use usage_file::{Loaded, SavedUsage};

/// How often usage is read from the session.
const UPDATE_INTERVAL: Duration = Duration::from_secs(1);
/// How often the usage file is written when nothing changed a role.
const SAVE_INTERVAL: Duration = Duration::from_secs(60);

/// A role change a cap asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// The cap is reached: demote the path to backup.
    Reached,
    /// A new period began: restore the configured role.
    Restored,
}

/// One path's cap and its usage in the current period.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathCap {
    cap: DataCap,
    bounds: Bounds,
    /// Bytes used in `bounds`.
    used: u64,
    /// The session's byte count for the path when last read.
    seen: u64,
    demoted: bool,
}

impl PathCap {
    /// A cap counted from Unix second `t`, going on from `saved` usage
    /// when it belongs to the current period (or a later one: the clock
    /// is behind). A fresh session has counted nothing yet.
    pub fn new(cap: DataCap, saved: Option<SavedUsage>, t: u64) -> PathCap {
        let current = period::bounds(cap.period, t);
        let (bounds, used) = match saved {
            Some(s) if s.period == cap.period && s.period_start >= current.start => {
                (period::bounds(cap.period, s.period_start), s.used_bytes)
            }
            _ => (current, 0),
        };
        PathCap {
            cap,
            bounds,
            used,
            seen: 0,
            demoted: false,
        }
    }

    /// Counts the path's bytes so far in this session (`session_bytes`,
    /// sent plus received) at Unix second `t`; returns the role change to
    /// carry out, if any. Bytes since the last call count in the period
    /// that was under way.
    pub fn update(&mut self, t: u64, session_bytes: u64) -> Option<Change> {
        let delta = session_bytes.saturating_sub(self.seen);
        self.seen = session_bytes;
        self.used = self.used.saturating_add(delta);
        if t >= self.bounds.end {
            self.bounds = period::bounds(self.cap.period, t);
            self.used = 0;
        }
        let over = self.used >= self.cap.bytes;
        match (self.demoted, over) {
            (false, true) => {
                self.demoted = true;
                Some(Change::Reached)
            }
            (true, false) => {
                self.demoted = false;
                Some(Change::Restored)
            }
            _ => None,
        }
    }

    pub fn saved(&self) -> SavedUsage {
        SavedUsage {
            period: self.cap.period,
            period_start: self.bounds.start,
            used_bytes: self.used,
        }
    }

    /// The `data_cap` object of a path in `braid status --json`.
    pub fn status(&self) -> Value {
        json!({
            "cap_bytes": self.cap.bytes,
            "period": self.cap.period,
            "used_bytes": self.used,
            "period_start": period::utc_text(self.bounds.start),
            "period_end": period::utc_text(self.bounds.end),
            "demoted": self.demoted,
        })
    }
}

/// A capped path of the session.
#[derive(Debug)]
struct CappedPath {
    index: u8,
    name: String,
    /// The role the config gives it, restored after a demotion.
    role: PathRole,
    cap: PathCap,
}

/// Every capped path of a client, and the usage file.
#[derive(Debug)]
pub struct DataCaps {
    file: PathBuf,
    paths: Vec<CappedPath>,
    next_update: Instant,
    next_save: Instant,
}

/// A path as [`DataCaps::start`] needs it: name, configured role, cap.
pub struct PathSetup {
    pub name: String,
    pub role: PathRole,
    pub cap: Option<DataCap>,
}

impl DataCaps {
    /// Reads the usage file and writes it back at once (so that a file the
    /// daemon cannot write fails now, not at the first save). `None` when
    /// no path has a cap. `t`: the wall clock, Unix seconds.
    pub fn start(file: PathBuf, paths: &[PathSetup], t: u64) -> Result<Option<DataCaps>, String> {
        if paths.iter().all(|p| p.cap.is_none()) {
            return Ok(None);
        }
        let saved = match usage_file::load(&file)
            .map_err(|e| format!("usage file {e} (set usage_file in the config)"))?
        {
            Loaded::Missing => BTreeMap::new(),
            Loaded::Usage(saved) => saved,
            Loaded::Corrupt { reason, moved_to } => {
                warn!(
                    file = %file.display(),
                    moved_to = %moved_to.display(),
                    "usage file unreadable ({reason}): data caps count from zero"
                );
                BTreeMap::new()
            }
        };
        let paths = paths
            .iter()
            .enumerate()
            .filter_map(|(i, p)| {
                let cap = p.cap?;
                Some(CappedPath {
                    index: u8::try_from(i).ok()?,
                    name: p.name.clone(),
                    role: p.role,
                    cap: PathCap::new(cap, saved.get(&p.name).copied(), t),
                })
            })
            .collect();
        let caps = DataCaps {
            file,
            paths,
            next_update: Instant::ZERO,
            next_save: Instant::ZERO,
        };
        caps.write()
            .map_err(|e| format!("usage file {e} (set usage_file in the config)"))?;
        Ok(Some(caps))
    }

    /// When [`DataCaps::handle_timeout`] next has work.
    pub fn poll_timeout(&self) -> Instant {
        self.next_update
    }

    /// Reads usage from `session` and demotes or restores paths; `t` is
    /// the wall clock, Unix seconds.
    pub fn handle_timeout(&mut self, now: Instant, t: u64, session: &mut Session) {
        if now < self.next_update {
            return;
        }
        self.next_update = now + UPDATE_INTERVAL;
        let stats = session.stats(now);
        let mut changed = false;
        for p in &mut self.paths {
            let Some(s) = stats.paths.get(usize::from(p.index)) else {
                continue;
            };
            let change = p.cap.update(t, s.tx_bytes.saturating_add(s.rx_bytes));
            let (role, what) = match change {
                None => continue,
                Some(Change::Reached) => (PathRole::Backup, "reached"),
                Some(Change::Restored) => (p.role, "period over"),
            };
            changed = true;
            let saved = p.cap.saved();
            let until = period::utc_text(p.cap.bounds.end);
            match change {
                Some(Change::Reached) => info!(
                    path = p.name,
                    used_bytes = saved.used_bytes,
                    cap_bytes = p.cap.cap.bytes,
                    "data cap {what}: path demoted to backup until {until}"
                ),
                _ => info!(
                    path = p.name,
                    "data cap {what}: path restored to {} until {until}",
                    role.name()
                ),
            }
            if let Err(e) = session.set_path_role(now, p.index, role) {
                warn!(path = p.name, "data cap: role not changed: {e}");
            }
        }
        if changed || now >= self.next_save {
            self.save(now);
        }
    }

    /// Writes the usage file now (and at exit); a failure is logged.
    pub fn save(&mut self, now: Instant) {
        self.next_save = now + SAVE_INTERVAL;
        if let Err(e) = self.write() {
            warn!("usage file not saved: {e}");
        }
    }

    fn write(&self) -> std::io::Result<()> {
        let usage = self
            .paths
            .iter()
            .map(|p| (p.name.clone(), p.cap.saved()))
            .collect();
        usage_file::save(&self.file, &usage)
    }

    /// Path `index`'s cap for `braid status`, if it has one.
    pub fn status(&self, index: usize) -> Option<Value> {
        self.paths
            .iter()
            .find(|p| usize::from(p.index) == index)
            .map(|p| p.cap.status())
    }
}

#[cfg(test)]
mod tests;
