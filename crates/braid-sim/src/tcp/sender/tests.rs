//! The TCP model against a toy network: a drop-tail bottleneck of fixed
//! rate and buffer, a fixed delay each way, and chosen losses.

use std::collections::VecDeque;
use std::time::Duration;

use super::*;
use crate::tcp::TcpReceiver;

struct Net {
    sender: TcpSender,
    receiver: TcpReceiver,
    now: Duration,
    /// Time to serialize one segment at the bottleneck.
    per_segment: Duration,
    buffer: usize,
    delay: Duration,
    /// Arrival times at the receiver of segments through the bottleneck.
    data: VecDeque<(Duration, u64, u64)>,
    bottleneck_free: Duration,
    acks: VecDeque<(Duration, Ack)>,
    drop: Box<dyn FnMut(Duration, u64) -> bool>,
    cwnd_trace: Vec<(Duration, f64)>,
    delivered_order: Vec<u64>,
}

impl Net {
    fn new(cc: TcpCc, mbit: f64, delay_ms: u64, buffer: usize) -> Net {
        Net {
            sender: TcpSender::new(cc),
            receiver: TcpReceiver::new(),
            now: Duration::ZERO,
            per_segment: Duration::from_secs_f64(1500.0 * 8.0 / (mbit * 1e6)),
            buffer,
            delay: Duration::from_millis(delay_ms),
            data: VecDeque::new(),
            bottleneck_free: Duration::ZERO,
            acks: VecDeque::new(),
            drop: Box::new(|_, _| false),
            cwnd_trace: Vec::new(),
            delivered_order: Vec::new(),
        }
    }

    fn pump(&mut self) {
        while let Some(seg) = self.sender.poll_segment(self.now) {
            let queued = self
                .data
                .iter()
                .filter(|d| d.0 > self.now + self.delay)
                .count();
            if queued >= self.buffer || (self.drop)(self.now, seg.seq) {
                continue;
            }
            let start = self.bottleneck_free.max(self.now);
            self.bottleneck_free = start + self.per_segment;
            let nanos = self.now.as_nanos() as u64;
            self.data
                .push_back((self.bottleneck_free + self.delay, seg.seq, nanos));
        }
    }

    /// Runs until `until`, one event at a time.
    fn run(&mut self, until: Duration) {
        self.pump();
        loop {
            let t_data = self.data.front().map(|d| d.0);
            let t_ack = self.acks.front().map(|a| a.0);
            let t_timer = self.sender.poll_timeout();
            let Some(next) = [t_data, t_ack, t_timer].into_iter().flatten().min() else {
                break;
            };
            if next > until {
                break;
            }
            self.now = next;
            if t_data == Some(next) {
                let (_, seq, sent) = self.data.pop_front().unwrap();
                let before = self.receiver.delivered();
                let ack = self.receiver.on_segment(seq, sent);
                self.delivered_order
                    .extend(before..self.receiver.delivered());
                self.acks.push_back((next + self.delay, ack));
            } else if t_ack == Some(next) {
                let (_, ack) = self.acks.pop_front().unwrap();
                self.sender.on_ack(next, &ack);
            } else {
                self.sender.on_timeout(next);
            }
            self.cwnd_trace.push((next, self.sender.cwnd()));
            self.pump();
        }
        self.now = until;
    }
}

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

#[test]
fn everything_arrives_once_in_order_despite_random_loss() {
    for cc in [TcpCc::Cubic, TcpCc::Reno] {
        let mut net = Net::new(cc, 10.0, 20, 50);
        // 2 % loss from a fixed-seed generator (xorshift).
        let mut x = 0x2545_F491_4F6C_DD1Du64;
        net.drop = Box::new(move |_, _| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.is_multiple_of(50)
        });
        net.run(secs(20.0));
        let got = net.receiver.delivered();
        assert!(got > 2000, "{cc:?}: {got} segments in 20 s");
        assert!(net.delivered_order.iter().copied().eq(0..got));
        assert!(net.sender.counters.retransmissions > 0);
        assert!(net.sender.counters.fast_recoveries > 0);
    }
}

#[test]
fn fills_a_clean_bottleneck() {
    // 10 Mbit/s, 40 ms round trip, one BDP of buffer.
    for cc in [TcpCc::Cubic, TcpCc::Reno] {
        let mut net = Net::new(cc, 10.0, 20, 34);
        // Slow start overshoots to twice what the path holds; the
        // reduction by beta does not bring it under, so retransmissions are
        // lost too and the timer ends that (no HyStart, no RACK). After
        // that, losses are single and fast recovery repairs them.
        net.run(secs(2.0));
        let startup_timeouts = net.sender.counters.timeouts;
        net.run(secs(30.0));
        let rate = net.receiver.delivered() as f64 * 1500.0 * 8.0 / 30.0;
        assert!(rate > 0.9 * 10e6, "{cc:?}: {rate}");
        assert_eq!(net.sender.counters.timeouts, startup_timeouts, "{cc:?}");
        assert!(net.sender.counters.fast_recoveries > 5, "{cc:?}");
    }
}

