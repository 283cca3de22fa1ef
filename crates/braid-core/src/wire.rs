//! braid's wire format. Every packet starts with one byte: the version in the
//! high nibble, the packet type in the low nibble. All integers are
//! big-endian. Parsing checks every length before it reads; malformed input
//! is a [`WireError`], never a panic.
//!
//! ```text
//! Data:      ver|type(1) path(1) pseq(4) gseq(4) send_ts_us(4) prev_gap(2) flow_gap(2) payload...
//!            (type 1, or 3 for an express datagram: see below; either
//!            with bit 0x8 set when the sender re-sends lost datagrams,
//!            and with bit 0x4 when it was sent behind lower numbers)
//! Feedback:  ver|type(1) path(1) frame...
//!   Ack frame:        0x01 path(1) largest_pseq(4) ack_delay_us(4) recv_ts_us(4) bitmap(8)
//!   LossReport frame: 0x02 report_seq(4) count(1) { path(1) received(4) lost(4) } * count
//!   Skip frame:       0x03 from_gseq(8) count(4)
//! ```
//!
//! `gseq` is the global sequence number, `pseq` the per-path one; both
//! travel as their low 32 bits and the receiver widens them ([`widen`])
//! to the 64-bit value nearest the one it expects. `prev_gap` is `gseq` minus the global sequence
//! number of the previous packet sent on the same path (0 for none known):
//! when that previous packet is lost, the resequencer knows exactly which
//! global number to skip. `flow_gap` is `gseq` minus the global number of
//! the previous packet of the same flow (0: no flow information, deliver in
//! global order): the receiver may deliver a packet as soon as its flow's
//! previous one has gone, without waiting for other flows' holes. Both gaps
//! saturate: [`GAP_SATURATED`] means "at least that far back (or none)".
//! An express data packet (type 3, same layout) is a sparse flow's datagram
//! the sender put ahead of lower numbers it had not sent yet: its arrival
//! says nothing about the numbers below it, so the receiver does not wait
//! on them or give them up because of it.
//! A data packet whose type has bit 0x8 set ([`RESENDS_FLAG`]) comes from a
//! sender that re-sends the datagrams its paths lose (see
//! [`crate::sender`]): for each loss it detects, it sends the datagram
//! again or a Skip frame naming it, so a receiver may wait for one of the
//! two rather than give the number up at once.
//! A data packet whose type has bit 0x4 set ([`BEHIND_FLAG`]) left while
//! the sender still held lower numbers for a path it expected to deliver
//! them sooner (a scheduler's `SendBehind`). Those numbers may land after
//! it when the estimate was wrong, so the receiver waits for them longer
//! than for a hole that a packet sent from the head of the sender's window
//! has passed (see [`crate::reseq`]).
//! Acks and loss reports flow from receiver to sender; Skip frames flow the
//! other way: the sender numbers datagrams as they are queued, and tells the
//! receiver which numbers it dropped unsent and which its paths lost and it
//! will not send again. Timestamps are microseconds of the sender's (or, for
//! `recv_ts_us`, the receiver's) clock, truncated to 32 bits; only their
//! differences are used.

pub const VERSION: u8 = 3;

/// A `prev_gap` or `flow_gap` of this value: the previous packet is at
/// least this many numbers back, or there is none.
pub const GAP_SATURATED: u16 = u16::MAX;

/// Set in a data packet's type nibble: the sender re-sends lost datagrams.
pub const RESENDS_FLAG: u8 = 0x8;

/// Set in a data packet's type nibble: the packet left while the sender
/// still held lower numbers for a faster path (`SendBehind`).
pub const BEHIND_FLAG: u8 = 0x4;

/// The flag bits a data packet's type nibble may carry.
const DATA_FLAGS: u8 = RESENDS_FLAG | BEHIND_FLAG;

/// Whether a type nibble, flags cleared, is one of a data packet.
fn is_data_type(t: u8) -> bool {
    t == PacketType::Data as u8 || t == PacketType::DataExpress as u8
}

/// Whether `first` is the first byte of a data packet of this version
/// (any flags).
pub fn is_data_first_byte(first: u8) -> bool {
    first >> 4 == VERSION && is_data_type(first & 0x0f & !DATA_FLAGS)
}

