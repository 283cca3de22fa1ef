//! One stream's sending half: bytes the application wrote that no segment
//! carries yet. Data is cut into segments only when a path asks for it
//! (late binding), so nothing here is tied to a path.

use std::collections::VecDeque;

#[derive(Debug, Default)]
pub struct SendStream {
    /// Written, not yet in any segment.
    pending: VecDeque<u8>,
    /// Stream offset of the first pending byte.
    next_offset: u64,
    /// The application finished the stream.
    fin_requested: bool,
    /// A segment carrying the fin has been built.
    fin_sent: bool,
}

/// A piece of a stream, cut for one segment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cut {
    pub offset: u64,
    pub fin: bool,
    pub data: Vec<u8>,
}

impl SendStream {
    pub fn write(&mut self, data: &[u8]) {
        self.pending.extend(data);
    }

    pub fn finish(&mut self) {
        self.fin_requested = true;
    }

    pub fn is_finished(&self) -> bool {
        self.fin_requested
    }

    /// Stream offset of the next segment [`SendStream::cut`] makes.
    pub fn next_offset(&self) -> u64 {
        self.next_offset
    }

    /// Starts the stream at `offset`, to test the limits of the wire.
    #[cfg(test)]
    pub fn next_offset_for_test(&mut self, offset: u64) {
        self.next_offset = offset;
    }

    /// Whether [`SendStream::cut`] would produce a segment.
    pub fn has_data(&self) -> bool {
        !self.pending.is_empty() || (self.fin_requested && !self.fin_sent)
    }

    /// Takes up to `max` pending bytes for a segment, with the fin once the
    /// last byte goes. `max` must be at least 1 (a bare fin takes one
    /// connection sequence number).
    pub fn cut(&mut self, max: usize) -> Option<Cut> {
        if !self.has_data() || max == 0 {
            return None;
        }
        let n = self.pending.len().min(max);
        let data: Vec<u8> = self.pending.drain(..n).collect();
        let offset = self.next_offset;
        self.next_offset += n as u64;
        let fin = self.fin_requested && self.pending.is_empty();
        self.fin_sent |= fin;
        Some(Cut { offset, fin, data })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_in_order_and_ends_with_fin() {
        let mut s = SendStream::default();
        assert_eq!(s.cut(10), None);
        s.write(b"abcdefg");
        let a = s.cut(4).unwrap();
        assert_eq!(
            (a.offset, a.fin, a.data.as_slice()),
            (0, false, &b"abcd"[..])
        );
        s.finish();
        let b = s.cut(4).unwrap();
        assert_eq!((b.offset, b.fin, b.data.as_slice()), (4, true, &b"efg"[..]));
        assert!(!s.has_data());
        assert_eq!(s.cut(4), None);
    }

    #[test]
    fn a_finish_after_everything_went_sends_a_bare_fin_once() {
        let mut s = SendStream::default();
        s.write(b"ab");
        assert!(!s.cut(10).unwrap().fin);
        s.finish();
        let f = s.cut(10).unwrap();
        assert_eq!((f.offset, f.fin, f.data.len()), (2, true, 0));
        assert_eq!(s.cut(10), None);
    }
}
