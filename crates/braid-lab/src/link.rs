//! One direction of an emulated path as a function of arrival times: for each
//! packet it decides at once whether it is lost and, if not, when it leaves
//! the far end. Deciding at arrival is what keeps the emulator lean: the event
//! loop holds one FIFO per direction ordered by delivery time and only has to
//! sleep until its head.
//!
//! Order of events for a packet of `len` IP bytes arriving at `now`:
//! blackout (at arrival or at its departure from the bottleneck) → random
//! loss (independent, then Gilbert-Elliott) → drop-tail queue → bottleneck
//! (constant rate, or a trace's delivery opportunities of 1500 bytes each) →
//! propagation delay plus a uniform extra delay in `[0, jitter]` (the meaning
//! `braid bench` gives `jitter=`, so a packet never arrives before the base
//! delay). Jitter never reorders: a packet is not delivered before the one
//! ahead of it, as on a real link.
//! Times in a SPEC (blackouts, the trace's start) count from the moment the
//! SPEC took effect: `lab up`, or `lab set` for a changed path.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use braid_sim::spec::{Blackout, Capacity, LinkSpec};
use braid_sim::trace::{Trace, OPPORTUNITY_BYTES};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

/// Largest IP packet on a lab link.
pub const MTU: usize = 1500;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Deliver(Instant),
    DropBlackout,
    DropLoss,
    DropQueue,
}

/// Where the bottleneck stands between packets.
#[derive(Debug, Clone, Copy)]
enum Bottleneck {
    /// The last admitted packet finishes serialization at `busy_until`.
    Rate { bps: u64, busy_until: Instant },
    /// The next opportunity with credit left, and the bytes it still carries.
    Trace { next: u64, credit: u64 },
}

pub struct LinkModel {
    spec: LinkSpec,
    blackouts: Vec<Blackout>,
    /// When the spec took effect; SPEC times count from here.
    epoch: Instant,
    queue_limit_bytes: usize,
    bottleneck: Bottleneck,
    /// Departure time and size of every packet still in the bottleneck queue,
    /// oldest first, to know the backlog for drop-tail.
    backlog: VecDeque<(Instant, usize)>,
    backlog_bytes: usize,
    last_delivery: Instant,
    rng: ChaCha8Rng,
    ge_bad: bool,
}

impl LinkModel {
    /// `rtt` sizes the default queue (one bandwidth-delay product).
    pub fn new(
        spec: LinkSpec,
        blackouts: Vec<Blackout>,
        rtt: Duration,
        now: Instant,
        seed: u64,
    ) -> LinkModel {
        let mut model = LinkModel {
            queue_limit_bytes: 0,
            bottleneck: Bottleneck::Trace { next: 0, credit: 0 },
            spec: spec.clone(),
            blackouts: Vec::new(),
            epoch: now,
            backlog: VecDeque::with_capacity(1024),
            backlog_bytes: 0,
            last_delivery: now,
            rng: ChaCha8Rng::seed_from_u64(seed),
            ge_bad: false,
        };
        model.reconfigure(spec, blackouts, rtt, now);
        model
    }

    /// Applies a new spec from `now` on. Packets already admitted keep their
    /// schedule; a constant-rate bottleneck stays busy with them.
    pub fn reconfigure(
        &mut self,
        spec: LinkSpec,
        blackouts: Vec<Blackout>,
        rtt: Duration,
        now: Instant,
    ) {
        let busy_until = match self.bottleneck {
            Bottleneck::Rate { busy_until, .. } => busy_until.max(now),
            Bottleneck::Trace { .. } => now,
        };
        self.bottleneck = match &spec.capacity {
            Capacity::Rate { bps } => Bottleneck::Rate {
                bps: *bps,
                busy_until,
            },
            Capacity::Trace(_) => Bottleneck::Trace {
                next: 0,
                credit: OPPORTUNITY_BYTES,
            },
        };
        let mean_bps = match &spec.capacity {
            Capacity::Rate { bps } => *bps as f64,
            Capacity::Trace(t) => t.capacity_bps(Duration::ZERO, t.period()),
        };
        self.queue_limit_bytes = spec.queue_limit_bytes(mean_bps, rtt, MTU);
        self.spec = spec;
        self.blackouts = blackouts;
        self.epoch = now;
        self.ge_bad = false;
    }

    pub fn spec(&self) -> &LinkSpec {
        &self.spec
    }

    pub fn queue_limit_bytes(&self) -> usize {
        self.queue_limit_bytes
    }

    fn in_blackout(&self, t: Instant) -> bool {
        let since = t.saturating_duration_since(self.epoch);
        self.blackouts.iter().any(|b| b.contains(since))
    }

    fn lost(&mut self) -> bool {
        if self.spec.loss > 0.0 && self.rng.gen::<f64>() < self.spec.loss {
            return true;
        }
        match self.spec.burst_loss {
            Some(ge) => {
                let flip = if self.ge_bad {
                    ge.p_bad_to_good
                } else {
                    ge.p_good_to_bad
                };
                if self.rng.gen::<f64>() < flip {
                    self.ge_bad = !self.ge_bad;
                }
                self.ge_bad && self.rng.gen::<f64>() < ge.loss_in_bad
            }
            None => false,
        }
    }

