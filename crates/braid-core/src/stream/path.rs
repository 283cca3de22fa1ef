//! One path of a stream connection, both halves: the sending side's
//! congestion control and loss detection (the shared [`PathSender`]) plus
//! which segment each of its packets carried; the receiving side's record
//! of the path's packet numbers, for its acknowledgements.

use std::collections::VecDeque;
use std::time::Duration;

use crate::cc::{Bbr, CcKind, Controller};
use crate::path::{OwdClock, PathSender};
use crate::time::Instant;
use crate::wire::AckFrame;

/// A stream path's BBR probes for bandwidth every this many minimum RTTs
/// instead of BBR v1's 8 (see [`Bbr::with_probe_bw_phases`]). A probe
/// finds at most a quarter more, so after a fade a cellular path's estimate
/// climbed back a quarter per 8 round trips, and the path was paced below
/// what it could carry: of the 1.68 Mbit/s of TMobile-LTE capacity left
/// unused beside a 10 Mbit/s path, three quarters went while pacing held
/// the path back (once 22 Mbit/s came back, the estimate took 0.9 s to
/// climb from 10.7 to 18.5). Probing every 3 round trips found it in about
/// a third of that: 88.9 % -> 90.8 % of the capacity (BENCHMARKS.md,
/// "Reliable transfer"). The cycle stays balanced (its mean gain is 1), so a
/// constant-rate path queues no more than before. The datagram tunnel
/// keeps BBR v1's cycle: a probe's overflow there is a loss for the TCP
/// flows it carries, where the stream resends what a probe drops.
const BBR_PROBE_BW_PHASES: usize = 3;
/// Acknowledge at least every this many data packets on a path...
const ACK_EVERY: u32 = 2;
/// ...and no later than this after a data packet arrived.
const MAX_ACK_DELAY: Duration = Duration::from_millis(2);

#[derive(Debug)]
pub struct StreamPath {
    pub sender: PathSender,
    /// Each packet in flight: the connection sequence number it carried
    /// and whether it was a probe, indexed by `pseq - first_pseq`; `None`
    /// once resolved.
    carried: VecDeque<Option<Carried>>,
    first_pseq: u64,
    pub inbound: InboundAcks,
}

#[derive(Debug, Clone, Copy)]
struct Carried {
    conn_seq: u64,
    probe: bool,
}

/// Fate of one packet, as the path's acknowledgements tell it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    Acked(u64),
    /// `probe`: the packet was a probe of a down path, which the
    /// connection never counted as a copy in flight.
    Lost {
        seq: u64,
        probe: bool,
    },
}

/// The congestion controller a stream path of this kind runs.
pub fn controller(kind: CcKind) -> Box<dyn Controller> {
    match kind {
        CcKind::Bbr => Box::new(Bbr::new().with_probe_bw_phases(BBR_PROBE_BW_PHASES)),
        CcKind::Ccid2 => kind.build(),
    }
}

impl StreamPath {
    pub fn new(id: u8, cc: Box<dyn Controller>, pacing_credit: Duration) -> StreamPath {
        StreamPath {
            sender: PathSender::new(id, 1.0, cc).with_pacing_credit(pacing_credit),
            carried: VecDeque::new(),
            first_pseq: 0,
            inbound: InboundAcks::default(),
        }
    }

    /// Records a packet carrying `conn_seq` leaving; returns its path number.
    /// `app_limited`: nothing else waits to be sent, so the path's rate
    /// sample may understate it. `probe`: a probe of this down path.
    pub fn on_sent(
        &mut self,
        now: Instant,
        conn_seq: u64,
        ip_bytes: u64,
        app_limited: bool,
        probe: bool,
    ) -> u32 {
        let stamp = self.sender.on_sent(now, conn_seq, ip_bytes, app_limited);
        self.carried.push_back(Some(Carried { conn_seq, probe }));
        stamp.pseq
    }

    /// `(pseq, conn_seq)` of the packets still in flight, oldest first.
    pub fn carried(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.carried
            .iter()
            .enumerate()
            .filter_map(|(i, c)| c.map(|c| (self.first_pseq + i as u64, c.conn_seq)))
    }

