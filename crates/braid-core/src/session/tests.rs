//! A client session and a server endpoint over ideal paths with a fixed
//! one-way delay each, on virtual time: handshake, data both ways, path
//! failure, rebinding, rekeying, restarts and hostile input.

use std::net::SocketAddr;
use std::time::Duration;

use rand_chacha::rand_core::SeedableRng;
use rand_chacha::ChaCha20Rng;

use super::*;

const SERVER: &str = "192.0.2.1:5000";

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn keypair(seed: u64) -> StaticKeypair {
    StaticKeypair::generate(&mut ChaCha20Rng::seed_from_u64(seed))
}

struct Link {
    delay: Duration,
    up: bool,
    /// Datagrams from the server get through (a radio downlink can fade
    /// while its uplink works).
    back_up: bool,
    /// The client's address as the server sees it on this path.
    client_addr: SocketAddr,
    /// A bottleneck of this rate each way (IPv4 packets: 28 bytes more
    /// than the datagram), with a queue that never drops; none if `None`.
    rate_bps: Option<f64>,
    /// When the bottleneck is next free, towards the server and back.
    free_at: [Instant; 2],
}

/// A datagram in flight.
struct Flight {
    at: Instant,
    path: usize,
    to_server: bool,
    bytes: Vec<u8>,
}

struct Pair {
    now: Instant,
    client: Session,
    server: Endpoint,
    links: Vec<Link>,
    flights: Vec<Flight>,
    client_got: Vec<Vec<u8>>,
    server_got: Vec<Vec<u8>>,
    client_events: Vec<(Instant, Event)>,
    server_events: Vec<(Instant, Event)>,
    client_key: StaticKeypair,
    server_key: StaticKeypair,
    /// Datagrams the server sent, all kinds.
    server_sent: u64,
    /// Number of the next packet `exchange` sends each way.
    next_number: u32,
    /// Longest datagram the client sent.
    longest_to_server: usize,
    /// Where the server is: datagrams the client sends elsewhere are lost.
    server_addr: SocketAddr,
}

fn client_config(client: &StaticKeypair, server: &PublicKey, delays: &[u64]) -> ClientConfig {
    ClientConfig {
        local: client.clone(),
        server: *server,
        psk: None,
        paths: delays
            .iter()
            .enumerate()
            .map(|(i, _)| PathConfig {
                name: format!("p{i}"),
                role: PathRole::Primary,
                cost: 1.0,
                remote: addr(SERVER),
                rate_limit_bps: None,
            })
            .collect(),
        session: SessionConfig::default(),
    }
}

fn endpoint_config(server: &StaticKeypair, clients: &[PublicKey]) -> EndpointConfig {
    EndpointConfig {
        local: server.clone(),
        peers: clients
            .iter()
            .map(|k| PeerConfig {
                public_key: *k,
                psk: None,
            })
            .collect(),
        session: SessionConfig::default(),
        handshakes_per_second: 20,
    }
}

impl Pair {
    fn new(delays: &[u64]) -> Pair {
        let (ck, sk) = (keypair(1), keypair(2));
        let client = Session::client(client_config(&ck, &sk.public, delays), [7; 32]).unwrap();
        Pair::with(client, ck, sk, delays)
    }

    fn with(client: Session, ck: StaticKeypair, sk: StaticKeypair, delays: &[u64]) -> Pair {
        let server = Endpoint::new(endpoint_config(&sk, &[ck.public]), [8; 32]).unwrap();
        Pair {
            now: Instant::from_nanos(1_000_000_000),
            client,
            server,
            links: delays
                .iter()
                .enumerate()
                .map(|(i, &d)| Link {
                    delay: ms(d),
                    up: true,
                    back_up: true,
                    client_addr: addr(&format!("198.51.100.{}:4000", i + 1)),
                    rate_bps: None,
                    free_at: [Instant::ZERO; 2],
                })
                .collect(),
            flights: Vec::new(),
            client_got: Vec::new(),
            server_got: Vec::new(),
            client_events: Vec::new(),
            server_events: Vec::new(),
            client_key: ck,
            server_key: sk,
            server_sent: 0,
            next_number: 0,
            longest_to_server: 0,
            server_addr: addr(SERVER),
        }
    }

    /// Moves every output of both sides onto the links.
    fn flush(&mut self) {
        let mut buf = vec![0u8; MAX_DATAGRAM_LEN];
        while let Some(t) = self.client.poll_transmit(self.now, &mut buf) {
            if t.remote == self.server_addr {
                self.launch(usize::from(t.path), true, buf[..t.len].to_vec());
            }
        }
        while let Some((_, t)) = self.server.poll_transmit(self.now, &mut buf) {
            self.server_sent += 1;
            // An address no NAT maps any more goes nowhere.
            if let Some(path) = self.links.iter().position(|l| l.client_addr == t.remote) {
                self.launch(path, false, buf[..t.len].to_vec());
            }
        }
        while let Some(d) = self.client.poll_deliver() {
            self.client_got.push(d.payload);
        }
        while let Some((_, d)) = self.server.poll_deliver() {
            self.server_got.push(d.payload);
        }
        while let Some(e) = self.client.poll_event() {
            self.client_events.push((self.now, e));
        }
        while let Some((_, e)) = self.server.poll_event() {
            self.server_events.push((self.now, e));
        }
    }

    fn launch(&mut self, path: usize, to_server: bool, bytes: Vec<u8>) {
        if to_server {
            self.longest_to_server = self.longest_to_server.max(bytes.len());
        }
        let now = self.now;
        let link = &mut self.links[path];
        if link.up && (to_server || link.back_up) {
            let mut leaves = now;
            if let Some(rate) = link.rate_bps {
                let free = &mut link.free_at[usize::from(!to_server)];
                let ip_bytes = bytes.len() + crate::wire::IP_UDP_OVERHEAD;
                *free = now.max(*free) + Duration::from_secs_f64(ip_bytes as f64 * 8.0 / rate);
                leaves = *free;
            }
            self.flights.push(Flight {
                at: leaves + link.delay,
                path,
                to_server,
                bytes,
            });
        }
    }

    /// Runs until `until`, delivering datagrams and firing timers in order.
    fn run(&mut self, until: Instant) {
        loop {
            self.flush();
            let next_flight = self.flights.iter().map(|f| f.at).min();
            let next = [
                next_flight,
                self.client.poll_timeout(),
                self.server.poll_timeout(),
            ]
            .into_iter()
            .flatten()
            .min();
            let Some(next) = next.filter(|&t| t <= until) else {
                self.now = until;
                return;
            };
            self.now = self.now.max(next);
            if let Some(i) = self.flights.iter().position(|f| f.at <= self.now) {
                let mut f = self.flights.remove(i);
                if !self.links[f.path].up {
                    continue;
                }
                if f.to_server {
                    let from = self.links[f.path].client_addr;
                    let _ = self.server.handle_datagram(self.now, from, &mut f.bytes);
                } else {
                    let _ = self.client.handle_datagram(
                        self.now,
                        Some(f.path as u8),
                        self.server_addr,
                        &mut f.bytes,
                    );
                }
                continue;
            }
            if self.client.poll_timeout().is_some_and(|t| t <= self.now) {
                self.client.handle_timeout(self.now);
            }
            if self.server.poll_timeout().is_some_and(|t| t <= self.now) {
                self.server.handle_timeout(self.now);
            }
        }
    }

    fn run_for(&mut self, d: Duration) {
        let until = self.now + d;
        self.run(until);
    }

    fn peer(&self) -> PeerId {
        self.server.peer_id(&self.client_key.public).unwrap()
    }

    /// Sends `n` packets each way, numbered on from the last call, one
    /// every `gap`, and runs on.
    fn exchange(&mut self, n: u32, gap: Duration) {
        for _ in 0..n {
            let i = self.next_number;
            self.next_number += 1;
            let up = self.client.send(self.now, tagged(0, i));
            let down = self.server.send(self.now, self.peer(), tagged(1, i));
            assert_eq!((up, down), (Ok(()), Ok(())), "send {i}");
            self.run_for(gap);
        }
    }
}

fn tagged(dir: u8, i: u32) -> Vec<u8> {
    let mut p = vec![dir; 200];
    p[1..5].copy_from_slice(&i.to_be_bytes());
    p
}

fn connected(delays: &[u64]) -> Pair {
    let mut pair = Pair::new(delays);
    pair.run_for(ms(500));
    assert!(pair.client.is_connected(), "client handshake");
    pair
}

#[test]
fn handshake_then_data_both_ways_in_order() {
    let mut pair = connected(&[10, 30]);
    assert!(matches!(
        pair.client_events[0].1,
        Event::Connected {
            peer_restarted: false
        }
    ));
    assert_eq!(pair.server.stats().sessions, 1);
    pair.exchange(500, ms(2));
    pair.run_for(ms(200));
    let expect_up: Vec<Vec<u8>> = (0..500).map(|i| tagged(0, i)).collect();
    let expect_down: Vec<Vec<u8>> = (0..500).map(|i| tagged(1, i)).collect();
    assert_eq!(pair.server_got, expect_up);
    assert_eq!(pair.client_got, expect_down);
    // Both paths carried data, both are up on both sides.
    let stats = pair.client.stats(pair.now);
    for p in &stats.paths {
        assert_eq!(p.state, PathState::Up, "{}", p.name);
        assert!(p.tx_packets > 50, "{} sent {}", p.name, p.tx_packets);
        assert!(p.rx_packets > 50, "{} received {}", p.name, p.rx_packets);
        assert!(
            p.rx_bytes > 200 * p.rx_packets / 2,
            "{} received {} bytes in {} packets",
            p.name,
            p.rx_bytes,
            p.rx_packets
        );
    }
    assert_eq!(stats.delivered, 500);
    // Path 1 is 20 ms slower: some packets waited for it, on average less
    // than the longest wait.
    assert!(stats.reseq_delay_max > Duration::ZERO);
    assert!(stats.reseq_delay_mean > Duration::ZERO);
    assert!(
        stats.reseq_delay_mean < stats.reseq_delay_max,
        "mean {:?}, max {:?}",
        stats.reseq_delay_mean,
        stats.reseq_delay_max
    );
    // The server's address never changed: no path was "rebound".
    assert!(
        !pair
            .client_events
            .iter()
            .any(|(_, e)| matches!(e, Event::PathRebound { .. })),
        "{:?}",
        pair.client_events
    );
    let server_stats = pair.server.session(pair.peer()).unwrap().stats(pair.now);
    assert!(server_stats.paths.iter().all(|p| p.state == PathState::Up));
    assert_eq!(stats.drops.total(), 0, "{:?}", stats.drops);
}

