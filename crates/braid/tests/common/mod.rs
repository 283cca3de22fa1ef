//! What the daemon tests share: running the braid binary, keys, stopping a
//! daemon.

#![allow(dead_code, reason = "each test file uses a part of it")]

use std::io::Write;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

pub fn braid() -> Command {
    Command::new(env!("CARGO_BIN_EXE_braid"))
}

pub fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("run a command")
}

/// A new private key from `braid genkey`.
pub fn genkey() -> String {
    let out = run(braid().arg("genkey"));
    assert!(out.status.success(), "genkey: {out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// The public key of `private`, from `braid pubkey`.
pub fn pubkey(private: &str) -> String {
    let mut child = braid()
        .arg("pubkey")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(private.as_bytes()).unwrap();
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "pubkey: {out:?}");
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// Sends `signal`, then SIGKILL if the child has not ended within 5 s (a
/// daemon removing its routes or tables on a loaded machine takes a while).
pub fn stop_with(mut child: Child, signal: i32) {
    // SAFETY: signalling a child this test started, by its pid.
    unsafe {
        libc::kill(child.id() as i32, signal);
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// SIGTERM, then SIGKILL after 5 s.
pub fn stop(child: Child) {
    stop_with(child, libc::SIGTERM);
}

/// Whether a daemon accepts connections on its control socket. The file
/// exists from `bind`, a moment before `listen`, and a connection in between
/// is refused: a test that only checked for the file failed once on a
/// loaded machine.
pub fn accepts(socket: &std::path::Path) -> bool {
    std::os::unix::net::UnixStream::connect(socket).is_ok()
}
