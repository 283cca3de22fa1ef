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
//! The store also tells when a datagram is overdue: a higher number that
//! left on a quicker path was acknowledged, so the receiver holds it and
//! waits for this one (`mark_passed`). The sender copies a minor path's
//! overdue datagrams onto a quicker path (`overdue`): a 3G path's fade
//! holds single datagrams for a second and more, and every packet of the
//! fixed line beside it waits behind them at the receiver.
//!
//! Work is bounded per packet: settling one is a binary search in its
//! path's store (ordered by the path's own sequence numbers) and pops from
//! the front; taking a dead path's store moves what it holds, once; two
//! cursors per path, which only move forward, find what was passed and
//! what is overdue, so each entry is marked once and copied at most once.

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
    /// Sent ahead of lower numbers (an express packet): its arrival
    /// passes no hole.
    pub express: bool,
    /// When a copy of it may go on a quicker path: set once a higher
    /// number arrived by one, so that the receiver waits for this one (see
    /// [`InFlightPayloads::mark_passed`]).
    pub due: Option<Instant>,
    /// A copy already went on a quicker path (see [`InFlightPayloads::overdue`]).
    pub hedged: bool,
}

#[derive(Debug)]
struct Entry {
    pseq: u64,
    /// `None` once settled; settled entries leave from the front.
    kept: Option<Kept>,
}

/// One path's payloads, by the path's sequence numbers.
#[derive(Debug, Default)]
struct PathStore {
    entries: VecDeque<Entry>,
    /// Entries from the front that a higher number has passed (or that
    /// were settled before it could)...
    passed: usize,
    /// ...and those of them already copied or settled.
    hedged: usize,
}

impl PathStore {
    fn pop_settled(&mut self) {
        while self.entries.front().is_some_and(|e| e.kept.is_none()) {
            self.entries.pop_front();
            self.passed = self.passed.saturating_sub(1);
            self.hedged = self.hedged.saturating_sub(1);
        }
    }
}

/// Payloads in flight, per path.
#[derive(Debug)]
pub struct InFlightPayloads {
    paths: Vec<PathStore>,
    bytes: usize,
    max_bytes: usize,
}

impl InFlightPayloads {
    pub fn new(paths: usize, max_bytes: usize) -> InFlightPayloads {
        InFlightPayloads {
            paths: (0..paths).map(|_| PathStore::default()).collect(),
            bytes: 0,
            max_bytes,
        }
    }

    /// Payload bytes kept, all paths.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Entries for `path`, settled ones included (they leave from the
    /// front only).
    #[cfg(test)]
    fn entries(&self, path: usize) -> usize {
        self.paths.get(path).map_or(0, |p| p.entries.len())
    }

    /// Datagrams kept for `path`.
    #[cfg(test)]
    pub fn len(&self, path: usize) -> usize {
        self.paths
            .get(path)
            .map_or(0, |p| p.entries.iter().filter(|e| e.kept.is_some()).count())
    }

