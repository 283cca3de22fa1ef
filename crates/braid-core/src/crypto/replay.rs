//! Anti-replay sliding window over 64-bit packet counters (the bitmap of
//! RFC 6479, without its power-of-two restriction). Paths reorder against
//! each other, so the window is wide: a packet up to [`REPLAY_WINDOW`]
//! counters behind the newest one is still accepted once.
//!
//! The window is a ring of 64-bit words indexed by `counter / 64`; one word
//! more than the window needs, so the word the newest counter sits in never
//! aliases the oldest word still inside the window.

/// Counters accepted behind the newest: `newest - REPLAY_WINDOW + 1 ..= newest`
/// (and anything newer).
pub const REPLAY_WINDOW: u64 = 8192;

const WORDS: usize = (REPLAY_WINDOW / 64) as usize + 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ReplayError {
    #[error("counter seen before")]
    Replayed,
    #[error("counter older than the replay window")]
    TooOld,
    #[error("counter at the end of its range")]
    Exhausted,
}

#[derive(Clone)]
pub struct ReplayWindow {
    /// One past the newest counter accepted (0: none yet).
    next: u64,
    words: [u64; WORDS],
}

impl std::fmt::Debug for ReplayWindow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ReplayWindow")
            .field("next", &self.next)
            .finish()
    }
}

impl Default for ReplayWindow {
    fn default() -> ReplayWindow {
        ReplayWindow {
            next: 0,
            words: [0; WORDS],
        }
    }
}

fn slot(counter: u64) -> (usize, u64) {
    (
        ((counter / 64) % WORDS as u64) as usize,
        1 << (counter % 64),
    )
}

impl ReplayWindow {
    /// Whether `counter` would be accepted; changes nothing. Check before
    /// decrypting, [`accept`](Self::accept) after the packet authenticated,
    /// so a forged packet cannot move the window.
    pub fn check(&self, counter: u64) -> Result<(), ReplayError> {
        if counter == u64::MAX {
            // `next` could not move past it.
            return Err(ReplayError::Exhausted);
        }
        if counter >= self.next {
            return Ok(());
        }
        if self.next - counter > REPLAY_WINDOW {
            return Err(ReplayError::TooOld);
        }
        let (word, bit) = slot(counter);
        if self.words[word] & bit != 0 {
            return Err(ReplayError::Replayed);
        }
        Ok(())
    }

    /// Marks `counter` as seen, sliding the window forward if it is new.
    pub fn accept(&mut self, counter: u64) -> Result<(), ReplayError> {
        self.check(counter)?;
        if counter >= self.next {
            // Clear the words between the newest word and `counter`'s.
            let first_new = if self.next == 0 {
                0
            } else {
                (self.next - 1) / 64 + 1
            };
            let last_new = counter / 64;
            let fresh = last_new.saturating_sub(first_new).saturating_add(1);
            if last_new >= first_new {
                if fresh >= WORDS as u64 {
                    self.words = [0; WORDS];
                } else {
                    for w in first_new..=last_new {
                        self.words[slot(w * 64).0] = 0;
                    }
                }
            }
            self.next = counter + 1;
        }
        let (word, bit) = slot(counter);
        self.words[word] |= bit;
        Ok(())
    }

    /// One past the newest counter accepted.
    pub fn next_expected(&self) -> u64 {
        self.next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_once_in_any_order() {
        let mut w = ReplayWindow::default();
        for c in [5, 0, 3, 4, 1, 2] {
            assert_eq!(w.accept(c), Ok(()), "{c}");
        }
        for c in 0..6 {
            assert_eq!(w.accept(c), Err(ReplayError::Replayed), "{c}");
        }
        assert_eq!(w.next_expected(), 6);
        assert_eq!(w.accept(6), Ok(()));
    }

    #[test]
    fn check_does_not_mark() {
        let mut w = ReplayWindow::default();
        assert_eq!(w.check(10), Ok(()));
        assert_eq!(w.check(10), Ok(()));
        assert_eq!(w.next_expected(), 0);
        w.accept(10).unwrap();
        assert_eq!(w.check(10), Err(ReplayError::Replayed));
    }

    #[test]
    fn window_edge_exactly() {
        let mut w = ReplayWindow::default();
        let newest = 100_000;
        w.accept(newest).unwrap();
        // newest - REPLAY_WINDOW + 1 is the oldest still inside.
        let oldest_inside = newest - REPLAY_WINDOW + 1;
        assert_eq!(w.check(oldest_inside - 1), Err(ReplayError::TooOld));
        assert_eq!(w.accept(oldest_inside), Ok(()));
        assert_eq!(w.accept(oldest_inside), Err(ReplayError::Replayed));
        // The newest word and the oldest one do not share a slot.
        assert_eq!(w.check(newest), Err(ReplayError::Replayed));
        assert_eq!(w.check(newest - 1), Ok(()));
    }

    #[test]
    fn sliding_clears_reused_words() {
        let mut w = ReplayWindow::default();
        for c in 0..200 {
            w.accept(c).unwrap();
        }
        // Jump past them, so that the window's words reuse the slots that
        // hold their bits.
        let jump = 200 + REPLAY_WINDOW + 5;
        w.accept(jump).unwrap();
        for c in jump - REPLAY_WINDOW + 1..jump {
            assert_eq!(w.check(c), Ok(()), "{c} must look unseen after the slide");
        }
        // Small steps forward keep earlier marks inside the window.
        let mut w = ReplayWindow::default();
        for c in (0..20_000).step_by(3) {
            w.accept(c).unwrap();
        }
        for c in 20_000 - REPLAY_WINDOW + 1..20_000 {
            let seen = c % 3 == 0;
            assert_eq!(w.check(c).is_err(), seen, "{c}");
        }
    }

    #[test]
    fn huge_jump_and_counter_top() {
        let mut w = ReplayWindow::default();
        w.accept(7).unwrap();
        w.accept(u64::MAX - 1).unwrap();
        assert_eq!(w.check(7), Err(ReplayError::TooOld));
        assert_eq!(w.accept(u64::MAX - 1), Err(ReplayError::Replayed));
        assert_eq!(w.accept(u64::MAX - 2), Ok(()));
        assert_eq!(w.next_expected(), u64::MAX);
        assert_eq!(w.accept(u64::MAX), Err(ReplayError::Exhausted));
    }

    #[test]
    fn matches_a_set_model() {
        // A reference model: a set of accepted counters and the window rule.
        use std::collections::BTreeSet;
        let mut w = ReplayWindow::default();
        let mut seen = BTreeSet::new();
        let mut x: u64 = 12345;
        for _ in 0..50_000 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let newest = seen.last().copied().unwrap_or(0);
            let c = (newest + 300u64).saturating_sub((x >> 33) % 9000);
            let expect = if seen.is_empty() || c > newest {
                Ok(())
            } else if newest + 1 - c > REPLAY_WINDOW {
                Err(ReplayError::TooOld)
            } else if seen.contains(&c) {
                Err(ReplayError::Replayed)
            } else {
                Ok(())
            };
            assert_eq!(w.accept(c), expect, "counter {c}, newest {newest}");
            if expect.is_ok() {
                seen.insert(c);
            }
        }
    }
}
