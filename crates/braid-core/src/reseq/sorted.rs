//! An ordered map for the resequencer's tables, kept as a run of sorted
//! blocks of at most `BLOCK` entries. The tables' keys mostly arrive in
//! increasing order and leave from the front, as in a queue: a B-tree
//! allocates and frees nodes all along that way (about one allocation per
//! packet held), where these blocks are ring buffers that stay allocated
//! and are reused when emptied. A lookup is two binary searches. An insert
//! or a removal moves at most one block's entries and, when a block
//! splits, merges or goes, the shorter side of the block list, whose
//! length neighbours that hold more than half a block between them bound:
//! a few microseconds at the resequencer's caps however the keys come,
//! where one sorted ring buffer would move half the table.

use std::collections::VecDeque;

/// Most entries in a block.
const BLOCK: usize = 128;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SortedDeque<K, V> {
    /// Non-empty blocks, each sorted, in key order. Two neighbours always
    /// hold more than `BLOCK / 2` entries between them, so `n` entries
    /// take at most `4 n / BLOCK + 1` blocks.
    blocks: VecDeque<VecDeque<(K, V)>>,
    /// Emptied blocks kept for their room: at most two more than the
    /// blocks in use, so a burst's room goes back as the table empties.
    spare: Vec<VecDeque<(K, V)>>,
    len: usize,
}

impl<K, V> Default for SortedDeque<K, V> {
    fn default() -> Self {
        SortedDeque {
            blocks: VecDeque::new(),
            spare: Vec::new(),
            len: 0,
        }
    }
}

