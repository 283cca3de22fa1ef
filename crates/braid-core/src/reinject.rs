//! Reinjection: the payloads of datagrams in flight, kept per path until
//! the path's acknowledgements settle them, so that the datagrams a path
//! had in flight when it died can be sent again on the live paths.
//!
//! Without this, a path that dies loses everything in flight on it and
//! everything sent into it before its silence is noticed (about a round
//! trip, see `path::Liveness`), even when the other paths have room.
//!
//! A datagram is kept from its transmission until the path acknowledges it
//! or declares it lost by ordinary loss detection (later packets acked past
//! it: the path is alive and the loss is the network's). A sender that
//! re-sends losses then takes it back to send again (the receiver waits
//! for it, see [`crate::reseq`]); otherwise it is dropped. So each
//! path's store holds at most what that path has in flight, and all paths
//! together at most `max_bytes` of payload; a datagram sent while the
//! store is full is not kept. The payload kept is the one the sender
//! already owns: the wire packet is a copy of it, so keeping it costs
//! memory for a round trip, not a copy.
//!
//! Work is bounded per packet: settling one is a binary search in its
//! path's store (ordered by the path's own sequence numbers) and pops from
//! the front; taking a dead path's store moves what it holds, once.

use std::collections::VecDeque;

use crate::time::Instant;

/// A datagram kept while in flight.
#[derive(Debug, PartialEq, Eq)]
pub struct Kept {
    pub gseq: u64,
    /// The distance to its flow's previous number, sent again unchanged.
    pub flow_gap: u16,
    pub payload: Vec<u8>,
    /// When the application offered it: a re-send is subject to the same
    /// queue delay limit as the first send.
    pub enqueued: Instant,
}

#[derive(Debug)]
struct Entry {
    pseq: u64,
    /// `None` once settled; settled entries leave from the front.
    kept: Option<Kept>,
}

/// Payloads in flight, per path.
#[derive(Debug)]
pub struct InFlightPayloads {
    paths: Vec<VecDeque<Entry>>,
    bytes: usize,
    max_bytes: usize,
}

impl InFlightPayloads {
    pub fn new(paths: usize, max_bytes: usize) -> InFlightPayloads {
        InFlightPayloads {
            paths: (0..paths).map(|_| VecDeque::new()).collect(),
            bytes: 0,
            max_bytes,
        }
    }

    /// Payload bytes kept, all paths.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Datagrams kept for `path`.
    #[cfg(test)]
    pub fn len(&self, path: usize) -> usize {
        self.paths
            .get(path)
            .map_or(0, |p| p.iter().filter(|e| e.kept.is_some()).count())
    }

    /// Keeps `kept`, just sent on `path` as the path's packet `pseq`
    /// (numbers rise along a path). Returns it back when it is not kept:
    /// the store is full, or the path or number is out of order.
    pub fn keep(&mut self, path: usize, pseq: u64, kept: Kept) -> Option<Kept> {
        let len = kept.payload.len();
        let Some(store) = self.paths.get_mut(path) else {
            return Some(kept);
        };
        let rises = store.back().is_none_or(|e| e.pseq < pseq);
        if !rises || self.bytes + len > self.max_bytes {
            return Some(kept);
        }
        self.bytes += len;
        store.push_back(Entry {
            pseq,
            kept: Some(kept),
        });
        None
    }

    /// Takes the payload kept for `path`'s packet `pseq`, if any: the path
    /// lost it, and the sender re-sends it, or it was acknowledged, and
    /// its buffer is free.
    pub fn take(&mut self, path: usize, pseq: u64) -> Option<Kept> {
        let store = self.paths.get_mut(path)?;
        let taken = store
            .binary_search_by_key(&pseq, |e| e.pseq)
            .ok()
            .and_then(|i| store[i].kept.take());
        if let Some(k) = &taken {
            self.bytes -= k.payload.len();
        }
        while store.front().is_some_and(|e| e.kept.is_none()) {
            store.pop_front();
        }
        taken
    }

    /// Everything kept for `path`, oldest first, leaving its store empty:
    /// the path died, or may no longer be used.
    pub fn take_path(&mut self, path: usize) -> Vec<Kept> {
        let Some(store) = self.paths.get_mut(path) else {
            return Vec::new();
        };
        let taken: Vec<Kept> = store.drain(..).filter_map(|e| e.kept).collect();
        self.bytes -= taken.iter().map(|k| k.payload.len()).sum::<usize>();
        taken
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kept(gseq: u64, len: usize) -> Kept {
        Kept {
            gseq,
            flow_gap: 1,
            payload: vec![0; len],
            enqueued: Instant::ZERO,
        }
    }

    #[test]
    fn settled_packets_leave_and_the_rest_are_taken_in_order() {
        let mut s = InFlightPayloads::new(2, 10_000);
        for pseq in 0..5 {
            assert_eq!(s.keep(0, pseq, kept(100 + pseq, 1000)), None);
        }
        assert_eq!(s.keep(1, 0, kept(7, 500)), None);
        assert_eq!(s.bytes(), 5500);
        // Settled out of order: the front leaves only once settled.
        s.take(0, 1);
        s.take(0, 0);
        s.take(0, 3);
        // A number never kept (a probe, a copy) changes nothing.
        s.take(0, 99);
        assert_eq!((s.len(0), s.bytes()), (2, 2500));
        let taken: Vec<u64> = s.take_path(0).iter().map(|k| k.gseq).collect();
        assert_eq!(taken, vec![102, 104]);
        assert_eq!((s.len(0), s.bytes()), (0, 500));
        assert!(s.take_path(0).is_empty());
        // Taken once: the second time there is nothing.
        assert_eq!(s.take(1, 0), Some(kept(7, 500)));
        assert_eq!((s.take(1, 0), s.bytes()), (None, 0));
        // Out-of-range paths are ignored.
        s.take(9, 0);
        assert_eq!(s.take(9, 0), None);
        assert!(s.take_path(9).is_empty());
    }

    #[test]
    fn the_store_never_holds_more_than_its_byte_cap() {
        let mut s = InFlightPayloads::new(1, 2500);
        assert_eq!(s.keep(0, 0, kept(0, 1000)), None);
        assert_eq!(s.keep(0, 1, kept(1, 1000)), None);
        // The third would pass the cap: handed back.
        assert_eq!(s.keep(0, 2, kept(2, 1000)), Some(kept(2, 1000)));
        assert_eq!(s.bytes(), 2000);
        // Room again once one is settled.
        s.take(0, 0);
        assert_eq!(s.keep(0, 3, kept(3, 1000)), None);
        assert_eq!(s.bytes(), 2000);
        // Numbers must rise along the path.
        assert!(s.keep(0, 3, kept(4, 10)).is_some());
    }
}
