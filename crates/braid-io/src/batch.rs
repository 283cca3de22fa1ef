//! Receive buffers allocated once per socket, and the datagrams one batched
//! receive put into them.
//!
//! With GRO the kernel may coalesce several datagrams of one sender into a
//! slot; `RecvMeta::stride` says where they split. The iterator hands each
//! out as a slice of the batch's own memory: no allocation per packet.

use std::io::IoSliceMut;
use std::net::SocketAddr;

use quinn_udp::{RecvMeta, BATCH_SIZE};

/// Largest UDP payload one slot can hold: a GRO-coalesced run of datagrams
/// is at most 64 KiB.
pub const MAX_DATAGRAM_BYTES: usize = 64 * 1024;

/// Buffers for up to `BATCH_SIZE` receive slots (recvmmsg) of
/// [`MAX_DATAGRAM_BYTES`] each, and what the last receive left in them.
pub struct RecvBatch {
    buf: Box<[u8]>,
    meta: [RecvMeta; BATCH_SIZE],
    filled: usize,
}

/// One received datagram: who sent it, and its bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Datagram<'a> {
    pub from: SocketAddr,
    pub bytes: &'a [u8],
}

impl Default for RecvBatch {
    fn default() -> Self {
        Self::new()
    }
}

impl RecvBatch {
    pub fn new() -> RecvBatch {
        RecvBatch {
            buf: vec![0; BATCH_SIZE * MAX_DATAGRAM_BYTES].into_boxed_slice(),
            meta: [RecvMeta::default(); BATCH_SIZE],
            filled: 0,
        }
    }

    /// Runs one receive call `recv(slots, meta)` into the batch's buffers
    /// and records how many slots it filled.
    pub(crate) fn fill_with<E>(
        &mut self,
        recv: impl FnOnce(&mut [IoSliceMut<'_>], &mut [RecvMeta]) -> Result<usize, E>,
    ) -> Result<usize, E> {
        self.filled = 0;
        let mut chunks = self.buf.chunks_exact_mut(MAX_DATAGRAM_BYTES);
        let mut slots: [IoSliceMut<'_>; BATCH_SIZE] = std::array::from_fn(|_| {
            IoSliceMut::new(chunks.next().expect("the buffer holds BATCH_SIZE slots"))
        });
        let filled = recv(&mut slots, &mut self.meta)?;
        self.filled = filled.min(BATCH_SIZE);
        Ok(self.filled)
    }

    /// Calls `f(from, bytes)` for each datagram of the last receive, GRO
    /// runs split at their stride, with the bytes writable (a session
    /// decrypts in place).
    pub fn for_each_mut(&mut self, mut f: impl FnMut(SocketAddr, &mut [u8])) {
        for (meta, slot) in self.meta[..self.filled]
            .iter()
            .zip(self.buf.chunks_exact_mut(MAX_DATAGRAM_BYTES))
        {
            let len = meta.len.min(slot.len());
            for bytes in slot[..len].chunks_mut(stride(meta, len)) {
                f(meta.addr, bytes);
            }
        }
    }

    /// The datagrams of the last receive, GRO runs split at their stride.
    pub fn datagrams(&self) -> impl Iterator<Item = Datagram<'_>> + '_ {
        self.meta[..self.filled]
            .iter()
            .zip(self.buf.chunks_exact(MAX_DATAGRAM_BYTES))
            .flat_map(|(meta, slot)| {
                let len = meta.len.min(slot.len());
                slot[..len]
                    .chunks(stride(meta, len))
                    .map(move |bytes| Datagram {
                        from: meta.addr,
                        bytes,
                    })
            })
    }
}

/// Where a slot of `len` bytes splits into datagrams. A zero stride would
/// never advance; the kernel reports the datagram length there, so it is at
/// least 1 for data.
fn stride(meta: &RecvMeta, len: usize) -> usize {
    if meta.stride == 0 {
        len.max(1)
    } else {
        meta.stride
    }
}
