//! Segments sent and not yet acknowledged, by connection sequence number:
//! reliability per connection (pTCP). A segment may be in flight on several
//! paths at once (a retransmission, or a redundant copy after a path's
//! timeout); it is resent only when every copy is lost, and it is done as
//! soon as any copy, or a connection-level acknowledgement, shows it arrived.

use std::collections::{BTreeMap, BTreeSet};

use super::frame::DataAck;

#[derive(Debug, Clone)]
pub struct SentSegment {
    pub stream: u32,
    pub offset: u64,
    pub fin: bool,
    pub data: Vec<u8>,
    /// Copies on paths whose fate is not known yet, probes not counted.
    pub copies_in_flight: u32,
    /// Bitmask of the paths a copy was ever sent on (paths 0 to 63).
    pub paths_tried: u64,
}

impl SentSegment {
    pub fn conn_len(&self) -> u64 {
        (self.data.len() as u64).max(1)
    }
}

#[derive(Debug, Default)]
pub struct Outstanding {
    segments: BTreeMap<u64, SentSegment>,
    /// Segments with no copy in flight: to resend, oldest first.
    lost: BTreeSet<u64>,
    /// Payload bytes held in `segments`.
    bytes: usize,
    /// Test-only fault switch: forget lost segments instead of resending
    /// them, to show the property tests catch a broken retransmission.
    #[cfg(test)]
    pub drop_retransmissions: bool,
}

impl Outstanding {
    pub fn is_empty(&self) -> bool {
        self.segments.is_empty()
    }

    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn insert(&mut self, conn_seq: u64, seg: SentSegment) {
        self.bytes += seg.data.len();
        self.segments.insert(conn_seq, seg);
    }

    pub fn get(&self, conn_seq: u64) -> Option<&SentSegment> {
        self.segments.get(&conn_seq)
    }

    /// The oldest unacknowledged segment.
    pub fn oldest(&self) -> Option<u64> {
        self.segments.keys().next().copied()
    }

    /// The oldest lost segment, waiting to be resent.
    pub fn next_lost(&self) -> Option<u64> {
        self.lost.first().copied()
    }

    pub fn has_lost(&self) -> bool {
        !self.lost.is_empty()
    }

    /// A copy of `conn_seq` left on `path`. A probe on a path that timed
    /// out is not counted as a copy in flight at all: the probe is likely
    /// lost, and counting on it would stall the stream for the path's
    /// whole backed-off timeout. That holds both ways: a segment waiting
    /// for a resend keeps waiting, and one whose last real copy is lost
    /// while probes of it are out is queued all the same (two down paths
    /// probing it in turn used to keep it "in flight" for ever).
    pub fn on_copy_sent(&mut self, conn_seq: u64, path: u8, probe: bool) {
        if let Some(s) = self.segments.get_mut(&conn_seq) {
            s.paths_tried |= 1u64 << (path % 64);
            if !probe {
                s.copies_in_flight += 1;
                self.lost.remove(&conn_seq);
            }
        }
    }

    /// Queues a segment for another copy while its copies are still in
    /// flight (its path stalled). Returns whether it was newly queued.
    pub fn mark_for_resend(&mut self, conn_seq: u64) -> bool {
        self.segments.contains_key(&conn_seq) && self.lost.insert(conn_seq)
    }

    /// A path's acknowledgement says this copy arrived. Returns whether the
    /// segment was still outstanding.
    pub fn on_copy_acked(&mut self, conn_seq: u64) -> bool {
        self.remove(conn_seq)
    }

    /// A path declared this copy lost (loss detection or timeout).
    /// `probe`: it was a probe, never counted (see [`Self::on_copy_sent`]).
    pub fn on_copy_lost(&mut self, conn_seq: u64, probe: bool) {
        if probe {
            return;
        }
        let Some(s) = self.segments.get_mut(&conn_seq) else {
            return; // acknowledged through another copy already
        };
        s.copies_in_flight = s.copies_in_flight.saturating_sub(1);
        if s.copies_in_flight > 0 {
            return;
        }
        #[cfg(test)]
        if self.drop_retransmissions {
            self.remove(conn_seq);
            return;
        }
        self.lost.insert(conn_seq);
    }

    /// Applies a connection-level acknowledgement; returns payload bytes newly acknowledged.
    pub fn on_data_ack(&mut self, ack: &DataAck) -> usize {
        let before = self.bytes;
        let below: Vec<u64> = self
            .segments
            .range(..ack.cumulative)
            .filter(|(&seq, s)| seq.saturating_add(s.conn_len()) <= ack.cumulative)
            .map(|(&seq, _)| seq)
            .collect();
        for seq in below {
            self.remove(seq);
        }
        for &(start, end) in &ack.ranges {
            let inside: Vec<u64> = self
                .segments
                .range(start..end)
                .filter(|(&seq, s)| seq.saturating_add(s.conn_len()) <= end)
                .map(|(&seq, _)| seq)
                .collect();
            for seq in inside {
                self.remove(seq);
            }
        }
        before - self.bytes
    }

