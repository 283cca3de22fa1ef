//! The path SPEC language shared by `braid bench` (simulated paths) and
//! `braid lab` (emulated paths in network namespaces):
//!
//! ```text
//! SPEC := RATE,DELAY[,key=value]...  |  trace=FILE,DELAY[,key=value]...
//! keys: jitter=DUR  loss=PCT  ge=P_GB:P_BG[:LOSS_BAD]  queue=DUR|PKTS
//!       blackout=START+LEN (repeatable)  cost=X  name=NAME
//!       role=primary|overflow|backup (how the bond uses the path)
//!       rate_limit=RATE (braid never sends faster on the path)
//!       weight_throughput=W  weight_cost=W (BATCP's per-path weights, summing to 1)
//! ```
//!
//! RATE, DELAY, `trace`, `jitter`, `loss`, `ge` and `queue` may give two
//! values `UP/DOWN`: the first for client-to-server, the second for
//! server-to-client (an asymmetric DSL line is `16mbit/1mbit`). One value
//! applies to both directions. DELAY is one-way. A rate counts IP packet
//! bytes, as a link's speed does, in bits per second with `tc`'s units
//! (`kbit`, `mbit`, `gbit`); a spelling `tc` reads differently (`mbps`,
//! bytes per second) or that could mean either (`8m`, `8mb`) is refused.
//! Durations are `us`, `ms`, `s` or `min`: a bare `m` is mega in a rate.

use std::path::Path;
use std::time::Duration;

use braid_core::session::PathRole;

use crate::trace::{Trace, TraceError};

#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    #[error("empty path spec")]
    Empty,
    #[error("bad rate {0:?}: expected a number with a unit such as 500kbit, 8mbit or 1gbit")]
    Rate(String),
    #[error("bad rate {0:?}: a rate must be positive (at least 1bit)")]
    RateNotPositive(String),
    #[error("bad rate {0:?}: at most 1000gbit")]
    RateTooHigh(String),
    #[error("bad rate {given:?}: {hint}")]
    RateUnit { given: String, hint: String },
    #[error("bad duration {0:?}: expected a number with a unit such as 500us, 20ms, 1.5s or 2min")]
    Duration(String),
    #[error("bad duration {0:?}: \"m\" means mega in rates; write {1}min for minutes or {1}ms for milliseconds")]
    DurationMinutes(String, String),
    #[error("bad duration {0:?}: at most {MAX_DURATION_S} s")]
    DurationTooLong(String),
    #[error("bad percentage {0:?}: expected a value from 0 to 100, such as 1% or 0.5%")]
    Percent(String),
    #[error("bad percentage {given:?}: write the % sign ({hint})")]
    PercentSign { given: String, hint: String },
    #[error("bad queue {0:?}: expected a duration (50ms) or a packet count from 1 to {MAX_QUEUE_PACKETS}")]
    Queue(String),
    #[error("bad blackout {0:?}: expected START+LEN, such as 10s+2s")]
    Blackout(String),
    #[error("bad Gilbert-Elliott loss {0:?}: expected P_GB:P_BG[:LOSS_BAD] in percent, such as 1%:30%:100%")]
    GilbertElliott(String),
    #[error("bad Gilbert-Elliott loss {0:?}: P_BG, the chance per packet of leaving the bad state, must be above 0% (at 0% the path never leaves it)")]
    GilbertElliottStuck(String),
    #[error("bad cost {0:?}: expected a positive number")]
    Cost(String),
    #[error(
        "bad weight {0:?}: weight_throughput and weight_cost are numbers from 0 to 1 that sum to 1"
    )]
    Weight(String),
    #[error("bad name {0:?}: use 1-15 letters, digits, '-' or '_'")]
    Name(String),
    #[error("bad role {0:?}: expected primary, overflow or backup")]
    Role(String),
    #[error("unknown key {0:?} (known: jitter, loss, ge, queue, blackout, cost, weight_throughput, weight_cost, name, role, rate_limit)")]
    UnknownKey(String),
    #[error("{0:?} has no value: write it as key=value (jitter=3ms, loss=1%, ...)")]
    NoValue(String),
    #[error("{0} given twice")]
    Duplicate(&'static str),
    #[error("missing one-way delay: a spec starts RATE,DELAY or trace=FILE,DELAY")]
    MissingDelay,
    #[error("too many values in {0:?}: at most UP/DOWN")]
    TooManyDirections(String),
    #[error(transparent)]
    Trace(#[from] TraceError),
}

/// Where a direction's capacity comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum Capacity {
    /// Constant rate in bits per second of IP packets.
    Rate { bps: u64 },
    /// Delivery opportunities replayed from a trace.
    Trace(Trace),
}

