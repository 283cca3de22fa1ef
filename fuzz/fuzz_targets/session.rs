//! A server `Endpoint` with two clients: a real client `Session`, and a
//! hand-driven one that speaks the handshake and seals whatever plaintext
//! the fuzzer chooses with real session keys, so that authenticated but
//! hostile content reaches the session's parsers too. The fuzzer also
//! sends raw bytes to both sides, and drops, duplicates, mutates and
//! replays the genuine datagrams between them. Every call must stay within
//! time and memory bounds.
#![no_main]

use std::net::SocketAddr;
use std::sync::OnceLock;

use braid_core::crypto::handshake::{Initiator, MAX_INITIATION_LEN, MAX_PAYLOAD};
use braid_core::crypto::{
    PresharedKey, StaticKeypair, TransportKeys, DATA_MESSAGE_HEADER_LEN, DATA_MESSAGE_OVERHEAD,
    TRANSPORT_HEADER_LEN, TRANSPORT_OVERHEAD,
};
use braid_core::session::{
    ClientConfig, Endpoint, EndpointConfig, PathConfig, PathRole, PeerConfig, PeerId, Session,
    SessionConfig, MAX_DATAGRAM_LEN, PROTOCOL_VERSION,
};
use braid_core::time::Instant;
use braid_fuzz::{bounded, CountingAlloc, Input};
use libfuzzer_sys::fuzz_target;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

const SERVER: &str = "192.0.2.1:51820";

/// Virtual time one input may cover, and manual handshakes it may make:
/// X25519 under coverage instrumentation costs milliseconds, and a client
/// that hears nothing retries its handshake every second.
const MAX_VIRTUAL_TIME_MS: u64 = 20_000;
const MAX_MANUAL_HANDSHAKES: u32 = 8;

/// The server's and the two clients' keys, derived once per process.
fn keys() -> &'static [StaticKeypair; 3] {
    static KEYS: OnceLock<[StaticKeypair; 3]> = OnceLock::new();
    KEYS.get_or_init(|| {
        [1u8, 2, 3].map(|b| {
            StaticKeypair::from_private(braid_core::crypto::PrivateKey::from_bytes([b; 32]))
        })
    })
}

fn from(i: u8) -> SocketAddr {
    SocketAddr::from(([198, 51, 100, i % 4], 4000))
}

/// The hand-driven client: its keys once a handshake completed.
struct Manual {
    key: StaticKeypair,
    keys: Option<TransportKeys>,
    timestamp: u64,
}