impl<K: Ord + Copy, V> SortedDeque<K, V> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The block holding `k` or due to: the first whose last key is not
    /// below it, or the last block. None when the table is empty.
    fn block_for(&self, k: &K) -> Option<usize> {
        let end = self.blocks.len().checked_sub(1)?;
        if *k > last_key(&self.blocks[end]) {
            return Some(end);
        }
        Some(self.blocks.partition_point(|blk| last_key(blk) < *k))
    }

    /// (block, index in it) of the entry with key `k`. The first and the
    /// last key, the resequencer's usual ones, take no search.
    fn find(&self, k: &K) -> Option<(usize, usize)> {
        let (first, last) = (self.blocks.front()?, self.blocks.back()?);
        if *k <= first_key(first) {
            return (*k == first_key(first)).then_some((0, 0));
        }
        if *k >= last_key(last) {
            return (*k == last_key(last)).then(|| (self.blocks.len() - 1, last.len() - 1));
        }
        // Inside the table: some block's last key is not below `k`.
        let b = self.blocks.partition_point(|blk| last_key(blk) < *k);
        let blk = &self.blocks[b];
        let i = blk.partition_point(|(e, _)| e < k);
        (blk.get(i)?.0 == *k).then_some((b, i))
    }

    #[cfg(test)]
    pub fn get(&self, k: &K) -> Option<&V> {
        self.find(k).map(|(b, i)| &self.blocks[b][i].1)
    }

    pub fn get_mut(&mut self, k: &K) -> Option<&mut V> {
        self.find(k).map(|(b, i)| &mut self.blocks[b][i].1)
    }

    pub fn contains(&self, k: &K) -> bool {
        self.find(k).is_some()
    }

    /// Inserts `k`, giving back the value it replaced.
    pub fn insert(&mut self, k: K, v: V) -> Option<V> {
        let Some(b) = self.block_for(&k) else {
            let mut blk = self.new_block();
            blk.push_back((k, v));
            self.blocks.push_back(blk);
            self.len = 1;
            return None;
        };
        let blk = &mut self.blocks[b];
        let i = if blk.back().is_some_and(|(e, _)| *e < k) {
            blk.len()
        } else {
            blk.partition_point(|(e, _)| *e < k)
        };
        if let Some((_, old)) = blk.get_mut(i).filter(|(e, _)| *e == k) {
            return Some(std::mem::replace(old, v));
        }
        self.len += 1;
        if blk.len() < BLOCK {
            blk.insert(i, (k, v));
            return None;
        }
        // A full block: a key beyond every other, or before every other,
        // starts a block of its own (a queue's blocks stay full); one
        // inside it splits it in halves.
        let mut new = self.new_block();
        if i == BLOCK && b + 1 == self.blocks.len() {
            new.push_back((k, v));
            self.blocks.push_back(new);
        } else if i == 0 && b == 0 {
            new.push_back((k, v));
            self.blocks.push_front(new);
        } else {
            let blk = &mut self.blocks[b];
            new.extend(blk.drain(BLOCK / 2..));
            if i <= BLOCK / 2 {
                blk.insert(i, (k, v));
            } else {
                new.insert(i - BLOCK / 2, (k, v));
            }
            self.blocks.insert(b + 1, new);
        }
        None
    }

    pub fn remove(&mut self, k: &K) -> Option<V> {
        let (b, i) = self.find(k)?;
        let (_, v) = self.blocks[b].remove(i)?;
        self.removed_from(b);
        Some(v)
    }

    pub fn first(&self) -> Option<(K, &V)> {
        let (k, v) = self.blocks.front()?.front()?;
        Some((*k, v))
    }

    pub fn pop_first(&mut self) -> Option<(K, V)> {
        let e = self.blocks.front_mut()?.pop_front()?;
        self.removed_from(0);
        Some(e)
    }

    pub fn pop_last(&mut self) -> Option<(K, V)> {
        let e = self.blocks.back_mut()?.pop_back()?;
        self.removed_from(self.blocks.len() - 1);
        Some(e)
    }

    /// The entry with the lowest key at or above `k`.
    pub fn at_or_after(&self, k: &K) -> Option<(K, &V)> {
        let b = self.blocks.partition_point(|blk| last_key(blk) < *k);
        let blk = self.blocks.get(b)?;
        let (k, v) = &blk[blk.partition_point(|(e, _)| e < k)];
        Some((*k, v))
    }

    /// The entry with the highest key at or below `k`.
    pub fn at_or_before(&self, k: &K) -> Option<(K, &V)> {
        let b = self.blocks.partition_point(|blk| first_key(blk) <= *k);
        let blk = self.blocks.get(b.checked_sub(1)?)?;
        let (k, v) = &blk[blk.partition_point(|(e, _)| e <= k) - 1];
        Some((*k, v))
    }

    /// How many keys lie in `lo..hi`: the work grows with the blocks the
    /// range spans, not with the table.
    pub fn count_in(&self, lo: &K, hi: &K) -> usize {
        let first = self.blocks.partition_point(|blk| last_key(blk) < *lo);
        self.blocks
            .range(first..)
            .take_while(|blk| first_key(blk) < *hi)
            .map(|blk| {
                blk.partition_point(|(e, _)| e < hi)
                    .saturating_sub(blk.partition_point(|(e, _)| e < lo))
            })
            .sum()
    }

    /// The entries in increasing order of key.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (K, &V)> + '_ {
        self.blocks.iter().flatten().map(|(k, v)| (*k, v))
    }

    fn new_block(&mut self) -> VecDeque<(K, V)> {
        self.spare
            .pop()
            .unwrap_or_else(|| VecDeque::with_capacity(BLOCK))
    }

    /// Restores the neighbours' bound after an entry left block `b`.
    fn removed_from(&mut self, b: usize) {
        self.len -= 1;
        if self.blocks[b].is_empty() {
            // Its neighbours held more than half a block with its one
            // entry, so each other with neither.
            let blk = self.blocks.remove(b).expect("the block exists");
            self.retire(blk);
        } else if b > 0 && self.blocks[b - 1].len() + self.blocks[b].len() <= BLOCK / 2 {
            self.merge_next_into(b - 1);
        } else if b + 1 < self.blocks.len()
            && self.blocks[b].len() + self.blocks[b + 1].len() <= BLOCK / 2
        {
            // (b - 1, b) held more than half a block and still does.
            self.merge_next_into(b);
        }
        // A merged block holds half a block: with any neighbour, more.
        let (used, room) = (self.blocks.len(), self.blocks.capacity());
        if room > 16 && used * 4 <= room {
            self.blocks.shrink_to((used * 2).max(16));
        }
    }

    fn merge_next_into(&mut self, b: usize) {
        let mut next = self.blocks.remove(b + 1).expect("a block follows");
        self.blocks[b].append(&mut next);
        self.retire(next);
    }

    fn retire(&mut self, mut blk: VecDeque<(K, V)>) {
        let keep = self.blocks.len() + 2;
        if self.spare.len() < keep {
            blk.clear();
            self.spare.push(blk);
        }
        self.spare.truncate(keep);
    }
}

