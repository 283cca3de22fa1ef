//! A `Receiver` fed arbitrary datagrams (well-formed data packets with
//! hostile numbers, skip notices, raw bytes) on arbitrary paths at
//! arbitrary times. Every call must stay within time and memory bounds.
#![no_main]

use braid_core::receiver::{Receiver, ReceiverConfig};
use braid_core::time::Instant;
use braid_core::wire::{self, DataHeader, Frame, SkipFrame};
use braid_fuzz::{bounded, CountingAlloc, Input};
use libfuzzer_sys::fuzz_target;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

const PATHS: u8 = 3;

fuzz_target!(|data: &[u8]| {
    let mut input = Input::new(data);
    let mut rx = Receiver::new(ReceiverConfig::new(usize::from(PATHS)));
    let mut now = Instant::from_nanos(1_000_000_000);
    // A base the numbers of bursts count from, so the fuzzer can build long
    // runs of nearby numbers without spelling each one out.
    let mut base = 0u64;
    while !input.is_empty() {
        let op = input.u8();
        // One spare path id beyond the configured ones: unknown paths too.
        let path = input.u8() % (PATHS + 1);
        let datagram = match op % 5 {
            0 => {
                let header = DataHeader {
                    path,
                    gseq: input.u32(),
                    pseq: input.u32(),
                    send_ts_us: input.u32(),
                    prev_gap: input.u16(),
                    flow_gap: input.u16(),
                    // The operation byte's top bit: sent express; the next
                    // one: from a sender that re-sends its losses; the
                    // next: sent behind lower numbers.
                    express: op >= 128,
                    resends: op & 64 != 0,
                    behind: op & 32 != 0,
                };
                let len = usize::from(input_len(&mut input));
                let mut d = Vec::new();
                header.append_to(input.take(len), &mut d);
                vec![d]
            }
            1 => {
                // A burst of packets on one path, numbers near `base`, one
                // flow: each names the one before it, the first whatever
                // the fuzzer says (0: no flow information).
                base = base.wrapping_add(u64::from(input.u16()));
                let (count, stride) = (input.u8() % 32, u64::from(input.u8() % 4) + 1);
                let pseq = input.u32();
                let first_flow_gap = input.u16();
                (0..count)
                    .map(|i| {
                        let header = DataHeader {
                            path,
                            // The wire carries the low 32 bits.
                            gseq: base.wrapping_add(u64::from(i) * stride) as u32,
                            pseq: pseq.wrapping_add(u32::from(i)),
                            send_ts_us: now.wire_micros(),
                            prev_gap: stride as u16,
                            flow_gap: if i == 0 {
                                first_flow_gap
                            } else {
                                stride as u16
                            },
                            // A sparse flow's packet sent ahead of the burst.
                            express: i == 0 && op >= 128,
                            resends: op & 64 != 0,
                            // The rest of the burst sent behind a held number.
                            behind: i > 0 && op & 32 != 0,
                        };
                        let mut d = Vec::new();
                        header.append_to(&[0; 8], &mut d);
                        d
                    })
                    .collect()
            }
            2 => {
                let frames: Vec<Frame> = (0..input.u8() % 100)
                    .map(|_| {
                        Frame::Skip(SkipFrame {
                            from: base.wrapping_add(u64::from(input.u32())),
                            count: input.u32(),
                        })
                    })
                    .collect();
                vec![wire::feedback_packet(path, &frames).expect("skip frames only")]
            }
            3 => {
                let len = usize::from(input_len(&mut input));
                vec![input.take(len).to_vec()]
            }
            _ => {
                // Time passes (up to about 65 s); timers fire.
                now = Instant::from_nanos(now.as_nanos() + u64::from(input.u16()) * 1_000_000);
                while let Some(t) = rx.poll_timeout().filter(|t| *t <= now) {
                    bounded("handle_timeout", || rx.handle_timeout(t));
                }
                Vec::new()
            }
        };
        for d in datagram {
            let _ = bounded("handle_datagram", || rx.handle_datagram(now, path, &d));
        }
        while rx.poll_transmit().is_some() {}
        while rx.poll_deliver().is_some() {}
        if let Some(t) = rx.poll_timeout() {
            // Timers never point into the past once handled.
            assert!(t > Instant::ZERO);
        }
    }
});

fn input_len(input: &mut Input<'_>) -> u16 {
    input.u16() % 1500
}
