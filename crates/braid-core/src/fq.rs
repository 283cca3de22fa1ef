//! Flow queueing in front of the scheduler, after FQ-CoDel (RFC 8290).
//!
//! A tunnel's send queue is the bottleneck queue of every TCP flow inside
//! it: a bulk flow fills it until it drops, and a FIFO then makes every
//! other flow wait behind that standing queue. Here each datagram goes to
//! one of a fixed number of buckets by the flow id its caller gives (for
//! example a hash of the inner 5-tuple); buckets are served by deficit
//! round robin with a quantum of one MTU, buckets that just became busy
//! first (a sparse flow's packet leaves almost at once), and each bucket
//! drops from its head by CoDel (RFC 8289) when its packets' sojourn time
//! stays above `target` for an `interval`, which is what tells a TCP sender
//! to slow down before the queue is a full round trip deep. With
//! `mark_ecn` (the payloads are IP packets) CoDel marks an ECN-capable
//! packet Congestion Experienced instead of dropping it (see [`crate::ecn`]).
//!
//! Memory is bounded by `max_bytes`; when it is exceeded the head of the
//! longest bucket is dropped (RFC 8290 section 4.1), which costs a scan of
//! the fixed bucket array. Every other operation is O(1) per packet.
//! Dropping here costs no global sequence number: numbers are given when a
//! datagram leaves this queue for the scheduler.

use std::collections::VecDeque;
use std::time::Duration;

use crate::time::Instant;

/// Parameters of the flow queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FqConfig {
    /// Number of buckets flows are hashed into.
    pub buckets: usize,
    /// Bytes a bucket may send per round.
    pub quantum: usize,
    /// CoDel's acceptable standing queue delay.
    pub target: Duration,
    /// CoDel's window: how long the delay must stay above `target` before
    /// the first drop; of the order of the inner flows' round trip.
    pub interval: Duration,
    /// Bytes of payload held at most, over all buckets.
    pub max_bytes: usize,
    /// The payloads are IP packets: CoDel marks ECN-capable ones instead of
    /// dropping them (RFC 8290 section 4.2, as Linux's fq_codel does).
    pub mark_ecn: bool,
}

impl Default for FqConfig {
    fn default() -> FqConfig {
        FqConfig {
            buckets: 64,
            quantum: 1500,
            target: Duration::from_millis(5),
            interval: Duration::from_millis(100),
            max_bytes: 8 << 20,
            mark_ecn: false,
        }
    }
}

#[derive(Debug)]
struct Entry {
    payload: Vec<u8>,
    enqueued: Instant,
}

/// CoDel's per-bucket state (RFC 8289 section 5).
#[derive(Debug, Default)]
struct Codel {
    /// When the sojourn time first stayed above target, plus one interval.
    first_above: Option<Instant>,
    dropping: bool,
    drop_next: Instant,
    count: u32,
    last_count: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum List {
    None,
    New,
    Old,
}

#[derive(Debug)]
struct Bucket {
    entries: VecDeque<Entry>,
    bytes: usize,
    deficit: i64,
    list: List,
    codel: Codel,
}

/// Counts of what the flow queue dropped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FqCounters {
    /// Dropped by CoDel for standing too long.
    pub codel_drops: u64,
    /// Marked Congestion Experienced by CoDel where it would have dropped.
    pub codel_marks: u64,
    /// Dropped from the longest bucket because the queue was full.
    pub overflow_drops: u64,
}

/// A datagram leaving the flow queue.
#[derive(Debug, PartialEq, Eq)]
pub struct Dequeued {
    pub payload: Vec<u8>,
    pub enqueued: Instant,
    /// The bucket it came from: datagrams of one bucket leave in order.
    pub bucket: usize,
    /// It came from a bucket on the new-flows list: a sparse flow, one
    /// that sends less than a quantum per round (RFC 8290 section 4.4).
    pub sparse: bool,
}

#[derive(Debug)]
pub struct FlowQueue {
    config: FqConfig,
    /// The target in force: the configured one, or more after `set_interval`.
    target: Duration,
    buckets: Vec<Bucket>,
    new_flows: VecDeque<usize>,
    old_flows: VecDeque<usize>,
    bytes: usize,
    len: usize,
    pub counters: FqCounters,
}

/// Spreads caller flow ids over the buckets (Fibonacci hashing), so that
/// ids that differ only in high bits do not share a bucket.
fn bucket_of(flow: u64, buckets: usize) -> usize {
    let mixed = flow.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    ((mixed >> 32) % buckets as u64) as usize
}