    /// Applies an acknowledgement of this path; appends each resolved
    /// packet's segment fate to `fates`.
    pub fn on_ack(
        &mut self,
        now: Instant,
        ack: &AckFrame,
        owd_clock: &mut OwdClock,
        fates: &mut Vec<Fate>,
    ) {
        let (carried, first) = (&mut self.carried, self.first_pseq);
        self.sender
            .on_ack_observed(now, ack, owd_clock, |pseq, acked| {
                let slot = pseq
                    .checked_sub(first)
                    .and_then(|i| usize::try_from(i).ok())
                    .and_then(|i| carried.get_mut(i));
                if let Some(c) = slot.and_then(Option::take) {
                    fates.push(if acked {
                        Fate::Acked(c.conn_seq)
                    } else {
                        Fate::Lost {
                            seq: c.conn_seq,
                            probe: c.probe,
                        }
                    });
                }
            });
        self.pop_resolved();
    }

    /// Fires the path's timeout: every packet in flight is lost.
    pub fn on_timeout(&mut self, now: Instant, fates: &mut Vec<Fate>) {
        let (carried, first) = (&mut self.carried, self.first_pseq);
        self.sender.on_timeout_observed(now, |pseq| {
            let slot = pseq
                .checked_sub(first)
                .and_then(|i| usize::try_from(i).ok())
                .and_then(|i| carried.get_mut(i));
            if let Some(c) = slot.and_then(Option::take) {
                fates.push(Fate::Lost {
                    seq: c.conn_seq,
                    probe: c.probe,
                });
            }
        });
        self.pop_resolved();
    }

    fn pop_resolved(&mut self) {
        while self.carried.front().is_some_and(Option::is_none) {
            self.carried.pop_front();
            self.first_pseq += 1;
        }
    }
}

/// The receiving side's record of one path's packet numbers.
#[derive(Debug, Default)]
pub struct InboundAcks {
    largest: Option<u64>,
    /// Bit `i`: `largest - 1 - i` arrived.
    bitmap: u64,
    largest_at: Instant,
    unacked: u32,
    ack_due: Option<Instant>,
    /// A packet arrived since this path's acknowledgement last rode on
    /// another path's (see [`InboundAcks::copy_ack`]).
    news_for_copy: bool,
}

impl InboundAcks {
    /// A data packet numbered `pseq` (32 bits, widened here) arrived.
    pub fn on_packet(&mut self, now: Instant, pseq: u32) {
        let expected = self.largest.map_or(0, |l| l + 1);
        let n = crate::wire::widen(pseq, expected);
        let out_of_order = match self.largest {
            None => {
                self.largest = Some(n);
                self.largest_at = now;
                false
            }
            Some(l) if n > l => {
                let shift = n - l;
                self.bitmap = if shift > 64 {
                    0
                } else {
                    // The old largest becomes bit shift-1.
                    ((self.bitmap << 1) | 1)
                        .checked_shl((shift - 1) as u32)
                        .unwrap_or(0)
                };
                self.largest = Some(n);
                self.largest_at = now;
                shift > 1
            }
            Some(l) => {
                let below = l - n;
                if (1..=64).contains(&below) {
                    self.bitmap |= 1u64 << (below - 1);
                }
                true
            }
        };
        self.unacked += 1;
        self.news_for_copy = true;
        self.ack_due = Some(if out_of_order || self.unacked >= ACK_EVERY {
            now
        } else {
            self.ack_due.unwrap_or(now + MAX_ACK_DELAY)
        });
    }

    pub fn ack_due(&self) -> Option<Instant> {
        self.ack_due
    }

    /// Asks for an acknowledgement now (the peer needs a window update).
    pub fn request_ack(&mut self, now: Instant) {
        if self.largest.is_some() {
            self.ack_due = Some(now);
        }
    }

    /// The acknowledgement to send now, if one is due.
    pub fn take_ack(&mut self, now: Instant, path: u8) -> Option<AckFrame> {
        if !matches!(self.ack_due, Some(t) if t <= now) {
            return None;
        }
        self.ack_due = None;
        self.unacked = 0;
        self.frame(now, path)
    }

    /// This path's acknowledgement as it stands, to ride on a control
    /// packet of another path, if a packet arrived here since the last
    /// such copy. A path's own acknowledgements return on it, and a radio
    /// link's return direction fades on its own (an LTE trace's downlink
    /// holds acknowledgements for 0.8 s at a time while its uplink carries
    /// data): the copies keep the path's sender hearing what arrived.
    /// Only news is copied, so a path that delivers nothing is not kept
    /// alive by copies of its last acknowledgement.
    pub fn copy_ack(&mut self, now: Instant, path: u8) -> Option<AckFrame> {
        if !self.news_for_copy {
            return None;
        }
        self.news_for_copy = false;
        self.frame(now, path)
    }