/// Bytes of a data packet's header.
pub const DATA_HEADER_LEN: usize = 18;
/// The data header's first bytes (first byte, path, path number: the order
/// is for this) that a session's data message carries in its own header
/// instead (`crate::crypto` data messages): the rest of the header follows
/// in the ciphertext.
pub const DATA_HEADER_IN_MESSAGE: usize = 6;
/// IPv4 + UDP headers around every braid packet on a path.
pub const IP_UDP_OVERHEAD: usize = 28;

/// IP + UDP headers around every braid packet on an IPv6 path (40 + 8) or
/// an IPv4 one ([`IP_UDP_OVERHEAD`]).
pub const fn ip_udp_overhead(ipv6: bool) -> usize {
    if ipv6 {
        48
    } else {
        IP_UDP_OVERHEAD
    }
}

/// Bytes a datagram of `payload` bytes occupies on a path as an IP packet
/// (a path's rate counts IP bytes).
pub const fn ip_packet_len(payload: usize) -> usize {
    payload + DATA_HEADER_LEN + IP_UDP_OVERHEAD
}
const ACK_FRAME_LEN: usize = 21;
const LOSS_ENTRY_LEN: usize = 9;

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    #[error("packet truncated: needed {needed} bytes, have {have}")]
    Truncated { needed: usize, have: usize },
    #[error("unsupported version {0}")]
    Version(u8),
    #[error("unknown packet type {0}")]
    PacketType(u8),
    #[error("unknown frame type {0}")]
    FrameType(u8),
    #[error("output buffer too small: need {0} bytes")]
    BufferTooSmall(usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum PacketType {
    Data = 1,
    Feedback = 2,
    DataExpress = 3,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataHeader {
    pub path: u8,
    /// The global sequence number's low 32 bits ([`widen`]).
    pub gseq: u32,
    pub pseq: u32,
    pub send_ts_us: u32,
    pub prev_gap: u16,
    pub flow_gap: u16,
    /// Sent ahead of lower numbers (packet type 3).
    pub express: bool,
    /// The sender re-sends this path's lost datagrams ([`RESENDS_FLAG`]).
    pub resends: bool,
    /// Sent while lower numbers still waited at the sender ([`BEHIND_FLAG`]).
    pub behind: bool,
}

/// The 64-bit number nearest `expected` whose low 32 bits are `truncated`:
/// how a receiver recovers a sequence number or counter the wire carries
/// as 32 bits, as long as it lies within 2^31 of what it expects.
pub fn widen(truncated: u32, expected: u64) -> u64 {
    const WIN: u64 = 1 << 32;
    const HALF: u64 = WIN / 2;
    let candidate = (expected & !(WIN - 1)) | u64::from(truncated);
    if candidate.saturating_add(HALF) <= expected && candidate <= u64::MAX - WIN {
        candidate + WIN
    } else if candidate > expected.saturating_add(HALF) && candidate >= WIN {
        candidate - WIN
    } else {
        candidate
    }
}

/// A gap between two global numbers as the wire carries it: 0 for none,
/// saturated at [`GAP_SATURATED`].
pub fn saturating_gap(gseq: u64, previous: Option<u64>) -> u16 {
    previous
        .and_then(|p| gseq.checked_sub(p))
        .map_or(0, |d| u16::try_from(d).unwrap_or(GAP_SATURATED))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AckFrame {
    pub path: u8,
    pub largest_pseq: u32,
    /// Time the receiver held the ack after receiving `largest_pseq`.
    pub ack_delay_us: u32,
    /// Receiver clock when `largest_pseq` arrived.
    pub recv_ts_us: u32,
    /// Bit `i` set: `largest_pseq - 1 - i` was received.
    pub bitmap: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LossEntry {
    pub path: u8,
    pub received: u32,
    pub lost: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LossReport {
    pub report_seq: u32,
    pub entries: Vec<LossEntry>,
}

/// Global numbers `from .. from + count` were dropped by the sender unsent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SkipFrame {
    pub from: u64,
    pub count: u32,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame {
    Ack(AckFrame),
    LossReport(LossReport),
    Skip(SkipFrame),
}

/// A parsed packet; data payload borrows from the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Packet<'a> {
    Data {
        header: DataHeader,
        payload: &'a [u8],
    },
    Feedback {
        path: u8,
        frames: Frames<'a>,
    },
}

/// The frames of a feedback packet: checked whole by [`Packet::parse`]
/// (a packet with one bad frame is rejected before any is acted on), then
/// read again as they are iterated, so that the acknowledgement every
/// few packets brings costs no allocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Frames<'a> {
    bytes: &'a [u8],
}

impl<'a> Frames<'a> {
    fn check(bytes: &'a [u8]) -> Result<Frames<'a>, WireError> {
        let mut r = Reader { buf: bytes, pos: 0 };
        while !r.is_empty() {
            parse_frame(&mut r)?;
        }
        Ok(Frames { bytes })
    }
}

impl<'a> IntoIterator for Frames<'a> {
    type Item = Frame;
    type IntoIter = FrameIter<'a>;

    fn into_iter(self) -> FrameIter<'a> {
        FrameIter {
            r: Reader {
                buf: self.bytes,
                pos: 0,
            },
        }
    }
}

pub struct FrameIter<'a> {
    r: Reader<'a>,
}

impl Iterator for FrameIter<'_> {
    type Item = Frame;

    fn next(&mut self) -> Option<Frame> {
        if self.r.is_empty() {
            return None;
        }
        // Checked when parsed: an error here cannot happen, and ends the
        // frames if it did.
        parse_frame(&mut self.r).ok()
    }
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or(WireError::Truncated {
                needed: self.pos + n,
                have: self.buf.len(),
            })?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, WireError> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, WireError> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }
    fn u32(&mut self) -> Result<u32, WireError> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self) -> Result<u64, WireError> {
        let b = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_be_bytes(a))
    }
    fn rest(&mut self) -> &'a [u8] {
        let s = &self.buf[self.pos..];
        self.pos = self.buf.len();
        s
    }
    fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }
}

