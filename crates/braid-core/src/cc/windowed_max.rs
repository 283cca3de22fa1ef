//! Maximum of a value over a sliding window of rounds, in O(1) amortised:
//! a monotonic deque keeps only values that can still become the maximum.

use std::collections::VecDeque;

#[derive(Debug, Clone)]
pub struct WindowedMax {
    window: u64,
    entries: VecDeque<(u64, f64)>,
}

impl WindowedMax {
    pub fn new(window: u64) -> WindowedMax {
        WindowedMax {
            window,
            entries: VecDeque::new(),
        }
    }

    /// Takes `value` in `round`, which is never below the last round given.
    /// A value below one already taken in the same round expires with it
    /// and can never be the maximum, so it is not kept: the deque holds at
    /// most one entry per round of the window, however many values a round
    /// brings (a controller's clock may stand still for many samples).
    pub fn update(&mut self, round: u64, value: f64) {
        while self.entries.back().is_some_and(|&(_, v)| v <= value) {
            self.entries.pop_back();
        }
        if self.entries.back().is_none_or(|&(r, _)| r != round) {
            self.entries.push_back((round, value));
        }
        self.expire(round);
    }

    pub fn expire(&mut self, round: u64) {
        while self
            .entries
            .front()
            .is_some_and(|&(r, _)| r + self.window <= round)
        {
            self.entries.pop_front();
        }
    }

    pub fn get(&self) -> Option<f64> {
        self.entries.front().map(|&(_, v)| v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_max_of_window() {
        let mut w = WindowedMax::new(3);
        w.update(0, 5.0);
        w.update(1, 3.0);
        assert_eq!(w.get(), Some(5.0));
        w.update(2, 4.0);
        w.update(3, 1.0);
        assert_eq!(w.get(), Some(4.0));
        w.expire(6);
        assert_eq!(w.get(), None);
    }

    #[test]
    fn one_entry_per_round_however_many_values_it_brings() {
        let mut w = WindowedMax::new(3);
        for i in 0..1000 {
            w.update(7, 1000.0 - f64::from(i));
        }
        assert_eq!(w.entries.len(), 1);
        assert_eq!(w.get(), Some(1000.0));
        w.update(8, 2.0);
        w.update(8, 1.0);
        assert_eq!(w.entries.len(), 2);
        w.update(10, 0.5);
        assert_eq!(w.get(), Some(2.0));
        w.update(11, 0.5);
        assert_eq!(w.get(), Some(0.5));
    }
}
