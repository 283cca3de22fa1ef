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

/// Receives on `socket` until `want` datagrams arrived (or 5 s passed) and
/// returns them with their senders.
pub async fn receive(
    socket: &crate::PathSocket,
    want: usize,
) -> Vec<(std::net::SocketAddr, Vec<u8>)> {
    let mut batch = crate::RecvBatch::new();
    let mut got = Vec::new();
    while got.len() < want {
        tokio::time::timeout(std::time::Duration::from_secs(5), socket.recv(&mut batch))
            .await
            .expect("datagrams within 5 s")
            .expect("recv");
        got.extend(batch.datagrams().map(|d| (d.from, d.bytes.to_vec())));
    }
    got
}
