//! Packet buffers kept for reuse, so that a steady stream of packets
//! allocates nothing per packet: a buffer the data plane is done with (a
//! datagram copied out, a payload acknowledged or written out) comes back
//! here and carries the next packet.
//!
//! Buffers come in three sizes, each a quarter of the one above, and a
//! packet gets the smallest that holds it. So a buffer is never more than
//! four times the bytes it carries: the queues and the resequencer bound
//! what they hold by payload bytes, and that bound stays within a factor
//! of four of the memory actually held. A packet under a quarter of the
//! smallest size gets an exact buffer of its own.
//!
//! A pool keeps only buffers of its sizes, so an oversized buffer handed
//! back is not held, and only as many bytes of them as its owner says it
//! has room for: the owner's own bound (a send queue's bytes, a
//! resequencer's) less what it holds. So the buffers in use and in the
//! pool together stay within the bound the owner had before it pooled
//! anything. At a few Gbit/s what a sender holds swings by megabytes (a
//! TUN read of 46 packets, a window acknowledged at once); a pool of a
//! fixed 1 MB ran dry at each swing and allocated for 0.63 packets in
//! one, 4 MB for 0.03 (BENCHMARKS.md, "Allocations per packet").
//!
//! Buffers a pool kept through a whole [`TRIM_INTERVAL`] without handing
//! them out are freed at the owner's next [`BufferPool::trim`]: a session
//! idle after a burst gives its megabytes back within two intervals, while
//! steady traffic keeps the buffers it cycles through.

use std::time::Duration;

use crate::time::Instant;

/// How often a pool frees what it did not use.
pub const TRIM_INTERVAL: Duration = Duration::from_secs(1);

/// Sizes below the largest: each a quarter of the one above.
const SMALLER_SIZES: usize = 2;

#[derive(Debug)]
pub struct BufferPool {
    /// Largest first.
    sizes: [SizeClass; 1 + SMALLER_SIZES],
    /// Capacity of the buffers kept, all sizes.
    bytes: usize,
    next_trim: Option<Instant>,
}

#[derive(Debug)]
struct SizeClass {
    capacity: usize,
    free: Vec<Vec<u8>>,
    /// Fewest buffers kept since the last trim: that many were not needed.
    unused: usize,
}

impl BufferPool {
    /// A pool whose largest buffers hold `largest` bytes.
    pub fn new(largest: usize) -> BufferPool {
        BufferPool {
            sizes: std::array::from_fn(|i| SizeClass {
                capacity: largest >> (2 * i),
                free: Vec::new(),
                unused: 0,
            }),
            bytes: 0,
            next_trim: None,
        }
    }

    /// An empty buffer with room for `len` bytes: a kept one of the
    /// smallest size that holds them if there is one, else a new one of
    /// that size; one of exactly `len` if it is under a quarter of the
    /// smallest size or above the largest.
    pub fn take(&mut self, len: usize) -> Vec<u8> {
        let Some(class) = self.class_for(len) else {
            return Vec::with_capacity(len);
        };
        match class.free.pop() {
            Some(buffer) => {
                class.unused = class.unused.min(class.free.len());
                self.bytes -= buffer.capacity();
                buffer
            }
            None => Vec::with_capacity(class.capacity),
        }
    }

    /// `bytes` in a buffer from [`BufferPool::take`].
    pub fn copy_of(&mut self, bytes: &[u8]) -> Vec<u8> {
        let mut buffer = self.take(bytes.len());
        buffer.extend_from_slice(bytes);
        buffer
    }

    /// Gives `buffer` back. Kept, emptied, if it is of one of the pool's
    /// sizes (at least that size, under twice it) and the pool's bytes
    /// with it stay within `room`; freed otherwise.
    pub fn put(&mut self, mut buffer: Vec<u8>, room: usize) {
        let capacity = buffer.capacity();
        if self.bytes + capacity > room {
            return;
        }
        let class = self
            .sizes
            .iter_mut()
            .find(|c| capacity >= c.capacity && capacity < 2 * c.capacity);
        if let Some(class) = class {
            buffer.clear();
            class.free.push(buffer);
            self.bytes += capacity;
        }
    }

    /// Frees the buffers that stayed in the pool since the last trim, at
    /// most once per [`TRIM_INTERVAL`] (the first call only starts the
    /// interval).
    pub fn trim(&mut self, now: Instant) {
        match self.next_trim {
            Some(t) if now < t => return,
            Some(_) => {
                for class in &mut self.sizes {
                    for buffer in class.free.drain(..class.unused) {
                        self.bytes -= buffer.capacity();
                    }
                    class.unused = class.free.len();
                }
            }
            None => {}
        }
        self.next_trim = Some(now + TRIM_INTERVAL);
    }

