//! A set of numbers kept as disjoint half-open ranges, so that a peer's
//! "numbers 1000 to 66535" costs one entry, not 65,536.

use super::sorted::SortedDeque;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RangeSet {
    /// start -> end (exclusive); ranges neither overlap nor touch.
    ranges: SortedDeque<u64, u64>,
}

impl RangeSet {
    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    /// Adds `lo..hi`, merging with the ranges it overlaps or touches.
    /// Costs O(log n) plus one step per range it swallows (each step
    /// moving at most a block of entries: see [`SortedDeque`]).
    pub fn insert(&mut self, lo: u64, hi: u64) {
        if lo >= hi {
            return;
        }
        let (mut lo, mut hi) = (lo, hi);
        if let Some((s, &e)) = self.ranges.at_or_before(&lo) {
            if e >= lo {
                lo = s;
                hi = hi.max(e);
                self.ranges.remove(&s);
            }
        }
        while let Some((s, &e)) = self.ranges.at_or_after(&lo).filter(|&(s, _)| s <= hi) {
            hi = hi.max(e);
            self.ranges.remove(&s);
        }
        self.ranges.insert(lo, hi);
    }

    /// The end of the range holding `n`, if `n` is in the set.
    pub fn end_of_range_holding(&self, n: u64) -> Option<u64> {
        self.ranges
            .at_or_before(&n)
            .and_then(|(_, &e)| (e > n).then_some(e))
    }

    /// Removes every number below `n`.
    pub fn remove_below(&mut self, n: u64) {
        while let Some((s, &e)) = self.ranges.first() {
            if s >= n {
                break;
            }
            self.ranges.pop_first();
            if e > n {
                self.ranges.insert(n, e);
                break;
            }
        }
    }

    /// Whether any number of `lo..hi` is in the set.
    pub fn overlaps(&self, lo: u64, hi: u64) -> bool {
        lo < hi
            && self
                .ranges
                .at_or_before(&(hi - 1))
                .is_some_and(|(_, &e)| e > lo)
    }

    /// The ranges, lowest first, as `(start, end)` with `end` exclusive.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (u64, u64)> + '_ {
        self.ranges.iter().map(|(s, &e)| (s, e))
    }

    /// Drops the highest range (to bound memory: forgetting a known loss
    /// only costs a hole timeout).
    pub fn pop_last(&mut self) {
        self.ranges.pop_last();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges(s: &RangeSet) -> Vec<(u64, u64)> {
        s.iter().collect()
    }

    #[test]
    fn inserts_merge_overlapping_and_touching_ranges() {
        let mut s = RangeSet::default();
        s.insert(10, 20);
        s.insert(30, 40);
        s.insert(5, 5); // empty: ignored
        assert_eq!(ranges(&s), vec![(10, 20), (30, 40)]);
        s.insert(20, 25); // touches the first
        assert_eq!(ranges(&s), vec![(10, 25), (30, 40)]);
        s.insert(24, 31); // bridges both
        assert_eq!(ranges(&s), vec![(10, 40)]);
        s.insert(0, 100); // swallows it
        assert_eq!(ranges(&s), vec![(0, 100)]);
        assert_eq!(s.len(), 1);
    }

    #[test]
    fn lookup_and_removal() {
        let mut s = RangeSet::default();
        s.insert(10, 20);
        s.insert(30, 40);
        assert_eq!(s.end_of_range_holding(9), None);
        assert_eq!(s.end_of_range_holding(10), Some(20));
        assert_eq!(s.end_of_range_holding(19), Some(20));
        assert_eq!(s.end_of_range_holding(20), None);
        assert_eq!(s.end_of_range_holding(35), Some(40));
        s.remove_below(15);
        assert_eq!(ranges(&s), vec![(15, 20), (30, 40)]);
        s.remove_below(30);
        assert_eq!(ranges(&s), vec![(30, 40)]);
        s.insert(50, 60);
        s.pop_last();
        assert_eq!(ranges(&s), vec![(30, 40)]);
    }
}
