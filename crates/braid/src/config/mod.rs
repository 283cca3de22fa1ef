//! The daemons' TOML configuration: `braid client --config client.toml`
//! and `braid server --config server.toml`.
//!
//! Unknown fields are errors, and every error names the file, the line and
//! the field, whether toml found it (syntax, types, values that failed to
//! parse) or the checks after it (a path with both an interface and a
//! source address, overlapping peer addresses).

pub mod client;
mod error;
pub mod server;
mod server_addr;
pub mod tunnel;
pub(crate) mod values;

use std::path::Path;

use serde::de::DeserializeOwned;

pub use error::ConfigError;
pub use server_addr::ServerAddr;
pub use values::{DataCap, Period, Role, TunnelAddr};

/// A config whose fields toml has read, and that checks what toml cannot.
pub trait Validate {
    /// Checks rules across fields; `Err((span, field, message))` where the
    /// span is the byte range in the file that breaks the rule.
    fn validate(&self) -> Result<(), Invalid>;
}

/// A rule a config breaks: where (a byte range in the file), which field,
/// and what is wrong.
#[derive(Debug)]
pub struct Invalid {
    pub span: std::ops::Range<usize>,
    pub field: String,
    pub message: String,
}

/// The configured control socket, or the daemon's default.
fn control_socket_or(
    socket: Option<&toml::Spanned<std::path::PathBuf>>,
    default: &str,
) -> std::path::PathBuf {
    socket.map_or_else(|| default.into(), |s| s.get_ref().clone())
}

/// A control socket must name a file: `braid status` finds the daemon
/// there.
fn check_file_path(
    field: &str,
    file: Option<&toml::Spanned<std::path::PathBuf>>,
) -> Result<(), Invalid> {
    let Some(file) = file else {
        return Ok(());
    };
    let path = file.get_ref();
    if path.file_name().is_none() || path.as_os_str().to_string_lossy().ends_with('/') {
        return Err(Invalid::new(
            file.span(),
            field,
            format!("{:?} names no file: give the path of a file", path),
        ));
    }
    Ok(())
}

/// The first of `items` with the same key as an earlier one: two paths or
/// peers of one name, a prefix listed twice.
fn repeated<T, K: PartialEq>(
    items: impl IntoIterator<Item = T>,
    key: impl Fn(&T) -> K,
) -> Option<T> {
    let mut seen = Vec::new();
    for item in items {
        let k = key(&item);
        if seen.contains(&k) {
            return Some(item);
        }
        seen.push(k);
    }
    None
}

/// Reads and checks the config in `path`.
pub fn load<T: DeserializeOwned + Validate>(path: &Path) -> Result<T, ConfigError> {
    parse(path, &read_bounded(path)?)
}

/// `FILE:LINE` for byte `offset` of the config at `file`, read again: for
/// what is found wrong only once a daemon starts (an interface that does
/// not exist), after the text is gone. `FILE` alone if it cannot be read.
pub fn place(file: &Path, offset: usize) -> String {
    match read_bounded(file) {
        Ok(text) => format!(
            "{}:{}",
            file.display(),
            error::line_of(text.as_bytes(), offset)
        ),
        Err(_) => file.display().to_string(),
    }
}

/// Largest config file read: a config with every path a session takes
/// and many peers is some kilobytes; `--config /dev/zero` read until
/// memory ran out.
const MAX_CONFIG_BYTES: u64 = 1 << 20;

fn read_bounded(path: &Path) -> Result<String, ConfigError> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_CONFIG_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| ConfigError::read(path, &e))?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        let e = std::io::Error::other(format!("larger than {} MiB", MAX_CONFIG_BYTES >> 20));
        return Err(ConfigError::read(path, &e));
    }
    String::from_utf8(bytes).map_err(|e| {
        let line = error::line_of(e.as_bytes(), e.utf8_error().valid_up_to());
        ConfigError::read(
            path,
            &std::io::Error::other(format!("line {line} is not valid UTF-8")),
        )
    })
}

/// Parses and checks `text`, read from `path` (named in errors).
pub fn parse<T: DeserializeOwned + Validate>(path: &Path, text: &str) -> Result<T, ConfigError> {
    let config: T = toml::from_str(text).map_err(|e| ConfigError::from_toml(path, text, &e))?;
    config
        .validate()
        .map_err(|invalid| ConfigError::invalid(path, text, invalid))?;
    Ok(config)
}

#[cfg(test)]
mod tests;