fn first_key<K: Copy, V>(blk: &VecDeque<(K, V)>) -> K {
    blk.front().expect("blocks are never empty").0
}

fn last_key<K: Copy, V>(blk: &VecDeque<(K, V)>) -> K {
    blk.back().expect("blocks are never empty").0
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use rand_chacha::rand_core::{RngCore, SeedableRng};
    use rand_chacha::ChaCha20Rng;

    use super::*;

    impl<K: Ord + Copy, V> SortedDeque<K, V> {
        /// Blocks allocated, in use or spare.
        fn room(&self) -> usize {
            self.blocks.len() + self.spare.len()
        }

        /// The layout's invariants.
        fn check(&self) {
            assert_eq!(
                self.len,
                self.blocks.iter().map(VecDeque::len).sum::<usize>()
            );
            assert!(self
                .blocks
                .iter()
                .all(|b| !b.is_empty() && b.len() <= BLOCK));
            assert!(self.blocks.iter().all(|b| b.capacity() == BLOCK));
            assert!(self.iter().zip(self.iter().skip(1)).all(|(a, b)| a.0 < b.0));
            let pairs = self.blocks.iter().zip(self.blocks.iter().skip(1));
            assert!(pairs.clone().all(|(a, b)| a.len() + b.len() > BLOCK / 2));
            assert!(self.spare.len() <= self.blocks.len() + 2);
        }
    }

    /// Every operation agrees with a `BTreeMap` fed the same random
    /// sequence, the layout's invariants hold after each, in phases that
    /// grow the table to dozens of blocks and shrink it to none: inserts
    /// that replace, removals that hit and miss, at both ends and inside.
    #[test]
    fn behaves_as_a_btreemap() {
        let mut rng = ChaCha20Rng::seed_from_u64(9);
        let mut ours = SortedDeque::default();
        let mut model = BTreeMap::new();
        let mut most_blocks = 0;
        for step in 0..400_000u64 {
            // Keys from a range that widens and narrows; inserts outweigh
            // removals in the first half of each 50,000-step phase.
            let phase = step % 50_000;
            let width = 1 + (phase.min(50_000 - phase) / 4);
            let k = rng.next_u64() % width;
            let growing = phase < 25_000;
            match rng.next_u64() % 10 {
                0..=2 => assert_eq!(ours.insert(k, step), model.insert(k, step)),
                3 if growing => assert_eq!(ours.insert(k, step), model.insert(k, step)),
                3..=4 => assert_eq!(ours.remove(&k), model.remove(&k)),
                // Shrinking: an existing key, so that the table empties.
                5 if !growing => {
                    let k = model.range(k..).next().map_or(k, |(&k, _)| k);
                    assert_eq!(ours.remove(&k), model.remove(&k));
                }
                5 => assert_eq!(ours.pop_first(), model.pop_first()),
                6 => assert_eq!(ours.pop_last(), model.pop_last()),
                7 => {
                    let hi = k + rng.next_u64() % 500;
                    assert_eq!(ours.count_in(&k, &hi), model.range(k..hi).count());
                    assert_eq!(
                        ours.at_or_after(&k),
                        model.range(k..).next().map(|(&k, v)| (k, v))
                    );
                    assert_eq!(
                        ours.at_or_before(&k),
                        model.range(..=k).next_back().map(|(&k, v)| (k, v))
                    );
                }
                _ => {
                    assert_eq!(ours.get(&k), model.get(&k));
                    assert_eq!(ours.contains(&k), model.contains_key(&k));
                    let (a, b) = (ours.get_mut(&k), model.get_mut(&k));
                    assert_eq!(a, b);
                    if let (Some(a), Some(b)) = (a, b) {
                        *a += 1;
                        *b += 1;
                    }
                }
            }
            assert_eq!(ours.len(), model.len());
            assert_eq!(ours.is_empty(), model.is_empty());
            assert_eq!(ours.first(), model.first_key_value().map(|(&k, v)| (k, v)));
            if step % 97 == 0 {
                ours.check();
                assert!(ours.iter().eq(model.iter().map(|(&k, v)| (k, v))));
                assert!(ours
                    .iter()
                    .rev()
                    .eq(model.iter().rev().map(|(&k, v)| (k, v))));
            }
            most_blocks = most_blocks.max(ours.blocks.len());
        }
        assert!(most_blocks > 20, "{most_blocks} blocks at most");
    }

    /// Keys in increasing order taken from the front (a queue, the
    /// resequencer's usual case) keep reusing the same blocks, full ones;
    /// a burst's blocks go back as the table empties.
    #[test]
    fn a_queue_reuses_its_blocks_and_a_burst_goes_back() {
        let mut t = SortedDeque::default();
        for k in 0..1000u64 {
            t.insert(k, ());
        }
        let room = t.room();
        assert_eq!(t.blocks.len(), 1000usize.div_ceil(BLOCK));
        for k in 1000..100_000u64 {
            t.insert(k, ());
            t.pop_first();
            // The block the front empties is kept for the back's next.
            assert!((room..=room + 1).contains(&t.room()), "{} blocks", t.room());
        }
        t.check();
        for k in 0..100_000u64 {
            t.insert(1_000_000 + k, ());
        }
        assert!(t.room() >= 100_000 / BLOCK);
        while t.len() > 10 {
            t.pop_first();
        }
        t.check();
        // One block in use, three spare.
        assert!(t.room() <= 4, "{} blocks kept", t.room());
        assert_eq!(t.blocks.capacity(), 16);
    }

    /// The block list gives back room once a quarter of it or less is in
    /// use, to twice that, so a list that then swings by less than a
    /// factor of two is never reallocated.
    #[test]
    fn the_block_list_shrinks_once_then_keeps_its_room() {
        let mut t = SortedDeque::default();
        let entries = |blocks: usize| (blocks * BLOCK) as u64;
        for k in 0..entries(1000) {
            t.insert(k, ());
        }
        let burst = t.blocks.capacity();
        assert!(burst >= 1000);
        let mut next = entries(1000);
        while t.blocks.len() > burst / 4 + 1 {
            t.pop_first();
        }
        // More than a quarter in use: nothing given back yet.
        assert_eq!(t.blocks.capacity(), burst);
        while t.blocks.len() > burst / 4 {
            t.pop_first();
        }
        let shrunk = t.blocks.capacity();
        assert!(
            (burst / 2 - 2..=burst / 2 + 2).contains(&shrunk),
            "{burst} -> {shrunk}"
        );
        for _ in 0..3 {
            while t.blocks.len() < shrunk - 2 {
                t.insert(next, ());
                next += 1;
            }
            while t.blocks.len() > shrunk / 2 + 2 {
                t.pop_first();
            }
            assert_eq!(t.blocks.capacity(), shrunk);
        }
    }

    /// The worst place to insert, the middle of a full table, moves at
    /// most a block's entries and the block list's shorter side, which
    /// stays short: 65,536 keys, then keys in every gap from the middle.
    #[test]
    fn inserts_inside_a_large_table_keep_the_blocks_few() {
        let mut t = SortedDeque::default();
        for k in 0..65_536u64 {
            t.insert(2 * k, ());
        }
        for k in 0..65_536u64 {
            t.insert(65_536 + 2 * (k % 32_768) + 1, ());
        }
        t.check();
        assert!(t.blocks.len() <= 4 * t.len() / BLOCK + 1);
        while t.len() > 1_000 {
            let k = t.iter().nth(t.len() / 2).unwrap().0;
            t.remove(&k);
        }
        t.check();
        assert!(t.blocks.len() <= 4 * t.len() / BLOCK + 1);
    }
}
