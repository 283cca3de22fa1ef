//! The one rule every namespace test follows when it cannot run: without
//! root it says so and skips; in CI (`CI` set) it fails, because CI must run it.

use std::io::Write;

/// True when the caller may create network namespaces and TUN devices
/// (effective uid 0).
/// Otherwise panics if `CI` is set, or writes `SKIPPED (...): TEST` to the
/// process's stderr — not through `eprintln!`, which the test harness
/// captures — and returns false so the test can return early.
pub fn have_root_or_skip() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    if std::env::var_os("CI").is_some() {
        panic!("tests that need root (network namespaces, TUN) must run in CI");
    }
    let test = std::thread::current()
        .name()
        .unwrap_or("a namespace test")
        .to_owned();
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED (needs root for network namespaces and TUN): {test}"
    );
    false
}
