//! What `braid send` and `braid recv` say inside the session's streams.
//! All integers big-endian; every value from the wire is checked.
//!
//! ```text
//! file stream (sender, stream id = file number, from 0):
//!   "BRD1" total_files(4) size(8) name_len(2) name(name_len)   header
//!   data...                                                    `size` bytes; u64::MAX: unknown (stdin)
//!   sha256(32)                                                 of the data, last 32 bytes of the stream
//!
//! reply stream (receiver, its stream 0), one record per file:
//!   file(4) status(1) msg_len(2) msg(msg_len)                  status 0: verified and in place
//! ```

use std::fmt;

const MAGIC: &[u8; 4] = b"BRD1";
/// Bytes before the name.
const FIXED_LEN: usize = 4 + 4 + 8 + 2;
/// Longest file name (bytes), as most file systems allow.
pub const MAX_NAME_LEN: usize = 255;
/// Most files in one transfer (one stream each, plus the reply stream).
pub const MAX_FILES: u32 = 1024;
/// `size` of a stream whose length is not known in advance.
pub const UNKNOWN_SIZE: u64 = u64::MAX;
/// Bytes of the SHA-256 trailer.
pub const DIGEST_LEN: usize = 32;
const REPLY_FIXED_LEN: usize = 4 + 1 + 2;
/// Longest reply message (bytes).
const MAX_MESSAGE_LEN: usize = 1024;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileHeader {
    pub total_files: u32,
    pub size: u64,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeaderError {
    Magic,
    TotalFiles(u32),
    Name(String),
}

impl fmt::Display for HeaderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HeaderError::Magic => write!(f, "not a braid send stream (bad magic)"),
            HeaderError::TotalFiles(n) => {
                write!(f, "file count {n} outside 1..={MAX_FILES}")
            }
            HeaderError::Name(why) => write!(f, "unacceptable file name: {why}"),
        }
    }
}

/// Whether `name` is a plain file name: no directory part, nothing hidden
/// behind it, so the receiver writes only inside its directory.
pub fn check_name(name: &str) -> Result<(), HeaderError> {
    let bad = |why: &str| Err(HeaderError::Name(format!("{name:?}: {why}")));
    if name.is_empty() || name.len() > MAX_NAME_LEN {
        return bad("empty or longer than 255 bytes");
    }
    if name == "." || name == ".." {
        return bad("a directory");
    }
    if name.contains('/') || name.contains('\0') {
        return bad("contains '/' or NUL");
    }
    // Printed in messages on the receiver's terminal: a newline or an
    // escape sequence there would forge or garble them.
    if name.chars().any(char::is_control) {
        return bad("contains a control character (a newline, a tab, an escape)");
    }
    Ok(())
}

impl FileHeader {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(FIXED_LEN + self.name.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&self.total_files.to_be_bytes());
        out.extend_from_slice(&self.size.to_be_bytes());
        out.extend_from_slice(&(self.name.len() as u16).to_be_bytes());
        out.extend_from_slice(self.name.as_bytes());
        out
    }

    /// The header at the start of `buf`, with its length; `Ok(None)` when
    /// `buf` does not hold all of it yet (at most `FIXED_LEN + 255` bytes
    /// are ever needed).
    pub fn parse(buf: &[u8]) -> Result<Option<(FileHeader, usize)>, HeaderError> {
        if buf.len() >= MAGIC.len() && &buf[..MAGIC.len()] != MAGIC {
            return Err(HeaderError::Magic);
        }
        if buf.len() < FIXED_LEN {
            return Ok(None);
        }
        let total_files = u32::from_be_bytes(buf[4..8].try_into().expect("4 bytes"));
        let size = u64::from_be_bytes(buf[8..16].try_into().expect("8 bytes"));
        let name_len = usize::from(u16::from_be_bytes([buf[16], buf[17]]));
        if !(1..=MAX_FILES).contains(&total_files) {
            return Err(HeaderError::TotalFiles(total_files));
        }
        if name_len > MAX_NAME_LEN {
            return Err(HeaderError::Name(format!("{name_len} bytes long")));
        }
        let Some(name) = buf.get(FIXED_LEN..FIXED_LEN + name_len) else {
            return Ok(None);
        };
        let name = std::str::from_utf8(name)
            .map_err(|_| HeaderError::Name("not UTF-8".to_owned()))?
            .to_owned();
        check_name(&name)?;
        Ok(Some((
            FileHeader {
                total_files,
                size,
                name,
            },
            FIXED_LEN + name_len,
        )))
    }
}

/// The receiver's word on one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    pub file: u32,
    /// `None`: verified and in place; else why not.
    pub error: Option<String>,
}

