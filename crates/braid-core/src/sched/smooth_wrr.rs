//! Smooth weighted round robin: each pick adds every weight to a running
//! credit and takes the path with the most credit, which spreads a path's
//! turns evenly through the round (a 3:1 split sends A A B A, not A A A B).

#[derive(Debug, Clone, Default)]
pub struct SmoothWrr {
    credit: Vec<f64>,
}

impl SmoothWrr {
    /// Next index by `weights`; `None` when every weight is zero.
    pub fn next(&mut self, weights: &[f64]) -> Option<usize> {
        let best = self.peek(weights)?;
        self.commit(weights, best);
        Some(best)
    }

    /// The index [`SmoothWrr::next`] would give, without taking the turn.
    pub fn peek(&self, weights: &[f64]) -> Option<usize> {
        let credit = |i: usize| self.credit.get(i).copied().unwrap_or(0.0) + weights[i];
        (0..weights.len())
            .filter(|&i| weights[i] > 0.0)
            .max_by(|&a, &b| credit(a).total_cmp(&credit(b)).then(b.cmp(&a)))
    }

    /// Takes the turn for `chosen`.
    pub fn commit(&mut self, weights: &[f64], chosen: usize) {
        self.credit.resize(weights.len(), 0.0);
        let total: f64 = weights.iter().sum();
        for (c, w) in self.credit.iter_mut().zip(weights) {
            *c += w;
        }
        self.credit[chosen] -= total;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spreads_turns_by_weight() {
        let mut w = SmoothWrr::default();
        let picks: Vec<usize> = (0..8).map(|_| w.next(&[3.0, 1.0]).unwrap()).collect();
        assert_eq!(picks, vec![0, 0, 1, 0, 0, 0, 1, 0]);
        assert_eq!(w.next(&[0.0, 0.0]), None);
        // Peeking does not take the turn.
        assert_eq!(w.peek(&[3.0, 1.0]), Some(0));
        assert_eq!(w.peek(&[3.0, 1.0]), Some(0));
    }
}
