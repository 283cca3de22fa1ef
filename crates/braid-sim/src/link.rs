//! One direction of a simulated path. A packet offered at time `t` either
//! drops (queue full, random or bursty loss, blackout) or gets the instant it
//! arrives at the far end: it waits behind the bytes already queued,
//! takes its serialization time (rate) or the next delivery opportunities
//! (trace), then the one-way delay plus jitter. The link is FIFO: jitter
//! never reorders packets, as on a real single link.
//!
//! Everything is computed at offer time, so the link needs no events of its
//! own; it only remembers when its queued bytes leave.

use std::collections::VecDeque;
use std::time::Duration;

use rand::Rng;
use rand_chacha::ChaCha8Rng;

use crate::spec::{Blackout, Capacity, GilbertElliott, LinkSpec};
use crate::trace::{Trace, OPPORTUNITY_BYTES};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Drop {
    Queue,
    Loss,
    Blackout,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Offer {
    Arrives(Duration),
    Dropped(Drop),
}

#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct LinkCounters {
    pub offered_packets: u64,
    pub offered_bytes: u64,
    pub delivered_packets: u64,
    pub delivered_bytes: u64,
    pub dropped_queue: u64,
    pub dropped_loss: u64,
    pub dropped_blackout: u64,
}

#[derive(Debug)]
enum Server {
    Rate {
        bps: f64,
        busy_until: Duration,
    },
    /// Next unused opportunity and the bytes left in it.
    Trace {
        trace: Trace,
        next_op: u64,
        left: u64,
    },
}

#[derive(Debug)]
pub struct Link {
    server: Server,
    delay: Duration,
    jitter: Duration,
    loss: f64,
    burst: Option<GilbertElliott>,
    in_bad_state: bool,
    blackouts: Vec<Blackout>,
    queue_limit_bytes: usize,
    /// (departure time, bytes) of packets not yet fully sent.
    queue: VecDeque<(Duration, usize)>,
    queued_bytes: usize,
    last_arrival: Duration,
    rng: ChaCha8Rng,
    pub counters: LinkCounters,
}

impl Link {
    /// `rtt` sizes the default queue (one bandwidth-delay product).
    pub fn new(spec: &LinkSpec, blackouts: &[Blackout], rtt: Duration, rng: ChaCha8Rng) -> Link {
        let (server, mean_bps) = match &spec.capacity {
            Capacity::Rate { bps } => (
                Server::Rate {
                    bps: *bps as f64,
                    busy_until: Duration::ZERO,
                },
                *bps as f64,
            ),
            Capacity::Trace(t) => (
                Server::Trace {
                    trace: t.clone(),
                    next_op: 0,
                    left: 0,
                },
                t.capacity_bps(Duration::ZERO, t.period()),
            ),
        };
        Link {
            server,
            delay: spec.delay,
            jitter: spec.jitter,
            loss: spec.loss,
            burst: spec.burst_loss,
            in_bad_state: false,
            blackouts: blackouts.to_vec(),
            queue_limit_bytes: spec.queue_limit_bytes(mean_bps, rtt, 1500),
            queue: VecDeque::new(),
            queued_bytes: 0,
            last_arrival: Duration::ZERO,
            rng,
            counters: LinkCounters::default(),
        }
    }

    pub fn queue_limit_bytes(&self) -> usize {
        self.queue_limit_bytes
    }

    fn dark(&self, t: Duration) -> bool {
        self.blackouts.iter().any(|b| b.contains(t))
    }

    /// Whether this packet is lost in transit (random or bursty loss).
    fn lost(&mut self) -> bool {
        if let Some(ge) = self.burst {
            let flip = if self.in_bad_state {
                ge.p_bad_to_good
            } else {
                ge.p_good_to_bad
            };
            if self.rng.gen::<f64>() < flip {
                self.in_bad_state = !self.in_bad_state;
            }
            if self.in_bad_state && self.rng.gen::<f64>() < ge.loss_in_bad {
                return true;
            }
        }
        self.loss > 0.0 && self.rng.gen::<f64>() < self.loss
    }

    /// When the last byte of a `bytes`-long packet entering service no
    /// earlier than `now` leaves the bottleneck.
    fn serve(&mut self, now: Duration, bytes: usize) -> Duration {
        match &mut self.server {
            Server::Rate { bps, busy_until } => {
                let start = (*busy_until).max(now);
                *busy_until = start + Duration::from_secs_f64(bytes as f64 * 8.0 / *bps);
                *busy_until
            }
            Server::Trace {
                trace,
                next_op,
                left,
            } => {
                // Opportunities that passed while the queue was empty are lost,
                // as in mahimahi.
                let first_usable = trace.first_opportunity_at_or_after(now);
                if *next_op < first_usable {
                    *next_op = first_usable;
                    *left = OPPORTUNITY_BYTES;
                } else if *left == 0 {
                    *left = OPPORTUNITY_BYTES;
                }
                let mut need = bytes as u64;
                loop {
                    let take = need.min(*left);
                    need -= take;
                    *left -= take;
                    if need == 0 {
                        let done = trace.opportunity_time(*next_op);
                        if *left == 0 {
                            *next_op += 1;
                        }
                        return done;
                    }
                    *next_op += 1;
                    *left = OPPORTUNITY_BYTES;
                }
            }
        }
    }

