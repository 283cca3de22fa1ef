use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::Duration;

use super::*;
use crate::test_support::{have_root, runtime};

const TUN_NAME: &str = "braidtest0";
const TUN_ADDR: Ipv4Addr = Ipv4Addr::new(10, 99, 0, 1);
const PEER_ADDR: Ipv4Addr = Ipv4Addr::new(10, 99, 0, 2);

/// Runs `test` with a TUN device `braidtest0` (10.99.0.1/24, offload as
/// asked) in a fresh network namespace of its own thread, which the kernel
/// removes when the thread ends: nothing outlives the test.
fn with_tun<F: std::future::Future<Output = ()>>(
    offload: bool,
    test: impl FnOnce(Tun) -> F + Send + 'static,
) {
    if !have_root() {
        return;
    }
    std::thread::spawn(move || {
        // SAFETY: unshare with CLONE_NEWNET only affects the calling thread.
        let rc = unsafe { libc::unshare(libc::CLONE_NEWNET) };
        assert_eq!(rc, 0, "unshare: {}", std::io::Error::last_os_error());
        runtime().block_on(async {
            let tun = Tun::create(&TunConfig {
                name: TUN_NAME.into(),
                mtu: 1400,
                ipv4: Some((TUN_ADDR, 24)),
                ipv6: None,
                offload,
            })
            .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(tun.name(), TUN_NAME);
            assert_eq!(tun.offload(), offload);
            test(tun).await;
        });
    })
    .join()
    .unwrap();
}

