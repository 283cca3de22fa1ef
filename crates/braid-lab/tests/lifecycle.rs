//! `up`, `set`, `status` and `down` as a script sees them, including crashes
//! and bad input.

mod common;

use std::path::Path;

use std::time::Duration;

use braid_lab::{LabError, Side};
use common::{assert_held, have_root, options, ping_rtts, serialization, Lab};

fn nothing_left(name: &str) {
    for suffix in ["client", "server", "emu"] {
        let ns = format!("/run/netns/braid-{name}-{suffix}");
        assert!(!Path::new(&ns).exists(), "{ns} left behind");
    }
    let state = format!("/run/braid-lab/{name}");
    assert!(!Path::new(&state).exists(), "{state} left behind");
    let lock = format!("/run/braid-lab/{name}.lock");
    assert!(!Path::new(&lock).exists(), "{lock} left behind");
}

/// Whether `pid` is alive: a zombie waiting for init to reap it is not.
fn running(pid: libc::pid_t) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => stat
            .rsplit(") ")
            .next()
            .is_some_and(|rest| !rest.starts_with('Z')),
        Err(_) => false,
    }
}

#[test]
fn down_removes_everything_after_the_emulator_was_killed() {
    if !have_root() {
        return;
    }
    let lab = Lab::up("t-kill", &["10mbit,1ms", "10mbit,2ms"]);
    let emulator = braid_lab::emulator_pid(&braid_lab::layout::LabLayout::new(&lab.name).unwrap())
        .expect("emulator running");
    // A process the user started in the lab must go too.
    let argv = vec!["sleep".to_string(), "600".to_string()];
    let mut sleeper = braid_lab::exec_command(&lab.name, Side::Server, &argv)
        .unwrap()
        .spawn()
        .unwrap();
    // SAFETY: kill has no memory effects.
    assert_eq!(unsafe { libc::kill(emulator, libc::SIGKILL) }, 0);
    std::thread::sleep(std::time::Duration::from_millis(100));
    assert!(matches!(braid_lab::status(&lab.name), Ok(s) if s.emulator.is_none()));
    let removed = braid_lab::down(&lab.name).expect("down");
    assert_eq!(removed.len(), 4, "{removed:?}"); // three namespaces and the state
    nothing_left(&lab.name);
    let status = sleeper.wait().unwrap();
    assert!(!status.success(), "sleep in the lab survived down");
    assert!(!running(emulator), "emulator {emulator} still running");
    // A second down finds nothing and says so.
    assert!(braid_lab::down(&lab.name).unwrap().is_empty());
}

/// Three `down`s of one lab at once: each waits for the one before,
/// which removes the lock file it holds; one takes the lab down, the others
/// find nothing, and no lock file is left (a waiter that locked the removed
/// file locks the path's new one instead).
#[test]
fn downs_at_once_take_the_lab_down_once_and_leave_no_lock_file() {
    if !have_root() {
        return;
    }
    let lab = Lab::up("t-downs", &["10mbit,1ms"]);
    let lock = format!("/run/braid-lab/{}.lock", lab.name);
    assert!(
        Path::new(&lock).exists(),
        "a running lab keeps its lock file"
    );
    let downs: Vec<_> = (0..3)
        .map(|_| {
            let name = lab.name.clone();
            std::thread::spawn(move || braid_lab::down(&name).expect("down"))
        })
        .collect();
    let removed: Vec<Vec<String>> = downs.into_iter().map(|d| d.join().unwrap()).collect();
    assert_eq!(
        removed.iter().filter(|r| !r.is_empty()).count(),
        1,
        "{removed:?}"
    );
    nothing_left(&lab.name);
}

#[test]
fn bad_input_exits_2_and_creates_nothing() {
    if !have_root() {
        return;
    }
    let name = "t-bad";
    let _ = braid_lab::down(name);
    type IsExpected = fn(&LabError) -> bool;
    let cases: [(&[&str], IsExpected); 5] = [
        (&["10mbit"], |e| matches!(e, LabError::Spec { .. })),
        (&["fast,10ms"], |e| matches!(e, LabError::Spec { .. })),
        (&["trace=no-such-trace-file,10ms"], |e| {
            matches!(e, LabError::Spec { .. })
        }),
        (&["1mbit,1ms,name=a", "2mbit,1ms,name=a"], |e| {
            matches!(e, LabError::DuplicatePath(_))
        }),
        (&[], |e| matches!(e, LabError::NoPaths)),
    ];
    for (specs, expected) in cases {
        let err = braid_lab::up(&options(name, specs)).expect_err("bad input accepted");
        assert!(expected(&err), "{specs:?}: {err}");
        assert_eq!(err.exit_code(), 2, "{specs:?}: {err}");
        nothing_left(name);
    }
    let err = braid_lab::up(&options("bad/name", &["1mbit,1ms"])).unwrap_err();
    assert_eq!(err.exit_code(), 2);
}

