//! What a run measured, in the units docs/DESIGN.md reports results in:
//! goodput and in-order goodput against the ideal, application loss,
//! resequencing delay, longest in-order stall, and per-path figures.

use std::time::Duration;

use braid_core::path::{PathCounters, PathSender};
use braid_core::reseq::{Delivery, ReseqCounters};
use braid_core::sender::{Sender, SenderCounters};
use braid_core::stream::StreamCounters;
use hdrhistogram::Histogram;
use serde::Serialize;

use crate::clock::ClockSpec;
use crate::link::{Link, LinkCounters};
use crate::reuse::{ReuseSummary, ReuseTracker};
use crate::series::Binned;
use crate::session_run::SessionReport;
use crate::sim::Scenario;

/// Significant decimal digits the latency and reorder-delay histograms keep:
/// a percentile is within 0.01 % of the exact sample (0.1 ms at 1000 s),
/// below the 0.1 ms the tables print for any delay under a second.
const SIGNIFICANT_DIGITS: u8 = 4;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Percentiles {
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

/// Delays of delivered packets in microseconds, in a streaming histogram
/// whose size grows with the logarithm of the largest delay, not with the
/// number of packets.
#[derive(Debug)]
pub(crate) struct Distribution {
    histogram: Histogram<u64>,
    max_us: u64,
}

impl Distribution {
    pub(crate) fn new() -> Distribution {
        Distribution {
            histogram: Histogram::new(SIGNIFICANT_DIGITS).expect("4 digits are in range"),
            max_us: 0,
        }
    }

    pub(crate) fn record(&mut self, d: Duration) {
        let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        // The histogram widens itself to the value (a few more buckets per
        // doubling); only a value past what it can ever hold is clamped.
        if self.histogram.record(us).is_err() {
            self.histogram.saturating_record(us);
        }
        self.max_us = self.max_us.max(us);
    }

    /// `None` when nothing was recorded: no delivery, no delay to report.
    pub(crate) fn percentiles(&self) -> Option<Percentiles> {
        if self.histogram.is_empty() {
            return None;
        }
        // The sample of rank round((n - 1) q), as a sorted list of every
        // sample gives it (the rank hdrhistogram's own quantile picks can
        // differ by one, which moves a sparse tail's p99 by milliseconds),
        // reported as the middle of its bucket: at most half the bucket
        // width from the exact value, either way.
        let n = self.histogram.len();
        let at = |q: f64| {
            let rank = ((n - 1) as f64 * q).round() as u64;
            let mut below = 0u64;
            let value = self
                .histogram
                .iter_recorded()
                .find(|v| {
                    below += v.count_at_value();
                    below > rank
                })
                .map_or(self.max_us, |v| v.value_iterated_to());
            self.histogram.median_equivalent(value).min(self.max_us) as f64 / 1e3
        };
        Some(Percentiles {
            p50: at(0.5),
            p99: at(0.99),
            max: self.max_us as f64 / 1e3,
        })
    }
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct PathReport {
    pub name: String,
    pub capacity_bps: f64,
    /// IP bytes the sender put on the path.
    pub sent_bytes: u64,
    /// IP bytes that arrived within the run.
    pub delivered_bytes: u64,
    pub throughput_bps: f64,
    pub utilization: f64,
    pub srtt_ms: Option<f64>,
    /// Share of the packets put on the path that it lost (queue, loss, blackout).
    pub loss_rate: f64,
    pub share: f64,
    /// What the emulated link did with the path's packets.
    pub link: LinkCounters,
    /// What the sender saw: packets sent, acknowledged, declared lost, timeouts.
    pub sender: PathCounters,
    /// The sender's loss estimates (from acknowledgements): recent and overall.
    pub sender_loss_recent: f64,
    pub sender_loss_total: f64,
    /// From each blackout's end to the first datagram the scheduler put on
    /// the path again (ms); `None` (null) without blackouts.
    pub time_to_reuse_ms: Option<ReuseSummary>,
}

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Report {
    pub scheduler: String,
    pub cc: String,
    pub seed: u64,
    pub duration_s: f64,
    pub payload_bytes: usize,
    /// The receiver's clock relative to the sender's.
    pub clock: ClockSpec,
    pub capacity_bps: f64,
    pub ideal_goodput_bps: f64,
    pub offered_bps: f64,
    pub goodput_bps: f64,
    pub in_order_goodput_bps: f64,
    pub utilization: f64,
    pub loss_rate: f64,
    /// How long delivered packets waited in the resequencer; `None` (null)
    /// when nothing was delivered.
    pub reorder_delay_ms: Option<Percentiles>,
    /// From offer by the application to delivery; `None` (null) when
    /// nothing was delivered.
    pub latency_ms: Option<Percentiles>,
    pub stall_max_ms: f64,
    /// Datagrams the sender dropped: its queue was full, they waited too
    /// long, or the flow queue's CoDel dropped them.
    pub sender_queue_drops: u64,
    /// Datagrams the scheduler dropped (no path could take them).
    pub scheduler_drops: u64,
    /// The datagram sender's own counters (sent, copies, reinjected, ...);
    /// absent in reliable mode, which has no datagram sender.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sender: Option<SenderCounters>,
    /// Times a path went down (silent for about a round trip), all paths.
    pub path_down_events: u64,
    /// Probe copies sent to down paths, and their share of the bytes sent.
    pub probe_packets: u64,
    pub probe_overhead: f64,
    /// The resequencer's own account: holes given up on, timer expiries,
    /// packets that arrived after their number was skipped.
    pub reseq: ReseqCounters,
    pub paths: Vec<PathReport>,
    /// What the tunnel session did, for runs through it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionReport>,
    /// Per traffic source: goodput, one-way delay, and TCP's figures.
    pub flows: Vec<crate::flows::FlowReport>,
    /// Per time bin: start (s), per-path throughput (bit/s), in-order goodput (bit/s).
    pub series: Series,
    /// Reliable mode's own figures (absent in datagram mode).
    #[serde(flatten)]
    pub reliable: Option<ReliableReport>,
}

/// What `--mode reliable` adds to the report.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ReliableReport {
    /// Bytes the bulk transfer was to carry (`None`: as many as the run allows).
    pub transfer_bytes: Option<u64>,
    /// Bytes the receiving application read, in order and verified.
    pub read_bytes: u64,
    /// When the receiver had read every byte; `None` if the transfer did not complete.
    pub completion_s: Option<f64>,
    /// Payload bytes sent more than once (loss, timeout, stall).
    pub retransmitted_bytes: u64,
    /// Payload bytes that arrived more than once.
    pub redundant_bytes: u64,
    /// The connection's error, if it failed.
    pub error: Option<String>,
    /// Sender's stream counters.
    pub stream: StreamCounters,
}

/// The sending side, as a report needs it.
#[derive(Debug)]
pub struct SenderView<'a> {
    pub scheduler: &'a str,
    pub paths: Vec<&'a PathSender>,
    pub queue_drops: u64,
    pub scheduler_drops: u64,
    pub counters: Option<&'a SenderCounters>,
}