impl Pair {
    /// Sends `n` packets of `size` bytes each way (numbered as by
    /// `tagged`), one per 1-ms tick.
    fn exchange_in_ticks(&mut self, n: u32, size: usize) {
        for i in 0..n {
            let mut p = tagged(0, i);
            p.resize(size, 0);
            assert_eq!(self.client.send(self.now, p.clone()), Ok(()), "send {i}");
            let peer = self.peer();
            p[0] = 1;
            assert_eq!(self.server.send(self.now, peer, p), Ok(()), "send {i}");
            self.run_in_ticks(ms(1), ms(1));
        }
    }

    /// Runs like a daemon whose timers have a granularity of `tick`: every
    /// tick, whatever arrived and whatever timer expired is handled, then
    /// all output is flushed at once (so feedback and data leave together).
    fn run_in_ticks(&mut self, d: Duration, tick: Duration) {
        let until = self.now + d;
        while self.now < until {
            self.now += tick;
            let (due, later) = std::mem::take(&mut self.flights)
                .into_iter()
                .partition(|f: &Flight| f.at <= self.now);
            self.flights = later;
            for mut f in due {
                if f.to_server {
                    let from = self.links[f.path].client_addr;
                    let _ = self.server.handle_datagram(self.now, from, &mut f.bytes);
                } else {
                    let path = Some(f.path as u8);
                    let _ =
                        self.client
                            .handle_datagram(self.now, path, self.server_addr, &mut f.bytes);
                }
            }
            if self.client.poll_timeout().is_some_and(|t| t <= self.now) {
                self.client.handle_timeout(self.now);
            }
            if self.server.poll_timeout().is_some_and(|t| t <= self.now) {
                self.server.handle_timeout(self.now);
            }
            self.flush();
        }
    }
}

/// Feedback rides with data where it fits: with small packets both ways,
/// and with data packets nearly as large as the tunnel MTU (an
/// acknowledgement, 24 bytes, still fits beside each in a bundle, 4
/// bytes, that carries the data packet's whole header, 6 bytes more than
/// a data message's, up to the size of a full data message: at 33 bytes
/// under the MTU), each side's acknowledgements leave inside its next
/// data datagram instead of a datagram of their own.
#[test]
fn feedback_rides_with_data_where_it_fits() {
    for size in [200, SessionConfig::default().tunnel_mtu - 33] {
        let mut pair = connected(&[10]);
        let sent = |pair: &Pair| pair.client.stats(pair.now).paths[0].tx_packets;
        let before = sent(&pair);
        pair.exchange_in_ticks(300, size);
        pair.run_in_ticks(ms(200), ms(1));
        assert_eq!(pair.server_got.len(), 300);
        let datagrams = sent(&pair) - before;
        assert!(
            datagrams < 300 + 60,
            "{datagrams} datagrams for 300 packets of {size} bytes"
        );
    }
}

/// A handshake response that the owner reports on a path the client does
/// not have still completes the handshake (no path is credited with it).
#[test]
fn a_response_on_an_unknown_path_completes_the_handshake_harmlessly() {
    let mut pair = Pair::new(&[10]);
    pair.client.handle_timeout(pair.now);
    let mut buf = vec![0u8; MAX_DATAGRAM_LEN];
    let t = pair.client.poll_transmit(pair.now, &mut buf).unwrap();
    let from = pair.links[0].client_addr;
    let now = pair.now;
    pair.server
        .handle_datagram(now, from, &mut buf[..t.len].to_vec())
        .unwrap();
    let (_, r) = pair.server.poll_transmit(now, &mut buf).unwrap();
    let mut response = buf[..r.len].to_vec();
    assert_eq!(
        pair.client
            .handle_datagram(now, Some(1), addr(SERVER), &mut response),
        Ok(())
    );
    assert!(pair.client.is_connected());
    assert_eq!(pair.client.stats(now).paths[0].rx_packets, 0);
}

#[test]
fn feedback_bundled_with_full_size_packets_stays_within_the_path_mtu() {
    let mut pair = connected(&[10]);
    let mtu = SessionConfig::default().tunnel_mtu;
    // Full-size inner packets both ways, handled in 1-ms ticks: each side
    // has feedback to send while full packets wait in its queue, and
    // bundles the two.
    pair.exchange_in_ticks(300, mtu);
    pair.run_in_ticks(ms(500), ms(1));
    assert_eq!(pair.server_got.len(), 300);
    assert_eq!(pair.client_got.len(), 300);
    assert!(
        pair.longest_to_server <= mtu + SESSION_OVERHEAD,
        "a datagram of {} bytes, more than the tunnel MTU {mtu} + {SESSION_OVERHEAD}",
        pair.longest_to_server
    );
}

#[test]
fn wrong_client_key_gets_no_reply_and_no_state() {
    // A client the server does not know, with the right server key.
    let stranger = keypair(99);
    let sk = keypair(2);
    let client = Session::client(client_config(&stranger, &sk.public, &[10]), [3; 32]).unwrap();
    let mut pair = Pair::with(client, keypair(1), sk, &[10]);
    pair.run_for(ms(3_500));
    assert!(!pair.client.is_connected());
    assert_eq!(pair.server_sent, 0, "the server must not answer");
    let stats = pair.server.stats();
    assert_eq!(stats.sessions, 0);
    assert!(
        stats.drops.count(DropReason::UnknownPeer) >= 3,
        "{:?}",
        stats.drops
    );
    assert_eq!(stats.handshakes_accepted, 0);
}

#[test]
fn wrong_server_key_fails_mac1_before_any_work() {
    let ck = keypair(1);
    let real = keypair(2);
    let client = Session::client(client_config(&ck, &keypair(50).public, &[10]), [3; 32]).unwrap();
    let mut pair = Pair::with(client, ck, real, &[10]);
    pair.run_for(ms(2_500));
    let stats = pair.server.stats();
    assert_eq!(pair.server_sent, 0);
    assert_eq!(stats.sessions, 0);
    assert!(stats.drops.count(DropReason::HandshakeInvalid) >= 2);
    assert_eq!(
        stats.drops.count(DropReason::RateLimited),
        0,
        "mac1 is checked before the rate limit"
    );
    let _ = &pair.server_key;
}

fn first_event(events: &[(Instant, Event)], pred: impl Fn(&Event) -> bool) -> Option<Instant> {
    events.iter().find(|(_, e)| pred(e)).map(|(t, _)| *t)
}

/// Packets of direction `dir` delivered, in order of delivery.
fn numbers(got: &[Vec<u8>]) -> Vec<u32> {
    got.iter()
        .map(|p| u32::from_be_bytes([p[1], p[2], p[3], p[4]]))
        .collect()
}

#[test]
fn failover_marks_the_path_down_within_300ms_and_traffic_continues() {
    let mut pair = connected(&[10, 30]);
    pair.exchange(100, ms(5));
    let cut = pair.now;
    pair.links[0].up = false;
    pair.exchange(200, ms(5));
    pair.run_for(ms(200));
    let down = |e: &Event| matches!(e, Event::PathDown { path: 0, .. });
    let client_down = first_event(&pair.client_events, down).expect("client marks path 0 down");
    let server_down = first_event(&pair.server_events, down).expect("server marks path 0 down");
    assert!(
        client_down - cut <= ms(300),
        "client took {:?}",
        client_down - cut
    );
    assert!(
        server_down - cut <= ms(300),
        "server took {:?}",
        server_down - cut
    );
    assert!(!pair
        .client_events
        .iter()
        .any(|(_, e)| matches!(e, Event::PathDown { path: 1, .. })));
    // Everything offered once both sides knew arrived, in order.
    let settled = 100 + (client_down.max(server_down) - cut).as_millis() as u32 / 5 + 1;
    for (got, side) in [(&pair.server_got, "server"), (&pair.client_got, "client")] {
        let n = numbers(got);
        assert!(n.windows(2).all(|w| w[0] < w[1]), "{side}: out of order");
        for i in settled..300 {
            assert!(n.contains(&i), "{side} lost {i} after the failover");
        }
    }
    // The path comes back when it answers again.
    let back = pair.now;
    pair.links[0].up = true;
    pair.run_for(ms(500));
    let up = pair
        .client_events
        .iter()
        .filter(|(t, e)| *t >= back && matches!(e, Event::PathUp { path: 0, .. }))
        .map(|(t, _)| *t)
        .next()
        .expect("path 0 back up");
    assert!(up - back <= ms(150), "path back after {:?}", up - back);
}

#[test]
fn nat_rebinding_mid_transfer_keeps_the_session() {
    let mut pair = connected(&[10, 20]);
    pair.exchange(100, ms(4));
    let old = pair.links[1].client_addr;
    let new = addr("203.0.113.9:6000");
    pair.links[1].client_addr = new;
    pair.exchange(200, ms(4));
    pair.run_for(ms(300));
    assert!(pair.server_events.iter().any(|(_, e)| *e
        == Event::PathRebound {
            path: 1,
            from: old,
            to: new
        }));
    let server = pair.server.session(pair.peer()).unwrap().stats(pair.now);
    assert_eq!(server.paths[1].remote, Some(new));
    assert_eq!(server.paths[1].state, PathState::Up);
    // Both ways, only what was in flight at the rebinding may be missing.
    assert!(
        pair.server_got.len() >= 295,
        "server got {}",
        pair.server_got.len()
    );
    assert!(
        pair.client_got.len() >= 290,
        "client got {}",
        pair.client_got.len()
    );
    let n = numbers(&pair.client_got);
    assert!(
        (150..300).all(|i| n.contains(&i)),
        "traffic after the rebinding lost"
    );
    assert!(!pair
        .client_events
        .iter()
        .any(|(_, e)| matches!(e, Event::PathDown { .. })));
}

#[test]
fn rekey_during_transfer_loses_nothing() {
    let (ck, sk) = (keypair(1), keypair(2));
    let mut config = client_config(&ck, &sk.public, &[10, 25]);
    config.session.rekey_after = ms(700);
    let client = Session::client(config, [7; 32]).unwrap();
    let mut pair = Pair::with(client, ck, sk, &[10, 25]);
    pair.run_for(ms(300));
    pair.exchange(1000, ms(3));
    pair.run_for(ms(300));
    let rekeys = |ev: &[(Instant, Event)]| ev.iter().filter(|(_, e)| *e == Event::Rekeyed).count();
    assert!(
        rekeys(&pair.client_events) >= 3,
        "client rekeyed {}",
        rekeys(&pair.client_events)
    );
    assert_eq!(rekeys(&pair.server_events), rekeys(&pair.client_events));
    assert_eq!(numbers(&pair.server_got), (0..1000).collect::<Vec<_>>());
    assert_eq!(numbers(&pair.client_got), (0..1000).collect::<Vec<_>>());
    let server = pair.server.session(pair.peer()).unwrap().stats(pair.now);
    let client = pair.client.stats(pair.now);
    assert_eq!(client.drops.total(), 0, "{:?}", client.drops);
    assert_eq!(server.drops.total(), 0, "{:?}", server.drops);
    assert_eq!(
        pair.server.stats().drops.total(),
        0,
        "{:?}",
        pair.server.stats().drops
    );
}

