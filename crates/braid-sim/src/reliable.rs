//! `--mode reliable`: a bulk transfer over a [`braid_core::stream`]
//! connection, client to server, over the same simulated links as datagram
//! mode. The client writes one stream as fast as its send buffer takes it;
//! the server reads every byte as soon as it is in order and checks it
//! against the pattern written. The run ends when the transfer completes
//! (bulk:SIZE), fails, or the simulated time is up.

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use std::time::Duration;

use braid_core::cc::CcKind;
use braid_core::reseq::ReseqCounters;
use braid_core::stream::{Config, Connection, ReadOutcome};

use crate::metrics::{Metrics, ReliableReport, Report, SenderView};
use crate::sim::{build_links, forward, Events, Hop, Scenario, SimError};
use crate::traffic::TrafficSpec;

/// The transfer's bytes repeat with this period (a prime, so that a
/// segment in the wrong place reads as wrong).
const PATTERN_PERIOD: usize = 251;
/// Most bytes written or read in one step.
const CHUNK: usize = 1 << 20;

/// The byte at stream offset `offset`.
fn pattern_at(offset: u64) -> u8 {
    (offset % PATTERN_PERIOD as u64) as u8
}

pub fn run(s: &Scenario) -> Result<Report, SimError> {
    let TrafficSpec::Bulk { bytes: total } = s.traffic else {
        return Err(SimError::ReliableNeedsBulk);
    };
    let ccs: Vec<CcKind> = (0..s.paths.len()).map(|i| s.cc_of(i)).collect();
    let (client_clock, server_clock) = s.clock.clocks();
    let config = Config::default();
    let mut client = Connection::new(config.clone(), &ccs, client_clock.read(Duration::ZERO));
    let mut server = Connection::new(config, &ccs, server_clock.read(Duration::ZERO));
    let stream = client
        .open_stream()
        .expect("a new connection opens a stream");
    let mut master = ChaCha8Rng::seed_from_u64(s.seed);
    let mut links = build_links(s, &mut master);
    let mut metrics = Metrics::new(s);
    let mut events = Events::default();
    // One period more than a chunk, so any offset's pattern is one slice.
    let source: Vec<u8> = (0..(CHUNK + PATTERN_PERIOD) as u64)
        .map(pattern_at)
        .collect();
    let mut buf = vec![0u8; CHUNK];
    let (mut written, mut read) = (0u64, 0u64);
    let mut finished_writing = false;
    let mut completion: Option<Duration> = None;
    let mut error: Option<String> = None;
    let mut now = Duration::ZERO;
    let mut stall = crate::stall::StallGuard::default();

    loop {
        let client_now = client_clock.read(now);
        let server_now = server_clock.read(now);
        // The application writes what the send buffer takes.
        if !finished_writing {
            let left = total.map_or(u64::MAX, |t| t - written);
            let n = (client.send_capacity() as u64).min(left).min(CHUNK as u64) as usize;
            let start = (written % PATTERN_PERIOD as u64) as usize;
            let took = client.write(stream, &source[start..start + n]).unwrap_or(0);
            written += took as u64;
            if total == Some(written) {
                finished_writing = client.finish(stream).is_ok();
            }
        }
        // The receiving application reads and checks everything in order.
        loop {
            match server.read(server_now, stream, &mut buf) {
                Ok(ReadOutcome::Data(k)) => {
                    let expected = (read..read + k as u64).map(pattern_at);
                    if !buf[..k].iter().copied().eq(expected) {
                        error = Some(format!("bytes {read}..{} read wrong", read + k as u64));
                    }
                    read += k as u64;
                    metrics.on_stream_read(k as u64, now);
                }
                Ok(ReadOutcome::Finished) => {
                    completion = Some(now);
                    break;
                }
                Ok(ReadOutcome::Blocked) | Err(_) => break,
            }
        }
        if let Some(e) = client.error().or(server.error()) {
            error.get_or_insert_with(|| e.to_string());
        }
        if completion.is_some() || error.is_some() {
            break;
        }
        while let Some(tx) = client.poll_transmit(client_now) {
            let link = &mut links[usize::from(tx.path)].0;
            forward(link, now, Hop::Up, tx.path, tx.data, &mut events);
        }
        while let Some(tx) = server.poll_transmit(server_now) {
            let link = &mut links[usize::from(tx.path)].1;
            forward(link, now, Hop::Down, tx.path, tx.data, &mut events);
        }
        let t_client = client
            .poll_timeout()
            .map(|t| client_clock.true_time_of(t, now));
        let t_server = server
            .poll_timeout()
            .map(|t| server_clock.true_time_of(t, now));
        let Some(next) = [events.peek_time(), t_client, t_server]
            .into_iter()
            .flatten()
            .min()
        else {
            break;
        };
        if next >= s.duration {
            break;
        }
        now = stall.advance(now, next)?;
        let client_now = client_clock.read(now);
        let server_now = server_clock.read(now);
        while events.peek_time().is_some_and(|t| t <= now) {
            let e = events.pop().expect("peeked");
            match e.hop {
                Hop::Up => {
                    let ip_bytes = e.data.len() + braid_core::wire::IP_UDP_OVERHEAD;
                    metrics.on_path_arrival(usize::from(e.path), now, ip_bytes);
                    // Malformed or refused input is counted by the connection.
                    let _ = server.handle_packet(server_now, e.path, &e.data);
                }
                Hop::Down => {
                    let _ = client.handle_packet(client_now, e.path, &e.data);
                }
                // Reliable mode carries no TCP sources (refused in `sim::run`).
                Hop::TcpAck => {}
            }
        }
        if t_client.is_some_and(|t| t <= now) {
            client.handle_timeout(client_now);
        }
        if t_server.is_some_and(|t| t <= now) {
            server.handle_timeout(server_now);
        }
    }

    // A completed transfer is measured over its own length.
    let mut measured = s.clone();
    if let Some(done) = completion.filter(|d| !d.is_zero()) {
        measured.duration = done;
    }
    let view = SenderView {
        scheduler: "late-binding",
        paths: (0..s.paths.len()).filter_map(|i| client.path(i)).collect(),
        queue_drops: 0,
        scheduler_drops: 0,
        counters: None,
    };
    let mut report = metrics.finish(&measured, &view, &ReseqCounters::default(), &links);
    let secs = measured.duration.as_secs_f64();
    report.offered_bps = written as f64 * 8.0 / secs;
    // Bytes still in flight when the clock ran out are not lost; only a
    // failed transfer loses what it never delivered.
    report.loss_rate = match (&error, written) {
        (Some(_), w) if w > 0 => 1.0 - read as f64 / w as f64,
        _ => 0.0,
    };
    report.reliable = Some(ReliableReport {
        transfer_bytes: total,
        read_bytes: read,
        completion_s: completion.map(|d| d.as_secs_f64()),
        retransmitted_bytes: client.counters.retransmitted_bytes,
        redundant_bytes: server.counters.redundant_bytes,
        error,
        stream: client.counters.clone(),
    });
    Ok(report)
}
