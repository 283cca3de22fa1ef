//! `braid lab` as a user runs it: the real binary, its exit statuses, and the
//! emulator it re-executes itself as.

use std::path::Path;
use std::process::{Command, Output};

fn braid(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_braid"))
        .args(args)
        .output()
        .expect("running braid")
}

use braid_lab::root_guard::have_root_or_skip as have_root;

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn up_help_states_the_path_limit() {
    let out = braid(&["lab", "up", "--help"]);
    assert!(out.status.success());
    let help = String::from_utf8_lossy(&out.stdout);
    let limit = format!("at most {} in a lab", braid_lab::layout::MAX_PATHS);
    assert!(help.contains(&limit), "{help}");
}

#[test]
fn two_ups_of_one_name_at_once_one_wins_the_other_is_told_it_runs() {
    if !have_root() {
        return;
    }
    let _down = Down("cli-race");
    for round in 0..5 {
        let _ = braid(&["lab", "down", "--name", "cli-race"]);
        let start = || {
            Command::new(env!("CARGO_BIN_EXE_braid"))
                .args(["lab", "up", "--name", "cli-race", "--path", "10mbit,1ms"])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("running braid")
        };
        let (first, second) = (start(), start());
        let outs = [
            first.wait_with_output().unwrap(),
            second.wait_with_output().unwrap(),
        ];
        let winners = outs.iter().filter(|o| o.status.success()).count();
        assert_eq!(winners, 1, "round {round}: {outs:?}");
        let loser = outs.iter().find(|o| !o.status.success()).unwrap();
        assert_eq!(loser.status.code(), Some(2), "round {round}: {loser:?}");
        let message = stderr(loser);
        assert!(message.contains("is running"), "round {round}: {message}");
        assert!(!message.contains("crash"), "round {round}: {message}");
        let status = braid(&["lab", "status", "--name", "cli-race"]);
        assert!(
            status.status.success(),
            "round {round}: {}",
            stderr(&status)
        );
    }
}

#[test]
fn status_of_a_lab_whose_emulator_died_fails() {
    if !have_root() {
        return;
    }
    let _down = Down("cli-dead");
    let up = braid(&["lab", "up", "--name", "cli-dead", "--path", "10mbit,1ms"]);
    assert!(up.status.success(), "{}", stderr(&up));
    let status = braid(&["lab", "status", "--name", "cli-dead", "--json"]);
    assert!(status.status.success(), "{}", stderr(&status));
    let json: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    let pid = json["emulator"]["pid"].as_i64().unwrap() as libc::pid_t;
    // SAFETY: kill has no memory effects.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while Path::new(&format!("/proc/{pid}/cmdline")).exists()
        && std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| !c.is_empty())
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let status = braid(&["lab", "status", "--name", "cli-dead"]);
    assert_eq!(status.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&status.stdout).contains("NOT RUNNING"),
        "{status:?}"
    );
    let message = stderr(&status);
    assert!(
        message.starts_with("braid lab: ") && message.contains("not running"),
        "{message}"
    );
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
    // One that cannot be run gets a shell's statuses: 127 not found, 126
    // not executable.
    let missing = braid(&[
        "lab",
        "exec",
        "--name",
        "cli-life",
        "client",
        "/nonexistent",
    ]);
    assert_eq!(missing.status.code(), Some(127), "{missing:?}");
    assert!(stderr(&missing).starts_with("braid lab: /nonexistent: "));
    let plain = std::env::temp_dir().join(format!("braid-lab-cli-{}", std::process::id()));
    std::fs::write(&plain, "not a program").unwrap();
    let plain_str = plain.to_str().unwrap();
    let not_executable = braid(&["lab", "exec", "--name", "cli-life", "client", plain_str]);
    let _ = std::fs::remove_file(&plain);
    assert_eq!(
        not_executable.status.code(),
        Some(126),
        "{not_executable:?}"
    );
    assert!(stderr(&not_executable).starts_with("braid lab: "));

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