impl<'a> SenderView<'a> {
    pub fn of(sender: &'a Sender, paths: usize) -> SenderView<'a> {
        SenderView {
            scheduler: sender.scheduler_name(),
            paths: (0..paths).map(|i| sender.path(i)).collect(),
            queue_drops: sender.counters.dropped_stale
                + sender.counters.rejected_queue_full
                + sender.counters.dropped_codel
                + sender.counters.dropped_overflow,
            scheduler_drops: sender.counters.dropped_by_scheduler,
            counters: Some(&sender.counters),
        }
    }
}

#[derive(Debug, Clone, Serialize, PartialEq, Default)]
pub struct Series {
    pub bin_s: f64,
    pub path_bps: Vec<Vec<f64>>,
    pub in_order_goodput_bps: Vec<f64>,
}

/// Running totals of a run. Memory is bounded by the number of paths and
/// the histograms' and series' caps, never by the number of packets: each
/// datagram carries its own offer time (see [`Metrics::on_offered`]).
#[derive(Debug)]
pub struct Metrics {
    duration: Duration,
    offered_packets: u64,
    goodput_bytes: u64,
    in_order_bytes: u64,
    delivered_packets: u64,
    held: Distribution,
    latency: Distribution,
    last_in_order: Option<Duration>,
    stall_max: Duration,
    path_bytes: Vec<u64>,
    reuse: Vec<ReuseTracker>,
    /// One lane per path, then in-order goodput.
    series: Binned,
}

/// Bytes at the start of every simulated datagram that carry its offer time.
pub const STAMP_BYTES: usize = 8;

impl Metrics {
    pub fn new(s: &Scenario) -> Metrics {
        Metrics {
            duration: s.duration,
            offered_packets: 0,
            goodput_bytes: 0,
            in_order_bytes: 0,
            delivered_packets: 0,
            held: Distribution::new(),
            latency: Distribution::new(),
            last_in_order: None,
            stall_max: Duration::ZERO,
            path_bytes: vec![0; s.paths.len()],
            reuse: s
                .paths
                .iter()
                .map(|p| ReuseTracker::new(&p.blackouts, s.duration))
                .collect(),
            series: Binned::new(s.series_bin, s.paths.len() + 1),
        }
    }

    fn in_run(&self, t: Duration) -> bool {
        t < self.duration
    }