/// Bursty loss: a two-state Markov chain (good/bad) evaluated per packet.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GilbertElliott {
    /// Probability of moving from good to bad, per packet.
    pub p_good_to_bad: f64,
    /// Probability of moving from bad to good, per packet.
    pub p_bad_to_good: f64,
    /// Loss probability while in the bad state.
    pub loss_in_bad: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueLimit {
    /// Drop-tail once the queue holds this much transmission time.
    Time(Duration),
    Packets(usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Blackout {
    pub start: Duration,
    pub len: Duration,
}

impl Blackout {
    pub fn contains(&self, t: Duration) -> bool {
        t >= self.start && t < self.start + self.len
    }
}

/// One direction of a path.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkSpec {
    pub capacity: Capacity,
    pub delay: Duration,
    pub jitter: Duration,
    /// Independent random loss probability, 0..=1.
    pub loss: f64,
    pub burst_loss: Option<GilbertElliott>,
    /// `None`: the default, one bandwidth-delay product (at least 20 ms / 10 packets).
    pub queue: Option<QueueLimit>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PathSpec {
    pub name: Option<String>,
    /// Client to server.
    pub up: LinkSpec,
    /// Server to client.
    pub down: LinkSpec,
    /// Blackout windows (both directions drop everything), from run start.
    pub blackouts: Vec<Blackout>,
    /// Relative monetary cost of the path (default 1).
    pub cost: f64,
    /// BATCP's weight of throughput against cost for this path (its cost
    /// weight is one minus it); `None`: the scheduler's `cost_weight`.
    pub weight_throughput: Option<f64>,
    /// How the bond uses the path (default primary).
    pub role: PathRole,
    /// braid's own cap on what it sends on the path (client to server),
    /// bits per second; the link's capacity stays as given.
    pub rate_limit_bps: Option<u64>,
}

/// A path's `name=`: 1-15 letters, digits, '-' or '_', so that it can
/// name an interface.
pub fn parse_path_name(value: &str) -> Result<String, SpecError> {
    let ok = (1..=15).contains(&value.len())
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if !ok {
        return Err(SpecError::Name(value.to_owned()));
    }
    Ok(value.to_owned())
}

impl PathSpec {
    /// The path's name, or `p{index+1}` when the spec gives none.
    pub fn name_or_default(&self, index: usize) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| format!("p{}", index + 1))
    }

    /// Time within `[from, to)` not covered by any blackout.
    pub fn open_time(&self, from: Duration, to: Duration) -> Duration {
        let mut windows: Vec<(Duration, Duration)> = self
            .blackouts
            .iter()
            .map(|b| (b.start.max(from), (b.start + b.len).min(to)))
            .filter(|(s, e)| s < e)
            .collect();
        windows.sort();
        let mut dark = Duration::ZERO;
        let mut cursor = from;
        for (s, e) in windows {
            let s = s.max(cursor);
            if e > s {
                dark += e - s;
                cursor = e;
            }
        }
        to.saturating_sub(from).saturating_sub(dark)
    }

    /// Up-direction capacity in bits/s averaged over `[from, to)`, blackouts
    /// counting as zero.
    pub fn up_capacity_bps(&self, from: Duration, to: Duration) -> f64 {
        let total = to.saturating_sub(from);
        if total.is_zero() {
            return 0.0;
        }
        match &self.up.capacity {
            Capacity::Rate { bps } => {
                *bps as f64 * self.open_time(from, to).as_secs_f64() / total.as_secs_f64()
            }
            Capacity::Trace(t) => {
                // Count the trace's opportunities only in the open windows.
                let mut bits = 0u64;
                let mut cursor = from;
                let mut edges: Vec<Blackout> = self.blackouts.clone();
                edges.sort_by_key(|b| b.start);
                for b in edges {
                    let s = b.start.clamp(cursor, to);
                    bits +=
                        t.opportunities_between(cursor, s) * crate::trace::OPPORTUNITY_BYTES * 8;
                    cursor = cursor.max((b.start + b.len).min(to));
                }
                bits += t.opportunities_between(cursor, to) * crate::trace::OPPORTUNITY_BYTES * 8;
                bits as f64 / total.as_secs_f64()
            }
        }
    }

    /// Parses a SPEC. Trace files named in it are read at once, relative to
    /// the working directory.
    pub fn parse(spec: &str) -> Result<PathSpec, SpecError> {
        PathSpec::parse_with(spec, Trace::load)
    }

    /// Parses a SPEC, loading trace files with `load`.
    pub fn parse_with(
        spec: &str,
        mut load: impl FnMut(&Path) -> Result<Trace, TraceError>,
    ) -> Result<PathSpec, SpecError> {
        let mut fields = spec.split(',').map(str::trim);
        let first = fields
            .next()
            .filter(|f| !f.is_empty())
            .ok_or(SpecError::Empty)?;
        let (cap_up, cap_down) = if let Some(files) = first.strip_prefix("trace=") {
            let (tu, td) = load_traces(files, &mut load)?;
            (Capacity::Trace(tu), Capacity::Trace(td))
        } else {
            let (u, d) = split_dir(first)?;
            (
                Capacity::Rate {
                    bps: parse_rate(u)?,
                },
                Capacity::Rate {
                    bps: parse_rate(d)?,
                },
            )
        };
        let delay_field = fields
            .next()
            .filter(|f| !f.contains('='))
            .ok_or(SpecError::MissingDelay)?;
        let (du, dd) = split_dir(delay_field)?;
        let mut up = LinkSpec::new(cap_up, parse_duration(du)?);
        let mut down = LinkSpec::new(cap_down, parse_duration(dd)?);
        let mut name = None;
        let mut role = PathRole::Primary;
        let mut rate_limit_bps = None;
        let mut cost = None;
        let mut weight_throughput = None;
        let mut weight_cost = None;
        let mut blackouts = Vec::new();
        let mut seen = Vec::new();
        for field in fields {
            let (key, value) = field
                .split_once('=')
                .ok_or_else(|| SpecError::NoValue(field.to_owned()))?;
            let key_static: &'static str = match key {
                "jitter" => "jitter",
                "loss" => "loss",
                "ge" => "ge",
                "queue" => "queue",
                "cost" => "cost",
                "weight_throughput" => "weight_throughput",
                "weight_cost" => "weight_cost",
                "name" => "name",
                "role" => "role",
                "rate_limit" => "rate_limit",
                "blackout" => "blackout",
                other => return Err(SpecError::UnknownKey(other.to_owned())),
            };
            if key_static != "blackout" {
                if seen.contains(&key_static) {
                    return Err(SpecError::Duplicate(key_static));
                }
                seen.push(key_static);
            }
            match key_static {
                "jitter" => {
                    let (u, d) = split_dir(value)?;
                    up.jitter = parse_duration(u)?;
                    down.jitter = parse_duration(d)?;
                }
                "loss" => {
                    let (u, d) = split_dir(value)?;
                    up.loss = parse_percent(u)?;
                    down.loss = parse_percent(d)?;
                }
                "ge" => {
                    let (u, d) = split_dir(value)?;
                    up.burst_loss = Some(parse_ge(u)?);
                    down.burst_loss = Some(parse_ge(d)?);
                }
                "queue" => {
                    let (u, d) = split_dir(value)?;
                    up.queue = Some(parse_queue(u)?);
                    down.queue = Some(parse_queue(d)?);
                }
                "cost" => {
                    let c: f64 = value
                        .parse()
                        .map_err(|_| SpecError::Cost(value.to_owned()))?;
                    if !(c.is_finite() && c > 0.0) {
                        return Err(SpecError::Cost(value.to_owned()));
                    }
                    cost = Some(c);
                }
                "weight_throughput" | "weight_cost" => {
                    let w: f64 = value
                        .parse()
                        .ok()
                        .filter(|w: &f64| (0.0..=1.0).contains(w))
                        .ok_or_else(|| SpecError::Weight(value.to_owned()))?;
                    if key_static == "weight_cost" {
                        weight_cost = Some(w);
                    } else {
                        weight_throughput = Some(w);
                    }
                }
                "name" => name = Some(parse_path_name(value)?),
                "rate_limit" => rate_limit_bps = Some(parse_rate(value)?),
                "role" => {
                    role = match value {
                        "primary" => PathRole::Primary,
                        "overflow" => PathRole::Overflow,
                        "backup" => PathRole::Backup,
                        _ => return Err(SpecError::Role(value.to_owned())),
                    };
                }
                _ => blackouts.push(parse_blackout(value)?),
            }
        }
        let weight_throughput = match (weight_throughput, weight_cost) {
            (Some(t), Some(c)) if (t + c - 1.0).abs() > 1e-9 => {
                return Err(SpecError::Weight(format!(
                    "weight_throughput={t},weight_cost={c}"
                )));
            }
            (Some(t), _) => Some(t),
            (None, c) => c.map(|c| 1.0 - c),
        };
        Ok(PathSpec {
            name,
            up,
            down,
            blackouts,
            cost: cost.unwrap_or(1.0),
            weight_throughput,
            role,
            rate_limit_bps,
        })
    }
}

