//! Time as the core sees it: an opaque, monotonic instant that the caller
//! passes in. The core never reads a clock, so a simulator can run it on
//! virtual time and a runtime on the real one.

use std::ops::{Add, AddAssign, Sub};
use std::time::Duration;

/// Nanoseconds since an arbitrary, caller-chosen epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Instant(u64);

impl Instant {
    pub const ZERO: Instant = Instant(0);

    pub const fn from_nanos(n: u64) -> Instant {
        Instant(n)
    }

    pub fn from_duration(d: Duration) -> Instant {
        Instant(d.as_nanos() as u64)
    }

    pub const fn as_nanos(self) -> u64 {
        self.0
    }

    /// Time since the epoch.
    pub fn since_epoch(self) -> Duration {
        Duration::from_nanos(self.0)
    }

    /// Microseconds since the epoch, truncated to the 32 bits the wire carries.
    pub fn wire_micros(self) -> u32 {
        (self.0 / 1_000) as u32
    }

    pub fn saturating_duration_since(self, earlier: Instant) -> Duration {
        Duration::from_nanos(self.0.saturating_sub(earlier.0))
    }

    /// `d` earlier, or the epoch if that is before it.
    pub fn saturating_sub(self, d: Duration) -> Instant {
        Instant(self.0.saturating_sub(d.as_nanos() as u64))
    }
}

impl Add<Duration> for Instant {
    type Output = Instant;
    fn add(self, d: Duration) -> Instant {
        Instant(self.0.saturating_add(d.as_nanos() as u64))
    }
}

impl AddAssign<Duration> for Instant {
    fn add_assign(&mut self, d: Duration) {
        *self = *self + d;
    }
}

impl Sub<Instant> for Instant {
    type Output = Duration;
    /// Saturates at zero: the core never needs negative spans.
    fn sub(self, earlier: Instant) -> Duration {
        self.saturating_duration_since(earlier)
    }
}
