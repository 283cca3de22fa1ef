//! The plaintext inside a transport message. Its first byte says what it
//! is, its second byte names the path it was sent on (so the receiver can
//! tell the path of a datagram from its authenticated content):
//!
//! ```text
//! bonding data     0x11 path ...     (crate::wire data packet, to the Receiver)
//! bonding feedback 0x12 path ...     (crate::wire feedback packet: skip frames
//!                                     to the Receiver, acks and loss reports
//!                                     to the Sender)
//! probe            0xC1 path seq(4)  (client asks: is this path alive?)
//! probe ack        0xC2 path seq(4)  (server answers on the same path)
//! bundle           0xC3 path len(2) first(len) rest
//!                                    (feedback riding with data: two of the
//!                                     above, not bundles, on the same path)
//! stream           0xC4 path packet  (a reliable-stream packet,
//!                                     crate::stream::frame, for the session's
//!                                     stream connection)
//! train            0xC5 path id(1) index(1) count(1) padding...
//!                                    (one of `count` packets sent back to
//!                                     back to measure a path's rate)
//! train report     0xC6 path id(1) received(1) bytes(4) span_us(4)
//!                                    (the train's packets after the first
//!                                     that arrived, their bytes, and the
//!                                     time from the first arrival to the last)
//! ```

pub(crate) const PROBE: u8 = 0xC1;
pub(crate) const PROBE_ACK: u8 = 0xC2;
pub(crate) const BUNDLE: u8 = 0xC3;
pub(crate) const STREAM: u8 = 0xC4;
pub(crate) const TRAIN: u8 = 0xC5;
pub(crate) const TRAIN_REPORT: u8 = 0xC6;
/// Bytes of a train packet before its padding.
pub(crate) const TRAIN_HEADER_LEN: usize = 5;
pub(crate) const TRAIN_REPORT_LEN: usize = 12;
/// Bytes before a stream packet: the kind and path bytes.
pub(crate) const STREAM_HEADER_LEN: usize = 2;
pub(crate) const PROBE_LEN: usize = 6;
pub(crate) const BUNDLE_HEADER_LEN: usize = 4;
const WIRE_FEEDBACK: u8 = (crate::wire::VERSION << 4) | 2;

/// One plaintext message, borrowed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Inner<'a> {
    /// A bonding data packet, for the Receiver.
    Data(&'a [u8]),
    /// Skip notices from the peer's Sender, for our Receiver.
    Skips(&'a [u8]),
    /// Acks and loss reports from the peer's Receiver, for our Sender.
    Feedback(&'a [u8]),
    Probe(u32),
    ProbeAck(u32),
    /// A reliable-stream packet, for the session's stream connection.
    Stream(&'a [u8]),
    Train(TrainPacket),
    TrainReport(TrainReport),
}

/// One packet of a rate-measuring train (`session::train`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TrainPacket {
    pub id: u8,
    pub index: u8,
    pub count: u8,
}

/// What the receiver of a train saw of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TrainReport {
    pub id: u8,
    /// Packets that arrived after the first one that did.
    pub received: u8,
    /// Their bytes, as the transport carried them (UDP payload).
    pub bytes: u32,
    /// Microseconds from the first arrival to the last.
    pub span_us: u32,
}

/// A malformed plaintext (the peer authenticated it, so this is a bug or
/// a version mismatch, still never a panic).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Malformed;

/// Path byte and messages of a plaintext (one, or two for a bundle).
pub(crate) fn parse(plain: &[u8]) -> Result<(u8, Inner<'_>, Option<Inner<'_>>), Malformed> {
    let (&kind, rest) = plain.split_first().ok_or(Malformed)?;
    let &path = rest.first().ok_or(Malformed)?;
    if kind != BUNDLE {
        return Ok((path, single(plain)?, None));
    }
    if plain.len() < BUNDLE_HEADER_LEN {
        return Err(Malformed);
    }
    let len = usize::from(u16::from_be_bytes([plain[2], plain[3]]));
    let body = &plain[BUNDLE_HEADER_LEN..];
    if len > body.len() {
        return Err(Malformed);
    }
    let (first, second) = body.split_at(len);
    for part in [first, second] {
        if part.first() == Some(&BUNDLE) || part.get(1) != Some(&path) {
            return Err(Malformed);
        }
    }
    Ok((path, single(first)?, Some(single(second)?)))
}

fn single(msg: &[u8]) -> Result<Inner<'_>, Malformed> {
    match msg.first() {
        Some(&first) if crate::wire::is_data_first_byte(first) => Ok(Inner::Data(msg)),
        Some(&WIRE_FEEDBACK) => match msg.get(2) {
            Some(3) => Ok(Inner::Skips(msg)),
            _ => Ok(Inner::Feedback(msg)),
        },
        Some(&STREAM) if msg.len() > STREAM_HEADER_LEN => {
            Ok(Inner::Stream(&msg[STREAM_HEADER_LEN..]))
        }
        Some(&TRAIN) if msg.len() >= TRAIN_HEADER_LEN => Ok(Inner::Train(TrainPacket {
            id: msg[2],
            index: msg[3],
            count: msg[4],
        })),
        Some(&TRAIN_REPORT) if msg.len() == TRAIN_REPORT_LEN => {
            Ok(Inner::TrainReport(TrainReport {
                id: msg[2],
                received: msg[3],
                bytes: u32::from_be_bytes([msg[4], msg[5], msg[6], msg[7]]),
                span_us: u32::from_be_bytes([msg[8], msg[9], msg[10], msg[11]]),
            }))
        }
        Some(&PROBE) | Some(&PROBE_ACK) if msg.len() == PROBE_LEN => {
            let seq = u32::from_be_bytes([msg[2], msg[3], msg[4], msg[5]]);
            Ok(if msg[0] == PROBE {
                Inner::Probe(seq)
            } else {
                Inner::ProbeAck(seq)
            })
        }
        _ => Err(Malformed),
    }
}