    pub fn offer(&mut self, now: Duration, bytes: usize) -> Offer {
        self.counters.offered_packets += 1;
        self.counters.offered_bytes += bytes as u64;
        while self.queue.front().is_some_and(|&(d, _)| d <= now) {
            let (_, b) = self.queue.pop_front().expect("front exists");
            self.queued_bytes -= b;
        }
        if self.dark(now) {
            self.counters.dropped_blackout += 1;
            return Offer::Dropped(Drop::Blackout);
        }
        if self.queued_bytes + bytes > self.queue_limit_bytes {
            self.counters.dropped_queue += 1;
            return Offer::Dropped(Drop::Queue);
        }
        let departs = self.serve(now, bytes);
        self.queue.push_back((departs, bytes));
        self.queued_bytes += bytes;
        if self.dark(departs) {
            self.counters.dropped_blackout += 1;
            return Offer::Dropped(Drop::Blackout);
        }
        if self.lost() {
            self.counters.dropped_loss += 1;
            return Offer::Dropped(Drop::Loss);
        }
        let jitter = if self.jitter.is_zero() {
            Duration::ZERO
        } else {
            self.jitter.mul_f64(self.rng.gen::<f64>())
        };
        let arrives = (departs + self.delay + jitter).max(self.last_arrival);
        self.last_arrival = arrives;
        self.counters.delivered_packets += 1;
        self.counters.delivered_bytes += bytes as u64;
        Offer::Arrives(arrives)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::spec::PathSpec;
    use rand::SeedableRng;

    fn link(spec: &str) -> Link {
        let s = PathSpec::parse(spec).unwrap();
        Link::new(
            &s.up,
            &s.blackouts,
            Duration::from_millis(100),
            ChaCha8Rng::seed_from_u64(1),
        )
    }

    #[test]
    fn serializes_at_rate_and_adds_delay() {
        let mut l = link("8mbit,10ms");
        // 1000 bytes at 8 Mbit/s = 1 ms.
        assert_eq!(
            l.offer(Duration::ZERO, 1000),
            Offer::Arrives(Duration::from_millis(11))
        );
        assert_eq!(
            l.offer(Duration::ZERO, 1000),
            Offer::Arrives(Duration::from_millis(12))
        );
        assert_eq!(
            l.offer(Duration::from_millis(5), 1000),
            Offer::Arrives(Duration::from_millis(16))
        );
    }

    #[test]
    fn drop_tail_queue() {
        let mut l = link("8mbit,10ms,queue=3");
        let outcomes: Vec<Offer> = (0..5).map(|_| l.offer(Duration::ZERO, 1500)).collect();
        assert_eq!(
            outcomes
                .iter()
                .filter(|o| **o == Offer::Dropped(Drop::Queue))
                .count(),
            2
        );
    }

    #[test]
    fn blackout_drops_inside_only() {
        let mut l = link("8mbit,1ms,blackout=1s+1s");
        assert!(matches!(
            l.offer(Duration::from_millis(500), 100),
            Offer::Arrives(_)
        ));
        assert_eq!(
            l.offer(Duration::from_millis(1500), 100),
            Offer::Dropped(Drop::Blackout)
        );
        assert!(matches!(
            l.offer(Duration::from_millis(2000), 100),
            Offer::Arrives(_)
        ));
    }

    #[test]
    fn random_loss_rate() {
        let mut l = link("1gbit,1ms,loss=10%,queue=100000");
        let n = 100_000;
        let lost = (0..n)
            .filter(|i| {
                l.offer(Duration::from_micros(*i as u64 * 20), 100) == Offer::Dropped(Drop::Loss)
            })
            .count();
        let rate = lost as f64 / n as f64;
        // 10 % +- 4.5 sigma (sigma ~ 0.095 %).
        assert!((rate - 0.10).abs() < 0.0045, "{rate}");
    }

    #[test]
    fn bursty_loss_has_long_run_mean() {
        // Stationary bad fraction = p / (p + r) = 1 / (1 + 9) = 10 %.
        let mut l = link("1gbit,1ms,ge=1%:9%:100%,queue=100000");
        let n = 200_000;
        let outcomes: Vec<bool> = (0..n)
            .map(|i| {
                l.offer(Duration::from_micros(i as u64 * 20), 100) == Offer::Dropped(Drop::Loss)
            })
            .collect();
        let rate = outcomes.iter().filter(|x| **x).count() as f64 / n as f64;
        assert!((rate - 0.10).abs() < 0.02, "{rate}");
        // Losses cluster: a loss is followed by a loss far more often than 10 %.
        let pairs = outcomes.windows(2).filter(|w| w[0]).count() as f64;
        let follow = outcomes.windows(2).filter(|w| w[0] && w[1]).count() as f64;
        assert!(follow / pairs > 0.8, "{}", follow / pairs);
    }

    #[test]
    fn trace_link_uses_opportunities() {
        let mut l = Link::new(
            &LinkSpec {
                capacity: Capacity::Trace(Trace::parse("t", "1\n2\n10\n").unwrap()),
                delay: Duration::ZERO,
                jitter: Duration::ZERO,
                loss: 0.0,
                burst_loss: None,
                queue: Some(crate::spec::QueueLimit::Packets(100)),
            },
            &[],
            Duration::from_millis(10),
            ChaCha8Rng::seed_from_u64(1),
        );
        let ms = Duration::from_millis;
        assert_eq!(l.offer(ms(0), 1500), Offer::Arrives(ms(1)));
        assert_eq!(l.offer(ms(0), 1000), Offer::Arrives(ms(2)));
        // 500 bytes left in the opportunity at 2 ms, so a 400-byte packet shares it.
        assert_eq!(l.offer(ms(0), 400), Offer::Arrives(ms(2)));
        assert_eq!(l.offer(ms(0), 400), Offer::Arrives(ms(10)));
        // Opportunities that passed while idle are lost: after 15 ms the next is 20 ms.
        assert_eq!(l.offer(ms(15), 1500), Offer::Arrives(ms(20)));
    }
}