/// Appends big-endian fields to a caller-owned buffer.
struct Writer<'a> {
    buf: &'a mut [u8],
    pos: usize,
}

impl Writer<'_> {
    fn put(&mut self, bytes: &[u8]) {
        self.buf[self.pos..self.pos + bytes.len()].copy_from_slice(bytes);
        self.pos += bytes.len();
    }
}

impl Packet<'_> {
    pub fn parse(buf: &[u8]) -> Result<Packet<'_>, WireError> {
        let mut r = Reader { buf, pos: 0 };
        let first = r.u8()?;
        let version = first >> 4;
        if version != VERSION {
            return Err(WireError::Version(version));
        }
        let kind = first & 0x0f;
        let resends = kind & RESENDS_FLAG != 0;
        let behind = kind & BEHIND_FLAG != 0;
        match kind & !DATA_FLAGS {
            t if is_data_type(t) => {
                // Check the whole header up front so a truncation reports its full size.
                if buf.len() < DATA_HEADER_LEN {
                    return Err(WireError::Truncated {
                        needed: DATA_HEADER_LEN,
                        have: buf.len(),
                    });
                }
                let header = DataHeader {
                    path: r.u8()?,
                    pseq: r.u32()?,
                    gseq: r.u32()?,
                    send_ts_us: r.u32()?,
                    prev_gap: r.u16()?,
                    flow_gap: r.u16()?,
                    express: t == PacketType::DataExpress as u8,
                    resends,
                    behind,
                };
                Ok(Packet::Data {
                    header,
                    payload: r.rest(),
                })
            }
            t if t == PacketType::Feedback as u8 && kind & DATA_FLAGS == 0 => {
                let path = r.u8()?;
                let frames = Frames::check(r.rest())?;
                Ok(Packet::Feedback { path, frames })
            }
            _ => Err(WireError::PacketType(kind)),
        }
    }
}

fn parse_frame(r: &mut Reader<'_>) -> Result<Frame, WireError> {
    match r.u8()? {
        1 => Ok(Frame::Ack(AckFrame {
            path: r.u8()?,
            largest_pseq: r.u32()?,
            ack_delay_us: r.u32()?,
            recv_ts_us: r.u32()?,
            bitmap: r.u64()?,
        })),
        2 => {
            let report_seq = r.u32()?;
            let count = usize::from(r.u8()?);
            let mut entries = Vec::with_capacity(count);
            for _ in 0..count {
                entries.push(LossEntry {
                    path: r.u8()?,
                    received: r.u32()?,
                    lost: r.u32()?,
                });
            }
            Ok(Frame::LossReport(LossReport {
                report_seq,
                entries,
            }))
        }
        3 => Ok(Frame::Skip(SkipFrame {
            from: r.u64()?,
            count: r.u32()?,
        })),
        t => Err(WireError::FrameType(t)),
    }
}