    /// Decides the fate of a packet of `len` IP bytes arriving at `now`.
    pub fn admit(&mut self, now: Instant, len: usize) -> Verdict {
        if self.in_blackout(now) {
            return Verdict::DropBlackout;
        }
        if self.lost() {
            return Verdict::DropLoss;
        }
        while let Some(&(departs, bytes)) = self.backlog.front() {
            if departs > now {
                break;
            }
            self.backlog.pop_front();
            self.backlog_bytes -= bytes;
        }
        if self.backlog_bytes + len > self.queue_limit_bytes {
            return Verdict::DropQueue;
        }
        let (departs, bottleneck) = self.departure(now, len);
        if self.in_blackout(departs) {
            return Verdict::DropBlackout;
        }
        self.bottleneck = bottleneck;
        self.backlog.push_back((departs, len));
        self.backlog_bytes += len;
        let jitter = if self.spec.jitter.is_zero() {
            Duration::ZERO
        } else {
            self.spec.jitter.mul_f64(self.rng.gen::<f64>())
        };
        let arrives = (departs + self.spec.delay + jitter).max(self.last_delivery);
        self.last_delivery = arrives;
        Verdict::Deliver(arrives)
    }

    /// When a packet admitted at `now` leaves the bottleneck, and the
    /// bottleneck's state after it; not committed, since a blackout at the
    /// departure time still drops it.
    fn departure(&self, now: Instant, len: usize) -> (Instant, Bottleneck) {
        match (self.bottleneck, &self.spec.capacity) {
            (Bottleneck::Rate { bps, busy_until }, _) => {
                let tx_ns = (len as u128 * 8 * 1_000_000_000 / u128::from(bps)) as u64;
                let departs = busy_until.max(now) + Duration::from_nanos(tx_ns);
                (
                    departs,
                    Bottleneck::Rate {
                        bps,
                        busy_until: departs,
                    },
                )
            }
            (Bottleneck::Trace { next, credit }, Capacity::Trace(trace)) => {
                self.trace_departure(trace, now, len, next, credit)
            }
            (Bottleneck::Trace { .. }, Capacity::Rate { .. }) => {
                unreachable!("reconfigure keeps the bottleneck kind in step with the spec")
            }
        }
    }

