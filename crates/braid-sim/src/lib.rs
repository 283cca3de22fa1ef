//! Deterministic discrete-event network simulator for braid: two braid-core
//! endpoints joined by simulated paths. Same scenario and seed, same result,
//! to the packet.

pub mod budget;
pub mod clock;
pub mod link;
pub mod metrics;
pub mod series;
pub mod sim;
pub mod spec;
pub mod trace;
pub mod traffic;