impl DataHeader {
    /// Appends header and payload to `out`.
    pub fn append_to(&self, payload: &[u8], out: &mut Vec<u8>) {
        let kind = if self.express {
            PacketType::DataExpress
        } else {
            PacketType::Data
        };
        let flag =
            if self.resends { RESENDS_FLAG } else { 0 } | if self.behind { BEHIND_FLAG } else { 0 };
        out.extend_from_slice(&[(VERSION << 4) | kind as u8 | flag, self.path]);
        out.extend_from_slice(&self.pseq.to_be_bytes());
        out.extend_from_slice(&self.gseq.to_be_bytes());
        out.extend_from_slice(&self.send_ts_us.to_be_bytes());
        out.extend_from_slice(&self.prev_gap.to_be_bytes());
        out.extend_from_slice(&self.flow_gap.to_be_bytes());
        out.extend_from_slice(payload);
    }
}

impl Frame {
    pub fn encoded_len(&self) -> usize {
        match self {
            Frame::Ack(_) => 1 + ACK_FRAME_LEN,
            Frame::LossReport(r) => 1 + 5 + r.entries.len() * LOSS_ENTRY_LEN,
            Frame::Skip(_) => 1 + 12,
        }
    }

    fn emit(&self, w: &mut Writer<'_>) {
        match self {
            Frame::Ack(a) => {
                w.put(&[1, a.path]);
                w.put(&a.largest_pseq.to_be_bytes());
                w.put(&a.ack_delay_us.to_be_bytes());
                w.put(&a.recv_ts_us.to_be_bytes());
                w.put(&a.bitmap.to_be_bytes());
            }
            Frame::LossReport(r) => {
                w.put(&[2]);
                w.put(&r.report_seq.to_be_bytes());
                w.put(&[r.entries.len() as u8]);
                for e in &r.entries {
                    w.put(&[e.path]);
                    w.put(&e.received.to_be_bytes());
                    w.put(&e.lost.to_be_bytes());
                }
            }
            Frame::Skip(k) => {
                w.put(&[3]);
                w.put(&k.from.to_be_bytes());
                w.put(&k.count.to_be_bytes());
            }
        }
    }
}

/// Most entries a loss report may carry (the count is one byte).
pub const MAX_LOSS_ENTRIES: usize = u8::MAX as usize;

/// Bytes of a feedback packet carrying `frames`.
pub fn feedback_len(frames: &[Frame]) -> usize {
    2 + frames.iter().map(Frame::encoded_len).sum::<usize>()
}

/// A feedback packet sent on `path`, in a buffer of its own.
pub fn feedback_packet(path: u8, frames: &[Frame]) -> Result<Vec<u8>, WireError> {
    let mut data = Vec::new();
    write_feedback(path, frames, &mut data)?;
    Ok(data)
}

/// A feedback packet sent on `path`, in `out` (replacing what it held):
/// a reused buffer with room for it costs no allocation.
pub fn write_feedback(path: u8, frames: &[Frame], out: &mut Vec<u8>) -> Result<(), WireError> {
    out.clear();
    out.resize(feedback_len(frames), 0);
    emit_feedback(path, frames, out)?;
    Ok(())
}

