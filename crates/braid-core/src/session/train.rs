//! Packet trains: a path's rate measured before traffic measures it.
//!
//! Earliest-arrival prices a path by its measured rate. On a fresh tunnel
//! the slower path's first samples come from the trickle it is given
//! while the faster path's window opens; priced at that trickle, it is
//! passed over until the send queue is deep, and that queueing ends the
//! inner TCP's slow start early. A first run of a fresh tunnel got
//! 0.83-0.91 of the paths' sum where later runs, which start from the
//! rates the first one measured, got 0.89-0.93 (BENCHMARKS.md, "Packet
//! trains").
//!
//! So when a path comes up with no rate known, its sender sends
//! [`TRAIN_PACKETS`] full-size packets back to back. The path's
//! bottleneck spaces them at its rate; the receiver reports how many
//! arrived after the first, their bytes, and the time from the first
//! arrival to the last, and the sender seeds the path's estimates with
//! that rate (`PathSender::seed_rate`). Once per path and session, tried
//! again if no report comes back, never on a path whose rate traffic has
//! already measured.

use std::time::Duration;

use super::frame::{TrainPacket, TrainReport};
use crate::time::Instant;

/// Packets per train: at 60 Mbit/s the 31 after the first span about
/// 6 ms, long against the receiver's clock (one reading per receive
/// batch); 46 kB, once per path.
pub(crate) const TRAIN_PACKETS: u8 = 32;
/// A train without a report is sent again after this long.
const TRAIN_RETRY: Duration = Duration::from_secs(1);
/// Trains per path at most (one, and retries for lost reports).
const TRAIN_ATTEMPTS: u8 = 3;
/// Fewest packets after the first a report must count: fewer give too
/// coarse a spacing (a bottleneck queue that drops most of a train
/// still lets this many through on any path worth measuring).
const MIN_RECEIVED: u8 = 8;
/// Fewer packets do, over a span this long at least: a thin path's queue
/// drops most of a train, and the few that pass, spread this far, still
/// give its rate (a 3G path while driving: 7 over 236 ms, 0.36 Mbit/s).
/// Over a shorter span a bursty link misleads: a radio link delivers
/// several packets in one millisecond, and 3 in 6 ms read 6 Mbit/s on a
/// path carrying 0.4.
const MIN_RECEIVED_LONG: u8 = 4;
const LONG_SPAN: Duration = Duration::from_millis(50);
/// Shortest span a report may give: below it the receiver's clock cannot
/// tell the spacing from its batching (a path this fast finds its rate
/// in a few round trips anyway).
const MIN_SPAN: Duration = Duration::from_micros(200);
/// A train whose last packets were lost (a short link queue drops a
/// train's tail) is reported once none has arrived for four of its
/// packets' mean spacing, within these bounds.
const QUIET_MIN: Duration = Duration::from_millis(20);
const QUIET_MAX: Duration = Duration::from_millis(200);
/// No path measured faster than this is believed.
const MAX_RATE_BPS: f64 = 100e9;

/// One path's trains, both ways: those this end sends, and the one it
/// is receiving from the peer.
#[derive(Debug, Default)]
pub(crate) struct PathTrains {
    next_id: u8,
    /// The train sent last and when, until its report comes.
    outstanding: Option<(u8, Instant)>,
    attempts: u8,
    /// The rate the last report gave, IP bits per second.
    measured_bps: Option<f64>,
    /// A train went without a usable report: none came within
    /// [`TRAIN_RETRY`], or it counted too few packets (not: too short a
    /// span).
    failed: bool,
    receiving: Option<Receiving>,
}

/// A train arriving from the peer.
#[derive(Debug)]
struct Receiving {
    id: u8,
    first_at: Instant,
    last_at: Instant,
    received: u8,
    bytes: u32,
}

impl PathTrains {
    /// When the next train may go: `None` once one was measured or all
    /// attempts were made.
    pub(crate) fn due(&self) -> Option<Instant> {
        if self.measured_bps.is_some() || self.attempts >= TRAIN_ATTEMPTS {
            return None;
        }
        Some(
            self.outstanding
                .map_or(Instant::ZERO, |(_, at)| at + TRAIN_RETRY),
        )
    }

    /// Starts a train; returns its packets' common fields (index 0).
    pub(crate) fn start(&mut self, now: Instant) -> TrainPacket {
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        self.failed |= self.outstanding.is_some();
        self.outstanding = Some((id, now));
        self.attempts += 1;
        TrainPacket {
            id,
            index: 0,
            count: TRAIN_PACKETS,
        }
    }