fuzz_target!(|data: &[u8]| {
    let mut input = Input::new(data);
    let [server_key, real, manual_key] = keys().clone();
    let mut manual = Manual {
        key: manual_key,
        keys: None,
        timestamp: 0,
    };
    let mut manual_handshakes = 0;
    let start = Instant::from_nanos(1_000_000_000);
    let session = SessionConfig::default();
    let mut endpoint = Endpoint::new(
        EndpointConfig {
            local: server_key.clone(),
            peers: [&real, &manual.key]
                .iter()
                .map(|k| PeerConfig {
                    public_key: k.public,
                    psk: None,
                })
                .collect(),
            session: session.clone(),
            handshakes_per_second: 1000,
        },
        [4; 32],
    )
    .expect("valid endpoint");
    let paths = (0..2)
        .map(|i| PathConfig {
            name: format!("p{i}"),
            role: if i == 0 {
                PathRole::Primary
            } else {
                PathRole::Backup
            },
            cost: 1.0,
            remote: SERVER.parse().unwrap(),
            rate_limit_bps: None,
        })
        .collect();
    let mut client = Session::client(
        ClientConfig {
            local: real,
            server: server_key.public,
            psk: None,
            paths,
            session,
        },
        [5; 32],
    )
    .expect("valid client");
    let mut now = start;
    let mut buf = vec![0u8; MAX_DATAGRAM_LEN];
    // Genuine datagrams in flight: (to the server?, path, bytes).
    let mut flights: Vec<(bool, u8, Vec<u8>)> = Vec::new();
    while !input.is_empty() {
        match input.u8() % 7 {
            0 => {
                let addr = from(input.u8());
                let len = usize::from(input.u16()) % 1600;
                let mut bytes = input.take(len).to_vec();
                let _ = bounded("endpoint raw", || {
                    endpoint.handle_datagram(now, addr, &mut bytes)
                });
            }
            1 => {
                let path = input.u8() % 3;
                let len = usize::from(input.u16()) % 1600;
                let mut bytes = input.take(len).to_vec();
                let _ = bounded("client raw", || {
                    client.handle_datagram(now, Some(path), SERVER.parse().unwrap(), &mut bytes)
                });
            }
            2 if manual_handshakes < MAX_MANUAL_HANDSHAKES => {
                manual_handshakes += 1;
                handshake(
                    &mut input,
                    &mut manual,
                    &mut endpoint,
                    &server_key,
                    now,
                    &mut buf,
                )
            }
            2 => {}
            3 => {
                // Authenticated hostile plaintext from the manual client:
                // a message, or a data message with the fuzzer's kind
                // (flags), path and path number.
                let addr = from(input.u8());
                let as_data = input.u8();
                let (path, number) = (input.u8() % 20, input.u32());
                let len = usize::from(input.u16()) % 1500;
                let plain = input.take(len);
                if let Some(keys) = manual.keys.as_mut() {
                    let mut packet =
                        vec![0u8; plain.len() + TRANSPORT_OVERHEAD.max(DATA_MESSAGE_OVERHEAD)];
                    let sealed = if as_data & 1 == 1 {
                        packet[DATA_MESSAGE_HEADER_LEN..][..plain.len()].copy_from_slice(plain);
                        // Version 3, data or express, any flags.
                        let kind = 0x31 | (as_data & 0x0e);
                        keys.seal_data(&mut packet, kind, path, number, plain.len())
                    } else {
                        packet[TRANSPORT_HEADER_LEN..][..plain.len()].copy_from_slice(plain);
                        keys.seal(&mut packet, plain.len())
                    };
                    if let Ok(n) = sealed {
                        packet.truncate(n);
                        let _ = bounded("endpoint sealed", || {
                            endpoint.handle_datagram(now, addr, &mut packet)
                        });
                    }
                }
            }
            4 => {
                // Of one of a few flows: the headers' flow gaps then link
                // packets across the flow queue's buckets.
                let len = usize::from(input.u16()) % 1500;
                let flow = u64::from(input.u8() % 8);
                let _ = client.send_flow(now, flow, vec![0xab; len]);
                let _ = endpoint.send_flow(now, PeerId(0), flow, vec![0xcd; len]);
            }
            5 => {
                // Deliver, drop, duplicate or mutate one genuine datagram.
                if flights.is_empty() {
                    continue;
                }
                let i = usize::from(input.u16()) % flights.len();
                let how = input.u8();
                let (to_server, path, mut bytes) = if how % 4 == 1 {
                    flights[i].clone()
                } else {
                    flights.swap_remove(i)
                };
                if how % 4 == 2 {
                    continue;
                }
                if how % 4 == 3 && !bytes.is_empty() {
                    let at = usize::from(input.u16()) % bytes.len();
                    bytes[at] ^= input.u8() | 1;
                }
                if to_server {
                    let addr = from(path);
                    let _ = bounded("endpoint genuine", || {
                        endpoint.handle_datagram(now, addr, &mut bytes)
                    });
                } else {
                    let _ = bounded("client genuine", || {
                        client.handle_datagram(now, Some(path), SERVER.parse().unwrap(), &mut bytes)
                    });
                }
            }
            _ => {
                // Time passes (up to 2.55 s at a time, 20 s in all); timers fire.
                let step_ms = u64::from(input.u8()) * 10;
                let end = start.as_nanos() + MAX_VIRTUAL_TIME_MS * 1_000_000;
                now = Instant::from_nanos((now.as_nanos() + step_ms * 1_000_000).min(end));
                while let Some(t) = client.poll_timeout().filter(|t| *t <= now) {
                    bounded("client timeout", || client.handle_timeout(t));
                }
                while let Some(t) = endpoint.poll_timeout().filter(|t| *t <= now) {
                    bounded("endpoint timeout", || endpoint.handle_timeout(t));
                }
            }
        }
        while let Some(t) = bounded("client transmit", || client.poll_transmit(now, &mut buf)) {
            if flights.len() < 256 {
                flights.push((true, t.path, buf[..t.len].to_vec()));
            }
        }
        while let Some((peer, t)) = bounded("endpoint transmit", || {
            endpoint.poll_transmit(now, &mut buf)
        }) {
            if peer == PeerId(0) && flights.len() < 256 {
                // Back on the path whose address it goes to.
                let path = u8::from(t.remote == from(1));
                flights.push((false, path, buf[..t.len].to_vec()));
            }
        }
        while client.poll_deliver().is_some() {}
        while endpoint.poll_deliver().is_some() {}
        while client.poll_event().is_some() {}
        while endpoint.poll_event().is_some() {}
    }
});

/// The manual client sends an initiation with a payload the fuzzer picks
/// (or a well-formed one of this protocol version) and, if the server
/// answers, keeps the keys. (A payload of another version is answered
/// too, with keys the server does not keep: what the manual client then
/// seals is dropped as for no session.)
fn handshake(
    input: &mut Input<'_>,
    manual: &mut Manual,
    endpoint: &mut Endpoint,
    server: &StaticKeypair,
    now: Instant,
    buf: &mut [u8],
) {
    let well_formed = input.u8() % 2 == 0;
    let payload = if well_formed {
        manual.timestamp += 1 + u64::from(input.u8());
        let count = 1 + input.u8() % 16;
        let mut p = vec![PROTOCOL_VERSION];
        p.extend_from_slice(&manual.timestamp.to_be_bytes());
        p.extend_from_slice(&input.u64().to_be_bytes()[1..]);
        p.push(input.u8() % count);
        p.push(count);
        p.extend((0..count).map(|_| input.u8() % 3));
        p.extend((0..count).map(|_| input.u8() % count));
        p
    } else {
        let len = usize::from(input.u8()) % (MAX_PAYLOAD + 1);
        input.take(len).to_vec()
    };
    let mut msg = vec![0u8; MAX_INITIATION_LEN];
    let Ok((initiator, len)) = Initiator::start(
        &manual.key,
        &server.public,
        &PresharedKey::ZERO,
        [input.u8(); 32],
        input.u32(),
        &payload,
        &mut msg,
    ) else {
        return;
    };
    msg.truncate(len);
    let addr = from(input.u8());
    if bounded("endpoint initiation", || {
        endpoint.handle_datagram(now, addr, &mut msg)
    })
    .is_err()
    {
        return;
    }
    while let Some((peer, t)) = endpoint.poll_transmit(now, buf) {
        if peer == PeerId(1) && buf[0] == 2 {
            let mut out = [0u8; MAX_PAYLOAD];
            let local = initiator.local_index;
            if let Ok((split, remote, _)) = initiator.finish(&buf[..t.len], &mut out) {
                manual.keys = Some(TransportKeys::new(
                    &split.send,
                    &split.recv,
                    local,
                    remote,
                    now,
                ));
            }
            return;
        }
    }
}
