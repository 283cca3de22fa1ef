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
//! Segment:   0x01 conn_seq(8) stream(4) offset(8) fin(1) len(2) data(len)
//! PathAck:   0x02 path(1) largest_pseq(4) ack_delay_us(4) recv_ts_us(4) bitmap(8)
//! DataAck:   0x03 cumulative(8) max_data(8) count(1) { start(8) end(8) } * count
//! Abort:     0x04 code(4)
//! ```
//!
//! `conn_seq` numbers the connection's bytes across all streams (pTCP's
//! connection-level sequence space): acknowledgements and flow control count
//! in it, and a segment keeps its `conn_seq` on every retransmission and on
//! every path. A zero-length segment must carry `fin` and occupies one
//! number, like TCP's FIN. `DataAck` ranges are selective acknowledgements
//! above `cumulative`, each `start < end`, in increasing order.

use crate::wire::AckFrame;

/// Largest segment payload: a segment's packet fills a 1500-byte IP packet.
pub const MAX_SEGMENT_DATA: usize = 1500 - crate::wire::IP_UDP_OVERHEAD - DATA_PACKET_OVERHEAD;
/// Bytes of a data packet around one segment's payload.
pub const DATA_PACKET_OVERHEAD: usize = DATA_PREFIX_LEN + SEGMENT_HEADER_LEN;
/// Most selective-acknowledgement ranges one `DataAck` carries.
pub const MAX_SACK_RANGES: usize = 16;

const DATA_PREFIX_LEN: usize = 6;
const SEGMENT_HEADER_LEN: usize = 24;
const PATH_ACK_LEN: usize = 22;

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
    fn u16(&mut self) -> Result<u16, FrameError> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
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
        FRAME_SEGMENT => {
            let conn_seq = r.u64()?;
            let stream = r.u32()?;
            let offset = r.u64()?;
            let fin = r.u8()? != 0;
            let len = usize::from(r.u16()?);
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

    /// Appends a segment. Panics if `data` exceeds [`MAX_SEGMENT_DATA`]:
    /// the stream never builds one (its segmenter caps them).
    pub fn segment(&mut self, seg: &Segment<'_>) {
        assert!(seg.data.len() <= MAX_SEGMENT_DATA, "segment too long");
        self.buf.push(FRAME_SEGMENT);
        self.buf.extend_from_slice(&seg.conn_seq.to_be_bytes());
        self.buf.extend_from_slice(&seg.stream.to_be_bytes());
        self.buf.extend_from_slice(&seg.offset.to_be_bytes());
        self.buf.push(u8::from(seg.fin));
        self.buf
            .extend_from_slice(&(seg.data.len() as u16).to_be_bytes());
        self.buf.extend_from_slice(seg.data);
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
const _: () = assert!(SEGMENT_HEADER_LEN == 1 + 8 + 4 + 8 + 1 + 2);

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
        let mut w = PacketWriter::data(2, 41);
        w.segment(&seg);
        let bytes = w.finish();
        assert_eq!(bytes.len(), DATA_PACKET_OVERHEAD + 5);
        let p = StreamPacket::parse(&bytes).unwrap();
        assert_eq!(p.numbered, Some((2, 41)));
        assert_eq!(p.frames, vec![Frame::Segment(seg)]);

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
        // Length field past the largest segment.
        let n = bytes.len();
        bytes[n - 5..n - 3].copy_from_slice(&u16::MAX.to_be_bytes());
        assert_eq!(
            StreamPacket::parse(&bytes),
            Err(FrameError::SegmentTooLong(usize::from(u16::MAX)))
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
        // Sequence range wrapping past 2^64.
        let mut w = PacketWriter::control();
        w.segment(&Segment {
            conn_seq: u64::MAX,
            stream: 0,
            offset: 0,
            fin: false,
            data: b"ab",
        });
        assert_eq!(StreamPacket::parse(&w.finish()), Err(FrameError::Overflow));
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
