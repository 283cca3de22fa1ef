//! The lab's configuration as `up` wrote it, kept in the state directory so
//! that every later command (and the emulator) works from the same facts.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};

use braid_sim::spec::PathSpec;
use braid_sim::trace::Trace;

use crate::layout::{LabLayout, PathLayout};
use crate::LabError;

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Namespaces {
    pub client: String,
    pub server: String,
    pub emulator: String,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct PathConfig {
    #[serde(flatten)]
    pub layout: PathLayout,
    /// The SPEC in force, as given to `up` or `set`.
    pub spec: String,
    /// The directory a relative trace file in `spec` is read from.
    pub cwd: PathBuf,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct LabConfig {
    pub name: String,
    pub namespaces: Namespaces,
    pub server_addr: Ipv4Addr,
    /// Seeds the emulator's loss generators.
    pub seed: u64,
    pub paths: Vec<PathConfig>,
}

impl LabConfig {
    pub fn load(layout: &LabLayout) -> Result<LabConfig, LabError> {
        let file = layout.config_file();
        let text = std::fs::read_to_string(&file)
            .map_err(LabError::io(format!("reading {}", file.display())))?;
        serde_json::from_str(&text).map_err(|e| LabError::Io {
            what: format!("parsing {}", file.display()),
            source: e.into(),
        })
    }

    pub fn save(&self, layout: &LabLayout) -> Result<(), LabError> {
        let file = layout.config_file();
        let text = serde_json::to_string_pretty(self).expect("config serializes");
        write_whole(&file, &text).map_err(LabError::io(format!("writing {}", file.display())))
    }

    pub fn path_names(&self) -> String {
        self.paths
            .iter()
            .map(|p| p.layout.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Writes `contents` to `path` under a temporary name (`path` + `.tmp`)
/// and renames it there, so that a reader of the lab's state (the config,
/// the emulator's pid file, which `braid lab up` polls) never sees the
/// file empty or half written.
pub(crate) fn write_whole(path: &Path, contents: &str) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    std::fs::write(&tmp, contents)?;
    std::fs::rename(&tmp, path)
}

/// Parses a SPEC, reading relative trace files from `cwd` (the directory of
/// the command that gave the SPEC, not the emulator's).
pub fn parse_spec(spec: &str, cwd: &Path) -> Result<PathSpec, LabError> {
    PathSpec::parse_with(spec, |p| Trace::load(&cwd.join(p))).map_err(|source| LabError::Spec {
        spec: spec.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_whole_write_replaces_the_file_and_leaves_no_temporary() {
        let dir = std::env::temp_dir().join(format!("braid-state-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("emulator.pid");
        std::fs::write(&path, "stale").unwrap();
        write_whole(&path, "4242").unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "4242");
        let names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["emulator.pid"], "no temporary file left");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
