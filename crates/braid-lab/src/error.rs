//! Everything that can go wrong in the lab, split by whose fault it is: bad
//! input (exit status 2) or a failure at run time (exit status 1).

use braid_sim::spec::SpecError;

#[derive(Debug, thiserror::Error)]
pub enum LabError {
    #[error("braid lab needs root (to create network namespaces); run it with sudo")]
    NotRoot,
    #[error("bad lab name {0:?}: use 1-15 letters, digits, '-' or '_'")]
    BadName(String),
    #[error("bad path spec {spec:?}: {source}")]
    Spec { spec: String, source: SpecError },
    #[error("bad path spec {spec:?}: {why}")]
    DirectSpec { spec: String, why: String },
    /// `lab set` cannot make this change while the lab runs.
    #[error("path {path:?}: {why}")]
    SetRefused { path: String, why: String },
    #[error("no --path given: a lab needs at least one path")]
    NoPaths,
    #[error("at most {max} paths per lab, {given} given")]
    TooManyPaths { max: usize, given: usize },
    #[error("path name {0:?} used twice")]
    DuplicatePath(String),
    #[error("lab {0:?} is running (or another `braid lab` is bringing it up or down); stop it first with `braid lab down --name {0}`")]
    AlreadyRunning(String),
    #[error("no command given to run")]
    NoCommand,
    #[error("lab {name:?} was left behind by a crash ({what}); remove it with `braid lab down --name {name}`")]
    Leftover { name: String, what: String },
    #[error("no lab named {0:?} is up (start one with `braid lab up`)")]
    NoSuchLab(String),
    #[error("lab has no path named {name:?} (paths: {known})")]
    NoSuchPath { name: String, known: String },
    #[error("the emulator of lab {0:?} is not running; recreate the lab with `braid lab down` and `braid lab up`")]
    EmulatorNotRunning(String),
    #[error("`{cmd}` failed: {stderr}")]
    Command { cmd: String, stderr: String },
    #[error("{what}: {source}")]
    Io {
        what: String,
        source: std::io::Error,
    },
    #[error("emulator failed to start: {0}")]
    EmulatorStart(String),
    #[error("emulator control: {0}")]
    Control(String),
    #[error("the lab's NAT (--nat): {0}")]
    Nat(braid_nft::NftError),
}

impl LabError {
    pub fn io(what: impl Into<String>) -> impl FnOnce(std::io::Error) -> LabError {
        let what = what.into();
        move |source| LabError::Io { what, source }
    }

    /// 2 for input the user can fix, 1 for failures while running.
    pub fn exit_code(&self) -> u8 {
        match self {
            LabError::NotRoot
            | LabError::BadName(_)
            | LabError::Spec { .. }
            | LabError::DirectSpec { .. }
            | LabError::SetRefused { .. }
            | LabError::NoPaths
            | LabError::TooManyPaths { .. }
            | LabError::DuplicatePath(_)
            | LabError::NoCommand
            | LabError::AlreadyRunning(_)
            | LabError::Leftover { .. }
            | LabError::NoSuchLab(_)
            | LabError::NoSuchPath { .. } => 2,
            LabError::EmulatorNotRunning(_)
            | LabError::Command { .. }
            | LabError::Io { .. }
            | LabError::EmulatorStart(_)
            | LabError::Control(_)
            | LabError::Nat(_) => 1,
        }
    }
}