    fn trace_departure(
        &self,
        trace: &Trace,
        now: Instant,
        len: usize,
        mut next: u64,
        mut credit: u64,
    ) -> (Instant, Bottleneck) {
        let since = now.saturating_duration_since(self.epoch);
        // An idle link's opportunities in the past are gone, not saved up.
        if trace.opportunity_time(next) < since {
            next = trace.first_opportunity_at_or_after(since);
            credit = OPPORTUNITY_BYTES;
        }
        let mut left = len as u64;
        while left > credit {
            left -= credit;
            next += 1;
            credit = OPPORTUNITY_BYTES;
        }
        credit -= left;
        let departs = self.epoch + trace.opportunity_time(next);
        if credit == 0 {
            next += 1;
            credit = OPPORTUNITY_BYTES;
        }
        (departs, Bottleneck::Trace { next, credit })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use braid_sim::spec::PathSpec;

    fn model(spec: &str, now: Instant) -> LinkModel {
        let p = PathSpec::parse_with(spec, |_| {
            // 2 opportunities at 1 ms, none until 10 ms, then 1: period 10 ms.
            Ok(Trace::parse("t", "1\n1\n10\n").unwrap())
        })
        .unwrap();
        let rtt = p.up.delay + p.down.delay;
        LinkModel::new(p.up, p.blackouts, rtt, now, 7)
    }

    fn deliver(v: Verdict) -> Instant {
        match v {
            Verdict::Deliver(t) => t,
            other => panic!("expected delivery, got {other:?}"),
        }
    }

    #[test]
    fn constant_rate_serializes_back_to_back() {
        let t0 = Instant::now();
        let mut m = model("12mbit,10ms,queue=1000", t0);
        // 1500 bytes at 12 Mbit/s take exactly 1 ms.
        for k in 1..=100u64 {
            let at = deliver(m.admit(t0, 1500));
            assert_eq!(at - t0, Duration::from_millis(10 + k));
        }
    }

    #[test]
    fn default_queue_is_one_bdp_and_drops_tail() {
        let t0 = Instant::now();
        // 12 Mbit/s, RTT 40 ms: BDP 60,000 bytes = 40 packets.
        let mut m = model("12mbit,20ms", t0);
        assert_eq!(m.queue_limit_bytes(), 60_000);
        let verdicts: Vec<Verdict> = (0..50).map(|_| m.admit(t0, 1500)).collect();
        let delivered = verdicts
            .iter()
            .filter(|v| matches!(v, Verdict::Deliver(_)))
            .count();
        assert_eq!(delivered, 40);
        assert!(verdicts[40..].iter().all(|v| *v == Verdict::DropQueue));
        // Once the queue drained, packets are admitted again.
        let later = t0 + Duration::from_millis(41);
        assert!(matches!(m.admit(later, 1500), Verdict::Deliver(_)));
    }

    #[test]
    fn trace_replays_opportunities_and_skips_idle_ones() {
        let t0 = Instant::now();
        let mut m = model("trace=t,0ms,queue=100", t0);
        let ms = |t: Instant| (t - t0).as_millis();
        // Three 1500-byte packets at once: two go at 1 ms, one at 10 ms.
        let got: Vec<u128> = (0..3).map(|_| ms(deliver(m.admit(t0, 1500)))).collect();
        assert_eq!(got, [1, 1, 10]);
        // Small packets share an opportunity's 1500 bytes.
        let got: Vec<u128> = (0..3).map(|_| ms(deliver(m.admit(t0, 600)))).collect();
        assert_eq!(got, [11, 11, 11]);
        // After an idle stretch, old opportunities are not saved up.
        let late = t0 + Duration::from_millis(35);
        assert_eq!(ms(deliver(m.admit(late, 1500))), 40);
    }

    #[test]
    fn blackout_drops_at_arrival_and_departure() {
        let t0 = Instant::now();
        let mut m = model("12mbit,0ms,blackout=5ms+5ms,queue=1000", t0);
        // Packets admitted at t0 leave at 1, 2, ... ms; those leaving in
        // [5 ms, 10 ms) are dropped, and the rest keep the link's pace.
        let verdicts: Vec<Verdict> = (0..6).map(|_| m.admit(t0, 1500)).collect();
        assert!(matches!(verdicts[3], Verdict::Deliver(_)));
        assert_eq!(verdicts[4], Verdict::DropBlackout);
        assert_eq!(
            m.admit(t0 + Duration::from_millis(7), 100),
            Verdict::DropBlackout
        );
        assert!(matches!(
            m.admit(t0 + Duration::from_millis(10), 100),
            Verdict::Deliver(_)
        ));
    }

    #[test]
    fn loss_rate_matches_configuration() {
        let t0 = Instant::now();
        let mut m = model("10gbit,0ms,loss=10%,queue=100000", t0);
        let n = 100_000;
        let lost = (0..n)
            .filter(|i| m.admit(t0 + Duration::from_micros(*i), 100) == Verdict::DropLoss)
            .count();
        // 10 % ± 4.5 standard deviations (0.095 %).
        let rate = lost as f64 / n as f64;
        assert!((rate - 0.10).abs() < 0.0045, "{rate}");
    }

    #[test]
    fn gilbert_elliott_loss_comes_in_bursts_of_the_configured_mean() {
        let t0 = Instant::now();
        // Bad 1/(1+10) of the time, bursts of 1/10% = 10 packets on average.
        let mut m = model("10gbit,0ms,ge=1%:10%:100%,queue=100000", t0);
        let n = 200_000u64;
        let lost: Vec<bool> = (0..n)
            .map(|i| m.admit(t0 + Duration::from_micros(i), 100) == Verdict::DropLoss)
            .collect();
        let rate = lost.iter().filter(|l| **l).count() as f64 / n as f64;
        let bursts = lost.windows(2).filter(|w| !w[0] && w[1]).count();
        let mean_burst = lost.iter().filter(|l| **l).count() as f64 / bursts as f64;
        // About 1,800 bursts: ± 4.5 standard deviations of each mean.
        assert!(
            (rate / (0.01 / 0.11) - 1.0).abs() < 0.15,
            "loss rate {rate}"
        );
        assert!((mean_burst - 10.0).abs() < 1.0, "mean burst {mean_burst}");
    }

    #[test]
    fn jitter_adds_zero_to_jitter_and_never_reorders() {
        let t0 = Instant::now();
        // A jitter far above the delay: as in bench, never below the delay.
        let mut m = model("10gbit,5ms,jitter=50ms", t0);
        let mut last = t0;
        let (mut least, mut most) = (Duration::MAX, Duration::ZERO);
        for i in 0..10_000u64 {
            // 100 ms apart: no packet is held back behind an earlier one.
            let sent = t0 + Duration::from_millis(100 * i);
            let at = deliver(m.admit(sent, 100));
            assert!(at >= last);
            // 100 bytes at 10 Gbit/s: 80 ns of serialization.
            let extra = at - sent - Duration::from_nanos(80);
            assert!(extra >= Duration::from_millis(5), "{extra:?}");
            least = least.min(extra);
            most = most.max(extra);
            last = at;
        }
        // Spread over the whole range: of 10,000 draws some fall within
        // 2 ms of each end (each misses with probability 0.96^10000).
        assert!(least < Duration::from_millis(7), "least {least:?}");
        assert!(most > Duration::from_millis(50), "most {most:?}");
    }
}
