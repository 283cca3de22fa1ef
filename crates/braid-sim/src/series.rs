//! Throughput over time: bytes per time bin, for each of a few lanes (one
//! per path, one for in-order goodput). Bins are added as simulated time
//! reaches them, never allocated for the whole run up front, and once a lane
//! would hold more than [`MAX_BINS`] the bins double in width, so the memory
//! a series takes is bounded whatever the run's length.

use std::time::Duration;

/// The most bins a lane holds: a plot has no use for more points, and a
/// 600 s run at the default 100 ms bins (6001 bins) keeps its width.
pub const MAX_BINS: usize = 10_000;

#[derive(Debug)]
pub struct Binned {
    width: Duration,
    lanes: Vec<Vec<u64>>,
}

impl Binned {
    pub fn new(width: Duration, lanes: usize) -> Binned {
        Binned {
            width: width.max(Duration::from_nanos(1)),
            lanes: vec![Vec::new(); lanes],
        }
    }

    /// Adds `bytes` at time `t` to `lane`.
    pub fn add(&mut self, lane: usize, t: Duration, bytes: u64) {
        let mut bin = self.bin_of(t);
        while bin >= MAX_BINS {
            self.coarsen();
            bin = self.bin_of(t);
        }
        let Some(bins) = self.lanes.get_mut(lane) else {
            return;
        };
        if bins.len() <= bin {
            bins.resize(bin + 1, 0);
        }
        bins[bin] = bins[bin].saturating_add(bytes);
    }

    /// The bin width and every lane with one bin for each started width in
    /// `[0, duration]` (the last one partial), as a run reports them.
    pub fn finish(mut self, duration: Duration) -> (Duration, Vec<Vec<u64>>) {
        while self.bin_of(duration) >= MAX_BINS {
            self.coarsen();
        }
        let n = self.bin_of(duration) + 1;
        for bins in &mut self.lanes {
            bins.resize(n, 0);
        }
        (self.width, self.lanes)
    }

    fn bin_of(&self, t: Duration) -> usize {
        usize::try_from(t.as_nanos() / self.width.as_nanos()).unwrap_or(usize::MAX)
    }

    /// Merges each pair of neighbouring bins into one of twice the width.
    fn coarsen(&mut self) {
        self.width = self.width.saturating_mul(2);
        for bins in &mut self.lanes {
            *bins = bins.chunks(2).map(|pair| pair.iter().sum()).collect();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_grow_with_time_and_match_fixed_bins() {
        let mut b = Binned::new(Duration::from_millis(100), 2);
        b.add(0, Duration::from_millis(50), 10);
        b.add(1, Duration::from_millis(250), 7);
        b.add(0, Duration::from_millis(299), 5);
        assert_eq!(b.lanes[0].len(), 3, "only the bins reached so far");
        let (width, lanes) = b.finish(Duration::from_secs(1));
        assert_eq!(width, Duration::from_millis(100));
        assert_eq!(lanes[0], [10, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert_eq!(lanes[1], [0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0]);
    }

    #[test]
    fn a_long_run_widens_the_bins_and_keeps_every_byte() {
        let mut b = Binned::new(Duration::from_millis(100), 1);
        let step = Duration::from_millis(37);
        let mut t = Duration::ZERO;
        let mut total = 0;
        while t < Duration::from_secs(3000) {
            b.add(0, t, 3);
            total += 3;
            t += step;
        }
        assert!(b.lanes[0].len() <= MAX_BINS);
        let (width, lanes) = b.finish(Duration::from_secs(9_999_999));
        assert!(lanes[0].len() <= MAX_BINS && lanes[0].len() > MAX_BINS / 2);
        assert_eq!(lanes[0].iter().sum::<u64>(), total);
        assert_eq!(
            width.as_millis() % 100,
            0,
            "a whole multiple of the asked width"
        );
    }
}
