//! Named network namespaces, kept the way `ip netns` keeps them (a bind mount
//! of the namespace on a file in `/run/netns`), so `ip netns` and every
//! other tool still find them; made with system calls, not by running `ip`.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::layout::{NETNS_ROOT, STATE_ROOT};
use crate::lock::flock;
use crate::LabError;

fn file_of(ns: &str) -> PathBuf {
    Path::new(NETNS_ROOT).join(ns)
}

fn check(ret: libc::c_int) -> io::Result<()> {
    if ret < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(())
    }
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))
}

pub fn exists(ns: &str) -> bool {
    file_of(ns).exists()
}

/// Makes `/run/netns` a shared mount point of its own, as `ip netns add`
/// does the first time it runs. Were the namespaces mounted on files of a
/// plain directory, a later `ip netns add` (a test making a namespace of
/// its own, a user) would bind-mount the directory over itself, stacking a
/// copy of every namespace mount on the original: deleting those
/// namespaces would then fail with EBUSY. Done once per boot; a lock keeps
/// two processes from both doing it (they would stack the same way).
fn prepare_root() -> io::Result<()> {
    std::fs::create_dir_all(NETNS_ROOT)?;
    std::fs::create_dir_all(STATE_ROOT)?;
    // A name no lab's lock can have: lab names hold no '.'.
    let lock = File::create(Path::new(STATE_ROOT).join(".netns-root.lock"))?;
    flock(&lock, libc::LOCK_EX)?;
    let root = c_path(Path::new(NETNS_ROOT))?;
    let mut bound = false;
    loop {
        // SAFETY: mount with valid NUL-terminated strings and no data.
        let shared = check(unsafe {
            libc::mount(
                c"".as_ptr(),
                root.as_ptr(),
                c"none".as_ptr(),
                libc::MS_SHARED | libc::MS_REC,
                std::ptr::null(),
            )
        });
        match shared {
            Ok(()) => return Ok(()),
            // EINVAL: not a mount point yet; make it one, once.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) && !bound => {
                // SAFETY: as above.
                check(unsafe {
                    libc::mount(
                        root.as_ptr(),
                        root.as_ptr(),
                        c"none".as_ptr(),
                        libc::MS_BIND | libc::MS_REC,
                        std::ptr::null(),
                    )
                })?;
                bound = true;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Creates namespace `ns`: a fresh network namespace made in a thread of
/// its own (network namespaces belong to threads), bind-mounted on its file.
pub fn add(ns: &str) -> Result<(), LabError> {
    let path = file_of(ns);
    let fail = |what: &str| LabError::io(format!("{what} namespace {ns}"));
    prepare_root().map_err(fail("preparing /run/netns for"))?;
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(fail("creating"))?;
    let target = c_path(&path).map_err(fail("creating"))?;
    let made = std::thread::scope(|s| {
        s.spawn(|| -> io::Result<()> {
            // SAFETY: unshare affects only this thread, which ends here;
            // the strings are valid and NUL-terminated.
            unsafe {
                check(libc::unshare(libc::CLONE_NEWNET))?;
                check(libc::mount(
                    c"/proc/thread-self/ns/net".as_ptr(),
                    target.as_ptr(),
                    c"none".as_ptr(),
                    libc::MS_BIND,
                    std::ptr::null(),
                ))
            }
        })
        .join()
        .unwrap_or_else(|_| Err(io::Error::other("namespace thread panicked")))
    });
    if let Err(e) = made {
        let _ = std::fs::remove_file(&path);
        return Err(fail("creating")(e));
    }
    Ok(())
}

/// The pids of every process in namespace `ns` (what `ip netns pids` lists):
/// those whose network namespace is the same inode as the namespace file.
fn pids(ns: &str) -> io::Result<Vec<libc::pid_t>> {
    let target = std::fs::metadata(file_of(ns))?;
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc")?.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
            continue;
        };
        // A process that exited meanwhile has no namespace to compare.
        if let Ok(meta) = std::fs::metadata(entry.path().join("ns/net")) {
            if meta.dev() == target.dev() && meta.ino() == target.ino() {
                found.push(pid);
            }
        }
    }
    Ok(found)
}

/// Kills every process in `ns`, then deletes it (with it go its links).
pub fn delete(ns: &str) -> Result<(), LabError> {
    let fail = |what: &str| LabError::io(format!("{what} namespace {ns}"));
    for pid in pids(ns).map_err(fail("listing the processes of"))? {
        // SAFETY: kill has no memory effects; a pid gone meanwhile is fine.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    let path = file_of(ns);
    let target = c_path(&path).map_err(fail("deleting"))?;
    // SAFETY: a valid NUL-terminated path. A file that was never mounted on
    // (a crash between creating and mounting it) only needs unlinking.
    let unmounted = check(unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) });
    if let Err(e) = unmounted {
        if e.raw_os_error() != Some(libc::EINVAL) {
            return Err(fail("unmounting")(e));
        }
    }
    std::fs::remove_file(&path).map_err(fail("deleting"))
}

/// Runs `f` on a thread of its own inside namespace `ns`. Sockets made there
/// stay in `ns` when handed back, whichever thread uses them later.
pub fn run_in<T: Send>(
    ns: &str,
    f: impl FnOnce() -> Result<T, LabError> + Send,
) -> Result<T, LabError> {
    let file = File::open(file_of(ns)).map_err(LabError::io(format!("opening namespace {ns}")))?;
    std::thread::scope(|s| {
        s.spawn(|| {
            // SAFETY: setns on a valid namespace descriptor moves only this
            // thread, which ends with the scope.
            check(unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) })
                .map_err(LabError::io(format!("entering namespace {ns}")))?;
            f()
        })
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// Makes `cmd` enter namespace `ns` between fork and exec.
pub fn enter_on_exec(cmd: &mut Command, ns: &str) -> Result<(), LabError> {
    let file = File::open(file_of(ns)).map_err(LabError::io(format!("opening namespace {ns}")))?;
    // SAFETY: setns is a plain system call, safe between fork and exec; the
    // descriptor stays open in the closure until then.
    unsafe {
        cmd.pre_exec(move || check(libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET)));
    }
    Ok(())
}

/// Writes `value` to the sysctl at `key` (`net.ipv4.conf.all.rp_filter`)
/// for the namespace of the calling thread: the kernel resolves a network
/// sysctl for the namespace of whoever opens its file.
pub fn sysctl(key: &str, value: &str) -> Result<(), LabError> {
    let path = Path::new("/proc/sys").join(key.replace('.', "/"));
    std::fs::write(&path, value).map_err(LabError::io(format!("setting {key}={value}")))
}
