//! The reliable stream's wire format: a packet kind byte, then frames, each
//! with its own type byte. All integers are big-endian. Every length is
//! checked before it is read; a malformed packet is a [`FrameError`], never
//! a panic, and parsing one costs work in proportion to its length.
//!
//! ```text
//! Data packet:     0x01 path(1) pseq(4) frames...   (one per path sequence number,
//!                                                    counted by the path's congestion control)
//! Control packet:  0x02 frames...                   (acknowledgements; never acknowledged)
//!
//! Segment:   0x01|flags conn_seq(v) stream(v) offset(v) [len(v)] data
//! PathAck:   0x02 path(1) largest_pseq(4) ack_delay_us(4) recv_ts_us(4) bitmap(8)
//! DataAck:   0x03 cumulative(8) max_data(8) count(1) { start(8) end(8) } * count
//! Abort:     0x04 code(4)
//! ```
//!
//! `(v)` is a QUIC variable-length integer (RFC 9000, section 16: 1, 2, 4
//! or 8 bytes for values below 2^6, 2^14, 2^30, 2^62). A segment's type byte
//! carries two flags: [`SEGMENT_FIN`] and [`SEGMENT_LEN`]. Without
//! `SEGMENT_LEN` the segment's data runs to the end of the packet (the
//! last frame; the stream sends one segment per data packet, so it never
//! spends bytes on a length). In the first GiB of a connection a segment's
//! header is 10 bytes instead of a fixed 24: a 1500-byte packet carries
//! 1,456 bytes of data (bare) or 1,429 (in the tunnel session), against
//! TCP's 1,448 with timestamps.
//!
//! `conn_seq` numbers the connection's bytes across all streams (pTCP's
//! connection-level sequence space): acknowledgements and flow control count
//! in it, and a segment keeps its `conn_seq` on every retransmission and on
//! every path. A zero-length segment must carry `fin` and occupies one
//! number, like TCP's FIN. `DataAck` ranges are selective acknowledgements
//! above `cumulative`, each `start < end`, in increasing order.

use crate::wire::AckFrame;

/// IP packet size a data packet fills.
pub const PATH_MTU: usize = 1500;
/// Largest segment payload: a segment with the smallest header (every
/// number below 64, no length) filling a [`PATH_MTU`] IP packet.
pub const MAX_SEGMENT_DATA: usize =
    PATH_MTU - crate::wire::IP_UDP_OVERHEAD - DATA_PREFIX_LEN - MIN_SEGMENT_HEADER_LEN;
/// Most selective-acknowledgement ranges one `DataAck` carries.
pub const MAX_SACK_RANGES: usize = 16;
/// Largest connection sequence number or stream offset a segment can carry
/// (a QUIC variable-length integer's range).
pub const MAX_SEQUENCE: u64 = octets::MAX_VAR_INT;
/// Set in a segment's type byte: the stream ends with this segment.
pub const SEGMENT_FIN: u8 = 0x10;
/// Set in a segment's type byte: a length precedes the data (otherwise the
/// data runs to the end of the packet).
pub const SEGMENT_LEN: u8 = 0x20;

const DATA_PREFIX_LEN: usize = 6;
const MIN_SEGMENT_HEADER_LEN: usize = 4;
const PATH_ACK_LEN: usize = 22;

/// Bytes of a data packet around a last (unlengthed) segment with these
/// numbers. Every number must be at most [`MAX_SEQUENCE`].
pub const fn data_packet_overhead(conn_seq: u64, stream: u32, offset: u64) -> usize {
    DATA_PREFIX_LEN
        + 1
        + octets::varint_len(conn_seq)
        + octets::varint_len(stream as u64)
        + octets::varint_len(offset)
}

/// Payload of a full segment of the first stream within a connection's
/// first GiB (4-byte numbers), bare: the size the simulator counts
/// reliable goodput against.
pub const FIRST_GIB_SEGMENT_DATA: usize =
    PATH_MTU - crate::wire::IP_UDP_OVERHEAD - data_packet_overhead((1 << 30) - 1, 0, (1 << 30) - 1);
