//! The usage file: each capped path's bytes in its current period, so that
//! a restart does not forget what a metered link has already carried.
//!
//! ```json
//! {"version":1,"paths":{"lte":{"period":"month","period_start":1793491200,"used_bytes":123456}}}
//! ```
//!
//! Written atomically (a temporary file beside it, flushed, then renamed
//! over it). A usage file that cannot be parsed is moved aside to
//! `<file>.corrupt` with a warning and usage starts from zero: the tunnel
//! is the site's connectivity, and refusing to start over a damaged
//! counter would take it down, while starting from zero costs at most one
//! cap in one period; the old file stays for a person to read. A file that
//! cannot be read or written at all (permissions, a missing disk) is an
//! error at start: the caps would silently stop surviving restarts.
//!
//! Only braid's own file is ever moved aside or replaced: one that is
//! empty or begins as this writer begins (`{"version"`). Anything else
//! (a device, a directory, the config file itself, text that is not
//! JSON) is an error at start, and left as it is: `usage_file` naming
//! `/dev/null` once moved the device aside and put a plain file in its
//! place.

use std::collections::BTreeMap;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::config::Period;

const VERSION: u32 = 1;

/// Largest usage file read: a handful of paths take a few hundred bytes.
const MAX_FILE_BYTES: u64 = 1 << 20;

/// One path's usage in its period.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedUsage {
    pub period: Period,
    /// Unix second the period started.
    pub period_start: u64,
    pub used_bytes: u64,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Document {
    version: u32,
    paths: BTreeMap<String, SavedUsage>,
}

/// What [`load`] found.
#[derive(Debug, PartialEq, Eq)]
pub enum Loaded {
    /// No file yet.
    Missing,
    Usage(BTreeMap<String, SavedUsage>),
    /// The file did not parse; it was moved to `moved_to`.
    Corrupt {
        reason: String,
        moved_to: PathBuf,
    },
}

/// Adds `path` to an error's message.
fn naming(path: &Path) -> impl Fn(io::Error) -> io::Error + Copy + '_ {
    move |e| io::Error::new(e.kind(), format!("{}: {e}", path.display()))
}

/// How every file this writer writes begins.
const OWN_PREFIX: &str = "{\"version\"";

/// Reads the usage file at `path`.
pub fn load(path: &Path) -> io::Result<Loaded> {
    let annotate = naming(path);
    let foreign = |what: &str| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: {what}; not replaced", path.display()),
        )
    };
    match std::fs::metadata(path) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Loaded::Missing),
        Err(e) => return Err(annotate(e)),
        Ok(m) if !m.is_file() => return Err(foreign("not a regular file")),
        Ok(_) => {}
    }
    let text = match read_bounded(path) {
        Ok(Some(text)) => text,
        Ok(None) => return Err(foreign("not a braid usage file (not text, or over 1 MiB)")),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Loaded::Missing),
        Err(e) => return Err(annotate(e)),
    };
    let start = text.trim_start();
    if !start.is_empty() && !start.starts_with(OWN_PREFIX) {
        return Err(foreign(&format!(
            "not a braid usage file (it does not begin with {OWN_PREFIX})"
        )));
    }
    let reason = match serde_json::from_str::<Document>(&text) {
        Ok(doc) if doc.version == VERSION => return Ok(Loaded::Usage(doc.paths)),
        Ok(doc) => format!("version {} (this daemon writes {VERSION})", doc.version),
        Err(e) => e.to_string(),
    };
    let mut moved_to = path.as_os_str().to_owned();
    moved_to.push(".corrupt");
    let moved_to = PathBuf::from(moved_to);
    std::fs::rename(path, &moved_to)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    Ok(Loaded::Corrupt { reason, moved_to })
}

/// The file's text; `None` when it is not UTF-8 or larger than any usage
/// file this writer writes.
fn read_bounded(path: &Path) -> io::Result<Option<String>> {
    use std::io::Read as _;
    let mut text = String::new();
    let read = std::fs::File::open(path)?
        .take(MAX_FILE_BYTES + 1)
        .read_to_string(&mut text);
    match read {
        Ok(n) if n as u64 > MAX_FILE_BYTES => Ok(None),
        Ok(_) => Ok(Some(text)),
        Err(e) if e.kind() == io::ErrorKind::InvalidData => Ok(None),
        Err(e) => Err(e),
    }
}