impl FlowQueue {
    pub fn new(config: FqConfig) -> FlowQueue {
        let buckets = (0..config.buckets.max(1))
            .map(|_| Bucket {
                entries: VecDeque::new(),
                bytes: 0,
                deficit: 0,
                list: List::None,
                codel: Codel::default(),
            })
            .collect();
        FlowQueue {
            config,
            target: config.target,
            buckets,
            new_flows: VecDeque::new(),
            old_flows: VecDeque::new(),
            bytes: 0,
            len: 0,
            counters: FqCounters::default(),
        }
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// How many buckets flows are hashed into.
    pub fn bucket_count(&self) -> usize {
        self.buckets.len()
    }

    /// Changes CoDel's interval, and its target to `target_share` of it
    /// but never below the configured target (RFC 8289 section 4.4: the
    /// target is 5-10 % of the interval, the interval a worst-case round
    /// trip). The sender sets the interval from its paths' round trips.
    pub fn set_interval(&mut self, interval: Duration, target_share: f64) {
        self.config.interval = interval;
        self.target = self.config.target.max(interval.mul_f64(target_share));
    }

    /// Queues a datagram of flow `flow`. When the queue is over its byte
    /// limit afterwards, packets are dropped from the head of the longest
    /// bucket; returns how many.
    pub fn enqueue(&mut self, now: Instant, flow: u64, payload: Vec<u8>) -> u64 {
        let b = bucket_of(flow, self.buckets.len());
        let bucket = &mut self.buckets[b];
        bucket.bytes += payload.len();
        self.bytes += payload.len();
        self.len += 1;
        bucket.entries.push_back(Entry {
            payload,
            enqueued: now,
        });
        if bucket.list == List::None {
            bucket.list = List::New;
            bucket.deficit = self.config.quantum as i64;
            self.new_flows.push_back(b);
        }
        let mut dropped = 0;
        while self.bytes > self.config.max_bytes {
            let fattest = (0..self.buckets.len())
                .max_by_key(|&i| self.buckets[i].bytes)
                .expect("at least one bucket");
            self.pop_entry(fattest);
            self.counters.overflow_drops += 1;
            dropped += 1;
        }
        dropped
    }

    fn pop_entry(&mut self, b: usize) -> Option<Entry> {
        let bucket = &mut self.buckets[b];
        let e = bucket.entries.pop_front()?;
        bucket.bytes -= e.payload.len();
        self.bytes -= e.payload.len();
        self.len -= 1;
        Some(e)
    }

    /// Takes the next datagram to schedule. Packets CoDel drops on the way
    /// are counted in `counters.codel_drops`.
    pub fn dequeue(&mut self, now: Instant) -> Option<Dequeued> {
        self.serve(now, None)
    }

    /// Takes the next datagram of a sparse flow: from the first bucket on
    /// the new-flows list that `admit` accepts (moved to the list's head),
    /// as `dequeue` would. The old list (flows with a standing queue) is
    /// not served.
    pub fn dequeue_sparse(
        &mut self,
        now: Instant,
        admit: &dyn Fn(usize) -> bool,
    ) -> Option<Dequeued> {
        self.serve(now, Some(admit))
    }

    fn serve(
        &mut self,
        now: Instant,
        sparse_only: Option<&dyn Fn(usize) -> bool>,
    ) -> Option<Dequeued> {
        loop {
            let (b, from_new) = match sparse_only {
                Some(admit) => {
                    let at = self.new_flows.iter().position(|&b| admit(b))?;
                    let b = self.new_flows.remove(at).expect("position in list");
                    self.new_flows.push_front(b);
                    (b, true)
                }
                None => match self.new_flows.front() {
                    Some(&b) => (b, true),
                    None => (*self.old_flows.front()?, false),
                },
            };
            if self.buckets[b].deficit <= 0 {
                self.buckets[b].deficit += self.config.quantum as i64;
                self.rotate_to_old(from_new);
                continue;
            }
            match self.codel_dequeue(b, now) {
                Some(e) => {
                    self.buckets[b].deficit -= e.payload.len() as i64;
                    return Some(Dequeued {
                        payload: e.payload,
                        enqueued: e.enqueued,
                        bucket: b,
                        sparse: from_new,
                    });
                }
                None => {
                    // An empty new bucket goes to the old list once, so a flow
                    // that sends one packet per round cannot stay "new" forever.
                    if from_new && !self.old_flows.is_empty() {
                        self.rotate_to_old(true);
                    } else {
                        if from_new {
                            self.new_flows.pop_front();
                        } else {
                            self.old_flows.pop_front();
                        }
                        self.buckets[b].list = List::None;
                    }
                }
            }
        }
    }

    fn rotate_to_old(&mut self, from_new: bool) {
        let b = if from_new {
            self.new_flows.pop_front()
        } else {
            self.old_flows.pop_front()
        }
        .expect("bucket at the front");
        self.buckets[b].list = List::Old;
        self.old_flows.push_back(b);
    }

    /// One bucket's head through CoDel's dequeue logic (RFC 8289 5.5-5.7):
    /// drop while the sojourn time has stayed above target for an interval,
    /// at intervals shrinking with the square root of the drop count.
    fn codel_dequeue(&mut self, b: usize, now: Instant) -> Option<Entry> {
        let (target, interval) = (self.target, self.config.interval);
        let mut e = self.pop_entry(b)?;
        let ok_to_drop = self.sojourn_check(b, &e, now, target, interval);
        if self.buckets[b].codel.dropping {
            let mut ok_to_drop = ok_to_drop;
            while ok_to_drop && now >= self.buckets[b].codel.drop_next {
                let codel = &mut self.buckets[b].codel;
                codel.count += 1;
                codel.drop_next = control_law(codel.drop_next, interval, codel.count);
                if self.mark(&mut e) {
                    break;
                }
                self.counters.codel_drops += 1;
                e = self.pop_entry(b)?;
                ok_to_drop = self.sojourn_check(b, &e, now, target, interval);
            }
            if !ok_to_drop {
                self.buckets[b].codel.dropping = false;
            }
        } else if ok_to_drop {
            if !self.mark(&mut e) {
                self.counters.codel_drops += 1;
                e = self.pop_entry(b)?;
            }
            let codel = &mut self.buckets[b].codel;
            codel.dropping = true;
            // A dropping state that ended recently resumes near its rate.
            let delta = codel.count.saturating_sub(codel.last_count);
            codel.count = if delta > 1 && now - codel.drop_next < interval * 16 {
                delta
            } else {
                1
            };
            codel.drop_next = control_law(now, interval, codel.count);
            codel.last_count = codel.count;
        }
        Some(e)
    }

    /// Marks `e` Congestion Experienced where CoDel would drop it, if the
    /// queue marks and the packet asked for ECN; returns whether it did.
    fn mark(&mut self, e: &mut Entry) -> bool {
        let marked =
            self.config.mark_ecn && crate::ecn::mark_congestion_experienced(&mut e.payload);
        self.counters.codel_marks += u64::from(marked);
        marked
    }

    /// Whether `e`, just taken from bucket `b`, may be dropped: its sojourn
    /// time has been above target for at least an interval, and more than
    /// one MTU is still queued behind it.
    fn sojourn_check(
        &mut self,
        b: usize,
        e: &Entry,
        now: Instant,
        target: Duration,
        interval: Duration,
    ) -> bool {
        let quantum = self.config.quantum;
        let bucket = &mut self.buckets[b];
        if now - e.enqueued < target || bucket.bytes <= quantum {
            bucket.codel.first_above = None;
            return false;
        }
        match bucket.codel.first_above {
            None => {
                bucket.codel.first_above = Some(now + interval);
                false
            }
            Some(t) => now >= t,
        }
    }
}

fn control_law(t: Instant, interval: Duration, count: u32) -> Instant {
    t + interval.div_f64(f64::from(count.max(1)).sqrt())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn packet(flow: u8, n: u32) -> Vec<u8> {
        let mut p = vec![flow; 1000];
        p[1..5].copy_from_slice(&n.to_be_bytes());
        p
    }

    #[test]
    fn a_sparse_flow_overtakes_a_standing_bulk_queue() {
        let mut q = FlowQueue::new(FqConfig::default());
        let t0 = Instant::from_nanos(1_000_000_000);
        for n in 0..500 {
            q.enqueue(t0, 1, packet(1, n));
        }
        // The bulk flow is being served; a sparse flow's packet arrives.
        assert_eq!(q.dequeue(t0).unwrap().payload[0], 1);
        q.enqueue(t0, 2, packet(2, 0));
        // It waits at most for the rest of the bulk bucket's quantum.
        let next: Vec<u8> = (0..2).map(|_| q.dequeue(t0).unwrap().payload[0]).collect();
        assert!(next.contains(&2), "FIFO would serve 499 bulk packets first");
    }

    #[test]
    fn sparse_dequeues_serve_only_new_flows_that_are_admitted() {
        let mut q = FlowQueue::new(FqConfig::default());
        let t0 = Instant::from_nanos(1_000_000_000);
        for n in 0..10 {
            q.enqueue(t0, 1, packet(1, n));
        }
        let (b1, b2, b3) = (bucket_of(1, 64), bucket_of(2, 64), bucket_of(3, 64));
        // Flow 1 is new until it has used its quantum (two packets).
        let first = q.dequeue_sparse(t0, &|_| true).unwrap();
        assert!(first.sparse && first.bucket == b1);
        assert!(q.dequeue_sparse(t0, &|_| true).unwrap().sparse);
        assert_eq!(q.dequeue_sparse(t0, &|_| true), None);
        // Now it has a standing queue: only `dequeue` serves it.
        let bulk = q.dequeue(t0).unwrap();
        assert!(!bulk.sparse && bulk.bucket == b1);
        // Flows 2 and 3 arrive; 2 is not admitted, so 3 is served first.
        q.enqueue(t0, 2, packet(2, 0));
        q.enqueue(t0, 3, packet(3, 0));
        let third = q.dequeue_sparse(t0, &|b| b != b2).unwrap();
        assert_eq!(
            (third.bucket, third.payload[0], third.sparse),
            (b3, 3, true)
        );
        assert_eq!(q.dequeue_sparse(t0, &|b| b != b2), None);
        assert_eq!(q.dequeue(t0).unwrap().payload[0], 2);
        assert_eq!(q.len(), 7);
    }

    #[test]
    fn flows_of_different_packet_sizes_share_bytes_not_packets() {
        let mut q = FlowQueue::new(FqConfig::default());
        let t0 = Instant::from_nanos(1_000_000_000);
        for n in 0..100 {
            q.enqueue(t0, 1, packet(1, n));
            q.enqueue(t0, 2, packet(2, n)[..500].to_vec());
        }
        let mut bytes = [0usize; 3];
        for _ in 0..60 {
            let d = q.dequeue(t0).unwrap();
            bytes[usize::from(d.payload[0])] += d.payload.len();
        }
        // Deficit round robin: within a quantum of each other.
        assert!(bytes[1].abs_diff(bytes[2]) <= 1500, "{bytes:?}");
    }

    #[test]
    fn a_flow_that_empties_while_others_are_backlogged_is_not_new_again_at_once() {
        let mut q = FlowQueue::new(FqConfig::default());
        let t0 = Instant::from_nanos(1_000_000_000);
        for n in 0..100 {
            q.enqueue(t0, 1, packet(1, n));
        }
        // Flow 1 uses its quantum, moves to the old list, and is into its
        // next one there (500 bytes of deficit left).
        for _ in 0..4 {
            q.dequeue(t0).unwrap();
        }
        q.enqueue(t0, 2, packet(2, 0));
        let first = q.dequeue(t0).unwrap();
        assert!(first.payload[0] == 2 && first.sparse);
        // Found empty on the next round, its bucket goes behind flow 1 on
        // the old list: its next packet is not sparse.
        assert_eq!(q.dequeue(t0).unwrap().payload[0], 1);
        q.enqueue(t0, 2, packet(2, 1));
        let next = std::iter::from_fn(|| q.dequeue(t0))
            .find(|d| d.payload[0] == 2)
            .unwrap();
        assert!(!next.sparse);
    }

    #[test]
    fn backlogged_flows_share_bytes_equally() {
        let mut q = FlowQueue::new(FqConfig::default());
        let t0 = Instant::from_nanos(1_000_000_000);
        // Flow 1 queues 300 packets, then flow 2 queues 300.
        for n in 0..300 {
            q.enqueue(t0, 1, packet(1, n));
        }
        for n in 0..300 {
            q.enqueue(t0, 2, packet(2, n));
        }
        let mut served = [0u32; 3];
        for _ in 0..200 {
            served[usize::from(q.dequeue(t0).unwrap().payload[0])] += 1;
        }
        assert!(
            served[1].abs_diff(served[2]) <= 2,
            "round robin, not FIFO: {served:?}"
        );
        // Within one flow, order is kept.
        let mut last = None;
        while let Some(d) = q.dequeue(t0) {
            if d.payload[0] == 1 {
                let n = u32::from_be_bytes(d.payload[1..5].try_into().unwrap());
                assert!(last.is_none_or(|l| n > l));
                last = Some(n);
            }
        }
    }

    #[test]
    fn codel_drops_a_standing_queue_and_not_a_short_one() {
        let cfg = FqConfig::default();
        let mut q = FlowQueue::new(cfg);
        let t0 = Instant::from_nanos(1_000_000_000);
        // Arrivals at 1.02 packets per ms, service at 1 per ms: the queue
        // (and the sojourn time) grows until CoDel drops.
        let mut sojourn_max_late = Duration::ZERO;
        let mut n = 0;
        for ms_ in 0..10_000u64 {
            let now = t0 + ms(ms_);
            let arrivals = if ms_ % 50 == 0 { 2 } else { 1 };
            for _ in 0..arrivals {
                q.enqueue(now, 1, packet(1, n));
                n += 1;
            }
            let d = q.dequeue(now).unwrap();
            if ms_ > 8000 {
                sojourn_max_late = sojourn_max_late.max(now - d.enqueued);
            }
        }
        assert!(q.counters.codel_drops > 0);
        // Without drops the queue would stand at 160 to 200 packets (ms).
        assert!(
            sojourn_max_late < ms(60),
            "standing queue of {sojourn_max_late:?}"
        );
        // A queue that stays under target is never dropped from.
        let mut q = FlowQueue::new(cfg);
        for ms_ in 0..3000u64 {
            let now = t0 + ms(ms_);
            for _ in 0..4 {
                q.enqueue(now, 1, packet(1, 0));
            }
            for _ in 0..4 {
                q.dequeue(now).unwrap();
            }
        }
        assert_eq!(q.counters.codel_drops, 0);
    }

    /// A 1000-byte IPv4 packet with ECN field `ecn` (checksum left zero:
    /// the ecn module's tests check its update).
    fn ip_packet(ecn: u8, n: u32) -> Vec<u8> {
        let mut p = vec![0u8; 1000];
        p[0] = 0x45;
        p[1] = ecn;
        p[20..24].copy_from_slice(&n.to_be_bytes());
        p
    }

    /// The overload of `codel_drops_a_standing_queue_and_not_a_short_one`
    /// (1.02 arrivals per service), 10 s of it; returns the packets served.
    fn overload(q: &mut FlowQueue, ecn: u8) -> Vec<Vec<u8>> {
        let t0 = Instant::from_nanos(1_000_000_000);
        let mut served = Vec::new();
        let mut n = 0;
        for ms_ in 0..10_000u64 {
            let now = t0 + ms(ms_);
            for _ in 0..if ms_ % 50 == 0 { 2 } else { 1 } {
                q.enqueue(now, 1, ip_packet(ecn, n));
                n += 1;
            }
            served.push(q.dequeue(now).unwrap().payload);
        }
        served
    }

    #[test]
    fn codel_marks_ecn_capable_packets_where_it_would_drop_them() {
        let marking = FqConfig {
            mark_ecn: true,
            ..FqConfig::default()
        };
        // Not-ECT packets are dropped as without marking, none marked.
        let mut plain = FlowQueue::new(FqConfig::default());
        overload(&mut plain, 0b00);
        let mut q = FlowQueue::new(marking);
        let served = overload(&mut q, 0b00);
        assert!(plain.counters.codel_drops > 0);
        assert_eq!(q.counters, plain.counters);
        assert!(served.iter().all(|p| p[1] == 0b00));
        // ECT(0) packets: marked instead, none dropped, none lost from the
        // order (the arrivals do not slow down here, so the queue is left).
        let mut q = FlowQueue::new(marking);
        let served = overload(&mut q, 0b10);
        assert_eq!(q.counters.codel_drops, 0);
        let marked = served.iter().filter(|p| p[1] == 0b11).count() as u64;
        assert!(marked > 0);
        assert_eq!(marked, q.counters.codel_marks);
        let numbers: Vec<u32> = served
            .iter()
            .map(|p| u32::from_be_bytes(p[20..24].try_into().unwrap()))
            .collect();
        assert!(numbers.iter().enumerate().all(|(i, &n)| n == i as u32));
        // Not marking, the same packets are dropped and left unmarked.
        let mut q = FlowQueue::new(FqConfig::default());
        let served = overload(&mut q, 0b10);
        assert!(q.counters.codel_drops > 0);
        assert_eq!(q.counters.codel_marks, 0);
        assert!(served.iter().all(|p| p[1] == 0b10));
    }

    #[test]
    fn overflow_drops_from_the_longest_bucket() {
        let mut q = FlowQueue::new(FqConfig {
            max_bytes: 10_000,
            ..FqConfig::default()
        });
        let t0 = Instant::from_nanos(1_000_000_000);
        for n in 0..10 {
            assert_eq!(q.enqueue(t0, 1, packet(1, n)), 0);
        }
        assert_eq!(q.enqueue(t0, 2, packet(2, 0)), 1);
        assert_eq!(q.bytes(), 10_000);
        let flows: Vec<u8> = std::iter::from_fn(|| q.dequeue(t0))
            .map(|d| d.payload[0])
            .collect();
        assert_eq!(flows.iter().filter(|&&f| f == 2).count(), 1);
        assert_eq!(flows.iter().filter(|&&f| f == 1).count(), 9);
    }
}