const _: () = assert!(FIRST_GIB_SEGMENT_DATA == 1456);

const KIND_DATA: u8 = 0x01;
const KIND_CONTROL: u8 = 0x02;

const FRAME_SEGMENT: u8 = 0x01;
const FRAME_PATH_ACK: u8 = 0x02;
const FRAME_DATA_ACK: u8 = 0x03;
const FRAME_ABORT: u8 = 0x04;

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum FrameError {
    #[error("stream packet truncated: needed {needed} bytes, have {have}")]
    Truncated { needed: usize, have: usize },
    #[error("unknown stream packet kind {0}")]
    PacketKind(u8),
    #[error("unknown stream frame type {0}")]
    FrameType(u8),
    #[error("segment of {0} bytes is longer than the largest segment")]
    SegmentTooLong(usize),
    #[error("empty segment without fin")]
    EmptySegment,
    #[error("sequence range overflows 64 bits")]
    Overflow,
    #[error("acknowledgement carries {0} ranges, more than {MAX_SACK_RANGES}")]
    TooManyRanges(usize),
    #[error("acknowledgement ranges out of order or empty")]
    BadRange,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment<'a> {
    pub conn_seq: u64,
    pub stream: u32,
    pub offset: u64,
    pub fin: bool,
    pub data: &'a [u8],
}

impl Segment<'_> {
    /// Connection sequence numbers the segment occupies (a bare fin takes one).
    pub fn conn_len(&self) -> u64 {
        (self.data.len() as u64).max(1)
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataAck {
    /// Every connection byte below this arrived.
    pub cumulative: u64,
    /// The receiver accepts connection bytes below this.
    pub max_data: u64,
    pub ranges: Vec<(u64, u64)>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Frame<'a> {
    Segment(Segment<'a>),
    PathAck(AckFrame),
    DataAck(DataAck),
    Abort(u32),
}

/// A parsed stream packet; segment data borrows from the input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamPacket<'a> {
    /// `(path, pseq)` of a data packet; `None` for a control packet.
    pub numbered: Option<(u8, u32)>,
    pub frames: Vec<Frame<'a>>,
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], FrameError> {
        let end = self
            .pos
            .checked_add(n)
            .filter(|&e| e <= self.buf.len())
            .ok_or(FrameError::Truncated {
                needed: self.pos.saturating_add(n),
                have: self.buf.len(),
            })?;
        let s = &self.buf[self.pos..end];
        self.pos = end;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, FrameError> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32, FrameError> {
        let b = self.take(4)?;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }
    fn u64(&mut self) -> Result<u64, FrameError> {
        let mut a = [0u8; 8];
        a.copy_from_slice(self.take(8)?);
        Ok(u64::from_be_bytes(a))
    }
    /// A QUIC variable-length integer.
    fn varint(&mut self) -> Result<u64, FrameError> {
        let rest = &self.buf[self.pos.min(self.buf.len())..];
        let mut o = octets::Octets::with_slice(rest);
        let v = o.get_varint().map_err(|_| FrameError::Truncated {
            needed: self
                .pos
                .saturating_add(octets::varint_parse_len(rest.first().copied().unwrap_or(0))),
            have: self.buf.len(),
        })?;
        self.pos += o.off();
        Ok(v)
    }
    fn remaining(&self) -> usize {
        self.buf.len().saturating_sub(self.pos)
    }
    fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }
}

