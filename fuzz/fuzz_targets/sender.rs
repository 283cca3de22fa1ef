//! A `Sender` (any scheduler, either controller) fed application datagrams
//! and arbitrary feedback: acks and loss reports with hostile numbers, raw
//! bytes, and time passing. Every call must stay within time and memory
//! bounds.
#![no_main]

use braid_core::cc::CcKind;
use braid_core::sched::{PathInfo, NAMES};
use braid_core::sender::{Sender, SenderConfig};
use braid_core::time::Instant;
use braid_core::wire::{self, AckFrame, Frame, LossEntry, LossReport};
use braid_fuzz::{bounded, CountingAlloc, Input};
use libfuzzer_sys::fuzz_target;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

fuzz_target!(|data: &[u8]| {
    let mut input = Input::new(data);
    let paths = usize::from(input.u8() % 3) + 1;
    let infos = (0..paths)
        .map(|i| {
            let cost = f64::from(input.u8()) + 1.0;
            let w = input.u8();
            PathInfo {
                name: format!("p{i}"),
                cost,
                weight_throughput: (w >= 128).then(|| f64::from(w - 128) / 127.0),
                // Odd bytes below 128 mark an overflow path (kept only for
                // the scheduler that honours it, below).
                overflow: w < 128 && w % 2 == 1,
            }
        })
        .collect();
    let mut config = SenderConfig::new(infos);
    config.scheduler = NAMES[usize::from(input.u8()) % NAMES.len()].to_owned();
    if config.scheduler != "earliest-arrival" {
        for p in &mut config.paths {
            p.overflow = false;
        }
    }
    let cc = input.u8();
    config.cc = if cc % 2 == 0 {
        CcKind::Bbr
    } else {
        CcKind::Ccid2
    };
    // The same byte's second bit: the sender re-sends what paths lose.
    config.resend_losses = cc & 2 != 0;
    let mut tx = Sender::new(config).expect("every named scheduler builds");
    let mut now = Instant::from_nanos(1_000_000_000);
    while !input.is_empty() {
        let op = input.u8();
        match op % 5 {
            0 => {
                // A few datagrams from the application, of one of eight
                // flows (the operation byte's top bits): several flows
                // make sparse ones, which may go express.
                let flow = u64::from(op >> 5);
                for _ in 0..input.u8() % 16 {
                    let len = usize::from(input.u16() % 1500);
                    let _ = bounded("send", || tx.send_flow(now, flow, vec![0; len]));
                }
            }
            1 => {
                let frames: Vec<Frame> = (0..input.u8() % 8)
                    .map(|_| {
                        Frame::Ack(AckFrame {
                            path: input.u8() % 4,
                            largest_pseq: input.u32(),
                            ack_delay_us: input.u32(),
                            recv_ts_us: input.u32(),
                            bitmap: input.u64(),
                        })
                    })
                    .collect();
                feed(&mut tx, now, &frames);
            }
            2 => {
                let report_seq = input.u32();
                let entries = (0..input.u8() % 5)
                    .map(|_| LossEntry {
                        path: input.u8(),
                        received: input.u32(),
                        lost: input.u32(),
                    })
                    .collect();
                feed(
                    &mut tx,
                    now,
                    &[Frame::LossReport(LossReport {
                        report_seq,
                        entries,
                    })],
                );
            }
            3 => {
                let len = usize::from(input.u16() % 1500);
                let bytes = input.take(len).to_vec();
                let _ = bounded("handle_datagram", || tx.handle_datagram(now, &bytes));
            }
            _ => {
                now = Instant::from_nanos(now.as_nanos() + u64::from(input.u16()) * 100_000);
                while let Some(t) = tx.poll_timeout().filter(|t| *t <= now) {
                    bounded("handle_timeout", || tx.handle_timeout(t));
                }
            }
        }
        while tx.poll_transmit().is_some() {}
    }
});

fn feed(tx: &mut Sender, now: Instant, frames: &[Frame]) {
    let bytes = wire::feedback_packet(0, frames).expect("well-formed frames");
    let _ = bounded("handle_datagram", || tx.handle_datagram(now, &bytes));
}
