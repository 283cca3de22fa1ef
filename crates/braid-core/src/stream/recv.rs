//! One stream's receiving half: segments reassembled by stream offset and
//! handed to the application in order.

use std::collections::BTreeMap;

use super::error::StreamError;

#[derive(Debug, Default)]
pub struct RecvStream {
    /// Received data at or past `read_offset`, by stream offset.
    buffered: BTreeMap<u64, Vec<u8>>,
    /// Bytes held in `buffered`.
    buffered_bytes: usize,
    /// Next offset the application reads.
    read_offset: u64,
    /// Total length, once a fin arrived.
    final_size: Option<u64>,
}

/// What `RecvStream::read` found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReadOutcome {
    /// Copied this many bytes (more than zero).
    Data(usize),
    /// Nothing in order yet.
    Blocked,
    /// Every byte up to the fin was read.
    Finished,
}

impl RecvStream {
    pub fn buffered_bytes(&self) -> usize {
        self.buffered_bytes
    }

    /// Takes a segment's data. Returns how many of its bytes were not kept
    /// (already read or already buffered), so the connection can release
    /// their flow-control credit.
    pub fn on_segment(
        &mut self,
        stream: u32,
        offset: u64,
        fin: bool,
        data: &[u8],
    ) -> Result<usize, StreamError> {
        let end = offset
            .checked_add(data.len() as u64)
            .ok_or(StreamError::Inconsistent(stream))?;
        match self.final_size {
            Some(size) if end > size || (fin && end != size) => {
                return Err(StreamError::Inconsistent(stream))
            }
            _ => {}
        }
        if fin {
            let highest = self
                .buffered
                .last_key_value()
                .map_or(self.read_offset, |(&o, d)| o + d.len() as u64);
            if highest > end {
                return Err(StreamError::Inconsistent(stream));
            }
            self.final_size = Some(end);
        }
        if data.is_empty() || end <= self.read_offset || self.buffered.contains_key(&offset) {
            return Ok(data.len());
        }
        self.buffered.insert(offset, data.to_vec());
        self.buffered_bytes += data.len();
        Ok(0)
    }

