//! Per-path congestion control behind one trait, one file per algorithm.
//! Controllers see acknowledgements, losses and timeouts of their own path
//! only; the session owns sequence numbers and loss detection.

mod ack_aggregation;
mod bbr;
mod ccid2;
mod windowed_max;

pub use bbr::Bbr;
pub use ccid2::Ccid2;
pub use windowed_max::WindowedMax;

use std::fmt;
use std::time::Duration;

use crate::time::Instant;

/// Segment size the controllers count windows in.
pub const MSS: u64 = 1500;

/// What one acknowledged packet tells a controller.
#[derive(Debug, Clone, Copy)]
pub struct AckSample {
    pub bytes: u64,
    /// Round-trip time, when this ack measured one.
    pub rtt: Option<Duration>,
    /// Delivery rate measured over the packet's flight (BBR-style rate sample).
    pub delivery_rate_bps: Option<f64>,
    /// The sender had nothing to send when this packet left, so the rate
    /// sample may understate what the path can carry.
    pub app_limited: bool,
    /// The path had little of its window in flight when the packet left
    /// (see `path::PathSender::underused`): with data waiting or not, the
    /// scheduler gave it only what the other paths left, so the packet is
    /// no evidence that the path was loaded.
    pub underused: bool,
    /// Path's total delivered bytes when the packet was sent, and now.
    pub prior_delivered: u64,
    pub delivered: u64,
    pub bytes_in_flight: u64,
}

pub trait Controller: fmt::Debug + Send {
    fn name(&self) -> &'static str;
    fn on_sent(&mut self, now: Instant, bytes: u64, bytes_in_flight: u64);
    fn on_ack(&mut self, now: Instant, ack: &AckSample);
    /// A packet sent at `sent` was declared lost.
    fn on_loss(&mut self, now: Instant, sent: Instant, bytes: u64, bytes_in_flight: u64);
    /// No acknowledgement for a whole timeout: the path may be dead.
    fn on_timeout(&mut self, now: Instant);
    fn cwnd_bytes(&self) -> u64;
    /// Rate to pace at, if the controller paces.
    fn pacing_rate_bps(&self) -> Option<f64>;
    /// The controller's estimate of the path's rate, for schedulers.
    fn bandwidth_bps(&self, srtt: Option<Duration>) -> Option<f64>;
    /// Another path went down or out of use: this one is about to carry
    /// more than it has lately, by an amount no sample has shown yet.
    fn on_load_shift(&mut self) {}
    /// A measurement of the path's rate made apart from the traffic (a
    /// packet train, `session::train`), before this controller found the
    /// rate itself. Returns whether it took it: a controller that has no
    /// rate model, or that has found the path's rate from full-load
    /// samples, ignores it.
    fn seed_bandwidth(&mut self, _bps: f64) -> bool {
        false
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CcKind {
    Bbr,
    Ccid2,
}

impl CcKind {
    pub fn parse(name: &str) -> Option<CcKind> {
        match name {
            "bbr" => Some(CcKind::Bbr),
            "ccid2" => Some(CcKind::Ccid2),
            _ => None,
        }
    }

    pub const NAMES: &'static [&'static str] = &["bbr", "ccid2"];

    pub fn name(self) -> &'static str {
        match self {
            CcKind::Bbr => "bbr",
            CcKind::Ccid2 => "ccid2",
        }
    }

    pub fn build(self) -> Box<dyn Controller> {
        match self {
            CcKind::Bbr => Box::new(Bbr::new()),
            CcKind::Ccid2 => Box::new(Ccid2::new()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_parses_its_own_name_and_builds_itself() {
        let kinds = [CcKind::Bbr, CcKind::Ccid2];
        let names: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
        assert_eq!(names, CcKind::NAMES);
        assert_eq!(names, ["bbr", "ccid2"]);
        for kind in kinds {
            assert_eq!(CcKind::parse(kind.name()), Some(kind));
            assert_eq!(kind.build().name(), kind.name());
        }
        for unknown in ["", "cubic", "BBR", "bbr "] {
            assert_eq!(CcKind::parse(unknown), None, "{unknown:?}");
        }
    }
}