#[test]
fn server_restart_client_reconnects_by_itself() {
    let mut pair = connected(&[10, 20]);
    pair.exchange(50, ms(5));
    // The server process restarts: same key, no state.
    let restart = pair.now;
    pair.server = Endpoint::new(
        endpoint_config(&pair.server_key, &[pair.client_key.public]),
        [9; 32],
    )
    .unwrap();
    pair.run_for(ms(3_000));
    let back = first_event(&pair.client_events, |e| {
        *e == Event::Connected {
            peer_restarted: true,
        }
    })
    .expect("client reconnects");
    assert!(
        back - restart <= ms(2_500),
        "reconnected after {:?}",
        back - restart
    );
    pair.server_got.clear();
    pair.client_got.clear();
    pair.exchange(50, ms(5));
    pair.run_for(ms(200));
    assert_eq!(numbers(&pair.server_got), (50..100).collect::<Vec<_>>());
    assert_eq!(numbers(&pair.client_got), (50..100).collect::<Vec<_>>());
}

/// The server restarts at a new address (a dynamic-DNS host that got a
/// new one): it has no session, so it sends nothing the client could
/// follow, and what the client sends to the old address is lost, until
/// its owner, having resolved the server's name again, gives it the new
/// address. The client then reconnects and carries data on every path.
#[test]
fn a_server_that_moved_is_reached_at_the_address_it_is_given() {
    let mut pair = connected(&[10, 30]);
    pair.exchange(20, ms(5));
    let moved = addr("203.0.113.9:6000");
    pair.server_addr = moved;
    // What the old server had in flight went down with it.
    pair.flights.clear();
    pair.server = Endpoint::new(
        endpoint_config(&pair.server_key, &[pair.client_key.public]),
        [9; 32],
    )
    .unwrap();
    pair.run_for(ms(3_000));
    assert!(
        pair.client
            .stats(pair.now)
            .paths
            .iter()
            .all(|p| p.state != PathState::Up),
        "nothing reaches the server at its old address"
    );
    let heard = pair.client.last_heard().expect("heard before the move");
    assert!(pair.now - heard >= ms(2_900), "{:?}", pair.now - heard);
    assert!(pair.client.set_server_address(moved));
    assert!(
        !pair.client.set_server_address(moved),
        "nothing left to change"
    );
    pair.run_for(ms(2_000));
    assert!(pair.client.last_heard().is_some_and(|t| t > heard));
    let stats = pair.client.stats(pair.now);
    assert!(
        stats.paths.iter().all(|p| p.state == PathState::Up),
        "{:?}",
        stats.paths.iter().map(|p| p.state).collect::<Vec<_>>()
    );
    pair.server_got.clear();
    pair.client_got.clear();
    pair.exchange(20, ms(5));
    pair.run_for(ms(200));
    assert_eq!(numbers(&pair.server_got), (20..40).collect::<Vec<_>>());
    assert_eq!(numbers(&pair.client_got), (20..40).collect::<Vec<_>>());
    // A server's sessions answer their clients where they are: no address
    // to set.
    let peer = pair.peer();
    let server_side = pair.server.session_mut(peer).unwrap();
    assert!(!server_side.set_server_address(addr(SERVER)));
}

#[test]
fn client_restart_resets_the_server_session() {
    let mut pair = connected(&[10]);
    pair.exchange(20, ms(5));
    let config = client_config(&pair.client_key, &pair.server_key.public, &[10]);
    pair.client = Session::client(config, [11; 32]).unwrap();
    pair.run_for(ms(500));
    assert!(pair.client.is_connected());
    assert!(pair.server_events.iter().any(|(_, e)| *e
        == Event::Connected {
            peer_restarted: true
        }));
    pair.server_got.clear();
    pair.client_got.clear();
    pair.exchange(20, ms(5));
    pair.run_for(ms(100));
    assert_eq!(numbers(&pair.server_got), (20..40).collect::<Vec<_>>());
    assert_eq!(numbers(&pair.client_got), (20..40).collect::<Vec<_>>());
}

#[test]
fn backup_path_carries_data_only_while_no_primary_is_up() {
    let (ck, sk) = (keypair(1), keypair(2));
    let mut config = client_config(&ck, &sk.public, &[10, 10]);
    config.paths[1].role = PathRole::Backup;
    let client = Session::client(config, [7; 32]).unwrap();
    let mut pair = Pair::with(client, ck, sk, &[10, 10]);
    pair.run_for(ms(300));
    let data_before = |pair: &Pair| {
        let c = pair.client.stats(pair.now);
        let s = pair.server.session(pair.peer()).unwrap().stats(pair.now);
        (c.paths[1].tx_bytes, s.paths[1].tx_bytes)
    };
    let (c0, s0) = data_before(&pair);
    pair.exchange(200, ms(5));
    let (c1, s1) = data_before(&pair);
    // Probes and their answers only: well under one data packet per 10 ms.
    assert!(
        c1 - c0 < 100 * 80,
        "client used the backup: {} bytes",
        c1 - c0
    );
    assert!(
        s1 - s0 < 100 * 80,
        "server used the backup: {} bytes",
        s1 - s0
    );
    pair.links[0].up = false;
    pair.exchange(200, ms(5));
    let (c2, s2) = data_before(&pair);
    assert!(
        c2 - c1 > 150 * 200,
        "client did not fail over: {} bytes",
        c2 - c1
    );
    assert!(
        s2 - s1 > 150 * 200,
        "server did not fail over: {} bytes",
        s2 - s1
    );
}

#[test]
fn a_path_demoted_at_run_time_stops_carrying_data_both_ways_until_restored() {
    // Path 1 is the faster one: earliest-arrival sends on it whenever it
    // may.
    let mut pair = connected(&[30, 10]);
    let on_path1 = |pair: &Pair| {
        let c = pair.client.stats(pair.now);
        let s = pair.server.session(pair.peer()).unwrap().stats(pair.now);
        (c.paths[1].tx_bytes, s.paths[1].tx_bytes)
    };
    let (c0, s0) = on_path1(&pair);
    pair.exchange(200, ms(5));
    let (c1, s1) = on_path1(&pair);
    assert!(
        c1 - c0 > 150 * 50,
        "path 1 idle as a primary: {} bytes",
        c1 - c0
    );
    assert!(
        s1 - s0 > 150 * 50,
        "server left path 1 idle: {} bytes",
        s1 - s0
    );

    let handshakes = pair.client.stats(pair.now).handshakes;
    pair.client
        .set_path_role(pair.now, 1, PathRole::Backup)
        .unwrap();
    // The server learns the new role from the rekey started at once.
    pair.run_for(ms(100));
    assert_eq!(pair.client.stats(pair.now).handshakes, handshakes + 1);
    let server_roles = |pair: &Pair| {
        let s = pair.server.session(pair.peer()).unwrap().stats(pair.now);
        s.paths.iter().map(|p| p.role).collect::<Vec<_>>()
    };
    assert_eq!(server_roles(&pair), [PathRole::Primary, PathRole::Backup]);
    let (c2, s2) = on_path1(&pair);
    pair.exchange(200, ms(5));
    let (c3, s3) = on_path1(&pair);
    // Probes and their answers only, as for a configured backup.
    assert!(
        c3 - c2 < 100 * 80,
        "client used the demoted path: {} bytes",
        c3 - c2
    );
    assert!(
        s3 - s2 < 100 * 80,
        "server used the demoted path: {} bytes",
        s3 - s2
    );
    assert_eq!(pair.client.stats(pair.now).paths[1].role, PathRole::Backup);

    pair.client
        .set_path_role(pair.now, 1, PathRole::Primary)
        .unwrap();
    pair.run_for(ms(100));
    assert_eq!(server_roles(&pair), [PathRole::Primary, PathRole::Primary]);
    let (c4, s4) = on_path1(&pair);
    pair.exchange(200, ms(5));
    let (c5, s5) = on_path1(&pair);
    assert!(c5 - c4 > 150 * 50, "restored path idle: {} bytes", c5 - c4);
    assert!(
        s5 - s4 > 150 * 50,
        "server left the restored path idle: {} bytes",
        s5 - s4
    );
    // Nothing was lost across the two rekeys, which both ends count.
    pair.run_for(ms(200));
    assert_eq!(numbers(&pair.server_got), (0..600).collect::<Vec<_>>());
    assert_eq!(numbers(&pair.client_got), (0..600).collect::<Vec<_>>());
    let server = pair.server.session(pair.peer()).unwrap().stats(pair.now);
    assert_eq!((server.handshakes, server.rekeys), (3, 2));
    let client = pair.client.stats(pair.now);
    assert_eq!((client.handshakes, client.rekeys), (3, 2));
}

/// Before any data, a path's round trip is its probes': exactly twice its
/// one-way delay here (the server answers a probe at once).
#[test]
fn probes_measure_each_paths_round_trip_before_any_data() {
    // The third path's round trip (200 ms) is three probe intervals: later
    // probes leave before the answer to the first comes, and its answer
    // must still be matched (it once never was, and the path showed no
    // round trip until data measured one).
    let mut pair = connected(&[10, 30, 100]);
    pair.run_for(ms(300));
    let stats = pair.client.stats(pair.now);
    let rtts: Vec<_> = stats.paths.iter().map(|p| p.rtt).collect();
    assert_eq!(rtts, [Some(ms(20)), Some(ms(60)), Some(ms(200))]);
    for p in &stats.paths {
        assert!(p.probes_sent >= 3, "{}: {} probes", p.name, p.probes_sent);
    }
}

/// A path made overflow at run time (earliest-arrival) carries none of a
/// light load the primary path takes alone, though it is the quicker one;
/// made primary again, it carries most of it (it is the quicker one).
#[test]
fn a_path_made_overflow_at_run_time_carries_only_what_the_primary_cannot() {
    let mut pair = connected(&[10, 5]);
    let data_on = |pair: &Pair, i: usize| pair.client.sender().path(i).counters.sent_packets;
    let server_data_on = |pair: &Pair, i: usize| {
        let session = pair.server.session(pair.peer()).unwrap();
        session.sender().path(i).counters.sent_packets
    };
    let now = pair.now;
    pair.client
        .set_path_role(now, 1, PathRole::Overflow)
        .unwrap();
    assert_eq!(pair.client.stats(now).paths[1].role, PathRole::Overflow);
    // The server learns the role from the handshake the change starts
    // (at once, or a retry interval after the last handshake).
    pair.run_for(SessionConfig::default().handshake_retry + ms(100));
    let server = pair.server.session(pair.peer()).unwrap().stats(pair.now);
    assert_eq!(server.paths[1].role, PathRole::Overflow);
    let before = (data_on(&pair, 0), data_on(&pair, 1));
    let server_before = server_data_on(&pair, 1);
    // 200-byte packets every 5 ms: 0.3 Mbit/s, nothing for an ideal path.
    pair.exchange(100, ms(5));
    assert_eq!(
        server_data_on(&pair, 1),
        server_before,
        "the server did not use it either"
    );
    assert!(
        data_on(&pair, 0) - before.0 >= 100,
        "the primary carried it"
    );
    assert_eq!(
        data_on(&pair, 1),
        before.1,
        "the overflow path carried none"
    );
    let now = pair.now;
    pair.client
        .set_path_role(now, 1, PathRole::Primary)
        .unwrap();
    let before = data_on(&pair, 1);
    pair.exchange(100, ms(5));
    let carried = data_on(&pair, 1) - before;
    assert!(
        carried >= 50,
        "primary again: it carries ({carried}; path 0 {})",
        data_on(&pair, 0)
    );
}

