//! A UDP flood at a braid server, for the "bad input" benchmark
//! (`scripts/flood.sh`): how much an established client's throughput
//! suffers while the server drops packets that do not authenticate.
//!
//!     flood ADDR:PORT RATE_PPS SECONDS KIND [SERVER_PUBKEY]
//!
//! KIND is what every packet is:
//! - `random`: random bytes, 1 to 1400 of them;
//! - `transport`: a data packet's header (type 3, a random receiver index)
//!   with random content, as if for a session that does not exist;
//! - `initiation`: a handshake initiation of the right length whose mac1
//!   is wrong (the server's cheapest check fails);
//! - `replay`: one real initiation from a key the server does not know,
//!   sent again and again (mac1 passes, so the server must do the
//!   Diffie-Hellman work its handshake rate limit bounds); needs
//!   SERVER_PUBKEY.
//!
//! Sends in bursts every millisecond to hold RATE_PPS, and prints the rate
//! it reached. Send it only to a lab address or loopback.

use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use braid_core::crypto::{PrivateKey, PublicKey, StaticKeypair};
use braid_core::session::{self, PathRole, Session, SessionConfig, MAX_DATAGRAM_LEN};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn usage() -> ! {
    eprintln!("usage: flood ADDR:PORT RATE_PPS SECONDS random|transport|initiation|replay [SERVER_PUBKEY]");
    std::process::exit(2);
}

/// One real handshake initiation to `server` from a fresh key.
fn real_initiation(server: PublicKey, to: SocketAddr, rng: &mut StdRng) -> Vec<u8> {
    let config = session::ClientConfig {
        local: StaticKeypair::from_private(PrivateKey::from_bytes(rng.gen())),
        server,
        psk: None,
        paths: vec![session::PathConfig {
            name: "flood".into(),
            role: PathRole::Primary,
            cost: 0.0,
            remote: to,
            rate_limit_bps: None,
        }],
        session: SessionConfig::default(),
    };
    let mut client = Session::client(config, rng.gen()).unwrap_or_else(|e| {
        eprintln!("flood: {e}");
        std::process::exit(1)
    });
    let mut buf = vec![0u8; MAX_DATAGRAM_LEN];
    let now = braid_core::time::Instant::ZERO;
    client.handle_timeout(now);
    let t = client.poll_transmit(now, &mut buf).unwrap_or_else(|| {
        eprintln!("flood: the client session sent no initiation");
        std::process::exit(1)
    });
    buf.truncate(t.len);
    buf
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 4 {
        usage();
    }
    let to: SocketAddr = args[0].parse().unwrap_or_else(|_| usage());
    let rate: u64 = args[1].parse().unwrap_or_else(|_| usage());
    let seconds: f64 = args[2].parse().unwrap_or_else(|_| usage());
    let kind = args[3].as_str();
    let mut rng = StdRng::seed_from_u64(1);
    let replayed = match kind {
        "replay" => {
            let key = args.get(4).unwrap_or_else(|| usage());
            let server = PublicKey::from_base64(key).unwrap_or_else(|_| usage());
            Some(real_initiation(server, to, &mut rng))
        }
        "random" | "transport" | "initiation" => None,
        _ => usage(),
    };
    let initiation_len = braid_core::crypto::handshake::initiation_len(0);
    let packet = move |rng: &mut StdRng| -> Vec<u8> {
        match kind {
            "random" => {
                let len = rng.gen_range(1..=1400);
                (0..len).map(|_| rng.gen()).collect()
            }
            "transport" => {
                let len = rng.gen_range(9 + 16..=1400);
                let mut p: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
                p[0] = braid_core::crypto::TRANSPORT_TYPE;
                p
            }
            "initiation" => {
                let mut p: Vec<u8> = (0..initiation_len).map(|_| rng.gen()).collect();
                p[0] = braid_core::crypto::handshake::INITIATION_TYPE;
                p
            }
            _ => replayed.clone().expect("replay has its initiation"),
        }
    };
    // A pool of packets made ahead, so the send loop does no work but
    // sending.
    let pool: Vec<Vec<u8>> = (0..4096).map(|_| packet(&mut rng)).collect();
    let bind = if to.is_ipv4() { "0.0.0.0:0" } else { "[::]:0" };
    let socket = UdpSocket::bind(bind).expect("bind");
    let start = Instant::now();
    let end = start + Duration::from_secs_f64(seconds);
    let mut sent: u64 = 0;
    let mut failed: u64 = 0;
    while Instant::now() < end {
        let due = (start.elapsed().as_secs_f64() * rate as f64) as u64;
        while sent + failed < due {
            let p = &pool[((sent + failed) % pool.len() as u64) as usize];
            match socket.send_to(p, to) {
                Ok(_) => sent += 1,
                Err(_) => failed += 1,
            }
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let secs = start.elapsed().as_secs_f64();
    println!(
        "flood {kind}: {sent} packets in {secs:.1} s ({:.0} per second), {failed} send errors",
        sent as f64 / secs
    );
}
