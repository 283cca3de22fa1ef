//! What both fuzz targets share: reading operations from the fuzzer's bytes,
//! and the per-call bounds on time and memory they check.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Counts the bytes allocated and not yet freed, so a target can check
/// after each call that memory stays within what the configuration allows.
pub struct CountingAlloc;

static LIVE_BYTES: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE_BYTES.fetch_add(layout.size(), Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE_BYTES.fetch_add(new_size, Ordering::Relaxed);
        LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

/// Most CPU time one call into the core may take. Generous: libFuzzer
/// builds with sanitizers; a walk over 2^40 numbers or a million-entry set
/// costs seconds, far beyond it. CPU time of this thread, not wall-clock
/// time, so that a busy machine preempting the fuzzer is not a finding.
pub const MAX_CALL_TIME: Duration = Duration::from_millis(250);

/// How old the CPU-time checkpoint may be when a call starts. Reading a
/// thread's CPU clock is a system call (no vDSO); read on every call it
/// took a third of the fuzzer's time. Read once per this much wall-clock
/// time instead, a slow call's own CPU time is known to within it.
const CHECKPOINT_AGE: Duration = Duration::from_millis(10);

/// Most bytes the core may hold. The receiver's bounds (4 MiB of payload,
/// 65,536 packets, 4,096 ranges of each kind) and the sender's 8 MiB queue
/// stay well below it.
pub const MAX_LIVE_BYTES: usize = 64 << 20;

/// A wall-clock instant and this thread's CPU time read at it.
#[derive(Clone, Copy)]
struct Checkpoint {
    wall: Instant,
    cpu: Duration,
}

thread_local! {
    static CHECKPOINT: Cell<Option<Checkpoint>> = const { Cell::new(None) };
}

impl Checkpoint {
    fn now() -> Checkpoint {
        let c = Checkpoint {
            wall: Instant::now(),
            cpu: thread_cpu_time(),
        };
        CHECKPOINT.with(|k| k.set(Some(c)));
        c
    }

    /// The last checkpoint if it is recent enough, else a new one.
    fn recent() -> Checkpoint {
        match CHECKPOINT.with(Cell::get) {
            Some(c) if c.wall.elapsed() <= CHECKPOINT_AGE => c,
            _ => Checkpoint::now(),
        }
    }
}

/// CPU time this thread has used.
fn thread_cpu_time() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec for the call's duration.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID) failed");
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

/// Runs one call into the core and checks its time and the memory after it.
///
/// A thread cannot use more CPU time than wall-clock time passes, so only a
/// call slower than the bound by the wall clock needs its CPU time checked.
/// That time is at least the CPU time since the checkpoint minus the
/// wall-clock time from the checkpoint to the call's start; a call is
/// reported only when that lower bound is over the limit, so preemption is
/// never a finding and a real overrun is missed by at most `CHECKPOINT_AGE`.
pub fn bounded<T>(what: &str, call: impl FnOnce() -> T) -> T {
    let checkpoint = Checkpoint::recent();
    let start = Instant::now();
    let out = call();
    if start.elapsed() > MAX_CALL_TIME {
        let after = Checkpoint::now();
        let took = after
            .cpu
            .saturating_sub(checkpoint.cpu)
            .saturating_sub(start.saturating_duration_since(checkpoint.wall));
        assert!(
            took <= MAX_CALL_TIME,
            "{what} took at least {took:?} of CPU time"
        );
    }
    let live = LIVE_BYTES.load(Ordering::Relaxed);
    assert!(live <= MAX_LIVE_BYTES, "{what}: {live} bytes live");
    out
}

/// Reads fixed-width big-endian values off the fuzzer's input; runs out
/// as zeros, so every input is a valid program.
pub struct Input<'a> {
    bytes: &'a [u8],
}

impl<'a> Input<'a> {
    pub fn new(bytes: &'a [u8]) -> Input<'a> {
        Input { bytes }
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    pub fn take(&mut self, n: usize) -> &'a [u8] {
        let (head, tail) = self.bytes.split_at(n.min(self.bytes.len()));
        self.bytes = tail;
        head
    }

    fn array<const N: usize>(&mut self) -> [u8; N] {
        let mut a = [0u8; N];
        let head = self.take(N);
        a[..head.len()].copy_from_slice(head);
        a
    }

    pub fn u8(&mut self) -> u8 {
        self.array::<1>()[0]
    }
    pub fn u16(&mut self) -> u16 {
        u16::from_be_bytes(self.array())
    }
    pub fn u32(&mut self) -> u32 {
        u32::from_be_bytes(self.array())
    }
    pub fn u64(&mut self) -> u64 {
        u64::from_be_bytes(self.array())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_that_burns_cpu_breaks_the_bound() {
        // Spins until this thread has used twice the bound in CPU time,
        // however busy the machine is.
        let slow = || {
            let start = thread_cpu_time();
            let mut x = 0u64;
            while thread_cpu_time() - start < MAX_CALL_TIME * 2 {
                x = std::hint::black_box(x.wrapping_add(1));
            }
        };
        assert!(std::panic::catch_unwind(|| bounded("spin", slow)).is_err());
    }

    #[test]
    fn a_call_that_waits_is_not_a_finding() {
        bounded("sleep", || std::thread::sleep(MAX_CALL_TIME * 2));
    }
}