#[test]
fn set_path_role_refuses_what_it_cannot_do() {
    let mut pair = connected(&[10, 10]);
    let now = pair.now;
    assert_eq!(
        pair.client.set_path_role(now, 2, PathRole::Backup),
        Err(SetRoleError::UnknownPath(2))
    );
    let peer = pair.peer();
    let server_session = pair.server.session_mut(peer).unwrap();
    assert_eq!(
        server_session.set_path_role(now, 0, PathRole::Backup),
        Err(SetRoleError::NotClient)
    );
    // The same role again starts no handshake.
    let handshakes = pair.client.stats(now).handshakes;
    pair.client
        .set_path_role(now, 0, PathRole::Primary)
        .unwrap();
    pair.run_for(ms(100));
    assert_eq!(pair.client.stats(pair.now).handshakes, handshakes);

    let (ck, sk) = (keypair(1), keypair(2));
    let mut config = client_config(&ck, &sk.public, &[10, 10]);
    config.session.scheduler = "min-rtt".into();
    let mut client = Session::client(config, [7; 32]).unwrap();
    assert_eq!(
        client.set_path_role(Instant::ZERO, 1, PathRole::Overflow),
        Err(SetRoleError::OverflowUnsupported("min-rtt"))
    );
    assert_eq!(client.stats(Instant::ZERO).paths[1].role, PathRole::Primary);
}

/// Captures the next datagram the client sends (a transport message once
/// connected), without delivering it.
fn capture_client_datagram(pair: &mut Pair) -> Vec<u8> {
    pair.client.send(pair.now, tagged(0, 9999)).unwrap();
    let mut buf = vec![0u8; MAX_DATAGRAM_LEN];
    let t = pair.client.poll_transmit(pair.now, &mut buf).unwrap();
    buf[..t.len].to_vec()
}

#[test]
fn hostile_datagrams_are_dropped_and_counted() {
    let mut pair = connected(&[10]);
    let from = pair.links[0].client_addr;
    let good = capture_client_datagram(&mut pair);
    assert!(
        crate::wire::is_data_first_byte(good[0]),
        "a data message: {}",
        good[0]
    );
    let now = pair.now;
    let mut feed = |bytes: &[u8]| pair.server.handle_datagram(now, from, &mut bytes.to_vec());
    assert!(feed(&good).is_ok());
    assert_eq!(feed(&good), Err(DropReason::Replayed));
    assert_eq!(feed(&[]), Err(DropReason::Truncated));
    assert_eq!(
        feed(&good[..TRANSPORT_OVERHEAD - 1]),
        Err(DropReason::Truncated)
    );
    assert_eq!(
        feed(&vec![TRANSPORT_TYPE; MAX_DATAGRAM_LEN + 1]),
        Err(DropReason::Oversized)
    );
    assert_eq!(feed(&[0x77; 100]), Err(DropReason::UnknownType));
    // The longest datagram a session sends is not oversized.
    assert_eq!(
        feed(&vec![0x77; MAX_DATAGRAM_LEN]),
        Err(DropReason::UnknownType)
    );
    let mut unknown = good.clone();
    unknown[1] ^= 0xff;
    assert_eq!(feed(&unknown), Err(DropReason::UnknownIndex));
    let mut flipped = good.clone();
    *flipped.last_mut().unwrap() ^= 1;
    flipped[6..10].copy_from_slice(&1000u32.to_be_bytes());
    assert_eq!(feed(&flipped), Err(DropReason::Authentication));
    // A data message naming a path no session may have is refused before
    // any cryptography (and counted as malformed).
    let mut far = good.clone();
    far[5] = MAX_SESSION_PATHS as u8;
    assert_eq!(feed(&far), Err(DropReason::Malformed));
    assert_eq!(feed(&[RESPONSE_TYPE; 60]), Err(DropReason::Unexpected));
    assert_eq!(
        feed(&[INITIATION_TYPE; 150]),
        Err(DropReason::HandshakeInvalid)
    );
    let endpoint = pair.server.stats();
    let session = pair.server.session(pair.peer()).unwrap().stats(now);
    // Endpoint-level and session-level drops, one each, nothing else.
    for (reason, n) in [
        (DropReason::Truncated, 2),
        (DropReason::Oversized, 1),
        (DropReason::UnknownType, 2),
        (DropReason::UnknownIndex, 1),
        (DropReason::Unexpected, 1),
        (DropReason::HandshakeInvalid, 1),
    ] {
        assert_eq!(endpoint.drops.count(reason), n, "{reason:?}");
    }
    assert_eq!(session.drops.count(DropReason::Replayed), 1);
    assert_eq!(session.drops.count(DropReason::Authentication), 1);
    assert_eq!(session.drops.count(DropReason::Malformed), 1);
    assert_eq!(endpoint.drops.total() + session.drops.total(), 11);
    assert_eq!(endpoint.sessions, 1);
    // The same at the client.
    let mut garbage = vec![0x42u8; 40];
    assert_eq!(
        pair.client
            .handle_datagram(now, Some(0), addr(SERVER), &mut garbage),
        Err(DropReason::UnknownType)
    );
    let mut init = vec![INITIATION_TYPE; 150];
    assert_eq!(
        pair.client
            .handle_datagram(now, Some(0), addr(SERVER), &mut init),
        Err(DropReason::Unexpected)
    );
}

/// A client session's config is refused at its limits' first bad value:
/// no path, one path too many, a tunnel MTU one byte outside its range.
#[test]
fn a_client_config_is_refused_just_past_its_limits() {
    let (ck, sk) = (keypair(1), keypair(2));
    let build = |paths: usize, mtu: usize| {
        let mut config = client_config(&ck, &sk.public, &vec![10; paths]);
        config.session.tunnel_mtu = mtu;
        Session::client(config, [7; 32]).map(|_| ())
    };
    let mtu = SessionConfig::default().tunnel_mtu;
    assert_eq!(build(0, mtu), Err(ConfigError::NoPaths));
    assert_eq!(build(MAX_SESSION_PATHS, mtu), Ok(()));
    assert_eq!(
        build(MAX_SESSION_PATHS + 1, mtu),
        Err(ConfigError::TooManyPaths(MAX_SESSION_PATHS + 1))
    );
    assert_eq!(build(1, MIN_TUNNEL_MTU), Ok(()));
    assert_eq!(build(1, MAX_TUNNEL_MTU), Ok(()));
    for bad in [MIN_TUNNEL_MTU - 1, MAX_TUNNEL_MTU + 1] {
        assert_eq!(build(1, bad), Err(ConfigError::TunnelMtu(bad)));
    }
}

/// A server that lists one client twice is refused, and the message names
/// the key as a user wrote it (base64), not as a debug dump.
#[test]
fn a_peer_listed_twice_is_refused_by_its_key() {
    let (ck, sk) = (keypair(1), keypair(2));
    let Err(e) = Endpoint::new(endpoint_config(&sk, &[ck.public, ck.public]), [8; 32]) else {
        panic!("a peer listed twice was accepted");
    };
    assert_eq!(e, ConfigError::DuplicatePeer(ck.public));
    assert_eq!(
        e.to_string(),
        format!("peer {} listed twice", ck.public.to_base64())
    );
}

/// The client's own cheap checks, at their edges: an oversized datagram,
/// and a handshake response too short or too long, each dropped and
/// counted before any cryptography, the pending handshake kept.
#[test]
fn the_clients_cheap_checks_hold_at_their_edges() {
    // The buffer holds the largest datagram at the largest tunnel MTU, with
    // 64 bytes to spare and no more: longer input is refused unread.
    assert_eq!(MAX_DATAGRAM_LEN, MAX_TUNNEL_MTU + SESSION_OVERHEAD + 64);
    let mut pair = Pair::new(&[10]);
    pair.client.handle_timeout(pair.now);
    let now = pair.now;
    let mut feed = |bytes: Vec<u8>| {
        pair.client
            .handle_datagram(now, Some(0), addr(SERVER), &mut bytes.clone())
    };
    assert_eq!(
        feed(vec![0x42; MAX_DATAGRAM_LEN + 1]),
        Err(DropReason::Oversized)
    );
    assert_eq!(
        feed(vec![0x42; MAX_DATAGRAM_LEN]),
        Err(DropReason::UnknownType)
    );
    let shortest = handshake::response_len(0);
    for len in [1, shortest - 1, handshake::MAX_RESPONSE_LEN + 1] {
        assert_eq!(
            feed(vec![RESPONSE_TYPE; len]),
            Err(DropReason::Truncated),
            "{len}"
        );
    }
    for len in [shortest, handshake::MAX_RESPONSE_LEN] {
        assert_eq!(
            feed(vec![RESPONSE_TYPE; len]),
            Err(DropReason::UnknownIndex),
            "{len}"
        );
    }
    let drops = pair.client.stats(now).drops;
    assert_eq!(drops.count(DropReason::Truncated), 3);
    assert_eq!(drops.total(), 7);
    // The pending handshake survived all that.
    pair.run_for(ms(500));
    assert!(pair.client.is_connected());
    assert_eq!(pair.client.stats(pair.now).handshakes, 1);
}

/// Unanswered initiations take the paths in turn, skipping a path whose
/// link is lost; once some paths are up, a new handshake goes on one of
/// those, not on a dead one that happens to be next in turn.
#[test]
fn initiations_take_the_paths_in_turn_and_prefer_live_ones() {
    let (ck, sk) = (keypair(1), keypair(2));
    let mut client =
        Session::client(client_config(&ck, &sk.public, &[10, 10, 10]), [7; 32]).unwrap();
    let mut buf = vec![0u8; MAX_DATAGRAM_LEN];
    let mut initiations = |client: &mut Session, now: &mut Instant, n: usize| {
        let mut paths = Vec::new();
        while paths.len() < n {
            *now = client.poll_timeout().unwrap().max(*now);
            client.handle_timeout(*now);
            while let Some(t) = client.poll_transmit(*now, &mut buf) {
                if buf[0] == INITIATION_TYPE {
                    paths.push(t.path);
                }
            }
        }
        paths
    };
    let mut now = Instant::from_nanos(1_000_000_000);
    assert_eq!(initiations(&mut client, &mut now, 4), [0, 1, 2, 0]);
    client.handle_link_change(now, 1, false);
    assert_eq!(initiations(&mut client, &mut now, 4), [2, 0, 2, 0]);

    // Paths 0 and 1 die; path 2 stays up. A role change starts a handshake
    // at once: it must complete, so it went out on path 2.
    let mut pair = connected(&[10, 10, 10]);
    pair.exchange(20, ms(5));
    pair.links[0].up = false;
    pair.links[1].up = false;
    pair.exchange(100, ms(5));
    let handshakes = pair.client.stats(pair.now).handshakes;
    let retry = SessionConfig::default().handshake_retry;
    for start in 0..3 {
        // Past the retry interval, so the role change's handshake starts at once.
        pair.run_for(retry);
        let now = pair.now;
        let role = [PathRole::Backup, PathRole::Primary][start % 2];
        pair.client.set_path_role(now, 0, role).unwrap();
        pair.run_for(ms(100));
        assert_eq!(
            pair.client.stats(pair.now).handshakes,
            handshakes + 1 + start as u64,
            "handshake {start}"
        );
    }
}

