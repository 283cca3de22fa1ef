use std::net::{Ipv4Addr, SocketAddr};

use super::*;
use crate::path_socket::Binding;
use crate::test_support::{receive, runtime};

/// The bytes of the first `want` datagrams to arrive at `socket`.
async fn receive_bytes(socket: &PathSocket, want: usize) -> Vec<Vec<u8>> {
    receive(socket, want)
        .await
        .into_iter()
        .map(|(_, bytes)| bytes)
        .collect()
}

/// Datagram `i` of a test: `len` bytes, each naming `i`, so that a
/// datagram cut, merged or swapped with another shows.
fn datagram(i: usize, len: usize) -> Vec<u8> {
    (0..len).map(|k| (i * 7 + k) as u8).collect()
}

fn push(
    batch: &mut TransmitBatch,
    sockets: &[PathSocket],
    socket: usize,
    to: SocketAddr,
    bytes: &[u8],
) {
    batch.space()[..bytes.len()].copy_from_slice(bytes);
    batch.push(sockets, socket, to, bytes.len()).unwrap();
}

fn flush(batch: &mut TransmitBatch, sockets: &[PathSocket]) {
    batch.flush(sockets, |f| panic!("send failed: {f:?}"));
}

/// A client socket and two listening sockets on loopback, the client
/// ready to send.
async fn loopback_pair() -> (Vec<PathSocket>, PathSocket, PathSocket) {
    let any = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
    let a = PathSocket::listen(any).unwrap();
    let b = PathSocket::listen(any).unwrap();
    let client =
        PathSocket::client(&Binding::Source(Ipv4Addr::LOCALHOST.into()), a.local_addr()).unwrap();
    client.writable().await.unwrap();
    (vec![client], a, b)
}

#[test]
fn every_datagram_arrives_whole_and_in_order_whatever_the_runs() {
    runtime().block_on(async {
        let (sockets, a, b) = loopback_pair().await;
        let (to_a, to_b) = (a.local_addr(), b.local_addr());
        // Runs of equal sizes, a shorter one ending a run, a size above
        // max_segment, a change of destination, and lone datagrams.
        let sizes = [
            1200, 1200, 1200, 1200, 700, 1200, 1200, 1400, 1400, 90, 90, 90, 1200, 60, 1200,
        ];
        let mut batch = TransmitBatch::new(1300);
        let mut sent_a = Vec::new();
        let mut sent_b = Vec::new();
        for (i, &len) in sizes.iter().enumerate() {
            let bytes = datagram(i, len);
            let to = if (9..12).contains(&i) { to_b } else { to_a };
            push(&mut batch, &sockets, 0, to, &bytes);
            if to == to_b {
                sent_b.push(bytes);
            } else {
                sent_a.push(bytes);
            }
        }
        flush(&mut batch, &sockets);
        assert_eq!(receive_bytes(&a, sent_a.len()).await, sent_a);
        assert_eq!(receive_bytes(&b, sent_b.len()).await, sent_b);
        let (sends, datagrams) = batch.counts();
        assert_eq!(datagrams, sizes.len() as u64);
        if sockets[0].max_gso_segments() > 1 {
            // 1200 x4 + 700 | 1200 x2 | 1400 | 1400 | 90 x3 | 1200 + 60 | 1200
            assert_eq!(sends, 7, "runs as described");
        }
    });
}

/// Datagrams a scheduler spreads over destinations, one after the other,
/// still leave in one run per destination, each in its order; with more
/// destinations than open runs, some runs are sent early and nothing is
/// lost or reordered.
#[test]
fn interleaved_destinations_keep_a_run_each() {
    runtime().block_on(async {
        let (sockets, a, b) = loopback_pair().await;
        let (to_a, to_b) = (a.local_addr(), b.local_addr());
        let mut batch = TransmitBatch::new(1500);
        let mut sent_a = Vec::new();
        let mut sent_b = Vec::new();
        for i in 0..20 {
            let bytes = datagram(i, 1000);
            if i % 2 == 0 {
                push(&mut batch, &sockets, 0, to_a, &bytes);
                sent_a.push(bytes);
            } else {
                push(&mut batch, &sockets, 0, to_b, &bytes);
                sent_b.push(bytes);
            }
        }
        flush(&mut batch, &sockets);
        assert_eq!(receive_bytes(&a, sent_a.len()).await, sent_a);
        assert_eq!(receive_bytes(&b, sent_b.len()).await, sent_b);
        if sockets[0].max_gso_segments() >= 10 {
            assert_eq!(batch.counts(), (2, 20), "one send per destination");
        }
        // A flushed run leaves nothing behind: smaller datagrams to the
        // same destination make a run of their own.
        let smaller: Vec<_> = (0..5).map(|i| datagram(100 + i, 500)).collect();
        for bytes in &smaller {
            push(&mut batch, &sockets, 0, to_a, bytes);
        }
        flush(&mut batch, &sockets);
        assert_eq!(receive_bytes(&a, smaller.len()).await, smaller);
        if sockets[0].max_gso_segments() >= 10 {
            assert_eq!(batch.counts(), (3, 25), "the smaller ones in one send");
        }

        let any = SocketAddr::from((Ipv4Addr::LOCALHOST, 0));
        let many: Vec<PathSocket> = (0..MAX_OPEN_RUNS + 3)
            .map(|_| PathSocket::listen(any).unwrap())
            .collect();
        let mut sent: Vec<Vec<Vec<u8>>> = vec![Vec::new(); many.len()];
        for round in 0..4 {
            for (k, listener) in many.iter().enumerate() {
                let bytes = datagram(round * 100 + k, 300 + k);
                push(&mut batch, &sockets, 0, listener.local_addr(), &bytes);
                sent[k].push(bytes);
            }
        }
        assert_eq!(batch.runs.len(), MAX_OPEN_RUNS, "runs kept open at most");
        flush(&mut batch, &sockets);
        for (listener, sent) in many.iter().zip(&sent) {
            assert_eq!(&receive_bytes(listener, sent.len()).await, sent);
        }
    });
}