impl<'a> StreamPacket<'a> {
    pub fn parse(buf: &'a [u8]) -> Result<StreamPacket<'a>, FrameError> {
        let mut r = Reader { buf, pos: 0 };
        let numbered = match r.u8()? {
            KIND_DATA => Some((r.u8()?, r.u32()?)),
            KIND_CONTROL => None,
            k => return Err(FrameError::PacketKind(k)),
        };
        let mut frames = Vec::new();
        // Each frame consumes at least one byte: the loop is bounded by the length.
        while !r.is_empty() {
            frames.push(parse_frame(&mut r)?);
        }
        Ok(StreamPacket { numbered, frames })
    }
}

fn parse_frame<'a>(r: &mut Reader<'a>) -> Result<Frame<'a>, FrameError> {
    match r.u8()? {
        t if t & !(SEGMENT_FIN | SEGMENT_LEN) == FRAME_SEGMENT => {
            let fin = t & SEGMENT_FIN != 0;
            let conn_seq = r.varint()?;
            let stream = u32::try_from(r.varint()?).map_err(|_| FrameError::Overflow)?;
            let offset = r.varint()?;
            let len = if t & SEGMENT_LEN != 0 {
                usize::try_from(r.varint()?).unwrap_or(usize::MAX)
            } else {
                r.remaining()
            };
            if len > MAX_SEGMENT_DATA {
                return Err(FrameError::SegmentTooLong(len));
            }
            if len == 0 && !fin {
                return Err(FrameError::EmptySegment);
            }
            let data = r.take(len)?;
            let seg = Segment {
                conn_seq,
                stream,
                offset,
                fin,
                data,
            };
            conn_seq
                .checked_add(seg.conn_len())
                .and(offset.checked_add(len as u64))
                .ok_or(FrameError::Overflow)?;
            Ok(Frame::Segment(seg))
        }
        FRAME_PATH_ACK => Ok(Frame::PathAck(AckFrame {
            path: r.u8()?,
            largest_pseq: r.u32()?,
            ack_delay_us: r.u32()?,
            recv_ts_us: r.u32()?,
            bitmap: r.u64()?,
        })),
        FRAME_DATA_ACK => {
            let cumulative = r.u64()?;
            let max_data = r.u64()?;
            let count = usize::from(r.u8()?);
            if count > MAX_SACK_RANGES {
                return Err(FrameError::TooManyRanges(count));
            }
            let mut ranges = Vec::with_capacity(count);
            let mut floor = cumulative;
            for _ in 0..count {
                let (start, end) = (r.u64()?, r.u64()?);
                if start <= floor || end <= start {
                    return Err(FrameError::BadRange);
                }
                floor = end;
                ranges.push((start, end));
            }
            Ok(Frame::DataAck(DataAck {
                cumulative,
                max_data,
                ranges,
            }))
        }
        FRAME_ABORT => Ok(Frame::Abort(r.u32()?)),
        t => Err(FrameError::FrameType(t)),
    }
}

/// Builds packets by appending frames to a growing buffer.
#[derive(Debug)]
pub struct PacketWriter {
    buf: Vec<u8>,
}

impl PacketWriter {
    pub fn data(path: u8, pseq: u32) -> PacketWriter {
        let mut buf = Vec::with_capacity(1500);
        buf.push(KIND_DATA);
        buf.push(path);
        buf.extend_from_slice(&pseq.to_be_bytes());
        PacketWriter { buf }
    }

    pub fn control() -> PacketWriter {
        PacketWriter {
            buf: vec![KIND_CONTROL],
        }
    }

    /// Appends a segment with its length, so that frames may follow.
    /// Panics if `data` exceeds [`MAX_SEGMENT_DATA`] or a number exceeds
    /// [`MAX_SEQUENCE`]: the stream never builds one (its segmenter caps
    /// them).
    pub fn segment(&mut self, seg: &Segment<'_>) {
        self.segment_header(seg, SEGMENT_LEN);
        self.put_varint(seg.data.len() as u64);
        self.buf.extend_from_slice(seg.data);
    }

    /// Appends a segment as the packet's last frame, without a length, and
    /// returns the packet. Panics as [`PacketWriter::segment`] does.
    pub fn finish_with_segment(mut self, seg: &Segment<'_>) -> Vec<u8> {
        self.segment_header(seg, 0);
        self.buf.extend_from_slice(seg.data);
        self.buf
    }

    fn segment_header(&mut self, seg: &Segment<'_>, flags: u8) {
        assert!(seg.data.len() <= MAX_SEGMENT_DATA, "segment too long");
        let fin = if seg.fin { SEGMENT_FIN } else { 0 };
        self.buf.push(FRAME_SEGMENT | fin | flags);
        self.put_varint(seg.conn_seq);
        self.put_varint(u64::from(seg.stream));
        self.put_varint(seg.offset);
    }