/// Packets a full send queue pushes out (from its longest flow), and
/// packets larger than the whole queue, count among the session's send
/// drops, as stale ones do.
#[test]
fn packets_a_full_send_queue_pushes_out_are_counted_as_dropped() {
    let (ck, sk) = (keypair(1), keypair(2));
    let mut config = client_config(&ck, &sk.public, &[10]);
    config.session.max_queue_bytes = 1_200;
    let client = Session::client(config, [7; 32]).unwrap();
    let mut pair = Pair::with(client, ck, sk, &[10]);
    pair.run_for(ms(500));
    assert!(pair.client.is_connected());
    let now = pair.now;
    // More at once than the paths' windows take and the queue holds.
    for _ in 0..300 {
        pair.client.send(now, vec![7; 1_000]).unwrap();
    }
    for _ in 0..5 {
        assert_eq!(
            pair.client.send(now, vec![7; 1_300]),
            Err(SessionSendError::QueueFull)
        );
    }
    pair.run_for(ms(200));
    let c = &pair.client.sender().counters;
    assert!(c.dropped_overflow > 100, "{c:?}");
    assert_eq!((c.dropped_stale, c.rejected_queue_full), (0, 5), "{c:?}");
    let overflow = c.dropped_overflow;
    assert_eq!(pair.client.stats(pair.now).send_dropped, overflow + 5);
}

#[test]
fn replayed_initiation_gets_no_reply() {
    let mut pair = Pair::new(&[10]);
    // Capture the first initiation before it is delivered.
    pair.client.handle_timeout(pair.now);
    let mut buf = vec![0u8; MAX_DATAGRAM_LEN];
    let t = pair.client.poll_transmit(pair.now, &mut buf).unwrap();
    let init = buf[..t.len].to_vec();
    let from = pair.links[0].client_addr;
    let now = pair.now;
    assert!(pair
        .server
        .handle_datagram(now, from, &mut init.clone())
        .is_ok());
    assert!(
        pair.server.poll_transmit(now, &mut buf).is_some(),
        "the response"
    );
    assert_eq!(
        pair.server
            .handle_datagram(now + ms(10), from, &mut init.clone()),
        Err(DropReason::HandshakeReplayed)
    );
    assert!(
        pair.server.poll_transmit(now, &mut buf).is_none(),
        "no reply to a replay"
    );
    assert_eq!(pair.server.stats().handshakes_accepted, 1);
}

#[test]
fn handshakes_are_rate_limited() {
    let server = keypair(2);
    let mut endpoint =
        Endpoint::new(endpoint_config(&server, &[keypair(1).public]), [1; 32]).unwrap();
    let now = Instant::from_nanos(5_000_000_000);
    let mut msg = vec![0u8; crate::crypto::handshake::MAX_INITIATION_LEN];
    let mut rate_limited = 0;
    for i in 0..100u32 {
        // Strangers that address this server correctly (mac1 passes).
        let stranger = keypair(1000 + u64::from(i));
        let (_, len) = Initiator::start(
            &stranger,
            &server.public,
            &PresharedKey::ZERO,
            [i as u8; 32],
            i,
            b"",
            &mut msg,
        )
        .unwrap();
        if endpoint.handle_datagram(now, addr("198.51.100.7:1"), &mut msg[..len].to_vec())
            == Err(DropReason::RateLimited)
        {
            rate_limited += 1;
        }
    }
    // A burst of 20 tokens, then nothing until they refill.
    assert_eq!(rate_limited, 80);
    let stats = endpoint.stats();
    assert_eq!(stats.drops.count(DropReason::UnknownPeer), 20);
    assert_eq!(stats.sessions, 0);
    // Half a second later ten more are read.
    let later = now + ms(500);
    let stranger = keypair(5000);
    let (_, len) = Initiator::start(
        &stranger,
        &server.public,
        &PresharedKey::ZERO,
        [1; 32],
        1,
        b"",
        &mut msg,
    )
    .unwrap();
    assert_eq!(
        endpoint.handle_datagram(later, addr("198.51.100.7:1"), &mut msg[..len].to_vec()),
        Err(DropReason::UnknownPeer)
    );
}

#[test]
fn keys_are_replaced_after_a_packet_count() {
    let (ck, sk) = (keypair(1), keypair(2));
    let mut config = client_config(&ck, &sk.public, &[10]);
    config.session.rekey_after_packets = 300;
    let client = Session::client(config, [7; 32]).unwrap();
    let mut pair = Pair::with(client, ck, sk, &[10]);
    pair.run_for(ms(300));
    // 900 packets in 3.6 s, with their acknowledgements: a rotation every
    // 300 or so sealed packets, about one per 1.2 s (time alone, 120 s,
    // would give none).
    pair.exchange(900, ms(4));
    pair.run_for(ms(200));
    let rekeys = pair
        .client_events
        .iter()
        .filter(|(_, e)| *e == Event::Rekeyed)
        .count();
    assert!(rekeys >= 2, "{rekeys} rekeys");
    assert_eq!(numbers(&pair.server_got), (0..900).collect::<Vec<_>>());
    assert_eq!(numbers(&pair.client_got), (0..900).collect::<Vec<_>>());
}

#[test]
fn client_checks_the_path_and_refuses_to_send_unconnected() {
    let mut pair = Pair::new(&[10, 10]);
    assert_eq!(
        pair.client.send(pair.now, vec![1; 100]),
        Err(SessionSendError::NotConnected)
    );
    assert_eq!(
        pair.client
            .stats(pair.now)
            .drops
            .count(DropReason::NotConnected),
        1
    );
    pair.run_for(ms(300));
    let too_large = SessionConfig::default().tunnel_mtu + 1;
    assert_eq!(
        pair.client.send(pair.now, vec![1; too_large]),
        Err(SessionSendError::TooLarge(too_large))
    );
    // A datagram the server sent on path 0, arriving on path 1's socket.
    pair.server
        .send(pair.now, pair.peer(), tagged(1, 0))
        .unwrap();
    let mut buf = vec![0u8; MAX_DATAGRAM_LEN];
    let (_, t) = pair.server.poll_transmit(pair.now, &mut buf).unwrap();
    let path = pair
        .links
        .iter()
        .position(|l| l.client_addr == t.remote)
        .unwrap();
    let mut bytes = buf[..t.len].to_vec();
    let other = 1 - path as u8;
    assert_eq!(
        pair.client
            .handle_datagram(pair.now, Some(other), addr(SERVER), &mut bytes.clone()),
        Err(DropReason::WrongPath)
    );
    // The check comes after authentication, which used up the counter:
    // the same datagram again is a replay even on its own path.
    assert_eq!(
        pair.client
            .handle_datagram(pair.now, Some(path as u8), addr(SERVER), &mut bytes),
        Err(DropReason::Replayed)
    );
}

/// Where the two clients of [`two_clients`] send from.
const CLIENT_ADDRS: [&str; 2] = ["198.51.100.1:1", "198.51.100.2:2"];

/// A server that accepts two clients, and the two clients (one path each),
/// not yet connected; the clients' public keys.
fn two_clients() -> (Endpoint, [Session; 2], [PublicKey; 2]) {
    let (a, b, sk) = (keypair(1), keypair(3), keypair(2));
    let keys = [a.public, b.public];
    let server = Endpoint::new(endpoint_config(&sk, &keys), [8; 32]).unwrap();
    let clients = [
        Session::client(client_config(&a, &sk.public, &[1]), [1; 32]).unwrap(),
        Session::client(client_config(&b, &sk.public, &[1]), [2; 32]).unwrap(),
    ];
    (server, clients, keys)
}

/// Every client's timers, then what each sends, handed to the server.
fn clients_transmit(
    server: &mut Endpoint,
    clients: &mut [Session; 2],
    now: Instant,
    buf: &mut [u8],
) {
    for (i, c) in clients.iter_mut().enumerate() {
        c.handle_timeout(now);
        while let Some(t) = c.poll_transmit(now, buf) {
            let _ = server.handle_datagram(now, addr(CLIENT_ADDRS[i]), &mut buf[..t.len]);
        }
    }
}

#[test]
fn two_clients_stay_isolated() {
    let (mut server, mut clients, keys) = two_clients();
    let mut now = Instant::from_nanos(1_000_000_000);
    let mut buf = vec![0u8; MAX_DATAGRAM_LEN];
    let mut got: [Vec<Vec<u8>>; 2] = [Vec::new(), Vec::new()];
    let mut server_got = Vec::new();
    // Traffic from step 20 to 199, then time for the last packets to land.
    for step in 0..260u32 {
        if (20..200).contains(&step) {
            for (i, c) in clients.iter_mut().enumerate() {
                c.send(now, tagged(i as u8, step)).unwrap();
                let peer = server.peer_id(&keys[i]).unwrap();
                server.send(now, peer, tagged(10 + i as u8, step)).unwrap();
            }
        }
        clients_transmit(&mut server, &mut clients, now, &mut buf);
        server.handle_timeout(now);
        while let Some((_, t)) = server.poll_transmit(now, &mut buf) {
            let i = CLIENT_ADDRS
                .iter()
                .position(|f| addr(f) == t.remote)
                .unwrap();
            let _ = clients[i].handle_datagram(now, Some(0), addr(SERVER), &mut buf[..t.len]);
        }
        for (i, c) in clients.iter_mut().enumerate() {
            while let Some(d) = c.poll_deliver() {
                got[i].push(d.payload);
            }
        }
        while let Some((peer, d)) = server.poll_deliver() {
            server_got.push((peer, d.payload));
        }
        now += ms(1);
    }
    assert_eq!(server.stats().sessions, 2);
    for i in 0..2u8 {
        let peer = server.peer_id(&keys[usize::from(i)]).unwrap();
        let from_i: Vec<u32> = server_got
            .iter()
            .filter(|(p, _)| *p == peer)
            .map(|(_, d)| {
                assert_eq!(
                    d[0], i,
                    "a packet of the other client delivered as this one's"
                );
                u32::from_be_bytes([d[1], d[2], d[3], d[4]])
            })
            .collect();
        assert_eq!(from_i, (20..200).collect::<Vec<_>>());
        assert!(got[usize::from(i)].iter().all(|d| d[0] == 10 + i));
        assert_eq!(numbers(&got[usize::from(i)]), (20..200).collect::<Vec<_>>());
    }
}

