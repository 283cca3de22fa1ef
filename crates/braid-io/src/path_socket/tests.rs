use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use super::*;
use crate::test_support::{have_root, receive, runtime};
use crate::DeliveryProblem;

const LOOP4: IpAddr = IpAddr::V4(Ipv4Addr::LOCALHOST);
const LOOP6: IpAddr = IpAddr::V6(Ipv6Addr::LOCALHOST);

async fn round_trip(ip: IpAddr) {
    let server = PathSocket::listen(SocketAddr::new(ip, 0)).unwrap();
    let server_addr = server.local_addr();
    let client = PathSocket::client(&Binding::Source(ip), server_addr).unwrap();
    let client_addr = client.local_addr();
    assert_eq!(client_addr.ip(), ip);

    for i in 0..3u8 {
        client.send(server_addr, &[i; 100], None).await.unwrap();
    }
    let got = receive(&server, 3).await;
    assert_eq!(
        got,
        (0..3u8)
            .map(|i| (client_addr, vec![i; 100]))
            .collect::<Vec<_>>()
    );

    server.send(client_addr, b"reply", None).await.unwrap();
    assert_eq!(
        receive(&client, 1).await,
        vec![(server_addr, b"reply".to_vec())]
    );
}

#[test]
fn datagrams_go_both_ways_over_ipv4() {
    runtime().block_on(round_trip(LOOP4));
}

#[test]
fn datagrams_go_both_ways_over_ipv6() {
    runtime().block_on(round_trip(LOOP6));
}

#[test]
fn one_gso_send_arrives_as_separate_datagrams() {
    runtime().block_on(async {
        let server = PathSocket::listen(SocketAddr::new(LOOP4, 0)).unwrap();
        let server_addr = server.local_addr();
        let client = PathSocket::client(&Binding::Source(LOOP4), server_addr).unwrap();
        assert!(
            client.max_gso_segments() >= 6,
            "loopback supports UDP GSO on Linux >= 4.18"
        );
        // Five full segments of 1200 bytes and a short last one.
        let mut contents = Vec::new();
        for i in 0..5u8 {
            contents.extend_from_slice(&[i; 1200]);
        }
        contents.extend_from_slice(&[9; 300]);
        client
            .send(server_addr, &contents, Some(1200))
            .await
            .unwrap();

        let got: Vec<Vec<u8>> = receive(&server, 6).await.into_iter().map(|d| d.1).collect();
        let mut want: Vec<Vec<u8>> = (0..5u8).map(|i| vec![i; 1200]).collect();
        want.push(vec![9; 300]);
        assert_eq!(got, want);
    });
}

#[test]
fn a_path_bound_to_an_interface_sends_through_it() {
    runtime().block_on(async {
        let server = PathSocket::listen(SocketAddr::new(LOOP4, 0)).unwrap();
        let server_addr = server.local_addr();
        let bound = PathSocket::client(&Binding::Interface("lo".into()), server_addr);
        if !have_root() {
            assert!(matches!(
                bound,
                Err(SocketError::BindToDeviceNotPermitted(_))
            ));
            return;
        }
        let client = bound.unwrap();
        client.send(server_addr, b"via lo", None).await.unwrap();
        let got = receive(&server, 1).await;
        assert_eq!(got[0].1, b"via lo");
    });
}

#[test]
fn a_missing_interface_is_named_in_the_error() {
    runtime().block_on(async {
        let server = SocketAddr::new(LOOP4, 9);
        let err = PathSocket::client(&Binding::Interface("nosuch0".into()), server)
            .err()
            .expect("no such interface");
        assert_eq!(err.to_string(), "interface \"nosuch0\" does not exist");
        let err = PathSocket::client(&Binding::Interface("x".repeat(16)), server)
            .err()
            .expect("name too long");
        assert!(matches!(err, SocketError::BadInterfaceName(_)), "{err}");
    });
}

#[test]
fn a_source_address_not_on_this_host_is_refused() {
    runtime().block_on(async {
        let server = SocketAddr::new(LOOP4, 9);
        // TEST-NET-3, never assigned to a local interface.
        let err = PathSocket::client(&Binding::Source("203.0.113.7".parse().unwrap()), server)
            .err()
            .expect("address not local");
        assert!(
            err.to_string().starts_with(
                "cannot bind UDP socket to 203.0.113.7:0: no interface of this host has the \
                 address 203.0.113.7 (Cannot assign requested address"
            ),
            "{err}"
        );
    });
}

