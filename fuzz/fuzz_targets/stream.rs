//! A reliable-stream `Connection` (two or three paths, either controller)
//! fed hostile packets: well-formed frames with arbitrary numbers
//! (segments, path and data acknowledgements, aborts), raw bytes, and the
//! application writing, finishing and reading, with time passing. Every
//! call must stay within time and memory bounds, and the receiver must
//! never hold more than its window.
#![no_main]

use std::time::Duration;

use braid_core::cc::CcKind;
use braid_core::stream::frame::{DataAck, PacketWriter, Segment};
use braid_core::stream::{Config, Connection};
use braid_core::time::Instant;
use braid_core::wire::AckFrame;
use braid_fuzz::{bounded, CountingAlloc, Input};
use libfuzzer_sys::fuzz_target;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

const WINDOW: u64 = 1 << 20;

fuzz_target!(|data: &[u8]| {
    let mut input = Input::new(data);
    let paths: Vec<CcKind> = (0..2 + input.u8() % 2)
        .map(|_| {
            if input.u8() % 2 == 0 {
                CcKind::Bbr
            } else {
                CcKind::Ccid2
            }
        })
        .collect();
    let config = Config {
        receive_window: WINDOW,
        send_buffer: 1 << 20,
        max_streams: 16,
        idle_timeout: Duration::from_secs(5),
        carrier_overhead: 0,
        ..Config::default()
    };
    let mut now = Instant::from_nanos(1_000_000_000);
    let mut conn = Connection::new(config, &paths, now);
    let stream = conn.open_stream().expect("a new connection opens a stream");
    let mut buf = vec![0u8; 64 << 10];
    while !input.is_empty() {
        let path = input.u8() % 4; // one past the last path now and then
        match input.u8() % 8 {
            0 => {
                let mut w = if input.u8() % 2 == 0 {
                    PacketWriter::data(input.u8(), input.u32())
                } else {
                    PacketWriter::control()
                };
                // Segments with a length, then perhaps one without (its
                // data runs to the end of the packet).
                let lengthed = input.u8() % 4;
                let unlengthed = input.u8() % 2 == 0;
                let next = |input: &mut Input| {
                    let (conn_seq, id, offset, fin) = (
                        input.u64() % (2 * WINDOW),
                        input.u32() % 20,
                        input.u64() % (2 * WINDOW),
                        input.u8() % 2 == 0,
                    );
                    let len = usize::from(input.u16() % 1463);
                    let payload = input.take(len).to_vec();
                    (conn_seq, id, offset, fin || payload.is_empty(), payload)
                };
                for _ in 0..lengthed {
                    let v = next(&mut input);
                    w.segment(&segment(&v));
                }
                let bytes = if unlengthed {
                    let v = next(&mut input);
                    w.finish_with_segment(&segment(&v))
                } else {
                    w.finish()
                };
                let _ = bounded("handle_packet", || conn.handle_packet(now, path, &bytes));
            }
            1 => {
                let mut w = PacketWriter::control();
                w.path_ack(&AckFrame {
                    path: input.u8() % 4,
                    largest_pseq: input.u32(),
                    ack_delay_us: input.u32(),
                    recv_ts_us: input.u32(),
                    bitmap: input.u64(),
                });
                let cumulative = input.u64();
                let max_data = input.u64();
                let mut floor = cumulative;
                let ranges = (0..input.u8() % 17)
                    .filter_map(|_| {
                        let start = floor.checked_add(1 + u64::from(input.u16()))?;
                        let end = start.checked_add(1 + u64::from(input.u16()))?;
                        floor = end;
                        Some((start, end))
                    })
                    .collect();
                w.data_ack(&DataAck {
                    cumulative,
                    max_data,
                    ranges,
                });
                let bytes = w.finish();
                let _ = bounded("handle_packet", || conn.handle_packet(now, path, &bytes));
            }
            2 => {
                let len = usize::from(input.u16() % 1500);
                let bytes = input.take(len).to_vec();
                let _ = bounded("handle_packet", || conn.handle_packet(now, path, &bytes));
            }
            3 => {
                let len = usize::from(input.u16());
                let _ = bounded("write", || conn.write(stream, &vec![7; len]));
            }
            4 => {
                let _ = conn.finish(stream);
                if input.u8() == 0xab {
                    conn.abort(input.u32());
                }
            }
            5 => {
                let id = input.u32() % 20;
                let n = usize::from(input.u16()).min(buf.len());
                let _ = bounded("read", || conn.read(now, id, &mut buf[..n]));
            }
            _ => {
                now = Instant::from_nanos(now.as_nanos() + u64::from(input.u16()) * 100_000);
                for _ in 0..64 {
                    let Some(t) = conn.poll_timeout().filter(|t| *t <= now) else {
                        break;
                    };
                    bounded("handle_timeout", || conn.handle_timeout(t));
                }
            }
        }
        bounded(
            "poll_transmit",
            || while conn.poll_transmit(now).is_some() {},
        );
        assert!(
            conn.buffered_bytes() as u64 <= WINDOW,
            "receiver over its window"
        );
    }
});

/// A segment's numbers, fin and data, drawn from the input.
type SegmentValues = (u64, u32, u64, bool, Vec<u8>);

fn segment(v: &SegmentValues) -> Segment<'_> {
    Segment {
        conn_seq: v.0,
        stream: v.1,
        offset: v.2,
        fin: v.3,
        data: &v.4,
    }
}