/// Both ends with `configure` applied to their session settings, after
/// the handshake.
fn connected_with(delays: &[u64], configure: impl Fn(&mut SessionConfig)) -> Pair {
    let (ck, sk) = (keypair(1), keypair(2));
    let mut cc = client_config(&ck, &sk.public, delays);
    configure(&mut cc.session);
    let client = Session::client(cc, [7; 32]).unwrap();
    let mut pair = Pair::with(client, ck.clone(), sk.clone(), delays);
    let mut ec = endpoint_config(&sk, &[ck.public]);
    configure(&mut ec.session);
    pair.server = Endpoint::new(ec, [8; 32]).unwrap();
    pair.run_for(ms(500));
    assert!(pair.client.is_connected(), "client handshake");
    pair
}

/// Both ends with a stream connection inside the session.
fn connected_with_stream(delays: &[u64]) -> Pair {
    connected_with(delays, |s| {
        s.stream = Some(crate::stream::Config::default())
    })
}

#[test]
fn stream_rides_the_session_on_every_path_and_fits_1500_byte_packets() {
    let mut pair = connected_with_stream(&[10, 30]);
    let mut rng = ChaCha20Rng::seed_from_u64(5);
    let mut data = vec![0u8; 400_000];
    rand_chacha::rand_core::RngCore::fill_bytes(&mut rng, &mut data);
    let conn = pair
        .client
        .stream_mut()
        .expect("stream after the handshake");
    let id = conn.open_stream().unwrap();
    assert_eq!(conn.write(id, &data).unwrap(), data.len());
    conn.finish(id).unwrap();
    let peer = pair.peer();
    let mut got = Vec::new();
    let mut buf = vec![0u8; 64 << 10];
    let mut largest = 0;
    for _ in 0..2000 {
        pair.flush();
        largest = largest.max(
            pair.flights
                .iter()
                .map(|f| f.bytes.len())
                .max()
                .unwrap_or(0),
        );
        pair.run_for(ms(5));
        let server = pair.server.session_mut(peer).unwrap();
        let s = server.stream_mut().expect("server stream");
        while let crate::stream::ReadOutcome::Data(n) = s.read(pair.now, id, &mut buf).unwrap() {
            got.extend_from_slice(&buf[..n]);
        }
        if pair.client.stream().unwrap().is_send_complete() {
            break;
        }
    }
    assert!(pair.client.stream().unwrap().is_send_complete());
    assert_eq!(got.len(), data.len());
    assert!(got == data, "the bytes differ");
    // A full segment with the session's framing fills a 1500-byte IPv4
    // packet exactly, and no more.
    assert_eq!(largest + crate::wire::IP_UDP_OVERHEAD, 1500);
    let stats = pair.client.stats(pair.now);
    for p in &stats.paths {
        assert!(
            p.tx_bytes > 20_000,
            "{} carried {} bytes",
            p.name,
            p.tx_bytes
        );
    }
    assert_eq!(stats.drops.total(), 0, "{:?}", stats.drops);
}

#[test]
fn no_stream_connection_unless_configured() {
    let pair = connected(&[10]);
    // A session without `stream` has no connection and refuses stream frames.
    assert!(pair.client.stream().is_none());
    let peer = pair.peer();
    assert!(pair.server.session(peer).unwrap().stream().is_none());
}

#[test]
fn a_path_whose_link_is_lost_goes_down_at_once_and_comes_back_when_answered() {
    let mut pair = connected(&[10, 30]);
    pair.exchange(50, ms(5));
    // The owner says path 0's interface is gone. The emulated link keeps
    // carrying what the server still sends on it: none of that may bring
    // the path back up while the link is reported lost.
    let lost = pair.now;
    pair.client.handle_link_change(lost, 0, false);
    pair.flush();
    let down = |e: &Event| {
        *e == Event::PathDown {
            path: 0,
            reason: PathDownReason::LinkLost,
        }
    };
    assert_eq!(first_event(&pair.client_events, down), Some(lost));
    // Repeating the report changes nothing.
    pair.client.handle_link_change(lost, 0, false);
    let before = pair.client.stats(pair.now).paths[0].clone();
    pair.exchange(100, ms(5));
    pair.run_for(ms(300));
    let s = pair.client.stats(pair.now);
    assert_eq!(s.paths[0].state, PathState::Down);
    assert_eq!(s.paths[0].down_reason, Some(PathDownReason::LinkLost));
    assert!(s.paths[0].link_lost);
    assert_eq!(s.paths[0].times_down, 1);
    assert_eq!(
        s.paths[0].tx_packets, before.tx_packets,
        "nothing sent on a lost link, not even probes"
    );
    assert_eq!(
        s.paths[0].probes_sent, before.probes_sent,
        "no probe even made for it"
    );
    assert!(
        s.paths[0].rx_packets > before.rx_packets,
        "the server still sent on it: heard, yet the path stayed down"
    );
    assert!(
        s.drops.count(DropReason::LinkLost) > 0,
        "feedback for path 0 was dropped, not sent"
    );
    assert!(!pair
        .client_events
        .iter()
        .any(|(t, e)| *t > lost && matches!(e, Event::PathUp { path: 0, .. })));
    assert_eq!(s.paths[1].state, PathState::Up);
    // Everything offered after the report arrived over path 1.
    let n = numbers(&pair.server_got);
    assert!((50..150).all(|i| n.contains(&i)), "lost after the report");

    let back = pair.now;
    pair.client.handle_link_change(back, 0, true);
    pair.flush();
    pair.run_for(ms(200));
    let up = pair
        .client_events
        .iter()
        .find(|(t, e)| *t >= back && matches!(e, Event::PathUp { path: 0, .. }))
        .map(|(t, _)| *t)
        .expect("path 0 up again");
    // The probe goes out at once and its answer takes one round trip.
    assert!(up - back <= ms(25), "up after {:?}", up - back);
    let s = pair.client.stats(pair.now);
    assert_eq!(s.paths[0].state, PathState::Up);
    assert_eq!(s.paths[0].down_reason, None);
    assert!(!s.paths[0].link_lost);
}

/// A silent path is marked down exactly when its silence reaches the
/// limit: the session asks to be woken then, not at its next probe.
#[test]
fn a_silent_path_goes_down_the_moment_its_silence_reaches_the_limit() {
    let mut pair = connected(&[10, 30]);
    pair.exchange(20, ms(5));
    pair.links[0].up = false;
    pair.exchange(100, ms(5));
    let limit = SessionConfig::default().path_down_after;
    let silent = pair.client_events.iter().find_map(|(_, e)| match e {
        Event::PathDown {
            path: 0,
            reason: PathDownReason::Silent(d),
        } => Some(*d),
        _ => None,
    });
    assert_eq!(silent, Some(limit));
}

#[test]
fn a_link_report_for_an_unknown_path_is_ignored() {
    let mut pair = connected(&[10]);
    pair.client.handle_link_change(pair.now, 7, false);
    assert_eq!(pair.client.stats(pair.now).paths[0].state, PathState::Up);
}

#[test]
fn what_a_lost_link_had_in_flight_is_sent_again_on_the_other_path() {
    let mut pair = connected(&[10, 30]);
    pair.exchange(50, ms(5));
    // A burst leaves, mostly on the faster path 0; then its link dies with
    // those packets on it, and the owner reports it at once.
    for i in 50..70 {
        pair.client.send(pair.now, tagged(0, i)).unwrap();
    }
    pair.flush();
    let on_path_0 = pair
        .flights
        .iter()
        .filter(|f| f.to_server && f.path == 0)
        .count();
    assert!(on_path_0 > 0, "the burst must use path 0");
    pair.links[0].up = false;
    pair.client.handle_link_change(pair.now, 0, false);
    // At once, not after path 0's silence (about 25 ms).
    pair.run_for(ms(5));
    assert!(pair.client.stats(pair.now).send_reinjected > 0);
    pair.run_for(ms(300));
    // Re-sent on path 1 with their numbers: nothing of the burst is lost.
    let n = numbers(&pair.server_got);
    assert!((50..70).all(|i| n.contains(&i)), "lost: {n:?}");
    let s = pair.client.stats(pair.now);
    assert!(
        s.send_reinjected as usize >= on_path_0,
        "{}",
        s.send_reinjected
    );
    assert_eq!(s.send_reinjected_bytes, s.send_reinjected * 200);
}

#[test]
fn a_datagram_a_path_lost_is_resent_and_counted_when_resend_losses_is_on() {
    let run = |resend: bool| {
        let mut pair = connected_with(&[10, 30], |s| s.resend_losses = resend);
        pair.exchange(50, ms(5));
        for i in 50..70 {
            pair.client.send(pair.now, tagged(0, i)).unwrap();
        }
        pair.flush();
        // The link loses the first data packet of the burst on path 0.
        let lost = pair
            .flights
            .iter()
            .position(|f| f.to_server && f.path == 0 && f.bytes.len() > 200)
            .expect("a data packet on path 0");
        pair.flights.remove(lost);
        // Later traffic on path 0 shows the gap to the sender.
        for i in 70..90 {
            pair.client.send(pair.now, tagged(0, i)).unwrap();
            pair.run_for(ms(5));
        }
        pair.run_for(ms(300));
        let s = pair.client.stats(pair.now);
        (numbers(&pair.server_got), s)
    };
    let (without, s) = run(false);
    assert_eq!(s.send_resent, 0);
    assert_eq!(without.len(), 89, "one lost without re-sends");
    let (with, s) = run(true);
    assert_eq!(with, (0..90).collect::<Vec<_>>(), "in order, nothing lost");
    assert_eq!(s.send_resent, 1);
    assert_eq!(s.send_resent_bytes, 200);
    assert_eq!(s.send_resend_stale, 0);
}

#[test]
fn a_sparse_flows_datagram_passes_a_bulk_backlog_through_the_session() {
    let mut pair = connected(&[10, 30]);
    pair.exchange(50, ms(5));
    let before = pair.server_got.len();
    // A backlog of a bulk flow, then one datagram of a small flow.
    for i in 0..60u32 {
        let mut p = vec![0; 1200];
        p[1..5].copy_from_slice(&(1000 + i).to_be_bytes());
        pair.client.send_flow(pair.now, 1, p).unwrap();
    }
    pair.client.send_flow(pair.now, 2, tagged(2, 7)).unwrap();
    pair.run_for(ms(2000));
    let got = &pair.server_got[before..];
    let at = got
        .iter()
        .position(|p| p[0] == 2)
        .expect("small flow delivered");
    let bulk = got.iter().filter(|p| p.len() == 1200).count();
    // Sent as an express packet from the head of the window: it is among
    // the first delivered, not behind the backlog that was queued first.
    // (Those that waited past the queue delay limit behind the paths'
    // young windows were dropped: 47 of 60 arrive.)
    assert!(bulk >= 40, "{bulk} bulk datagrams delivered");
    assert!(at < bulk / 4, "small flow's datagram delivered {at}th");
}