impl LinkSpec {
    fn new(capacity: Capacity, delay: Duration) -> LinkSpec {
        LinkSpec {
            capacity,
            delay,
            jitter: Duration::ZERO,
            loss: 0.0,
            burst_loss: None,
            queue: None,
        }
    }

    /// The configured or default queue limit in bytes at `rate_bps`:
    /// default one bandwidth-delay product of the round trip, at least 20 ms.
    pub fn queue_limit_bytes(&self, rate_bps: f64, rtt: Duration, mtu: usize) -> usize {
        let bytes_for = |d: Duration| (rate_bps * d.as_secs_f64() / 8.0) as usize;
        match self.queue {
            Some(QueueLimit::Packets(n)) => n.saturating_mul(mtu),
            Some(QueueLimit::Time(d)) => bytes_for(d).max(mtu),
            None => bytes_for(rtt.max(Duration::from_millis(20))).max(10 * mtu),
        }
    }
}

/// `trace=FILE` or `trace=UP_FILE/DOWN_FILE`. File names contain `/`
/// too, so the whole value is tried as one file first, then each `/` as the
/// split between two files.
fn load_traces(
    value: &str,
    load: &mut impl FnMut(&Path) -> Result<Trace, TraceError>,
) -> Result<(Trace, Trace), SpecError> {
    let whole_err = match load(Path::new(value)) {
        Ok(t) => return Ok((t.clone(), t)),
        Err(e) => e,
    };
    for (i, _) in value.match_indices('/') {
        let (u, d) = (&value[..i], &value[i + 1..]);
        if u.is_empty() || d.is_empty() {
            continue;
        }
        if let (Ok(tu), Ok(td)) = (load(Path::new(u)), load(Path::new(d))) {
            return Ok((tu, td));
        }
    }
    Err(whole_err.into())
}