    /// A train failed to measure the path and none has measured it: a
    /// path too thin or too lossy to pass one (see
    /// `PathView::train_failed`).
    pub(crate) fn failed(&self) -> bool {
        self.failed && self.measured_bps.is_none()
    }

    /// When the outstanding train counts as failed for want of a report:
    /// [`TRAIN_RETRY`] after it left, whether or not a retry may go then.
    /// A retry waits for a quiet session, so a transfer that starts while
    /// the report is still awaited kept the path "unmeasured", tried
    /// first with its packets, for as long as it ran: a 3G path in an
    /// outage whose train never came back took packets due a second
    /// later than on the fixed line beside it (BENCHMARKS.md, "A train
    /// that never came back").
    pub(crate) fn expires_at(&self) -> Option<Instant> {
        let (_, at) = self.outstanding?;
        (!self.failed).then_some(at + TRAIN_RETRY)
    }

    /// Marks the outstanding train failed once [`Self::expires_at`] has
    /// come; returns whether it did so now.
    pub(crate) fn expire(&mut self, now: Instant) -> bool {
        let expired = self.expires_at().is_some_and(|t| t <= now);
        self.failed |= expired;
        expired
    }

    /// The rate the last report gave, IP bits per second.
    pub(crate) fn measured_bps(&self) -> Option<f64> {
        self.measured_bps
    }

    /// A train packet of `wire_len` bytes (UDP payload) arrived; returns
    /// the report to send when it is the train's last.
    pub(crate) fn on_packet(
        &mut self,
        now: Instant,
        t: TrainPacket,
        wire_len: usize,
    ) -> Option<TrainReport> {
        if t.index >= t.count {
            return None;
        }
        let bytes = u32::try_from(wire_len).unwrap_or(u32::MAX);
        match &mut self.receiving {
            Some(r) if r.id == t.id => {
                r.last_at = now;
                r.received = r.received.saturating_add(1);
                r.bytes = r.bytes.saturating_add(bytes);
            }
            _ => {
                self.receiving = Some(Receiving {
                    id: t.id,
                    first_at: now,
                    last_at: now,
                    received: 0,
                    bytes: 0,
                })
            }
        }
        if t.index + 1 < t.count {
            return None;
        }
        self.take_report()
    }

    /// When the train arriving now is reported if its last packet does
    /// not come.
    pub(crate) fn report_due(&self) -> Option<Instant> {
        let r = self.receiving.as_ref()?;
        let spacing = (r.last_at - r.first_at) / u32::from(r.received.max(1));
        Some(r.last_at + (spacing * 4).clamp(QUIET_MIN, QUIET_MAX))
    }

    /// The report of the train arriving now, at [`Self::report_due`].
    pub(crate) fn on_quiet(&mut self, now: Instant) -> Option<TrainReport> {
        if self.report_due()? > now {
            return None;
        }
        self.take_report()
    }

    fn take_report(&mut self) -> Option<TrainReport> {
        let r = self.receiving.take().filter(|r| r.received > 0)?;
        let span = u32::try_from((r.last_at - r.first_at).as_micros()).unwrap_or(u32::MAX);
        Some(TrainReport {
            id: r.id,
            received: r.received,
            bytes: r.bytes,
            span_us: span,
        })
    }

