//! The core's time: nanoseconds since the daemon started, from tokio's
//! monotonic clock.

use braid_core::time::Instant;

#[derive(Debug, Clone, Copy)]
pub struct Clock {
    start: tokio::time::Instant,
}

impl Clock {
    pub fn start() -> Clock {
        Clock {
            start: tokio::time::Instant::now(),
        }
    }

    pub fn now(&self) -> Instant {
        Instant::from_duration(self.start.elapsed())
    }

    /// The tokio instant of a core instant (for sleeping until a timeout).
    pub fn deadline(&self, at: Instant) -> tokio::time::Instant {
        self.start + at.since_epoch()
    }
}
