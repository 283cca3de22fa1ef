//! Config errors as one line: `FILE:LINE: field `NAME`: what is wrong`.

use std::fmt;
use std::ops::Range;
use std::path::{Path, PathBuf};

use super::Invalid;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub file: PathBuf,
    /// 1-based; none when the file could not be read.
    pub line: Option<usize>,
    pub field: Option<String>,
    pub message: String,
}

impl std::error::Error for ConfigError {}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        if let Some(field) = &self.field {
            write!(f, ": field `{field}`")?;
        }
        write!(f, ": {}", self.message)
    }
}

impl ConfigError {
    pub fn read(file: &Path, e: &std::io::Error) -> ConfigError {
        ConfigError {
            file: file.to_owned(),
            line: None,
            field: None,
            message: format!("cannot read: {e}"),
        }
    }

    pub fn from_toml(file: &Path, text: &str, e: &toml::de::Error) -> ConfigError {
        let mut message = e.message().trim_end().replace('\n', "; ");
        let span = e.span();
        // A `[name]` table where an array was expected: the field is the
        // table, written as one table instead of an array of tables.
        let table = span.as_ref().and_then(|s| table_header(text, s.start));
        if let Some(table) = table
            .as_ref()
            .filter(|_| message.contains("expected a sequence"))
        {
            message += &format!(": write [[{table}]] (an array of tables)");
        }
        // toml names the field itself for unknown and missing fields; for a
        // value it rejected, the field is the key the value belongs to.
        let field = if message.contains("field `") {
            None
        } else {
            table.or_else(|| span.as_ref().and_then(|s| key_before(text, s.start)))
        };
        ConfigError {
            file: file.to_owned(),
            line: span.map(|s| line_of(text.as_bytes(), s.start)),
            field,
            message,
        }
    }

    pub fn invalid(file: &Path, text: &str, invalid: Invalid) -> ConfigError {
        ConfigError {
            file: file.to_owned(),
            line: Some(line_of(text.as_bytes(), invalid.span.start)),
            field: Some(invalid.field),
            message: invalid.message,
        }
    }
}

/// The 1-based line holding byte `offset`.
pub(super) fn line_of(text: &[u8], offset: usize) -> usize {
    let offset = offset.min(text.len());
    text[..offset].iter().filter(|&&b| b == b'\n').count() + 1
}

/// The name of the `[name]` table header (not `[[name]]`) at byte
/// `offset`, the start of its line (not an array value).
fn table_header(text: &str, offset: usize) -> Option<String> {
    let before = text.get(..offset)?;
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    if !before[line_start..].trim().is_empty() {
        return None;
    }
    let rest = &text[offset..];
    let inside = rest.strip_prefix('[').filter(|r| !r.starts_with('['))?;
    let (name, _) = inside.split_once(']')?;
    Some(name.trim().to_owned())
}

/// The key of the `key = value` line holding byte `offset`, when the
/// offset is in its value (for a value inside an array on later lines,
/// the nearest such line above).
fn key_before(text: &str, offset: usize) -> Option<String> {
    let offset = offset.min(text.len());
    let head = &text[..floor_char_boundary(text, offset)];
    for line in head.rsplit('\n') {
        let line = line.trim_start();
        if line.starts_with('[') || line.starts_with('#') {
            return None;
        }
        if let Some((key, _)) = line.split_once('=') {
            let key = key.trim().trim_matches('"');
            if !key.is_empty() && !key.contains(char::is_whitespace) {
                return Some(key.to_owned());
            }
        }
    }
    None
}

fn floor_char_boundary(text: &str, mut offset: usize) -> usize {
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    offset
}

impl Invalid {
    pub fn new(span: Range<usize>, field: &str, message: impl Into<String>) -> Invalid {
        Invalid {
            span,
            field: field.to_owned(),
            message: message.into(),
        }
    }
}
