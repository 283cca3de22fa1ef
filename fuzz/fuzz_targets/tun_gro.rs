//! The merging of inner packets before they are written to the TUN device
//! (tun-rs's GRO, which `braid_io::TunWriteBatch` runs on every batch).
//! Its input is what the peer sent inside the tunnel: authenticated, but
//! any bytes a peer chooses. Packets are raw bytes or TCP/UDP over IPv4 or
//! IPv6 built with valid checksums (so that merging is reached) and then
//! possibly mangled; the batch is as braid makes it (room for the
//! virtio-net header, 64 KB of capacity per buffer, at most 128 packets).
//! Every call must stay within time and memory bounds, and no buffer may
//! grow past an IP packet's 64 KB.
#![no_main]

use braid_fuzz::{bounded, CountingAlloc, Input};
use libfuzzer_sys::fuzz_target;
use tun_rs::{GROTable, IDEAL_BATCH_SIZE, VIRTIO_NET_HDR_LEN};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

const CAPACITY: usize = 2 * VIRTIO_NET_HDR_LEN + u16::MAX as usize;

/// A TCP (`tcp`) or UDP packet over IPv4 or IPv6 with the fuzzer's ports,
/// sequence number, flags, options and payload length, checksums valid.
fn packet(input: &mut Input, v6: bool, tcp: bool) -> Vec<u8> {
    let ports = input.u32().to_be_bytes();
    let options = if tcp {
        usize::from(input.u8() % 11) * 4
    } else {
        0
    };
    let header = if tcp { 20 + options } else { 8 };
    let payload = usize::from(input.u16() % 1500);
    let mut l4 = vec![0u8; header];
    l4[..4].copy_from_slice(&ports);
    if tcp {
        // Sequence numbers near one another, so that segments continue.
        let seq = u32::from(input.u16()) * 100;
        l4[4..8].copy_from_slice(&seq.to_be_bytes());
        l4[12] = ((header / 4) as u8) << 4;
        l4[13] = input.u8();
        l4[20..].copy_from_slice(&vec![1u8; options]);
    } else {
        l4[4..6].copy_from_slice(&((header + payload) as u16).to_be_bytes());
    }
    l4.extend(std::iter::repeat_n(input.u8(), payload));
    let protocol = if tcp { 6u8 } else { 17 };
    let mut ip = if v6 {
        let mut h = vec![0u8; 40];
        h[0] = 0x60;
        h[4..6].copy_from_slice(&(l4.len() as u16).to_be_bytes());
        h[6] = protocol;
        h[7] = 64;
        h[8..40].copy_from_slice(&[0xfd; 32]);
        h[39] = input.u8() % 2;
        h
    } else {
        let mut h = vec![0u8; 20];
        h[0] = 0x45;
        h[2..4].copy_from_slice(&((20 + l4.len()) as u16).to_be_bytes());
        h[6] = 0x40;
        h[8] = 64;
        h[9] = protocol;
        h[12..20].copy_from_slice(&[10, 77, 0, 2, 10, 77, 0, input.u8() % 2]);
        let c = !tun_rs::checksum(&h, 0);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        h
    };
    let addresses = if v6 { &ip[8..40] } else { &ip[12..20] };
    let pseudo = tun_rs::checksum_no_fold(addresses, u64::from(protocol) + l4.len() as u64);
    let c = !tun_rs::checksum(&l4, pseudo);
    let at = if tcp { 16 } else { 6 };
    l4[at..at + 2].copy_from_slice(&c.to_be_bytes());
    ip.extend_from_slice(&l4);
    ip
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input::new(data);
    let can_udp_gro = input.u8() & 1 == 1;
    let mut bufs: Vec<Vec<u8>> = Vec::new();
    while !input.is_empty() && bufs.len() < IDEAL_BATCH_SIZE {
        let op = input.u8();
        let mut p = match op % 5 {
            0 => {
                let n = usize::from(input.u16() % 2048);
                input.take(n).to_vec()
            }
            k => packet(&mut input, k >= 3, k % 2 == 1),
        };
        // A few bytes changed after the checksums were made.
        for _ in 0..(op >> 5) {
            if !p.is_empty() {
                let at = usize::from(input.u16()) % p.len();
                p[at] = input.u8();
            }
        }
        // braid skips empty packets before they reach the batch.
        if p.is_empty() {
            continue;
        }
        let mut buf = Vec::with_capacity(CAPACITY);
        buf.resize(VIRTIO_NET_HDR_LEN, 0);
        buf.extend_from_slice(&p);
        bufs.push(buf);
    }
    if bufs.is_empty() {
        return;
    }
    let mut gro = GROTable::new();
    bounded("apply_gro", || {
        gro.apply_gro(&mut bufs, VIRTIO_NET_HDR_LEN, can_udp_gro)
    })
    .expect("a batch braid makes is one tun-rs takes");
    for buf in &bufs {
        assert!(buf.len() <= CAPACITY, "a buffer grew to {}", buf.len());
    }
});
