//! Shared by the lab's integration tests: a lab that removes itself when the
//! test ends (pass, fail or panic), and helpers to run programs in it.

#![allow(dead_code)] // each test file uses its own subset of the helpers

use std::process::Output;
use std::time::Duration;

use braid_lab::control::HeldTimes;
use braid_lab::{EmulatorProgram, LabStatus, Side, UpOptions};

pub use braid_lab::root_guard::have_root_or_skip as have_root;

/// Serialization time of `ip_bytes` at `bps`, as the emulator computes it.
pub fn serialization(ip_bytes: u64, bps: u64) -> Duration {
    Duration::from_nanos((u128::from(ip_bytes) * 8 * 1_000_000_000 / u128::from(bps)) as u64)
}

/// Checks the emulator's own record of one direction: `at_least` frames,
/// each held at least `delay + tx` (the configured delay and the
/// serialization of an unqueued frame) and at most that plus the lateness
/// the emulator reports for them (for frames that meet no queue).
pub fn assert_held(what: &str, held: &HeldTimes, at_least: u64, delay: Duration, tx: Duration) {
    assert!(
        held.frames >= at_least,
        "{what}: {} frames held, expected {at_least}",
        held.frames
    );
    let floor = (delay + tx).as_nanos() as u64;
    let (min, max) = (held.min_ns.unwrap(), held.max_ns.unwrap());
    // 1 µs: the emulator maps kernel receive stamps (wall clock) onto its
    // monotonic clock through a pair of readings taken one after the other.
    let mapping = 1_000;
    assert!(
        min + mapping >= floor,
        "{what}: a frame held {min} ns, less than delay + serialization {floor} ns"
    );
    assert!(
        max <= floor + held.max_late_ns + mapping,
        "{what}: a frame held {max} ns, more than delay + serialization {floor} ns + the emulator's reported lateness {} ns",
        held.max_late_ns
    );
}

pub fn emulator() -> EmulatorProgram {
    EmulatorProgram {
        program: env!("CARGO_BIN_EXE_braid-lab-emulator").into(),
        args: Vec::new(),
    }
}

pub fn options(name: &str, specs: &[&str]) -> UpOptions {
    UpOptions {
        name: name.to_owned(),
        specs: specs.iter().map(|s| s.to_string()).collect(),
        seed: Some(1),
        emulator: emulator(),
        nat: false,
    }
}

/// A running lab, taken down on drop.
pub struct Lab {
    pub name: String,
    pub status: LabStatus,
}

impl Lab {
    pub fn up(name: &str, specs: &[&str]) -> Lab {
        // A previous run killed mid-test may have left this lab behind.
        let _ = braid_lab::down(name);
        let status = braid_lab::up(&options(name, specs)).unwrap_or_else(|e| panic!("lab up: {e}"));
        Lab {
            name: name.to_owned(),
            status,
        }
    }

    /// Runs `argv` in the client or server namespace and waits for it.
    pub fn run(&self, side: Side, argv: &[&str]) -> Output {
        let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
        let mut cmd = braid_lab::exec_command(&self.name, side, &argv).expect("exec command");
        cmd.output()
            .unwrap_or_else(|e| panic!("running {argv:?}: {e}"))
    }

    pub fn server_addr(&self) -> String {
        self.status.server_addr.to_string()
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        if let Err(e) = braid_lab::down(&self.name) {
            eprintln!("cleaning up lab {}: {e}", self.name);
        }
    }
}

/// The round-trip times in ms that `ping` printed.
pub fn ping_rtts(output: &Output) -> Vec<f64> {
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|l| l.split("time=").nth(1))
        .filter_map(|t| t.split_whitespace().next()?.parse().ok())
        .collect()
}
