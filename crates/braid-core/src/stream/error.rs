//! Why a stream connection failed. Every failure ends the connection: the
//! application learns it from [`super::Connection::error`] and from every
//! call that would move data, never from silently wrong bytes.

use super::frame::FrameError;

/// Abort codes on the wire.
pub mod code {
    /// The application aborted.
    pub const APPLICATION: u32 = 1;
    /// The peer broke the protocol (flow control, stream limits, overlapping data).
    pub const PROTOCOL: u32 = 2;
    /// Nothing heard from the peer for the idle timeout.
    pub const IDLE: u32 = 3;
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    #[error("malformed stream packet: {0}")]
    Malformed(#[from] FrameError),
    #[error("peer sent connection bytes up to {end}, past the {limit} it was allowed")]
    FlowControl { end: u64, limit: u64 },
    #[error("peer used stream {0}, past the stream limit")]
    StreamLimit(u32),
    #[error("peer sent data that contradicts data already received (stream {0})")]
    Inconsistent(u32),
    #[error("no acknowledgement on any path for {0:?}: peer unreachable")]
    IdleTimeout(std::time::Duration),
    #[error("connection aborted locally (code {0})")]
    LocalAbort(u32),
    #[error("connection aborted by the peer (code {0})")]
    PeerAbort(u32),
    #[error("unknown stream {0}")]
    UnknownStream(u32),
    #[error("stream {0} is already finished")]
    Finished(u32),
    #[error("path {0} does not exist")]
    UnknownPath(u8),
    #[error("connection sequence space used up (2^62 bytes)")]
    SequenceExhausted,
}