#[test]
fn a_port_another_socket_has_is_named() {
    runtime().block_on(async {
        let first = PathSocket::listen(SocketAddr::new(LOOP4, 0)).unwrap();
        let taken = first.local_addr();
        let err = PathSocket::listen(taken).err().expect("the port is taken");
        let said = format!(
            "cannot bind UDP socket to {taken}: another socket has port {} (Address already in use",
            taken.port()
        );
        assert!(err.to_string().starts_with(&said), "{err}");
    });
}

#[test]
fn datagrams_can_be_changed_in_place() {
    runtime().block_on(async {
        let server = PathSocket::listen(SocketAddr::new(LOOP4, 0)).unwrap();
        let server_addr = server.local_addr();
        let client = PathSocket::client(&Binding::Source(LOOP4), server_addr).unwrap();
        // One GSO send, so that both datagrams arrive in one receive call.
        client
            .send(server_addr, &[[1u8; 500], [2u8; 500]].concat(), Some(500))
            .await
            .unwrap();
        let mut batch = RecvBatch::new();
        let mut seen = Vec::new();
        while seen.len() < 2 {
            tokio::time::timeout(Duration::from_secs(5), server.recv(&mut batch))
                .await
                .expect("datagrams within 5 s")
                .unwrap();
            batch.for_each_mut(|from, bytes| {
                seen.push((from, bytes[0], bytes.len()));
                bytes[0] = 0xff;
            });
            // What the closure wrote is what the batch now holds.
            assert!(batch.datagrams().all(|d| d.bytes[0] == 0xff));
        }
        let client_addr = client.local_addr();
        assert_eq!(seen, vec![(client_addr, 1, 500), (client_addr, 2, 500)]);
    });
}

#[test]
fn a_socket_for_a_missing_link_waits_and_is_pinned_once_it_is_there() {
    runtime().block_on(async {
        let server = PathSocket::listen(SocketAddr::new(LOOP4, 0)).unwrap();
        let server_addr = server.local_addr();
        // A source address no interface holds: refused as missing, yet a
        // waiting socket can be bound to it.
        let ip: IpAddr = "203.0.113.7".parse().unwrap();
        let absent = Binding::Source(ip);
        let err = PathSocket::client(&absent, server_addr).err().unwrap();
        assert!(err.is_missing_link(), "{err}");
        let waiting = PathSocket::client_unattached(&absent, server_addr).unwrap();
        assert_eq!(waiting.local_addr().ip(), ip);
        waiting.attach(&absent).unwrap();

        let lo = Binding::Interface("lo".into());
        let err = PathSocket::client(&Binding::Interface("nosuch0".into()), server_addr)
            .err()
            .unwrap();
        assert!(err.is_missing_link(), "{err}");
        let unpinned = PathSocket::client_unattached(&lo, server_addr).unwrap();
        if !have_root() {
            assert!(matches!(
                unpinned.attach(&lo),
                Err(SocketError::BindToDeviceNotPermitted(_))
            ));
            return;
        }
        assert!(matches!(
            unpinned.attach(&Binding::Interface("nosuch0".into())),
            Err(SocketError::NoSuchInterface(_))
        ));
        unpinned.attach(&lo).unwrap();
        unpinned.send(server_addr, b"pinned", None).await.unwrap();
        assert_eq!(receive(&server, 1).await[0].1, b"pinned");
    });
}