fn split_dir(value: &str) -> Result<(&str, &str), SpecError> {
    let mut parts = value.split('/');
    let up = parts.next().unwrap_or("");
    let down = parts.next().unwrap_or(up);
    if parts.next().is_some() {
        return Err(SpecError::TooManyDirections(value.to_owned()));
    }
    Ok((up, down))
}

fn split_number(s: &str) -> (&str, &str) {
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    (&s[..end], &s[end..])
}

/// The largest rate a SPEC or traffic may give, in bit/s.
pub const MAX_RATE_BPS: u64 = 1_000_000_000_000;

/// The longest duration a SPEC, traffic or run may give, in seconds.
pub const MAX_DURATION_S: u64 = 10_000_000;

/// The largest queue a SPEC may give in packets (`queue=N`).
pub const MAX_QUEUE_PACKETS: usize = 100_000;

/// Parses `9600bit`, `500kbit`, `8mbit`, `1.5gbit` or `1tbit`: bits per
/// second, as `tc` writes them. Units that `tc` reads as bytes per second
/// (`mbps`) and bare prefixes (`8m`, `8mb`) are refused with what to write,
/// so that no spelling means a different rate here and in `tc`.
pub fn parse_rate(s: &str) -> Result<u64, SpecError> {
    let err = || SpecError::Rate(s.to_owned());
    let (num, unit) = split_number(s.trim());
    let n: f64 = num.parse().map_err(|_| err())?;
    let unit = unit.to_ascii_lowercase();
    let mult = match unit.as_str() {
        "bit" => 1.0,
        "kbit" => 1e3,
        "mbit" => 1e6,
        "gbit" => 1e9,
        "tbit" => 1e12,
        _ => return Err(rate_unit_error(s, num, &unit).unwrap_or_else(err)),
    };
    let bps = n * mult;
    if !bps.is_finite() {
        return Err(err());
    }
    if bps < 1.0 {
        return Err(SpecError::RateNotPositive(s.to_owned()));
    }
    if bps > MAX_RATE_BPS as f64 {
        return Err(SpecError::RateTooHigh(s.to_owned()));
    }
    Ok(bps.round() as u64)
}

