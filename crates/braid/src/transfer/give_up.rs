//! Why one end of a transfer gave up, carried in the stream's abort code,
//! so that the other end says why instead of "aborted by the peer (code
//! 1)". Codes from 0x100 are braid transfer's own; the stream's (1 to 3)
//! stay below them.

use braid_core::stream::{code, StreamError};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum GiveUp {
    /// No reason the other end can do anything with (its own messages say).
    #[default]
    Other,
    /// A signal (Ctrl-C) stopped it.
    Interrupted,
    /// No progress for its `--stall-timeout`.
    Stalled,
    /// The sender could not read a file or its standard input (or a file
    /// changed while it was read).
    InputFailed,
    /// The receiver's standard output was closed (`| head`) or failed
    /// (a full disk).
    OutputClosed,
}

const CODES: [(GiveUp, u32); 4] = [
    (GiveUp::Interrupted, 0x100),
    (GiveUp::Stalled, 0x101),
    (GiveUp::InputFailed, 0x102),
    (GiveUp::OutputClosed, 0x103),
];

impl GiveUp {
    /// The abort code that says it.
    pub fn code(self) -> u32 {
        CODES
            .iter()
            .find(|(g, _)| *g == self)
            .map_or(code::APPLICATION, |(_, c)| *c)
    }

    fn from_code(c: u32) -> Option<GiveUp> {
        CODES.iter().find(|(_, k)| *k == c).map(|(g, _)| *g)
    }

    fn says(self) -> &'static str {
        match self {
            GiveUp::Other => "see its own messages",
            GiveUp::Interrupted => "it was interrupted (Ctrl-C or a signal)",
            GiveUp::Stalled => "no progress for its --stall-timeout",
            GiveUp::InputFailed => {
                "it could not read its input, or a file changed while it was sent"
            }
            GiveUp::OutputClosed => "its standard output was closed or could not be written",
        }
    }
}

/// What to say about a failed connection to `peer` ("sender",
/// "receiver"): the peer's reason when it gave up with one of ours.
pub fn describe(error: &StreamError, peer: &str) -> String {
    match error {
        StreamError::PeerAbort(c) => {
            let why = GiveUp::from_code(*c).unwrap_or_default();
            format!("the {peer} gave up ({})", why.says())
        }
        e => format!("transfer failed: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_reason_travels_as_its_own_code_and_comes_back() {
        let all = [
            GiveUp::Other,
            GiveUp::Interrupted,
            GiveUp::Stalled,
            GiveUp::InputFailed,
            GiveUp::OutputClosed,
        ];
        let mut codes: Vec<u32> = all.iter().map(|g| g.code()).collect();
        assert_eq!(codes[0], code::APPLICATION);
        for (g, c) in all.iter().zip(&codes) {
            assert_eq!(GiveUp::from_code(*c).unwrap_or_default(), *g);
            assert!(describe(&StreamError::PeerAbort(*c), "sender").contains(g.says()));
        }
        // Ours are clear of the stream's own codes (1 to 3).
        assert!(codes[1..].iter().all(|&c| c > code::IDLE), "{codes:?}");
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), all.len(), "distinct codes");
        assert_eq!(
            describe(&StreamError::PeerAbort(0x103), "receiver"),
            "the receiver gave up (its standard output was closed or could not be written)"
        );
        assert_eq!(
            describe(&StreamError::PeerAbort(77), "sender"),
            "the sender gave up (see its own messages)"
        );
        assert_eq!(
            describe(&StreamError::UnknownStream(3), "sender"),
            "transfer failed: unknown stream 3"
        );
    }
}
