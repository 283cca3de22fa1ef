//! What a run measured, in the units DESIGN.md reports results in:
//! goodput and in-order goodput against the ideal, application loss,
//! resequencing delay, longest in-order stall, and per-path figures.

use std::time::Duration;

use braid_core::path::PathCounters;
use braid_core::reseq::{Delivery, ReseqCounters};
use braid_core::sender::Sender;
use serde::Serialize;

use crate::clock::ClockSpec;
use crate::link::{Link, LinkCounters};
use crate::sim::Scenario;

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Percentiles {
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

impl Percentiles {
    fn of_micros(mut v: Vec<u32>) -> Percentiles {
        if v.is_empty() {
            return Percentiles {
                p50: 0.0,
                p99: 0.0,
                max: 0.0,
            };
        }
        v.sort_unstable();
        let at = |q: f64| f64::from(v[((v.len() - 1) as f64 * q).round() as usize]) / 1e3;
        Percentiles {
            p50: at(0.5),
            p99: at(0.99),
            max: at(1.0),
        }
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
    pub reorder_delay_ms: Percentiles,
    pub latency_ms: Percentiles,
    pub stall_max_ms: f64,
    /// Datagrams the sender dropped: its queue was full or they waited too long.
    pub sender_queue_drops: u64,
    /// Datagrams the scheduler dropped (no path could take them).
    pub scheduler_drops: u64,
    /// The resequencer's own account: holes given up on, timer expiries,
    /// packets that arrived after their number was skipped.
    pub reseq: ReseqCounters,
    pub paths: Vec<PathReport>,
    /// Per time bin: start (s), per-path throughput (bit/s), in-order goodput (bit/s).
    pub series: Series,
}

#[derive(Debug, Clone, Serialize, PartialEq, Default)]
pub struct Series {
    pub bin_s: f64,
    pub path_bps: Vec<Vec<f64>>,
    pub in_order_goodput_bps: Vec<f64>,
}

#[derive(Debug)]
pub struct Metrics {
    duration: Duration,
    bin: Duration,
    sent_at: Vec<Duration>,
    delivered: Vec<bool>,
    goodput_bytes: u64,
    in_order_bytes: u64,
    delivered_packets: u64,
    held_us: Vec<u32>,
    latency_us: Vec<u32>,
    first_offer: Option<Duration>,
    last_in_order: Option<Duration>,
    stall_max: Duration,
    path_bytes: Vec<u64>,
    path_bins: Vec<Vec<u64>>,
    in_order_bins: Vec<u64>,
}

impl Metrics {
    pub fn new(s: &Scenario) -> Metrics {
        let bins = (s.duration.as_nanos() / s.series_bin.as_nanos().max(1)) as usize + 1;
        Metrics {
            duration: s.duration,
            bin: s.series_bin,
            sent_at: Vec::new(),
            delivered: Vec::new(),
            goodput_bytes: 0,
            in_order_bytes: 0,
            delivered_packets: 0,
            held_us: Vec::new(),
            latency_us: Vec::new(),
            first_offer: None,
            last_in_order: None,
            stall_max: Duration::ZERO,
            path_bytes: vec![0; s.paths.len()],
            path_bins: vec![vec![0; bins]; s.paths.len()],
            in_order_bins: vec![0; bins],
        }
    }

    fn bin_of(&self, t: Duration) -> Option<usize> {
        (t < self.duration).then(|| (t.as_nanos() / self.bin.as_nanos().max(1)) as usize)
    }

    pub fn on_offered(&mut self, app_seq: u64, now: Duration) {
        debug_assert_eq!(app_seq as usize, self.sent_at.len());
        self.sent_at.push(now);
        self.delivered.push(false);
        self.first_offer.get_or_insert(now);
        // Stalls count from the first offer.
        self.last_in_order.get_or_insert(now);
    }

    pub fn on_path_arrival(&mut self, path: usize, now: Duration, ip_bytes: usize) {
        if let Some(b) = self.bin_of(now) {
            self.path_bytes[path] += ip_bytes as u64;
            self.path_bins[path][b] += ip_bytes as u64;
        }
    }

    pub fn on_delivered(&mut self, d: &Delivery, now: Duration) {
        let Some(app_seq) = d
            .payload
            .get(..8)
            .map(|b| u64::from_be_bytes(b.try_into().expect("8 bytes")))
        else {
            return;
        };
        let Some(slot) = self.delivered.get_mut(app_seq as usize) else {
            return;
        };
        if *slot {
            return; // a duplicate would be a resequencer bug; never count it twice
        }
        *slot = true;
        self.delivered_packets += 1;
        let Some(bin) = self.bin_of(now) else { return };
        let bytes = d.payload.len() as u64;
        self.goodput_bytes += bytes;
        self.held_us
            .push(d.held.as_micros().min(u128::from(u32::MAX)) as u32);
        let latency = now.saturating_sub(self.sent_at[app_seq as usize]);
        self.latency_us
            .push(latency.as_micros().min(u128::from(u32::MAX)) as u32);
        if d.in_order {
            self.in_order_bytes += bytes;
            self.in_order_bins[bin] += bytes;
            if let Some(last) = self.last_in_order {
                self.stall_max = self.stall_max.max(now.saturating_sub(last));
            }
            self.last_in_order = Some(now);
        }
    }

    pub fn finish(
        mut self,
        s: &Scenario,
        sender: &Sender,
        reseq: &ReseqCounters,
        links: &[(Link, Link)],
    ) -> Report {
        let secs = s.duration.as_secs_f64();
        let offered_bytes = self.sent_at.len() as u64 * s.payload_bytes as u64;
        if let Some(last) = self.last_in_order {
            // A stall still going at the end counts too.
            self.stall_max = self.stall_max.max(s.duration.saturating_sub(last));
        }
        let offered_packets = self.sent_at.len() as u64;
        let capacity: f64 = s
            .paths
            .iter()
            .map(|p| p.up_capacity_bps(Duration::ZERO, s.duration))
            .sum();
        let ideal = s.ideal_goodput_bps();
        let total_path_bytes: u64 = self.path_bytes.iter().sum();
        let paths = s
            .paths
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let cap = p.up_capacity_bps(Duration::ZERO, s.duration);
                let up = &links[i].0.counters;
                let throughput = self.path_bytes[i] as f64 * 8.0 / secs;
                let sp = sender.path(i);
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
                }
            })
            .collect();
        let bin_secs = s.series_bin.as_secs_f64();
        let to_bps = |v: &Vec<u64>| v.iter().map(|b| *b as f64 * 8.0 / bin_secs).collect();
        Report {
            scheduler: sender.scheduler_name().to_owned(),
            cc: s.cc.name().to_owned(),
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
            reorder_delay_ms: Percentiles::of_micros(std::mem::take(&mut self.held_us)),
            latency_ms: Percentiles::of_micros(std::mem::take(&mut self.latency_us)),
            stall_max_ms: self.stall_max.as_secs_f64() * 1e3,
            sender_queue_drops: sender.counters.dropped_stale + sender.counters.rejected_queue_full,
            scheduler_drops: sender.counters.dropped_by_scheduler,
            reseq: reseq.clone(),
            paths,
            series: Series {
                bin_s: bin_secs,
                path_bps: self.path_bins.iter().map(to_bps).collect(),
                in_order_goodput_bps: to_bps(&self.in_order_bins),
            },
        }
    }
}