/// A hint for a rate unit that other tools read differently, if `unit` is one.
fn rate_unit_error(given: &str, num: &str, unit: &str) -> Option<SpecError> {
    let prefix = unit.trim_end_matches("ps").trim_end_matches('b');
    if unit.is_empty() || !matches!(prefix, "" | "k" | "m" | "g" | "t") {
        return None;
    }
    let bits = format!("{num}{prefix}bit");
    let hint = if unit.ends_with("bps") {
        format!(
            "tc reads {unit:?} as bytes per second and braid does not guess; \
             write {bits} for bits per second"
        )
    } else {
        format!("{unit:?} could mean bits or bytes; write {bits} for bits per second")
    };
    Some(SpecError::RateUnit {
        given: given.to_owned(),
        hint,
    })
}

/// Parses `0`, `250us`, `20ms`, `1.5s`, `2min`. A bare `m` is refused:
/// in rates it means mega.
pub fn parse_duration(s: &str) -> Result<Duration, SpecError> {
    let err = || SpecError::Duration(s.to_owned());
    let (num, unit) = split_number(s.trim());
    let n: f64 = num.parse().map_err(|_| err())?;
    let secs = match unit {
        "us" => n / 1e6,
        "ms" => n / 1e3,
        "s" => n,
        "min" => n * 60.0,
        "m" => return Err(SpecError::DurationMinutes(s.to_owned(), num.to_owned())),
        "" if n == 0.0 => 0.0,
        _ => return Err(err()),
    };
    if !(secs.is_finite() && secs >= 0.0) {
        return Err(err());
    }
    if secs > MAX_DURATION_S as f64 {
        return Err(SpecError::DurationTooLong(s.to_owned()));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Parses `1%`, `0.5%` or a bare percentage `1` into a probability.
/// A percentage, `%` included (`1%`, `0.5%`): a bare `0.05` could mean
/// 0.05 % or 5 % (a fraction), so only `0` may go without it.
pub fn parse_percent(s: &str) -> Result<f64, SpecError> {
    let s = s.trim();
    let (number, sign) = match s.strip_suffix('%') {
        Some(n) => (n, true),
        None => (s, false),
    };
    let v: f64 = number
        .parse()
        .map_err(|_| SpecError::Percent(s.to_owned()))?;
    if !(0.0..=100.0).contains(&v) {
        return Err(SpecError::Percent(s.to_owned()));
    }
    if !sign && v != 0.0 {
        let hint = if v < 1.0 {
            format!(
                "{s}% for {s} percent, {}% for a fraction {s} of the packets",
                v * 100.0
            )
        } else {
            format!("{s}%")
        };
        return Err(SpecError::PercentSign {
            given: s.to_owned(),
            hint,
        });
    }
    Ok(v / 100.0)
}

fn parse_queue(s: &str) -> Result<QueueLimit, SpecError> {
    if s.chars().all(|c| c.is_ascii_digit()) {
        let n: usize = s.parse().map_err(|_| SpecError::Queue(s.to_owned()))?;
        if n == 0 || n > MAX_QUEUE_PACKETS {
            return Err(SpecError::Queue(s.to_owned()));
        }
        return Ok(QueueLimit::Packets(n));
    }
    let d = parse_duration(s).map_err(|_| SpecError::Queue(s.to_owned()))?;
    if d.is_zero() {
        return Err(SpecError::Queue(s.to_owned()));
    }
    Ok(QueueLimit::Time(d))
}

fn parse_blackout(s: &str) -> Result<Blackout, SpecError> {
    let err = || SpecError::Blackout(s.to_owned());
    let (a, b) = s.split_once('+').ok_or_else(err)?;
    let start = parse_duration(a).map_err(|_| err())?;
    let len = parse_duration(b).map_err(|_| err())?;
    if len.is_zero() {
        return Err(err());
    }
    Ok(Blackout { start, len })
}

fn parse_ge(s: &str) -> Result<GilbertElliott, SpecError> {
    let err = || SpecError::GilbertElliott(s.to_owned());
    let parts: Vec<&str> = s.split(':').collect();
    if !(2..=3).contains(&parts.len()) {
        return Err(err());
    }
    let p = |x: &str| parse_percent(x).map_err(|_| err());
    let ge = GilbertElliott {
        p_good_to_bad: p(parts[0])?,
        p_bad_to_good: p(parts[1])?,
        loss_in_bad: parts.get(2).map(|x| p(x)).transpose()?.unwrap_or(1.0),
    };
    if ge.p_bad_to_good == 0.0 {
        return Err(SpecError::GilbertElliottStuck(s.to_owned()));
    }
    Ok(ge)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Pretends every file whose name has no '/' exists.
    fn no_traces(p: &Path) -> Result<Trace, TraceError> {
        let name = p.display().to_string();
        if name.contains('/') {
            return Err(TraceError::Io {
                path: p.to_owned(),
                source: std::io::ErrorKind::NotFound.into(),
            });
        }
        Ok(Trace::parse(&name, "1\n2\n").unwrap())
    }

    #[test]
    fn full_spec() {
        let s = PathSpec::parse_with(
            "16mbit/1mbit,10ms,jitter=2ms,loss=1%/0.5%,queue=50ms,blackout=5s+1s,blackout=9s+500ms,cost=3,name=dsl",
            no_traces,
        )
        .unwrap();
        assert_eq!(s.up.capacity, Capacity::Rate { bps: 16_000_000 });
        assert_eq!(s.down.capacity, Capacity::Rate { bps: 1_000_000 });
        assert_eq!(s.up.delay, Duration::from_millis(10));
        assert_eq!(s.down.jitter, Duration::from_millis(2));
        assert!((s.up.loss - 0.01).abs() < 1e-12 && (s.down.loss - 0.005).abs() < 1e-12);
        assert_eq!(
            s.up.queue,
            Some(QueueLimit::Time(Duration::from_millis(50)))
        );
        assert_eq!(s.blackouts.len(), 2);
        assert_eq!(s.cost, 3.0);
        assert_eq!(s.name.as_deref(), Some("dsl"));
        assert_eq!(s.name_or_default(0), "dsl");
    }

    #[test]
    fn trace_spec_and_defaults() {
        let s = PathSpec::parse_with("trace=a.up/a.down,20ms", no_traces).unwrap();
        assert!(matches!(&s.up.capacity, Capacity::Trace(t) if t.name() == "a.up"));
        assert!(matches!(&s.down.capacity, Capacity::Trace(t) if t.name() == "a.down"));
        assert_eq!(s.name_or_default(1), "p2");
        assert_eq!(s.cost, 1.0);
        assert_eq!(s.up.queue, None);
    }

    #[test]
    fn units() {
        assert_eq!(parse_rate("500kbit").unwrap(), 500_000);
        assert_eq!(parse_rate("8Mbit").unwrap(), 8_000_000);
        assert_eq!(parse_rate("1gbit").unwrap(), 1_000_000_000);
        assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
        assert!(parse_duration("10").is_err());
        assert!(parse_rate("fast").is_err());
        assert!(parse_percent("101%").is_err());
    }

    /// `loss=0.05` could mean 0.05 % or a fraction 0.05 (5 %): refused
    /// with both readings spelled out; only 0 needs no sign.
    #[test]
    fn a_percentage_needs_its_sign() {
        assert_eq!(parse_percent("0.5%").unwrap(), 0.005);
        assert_eq!(parse_percent("0").unwrap(), 0.0);
        assert_eq!(parse_percent("0%").unwrap(), 0.0);
        assert_eq!(
            parse_percent("0.05").unwrap_err().to_string(),
            "bad percentage \"0.05\": write the % sign (0.05% for 0.05 percent, 5% for a fraction 0.05 of the packets)"
        );
        assert_eq!(
            parse_percent("5").unwrap_err().to_string(),
            "bad percentage \"5\": write the % sign (5%)"
        );
        assert!(matches!(
            parse_ge("1:30%"),
            Err(SpecError::GilbertElliott(g)) if g == "1:30%"
        ));
        assert!(matches!(parse_percent("200"), Err(SpecError::Percent(_))));
    }

    /// A bad state the path never leaves is refused as such, not with the
    /// grammar, which the spec does follow.
    #[test]
    fn a_bad_state_without_exit_is_refused_by_name() {
        for ge in ["0%:0%", "100%:0%", "1%:0%:50%"] {
            let e = parse_ge(ge).unwrap_err();
            assert!(
                matches!(&e, SpecError::GilbertElliottStuck(g) if g == ge),
                "{ge}: {e}"
            );
            assert!(e.to_string().contains("P_BG"), "{e}");
        }
        assert!(parse_ge("0%:1%").is_ok());
    }

    #[test]
    fn rates_mean_what_tc_means_or_are_refused() {
        assert_eq!(parse_rate("1tbit").unwrap(), 1_000_000_000_000);
        assert_eq!(parse_rate("9600bit").unwrap(), 9600);
        for (given, says) in [
            ("8mbps", "write 8mbit"),
            ("8MBps", "write 8mbit"),
            ("8mb", "write 8mbit"),
            ("8m", "write 8mbit"),
            ("500k", "write 500kbit"),
            ("1gbps", "write 1gbit"),
            ("64bps", "write 64bit"),
            ("0mbit", "must be positive"),
            ("0", "unit"),
            ("1001gbit", "at most 1000gbit"),
        ] {
            let e = parse_rate(given).unwrap_err().to_string();
            assert!(e.contains(says), "{given}: {e}");
        }
    }

    #[test]
    fn durations_have_one_minute_unit() {
        assert_eq!(parse_duration("2min").unwrap(), Duration::from_secs(120));
        let e = parse_duration("2m").unwrap_err().to_string();
        assert!(e.contains("2min") && e.contains("2ms"), "{e}");
        assert!(parse_duration("10000000s").is_ok());
        let e = parse_duration("10000001s").unwrap_err().to_string();
        assert!(e.contains("at most"), "{e}");
    }

    #[test]
    fn huge_queue_is_refused_not_wrapped() {
        for q in ["12297829382473034411", "100001", "99999999999999999999999"] {
            let e = PathSpec::parse_with(&format!("8mbit,10ms,queue={q}"), no_traces).unwrap_err();
            assert!(e.to_string().contains("100000"), "{q}: {e}");
        }
        let s = PathSpec::parse_with("8mbit,10ms,queue=100000", no_traces).unwrap();
        assert_eq!(
            s.up.queue_limit_bytes(8e6, Duration::from_millis(20), 1500),
            150_000_000
        );
    }

    #[test]
    fn roles_parse_and_default_to_primary() {
        let role = |s: &str| PathSpec::parse_with(s, no_traces).map(|p| p.role);
        assert_eq!(role("8mbit,10ms").unwrap(), PathRole::Primary);
        assert_eq!(role("8mbit,10ms,role=primary").unwrap(), PathRole::Primary);
        assert_eq!(
            role("8mbit,10ms,role=overflow").unwrap(),
            PathRole::Overflow
        );
        assert_eq!(role("8mbit,10ms,role=backup").unwrap(), PathRole::Backup);
        let e = role("8mbit,10ms,role=spare").unwrap_err().to_string();
        assert!(e.contains("primary, overflow or backup"), "{e}");
        assert!(role("8mbit,10ms,role=backup,role=primary").is_err());
    }

    #[test]
    fn rate_limit_is_a_rate() {
        let limit = |s: &str| PathSpec::parse_with(s, no_traces).map(|p| p.rate_limit_bps);
        assert_eq!(limit("8mbit,10ms").unwrap(), None);
        assert_eq!(
            limit("8mbit,10ms,rate_limit=2mbit").unwrap(),
            Some(2_000_000)
        );
        assert!(limit("8mbit,10ms,rate_limit=2mbps").is_err());
        assert!(limit("8mbit,10ms,rate_limit=0").is_err());
    }

    #[test]
    fn errors_are_values() {
        for bad in [
            "",
            "8mbit",
            "8mbit,10ms,color=red",
            "8mbit,10ms,loss=1%,loss=2%",
            "8mbit,10ms,blackout=5s",
            "8mbit,10ms,queue=0",
            "8mbit,10ms,name=has space",
            "8mbit,10ms,cost=-1",
            "1/2/3mbit,10ms",
            "8mbit,10ms,ge=1%",
            "8mbit,xx",
        ] {
            assert!(
                PathSpec::parse_with(bad, no_traces).is_err(),
                "{bad:?} parsed"
            );
        }
        let missing = PathSpec::parse("trace=/nonexistent/trace,10ms").unwrap_err();
        assert!(
            missing.to_string().contains("/nonexistent/trace"),
            "{missing}"
        );
    }

    #[test]
    fn trace_paths_with_slashes() {
        let dir = std::env::temp_dir().join(format!("braid-spec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("up"), "1\n").unwrap();
        std::fs::write(dir.join("down"), "1\n2\n").unwrap();
        let (up, down) = (dir.join("up"), dir.join("down"));
        let one = PathSpec::parse(&format!("trace={},5ms", up.display())).unwrap();
        assert_eq!(one.up.capacity, one.down.capacity);
        let two =
            PathSpec::parse(&format!("trace={}/{},5ms", up.display(), down.display())).unwrap();
        assert!(matches!(&two.down.capacity, Capacity::Trace(t) if t.name() == "down"));
        assert!(matches!(&two.up.capacity, Capacity::Trace(t) if t.name() == "up"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn blackout_capacity_counts_as_zero() {
        let s = PathSpec::parse_with("10mbit,5ms,blackout=2s+1s,blackout=2500ms+1s", no_traces)
            .unwrap();
        let c = s.up_capacity_bps(Duration::ZERO, Duration::from_secs(10));
        assert!((c - 8.5e6).abs() < 1.0, "{c}");
    }
}