#[test]
fn a_run_is_cut_at_the_socket_s_segment_limit_and_nothing_is_lost() {
    runtime().block_on(async {
        let (sockets, a, _b) = loopback_pair().await;
        let to = a.local_addr();
        let limit = sockets[0].max_gso_segments();
        let count = 3 * limit.max(1) + 1;
        let mut batch = TransmitBatch::new(1500);
        let sent: Vec<_> = (0..count).map(|i| datagram(i, 100)).collect();
        for bytes in &sent {
            push(&mut batch, &sockets, 0, to, bytes);
        }
        flush(&mut batch, &sockets);
        assert_eq!(receive_bytes(&a, count).await, sent);
        let (sends, datagrams) = batch.counts();
        assert_eq!(datagrams, count as u64);
        assert_eq!(sends, count.div_ceil(limit) as u64);
    });
}

/// A run stops short of 65,000 bytes whatever the socket's segment limit:
/// 100 datagrams of 1,400 bytes leave in runs of 46 (64,400 bytes).
#[test]
fn a_run_is_cut_before_65_000_bytes() {
    runtime().block_on(async {
        let (sockets, a, _b) = loopback_pair().await;
        if sockets[0].max_gso_segments() < 47 {
            return;
        }
        let mut batch = TransmitBatch::new(1500);
        let sent: Vec<_> = (0..100).map(|i| datagram(i, 1400)).collect();
        for bytes in &sent {
            push(&mut batch, &sockets, 0, a.local_addr(), bytes);
        }
        flush(&mut batch, &sockets);
        assert_eq!(receive_bytes(&a, sent.len()).await, sent);
        assert_eq!(batch.counts(), (3, 100), "46 + 46 + 8");
    });
}

/// A GSO send that fails for a reason other than a full buffer is tried
/// again datagram by datagram; each that fails again is counted.
#[test]
fn a_failed_run_is_retried_one_by_one() {
    runtime().block_on(async {
        let (sockets, _a, _b) = loopback_pair().await;
        // An IPv4 socket cannot send to an IPv6 address: every send fails.
        let nowhere = SocketAddr::from((std::net::Ipv6Addr::LOCALHOST, 9));
        let mut batch = TransmitBatch::new(1500);
        for i in 0..3 {
            batch.space()[..600].copy_from_slice(&datagram(i, 600));
            batch.push(&sockets, 0, nowhere, 600).unwrap();
        }
        let mut failures = Vec::new();
        batch.flush(&sockets, |f| failures.push(f));
        assert_eq!(failures.len(), 1);
        assert_eq!(failures[0].datagrams, 3);
        assert_ne!(failures[0].error.kind(), io::ErrorKind::WouldBlock);
        let expected_sends = if sockets[0].max_gso_segments() > 1 {
            4
        } else {
            3
        };
        assert_eq!(batch.counts(), (expected_sends, 3));
    });
}

#[test]
fn a_datagram_for_a_missing_socket_or_too_long_fails_alone() {
    runtime().block_on(async {
        let (sockets, a, _b) = loopback_pair().await;
        let to = a.local_addr();
        let mut batch = TransmitBatch::new(1500);
        push(&mut batch, &sockets, 0, to, &datagram(0, 500));
        let failure = batch.push(&sockets, 3, to, 500).unwrap_err();
        assert_eq!(failure.datagrams, 1);
        let failure = batch
            .push(&sockets, 0, to, MAX_ONE_DATAGRAM + 1)
            .unwrap_err();
        assert_eq!(failure.error.kind(), io::ErrorKind::InvalidInput);
        push(&mut batch, &sockets, 0, to, &datagram(1, 500));
        // The longest datagram the space takes is taken.
        push(&mut batch, &sockets, 0, to, &datagram(2, MAX_ONE_DATAGRAM));
        flush(&mut batch, &sockets);
        assert_eq!(
            receive_bytes(&a, 3).await,
            vec![
                datagram(0, 500),
                datagram(1, 500),
                datagram(2, MAX_ONE_DATAGRAM)
            ]
        );
    });
}
