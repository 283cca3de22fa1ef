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

    /// Writes atomically (temporary file, then rename), so that a reader
    /// never sees half a file.
    pub fn save(&self, layout: &LabLayout) -> Result<(), LabError> {
        let file = layout.config_file();
        let tmp = file.with_extension("json.tmp");
        let text = serde_json::to_string_pretty(self).expect("config serializes");
        std::fs::write(&tmp, text).map_err(LabError::io(format!("writing {}", tmp.display())))?;
        std::fs::rename(&tmp, &file).map_err(LabError::io(format!("writing {}", file.display())))
    }

    pub fn path_names(&self) -> String {
        self.paths
            .iter()
            .map(|p| p.layout.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Parses a SPEC, reading relative trace files from `cwd` (the directory of
/// the command that gave the SPEC, not the emulator's).
pub fn parse_spec(spec: &str, cwd: &Path) -> Result<PathSpec, LabError> {
    PathSpec::parse_with(spec, |p| Trace::load(&cwd.join(p))).map_err(|source| LabError::Spec {
        spec: spec.to_owned(),
        source,
    })
}