impl Reply {
    pub fn encode(&self) -> Vec<u8> {
        let msg = self.error.as_deref().unwrap_or("").as_bytes();
        let msg = &msg[..msg.len().min(MAX_MESSAGE_LEN)];
        let mut out = Vec::with_capacity(REPLY_FIXED_LEN + msg.len());
        out.extend_from_slice(&self.file.to_be_bytes());
        out.push(u8::from(self.error.is_some()));
        out.extend_from_slice(&(msg.len() as u16).to_be_bytes());
        out.extend_from_slice(msg);
        out
    }

    /// The first reply in `buf` and its length, `Ok(None)` if incomplete.
    pub fn parse(buf: &[u8]) -> Result<Option<(Reply, usize)>, String> {
        if buf.len() < REPLY_FIXED_LEN {
            return Ok(None);
        }
        let file = u32::from_be_bytes(buf[..4].try_into().expect("4 bytes"));
        let status = buf[4];
        let len = usize::from(u16::from_be_bytes([buf[5], buf[6]]));
        if status > 1 || len > MAX_MESSAGE_LEN {
            return Err(format!("malformed reply (status {status}, {len} bytes)"));
        }
        let Some(msg) = buf.get(REPLY_FIXED_LEN..REPLY_FIXED_LEN + len) else {
            return Ok(None);
        };
        let error = (status == 1).then(|| String::from_utf8_lossy(msg).into_owned());
        Ok(Some((Reply { file, error }, REPLY_FIXED_LEN + len)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(name: &str) -> FileHeader {
        FileHeader {
            total_files: 3,
            size: 12345,
            name: name.to_owned(),
        }
    }

    #[test]
    fn header_round_trips_and_waits_for_all_its_bytes() {
        let h = header("report.pdf");
        let bytes = h.encode();
        for cut in 0..bytes.len() {
            assert_eq!(FileHeader::parse(&bytes[..cut]), Ok(None), "cut at {cut}");
        }
        let mut more = bytes.clone();
        more.extend_from_slice(b"data");
        assert_eq!(FileHeader::parse(&more), Ok(Some((h, bytes.len()))));
    }

    #[test]
    fn plain_names_pass_whatever_their_script() {
        for name in [
            "f.bin",
            "...",
            " spaced name ",
            "résumé.pdf",
            "データ.tar",
            "a\u{200b}b",
        ] {
            assert_eq!(check_name(name), Ok(()), "{name:?}");
        }
    }

    #[test]
    fn hostile_headers_are_refused() {
        assert_eq!(FileHeader::parse(b"XRD1"), Err(HeaderError::Magic));
        for name in [
            "",
            ".",
            "..",
            "a/b",
            "../etc/passwd",
            "/abs",
            "nul\0",
            "two\nlines",
            "tab\there",
            "\x1b[2Jclear",
            "del\x7f",
            "c1\u{9b}31m",
        ] {
            let bytes = header(name).encode();
            assert!(
                matches!(FileHeader::parse(&bytes), Err(HeaderError::Name(_))),
                "{name:?}"
            );
        }
        let mut zero = header("f").encode();
        zero[4..8].copy_from_slice(&0u32.to_be_bytes());
        assert_eq!(FileHeader::parse(&zero), Err(HeaderError::TotalFiles(0)));
        let mut long = header("f").encode();
        long[16..18].copy_from_slice(&300u16.to_be_bytes());
        assert!(matches!(
            FileHeader::parse(&long),
            Err(HeaderError::Name(_))
        ));
        let mut bad_utf8 = header("ab").encode();
        let n = bad_utf8.len();
        bad_utf8[n - 1] = 0xff;
        assert!(matches!(
            FileHeader::parse(&bad_utf8),
            Err(HeaderError::Name(_))
        ));
    }

    #[test]
    fn replies_round_trip_and_refuse_nonsense() {
        let ok = Reply {
            file: 7,
            error: None,
        };
        let bad = Reply {
            file: 8,
            error: Some("disk full".to_owned()),
        };
        let mut bytes = ok.encode();
        bytes.extend(bad.encode());
        let (r1, n1) = Reply::parse(&bytes).unwrap().unwrap();
        assert_eq!(r1, ok);
        let (r2, n2) = Reply::parse(&bytes[n1..]).unwrap().unwrap();
        assert_eq!(r2, bad);
        assert_eq!(n1 + n2, bytes.len());
        assert_eq!(Reply::parse(&bytes[n1..n1 + 3]), Ok(None));
        assert_eq!(Reply::parse(&bytes[n1..bytes.len() - 1]), Ok(None));
        let mut status = ok.encode();
        status[4] = 9;
        assert!(Reply::parse(&status).is_err());
    }
}
