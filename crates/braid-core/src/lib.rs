//! braid's protocol core, as state machines without I/O.
//!
//! Determinism contract (after quinn-proto): nothing here reads a clock,
//! spawns a thread, opens a socket or draws from a global random source.
//! Time comes in as [`time::Instant`] arguments; bytes come in through
//! `handle_*` methods and leave through `poll_*` methods; timers are exposed
//! by `poll_timeout` and fired by `handle_timeout`. The same inputs always
//! give the same outputs.
//!
//! No `unsafe` code: everything that reads the wire is safe Rust, so a
//! malformed packet can cost time or memory (which the fuzz targets bound)
//! but cannot corrupt memory.

#![forbid(unsafe_code)]

pub mod cc;
pub mod crypto;
pub mod ecn;
pub mod fq;
pub mod path;
pub mod pool;
mod queue_clock;
pub mod receiver;
mod reinject;
pub mod reseq;
pub mod sched;
pub mod sender;
pub mod session;
pub mod stream;
pub mod time;
pub mod wire;