/// Writes a feedback packet sent on `path` into `out`; returns its length.
pub fn emit_feedback(path: u8, frames: &[Frame], out: &mut [u8]) -> Result<usize, WireError> {
    let len = feedback_len(frames);
    if out.len() < len {
        return Err(WireError::BufferTooSmall(len));
    }
    if frames
        .iter()
        .any(|f| matches!(f, Frame::LossReport(r) if r.entries.len() > MAX_LOSS_ENTRIES))
    {
        return Err(WireError::BufferTooSmall(len));
    }
    let mut w = Writer { buf: out, pos: 0 };
    w.put(&[(VERSION << 4) | PacketType::Feedback as u8, path]);
    for f in frames {
        f.emit(&mut w);
    }
    Ok(len)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample_header() -> DataHeader {
        DataHeader {
            path: 3,
            gseq: 0x0506_0708,
            pseq: 77,
            send_ts_us: 123_456,
            prev_gap: 2,
            flow_gap: 0x0102,
            express: false,
            resends: false,
            behind: false,
        }
    }

    #[test]
    fn data_round_trip() {
        let mut buf = Vec::new();
        sample_header().append_to(b"hello", &mut buf);
        assert_eq!(buf.len(), DATA_HEADER_LEN + 5);
        match Packet::parse(&buf).unwrap() {
            Packet::Data { header, payload } => {
                assert_eq!(header, sample_header());
                assert_eq!(payload, b"hello");
            }
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn data_header_layout_is_fixed() {
        let mut buf = Vec::new();
        sample_header().append_to(b"", &mut buf);
        assert_eq!(
            buf,
            [0x31, 3, 0, 0, 0, 77, 5, 6, 7, 8, 0, 1, 0xe2, 0x40, 0, 2, 1, 2]
        );
        // An express datagram differs in its type only.
        let express = DataHeader {
            express: true,
            ..sample_header()
        };
        let mut express_buf = Vec::new();
        express.append_to(b"", &mut express_buf);
        assert_eq!(express_buf[0], 0x33);
        assert_eq!(express_buf[1..], buf[1..]);
        // So does one from a sender that re-sends its losses (bit 0x8),
        // and one sent behind lower numbers (bit 0x4), with the others.
        for (express, resends, behind, first) in [
            (false, true, false, 0x39),
            (true, true, false, 0x3b),
            (false, false, true, 0x35),
            (true, true, true, 0x3f),
        ] {
            let flagged = DataHeader {
                express,
                resends,
                behind,
                ..sample_header()
            };
            let mut flagged_buf = Vec::new();
            flagged.append_to(b"", &mut flagged_buf);
            assert_eq!(flagged_buf[0], first);
            assert_eq!(flagged_buf[1..], buf[1..]);
            assert!(is_data_first_byte(first));
            assert!(matches!(
                Packet::parse(&flagged_buf),
                Ok(Packet::Data { header, .. }) if header == flagged
            ));
        }
        // The flags mean nothing on feedback: rejected, as is an unused type.
        assert_eq!(Packet::parse(&[0x3a, 0]), Err(WireError::PacketType(0xa)));
        assert_eq!(Packet::parse(&[0x36, 0]), Err(WireError::PacketType(0x6)));
        assert_eq!(Packet::parse(&[0x3c, 0]), Err(WireError::PacketType(0xc)));
        assert_eq!(Packet::parse(&[0x34, 0]), Err(WireError::PacketType(0x4)));
        for first in [0x32, 0x36, 0x3a, 0x30, 0x34, 0x21, 0x41, 0x11] {
            assert!(!is_data_first_byte(first), "{first:#x}");
        }
    }

    #[test]
    fn widening_finds_the_nearest_value() {
        let w = 1u64 << 32;
        assert_eq!(widen(5, 0), 5);
        assert_eq!(widen(5, 10), 5);
        assert_eq!(widen(0x8000_0000, 0), 0x8000_0000);
        assert_eq!(widen(0x8000_0001, 0), 0x8000_0001);
        assert_eq!(widen(7, 0x2_0000_0007), 0x2_0000_0007);
        assert_eq!(widen(2, w + 1), w + 2);
        // The nearest value with the given low bits, above or below,
        // across an epoch boundary far from zero.
        assert_eq!(widen(5, w + w / 2 + 10), 2 * w + 5);
        assert_eq!(widen(u32::MAX - 1, 2 * w + 3), 2 * w - 2);
        assert_eq!(widen(u32::MAX, w + 3), u64::from(u32::MAX));
        assert_eq!(widen(0xffff_fff0, w + 5), 0xffff_fff0);
        assert_eq!(widen(3, 0xffff_fff0), w + 3);
        assert_eq!(widen(5, 0x5_ffff_fff0), 0x6_0000_0005);
        assert_eq!(widen(0xffff_fff0, 0x6_0000_0005), 0x5_ffff_fff0);
        // Equally far both ways: the larger one.
        assert_eq!(widen(5, w / 2 + 5), w + 5);
        assert_eq!(widen(1 << 31, w), w + w / 2);
        // At the ends of the range: never wraps.
        assert_eq!(widen(u32::MAX, u64::MAX), u64::MAX);
        assert_eq!(widen(0, u64::MAX), u64::MAX - u64::from(u32::MAX));
        assert_eq!(widen(u32::MAX, 0), u64::from(u32::MAX));
    }

    #[test]
    fn gaps_saturate_and_zero_means_none() {
        assert_eq!(saturating_gap(10, None), 0);
        assert_eq!(saturating_gap(10, Some(11)), 0);
        assert_eq!(saturating_gap(10, Some(7)), 3);
        assert_eq!(saturating_gap(70_000, Some(70_000 - 65_534)), 65_534);
        assert_eq!(saturating_gap(70_000, Some(70_000 - 65_535)), GAP_SATURATED);
        assert_eq!(saturating_gap(u64::MAX, Some(0)), GAP_SATURATED);
    }

    #[test]
    fn feedback_round_trip() {
        let frames = vec![
            Frame::Ack(AckFrame {
                path: 1,
                largest_pseq: 9,
                ack_delay_us: 1500,
                recv_ts_us: 42,
                bitmap: 0b1011,
            }),
            Frame::LossReport(LossReport {
                report_seq: 5,
                entries: vec![
                    LossEntry {
                        path: 0,
                        received: 100,
                        lost: 2,
                    },
                    LossEntry {
                        path: 1,
                        received: 50,
                        lost: 0,
                    },
                ],
            }),
            Frame::Skip(SkipFrame {
                from: 1 << 40,
                count: 3,
            }),
        ];
        let mut buf = [0u8; 128];
        let n = emit_feedback(1, &frames, &mut buf).unwrap();
        let Packet::Feedback { path, frames: got } = Packet::parse(&buf[..n]).unwrap() else {
            panic!("not feedback");
        };
        assert_eq!(path, 1);
        assert_eq!(got.into_iter().collect::<Vec<_>>(), frames);
    }

    #[test]
    fn malformed_inputs_are_errors() {
        assert!(matches!(
            Packet::parse(&[]),
            Err(WireError::Truncated { .. })
        ));
        // Version 1 carried a 32-bit prev_gap and no flow_gap.
        assert_eq!(Packet::parse(&[0x11]), Err(WireError::Version(1)));
        // Version 2 carried a 64-bit gseq.
        assert_eq!(Packet::parse(&[0x21]), Err(WireError::Version(2)));
        assert_eq!(Packet::parse(&[0x41]), Err(WireError::Version(4)));
        assert_eq!(Packet::parse(&[0x3e]), Err(WireError::PacketType(14)));
        let mut buf = Vec::new();
        sample_header().append_to(b"", &mut buf);
        for cut in 0..buf.len() {
            assert!(Packet::parse(&buf[..cut]).is_err(), "cut at {cut} parsed");
        }
        // A feedback packet with a truncated ack frame and one with an unknown frame.
        assert!(matches!(
            Packet::parse(&[0x32, 0, 1, 0, 0]),
            Err(WireError::Truncated { .. })
        ));
        assert_eq!(Packet::parse(&[0x32, 0, 9]), Err(WireError::FrameType(9)));
        // A good frame before a bad one does not make the packet good:
        // frames are read only from a packet checked whole.
        let skip = Frame::Skip(SkipFrame { from: 5, count: 1 });
        let mut bytes = feedback_packet(0, std::slice::from_ref(&skip)).unwrap();
        bytes.push(9);
        assert_eq!(Packet::parse(&bytes), Err(WireError::FrameType(9)));
        bytes.pop();
        bytes.extend_from_slice(&[1, 0, 0]);
        assert!(matches!(
            Packet::parse(&bytes),
            Err(WireError::Truncated { .. })
        ));
        bytes.truncate(bytes.len() - 3);
        let Ok(Packet::Feedback { frames, .. }) = Packet::parse(&bytes) else {
            panic!("{bytes:?}");
        };
        assert_eq!(frames.into_iter().collect::<Vec<_>>(), vec![skip]);
        // A loss report claiming more entries than it has.
        assert!(matches!(
            Packet::parse(&[0x32, 0, 2, 0, 0, 0, 1, 3, 0]),
            Err(WireError::Truncated { .. })
        ));
        assert!(matches!(
            emit_feedback(0, &[], &mut [0u8; 1]),
            Err(WireError::BufferTooSmall(2))
        ));
    }

    proptest! {
        // A fixed seed: the same cases every run (deterministic tests).
        #![proptest_config(ProptestConfig {
            rng_seed: proptest::test_runner::RngSeed::Fixed(1),
            ..ProptestConfig::default()
        })]

        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = Packet::parse(&bytes);
        }

        #[test]
        fn data_round_trips(path: u8, gseq: u32, pseq: u32, ts: u32, gap: u16, flow_gap: u16,
                            express: bool, resends: bool, behind: bool,
                            payload in proptest::collection::vec(any::<u8>(), 0..100)) {
            let h = DataHeader {
                path, gseq, pseq, send_ts_us: ts, prev_gap: gap, flow_gap, express, resends,
                behind,
            };
            let mut buf = Vec::new();
            h.append_to(&payload, &mut buf);
            let parsed = Packet::parse(&buf).unwrap();
            prop_assert_eq!(parsed, Packet::Data { header: h, payload: &payload });
        }
    }
}
