//! Closed-loop TCP traffic: bulk TCP senders whose segments are the
//! datagrams the bond carries, and TCP receivers behind the bond's
//! receiver whose ACKs come back to the senders.
//!
//! The model is simple and says what it leaves out. Sequence numbers count
//! whole segments of one MSS; the application always has data (bulk). The
//! sender keeps a SACK scoreboard (RFC 6675): a segment is lost when three
//! segments above it are SACKed, or when the retransmission timer fires.
//! Lost segments are retransmitted first, then new data, while the pipe
//! (segments sent, not SACKed, not lost, plus retransmissions) is below
//! cwnd. Loss recovery (RFC 6582/6675) halves (Reno) or multiplies by 0.7
//! (CUBIC) the window once per window of data, and holds cwnd there until
//! everything sent before the loss is acknowledged (no proportional rate
//! reduction; the SACK scoreboard does what NewReno's partial ACKs do). A
//! recovery that ends without a retransmission (the "lost" segments were
//! only reordered) is undone, as Linux does. A retransmission sent before a
//! segment that has since arrived is lost again (that much of RACK).
//! Slow start grows cwnd by the segments newly acknowledged or SACKed;
//! congestion avoidance by Reno's 1/cwnd per segment or CUBIC's window
//! function ([`window`]). The retransmission timer follows RFC 6298 with
//! Linux's floor of 200 ms on the variance term instead of the RFC's 1 s
//! minimum (`rto`); a timeout sets cwnd to one
//! segment and marks every unSACKed segment lost. Round trips are measured
//! on every ACK from the echoed send time of the segment that caused it
//! (as TCP timestamps give). With `+hystart` (`tcp:cubic+hystart`) slow
//! start also ends by HyStart's delay detection, as Linux CUBIC's does
//! (`hystart`). Not modelled: HyStart's ACK-train detection, PRR, tail loss
//! probes, RACK's time-based loss detection of original transmissions,
//! delayed ACKs (every segment is ACKed), the receive window (never
//! limiting), pacing, ECN, Nagle, the three-way handshake.

mod hystart;
mod receiver;
mod rto;
mod sender;
pub mod window;

pub use receiver::TcpReceiver;
pub use sender::{Segment, TcpCounters, TcpSender};
pub use window::{TcpCc, HYSTART_SUFFIX};

/// TCP and IP headers of a segment (no options but SACK on ACKs).
pub const TCP_IP_HEADERS: usize = 40;

/// SACK blocks an ACK carries at most (RFC 2018, with timestamps).
pub const MAX_SACK_BLOCKS: usize = 3;

/// A cumulative acknowledgement with SACK blocks, in segment numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ack {
    /// The next segment the receiver expects.
    pub cumulative: u64,
    /// Received ranges above `cumulative`, `[start, end)`, the one holding
    /// the segment that caused this ACK first.
    pub sack: Vec<(u64, u64)>,
    /// Send time of the segment that caused this ACK, echoed (TCP
    /// timestamps), in nanoseconds of simulated time.
    pub echo_nanos: u64,
}

impl Ack {
    /// IP bytes of this ACK on the wire: headers plus the SACK option.
    pub fn ip_bytes(&self) -> usize {
        let sack_option = if self.sack.is_empty() {
            0
        } else {
            2 + 8 * self.sack.len()
        };
        // Timestamps option, padded: 12 bytes.
        TCP_IP_HEADERS + 12 + sack_option.next_multiple_of(4)
    }
}