/// `try_recv` asks the kernel itself: it finds datagrams the runtime has
/// not yet seen arrive (this thread never yields to it here), as a timer
/// that fires after the process stalled must.
#[test]
fn try_recv_takes_what_waits_without_the_runtime_seeing_it() {
    runtime().block_on(async {
        let server = PathSocket::listen(SocketAddr::new(LOOP4, 0)).unwrap();
        let mut batch = RecvBatch::new();
        let nothing = server.try_recv(&mut batch).unwrap_err();
        assert_eq!(nothing.kind(), io::ErrorKind::WouldBlock);
        let sender = std::net::UdpSocket::bind(SocketAddr::new(LOOP4, 0)).unwrap();
        for i in 0..3u8 {
            sender.send_to(&[i; 100], server.local_addr()).unwrap();
        }
        let mut got = Vec::new();
        for _ in 0..500 {
            match server.try_recv(&mut batch) {
                Ok(_) => got.extend(batch.datagrams().map(|d| (d.from, d.bytes.to_vec()))),
                Err(e) => assert_eq!(e.kind(), io::ErrorKind::WouldBlock),
            }
            if got.len() == 3 {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let from = sender.local_addr().unwrap();
        assert_eq!(
            got,
            (0..3u8).map(|i| (from, vec![i; 100])).collect::<Vec<_>>()
        );
    });
}

/// An address nothing takes datagrams on, held so: a socket connected
/// elsewhere keeps the port, and takes only what comes from there.
fn closed_port(ip: IpAddr) -> (std::net::UdpSocket, SocketAddr) {
    let holder = std::net::UdpSocket::bind(SocketAddr::new(ip, 0)).unwrap();
    holder.connect(SocketAddr::new(ip, 9)).unwrap();
    let addr = holder.local_addr().unwrap();
    (holder, addr)
}

/// A datagram to a port nothing listens on comes back as an ICMP port
/// unreachable: a waiting `recv` collects it without returning, and leaves
/// the kernel's queue empty; the path goes on working both ways.
async fn port_unreachable_is_collected(ip: IpAddr) {
    let (_holder, closed) = closed_port(ip);
    let peer = PathSocket::listen(SocketAddr::new(ip, 0)).unwrap();
    let client = PathSocket::client(&Binding::Source(ip), closed).unwrap();
    let mut batch = RecvBatch::new();
    // One datagram: only the receive side can find its error.
    client.send(closed, b"anyone?", None).await.unwrap();
    let mut collected = None;
    for _ in 0..50 {
        let waited =
            tokio::time::timeout(Duration::from_millis(100), client.recv(&mut batch)).await;
        assert!(
            waited.is_err(),
            "recv returned without a datagram: {waited:?}"
        );
        collected = client.take_delivery_errors();
        if collected.is_some() {
            break;
        }
    }
    let errors = collected.expect("an ICMP port unreachable within 5 s");
    assert_eq!(errors.last.problem, DeliveryProblem::PortUnreachable);
    assert_eq!(errors.last.reporter, Some(ip));
    assert_eq!(errors.last.errno, libc::ECONNREFUSED);
    assert_eq!(errors.port_unreachable, Some(errors.last));
    let queued = client.state.recv_transport_error((&client.io).into());
    assert!(
        queued.unwrap().is_none(),
        "the kernel's error queue was left full"
    );
    assert_eq!(client.take_delivery_errors(), None);

    client
        .send(peer.local_addr(), b"still here", None)
        .await
        .unwrap();
    assert_eq!(receive(&peer, 1).await[0].1, b"still here");
    peer.send(client.local_addr(), b"reply", None)
        .await
        .unwrap();
    assert_eq!(receive(&client, 1).await[0].1, b"reply");
}

#[test]
fn a_closed_port_comes_back_as_port_unreachable_over_ipv4() {
    runtime().block_on(port_unreachable_is_collected(LOOP4));
}

#[test]
fn a_closed_port_comes_back_as_port_unreachable_over_ipv6() {
    runtime().block_on(port_unreachable_is_collected(LOOP6));
}

/// The kernel hands a pending ICMP error to the next call on the socket,
/// send or receive, instead of doing it: the call is made again. (No
/// receive is waiting, so nothing drains the error queue first.)
#[test]
fn a_send_or_receive_after_an_icmp_error_still_happens() {
    runtime().block_on(async {
        let (_holder, closed) = closed_port(LOOP4);
        let peer = PathSocket::listen(SocketAddr::new(LOOP4, 0)).unwrap();
        let client = PathSocket::client(&Binding::Source(LOOP4), closed).unwrap();

        client.send(closed, b"anyone?", None).await.unwrap();
        std::thread::sleep(Duration::from_millis(50));
        client.send(peer.local_addr(), b"sent", None).await.unwrap();
        assert_eq!(receive(&peer, 1).await[0].1, b"sent");
        let errors = client
            .take_delivery_errors()
            .expect("the send found the error");
        assert_eq!(errors.last.problem, DeliveryProblem::PortUnreachable);

        client.send(closed, b"anyone?", None).await.unwrap();
        peer.send(client.local_addr(), b"received", None)
            .await
            .unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let mut batch = RecvBatch::new();
        assert_eq!(client.try_recv(&mut batch).unwrap(), 1);
        assert_eq!(batch.datagrams().next().unwrap().bytes, b"received");
        assert!(client.take_delivery_errors().is_some());
    });
}

/// A server does not ask for ICMP errors: one about a peer that went away
/// is no event of its own, and would cost a failed call.
#[test]
fn a_listening_socket_collects_no_icmp_errors() {
    runtime().block_on(async {
        let server = PathSocket::listen(SocketAddr::new(LOOP4, 0)).unwrap();
        let (_holder, closed) = closed_port(LOOP4);
        for _ in 0..3 {
            server.send(closed, b"gone?", None).await.unwrap();
            std::thread::sleep(Duration::from_millis(20));
        }
        let mut batch = RecvBatch::new();
        let nothing = server.try_recv(&mut batch).unwrap_err();
        assert_eq!(nothing.kind(), io::ErrorKind::WouldBlock);
        assert_eq!(server.take_delivery_errors(), None);
    });
}
