//! Thin wrappers over iproute2 and ethtool, the standard tools for
//! namespaces and links: their error messages reach the user unchanged.

use std::path::Path;
use std::process::Command;

use crate::layout::NETNS_ROOT;
use crate::LabError;

/// Runs `program args...`; fails with its stderr.
pub fn run(program: &str, args: &[&str]) -> Result<String, LabError> {
    let cmd_line = || format!("{program} {}", args.join(" "));
    let out = Command::new(program)
        .args(args)
        .output()
        .map_err(|e| LabError::Command {
            cmd: cmd_line(),
            stderr: e.to_string(),
        })?;
    if !out.status.success() {
        return Err(LabError::Command {
            cmd: cmd_line(),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// `ip -n NS args...`
pub fn ip_in(ns: &str, args: &[&str]) -> Result<(), LabError> {
    let mut all = vec!["-n", ns];
    all.extend_from_slice(args);
    run("ip", &all).map(drop)
}

/// Runs `program args...` inside namespace `ns`.
pub fn exec_in(ns: &str, program: &str, args: &[&str]) -> Result<(), LabError> {
    let mut all = vec!["netns", "exec", ns, program];
    all.extend_from_slice(args);
    run("ip", &all).map(drop)
}

pub fn exists(ns: &str) -> bool {
    Path::new(NETNS_ROOT).join(ns).exists()
}

pub fn add(ns: &str) -> Result<(), LabError> {
    run("ip", &["netns", "add", ns]).map(drop)
}

/// Kills every process in `ns`, then deletes it (with it go its links).
pub fn delete(ns: &str) -> Result<(), LabError> {
    let pids = run("ip", &["netns", "pids", ns])?;
    for pid in pids
        .split_whitespace()
        .filter_map(|p| p.parse::<libc::pid_t>().ok())
    {
        // SAFETY: kill has no memory effects; a pid gone meanwhile is fine.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
    run("ip", &["netns", "del", ns]).map(drop)
}
