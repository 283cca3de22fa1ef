//! The TCP receiver: in-order delivery and SACK blocks (RFC 2018).

use std::collections::BTreeMap;

use super::{Ack, MAX_SACK_BLOCKS};

/// Segments beyond this distance above the next expected one are ignored
/// (no sender in the model has a window this large).
const MAX_AHEAD: u64 = 1 << 22;

#[derive(Debug, Default)]
pub struct TcpReceiver {
    /// Next segment expected in order.
    next: u64,
    /// Received ranges above `next`, start to end (exclusive), disjoint and
    /// not adjacent.
    above: BTreeMap<u64, u64>,
}

impl TcpReceiver {
    pub fn new() -> TcpReceiver {
        TcpReceiver::default()
    }

    /// Segments delivered in order to the application so far.
    pub fn delivered(&self) -> u64 {
        self.next
    }

    /// Takes segment `seq` sent at `sent_nanos`; returns the ACK it causes
    /// (every segment is acknowledged at once: no delayed ACK).
    pub fn on_segment(&mut self, seq: u64, sent_nanos: u64) -> Ack {
        let latest = if seq >= self.next && seq - self.next < MAX_AHEAD {
            Some(self.insert(seq))
        } else {
            None
        };
        // Ranges that now start at `next` are delivered.
        while let Some((&start, &end)) = self.above.first_key_value() {
            if start != self.next {
                break;
            }
            self.above.remove(&start);
            self.next = end;
        }
        let first = latest.and_then(|s| self.above.get(&s).map(|&e| (s, e)));
        let mut sack: Vec<(u64, u64)> = first.into_iter().collect();
        // Then the lowest other ranges: the holes below them are what the
        // sender most needs to repair.
        sack.extend(
            self.above
                .iter()
                .map(|(&s, &e)| (s, e))
                .filter(|r| Some(*r) != first)
                .take(MAX_SACK_BLOCKS - sack.len()),
        );
        Ack {
            cumulative: self.next,
            sack,
            echo_nanos: sent_nanos,
        }
    }

    /// Adds `seq` to the ranges above `next`; returns the start of the range
    /// that holds it.
    fn insert(&mut self, seq: u64) -> u64 {
        let below = self.above.range(..=seq).next_back().map(|(&s, &e)| (s, e));
        let (start, mut end) = match below {
            Some((s, e)) if e > seq => return s,
            Some((s, e)) if e == seq => (s, seq + 1),
            _ => (seq, seq + 1),
        };
        if let Some(next_end) = self.above.remove(&end) {
            end = next_end;
        }
        self.above.insert(start, end);
        start
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delivers_in_order_and_reports_holes() {
        let mut r = TcpReceiver::new();
        assert_eq!(r.on_segment(0, 0).cumulative, 1);
        let a = r.on_segment(2, 0);
        assert_eq!((a.cumulative, a.sack.clone()), (1, vec![(2, 3)]));
        let a = r.on_segment(5, 0);
        assert_eq!(a.sack, vec![(5, 6), (2, 3)], "latest block first");
        let a = r.on_segment(3, 0);
        assert_eq!(a.sack, vec![(2, 4), (5, 6)]);
        let a = r.on_segment(4, 0);
        assert_eq!(a.sack, vec![(2, 6)], "ranges merge");
        assert_eq!(r.delivered(), 1);
        let a = r.on_segment(1, 7);
        assert_eq!((a.cumulative, a.sack, a.echo_nanos), (6, vec![], 7));
        // A duplicate is acknowledged and changes nothing.
        assert_eq!(r.on_segment(3, 0).cumulative, 6);
        assert_eq!(r.delivered(), 6);
    }
}