/// Writes a probe or probe ack; returns its length.
pub(crate) fn emit_probe(kind: u8, path: u8, seq: u32, out: &mut [u8]) -> usize {
    out[0] = kind;
    out[1] = path;
    out[2..6].copy_from_slice(&seq.to_be_bytes());
    PROBE_LEN
}

/// Writes train packet `t` for `path`, padded to `len` bytes (at least
/// [`TRAIN_HEADER_LEN`]); returns `len`.
pub(crate) fn emit_train(path: u8, t: TrainPacket, len: usize, out: &mut [u8]) -> usize {
    out[..TRAIN_HEADER_LEN].copy_from_slice(&[TRAIN, path, t.id, t.index, t.count]);
    out[TRAIN_HEADER_LEN..len].fill(0);
    len
}

/// Writes a train report for `path`; returns its length.
pub(crate) fn emit_train_report(path: u8, r: TrainReport, out: &mut [u8]) -> usize {
    out[..4].copy_from_slice(&[TRAIN_REPORT, path, r.id, r.received]);
    out[4..8].copy_from_slice(&r.bytes.to_be_bytes());
    out[8..12].copy_from_slice(&r.span_us.to_be_bytes());
    TRAIN_REPORT_LEN
}

/// Writes the header of a stream packet for `path`; the packet follows
/// at `out[STREAM_HEADER_LEN..]`.
pub(crate) fn emit_stream_header(path: u8, out: &mut [u8]) {
    out[0] = STREAM;
    out[1] = path;
}