    fn put_varint(&mut self, v: u64) {
        assert!(v <= MAX_SEQUENCE, "number too large for a varint");
        let mut bytes = [0u8; 8];
        let mut o = octets::OctetsMut::with_slice(&mut bytes);
        let len = o.put_varint(v).expect("8 bytes hold any varint").len();
        self.buf.extend_from_slice(&bytes[..len]);
    }

    pub fn path_ack(&mut self, ack: &AckFrame) {
        self.buf.push(FRAME_PATH_ACK);
        self.buf.push(ack.path);
        self.buf.extend_from_slice(&ack.largest_pseq.to_be_bytes());
        self.buf.extend_from_slice(&ack.ack_delay_us.to_be_bytes());
        self.buf.extend_from_slice(&ack.recv_ts_us.to_be_bytes());
        self.buf.extend_from_slice(&ack.bitmap.to_be_bytes());
    }

    /// Appends a data acknowledgement; ranges past [`MAX_SACK_RANGES`] are left out.
    pub fn data_ack(&mut self, ack: &DataAck) {
        let ranges = &ack.ranges[..ack.ranges.len().min(MAX_SACK_RANGES)];
        self.buf.push(FRAME_DATA_ACK);
        self.buf.extend_from_slice(&ack.cumulative.to_be_bytes());
        self.buf.extend_from_slice(&ack.max_data.to_be_bytes());
        self.buf.push(ranges.len() as u8);
        for (start, end) in ranges {
            self.buf.extend_from_slice(&start.to_be_bytes());
            self.buf.extend_from_slice(&end.to_be_bytes());
        }
    }

    pub fn abort(&mut self, code: u32) {
        self.buf.push(FRAME_ABORT);
        self.buf.extend_from_slice(&code.to_be_bytes());
    }

    pub fn finish(self) -> Vec<u8> {
        self.buf
    }
}

