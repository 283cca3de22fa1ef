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

    pub fn update(&mut self, round: u64, value: f64) {
        while self.entries.back().is_some_and(|&(_, v)| v <= value) {
            self.entries.pop_back();
        }
        self.entries.push_back((round, value));
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
}