/// Writes a bundle of `first` then `rest`; returns its length. Both must
/// be messages for `path`, and `first` shorter than 64 KiB.
pub(crate) fn emit_bundle(path: u8, first: &[u8], rest: &[u8], out: &mut [u8]) -> usize {
    let len = BUNDLE_HEADER_LEN + first.len() + rest.len();
    out[0] = BUNDLE;
    out[1] = path;
    out[2..4].copy_from_slice(&(first.len() as u16).to_be_bytes());
    out[BUNDLE_HEADER_LEN..][..first.len()].copy_from_slice(first);
    out[BUNDLE_HEADER_LEN + first.len()..len].copy_from_slice(rest);
    len
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(kind: u8, path: u8, seq: u32) -> Vec<u8> {
        let mut b = vec![0u8; PROBE_LEN];
        emit_probe(kind, path, seq, &mut b);
        b
    }

    const WIRE_DATA_TEST: u8 = (crate::wire::VERSION << 4) | 1;

    #[test]
    fn probes_and_bundles_round_trip() {
        assert_eq!(parse(&probe(PROBE, 2, 9)), Ok((2, Inner::Probe(9), None)));
        assert_eq!(
            parse(&probe(PROBE_ACK, 1, 7)),
            Ok((1, Inner::ProbeAck(7), None))
        );
        // Data of every kind and flag (express, re-sends, sent behind).
        for kind in (crate::wire::VERSION << 4) | 1..=(crate::wire::VERSION << 4) | 0xf {
            let data = [kind, 1, 0, 0];
            let parsed = parse(&data);
            if crate::wire::is_data_first_byte(kind) {
                assert_eq!(parsed, Ok((1, Inner::Data(&data), None)));
            } else {
                assert_ne!(parsed, Ok((1, Inner::Data(&data), None)), "{kind:#x}");
            }
        }
        // Feedback: skip notices (frame 3) go to the Receiver, the rest
        // (acks, loss reports) to the Sender.
        for (frame, skips) in [(1, false), (2, false), (3, true)] {
            let msg = [WIRE_FEEDBACK, 1, frame];
            let expected = if skips {
                Inner::Skips(&msg)
            } else {
                Inner::Feedback(&msg)
            };
            assert_eq!(parse(&msg), Ok((1, expected, None)), "frame {frame}");
        }
        let data = [WIRE_DATA_TEST, 1, 0, 0];
        let fb = [WIRE_FEEDBACK, 1, 1];
        let mut b = vec![0u8; 64];
        let n = emit_bundle(1, &fb, &data, &mut b);
        assert_eq!(
            parse(&b[..n]),
            Ok((1, Inner::Feedback(&fb), Some(Inner::Data(&data))))
        );
    }

    #[test]
    fn stream_packets_round_trip() {
        let mut b = vec![0u8; 8];
        emit_stream_header(3, &mut b);
        b[STREAM_HEADER_LEN..].copy_from_slice(&[1, 3, 0, 0, 0, 9]);
        assert_eq!(
            parse(&b),
            Ok((3, Inner::Stream(&[1, 3, 0, 0, 0, 9][..]), None))
        );
        // A header without a packet.
        assert_eq!(parse(&b[..STREAM_HEADER_LEN]), Err(Malformed));
    }

    #[test]
    fn trains_and_their_reports_round_trip() {
        let t = TrainPacket {
            id: 7,
            index: 3,
            count: 32,
        };
        let mut b = vec![0xffu8; 64];
        let n = emit_train(2, t, 40, &mut b);
        assert_eq!(n, 40);
        assert!(b[TRAIN_HEADER_LEN..40].iter().all(|&x| x == 0));
        assert_eq!(parse(&b[..n]), Ok((2, Inner::Train(t), None)));
        let r = TrainReport {
            id: 7,
            received: 31,
            bytes: 0x0102_0304,
            span_us: 0x0a0b_0c0d,
        };
        let n = emit_train_report(1, r, &mut b);
        assert_eq!(parse(&b[..n]), Ok((1, Inner::TrainReport(r), None)));
        // Cut short, or a report with a byte too many.
        assert_eq!(parse(&b[..n - 1]), Err(Malformed));
        assert_eq!(parse(&b[..n + 1]), Err(Malformed));
        assert_eq!(parse(&[TRAIN, 0, 1, 2]), Err(Malformed));
    }

    #[test]
    fn every_malformed_case_rejects() {
        assert_eq!(parse(&[]), Err(Malformed));
        assert_eq!(parse(&[PROBE]), Err(Malformed));
        assert_eq!(parse(&probe(PROBE, 0, 1)[..5]), Err(Malformed));
        assert_eq!(parse(&[0x99, 0, 0, 0, 0, 0]), Err(Malformed));
        let data = [WIRE_DATA_TEST, 1, 0];
        let mut b = vec![0u8; 64];
        let n = emit_bundle(1, &data, &data, &mut b);
        assert!(parse(&b[..n]).is_ok());
        // Length beyond the bundle.
        let mut long = b[..n].to_vec();
        long[3] = 200;
        assert_eq!(parse(&long), Err(Malformed));
        // Header cut short.
        assert_eq!(parse(&b[..3]), Err(Malformed));
        // A part for another path.
        let other = [WIRE_DATA_TEST, 2, 0];
        let n2 = emit_bundle(1, &data, &other, &mut b);
        assert_eq!(parse(&b[..n2]), Err(Malformed));
        // A nested bundle.
        let mut inner = vec![0u8; 16];
        let k = emit_bundle(1, &data, &data, &mut inner);
        let mut outer = vec![0u8; 64];
        let n3 = emit_bundle(1, &inner[..k], &data, &mut outer);
        assert_eq!(parse(&outer[..n3]), Err(Malformed));
        // An empty second part.
        let n4 = emit_bundle(1, &data, &[], &mut b);
        assert_eq!(parse(&b[..n4]), Err(Malformed));
    }
}
