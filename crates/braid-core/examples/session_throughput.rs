//! Data-plane cost on this machine, one core: AES-256-GCM seal + open of
//! 1400-byte packets through `TransportKeys`, and whole inner packets
//! through a client `Session` and a server `Endpoint` (bonding headers,
//! scheduler, encryption, decryption, resequencer), with no network.
//!
//! `cargo run --release -p braid-core --example session_throughput`

use std::net::SocketAddr;
use std::time::{Duration, Instant as WallClock};

use braid_core::crypto::{PrivateKey, StaticKeypair, TransportKeys, TRANSPORT_OVERHEAD};
use braid_core::session::{
    ClientConfig, Endpoint, EndpointConfig, PathConfig, PathRole, PeerConfig, Session,
    SessionConfig, MAX_DATAGRAM_LEN,
};
use braid_core::time::Instant;

const PACKET: usize = 1400;

fn transport_keys() -> f64 {
    let mut a = TransportKeys::new(&[1; 32], &[2; 32], 1, 2, Instant::ZERO);
    let mut b = TransportKeys::new(&[2; 32], &[1; 32], 2, 1, Instant::ZERO);
    let mut buf = vec![0u8; PACKET + TRANSPORT_OVERHEAD];
    let n = 400_000u64;
    let start = WallClock::now();
    for _ in 0..n {
        let len = a.seal(&mut buf, PACKET).expect("seal");
        let range = b.open(&mut buf[..len]).expect("open");
        assert_eq!(range.len(), PACKET);
    }
    (n * PACKET as u64) as f64 / start.elapsed().as_secs_f64()
}

fn sessions() -> f64 {
    let server = StaticKeypair::from_private(PrivateKey::from_bytes([1; 32]));
    let client_key = StaticKeypair::from_private(PrivateKey::from_bytes([2; 32]));
    let server_addr: SocketAddr = "192.0.2.1:51820".parse().unwrap();
    let client_addr: SocketAddr = "198.51.100.1:4000".parse().unwrap();
    let config = SessionConfig {
        // No waiting on windows: this measures CPU, not congestion control.
        scheduler: "rr".into(),
        max_queue_bytes: 64 << 20,
        ..SessionConfig::default()
    };
    let mut endpoint = Endpoint::new(
        EndpointConfig {
            local: server.clone(),
            peers: vec![PeerConfig {
                public_key: client_key.public,
                psk: None,
            }],
            session: config.clone(),
            handshakes_per_second: 10,
        },
        [3; 32],
    )
    .unwrap();
    let mut client = Session::client(
        ClientConfig {
            local: client_key,
            server: server.public,
            psk: None,
            paths: vec![PathConfig {
                name: "p".into(),
                role: PathRole::Primary,
                cost: 1.0,
                remote: server_addr,
                rate_limit_bps: None,
            }],
            session: config,
        },
        [4; 32],
    )
    .unwrap();
    let mut buf = vec![0u8; MAX_DATAGRAM_LEN];
    let mut now = Instant::from_nanos(1_000_000_000);
    // Handshake.
    for _ in 0..4 {
        client.handle_timeout(now);
        while let Some(t) = client.poll_transmit(now, &mut buf) {
            endpoint
                .handle_datagram(now, client_addr, &mut buf[..t.len])
                .ok();
        }
        while let Some((_, t)) = endpoint.poll_transmit(now, &mut buf) {
            client
                .handle_datagram(now, Some(0), server_addr, &mut buf[..t.len])
                .ok();
        }
        now += Duration::from_millis(1);
    }
    assert!(client.is_connected());
    let n = 200_000u64;
    let mut delivered = 0u64;
    let start = WallClock::now();
    for i in 0..n {
        // 10 Gbit/s of virtual time, so pacing never holds a packet.
        now += Duration::from_nanos(1_100);
        client.send(now, vec![i as u8; PACKET]).unwrap();
        while let Some(t) = client.poll_transmit(now, &mut buf) {
            endpoint
                .handle_datagram(now, client_addr, &mut buf[..t.len])
                .ok();
        }
        while endpoint.poll_deliver().is_some() {
            delivered += 1;
        }
        while let Some((_, t)) = endpoint.poll_transmit(now, &mut buf) {
            client
                .handle_datagram(now, Some(0), server_addr, &mut buf[..t.len])
                .ok();
        }
    }
    let secs = start.elapsed().as_secs_f64();
    assert!(delivered >= n * 99 / 100, "delivered {delivered} of {n}");
    (delivered * PACKET as u64) as f64 / secs
}

fn main() {
    let keys = transport_keys();
    println!(
        "AES-256-GCM seal+open, {PACKET}-byte packets: {:.0} MB/s ({:.2} Gbit/s) per core",
        keys / 1e6,
        keys * 8.0 / 1e9
    );
    let whole = sessions();
    println!(
        "client Session -> server Endpoint, {PACKET}-byte inner packets, one path: {:.0} MB/s ({:.2} Gbit/s) per core",
        whole / 1e6,
        whole * 8.0 / 1e9
    );
}