    /// Copies in-order bytes into `buf`. Returns the outcome and how many
    /// buffered bytes were released (read, or dropped as overlapping).
    pub fn read(&mut self, buf: &mut [u8]) -> (ReadOutcome, usize) {
        let mut copied = 0;
        let mut released = 0;
        while copied < buf.len() {
            let Some(mut entry) = self.buffered.first_entry() else {
                break;
            };
            let start = *entry.key();
            if start > self.read_offset {
                break;
            }
            let data = entry.get_mut();
            // Skip what was already read (an overlap only a faulty peer sends).
            let skip = usize::try_from(self.read_offset - start).unwrap_or(usize::MAX);
            if skip >= data.len() {
                released += data.len();
                self.buffered_bytes -= data.len();
                entry.remove();
                continue;
            }
            let n = (data.len() - skip).min(buf.len() - copied);
            buf[copied..copied + n].copy_from_slice(&data[skip..skip + n]);
            copied += n;
            self.read_offset += n as u64;
            if skip + n == data.len() {
                released += data.len();
                self.buffered_bytes -= data.len();
                entry.remove();
            }
        }
        let outcome = if copied > 0 {
            ReadOutcome::Data(copied)
        } else if self.final_size == Some(self.read_offset) {
            ReadOutcome::Finished
        } else {
            ReadOutcome::Blocked
        };
        (outcome, released)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reassembles_out_of_order_and_finishes() {
        let mut s = RecvStream::default();
        let mut buf = [0u8; 16];
        assert_eq!(s.on_segment(0, 3, true, b"def"), Ok(0));
        assert_eq!(s.read(&mut buf), (ReadOutcome::Blocked, 0));
        assert_eq!(s.on_segment(0, 0, false, b"abc"), Ok(0));
        assert_eq!(s.buffered_bytes(), 6);
        assert_eq!(s.read(&mut buf[..4]), (ReadOutcome::Data(4), 3));
        assert_eq!(&buf[..4], b"abcd");
        assert_eq!(s.read(&mut buf), (ReadOutcome::Data(2), 3));
        assert_eq!(&buf[..2], b"ef");
        assert_eq!(s.read(&mut buf), (ReadOutcome::Finished, 0));
        assert_eq!(s.buffered_bytes(), 0);
    }

    #[test]
    fn duplicates_are_not_kept() {
        let mut s = RecvStream::default();
        assert_eq!(s.on_segment(0, 0, false, b"abc"), Ok(0));
        assert_eq!(s.on_segment(0, 0, false, b"abc"), Ok(3));
        let mut buf = [0u8; 8];
        assert_eq!(s.read(&mut buf), (ReadOutcome::Data(3), 3));
        assert_eq!(s.on_segment(0, 0, false, b"abc"), Ok(3));
        assert_eq!(s.buffered_bytes(), 0);
    }

    #[test]
    fn contradictions_are_errors() {
        let mut s = RecvStream::default();
        s.on_segment(4, 0, true, b"abc").unwrap();
        // Data past the fin, and a second fin at another size.
        assert_eq!(
            s.on_segment(4, 3, false, b"d"),
            Err(StreamError::Inconsistent(4))
        );
        assert_eq!(
            s.on_segment(4, 0, true, b"ab"),
            Err(StreamError::Inconsistent(4))
        );
        // A fin below data already received.
        let mut t = RecvStream::default();
        t.on_segment(1, 10, false, b"xy").unwrap();
        assert_eq!(
            t.on_segment(1, 0, true, b"a"),
            Err(StreamError::Inconsistent(1))
        );
        // An offset wrapping past 2^64.
        assert_eq!(
            t.on_segment(1, u64::MAX, false, b"a"),
            Err(StreamError::Inconsistent(1))
        );
    }

    /// The edges of the fin's checks: data and fins that agree with a
    /// known size are fine, to the byte; one byte of disagreement is not.
    #[test]
    fn what_agrees_with_the_fin_is_kept_and_what_contradicts_it_is_refused() {
        let mut s = RecvStream::default();
        // The fin first (a bare one at 5), then data ending exactly there,
        // and the same fin again.
        assert_eq!(s.on_segment(2, 5, true, b""), Ok(0));
        assert_eq!(s.on_segment(2, 0, false, b"abcde"), Ok(0));
        assert_eq!(s.on_segment(2, 5, true, b""), Ok(0));
        // A fin at another size, though no data lies above it.
        let mut t = RecvStream::default();
        t.on_segment(2, 5, true, b"").unwrap();
        assert_eq!(
            t.on_segment(2, 0, true, b"abc"),
            Err(StreamError::Inconsistent(2))
        );
        // A fin inside data already buffered (10..20), not only below it.
        let mut u = RecvStream::default();
        u.on_segment(3, 10, false, b"0123456789").unwrap();
        assert_eq!(
            u.on_segment(3, 14, true, b"4"),
            Err(StreamError::Inconsistent(3))
        );
        assert_eq!(u.on_segment(3, 19, true, b"9"), Ok(0));
    }

    #[test]
    fn overlapping_data_is_read_once() {
        let mut s = RecvStream::default();
        s.on_segment(0, 0, false, b"abcd").unwrap();
        s.on_segment(0, 2, false, b"cdef").unwrap();
        let mut buf = [0u8; 16];
        assert_eq!(s.read(&mut buf), (ReadOutcome::Data(6), 8));
        assert_eq!(&buf[..6], b"abcdef");
        // A segment wholly inside data read already is released unread.
        let mut t = RecvStream::default();
        t.on_segment(0, 0, false, b"abcd").unwrap();
        t.on_segment(0, 1, false, b"bc").unwrap();
        assert_eq!(t.buffered_bytes(), 6);
        assert_eq!(t.read(&mut buf), (ReadOutcome::Data(4), 6));
        assert_eq!(t.buffered_bytes(), 0);
    }
}