/// The one's-complement sum of `data` (RFC 1071), not yet inverted.
fn ones_complement_sum(data: &[u8], mut sum: u32) -> u32 {
    for pair in data.chunks(2) {
        sum += u32::from(u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum
}

fn checksum(data: &[u8], initial: u32) -> u16 {
    !(ones_complement_sum(data, initial) as u16)
}

/// An IPv4 packet from `src` to `dst` carrying `transport` (protocol
/// `protocol`), with its IP checksum and the transport checksum at
/// `checksum_at` (within `transport`) filled in.
fn ipv4_packet(
    src: Ipv4Addr,
    dst: Ipv4Addr,
    protocol: u8,
    mut transport: Vec<u8>,
    checksum_at: usize,
) -> Vec<u8> {
    let total = 20 + transport.len();
    let mut p = vec![0u8; 20];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    p[6] = 0x40; // don't fragment
    p[8] = 64;
    p[9] = protocol;
    p[12..16].copy_from_slice(&src.octets());
    p[16..20].copy_from_slice(&dst.octets());
    let ip_checksum = checksum(&p, 0);
    p[10..12].copy_from_slice(&ip_checksum.to_be_bytes());
    let mut pseudo = ones_complement_sum(&p[12..20], 0);
    pseudo += u32::from(protocol) + transport.len() as u32;
    let transport_checksum = checksum(&transport, pseudo);
    transport[checksum_at..checksum_at + 2].copy_from_slice(&transport_checksum.to_be_bytes());
    p.extend_from_slice(&transport);
    p
}

fn udp_packet(src: SocketAddrV4, dst: SocketAddrV4, payload: &[u8]) -> Vec<u8> {
    let mut udp = vec![0u8; 8];
    udp[0..2].copy_from_slice(&src.port().to_be_bytes());
    udp[2..4].copy_from_slice(&dst.port().to_be_bytes());
    udp[4..6].copy_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    udp.extend_from_slice(payload);
    ipv4_packet(*src.ip(), *dst.ip(), 17, udp, 6)
}

/// A TCP segment (ACK, no options) with sequence number `seq`.
fn tcp_segment(src: SocketAddrV4, dst: SocketAddrV4, seq: u32, payload: &[u8]) -> Vec<u8> {
    let mut tcp = vec![0u8; 20];
    tcp[0..2].copy_from_slice(&src.port().to_be_bytes());
    tcp[2..4].copy_from_slice(&dst.port().to_be_bytes());
    tcp[4..8].copy_from_slice(&seq.to_be_bytes());
    tcp[8..12].copy_from_slice(&1u32.to_be_bytes());
    tcp[12] = 5 << 4;
    tcp[13] = 0x10;
    tcp[14..16].copy_from_slice(&64_000u16.to_be_bytes());
    tcp.extend_from_slice(payload);
    ipv4_packet(*src.ip(), *dst.ip(), 6, tcp, 16)
}

fn local_udp_socket() -> (UdpSocket, SocketAddrV4) {
    let socket = UdpSocket::bind((TUN_ADDR, 0)).unwrap();
    socket
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    match socket.local_addr().unwrap() {
        std::net::SocketAddr::V4(a) => (socket, a),
        other => panic!("{other}"),
    }
}

/// Packets the kernel took from the device: one per write braid made.
fn device_rx_packets() -> u64 {
    let out = std::process::Command::new("ip")
        .args(["-j", "-s", "link", "show", "dev", TUN_NAME])
        .output()
        .expect("ip (iproute2)");
    let links: serde_json::Value = serde_json::from_slice(&out.stdout).expect("ip -j");
    links[0]["stats64"]["rx"]["packets"]
        .as_u64()
        .unwrap_or_else(|| panic!("rx packets in {links}"))
}

/// The next IPv4/UDP packet read from the device (the kernel sends its own
/// packets too, such as IPv6 router solicitations), as the packets the
/// read was cut into.
async fn read_udp(tun: &Tun, batch: &mut TunReadBatch) -> Vec<Vec<u8>> {
    loop {
        tokio::time::timeout(Duration::from_secs(5), tun.recv_batch(batch))
            .await
            .expect("a packet within 5 s")
            .unwrap();
        let packets: Vec<Vec<u8>> = batch.packets().map(<[u8]>::to_vec).collect();
        if packets[0][0] >> 4 == 4 && packets[0][9] == 17 {
            return packets;
        }
    }
}

#[test]
fn packets_cross_the_tun_device_both_ways() {
    for offload in [true, false] {
        with_tun(offload, |tun| async move {
            // Out: a datagram to the peer's address is routed into the device.
            let (app, app_addr) = local_udp_socket();
            let peer = SocketAddrV4::new(PEER_ADDR, 4000);
            app.send_to(b"into the tunnel", peer).unwrap();
            let mut batch = TunReadBatch::new(tun.mtu());
            let packets = read_udp(&tun, &mut batch).await;
            assert_eq!(packets.len(), 1);
            let packet = &packets[0];
            assert_eq!(&packet[12..16], &TUN_ADDR.octets());
            assert_eq!(&packet[16..20], &PEER_ADDR.octets());
            assert_eq!(&packet[28..], b"into the tunnel");

            // In: a packet written to the device reaches the app's socket.
            let mut out = TunWriteBatch::new();
            out.push(&tun, &udp_packet(peer, app_addr, b"out of the tunnel"))
                .unwrap();
            assert_eq!(out.flush(&tun).unwrap(), 1);
            let mut buf = [0u8; 2048];
            let (n, from) = app.recv_from(&mut buf).unwrap();
            assert_eq!(&buf[..n], b"out of the tunnel");
            assert_eq!(from, peer.into());
        });
    }
}

/// With offload, a UDP GSO send of ten datagrams is one read, cut into the
/// ten packets (each with its own length and a valid checksum).
#[test]
fn a_udp_gso_send_into_the_device_is_read_as_its_datagrams() {
    with_tun(true, |tun| async move {
        let (app, app_addr) = local_udp_socket();
        let segment: libc::c_int = 1000;
        // SAFETY: a valid socket and an int option of the right size.
        let rc = unsafe {
            libc::setsockopt(
                app.as_raw_fd(),
                libc::SOL_UDP,
                libc::UDP_SEGMENT,
                std::ptr::from_ref(&segment).cast(),
                std::mem::size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        assert_eq!(rc, 0, "UDP_SEGMENT: {}", std::io::Error::last_os_error());
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        app.send_to(&data, SocketAddrV4::new(PEER_ADDR, 4000))
            .unwrap();

        let mut batch = TunReadBatch::new(tun.mtu());
        let packets = read_udp(&tun, &mut batch).await;
        assert_eq!(packets.len(), 10, "one read, ten datagrams");
        for (i, p) in packets.iter().enumerate() {
            assert_eq!(p.len(), 20 + 8 + 1000);
            assert_eq!(u16::from_be_bytes([p[2], p[3]]), 1028, "IP length of {i}");
            assert_eq!(checksum(&p[..20], 0), 0, "IP checksum of {i}");
            assert_eq!(&p[20..22], &app_addr.port().to_be_bytes());
            assert_eq!(
                u16::from_be_bytes([p[24], p[25]]),
                1008,
                "UDP length of {i}"
            );
            let mut pseudo = ones_complement_sum(&p[12..20], 0);
            pseudo += 17 + 1008;
            assert_eq!(checksum(&p[20..], pseudo), 0, "UDP checksum of {i}");
            assert_eq!(&p[28..], &data[i * 1000..(i + 1) * 1000], "payload of {i}");
        }
    });
}

/// Datagrams of two flows, interleaved, more than one batch holds: each
/// socket gets its own, whole and in order, and with offload the device
/// takes far fewer writes than packets (a flow's datagrams of one size are
/// merged).
#[test]
fn written_udp_flows_arrive_whole_in_order_and_merged() {
    for offload in [true, false] {
        with_tun(offload, move |tun| async move {
            let (a, a_addr) = local_udp_socket();
            let (b, b_addr) = local_udp_socket();
            let peer = SocketAddrV4::new(PEER_ADDR, 4000);
            let per_flow = 70;
            let payload = |flow: u8, i: usize| vec![flow ^ i as u8; 100];
            let before = device_rx_packets();
            let mut out = TunWriteBatch::new();
            for i in 0..per_flow {
                out.push(&tun, &udp_packet(peer, a_addr, &payload(1, i)))
                    .unwrap();
                out.push(&tun, &[]).unwrap();
                out.push(&tun, &udp_packet(peer, b_addr, &payload(2, i)))
                    .unwrap();
            }
            out.flush(&tun).unwrap();
            assert_eq!(
                out.queued(),
                2 * per_flow as u64,
                "empty packets are not queued"
            );
            let writes = device_rx_packets() - before;
            let mut buf = [0u8; 2048];
            for (socket, flow) in [(&a, 1), (&b, 2)] {
                for i in 0..per_flow {
                    let (n, from) = socket.recv_from(&mut buf).unwrap();
                    assert_eq!(from, peer.into());
                    assert_eq!(
                        &buf[..n],
                        &payload(flow, i)[..],
                        "flow {flow}, datagram {i}"
                    );
                }
            }
            let packets = 2 * per_flow as u64;
            if offload {
                assert!(
                    writes * 10 < packets,
                    "{packets} datagrams in {writes} writes"
                );
            } else {
                assert_eq!(writes, packets);
            }
        });
    }
}

/// With offload, consecutive TCP segments of one flow go in as one write.
#[test]
fn consecutive_tcp_segments_are_written_as_one() {
    with_tun(true, |tun| async move {
        let from = SocketAddrV4::new(PEER_ADDR, 4000);
        let to = SocketAddrV4::new(TUN_ADDR, 5001);
        let before = device_rx_packets();
        let mut out = TunWriteBatch::new();
        for i in 0..20u32 {
            let segment = tcp_segment(from, to, 1000 + i * 1000, &[i as u8; 1000]);
            out.push(&tun, &segment).unwrap();
        }
        assert_eq!(out.flush(&tun).unwrap(), 20);
        assert_eq!(device_rx_packets() - before, 1);

        // Up to the largest IP packet: 47 segments of 1,380 bytes and one
        // of 635 make 65,535 bytes with their 40 bytes of headers.
        let before = device_rx_packets();
        let mut seq = 1_000_000u32;
        for i in 0..48u32 {
            let len = if i < 47 { 1380 } else { 635 };
            out.push(&tun, &tcp_segment(from, to, seq, &vec![i as u8; len]))
                .unwrap();
            seq += len as u32;
        }
        assert_eq!(out.flush(&tun).unwrap(), 48);
        assert_eq!(device_rx_packets() - before, 1, "one 65,535-byte write");
    });
}

#[test]
fn errors_say_what_is_missing() {
    assert_eq!(
        classify("t0", std::io::Error::from_raw_os_error(libc::EPERM)).to_string(),
        "creating TUN device \"t0\" needs root (CAP_NET_ADMIN)"
    );
    assert_eq!(
        classify("t0", std::io::Error::from_raw_os_error(libc::ENOENT)).to_string(),
        "no /dev/net/tun: load the tun kernel module (modprobe tun) or run where it exists"
    );
}