    /// Counts a datagram offered at `now` and writes `now` into its first
    /// [`STAMP_BYTES`] bytes (the payload is at least that long), so its
    /// latency needs no per-packet record here.
    pub fn on_offered(&mut self, payload: &mut [u8], now: Duration) {
        let nanos = u64::try_from(now.as_nanos()).unwrap_or(u64::MAX);
        if let Some(stamp) = payload.get_mut(..STAMP_BYTES) {
            stamp.copy_from_slice(&nanos.to_be_bytes());
        }
        self.offered_packets += 1;
        // Stalls count from the first offer.
        self.last_in_order.get_or_insert(now);
    }

    pub fn on_path_arrival(&mut self, path: usize, now: Duration, ip_bytes: usize) {
        if self.in_run(now) {
            if let Some(total) = self.path_bytes.get_mut(path) {
                *total += ip_bytes as u64;
                self.series.add(path, now, ip_bytes as u64);
            }
        }
    }

    /// Follows each path's data count for [`ReuseTracker`].
    pub fn on_sender_state(&mut self, now: Duration, sender: &Sender) {
        for (i, r) in self.reuse.iter_mut().enumerate() {
            if r.is_waiting() {
                let c = &sender.path(i).counters;
                r.observe(now, c.sent_packets - c.probe_packets);
            }
        }
    }

    /// Counts a delivery. The resequencer delivers each datagram at most
    /// once in either mode (its property tests check it).
    pub fn on_delivered(&mut self, d: &Delivery, now: Duration) {
        let Some(stamp) = d.payload.get(..STAMP_BYTES) else {
            return;
        };
        let sent_nanos = u64::from_be_bytes(stamp.try_into().expect("8 bytes"));
        self.delivered_packets += 1;
        if !self.in_run(now) {
            return;
        }
        let bytes = d.payload.len() as u64;
        self.goodput_bytes += bytes;
        self.held.record(d.held);
        self.latency
            .record(now.saturating_sub(Duration::from_nanos(sent_nanos)));
        if d.in_order {
            self.in_order_bytes += bytes;
            self.series.add(self.path_bytes.len(), now, bytes);
            if let Some(last) = self.last_in_order {
                self.stall_max = self.stall_max.max(now.saturating_sub(last));
            }
            self.last_in_order = Some(now);
        }
    }

    /// Counts `bytes` the application read in order from a reliable stream.
    pub fn on_stream_read(&mut self, bytes: u64, now: Duration) {
        // Stalls count from the start of the transfer.
        let last = *self.last_in_order.get_or_insert(Duration::ZERO);
        self.stall_max = self.stall_max.max(now.saturating_sub(last));
        self.last_in_order = Some(now);
        if self.in_run(now) {
            self.goodput_bytes += bytes;
            self.in_order_bytes += bytes;
            self.series.add(self.path_bytes.len(), now, bytes);
        }
    }

