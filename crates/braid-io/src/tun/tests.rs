use std::net::{Ipv4Addr, SocketAddrV4, UdpSocket};
use std::time::Duration;

use super::*;
use crate::test_support::{have_root, runtime};

const TUN_ADDR: Ipv4Addr = Ipv4Addr::new(10, 99, 0, 1);
const PEER_ADDR: Ipv4Addr = Ipv4Addr::new(10, 99, 0, 2);

/// Moves the calling thread into a fresh network namespace, which the
/// kernel removes when the thread ends: nothing outlives the test.
fn private_netns() {
    // SAFETY: unshare with CLONE_NEWNET only affects the calling thread.
    let rc = unsafe { libc::unshare(libc::CLONE_NEWNET) };
    assert_eq!(rc, 0, "unshare: {}", std::io::Error::last_os_error());
}

fn ipv4_checksum(header: &[u8]) -> u16 {
    let mut sum: u32 = header
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An IPv4/UDP packet (UDP checksum 0: none, allowed over IPv4).
fn udp_packet(src: SocketAddrV4, dst: SocketAddrV4, payload: &[u8]) -> Vec<u8> {
    let total = 20 + 8 + payload.len();
    let mut p = vec![0u8; total];
    p[0] = 0x45;
    p[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    p[8] = 64;
    p[9] = 17;
    p[12..16].copy_from_slice(&src.ip().octets());
    p[16..20].copy_from_slice(&dst.ip().octets());
    let checksum = ipv4_checksum(&p[..20]);
    p[10..12].copy_from_slice(&checksum.to_be_bytes());
    p[20..22].copy_from_slice(&src.port().to_be_bytes());
    p[22..24].copy_from_slice(&dst.port().to_be_bytes());
    p[24..26].copy_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    p[28..].copy_from_slice(payload);
    p
}

#[test]
fn packets_cross_the_tun_device_both_ways() {
    if !have_root() {
        return;
    }
    std::thread::spawn(|| {
        private_netns();
        runtime().block_on(async {
            let tun = Tun::create(&TunConfig {
                name: "braidtest0".into(),
                mtu: 1400,
                ipv4: Some((TUN_ADDR, 24)),
                ipv6: None,
            })
            .unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(tun.name(), "braidtest0");

            // Out: a datagram to the peer's address is routed into the device.
            let app = UdpSocket::bind((TUN_ADDR, 0)).unwrap();
            let app_addr = match app.local_addr().unwrap() {
                std::net::SocketAddr::V4(a) => a,
                other => panic!("{other}"),
            };
            let peer = SocketAddrV4::new(PEER_ADDR, 4000);
            app.send_to(b"into the tunnel", peer).unwrap();
            let mut buf = [0u8; 2048];
            let packet = loop {
                let n = tokio::time::timeout(Duration::from_secs(5), tun.recv(&mut buf))
                    .await
                    .expect("a packet within 5 s")
                    .unwrap();
                let p = &buf[..n];
                // The kernel may send its own packets (IPv6 router solicitations).
                if p[0] >> 4 == 4 && p[9] == 17 {
                    break p.to_vec();
                }
            };
            assert_eq!(&packet[12..16], &TUN_ADDR.octets());
            assert_eq!(&packet[16..20], &PEER_ADDR.octets());
            assert_eq!(&packet[28..], b"into the tunnel");

            // In: a packet written to the device reaches the app's socket.
            tun.send(&udp_packet(peer, app_addr, b"out of the tunnel"))
                .await
                .unwrap();
            app.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
            let (n, from) = app.recv_from(&mut buf).unwrap();
            assert_eq!(&buf[..n], b"out of the tunnel");
            assert_eq!(from, peer.into());
        });
    })
    .join()
    .unwrap();
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