/// The window just before and just after the one loss.
fn around_loss(cc: TcpCc) -> (f64, f64, Net) {
    // 10 Mbit/s, 200 ms round trip: 167 segments in flight fill it. The
    // buffer is unbounded, the one loss is segment 60, sent in the third
    // round of slow start, and the window never exceeds what the path holds,
    // so the round trip stays put and the timer has no cause to fire.
    let mut net = Net::new(cc, 10.0, 100, 100_000);
    let mut dropped = false;
    net.drop = Box::new(move |_, seq| {
        let hit = !dropped && seq == 60;
        dropped |= hit;
        hit
    });
    net.run(secs(2.0));
    assert_eq!(net.sender.counters.fast_recoveries, 1, "{cc:?}");
    let cut = net
        .cwnd_trace
        .windows(2)
        .find(|w| w[1].1 < w[0].1)
        .expect("a reduction");
    (cut[0].1, cut[1].1, net)
}

#[test]
fn one_loss_cuts_the_window_by_beta_once() {
    let (before, after, net) = around_loss(TcpCc::Reno);
    assert!(
        (after - 0.5 * before).abs() < 1e-9,
        "reno {before} -> {after}"
    );
    assert!(!net.sender.in_fast_recovery(), "recovery ended");
    assert_eq!(net.sender.counters.timeouts, 0);
    assert_eq!(net.sender.counters.retransmissions, 1);
    let (before, after, net) = around_loss(TcpCc::Cubic);
    assert!(
        (after - 0.7 * before).abs() < 1e-9,
        "cubic {before} -> {after}"
    );
    assert_eq!(net.sender.counters.retransmissions, 1);
    assert!((net.sender.ssthresh() - after).abs() < 1e-9);
}

#[test]
fn a_blackout_costs_backed_off_timeouts_then_recovers() {
    let mut net = Net::new(TcpCc::Cubic, 10.0, 20, 34);
    // Everything sent from 5 s to 7 s is lost.
    net.drop = Box::new(|t, _| t >= secs(5.0) && t < secs(7.0));
    net.run(secs(5.0));
    assert!(net.sender.cwnd() > 10.0);
    let t0 = net.sender.counters.timeouts;
    net.run(secs(7.0));
    // RTO about 0.27 s (a 70 ms SRTT plus the 200 ms floor), then
    // doubling: 0.27 + 0.54 + 1.08 fit in 2 s, a fourth would not.
    let t = net.sender.counters.timeouts;
    assert_eq!(t - t0, 3, "timeouts in the blackout");
    assert_eq!(net.sender.cwnd(), 1.0);
    // The fourth timeout, 2.2 s after the third, finds the path back.
    net.run(secs(10.0));
    assert_eq!(net.sender.counters.timeouts, t + 1);
    let at_10 = net.receiver.delivered();
    net.run(secs(15.0));
    let rate = (net.receiver.delivered() - at_10) as f64 * 1500.0 * 8.0 / 5.0;
    assert!(rate > 0.6 * 10e6, "recovered to {rate}");
    let got = net.receiver.delivered();
    assert!(net.delivered_order.iter().copied().eq(0..got));
}

#[test]
fn hystart_ends_slow_start_when_the_queue_builds_before_it_overflows() {
    // 10 Mbit/s, 40 ms round trip, four BDPs of buffer: slow start alone
    // overflows it; HyStart sees the queue's delay first. One second: past
    // the exit the window still grows 5 % per round trip (no loss yet, as
    // Linux's CUBIC), which fills this buffer within a few seconds more.
    let run = |sender: TcpSender| {
        let mut net = Net::new(TcpCc::Cubic, 10.0, 20, 140);
        net.sender = sender;
        net.run(secs(1.0));
        let exit_cwnd = net.sender.ssthresh();
        (net.sender.counters.clone(), exit_cwnd)
    };
    let (plain, _) = run(TcpSender::new(TcpCc::Cubic));
    assert_eq!(plain.hystart_exits, 0);
    assert!(plain.fast_recoveries + plain.timeouts > 0, "{plain:?}");
    let (hystart, exit_cwnd) = run(TcpSender::with_hystart(TcpCc::Cubic));
    assert_eq!(hystart.hystart_exits, 1, "{hystart:?}");
    assert_eq!((hystart.fast_recoveries, hystart.timeouts), (0, 0));
    // The path holds 34 segments, the buffer 140 more: the exit comes
    // once the queue is a few ms deep, well before it is full.
    assert!((34.0..120.0).contains(&exit_cwnd), "{exit_cwnd}");
}
