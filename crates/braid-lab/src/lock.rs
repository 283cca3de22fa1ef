//! One `up` or `down` of a lab at a time: an exclusive `flock` on
//! `/run/braid-lab/NAME.lock`. The file outlives the lab (removing it while
//! another process waits on it would let two hold "the" lock at once); it
//! is empty, on tmpfs, and a lab name cannot contain the '.' that keeps it
//! apart from the labs' state directories.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

use crate::layout::{LabLayout, STATE_ROOT};
use crate::LabError;

/// Held until dropped (closing the file releases the lock).
pub struct LabLock {
    _file: File,
}

fn open(layout: &LabLayout) -> Result<File, LabError> {
    std::fs::create_dir_all(STATE_ROOT).map_err(LabError::io(format!("creating {STATE_ROOT}")))?;
    let path = layout.lock_file();
    std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(LabError::io(format!("opening {}", path.display())))
}

pub(crate) fn flock(file: &File, operation: libc::c_int) -> io::Result<()> {
    loop {
        // SAFETY: flock on a descriptor we own.
        if unsafe { libc::flock(file.as_raw_fd(), operation) } == 0 {
            return Ok(());
        }
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
}

impl LabLock {
    /// Takes the lock, or fails at once with `AlreadyRunning` while another
    /// process holds it (it is bringing the lab up or taking it down).
    pub fn try_take(layout: &LabLayout) -> Result<LabLock, LabError> {
        let file = open(layout)?;
        match flock(&file, libc::LOCK_EX | libc::LOCK_NB) {
            Ok(()) => Ok(LabLock { _file: file }),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                Err(LabError::AlreadyRunning(layout.name.clone()))
            }
            Err(e) => Err(LabError::io(format!(
                "locking {}",
                layout.lock_file().display()
            ))(e)),
        }
    }

    /// Takes the lock, waiting for whoever holds it.
    pub fn take(layout: &LabLayout) -> Result<LabLock, LabError> {
        let file = open(layout)?;
        flock(&file, libc::LOCK_EX).map_err(LabError::io(format!(
            "locking {}",
            layout.lock_file().display()
        )))?;
        Ok(LabLock { _file: file })
    }
}
