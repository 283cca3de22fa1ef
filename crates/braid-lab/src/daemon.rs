//! Starts the emulator as a daemon: its own session, reparented to init by a
//! double fork (so no caller is left to reap it, and a killed emulator leaves
//! no zombie behind), output to a log file in the state directory.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::LabError;

/// How to start the emulator: `program args... --state DIR`.
#[derive(Debug, Clone)]
pub struct EmulatorProgram {
    pub program: PathBuf,
    pub args: Vec<OsString>,
}

pub fn spawn(program: &EmulatorProgram, state_dir: &Path, log: &Path) -> Result<(), LabError> {
    let log_file =
        std::fs::File::create(log).map_err(LabError::io(format!("creating {}", log.display())))?;
    let log_err = log_file.try_clone().map_err(LabError::io("log file"))?;
    let mut cmd = Command::new(&program.program);
    cmd.args(&program.args)
        .arg("--state")
        .arg(state_dir)
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(log_file)
        .stderr(log_err);
    // SAFETY: only async-signal-safe calls (setsid, fork, _exit) between
    // fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(std::io::Error::last_os_error());
            }
            match libc::fork() {
                -1 => Err(std::io::Error::last_os_error()),
                0 => Ok(()),
                _ => libc::_exit(0),
            }
        });
    }
    let status = cmd
        .status()
        .map_err(|e| LabError::EmulatorStart(format!("{}: {e}", program.program.display())))?;
    if !status.success() {
        return Err(LabError::EmulatorStart(format!(
            "launcher exited with {status}"
        )));
    }
    Ok(())
}