/// Replaces the usage file at `path` with `usage`, atomically.
pub fn save(path: &Path, usage: &BTreeMap<String, SavedUsage>) -> io::Result<()> {
    let annotate = naming(path);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(annotate)?;
    }
    let doc = Document {
        version: VERSION,
        paths: usage.clone(),
    };
    let mut text = serde_json::to_string(&doc).expect("a map of plain numbers serializes");
    text.push('\n');
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let mut file = std::fs::File::create(&tmp).map_err(annotate)?;
    file.write_all(text.as_bytes()).map_err(annotate)?;
    file.sync_all().map_err(annotate)?;
    std::fs::rename(&tmp, path).map_err(annotate)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!(
            "braid-usage-file-test-{name}-{}",
            std::process::id()
        ));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    fn usage() -> BTreeMap<String, SavedUsage> {
        BTreeMap::from([(
            "lte".to_owned(),
            SavedUsage {
                period: Period::Month,
                period_start: 1_793_491_200,
                used_bytes: 123_456,
            },
        )])
    }

    #[test]
    fn saved_usage_loads_back_and_a_missing_file_is_no_usage() {
        let d = dir("roundtrip");
        let path = d.join("sub/client.usage.json");
        assert_eq!(load(&path).unwrap(), Loaded::Missing);
        save(&path, &usage()).unwrap();
        assert_eq!(load(&path).unwrap(), Loaded::Usage(usage()));
        // Saving again replaces it and leaves no temporary file behind.
        let mut more = usage();
        more.get_mut("lte").unwrap().used_bytes = 999;
        save(&path, &more).unwrap();
        assert_eq!(load(&path).unwrap(), Loaded::Usage(more));
        let names: Vec<_> = std::fs::read_dir(d.join("sub"))
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["client.usage.json"]);
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_corrupt_file_is_moved_aside_and_reported() {
        let d = dir("corrupt");
        std::fs::create_dir_all(&d).unwrap();
        let path = d.join("u.json");
        for garbage in [
            &b"{\"version\":1,\"paths\":{\"lte\":{\"period\":\"week\""[..],
            b"",
            b"{\"version\":7,\"paths\":{}}",
            b"{\"version\":1,\"paths\":{\"lte\":{\"period\":\"day\",\"period_start\":-1,\"used_bytes\":0}}}",
        ] {
            std::fs::write(&path, garbage).unwrap();
            match load(&path).unwrap() {
                Loaded::Corrupt { reason, moved_to } => {
                    assert!(!reason.is_empty());
                    assert_eq!(moved_to, d.join("u.json.corrupt"));
                    assert_eq!(std::fs::read(&moved_to).unwrap(), garbage);
                }
                other => panic!("{garbage:?} loaded as {other:?}"),
            }
            assert!(!path.exists());
        }
        std::fs::remove_dir_all(&d).unwrap();
    }

    /// A file braid did not write is never moved aside or replaced,
    /// whatever `usage_file` names: the daemon refuses to start instead.
    #[test]
    fn a_file_braid_did_not_write_is_refused_and_left_alone() {
        let d = dir("foreign");
        std::fs::create_dir_all(&d).unwrap();
        let path = d.join("client.toml");
        for foreign in [
            &b"[tunnel]\nname = \"braid0\"\n"[..],
            b"{ \"paths\": {} }",
            b"\xff\xfe not utf-8",
        ] {
            std::fs::write(&path, foreign).unwrap();
            let e = load(&path).unwrap_err();
            let text = e.to_string();
            assert!(text.contains("client.toml"), "{text}");
            assert!(text.contains("not replaced"), "{text}");
            assert_eq!(std::fs::read(&path).unwrap(), foreign);
            assert!(!d.join("client.toml.corrupt").exists());
        }
        // Not a regular file: a directory, a device.
        let e = load(&d).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        assert!(d.is_dir());
        let e = load(Path::new("/dev/null")).unwrap_err();
        assert!(e.to_string().contains("not a regular file"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn an_unwritable_place_is_an_error_naming_the_file() {
        let d = dir("unwritable");
        std::fs::create_dir_all(&d).unwrap();
        // A directory where the file's parent should be.
        let blocker = d.join("not-a-dir");
        std::fs::write(&blocker, b"").unwrap();
        let path = blocker.join("u.json");
        let e = save(&path, &usage()).unwrap_err();
        assert!(e.to_string().contains("not-a-dir"), "{e}");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