    /// Capacity of the buffers kept.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Buffers kept, of all sizes.
    pub fn len(&self) -> usize {
        self.sizes.iter().map(|c| c.free.len()).sum()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn class_for(&mut self, len: usize) -> Option<&mut SizeClass> {
        let smallest = self.sizes[SMALLER_SIZES].capacity;
        if len < smallest / 4 {
            return None;
        }
        self.sizes.iter_mut().rev().find(|c| c.capacity >= len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOM: usize = 1 << 20;

    #[test]
    fn a_buffer_given_back_is_handed_out_again_empty() {
        let mut pool = BufferPool::new(1600);
        let b = pool.copy_of(&[7; 1500]);
        assert!(b.capacity() >= 1600);
        let at = b.as_ptr();
        pool.put(b, ROOM);
        assert_eq!(pool.len(), 1);
        let again = pool.take(1600);
        assert_eq!(again.as_ptr(), at, "the same allocation");
        assert!(again.is_empty());
        assert!(pool.is_empty());
    }

    #[test]
    fn a_packet_gets_the_smallest_size_that_holds_it_and_at_most_four_times_its_length() {
        let mut pool = BufferPool::new(1600);
        let mut taken = Vec::new();
        for (len, capacity) in [
            (1600, 1600),
            (401, 1600),
            (400, 400),
            (101, 400),
            (100, 100),
            (25, 100),
            // Under a quarter of the smallest size, or above the largest:
            // exact, and not kept.
            (24, 24),
            (3200, 3200),
        ] {
            let b = pool.take(len);
            assert_eq!(b.capacity(), capacity, "{len} bytes");
            assert!(b.capacity() <= 4 * len);
            taken.push(b);
        }
        for b in taken {
            pool.put(b, ROOM);
        }
        assert_eq!(pool.len(), 6);
        // Each came back to its own size.
        for (len, capacity) in [(1000, 1600), (300, 400), (50, 100)] {
            assert_eq!(pool.take(len).capacity(), capacity);
            assert_eq!(pool.take(len).capacity(), capacity);
        }
        assert!(pool.is_empty());
    }

    #[test]
    fn only_buffers_of_the_pools_sizes_are_kept() {
        let mut pool = BufferPool::new(1600);
        for capacity in [99, 200, 399, 800, 1599, 3200] {
            pool.put(Vec::with_capacity(capacity), ROOM);
        }
        assert!(pool.is_empty());
        for capacity in [100, 199, 400, 799, 1600, 3199] {
            pool.put(Vec::with_capacity(capacity), ROOM);
        }
        assert_eq!(pool.len(), 6);
    }

    #[test]
    fn the_pool_keeps_at_most_its_bound_in_bytes() {
        let mut pool = BufferPool::new(1600);
        for _ in 0..1000 {
            pool.put(Vec::with_capacity(1600), ROOM);
        }
        let large = ROOM / 1600;
        assert_eq!(pool.len(), large);
        // What is left takes smaller buffers, and no more.
        for _ in 0..100 {
            pool.put(Vec::with_capacity(100), ROOM);
        }
        let small = (ROOM - large * 1600) / 100;
        assert_eq!(pool.len(), large + small);
        pool.put(Vec::with_capacity(1600), ROOM);
        assert_eq!(pool.len(), large + small, "full");
        // Room again once one is taken.
        let before = pool.bytes;
        assert!(pool.take(1600).capacity() >= 1600);
        assert_eq!(pool.bytes, before - 1600);
        pool.put(Vec::with_capacity(1600), ROOM);
        assert_eq!(pool.len(), large + small);
        while !pool.is_empty() {
            pool.take(50);
            pool.take(1600);
        }
        assert_eq!(pool.bytes, 0);
    }

    #[test]
    fn buffers_not_handed_out_for_a_whole_interval_are_freed() {
        let t0 = Instant::from_nanos(1_000_000_000);
        let mut pool = BufferPool::new(1600);
        pool.trim(t0);
        for _ in 0..10 {
            pool.put(Vec::with_capacity(1600), ROOM);
        }
        // The first interval: the ten came in and were never all needed
        // out, but the trim counts from its own start, when none were kept.
        pool.trim(t0 + TRIM_INTERVAL);
        assert_eq!(pool.len(), 10);
        // Steady use of three at a time: seven were never needed.
        for _ in 0..100 {
            let b: Vec<_> = (0..3).map(|_| pool.take(1500)).collect();
            b.into_iter().for_each(|b| pool.put(b, ROOM));
        }
        pool.trim(t0 + TRIM_INTERVAL + TRIM_INTERVAL / 2);
        assert_eq!(pool.len(), 10, "not before the interval is over");
        pool.trim(t0 + 2 * TRIM_INTERVAL);
        assert_eq!(pool.len(), 3);
        assert_eq!(pool.bytes, 3 * 1600);
        // Idle for an interval: the rest goes.
        pool.trim(t0 + 3 * TRIM_INTERVAL);
        assert!(pool.is_empty());
        assert_eq!(pool.bytes, 0);
    }

    #[test]
    fn the_owners_room_bounds_what_is_kept() {
        let mut pool = BufferPool::new(1600);
        pool.put(Vec::with_capacity(1600), 1599);
        assert!(pool.is_empty());
        pool.put(Vec::with_capacity(1600), 1600);
        assert_eq!(pool.len(), 1, "exactly the room");
        pool.put(Vec::with_capacity(100), 1699);
        assert_eq!(pool.len(), 1);
        pool.put(Vec::with_capacity(100), 1700);
        assert_eq!(pool.len(), 2);
    }
}