const _: () = assert!(PATH_ACK_LEN == 1 + 1 + 4 + 4 + 4 + 8);
const _: () = assert!(MIN_SEGMENT_HEADER_LEN == 1 + 1 + 1 + 1);

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn sample_ack() -> AckFrame {
        AckFrame {
            path: 3,
            largest_pseq: 77,
            ack_delay_us: 1000,
            recv_ts_us: 5,
            bitmap: 0b1011,
        }
    }

    #[test]
    fn packets_round_trip() {
        let seg = Segment {
            conn_seq: 1 << 40,
            stream: 7,
            offset: 99,
            fin: true,
            data: b"hello",
        };
        // As the last frame: no length, the data runs to the end.
        let bytes = PacketWriter::data(2, 41).finish_with_segment(&seg);
        assert_eq!(bytes.len(), data_packet_overhead(1 << 40, 7, 99) + 5);
        // 8-byte conn_seq, 1-byte stream, 2-byte offset.
        assert_eq!(bytes.len(), 6 + 1 + 8 + 1 + 2 + 5);
        assert_eq!(bytes[6], FRAME_SEGMENT | SEGMENT_FIN);
        let p = StreamPacket::parse(&bytes).unwrap();
        assert_eq!(p.numbered, Some((2, 41)));
        assert_eq!(p.frames, vec![Frame::Segment(seg.clone())]);
        // With a length, frames may follow.
        let mut w = PacketWriter::data(2, 41);
        w.segment(&seg);
        w.abort(3);
        let bytes = w.finish();
        assert_eq!(bytes.len(), 6 + 1 + 8 + 1 + 2 + 1 + 5 + 5);
        assert_eq!(bytes[6], FRAME_SEGMENT | SEGMENT_FIN | SEGMENT_LEN);
        let p = StreamPacket::parse(&bytes).unwrap();
        assert_eq!(p.frames, vec![Frame::Segment(seg), Frame::Abort(3)]);

        let ack = DataAck {
            cumulative: 10,
            max_data: 1000,
            ranges: vec![(20, 30), (40, 41)],
        };
        let mut w = PacketWriter::control();
        w.path_ack(&sample_ack());
        w.data_ack(&ack);
        w.abort(9);
        let bytes = w.finish();
        assert_eq!(bytes.len(), 1 + PATH_ACK_LEN + 18 + 32 + 5);
        let p = StreamPacket::parse(&bytes).unwrap();
        assert_eq!(p.numbered, None);
        assert_eq!(
            p.frames,
            vec![
                Frame::PathAck(sample_ack()),
                Frame::DataAck(ack),
                Frame::Abort(9)
            ]
        );
    }

    /// A segment's header is as long as its numbers need, at each of the
    /// variable-length integer's boundaries; a full packet's segment in a
    /// connection's first GiB has 10 bytes of header where it had 24.
    #[test]
    fn segment_headers_grow_with_their_numbers() {
        let cases = [
            (0, 0, 0, 6 + 4),
            (63, 63, 63, 6 + 4),
            (64, 0, 16_383, 6 + 1 + 2 + 1 + 2),
            (16_384, 64, 1_073_741_823, 6 + 1 + 4 + 2 + 4),
            ((1 << 30) - 1, 0, (1 << 30) - 1, 6 + 10),
            (1 << 30, u32::MAX, MAX_SEQUENCE, 6 + 1 + 8 + 8 + 8),
        ];
        for (conn_seq, stream, offset, overhead) in cases {
            assert_eq!(data_packet_overhead(conn_seq, stream, offset), overhead);
            let seg = Segment {
                conn_seq,
                stream,
                offset,
                fin: false,
                data: b"x",
            };
            let bytes = PacketWriter::data(0, 0).finish_with_segment(&seg);
            assert_eq!(bytes.len(), overhead + 1);
            let p = StreamPacket::parse(&bytes).unwrap();
            assert_eq!(p.frames, vec![Frame::Segment(seg)]);
        }
        assert_eq!(FIRST_GIB_SEGMENT_DATA, 1500 - 28 - 16);
        assert_eq!(MAX_SEGMENT_DATA, 1500 - 28 - 10);
    }

    #[test]
    fn a_segment_of_the_largest_size_parses_and_one_byte_more_does_not() {
        let data = vec![7u8; MAX_SEGMENT_DATA + 1];
        let seg = |n: usize| Segment {
            conn_seq: 0,
            stream: 0,
            offset: 0,
            fin: false,
            data: &data[..n],
        };
        let bytes = PacketWriter::data(0, 0).finish_with_segment(&seg(MAX_SEGMENT_DATA));
        assert_eq!(bytes.len() + 28, 1500);
        assert!(StreamPacket::parse(&bytes).is_ok());
        let mut longer = bytes.clone();
        longer.push(7);
        assert_eq!(
            StreamPacket::parse(&longer),
            Err(FrameError::SegmentTooLong(MAX_SEGMENT_DATA + 1))
        );
    }

    #[test]
    fn malformed_packets_are_errors() {
        assert_eq!(
            StreamPacket::parse(&[]),
            Err(FrameError::Truncated { needed: 1, have: 0 })
        );
        assert_eq!(StreamPacket::parse(&[9]), Err(FrameError::PacketKind(9)));
        assert_eq!(
            StreamPacket::parse(&[2, 0x7f]),
            Err(FrameError::FrameType(0x7f))
        );
        // A segment claiming more data than the packet holds.
        let mut w = PacketWriter::control();
        w.segment(&Segment {
            conn_seq: 0,
            stream: 0,
            offset: 0,
            fin: false,
            data: b"abcd",
        });
        let mut bytes = w.finish();
        bytes.truncate(bytes.len() - 1);
        assert!(matches!(
            StreamPacket::parse(&bytes),
            Err(FrameError::Truncated { .. })
        ));
        // Length field past the largest segment (a 2-byte varint of 16,383
        // in place of the 1-byte 4).
        let mut bytes = vec![
            KIND_CONTROL,
            FRAME_SEGMENT | SEGMENT_LEN,
            0,
            0,
            0,
            0x7f,
            0xff,
        ];
        bytes.extend_from_slice(&[0; 16_383]);
        assert_eq!(
            StreamPacket::parse(&bytes),
            Err(FrameError::SegmentTooLong(16_383))
        );
        // A number cut short: an 8-byte varint with 3 bytes left.
        assert_eq!(
            StreamPacket::parse(&[KIND_CONTROL, FRAME_SEGMENT, 0xc0, 0, 0]),
            Err(FrameError::Truncated {
                needed: 10,
                have: 5
            })
        );
        // A stream id past 32 bits.
        let mut bytes = vec![
            KIND_CONTROL,
            FRAME_SEGMENT,
            0,
            0xc0,
            0,
            0,
            1,
            0,
            0,
            0,
            0,
            0,
            1,
        ];
        assert_eq!(StreamPacket::parse(&bytes), Err(FrameError::Overflow));
        bytes[6] = 0;
        assert!(
            StreamPacket::parse(&bytes).is_ok(),
            "u32::MAX + 1 is 0x1_0000_0000"
        );
        // Type bits other than the two flags make no segment.
        assert_eq!(
            StreamPacket::parse(&[KIND_CONTROL, FRAME_SEGMENT | 0x40, 0, 0, 0, 1]),
            Err(FrameError::FrameType(FRAME_SEGMENT | 0x40))
        );
        // Empty segment without fin.
        let mut w = PacketWriter::control();
        w.segment(&Segment {
            conn_seq: 0,
            stream: 0,
            offset: 0,
            fin: false,
            data: b"",
        });
        assert_eq!(
            StreamPacket::parse(&w.finish()),
            Err(FrameError::EmptySegment)
        );
        // The largest numbers a varint holds, with data: no overflow of
        // 64 bits, so they parse (the sender never reaches them).
        let mut w = PacketWriter::control();
        w.segment(&Segment {
            conn_seq: MAX_SEQUENCE,
            stream: 0,
            offset: MAX_SEQUENCE,
            fin: false,
            data: b"ab",
        });
        assert!(StreamPacket::parse(&w.finish()).is_ok());
        // Ranges not above the cumulative point, or empty.
        for ranges in [vec![(5, 8)], vec![(20, 20)], vec![(20, 30), (25, 40)]] {
            let mut w = PacketWriter::control();
            w.data_ack(&DataAck {
                cumulative: 10,
                max_data: 0,
                ranges,
            });
            assert_eq!(StreamPacket::parse(&w.finish()), Err(FrameError::BadRange));
        }
        // A count past the limit.
        let mut bytes = vec![KIND_CONTROL, FRAME_DATA_ACK];
        bytes.extend_from_slice(&[0; 16]);
        bytes.push(MAX_SACK_RANGES as u8 + 1);
        assert_eq!(
            StreamPacket::parse(&bytes),
            Err(FrameError::TooManyRanges(MAX_SACK_RANGES + 1))
        );
    }

    #[test]
    fn writer_caps_sack_ranges() {
        let ranges: Vec<(u64, u64)> = (1..40).map(|i| (i * 10, i * 10 + 5)).collect();
        let mut w = PacketWriter::control();
        w.data_ack(&DataAck {
            cumulative: 0,
            max_data: 1,
            ranges: ranges.clone(),
        });
        let bytes = w.finish();
        let p = StreamPacket::parse(&bytes).unwrap();
        let Frame::DataAck(a) = &p.frames[0] else {
            panic!("not a data ack")
        };
        assert_eq!(a.ranges, ranges[..MAX_SACK_RANGES]);
    }

    proptest! {
        // A fixed seed: the same cases every run (deterministic tests).
        #![proptest_config(ProptestConfig {
            rng_seed: proptest::test_runner::RngSeed::Fixed(1),
            ..ProptestConfig::default()
        })]

        #[test]
        fn parse_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = StreamPacket::parse(&bytes);
        }
    }
}
