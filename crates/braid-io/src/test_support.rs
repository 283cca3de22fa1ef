//! Helpers shared by the unit tests.

/// A runtime on the test's own thread, so that a test which moved its
/// thread into a private network namespace keeps all its sockets there.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime")
}

pub use braid_lab::root_guard::have_root_or_skip as have_root;