    fn frame(&self, now: Instant, path: u8) -> Option<AckFrame> {
        let largest = self.largest?;
        let delay = now - self.largest_at;
        Some(AckFrame {
            path,
            largest_pseq: largest as u32,
            ack_delay_us: u32::try_from(delay.as_micros()).unwrap_or(u32::MAX),
            recv_ts_us: self.largest_at.wire_micros(),
            bitmap: self.bitmap,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cc::Ccid2;

    fn t(ms: u64) -> Instant {
        Instant::from_nanos(ms * 1_000_000)
    }

    #[test]
    fn inbound_acks_follow_arrivals() {
        let mut a = InboundAcks::default();
        a.on_packet(t(1), 0);
        assert_eq!(a.ack_due(), Some(t(1) + MAX_ACK_DELAY));
        assert!(a.take_ack(t(1), 0).is_none());
        a.on_packet(t(2), 1);
        let ack = a.take_ack(t(2), 4).unwrap();
        assert_eq!((ack.path, ack.largest_pseq, ack.bitmap), (4, 1, 0b1));
        // 2 lost, 3 arrives: out of order, acknowledged at once.
        a.on_packet(t(3), 3);
        let ack = a.take_ack(t(3), 4).unwrap();
        assert_eq!((ack.largest_pseq, ack.bitmap), (3, 0b110));
        // 2 arrives late: fills its bit.
        a.on_packet(t(4), 2);
        let ack = a.take_ack(t(4), 4).unwrap();
        assert_eq!((ack.largest_pseq, ack.bitmap), (3, 0b111));
        assert_eq!(ack.ack_delay_us, 1000);
        // A jump past the bitmap clears it.
        a.on_packet(t(5), 100);
        assert_eq!(a.take_ack(t(5), 4).unwrap().bitmap, 0);
    }

    #[test]
    fn copies_carry_only_news_and_leave_the_paths_own_acks_alone() {
        let mut a = InboundAcks::default();
        assert!(a.copy_ack(t(1), 2).is_none(), "nothing arrived yet");
        a.on_packet(t(1), 0);
        a.on_packet(t(1), 1);
        let copy = a.copy_ack(t(3), 2).unwrap();
        assert_eq!((copy.path, copy.largest_pseq, copy.bitmap), (2, 1, 0b1));
        assert_eq!(copy.ack_delay_us, 2000, "delay as of the copy");
        assert!(a.copy_ack(t(4), 2).is_none(), "no news since");
        // The path's own acknowledgement is still due, and taking it does
        // not count as a copy.
        assert_eq!(a.take_ack(t(4), 2).unwrap().largest_pseq, 1);
        a.on_packet(t(5), 2);
        assert!(a.take_ack(t(5), 2).is_none(), "one packet: not due yet");
        assert_eq!(a.copy_ack(t(5), 2).unwrap().largest_pseq, 2);
    }

    #[test]
    fn path_acks_map_back_to_segments() {
        let mut p = StreamPath::new(0, Box::new(Ccid2::new()), Duration::ZERO);
        for seq in [100, 200, 300, 400, 500] {
            p.on_sent(t(0), seq, 1500, false, false);
        }
        let mut fates = Vec::new();
        // Packet 1 (segment 200) missing; 4, 3, 2 and 0 acked.
        let ack = AckFrame {
            path: 0,
            largest_pseq: 4,
            ack_delay_us: 0,
            recv_ts_us: 0,
            bitmap: 0b1011,
        };
        p.on_ack(t(30), &ack, &mut OwdClock::for_sender(), &mut fates);
        fates.sort_by_key(|f| match f {
            Fate::Acked(s) | Fate::Lost { seq: s, .. } => *s,
        });
        assert_eq!(
            fates,
            vec![
                Fate::Acked(100),
                Fate::Lost {
                    seq: 200,
                    probe: false
                },
                Fate::Acked(300),
                Fate::Acked(400),
                Fate::Acked(500)
            ]
        );
        assert!(p.carried.is_empty());
        assert_eq!(p.carried().next(), None);
        p.on_sent(t(40), 600, 1500, false, false);
        // A probe's fate says it was one.
        p.on_sent(t(40), 700, 1500, false, true);
        assert_eq!(p.carried().collect::<Vec<_>>(), vec![(5, 600), (6, 700)]);
        fates.clear();
        p.on_timeout(t(2000), &mut fates);
        assert_eq!(
            fates,
            vec![
                Fate::Lost {
                    seq: 600,
                    probe: false
                },
                Fate::Lost {
                    seq: 700,
                    probe: true
                }
            ]
        );
    }
}
