//! What both fuzz targets share: reading operations from the fuzzer's bytes,
//! and the per-call bounds on time and memory they check.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

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

/// Most bytes the core may hold. The receiver's bounds (4 MiB of payload,
/// 65,536 packets, 4,096 ranges of each kind) and the sender's 8 MiB queue
/// stay well below it.
pub const MAX_LIVE_BYTES: usize = 64 << 20;

/// Runs one call into the core and checks its time and the memory after it.
pub fn bounded<T>(what: &str, call: impl FnOnce() -> T) -> T {
    let start = thread_cpu_time();
    let out = call();
    let took = thread_cpu_time().saturating_sub(start);
    assert!(took <= MAX_CALL_TIME, "{what} took {took:?}");
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
