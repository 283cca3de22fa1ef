//! Deterministic discrete-event network simulator for braid: two braid-core
//! endpoints joined by simulated paths. Same scenario and seed, same result,
//! to the packet.

pub mod budget;
pub mod clock;
pub mod flows;
pub mod link;
pub mod metrics;
mod reliable;
pub mod reuse;
pub mod series;
pub mod session_run;
pub mod sim;
pub mod spec;
mod stall;
pub mod tcp;
pub mod trace;
pub mod traffic;
