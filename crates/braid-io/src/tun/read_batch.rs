//! Inner packets in from the TUN device, one read's worth at a time.
//!
//! Without offload a read is one packet. With it, a read may be a TCP or
//! UDP segment of up to 64 KB with a virtio-net header and its checksum
//! left to whoever sends it; tun-rs cuts it into the packets the kernel
//! would have sent (headers and checksums filled in) and puts them in
//! buffers allocated here once.

/// A virtio-net header and the largest packet a read returns.
const RAW_BYTES: usize = tun_rs::VIRTIO_NET_HDR_LEN + u16::MAX as usize;

/// The buffers one TUN read is cut into, and how many it filled.
pub struct TunReadBatch {
    pub(super) raw: Box<[u8]>,
    /// The first takes a read that is not cut (up to 64 KB: the MTU may
    /// be raised after start), the others one segment each.
    pub(super) bufs: Vec<Box<[u8]>>,
    pub(super) sizes: Vec<usize>,
    pub(super) count: usize,
}

impl TunReadBatch {
    /// Buffers for a device of MTU `mtu`: a 64-KB segment of packets of at
    /// least the smallest IPv6 MTU fits (tun_rs::IDEAL_BATCH_SIZE of them).
    pub fn new(mtu: u16) -> TunReadBatch {
        let segments = tun_rs::IDEAL_BATCH_SIZE;
        let mut bufs = Vec::with_capacity(segments);
        bufs.push(vec![0u8; u16::MAX as usize].into_boxed_slice());
        bufs.resize_with(segments, || vec![0u8; usize::from(mtu)].into_boxed_slice());
        TunReadBatch {
            raw: vec![0u8; RAW_BYTES].into_boxed_slice(),
            bufs,
            sizes: vec![0; segments],
            count: 0,
        }
    }

    /// The packets of the last read, in the order the kernel sent them.
    pub fn packets(&self) -> impl Iterator<Item = &[u8]> {
        self.bufs
            .iter()
            .zip(&self.sizes)
            .take(self.count)
            .map(|(buf, &len)| &buf[..len])
    }

    /// A read filled `count` buffers.
    pub(super) fn filled(&mut self, count: usize) -> usize {
        self.count = count.min(self.bufs.len());
        self.count
    }
}