/// With several clients the server serves them in turn: transmissions,
/// deliveries and events of one client never starve another's.
#[test]
fn the_server_takes_turns_between_clients() {
    let (mut server, mut clients, keys) = two_clients();
    let mut now = Instant::from_nanos(1_000_000_000);
    let mut buf = vec![0u8; MAX_DATAGRAM_LEN];
    // Handshakes: both clients' initiations reach the server, then its
    // responses reach them.
    clients_transmit(&mut server, &mut clients, now, &mut buf);
    while let Some((_, t)) = server.poll_transmit(now, &mut buf) {
        let i = CLIENT_ADDRS
            .iter()
            .position(|f| addr(f) == t.remote)
            .unwrap();
        let _ = clients[i].handle_datagram(now, Some(0), addr(SERVER), &mut buf[..t.len]);
    }
    let peers = keys.map(|k| server.peer_id(&k).unwrap());
    let mut connected = Vec::new();
    while let Some((peer, event)) = server.poll_event() {
        if matches!(event, Event::Connected { .. }) {
            connected.push(peer);
        }
    }
    connected.sort_by_key(|p| p.0);
    assert_eq!(connected, peers);
    now += ms(1);

    // Four packets each way per client, all ready at once.
    for (i, c) in clients.iter_mut().enumerate() {
        for n in 0..4 {
            c.send(now, tagged(i as u8, n)).unwrap();
            server.send(now, peers[i], tagged(10 + i as u8, n)).unwrap();
        }
    }
    let (mut sent_to, mut delivered_from) = (Vec::new(), Vec::new());
    for _ in 0..50 {
        server.handle_timeout(now);
        while let Some((peer, _)) = server.poll_transmit(now, &mut buf) {
            sent_to.push(peer);
        }
        clients_transmit(&mut server, &mut clients, now, &mut buf);
        while let Some((peer, _)) = server.poll_deliver() {
            delivered_from.push(peer);
        }
        now += ms(1);
    }
    for order in [&sent_to, &delivered_from] {
        assert!(order.len() >= 8, "{order:?}");
        // The first eight alternate between the two clients.
        assert!(order[..8].windows(2).all(|w| w[0] != w[1]), "{order:?}");
    }
}

/// The client's interface for path 0 goes away while the tunnel is idle;
/// the server does not know yet and may answer into path 0. Whenever the
/// client's requests come (at once, before or after the server's own
/// silence limit), every answer reaches it: what the server sends into the
/// dead path is sent again on path 1 once the path falls silent.
#[test]
fn every_reply_reaches_a_client_whose_link_was_lost_whenever_it_asks() {
    for wait in [0, 2, 10, 60, 200, 249, 251, 300] {
        let mut pair = connected(&[1, 1]);
        pair.exchange(20, ms(100));
        pair.run_for(ms(2000));
        pair.links[0].up = false;
        pair.client.handle_link_change(pair.now, 0, false);
        pair.flush();
        pair.run_for(ms(wait));
        for i in 1000..1005u32 {
            pair.client.send(pair.now, tagged(0, i)).unwrap();
            let asked = pair.server_got.len();
            let deadline = pair.now + ms(50);
            while pair.server_got.len() == asked && pair.now < deadline {
                pair.run_for(ms(1));
            }
            assert_eq!(
                pair.server_got.len(),
                asked + 1,
                "request {i} after {wait} ms"
            );
            let peer = pair.peer();
            pair.server.send(pair.now, peer, tagged(1, i)).unwrap();
            let answered = pair.client_got.len();
            pair.run_for(ms(1000));
            assert_eq!(
                pair.client_got[answered..],
                [tagged(1, i)],
                "reply {i}, requests from {wait} ms after the cut"
            );
        }
    }
}

use crate::crypto::handshake::{Responder, MAX_RESPONSE_LEN};

/// An initiation from `client` to `server` whose payload starts with
/// protocol `version`, as another release of braid would send it.
fn initiation_of_version(
    client: &StaticKeypair,
    server: &PublicKey,
    version: u8,
) -> (crate::crypto::handshake::Initiator, Vec<u8>) {
    let mut msg = vec![0u8; MAX_INITIATION_LEN];
    let (initiator, len) = Initiator::start(
        client,
        server,
        &PresharedKey::ZERO,
        [3; 32],
        77,
        &[version, 1, 2, 3],
        &mut msg,
    )
    .unwrap();
    msg.truncate(len);
    (initiator, msg)
}

#[test]
fn a_server_answers_another_protocol_version_with_its_own_and_keeps_nothing() {
    let mut pair = Pair::new(&[10]);
    let other = PROTOCOL_VERSION + 1;
    let (ck, sk) = (pair.client_key.clone(), pair.server_key.public);
    let from = pair.links[0].client_addr;
    let mut buf = vec![0u8; MAX_DATAGRAM_LEN];
    let mut refuse = |pair: &mut Pair| {
        let (initiator, mut init) = initiation_of_version(&ck, &sk, other);
        let now = pair.now;
        assert_eq!(
            pair.server.handle_datagram(now, from, &mut init),
            Err(DropReason::ProtocolMismatch)
        );
        let (_, t) = pair.server.poll_transmit(now, &mut buf).expect("an answer");
        let mut payload = [0u8; 64];
        let (_, _, n) = initiator.finish(&buf[..t.len], &mut payload).unwrap();
        assert_eq!(
            payload[0], PROTOCOL_VERSION,
            "the answer names the server's version"
        );
        assert_eq!(n, 8);
        let events: Vec<_> = std::iter::from_fn(|| pair.server.poll_event()).collect();
        events
    };
    let peer = pair.peer();
    let mismatch = vec![(
        peer,
        Event::ProtocolMismatch {
            peer_version: other,
        },
    )];
    assert_eq!(refuse(&mut pair), mismatch);
    assert_eq!(
        refuse(&mut pair),
        vec![],
        "a client retrying is reported once"
    );
    let stats = pair.server.stats();
    assert_eq!((stats.sessions, stats.handshakes_accepted), (0, 0));
    assert_eq!(stats.drops.count(DropReason::ProtocolMismatch), 2);

    // A client of this version connects as ever; a refusal afterwards is
    // reported again and leaves its session working.
    pair.run_for(ms(500));
    assert!(pair.client.is_connected());
    assert_eq!(refuse(&mut pair), mismatch);
    pair.exchange(5, ms(10));
    pair.run_for(ms(100));
    assert_eq!(numbers(&pair.server_got), (0..5).collect::<Vec<_>>());
    assert_eq!(numbers(&pair.client_got), (0..5).collect::<Vec<_>>());
}

#[test]
fn a_client_reports_a_server_of_another_protocol_version_once_and_keeps_trying() {
    let mut pair = Pair::new(&[10]);
    let other = PROTOCOL_VERSION + 1;
    let server_key = pair.server_key.clone();
    let mut buf = vec![0u8; MAX_DATAGRAM_LEN];
    let mut answer_with = |pair: &mut Pair, version: u8| {
        pair.client.handle_timeout(pair.now);
        let t = pair
            .client
            .poll_transmit(pair.now, &mut buf)
            .expect("an initiation");
        let responder = Responder::read(&server_key, [4; 32], &buf[..t.len]).unwrap();
        let mut response = vec![0u8; MAX_RESPONSE_LEN];
        let mut payload = 5u64.to_be_bytes();
        payload[0] = version;
        let (_, len) = responder
            .respond(&PresharedKey::ZERO, 9, &payload, &mut response)
            .unwrap();
        let now = pair.now;
        let result = pair
            .client
            .handle_datagram(now, Some(0), addr(SERVER), &mut response[..len]);
        let events: Vec<_> = std::iter::from_fn(|| pair.client.poll_event()).collect();
        (result, events)
    };
    let (result, events) = answer_with(&mut pair, other);
    assert_eq!(result, Err(DropReason::ProtocolMismatch));
    assert_eq!(
        events,
        vec![Event::ProtocolMismatch {
            peer_version: other
        }]
    );
    assert!(!pair.client.is_connected());
    pair.now += ms(1000);
    assert_eq!(
        answer_with(&mut pair, other),
        (Err(DropReason::ProtocolMismatch), vec![]),
        "the next try, a second later, is not reported again"
    );
    assert_eq!(
        pair.client
            .stats(pair.now)
            .drops
            .count(DropReason::ProtocolMismatch),
        2
    );
    // The real server (this version) is reached by the tries that follow.
    pair.run_for(ms(1500));
    assert!(pair.client.is_connected());
    assert!(pair.client_events.iter().any(|(_, e)| *e
        == Event::Connected {
            peer_restarted: false
        }));
}

#[test]
fn a_path_whose_return_direction_fails_stays_up_while_its_data_is_acknowledged_elsewhere() {
    // Two paths limited to 10 Mbit/s each under 19 Mbit/s of load: both
    // carry data throughout.
    let (ck, sk) = (keypair(1), keypair(2));
    let mut config = client_config(&ck, &sk.public, &[10, 10]);
    for p in &mut config.paths {
        p.rate_limit_bps = Some(10_000_000);
    }
    let client = Session::client(config, [7; 32]).unwrap();
    let mut pair = Pair::with(client, ck, sk, &[10, 10]);
    pair.run_for(ms(500));
    assert!(pair.client.is_connected());
    let bulk = |pair: &mut Pair, d: Duration| {
        let until = pair.now + d;
        while pair.now < until {
            for _ in 0..2 {
                let _ = pair.client.send(pair.now, vec![7; 1200]);
            }
            pair.run_for(ms(1));
        }
    };
    let sent_on_1 = |pair: &Pair| pair.client.stats(pair.now).paths[1].tx_bytes;
    bulk(&mut pair, ms(500));
    // Path 1's downlink fades: nothing from the server arrives on it.
    pair.links[1].back_up = false;
    let (cut, before) = (pair.now, sent_on_1(&pair));
    bulk(&mut pair, ms(1500));
    let down_1_since = |pair: &Pair, t: Instant| {
        pair.client_events
            .iter()
            .any(|(at, e)| *at >= t && matches!(e, Event::PathDown { path: 1, .. }))
    };
    assert!(!down_1_since(&pair, cut), "{:?}", pair.client_events);
    // 1.5 s at 10 Mbit/s are 1.9 MB.
    let carried = sent_on_1(&pair) - before;
    assert!(carried > 1_500_000, "path 1 carried {carried} bytes");
    // Both directions cut: its data is acknowledged nowhere, and it goes down.
    pair.links[1].up = false;
    let dead = pair.now;
    bulk(&mut pair, ms(600));
    assert!(down_1_since(&pair, dead));
}