    fn remove(&mut self, conn_seq: u64) -> bool {
        self.lost.remove(&conn_seq);
        match self.segments.remove(&conn_seq) {
            Some(s) => {
                self.bytes -= s.data.len();
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(len: usize) -> SentSegment {
        SentSegment {
            stream: 0,
            offset: 0,
            fin: false,
            data: vec![0; len],
            copies_in_flight: 0,
            paths_tried: 0,
        }
    }

    #[test]
    fn a_segment_is_lost_only_when_every_copy_is() {
        let mut o = Outstanding::default();
        o.insert(0, seg(10));
        o.on_copy_sent(0, 0, false);
        o.on_copy_sent(0, 1, false);
        assert_eq!(o.get(0).unwrap().paths_tried, 0b11);
        o.on_copy_lost(0, false);
        assert!(!o.has_lost());
        o.on_copy_lost(0, false);
        assert_eq!(o.next_lost(), Some(0));
        // A probe leaves it waiting; a resend does not.
        o.on_copy_sent(0, 1, true);
        assert_eq!(o.next_lost(), Some(0));
        o.on_copy_sent(0, 0, false);
        assert!(!o.has_lost());
        assert!(o.on_copy_acked(0));
        assert!(!o.on_copy_acked(0));
        assert!(o.is_empty());
        assert_eq!(o.bytes(), 0);
    }

    #[test]
    fn probes_in_flight_never_hold_back_a_resend() {
        // The segment's one real copy is on path 0; paths 1 and 2 are down
        // and probe with it in turn, each probe sent before the other's
        // is declared lost (the stall the fault property test found).
        let mut o = Outstanding::default();
        o.insert(0, seg(10));
        o.on_copy_sent(0, 0, false);
        o.on_copy_sent(0, 1, true);
        o.on_copy_lost(0, false);
        assert_eq!(o.next_lost(), Some(0), "the real copy's loss queues it");
        o.on_copy_sent(0, 2, true);
        o.on_copy_lost(0, true);
        o.on_copy_sent(0, 1, true);
        o.on_copy_lost(0, true);
        assert_eq!(o.next_lost(), Some(0), "probes change nothing");
        assert_eq!(o.get(0).unwrap().copies_in_flight, 0);
        assert_eq!(o.get(0).unwrap().paths_tried, 0b111);
        // A probe that arrives still acknowledges it.
        assert!(o.on_copy_acked(0));
        assert!(!o.has_lost());
    }

    #[test]
    fn data_acks_cover_whole_segments_only() {
        let mut o = Outstanding::default();
        for (seq, len) in [(0, 10), (10, 10), (20, 10), (30, 10)] {
            o.insert(seq, seg(len));
            o.on_copy_sent(seq, 0, false);
            o.on_copy_lost(seq, false);
        }
        let acked = o.on_data_ack(&DataAck {
            cumulative: 15,
            max_data: 0,
            ranges: vec![(20, 30), (31, 45)],
        });
        assert_eq!(acked, 20);
        assert_eq!(o.oldest(), Some(10));
        assert_eq!(o.next_lost(), Some(10));
        assert!(o.get(30).is_some());
    }

    /// The byte count follows inserts and removals, and a stalled path's
    /// segment is queued for another copy once, only while outstanding.
    #[test]
    fn bytes_and_the_resend_queue_follow_every_change() {
        let mut o = Outstanding::default();
        o.insert(0, seg(10));
        o.insert(10, seg(5));
        assert_eq!(o.bytes(), 15);
        o.on_copy_sent(0, 0, false);
        o.on_copy_sent(10, 0, false);
        assert!(!o.has_lost());
        assert!(o.mark_for_resend(10));
        assert!(o.has_lost());
        assert_eq!(o.next_lost(), Some(10));
        assert!(!o.mark_for_resend(10), "already queued");
        assert!(!o.mark_for_resend(99), "not outstanding");
        assert_eq!(o.next_lost(), Some(10));
        assert!(o.on_copy_acked(0));
        assert_eq!(o.bytes(), 5);
        assert!(o.on_copy_acked(10));
        assert!(!o.has_lost(), "an acknowledged segment leaves the queue");
    }

    #[test]
    fn the_fault_switch_forgets_lost_segments() {
        let mut o = Outstanding {
            drop_retransmissions: true,
            ..Outstanding::default()
        };
        o.insert(0, seg(10));
        o.on_copy_sent(0, 0, false);
        o.on_copy_lost(0, false);
        assert!(o.is_empty());
        assert!(!o.has_lost());
    }
}
