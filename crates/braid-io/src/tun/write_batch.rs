//! Inner packets on their way out of the tunnel into the kernel, written
//! as a batch.
//!
//! With offload on, tun-rs merges the batch's TCP (and UDP) packets that
//! continue one another into one segment with a virtio-net header, as a
//! NIC's GRO would: the kernel's TCP then takes one 64-KB segment where it
//! would have taken dozens of packets, and acknowledges it once. A packet
//! that continues nothing is written alone. Merged packets' checksums are
//! not checked again (the kernel is told they are partial): every packet
//! here came out of an authenticated, encrypted datagram, so nothing on
//! the way can have changed it; what its sender wrote is what arrives, as
//! with wireguard-go's GRO.

use std::io;

use tun_rs::{GROTable, IDEAL_BATCH_SIZE, VIRTIO_NET_HDR_LEN};

use super::Tun;

/// Room in each buffer: tun-rs merges into a buffer only as far as its
/// capacity goes (it does not reallocate), and a merged segment may reach
/// an IP packet's 64 KB. Pages never written to are never committed, so a
/// batch that meets no TCP costs little of its 8 MB.
const BUFFER_CAPACITY: usize = 2 * VIRTIO_NET_HDR_LEN + u16::MAX as usize;

/// Packets of one write that may not have arrived, and why.
#[derive(Debug)]
pub struct TunWriteFailure {
    /// Packets in the batch: some of them were written, at least one not.
    pub packets: usize,
    pub error: io::Error,
}

/// Packets queued with [`push`](Self::push), written with
/// [`flush`](Self::flush).
pub struct TunWriteBatch {
    /// Each: room for the virtio-net header, then one packet (or, after a
    /// merge, a segment of several).
    bufs: Vec<Vec<u8>>,
    len: usize,
    gro: GROTable,
    /// Packets queued since the batch was made.
    queued: u64,
}

impl Default for TunWriteBatch {
    fn default() -> TunWriteBatch {
        TunWriteBatch::new()
    }
}

impl TunWriteBatch {
    pub fn new() -> TunWriteBatch {
        TunWriteBatch {
            bufs: Vec::with_capacity(IDEAL_BATCH_SIZE),
            len: 0,
            gro: GROTable::new(),
            queued: 0,
        }
    }

    /// Packets queued since the batch was made (empty ones are not).
    pub fn queued(&self) -> u64 {
        self.queued
    }

    /// Queues `packet` (an empty one is nothing to write). A full batch is
    /// written first; its failure, if any, is returned.
    pub fn push(&mut self, tun: &Tun, packet: &[u8]) -> Result<(), TunWriteFailure> {
        if packet.is_empty() {
            return Ok(());
        }
        let written = if self.len == IDEAL_BATCH_SIZE {
            self.flush(tun).map(drop)
        } else {
            Ok(())
        };
        if self.len == self.bufs.len() {
            self.bufs.push(Vec::with_capacity(BUFFER_CAPACITY));
        }
        let buf = &mut self.bufs[self.len];
        buf.clear();
        buf.resize(VIRTIO_NET_HDR_LEN, 0);
        buf.extend_from_slice(packet);
        self.len += 1;
        self.queued += 1;
        written
    }

    /// Writes every queued packet; returns how many.
    pub fn flush(&mut self, tun: &Tun) -> Result<usize, TunWriteFailure> {
        let packets = std::mem::take(&mut self.len);
        if packets == 0 {
            return Ok(0);
        }
        // The device's own (non-blocking) batch write, not the async
        // one: a TUN write hands the packet to the kernel's stack at once,
        // and one that fails is dropped like any lost packet.
        let device: &tun_rs::DeviceImpl = &tun.device;
        device
            .send_multiple(&mut self.gro, &mut self.bufs[..packets], VIRTIO_NET_HDR_LEN)
            .map(|_| packets)
            .map_err(|error| TunWriteFailure { packets, error })
    }
}