    pub fn finish(
        mut self,
        s: &Scenario,
        sender: &SenderView<'_>,
        reseq: &ReseqCounters,
        links: &[(Link, Link)],
    ) -> Report {
        let secs = s.duration.as_secs_f64();
        let offered_bytes = self.offered_packets * s.payload_bytes as u64;
        // A stall still going at the end counts too; nothing delivered in
        // order at all is a stall of the whole run.
        let last = self.last_in_order.unwrap_or(Duration::ZERO);
        self.stall_max = self.stall_max.max(s.duration.saturating_sub(last));
        let offered_packets = self.offered_packets;
        let capacity: f64 = s
            .paths
            .iter()
            .map(|p| p.up_capacity_bps(Duration::ZERO, s.duration))
            .sum();
        let ideal = s.ideal_goodput_bps();
        let total_path_bytes: u64 = self.path_bytes.iter().sum();
        let reuse = std::mem::take(&mut self.reuse);
        let paths = s
            .paths
            .iter()
            .zip(reuse)
            .enumerate()
            .map(|(i, (p, reuse))| {
                let cap = p.up_capacity_bps(Duration::ZERO, s.duration);
                let up = &links[i].0.counters;
                let throughput = self.path_bytes[i] as f64 * 8.0 / secs;
                let sp = sender.paths[i];
                PathReport {
                    name: p.name_or_default(i),
                    capacity_bps: cap,
                    sent_bytes: up.offered_bytes,
                    delivered_bytes: self.path_bytes[i],
                    throughput_bps: throughput,
                    utilization: if cap > 0.0 { throughput / cap } else { 0.0 },
                    srtt_ms: sp.rtt.srtt().map(|d| d.as_secs_f64() * 1e3),
                    loss_rate: if up.offered_packets > 0 {
                        1.0 - up.delivered_packets as f64 / up.offered_packets as f64
                    } else {
                        0.0
                    },
                    share: if total_path_bytes > 0 {
                        self.path_bytes[i] as f64 / total_path_bytes as f64
                    } else {
                        0.0
                    },
                    link: up.clone(),
                    sender: sp.counters.clone(),
                    sender_loss_recent: sp.loss.recent(),
                    sender_loss_total: sp.loss.total(),
                    time_to_reuse_ms: reuse.finish(s.duration),
                }
            })
            .collect();
        let path_counters = sender.paths.iter().map(|p| &p.counters);
        let probe_packets: u64 = path_counters.clone().map(|c| c.probe_packets).sum();
        let sent_packets: u64 = path_counters.clone().map(|c| c.sent_packets).sum();
        let (bin, mut lanes) = self.series.finish(s.duration);
        let bin_secs = bin.as_secs_f64();
        let to_bps = |v: Vec<u64>| v.into_iter().map(|b| b as f64 * 8.0 / bin_secs).collect();
        let in_order_bins = lanes.pop().unwrap_or_default();
        Report {
            scheduler: sender.scheduler.to_owned(),
            cc: s.cc_names(),
            seed: s.seed,
            duration_s: secs,
            payload_bytes: s.payload_bytes,
            clock: s.clock,
            capacity_bps: capacity,
            ideal_goodput_bps: ideal,
            offered_bps: offered_bytes as f64 * 8.0 / secs,
            goodput_bps: self.goodput_bytes as f64 * 8.0 / secs,
            in_order_goodput_bps: self.in_order_bytes as f64 * 8.0 / secs,
            utilization: if ideal > 0.0 {
                self.goodput_bytes as f64 * 8.0 / secs / ideal
            } else {
                0.0
            },
            loss_rate: if offered_packets > 0 {
                1.0 - self.delivered_packets as f64 / offered_packets as f64
            } else {
                0.0
            },
            reorder_delay_ms: self.held.percentiles(),
            latency_ms: self.latency.percentiles(),
            stall_max_ms: self.stall_max.as_secs_f64() * 1e3,
            sender_queue_drops: sender.queue_drops,
            scheduler_drops: sender.scheduler_drops,
            sender: sender.counters.cloned(),
            path_down_events: path_counters.map(|c| c.down_events).sum(),
            probe_packets,
            probe_overhead: if sent_packets > 0 {
                probe_packets as f64 / sent_packets as f64
            } else {
                0.0
            },
            reseq: reseq.clone(),
            paths,
            session: None,
            flows: Vec::new(),
            series: Series {
                bin_s: bin_secs,
                path_bps: lanes.into_iter().map(to_bps).collect(),
                in_order_goodput_bps: to_bps(in_order_bins),
            },
            reliable: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The sample at rank round((n - 1) q), as a sorted list gives it.
    fn exact(sorted_us: &[u64], q: f64) -> f64 {
        sorted_us[((sorted_us.len() - 1) as f64 * q).round() as usize] as f64 / 1e3
    }

    #[test]
    fn percentiles_are_within_the_stated_precision_of_the_exact_samples() {
        // Delays from 0 to 40 s, spread over every magnitude.
        let spread = (0..200_000u64).map(|i| (i * i * 7919) % 40_000_000 / (1 + i % 1000));
        check_against_exact(spread.collect());
        // A resequencer's hold times: most packets not held at all, a sparse
        // tail of a few milliseconds to tenths of a second, where samples of
        // neighbouring rank lie milliseconds apart.
        for n in [8_600u64, 8_650, 8_699] {
            let tail = (0..n).map(|i| if i % 97 == 0 { 1_000 + i * 37 } else { 0 });
            check_against_exact(tail.collect());
        }
    }

    fn check_against_exact(mut samples: Vec<u64>) {
        let mut d = Distribution::new();
        for &us in &samples {
            d.record(Duration::from_micros(us));
        }
        samples.sort_unstable();
        let p = d.percentiles().expect("samples");
        for (got, q) in [(p.p50, 0.5), (p.p99, 0.99)] {
            let want = exact(&samples, q);
            assert!(
                (got - want).abs() <= want * 1e-4 + 1e-3,
                "q {q}: {got} ms against {want} ms"
            );
        }
        assert_eq!(p.max, exact(&samples, 1.0));
    }

    #[test]
    fn long_delays_are_not_clamped() {
        let mut d = Distribution::new();
        d.record(Duration::from_millis(5));
        d.record(Duration::from_millis(5));
        d.record(Duration::from_secs(100_000));
        let p = d.percentiles().expect("samples");
        assert_eq!(p.max, 1e8);
        assert!((p.p99 - 1e8).abs() <= 1e4, "{}", p.p99);
        assert!((p.p50 - 5.0).abs() <= 1e-3, "{}", p.p50);
    }

    #[test]
    fn nothing_delivered_has_no_percentiles() {
        assert_eq!(Distribution::new().percentiles(), None);
    }
}