/// Paths of 8 and 2 Mbit/s each way, idle after the handshake.
fn idle_on_rated_paths() -> Pair {
    let mut pair = Pair::new(&[10, 40]);
    pair.links[0].rate_bps = Some(8e6);
    pair.links[1].rate_bps = Some(2e6);
    pair.run_for(ms(1500));
    assert!(pair.client.is_connected());
    pair
}

#[test]
fn packet_trains_measure_each_paths_rate_both_ways_when_idle() {
    let pair = idle_on_rated_paths();
    let rates = [8e6, 2e6];
    let measured = |events: &[(Instant, Event)]| -> Vec<(u8, u64)> {
        events
            .iter()
            .filter_map(|(_, e)| match e {
                Event::PathMeasured { path, bps } => Some((*path, *bps)),
                _ => None,
            })
            .collect()
    };
    let server = pair.server.session(pair.peer()).unwrap().stats(pair.now);
    let client = pair.client.stats(pair.now);
    for (side, events, stats) in [
        ("client", measured(&pair.client_events), &client),
        ("server", measured(&pair.server_events), &server),
    ] {
        // One measurement per path, of the bottleneck's rate (the
        // harness spaces packets exactly; the session adds back the IP
        // bytes the datagrams do not show).
        let mut paths: Vec<u8> = events.iter().map(|(p, _)| *p).collect();
        paths.sort_unstable();
        assert_eq!(paths, vec![0, 1], "{side}: {events:?}");
        for (path, bps) in events {
            let rate = rates[usize::from(path)];
            assert!(
                (bps as f64 - rate).abs() < rate * 0.001,
                "{side} path {path}: {bps}"
            );
            let p = &stats.paths[usize::from(path)];
            assert_eq!(p.train_rate_bps.map(|r| r as u64), Some(bps), "{side}");
            // The path's estimate starts from it.
            let estimate = p.send_rate_bps.unwrap();
            assert!(
                (estimate - rate).abs() < rate * 0.001,
                "{side} path {path}: {estimate}"
            );
        }
    }
    // 32 packets of a full data packet's size each way and path, and the
    // reports: no more (a measured path is not measured again).
    let mtu_packets = |s: &SessionStats| s.paths.iter().map(|p| p.tx_bytes).sum::<u64>();
    let train_bytes = 2 * u64::from(train::TRAIN_PACKETS) * 1450;
    assert!(
        mtu_packets(&client) > train_bytes,
        "{}",
        mtu_packets(&client)
    );
    let before = mtu_packets(&client);
    let mut pair = pair;
    pair.run_for(ms(5000));
    let after = mtu_packets(&pair.client.stats(pair.now));
    assert!(
        after - before < 10_000,
        "{} bytes more while idle",
        after - before
    );
}

#[test]
fn trains_wait_for_quiet_and_can_be_switched_off() {
    // Light data from the moment the session is up (too light to measure
    // the paths' rates): no train goes under it, where it would overfill
    // the paths' queues; they go once the session is quiet.
    let mut pair = Pair::new(&[10, 40]);
    pair.links[0].rate_bps = Some(8e6);
    pair.links[1].rate_bps = Some(2e6);
    while !pair.client.is_connected() {
        pair.run_for(ms(1));
    }
    // One packet each way per 50 ms for a second: each leaves alone, so
    // its rate sample is app-limited and measures nothing.
    pair.exchange(20, ms(50));
    let quiet_from = pair.now;
    pair.run_for(ms(2000));
    assert_eq!(pair.server_got.len(), 20);
    let measured: Vec<Instant> = pair
        .client_events
        .iter()
        .chain(&pair.server_events)
        .filter(|(_, e)| matches!(e, Event::PathMeasured { .. }))
        .map(|(t, _)| *t)
        .collect();
    assert_eq!(measured.len(), 4, "two paths, both ways");
    assert!(
        measured
            .iter()
            .all(|&t| t >= quiet_from + TRAIN_AFTER_QUIET),
        "{measured:?} before {:?}",
        quiet_from + TRAIN_AFTER_QUIET
    );

    let (ck, sk) = (keypair(1), keypair(2));
    let mut config = client_config(&ck, &sk.public, &[10, 40]);
    config.session.path_trains = false;
    let client = Session::client(config, [7; 32]).unwrap();
    let mut pair = Pair::with(client, ck, sk, &[10, 40]);
    pair.links[0].rate_bps = Some(8e6);
    pair.run_for(ms(1500));
    assert!(pair.client.is_connected());
    // The server still measures its direction; the client does not.
    assert!(!pair
        .client_events
        .iter()
        .any(|(_, e)| matches!(e, Event::PathMeasured { .. })));
    assert_eq!(pair.client.stats(pair.now).paths[0].train_rate_bps, None);
    assert!(pair
        .server_events
        .iter()
        .any(|(_, e)| matches!(e, Event::PathMeasured { path: 0, .. })));
}

#[test]
fn a_train_left_without_a_report_fails_its_path_while_traffic_holds_the_retry() {
    let mut pair = Pair::new(&[10, 40]);
    pair.links[0].rate_bps = Some(8e6);
    pair.links[1].rate_bps = Some(2e6);
    // The client's train on path 1 leaves once the session is quiet ...
    let train_bytes = u64::from(train::TRAIN_PACKETS) * 1400;
    while pair.client.stats(pair.now).paths[1].tx_bytes < train_bytes {
        pair.run_for(ms(1));
        assert!(pair.now < Instant::ZERO + ms(3000), "no train");
    }
    let left = pair.now;
    // ... and its report, from the server on the same path, is lost: the
    // path's downlink fades. Traffic from now on keeps a retry from going.
    pair.links[1].back_up = false;
    let failed = |pair: &Pair, path: usize| pair.client.sender().path(path).train_failed;
    pair.exchange(15, ms(50));
    assert!(pair.now < left + ms(1000));
    assert!(!failed(&pair, 1), "pending, not failed yet");
    pair.exchange(10, ms(50));
    assert!(pair.now >= left + ms(1000));
    assert!(failed(&pair, 1), "no report within the retry interval");
    assert!(!failed(&pair, 0));
    assert!(!pair
        .client_events
        .iter()
        .any(|(_, e)| matches!(e, Event::PathMeasured { path: 1, .. })));
}

/// A path whose round trip is longer than the silence limit (a satellite
/// hop: 300 ms one way) is not marked down while it answers: the time a
/// probe takes to come back counts in its silence.
#[test]
fn a_path_longer_than_the_silence_limit_stays_up_while_it_answers() {
    // The handshake goes out on the long path (the first), and its round
    // trip is the first measure of it.
    let mut pair = Pair::new(&[300, 10]);
    pair.run_for(ms(2100));
    assert!(pair.client.is_connected(), "client handshake");
    let down = |e: &Event| matches!(e, Event::PathDown { .. });
    assert_eq!(first_event(&pair.client_events, down), None, "idle");
    for _ in 0..3 {
        pair.exchange(100, ms(5));
        pair.run_for(ms(2000));
    }
    assert_eq!(first_event(&pair.client_events, down), None, "client");
    assert_eq!(first_event(&pair.server_events, down), None, "server");
    // A cut is still noticed: its last packet lands one way (300 ms) after
    // it, and the silence allowed is 65 ms + 1.25 x 600 ms.
    let cut = pair.now;
    pair.links[0].up = false;
    pair.exchange(100, ms(5));
    pair.run_for(ms(1000));
    let gone = first_event(&pair.client_events, down).expect("client marks path 0 down");
    assert!(gone - cut <= ms(1150), "client took {:?}", gone - cut);
    assert!(gone - cut >= ms(800), "client took only {:?}", gone - cut);
}

/// One slow round trip at the handshake (a queue that drained since)
/// does not slow the path's failover: once its data has measured the
/// path, the cut is noticed within 300 ms again, on both ends.
#[test]
fn a_slow_handshake_round_trip_does_not_slow_a_later_failover() {
    let mut pair = Pair::new(&[400, 30]);
    pair.run_for(ms(1000));
    assert!(pair.client.is_connected(), "client handshake");
    pair.links[0].delay = ms(10);
    pair.exchange(200, ms(5));
    let cut = pair.now;
    pair.links[0].up = false;
    pair.exchange(200, ms(5));
    let down = |e: &Event| matches!(e, Event::PathDown { path: 0, .. });
    for (events, side) in [
        (&pair.client_events, "client"),
        (&pair.server_events, "server"),
    ] {
        let at = first_event(events, down).unwrap_or_else(|| panic!("{side} marks path 0 down"));
        assert!(at - cut <= ms(300), "{side} took {:?}", at - cut);
    }
}

/// A fresh tunnel's first packets, both ways, take the nearer of two
/// paths whose rates tie, whichever one a packet train measured
/// marginally faster: before data has measured either path's delay, the
/// probes' round trips (the server's own included) tell them apart.
#[test]
fn a_fresh_tunnels_first_packets_take_the_nearer_of_two_equal_paths() {
    let mut pair = Pair::new(&[50, 5]);
    pair.links[0].rate_bps = Some(10.01e6);
    pair.links[1].rate_bps = Some(10e6);
    pair.run_for(ms(1500));
    assert!(pair.client.is_connected());
    let server = pair.server.session(pair.peer()).unwrap().stats(pair.now);
    let rtts: Vec<_> = server.paths.iter().map(|p| p.rtt).collect();
    assert!(rtts.iter().all(Option::is_some), "server: {rtts:?}");
    pair.client.send(pair.now, tagged(0, 0)).unwrap();
    let peer = pair.peer();
    pair.server.send(pair.now, peer, tagged(1, 0)).unwrap();
    pair.flush();
    let data: Vec<(bool, usize)> = pair
        .flights
        .iter()
        .filter(|f| f.bytes.len() > 200)
        .map(|f| (f.to_server, f.path))
        .collect();
    assert_eq!(data, [(true, 1), (false, 1)]);
}

/// The default scheduler takes cheaper paths first only when prices
/// differ; a scheduler the config names is kept whatever the prices.
#[test]
fn cost_first_only_for_the_default_scheduler_and_differing_prices() {
    let paths = |costs: &[f64]| -> Vec<Path> {
        costs
            .iter()
            .map(|&c| Path::new("p".into(), PathRole::Primary, c, None))
            .collect()
    };
    let default = SessionConfig::default();
    assert_eq!(
        scheduler_for(&default, &paths(&[1.0, 3.0])),
        "earliest-arrival:cost_first=1"
    );
    assert_eq!(
        scheduler_for(&default, &paths(&[2.0, 2.0])),
        "earliest-arrival"
    );
    assert_eq!(scheduler_for(&default, &paths(&[0.5])), "earliest-arrival");
    let named = SessionConfig {
        scheduler: "min-rtt".into(),
        ..SessionConfig::default()
    };
    assert_eq!(scheduler_for(&named, &paths(&[1.0, 3.0])), "min-rtt");
}
