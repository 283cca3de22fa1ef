//! Connection-level receive state: which connection sequence numbers
//! arrived (for acknowledgements and duplicate detection) and the flow
//! control limit that bounds the receiver's memory.
//!
//! The bound: the peer may send connection bytes below `max_data` only, and
//! `max_data` is at most `released + window`, where `released` counts bytes
//! the receiver no longer holds. Arrived ranges never overlap (an
//! overlapping segment is refused), so the bytes held are at most
//! `max_data - released <= window`, however slowly the application reads.

use super::error::StreamError;
use super::frame::{DataAck, Segment, MAX_SACK_RANGES};
use crate::reseq::ranges::RangeSet;

/// Most disjoint arrived ranges kept. An honest sender leaves about one
/// hole per segment in flight; a segment that would open more is dropped
/// and arrives again as a retransmission.
const MAX_RANGES: usize = 1 << 16;

#[derive(Debug)]
pub struct ReceiveWindow {
    window: u64,
    arrived: RangeSet,
    /// Bytes released back to the sender's credit.
    released: u64,
    /// Largest limit advertised so far.
    max_data: u64,
}

/// What an arriving segment is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arrival {
    New,
    Duplicate,
    /// Could not be tracked now (too many holes): dropped, not acknowledged.
    Dropped,
}

impl ReceiveWindow {
    pub fn new(window: u64) -> ReceiveWindow {
        ReceiveWindow {
            window,
            arrived: RangeSet::default(),
            released: 0,
            max_data: window,
        }
    }

    pub fn on_segment(&mut self, seg: &Segment<'_>) -> Result<Arrival, StreamError> {
        let (lo, hi) = (seg.conn_seq, seg.conn_seq + seg.conn_len());
        if hi > self.max_data {
            return Err(StreamError::FlowControl {
                end: hi,
                limit: self.max_data,
            });
        }
        if self
            .arrived
            .end_of_range_holding(lo)
            .is_some_and(|e| e >= hi)
        {
            return Ok(Arrival::Duplicate);
        }
        if self.arrived.overlaps(lo, hi) {
            // Segments keep their boundaries on every resend: a partial
            // overlap is a different segment claiming the same numbers.
            return Err(StreamError::Inconsistent(seg.stream));
        }
        if self.arrived.len() >= MAX_RANGES {
            return Ok(Arrival::Dropped);
        }
        self.arrived.insert(lo, hi);
        Ok(Arrival::New)
    }

    /// `bytes` left the receiver's buffers. Returns whether the limit moved
    /// far enough (a quarter window) to be worth telling the sender now.
    pub fn release(&mut self, bytes: u64) -> bool {
        self.released = self.released.saturating_add(bytes);
        let limit = self.released.saturating_add(self.window);
        let worth_telling = limit.saturating_sub(self.max_data) >= self.window / 4;
        if worth_telling {
            self.max_data = limit;
        }
        worth_telling
    }

    /// The acknowledgement to send: cumulative point, limit, and the lowest
    /// arrived ranges above the cumulative point.
    pub fn ack(&self) -> DataAck {
        let mut ranges = self.arrived.iter();
        let cumulative = match self.arrived.iter().next() {
            Some((0, end)) => {
                ranges.next();
                end
            }
            _ => 0,
        };
        DataAck {
            cumulative,
            max_data: self.max_data,
            ranges: ranges.take(MAX_SACK_RANGES).collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seg(conn_seq: u64, data: &[u8]) -> Segment<'_> {
        Segment {
            conn_seq,
            stream: 0,
            offset: conn_seq,
            fin: false,
            data,
        }
    }

    #[test]
    fn arrivals_acks_and_limits() {
        let mut w = ReceiveWindow::new(100);
        assert_eq!(w.on_segment(&seg(10, &[0; 10])), Ok(Arrival::New));
        assert_eq!(w.on_segment(&seg(10, &[0; 10])), Ok(Arrival::Duplicate));
        assert_eq!(
            w.ack(),
            DataAck {
                cumulative: 0,
                max_data: 100,
                ranges: vec![(10, 20)]
            }
        );
        assert_eq!(w.on_segment(&seg(0, &[0; 10])), Ok(Arrival::New));
        assert_eq!(w.ack().cumulative, 20);
        assert!(w.ack().ranges.is_empty());
        // Past the limit: a protocol error.
        assert_eq!(
            w.on_segment(&seg(95, &[0; 10])),
            Err(StreamError::FlowControl {
                end: 105,
                limit: 100
            })
        );
        // A different segment over the same numbers.
        assert_eq!(
            w.on_segment(&seg(15, &[0; 10])),
            Err(StreamError::Inconsistent(0))
        );
        // Small releases wait; a quarter window moves the limit.
        assert!(!w.release(10));
        assert_eq!(w.ack().max_data, 100);
        assert!(w.release(15));
        assert_eq!(w.ack().max_data, 125);
    }
}