    /// Keeps `kept`, just sent on `path` as the path's packet `pseq`
    /// (numbers rise along a path). Returns it back when it is not kept:
    /// the store is full, or the path or number is out of order.
    pub fn keep(&mut self, path: usize, pseq: u64, kept: Kept) -> Option<Kept> {
        let len = kept.payload.len();
        let Some(store) = self.paths.get_mut(path) else {
            return Some(kept);
        };
        let rises = store.entries.back().is_none_or(|e| e.pseq < pseq);
        if !rises || self.bytes + len > self.max_bytes {
            return Some(kept);
        }
        self.bytes += len;
        store.entries.push_back(Entry {
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
            .entries
            .binary_search_by_key(&pseq, |e| e.pseq)
            .ok()
            .and_then(|i| store.entries[i].kept.take());
        if let Some(k) = &taken {
            self.bytes -= k.payload.len();
        }
        store.pop_settled();
        taken
    }

    /// Everything kept for `path`, oldest first, leaving its store empty:
    /// the path died, or may no longer be used.
    pub fn take_path(&mut self, path: usize) -> Vec<Kept> {
        let Some(store) = self.paths.get_mut(path) else {
            return Vec::new();
        };
        let taken: Vec<Kept> = store.entries.drain(..).filter_map(|e| e.kept).collect();
        (store.passed, store.hedged) = (0, 0);
        self.bytes -= taken.iter().map(|k| k.payload.len()).sum::<usize>();
        taken
    }

    /// Number `below` arrived by a quicker path than `path`: the receiver
    /// holds it, waiting for `path`'s datagrams numbered lower. They are
    /// marked passed, to be copied at `due`, in order of the path's
    /// numbers, up to the first at or above `below` (numbers rise along a
    /// path but for datagrams sent again, which wait for the next pass).
    /// Each entry is looked at once.
    pub fn mark_passed(&mut self, path: usize, below: u64, due: Instant) {
        let Some(store) = self.paths.get_mut(path) else {
            return;
        };
        while let Some(e) = store.entries.get_mut(store.passed) {
            match &mut e.kept {
                Some(k) if k.gseq >= below => break,
                Some(k) => k.due = Some(due),
                None => {}
            }
            store.passed += 1;
        }
    }

    /// When `path`'s oldest datagram that was passed and not yet copied
    /// falls due.
    pub fn next_due(&self, path: usize) -> Option<Instant> {
        let store = self.paths.get(path)?;
        store
            .entries
            .range(store.hedged..store.passed)
            .find_map(|e| e.kept.as_ref())
            .and_then(|k| k.due)
    }

    /// `path`'s oldest datagram passed and not yet copied, if it fell due
    /// by `now`, marked as copied: the caller sends a copy on a quicker
    /// path. Each entry is looked at once. (Due times are not always in
    /// order along a path; one falling due later holds back those behind
    /// it, by at most the spread of the paths' return delays.)
    pub fn overdue(&mut self, path: usize, now: Instant) -> Option<&Kept> {
        let store = self.paths.get_mut(path)?;
        while store.hedged < store.passed {
            let at = store.hedged;
            store.hedged += 1;
            match &store.entries[at].kept {
                // Behind the cursor, nothing is copied yet.
                Some(k) if k.due.is_none_or(|d| d > now) => {
                    store.hedged = at;
                    return None;
                }
                Some(_) => {
                    let k = store.entries[at].kept.as_mut()?;
                    k.hedged = true;
                    return Some(k);
                }
                None => {}
            }
        }
        None
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
            express: false,
            due: None,
            hedged: false,
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
        // 0 and 1 left; 2 still holds the front, so 3 stays behind it.
        assert_eq!(s.entries(0), 3);
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
    fn passed_datagrams_fall_due_in_order_and_each_is_copied_once() {
        let mut s = InFlightPayloads::new(2, 100_000);
        let at = |ms: u64| Instant::from_nanos(ms * 1_000_000);
        // Path 1 carries 10, 11, 12, then 3 sent again, then 13.
        for (pseq, gseq) in [(0, 10), (1, 11), (2, 12), (3, 3), (4, 13)] {
            assert_eq!(s.keep(1, pseq, kept(gseq, 100)), None);
        }
        assert_eq!(s.next_due(1), None);
        // 12 arrived by a quicker path: 10 and 11 are waited for, and
        // due for copies 30 ms later.
        s.mark_passed(1, 12, at(130));
        assert_eq!(s.next_due(1), Some(at(130)));
        assert!(s.overdue(1, at(129)).is_none());
        // 10 is acknowledged before it falls due: never copied.
        s.take(1, 0);
        assert_eq!(s.overdue(1, at(130)).map(|k| k.gseq), Some(11));
        assert!(s.overdue(1, at(130)).is_none());
        assert_eq!(s.next_due(1), None);
        // A higher number passes 12, the 3 sent again behind it, and 13.
        s.mark_passed(1, 100, at(230));
        assert_eq!(s.next_due(1), Some(at(230)));
        let mut copied = Vec::new();
        while let Some(k) = s.overdue(1, at(230)) {
            copied.push(k.gseq);
        }
        assert_eq!(copied, vec![12, 3, 13]);
        assert_eq!(s.next_due(1), None);
        // Given back marked as copied; the store starts afresh.
        let back: Vec<(u64, bool)> = s.take_path(1).iter().map(|k| (k.gseq, k.hedged)).collect();
        assert_eq!(back, vec![(11, true), (12, true), (3, true), (13, true)]);
        assert_eq!(s.keep(1, 5, kept(20, 100)), None);
        s.mark_passed(1, 21, at(330));
        assert_eq!(s.overdue(1, at(330)).map(|k| k.gseq), Some(20));
        // Path 0 was never passed; out-of-range paths are ignored.
        assert_eq!(s.keep(0, 0, kept(1, 100)), None);
        assert!(s.overdue(0, at(1000)).is_none());
        s.mark_passed(9, 1, at(0));
        assert!(s.overdue(9, at(1000)).is_none());
        assert_eq!(s.next_due(9), None);
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