    /// The peer's report of our train; `ip_overhead`: the IP and UDP
    /// header bytes around each packet on this path. Returns the measured
    /// rate in IP bits per second, if the report is of the outstanding
    /// train and says enough.
    pub(crate) fn on_report(&mut self, r: TrainReport, ip_overhead: usize) -> Option<f64> {
        if self.outstanding.map(|(id, _)| id) != Some(r.id) {
            return None;
        }
        self.outstanding = None;
        let span = Duration::from_micros(u64::from(r.span_us));
        let enough =
            r.received >= MIN_RECEIVED || (r.received >= MIN_RECEIVED_LONG && span >= LONG_SPAN);
        // Too few packets: the path is thin or lossy. Too short a span
        // with enough of them: it is fast, and traffic will measure it.
        self.failed |= !enough;
        if !enough || span < MIN_SPAN {
            return None;
        }
        let ip_bytes = u64::from(r.bytes) + u64::from(r.received) * ip_overhead as u64;
        let bps = (ip_bytes as f64 * 8.0 / span.as_secs_f64()).min(MAX_RATE_BPS);
        self.measured_bps = Some(bps);
        Some(bps)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at_us(us: u64) -> Instant {
        Instant::ZERO + Duration::from_micros(us)
    }

    fn packet(id: u8, index: u8) -> TrainPacket {
        TrainPacket {
            id,
            index,
            count: TRAIN_PACKETS,
        }
    }

    #[test]
    fn a_train_spaced_by_its_bottleneck_gives_that_rate() {
        let mut sender = PathTrains::default();
        let mut receiver = PathTrains::default();
        let head = sender.start(at_us(0));
        assert_eq!(sender.due(), Some(at_us(0) + TRAIN_RETRY));
        // 1452-byte UDP payloads (1480-byte IPv4 packets) at 10 Mbit/s:
        // one every 1184 us; the third is lost.
        let mut report = None;
        for i in 0..TRAIN_PACKETS {
            if i == 2 {
                continue;
            }
            let t = TrainPacket { index: i, ..head };
            report = receiver.on_packet(at_us(5_000 + 1184 * u64::from(i)), t, 1452);
            assert_eq!(report.is_some(), i == TRAIN_PACKETS - 1);
        }
        let report = report.unwrap();
        assert_eq!(report.received, TRAIN_PACKETS - 2);
        assert_eq!(report.bytes, 1452 * u32::from(TRAIN_PACKETS - 2));
        assert_eq!(report.span_us, 1184 * u32::from(TRAIN_PACKETS - 1));
        let bps = sender.on_report(report, 28).unwrap();
        // 30 packets over 31 spacings: the loss shows as 1/31 less.
        let expected = 10e6 * 30.0 / 31.0;
        assert!((bps - expected).abs() < expected * 1e-3, "{bps}");
        assert_eq!(sender.measured_bps(), Some(bps));
        assert_eq!(sender.due(), None);
    }

    #[test]
    fn a_train_whose_tail_was_dropped_is_reported_when_it_falls_quiet() {
        let mut r = PathTrains::default();
        assert_eq!(r.report_due(), None);
        // 12 of 32 packets, 5.8 ms apart (2 Mbit/s); the rest dropped.
        for i in 0..12u8 {
            let at = at_us(5_800 * u64::from(i));
            assert_eq!(r.on_packet(at, packet(4, i), 1452), None);
        }
        let last = at_us(5_800 * 11);
        // Four spacings of quiet: 23.2 ms.
        let due = r.report_due().unwrap();
        assert_eq!(due, last + Duration::from_micros(4 * 5_800));
        assert_eq!(r.on_quiet(at_us(5_800 * 11 + 4 * 5_800 - 1)), None);
        let report = r.on_quiet(due).unwrap();
        assert_eq!(
            (report.id, report.received, report.span_us),
            (4, 11, 5_800 * 11)
        );
        assert_eq!(r.report_due(), None);
        assert_eq!(r.on_quiet(due + QUIET_MAX), None);
        // Only the first arrived: nothing to report, the state goes.
        r.on_packet(at_us(1_000_000), packet(5, 0), 1452);
        assert_eq!(r.report_due(), Some(at_us(1_000_000) + QUIET_MIN));
        assert_eq!(r.on_quiet(at_us(2_000_000)), None);
        assert_eq!(r.report_due(), None);
    }

    #[test]
    fn reports_of_other_trains_or_saying_too_little_are_not_taken() {
        let mut s = PathTrains::default();
        let first = s.start(at_us(0));
        let report = |id, received, span_us| TrainReport {
            id,
            received,
            bytes: 1452 * u32::from(received),
            span_us,
        };
        // Another train's report, then one with too few packets.
        assert_eq!(s.on_report(report(first.id + 1, 31, 40_000), 28), None);
        assert_eq!(
            s.on_report(report(first.id, MIN_RECEIVED - 1, 40_000), 28),
            None
        );
        // That report closed the train: it is sent again after the retry.
        assert_eq!(s.due(), Some(at_us(0)));
        let second = s.start(at_us(1_000_000));
        assert_ne!(second.id, first.id);
        assert_eq!(
            s.on_report(report(second.id, 31, 150), 28),
            None,
            "span too short"
        );
        let third = s.start(at_us(2_000_000));
        assert_eq!(s.on_report(report(first.id, 31, 40_000), 28), None, "stale");
        // The least a report may say: the fewest packets, the shortest span.
        let least = report(third.id, MIN_RECEIVED, MIN_SPAN.as_micros() as u32);
        let bps = s.on_report(least, 28).unwrap();
        assert_eq!(bps, f64::from(MIN_RECEIVED) * 1480.0 * 8.0 / 200e-6);
        assert_eq!(s.due(), None);
    }

    #[test]
    fn a_thin_path_is_measured_by_a_few_packets_over_a_long_span_or_marked_failed() {
        let report = |id, received, span_us| TrainReport {
            id,
            received,
            bytes: 1452 * u32::from(received),
            span_us,
        };
        // 3G: 7 of 32 over 236 ms.
        let mut s = PathTrains::default();
        let t = s.start(at_us(0));
        let bps = s.on_report(report(t.id, 7, 236_000), 28).unwrap();
        assert!((bps - 7.0 * 1480.0 * 8.0 / 0.236).abs() < 1.0, "{bps}");
        assert!(!s.failed());
        // The fewest over the shortest long span still measure ...
        let mut s = PathTrains::default();
        let t = s.start(at_us(0));
        let least = report(t.id, MIN_RECEIVED_LONG, LONG_SPAN.as_micros() as u32);
        assert!(s.on_report(least, 28).is_some());
        // ... one packet fewer, or a span a millisecond shorter, do not,
        // and mark the path failed until a train measures it.
        for (received, span) in [
            (MIN_RECEIVED_LONG - 1, LONG_SPAN),
            (MIN_RECEIVED_LONG, LONG_SPAN - Duration::from_millis(1)),
        ] {
            let mut s = PathTrains::default();
            let t = s.start(at_us(0));
            assert!(!s.failed(), "pending, not failed");
            let r = report(t.id, received, span.as_micros() as u32);
            assert_eq!(s.on_report(r, 28), None);
            assert!(s.failed());
            let t = s.start(at_us(1_000_000));
            assert!(s.failed(), "a retry does not clear it");
            assert!(s.on_report(report(t.id, 31, 40_000), 28).is_some());
            assert!(!s.failed(), "measured");
        }
        // Enough packets over too short a span: a fast path, not failed.
        let mut s = PathTrains::default();
        let t = s.start(at_us(0));
        assert_eq!(s.on_report(report(t.id, 31, 150), 28), None);
        assert!(!s.failed());
        // No report before the retry is a failure.
        let mut s = PathTrains::default();
        s.start(at_us(0));
        s.start(at_us(1_000_000));
        assert!(s.failed());
    }

    #[test]
    fn a_train_without_a_report_fails_after_the_retry_interval_without_a_retry() {
        let mut s = PathTrains::default();
        assert_eq!(s.expires_at(), None);
        let t = s.start(at_us(0));
        assert_eq!(s.expires_at(), Some(at_us(0) + TRAIN_RETRY));
        let just_before = at_us(TRAIN_RETRY.as_micros() as u64 - 1);
        assert!(!s.expire(just_before));
        assert!(!s.failed(), "pending, not failed");
        assert!(s.expire(at_us(0) + TRAIN_RETRY));
        assert!(s.failed());
        // Once: no timer left to spin on.
        assert_eq!(s.expires_at(), None);
        assert!(!s.expire(at_us(5_000_000)));
        // A late report that measures the path still does.
        let report = TrainReport {
            id: t.id,
            received: 31,
            bytes: 1452 * 31,
            span_us: 40_000,
        };
        assert!(s.on_report(report, 28).is_some());
        assert!(!s.failed());
        // A train reported in time never expires.
        let mut s = PathTrains::default();
        let t = s.start(at_us(0));
        s.on_report(TrainReport { id: t.id, ..report }, 28);
        assert_eq!(s.expires_at(), None);
    }

    #[test]
    fn at_most_three_trains_go_without_a_report() {
        let mut s = PathTrains::default();
        for k in 0..TRAIN_ATTEMPTS {
            let at = at_us(u64::from(k) * 1_000_000);
            assert!(s.due().is_some_and(|d| d <= at));
            s.start(at);
        }
        assert_eq!(s.due(), None);
    }

    #[test]
    fn a_new_train_restarts_the_count_and_bad_indices_are_ignored() {
        let mut r = PathTrains::default();
        assert_eq!(r.on_packet(at_us(0), packet(1, 0), 1000), None);
        assert_eq!(r.on_packet(at_us(10), packet(1, 1), 1000), None);
        // Train 2 begins; train 1's count is dropped.
        assert_eq!(r.on_packet(at_us(100), packet(2, 0), 1000), None);
        let bad = TrainPacket {
            id: 2,
            index: 5,
            count: 5,
        };
        assert_eq!(r.on_packet(at_us(150), bad, 1000), None);
        let report = r
            .on_packet(at_us(300), packet(2, TRAIN_PACKETS - 1), 1000)
            .unwrap();
        assert_eq!(
            (report.id, report.received, report.bytes, report.span_us),
            (2, 1, 1000, 200)
        );
        // Reported once: a late last packet alone says nothing.
        assert_eq!(
            r.on_packet(at_us(400), packet(2, TRAIN_PACKETS - 1), 1000),
            None
        );
    }
}