#[test]
fn up_refuses_a_running_lab_and_a_crash_leftover() {
    if !have_root() {
        return;
    }
    let lab = Lab::up("t-twice", &["10mbit,1ms"]);
    let err = braid_lab::up(&options(&lab.name, &["10mbit,1ms"])).unwrap_err();
    assert!(matches!(err, LabError::AlreadyRunning(_)), "{err}");
    assert_eq!(err.exit_code(), 2);
    // The running lab is untouched.
    let out = lab.run(
        Side::Client,
        &["ping", "-c", "1", "-W", "2", &lab.server_addr()],
    );
    assert!(out.status.success());

    // A state directory left over from a crash: refused, and left for `down`.
    let name = "t-leftover";
    let _ = braid_lab::down(name);
    let state = format!("/run/braid-lab/{name}");
    std::fs::create_dir_all(&state).unwrap();
    let err = braid_lab::up(&options(name, &["10mbit,1ms"])).unwrap_err();
    assert!(matches!(err, LabError::Leftover { .. }), "{err}");
    assert_eq!(err.exit_code(), 2);
    assert!(!Path::new(&format!("/run/netns/braid-{name}-client")).exists());
    assert_eq!(
        braid_lab::down(name).unwrap(),
        [format!("state directory {state}")]
    );
    nothing_left(name);
}

#[test]
fn set_changes_a_live_path_and_status_shows_it() {
    if !have_root() {
        return;
    }
    let lab = Lab::up("t-set", &["10mbit,5ms,name=dsl", "10mbit,10ms,name=lte"]);
    let server = lab.server_addr();
    let rtt = |iface: &str| {
        let out = lab.run(
            Side::Client,
            &[
                "ping", "-n", "-c", "3", "-i", "0.1", "-W", "1", "-I", iface, &server,
            ],
        );
        ping_rtts(&out)
    };
    // The emulator's own record of the path, since its SPEC took effect, and
    // ping's round trips from below (they also hold the stacks' time).
    let check = |delay: Duration| {
        let rtts = rtt("lte");
        assert_eq!(rtts.len(), 3, "{rtts:?}");
        // 84 IP bytes of echo at 10 Mbit/s each way; ping rounds to 1 µs.
        let tx = serialization(84, 10_000_000);
        let floor_ms = (2 * (delay + tx)).as_secs_f64() * 1e3 - 0.001;
        assert!(rtts.iter().all(|r| *r >= floor_ms), "{rtts:?}");
        let status = braid_lab::status(&lab.name).unwrap();
        let lte = &status.paths[1];
        assert_held("lte up", &lte.up.as_ref().unwrap().held, 3, delay, tx);
        assert_held("lte down", &lte.down.as_ref().unwrap().held, 3, delay, tx);
    };
    check(Duration::from_millis(10));
    braid_lab::set(&lab.name, "lte", "10mbit,30ms").unwrap();
    check(Duration::from_millis(30));
    // Cutting the link: nothing gets through.
    braid_lab::set(&lab.name, "lte", "10mbit,30ms,loss=100%").unwrap();
    assert!(rtt("lte").is_empty());
    let err = braid_lab::set(&lab.name, "wifi", "1mbit,1ms").unwrap_err();
    assert!(matches!(err, LabError::NoSuchPath { .. }));
    assert_eq!(err.exit_code(), 2);
    assert_eq!(
        braid_lab::set(&lab.name, "lte", "1mbit")
            .unwrap_err()
            .exit_code(),
        2
    );

    let status = braid_lab::status(&lab.name).unwrap();
    let json = serde_json::to_value(&status).unwrap();
    assert_eq!(json["server_addr"], "198.19.0.1");
    let lte = &json["paths"][1];
    assert_eq!(lte["name"], "lte");
    assert_eq!(lte["client_iface"], "lte");
    assert_eq!(lte["client_addr"], "198.18.2.2");
    assert_eq!(lte["spec"], "10mbit,30ms,loss=100%");
    assert_eq!(lte["up"]["settings"]["delay_ms"], 30.0);
    assert_eq!(lte["up"]["settings"]["loss_pct"], 100.0);
    assert!(lte["up"]["counters"]["dropped_loss"].as_u64().unwrap() >= 3);
    assert!(
        lte["down"]["counters"]["forwarded_packets"]
            .as_u64()
            .unwrap()
            >= 6
    );
    assert_eq!(json["paths"][0]["down"]["settings"]["rate_bps"], 10_000_000);
}
