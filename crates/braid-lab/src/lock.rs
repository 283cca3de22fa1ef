//! One `up` or `down` of a lab at a time: an exclusive `flock` on
//! `/run/braid-lab/NAME.lock`. It lives as long as the lab: `down` (and an
//! `up` that failed) removes it while holding it. A process that was
//! waiting on the removed file then holds a lock on a file no longer
//! there, so every taker checks, once it holds the lock, that the path
//! still names its file, and tries again if not; otherwise two could hold
//! "the" lock at once. A lab name cannot contain the '.' that keeps the
//! file apart from the labs' state directories.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use crate::layout::{LabLayout, STATE_ROOT};
use crate::LabError;

/// Held until dropped (closing the file releases the lock).
pub struct LabLock {
    _file: File,
    path: PathBuf,
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

/// Whether `path` still names the file `file` has open (see the module
/// comment).
fn still_there(file: &File, path: &std::path::Path) -> io::Result<bool> {
    let held = file.metadata()?;
    match std::fs::metadata(path) {
        Ok(now) => Ok(now.dev() == held.dev() && now.ino() == held.ino()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

impl LabLock {
    /// Takes the lock, or fails at once with `AlreadyRunning` while another
    /// process holds it (it is bringing the lab up or taking it down).
    pub fn try_take(layout: &LabLayout) -> Result<LabLock, LabError> {
        LabLock::lock(layout, libc::LOCK_EX | libc::LOCK_NB)
    }

    /// Takes the lock, waiting for whoever holds it.
    pub fn take(layout: &LabLayout) -> Result<LabLock, LabError> {
        LabLock::lock(layout, libc::LOCK_EX)
    }

    fn lock(layout: &LabLayout, operation: libc::c_int) -> Result<LabLock, LabError> {
        let path = layout.lock_file();
        let failed = || LabError::io(format!("locking {}", path.display()));
        loop {
            let file = open(layout)?;
            match flock(&file, operation) {
                Ok(()) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    return Err(LabError::AlreadyRunning(layout.name.clone()))
                }
                Err(e) => return Err(failed()(e)),
            }
            // Removed by the holder we waited for: lock the new one.
            if still_there(&file, &path).map_err(failed())? {
                return Ok(LabLock { _file: file, path });
            }
        }
    }

    /// Removes the lock file (the lab is gone), then releases the lock.
    pub fn remove(self) -> Result<(), LabError> {
        match std::fs::remove_file(&self.path) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                Err(LabError::io(format!("removing {}", self.path.display()))(e))
            }
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A waiter woken by a holder that removed the file must not come back
    /// holding the removed file: a newcomer would lock the path's new file,
    /// and both would hold "the" lock.
    #[test]
    fn a_waiter_woken_by_a_removal_holds_the_paths_new_file() {
        if !crate::root_guard::have_root_or_skip() {
            return; // /run/braid-lab is root's
        }
        let layout = LabLayout::new("t-lockfile").unwrap();
        let first = LabLock::take(&layout).unwrap();
        let waiter = {
            let layout = layout.clone();
            std::thread::spawn(move || LabLock::take(&layout).unwrap())
        };
        // Let the waiter open the file and block on it.
        std::thread::sleep(std::time::Duration::from_millis(200));
        first.remove().unwrap();
        let second = waiter.join().unwrap();
        assert!(matches!(
            LabLock::try_take(&layout),
            Err(LabError::AlreadyRunning(_))
        ));
        assert!(still_there(&second._file, &second.path).unwrap());
        second.remove().unwrap();
        assert!(!layout.lock_file().exists());
    }
}
