//! braid's reliable mode: ordered, reliable byte streams over all paths at
//! once, after pTCP (Hsieh and Sivakumar, "pTCP: An End-to-End Transport
//! Layer Protocol for Striped Connections"), with SCTP-CMT's lessons
//! (cmt-thesis) and BATCP's goal of using every interface.
//!
//! The pTCP split: **congestion control per path** (each path is a
//! [`crate::path::PathSender`] with its own controller, `bbr` or `ccid2`,
//! possibly different per path), **reliability per connection** (one
//! connection-level sequence space over all streams, acknowledged
//! cumulatively and selectively; a segment keeps its number on every path).
//!
//! - *Late binding*: data is cut into a segment only when a path with free
//!   window and pacing room asks for it (`connection`'s `poll_data`), so
//!   no data waits behind a slow path it was bound to early.
//! - *Reassignment*: binding happens at transmission, so a shrinking window
//!   never holds unsent data; what a path had in flight when it stalled
//!   (window full, silent for a round trip) gets its oldest segment copied
//!   to another path, and what it loses is unbound and goes to whichever
//!   path delivers soonest.
//! - *Timeouts*: after a path's timeout all its outstanding data is resent
//!   elsewhere, and the path only probes with a copy of the connection's
//!   oldest segment until it answers, so a blackout never stalls the stream.
//! - *Random loss is not congestion*: loss detection and resends live here,
//!   the congestion response in the path's controller; BBR keeps a 1 %-lossy
//!   radio path near its rate.
//! - *Flow control*: the receiver's buffer (out-of-order plus unread bytes)
//!   is bounded by its window (`receive_window`).
//!
//! ## Plugging into a session
//!
//! The module is sans-IO and knows nothing of sockets or keys. A session
//! carries it as a second payload kind (`session/stream_carrier.rs`, with
//! `SessionConfig::stream`; `braid send`/`braid recv` use it): every packet from
//! [`Connection::poll_transmit`] is sealed by the session's AEAD and sent on
//! `Transmit::path`; an opened packet whose payload kind is "stream" goes to
//! [`Connection::handle_packet`] with the path it arrived on. The stream's
//! own packets ([`frame`]) follow the session's two-byte header (kind
//! `STREAM`, path), and `Config::carrier_overhead` shrinks segments so the
//! whole still fits a 1500-byte IP packet. Timers come through `poll_timeout` /
//! `handle_timeout`. The session's path manager decides the path set (the
//! connection is built with one controller per path).

mod connection;
mod error;
pub mod frame;
mod outstanding;
mod path;
mod receive_window;
mod recv;
mod send;
#[cfg(test)]
mod tests;

pub use connection::{Config, Connection, StreamCounters, Transmit, MAX_PATHS};
pub use error::{code, StreamError};
pub use recv::ReadOutcome;
