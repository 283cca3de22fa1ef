//! Deterministic discrete-event network simulator for braid.

pub mod spec;
pub mod trace;
