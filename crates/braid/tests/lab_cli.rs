//! `braid lab` as a user runs it: the real binary, its exit statuses, and the
//! emulator it re-executes itself as.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Command, Output};

fn braid(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_braid"))
        .args(args)
        .output()
        .expect("running braid")
}

fn have_root() -> bool {
    // /proc/self belongs to the effective user of this process.
    let euid = std::fs::metadata("/proc/self")
        .map(|m| m.uid())
        .unwrap_or(u32::MAX);
    if euid == 0 {
        return true;
    }
    if std::env::var_os("CI").is_some() {
        panic!("lab CLI tests need root to create network namespaces, and CI must run them");
    }
    eprintln!("SKIPPED: lab CLI tests need root to create network namespaces");
    false
}

/// Takes the lab down when the test ends, pass or fail.
struct Down(&'static str);

impl Drop for Down {
    fn drop(&mut self) {
        let _ = braid(&["lab", "down", "--name", self.0]);
    }
}

#[test]
fn bad_spec_exits_2_with_a_message_and_creates_nothing() {
    if !have_root() {
        return;
    }
    let _down = Down("cli-bad");
    let out = braid(&[
        "lab",
        "up",
        "--name",
        "cli-bad",
        "--path",
        "10mbit,5ms",
        "--path",
        "10mbit,sometimes",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("sometimes"), "{stderr}");
    assert!(!Path::new("/run/netns/braid-cli-bad-client").exists());
    assert!(!Path::new("/run/braid-lab/cli-bad").exists());
}

#[test]
fn up_exec_status_json_and_down() {
    if !have_root() {
        return;
    }
    let _down = Down("cli-life");
    let up = braid(&[
        "lab",
        "up",
        "--name",
        "cli-life",
        "--path",
        "20mbit,5ms,name=dsl",
        "--path",
        "10mbit,15ms",
    ]);
    assert!(
        up.status.success(),
        "{}",
        String::from_utf8_lossy(&up.stderr)
    );
    let again = braid(&["lab", "up", "--name", "cli-life", "--path", "20mbit,5ms"]);
    assert_eq!(again.status.code(), Some(2));

    let ping = braid(&[
        "lab",
        "exec",
        "--name",
        "cli-life",
        "client",
        "--",
        "ping",
        "-c",
        "2",
        "-I",
        "p2",
        "198.19.0.1",
    ]);
    assert!(
        ping.status.success(),
        "{}",
        String::from_utf8_lossy(&ping.stdout)
    );
    // A command's own exit status comes back through exec.
    let failing = braid(&["lab", "exec", "--name", "cli-life", "server", "false"]);
    assert_eq!(failing.status.code(), Some(1));

    let status = braid(&["lab", "status", "--name", "cli-life", "--json"]);
    assert!(status.status.success());
    let json: serde_json::Value = serde_json::from_slice(&status.stdout).expect("status JSON");
    assert_eq!(json["server_addr"], "198.19.0.1");
    assert_eq!(json["paths"][0]["name"], "dsl");
    assert_eq!(json["paths"][1]["client_addr"], "198.18.2.2");
    assert_eq!(json["paths"][1]["down"]["settings"]["delay_ms"], 15.0);
    assert!(
        json["paths"][1]["up"]["counters"]["forwarded_packets"]
            .as_u64()
            .unwrap()
            >= 2
    );

    let set = braid(&["lab", "set", "--name", "cli-life", "dsl", "20mbit,bad"]);
    assert_eq!(set.status.code(), Some(2));

    let down = braid(&["lab", "down", "--name", "cli-life"]);
    assert!(down.status.success());
    assert!(!Path::new("/run/netns/braid-cli-life-emu").exists());
    let status = braid(&["lab", "status", "--name", "cli-life"]);
    assert_eq!(status.status.code(), Some(2));
}
