//! The tunnel session (handshake, encryption, probes, path state) driven
//! by the simulator: the tunnel behaviours that need no kernel, checked
//! deterministically on virtual time.

use std::time::Duration;

use braid_core::session::Event;
use braid_sim::metrics::Report;
use braid_sim::session_run::{SessionReport, SessionSpec, Side};
use braid_sim::sim::{run, Scenario};
use braid_sim::spec::PathSpec;
use braid_sim::trace::Trace;
use braid_sim::traffic::TrafficSpec;

fn scenario(specs: &[&str], traffic: &str, secs: u64, spec: SessionSpec) -> Scenario {
    let mut s = Scenario::new(specs.iter().map(|p| PathSpec::parse(p).unwrap()).collect());
    s.traffic = TrafficSpec::parse(traffic).unwrap();
    s.duration = Duration::from_secs(secs);
    s.session = Some(spec);
    s
}

fn session(r: &Report) -> &SessionReport {
    r.session
        .as_ref()
        .expect("a session run reports its session")
}

fn secs(s: f64) -> Duration {
    Duration::from_secs_f64(s)
}

/// Throughput of in-order delivery in the series bins covering `[from, to)`.
fn goodput_between(r: &Report, from: f64, to: f64) -> f64 {
    mean_between(r, &r.series.in_order_goodput_bps, from, to)
}

/// Mean of one of `r`'s series (`lane`) over the bins covering `[from, to)`.
fn mean_between(r: &Report, lane: &[f64], from: f64, to: f64) -> f64 {
    let bin = r.series.bin_s;
    let bins: Vec<f64> = lane
        .iter()
        .enumerate()
        .filter(|(i, _)| *i as f64 * bin >= from && (*i + 1) as f64 * bin <= to)
        .map(|(_, v)| *v)
        .collect();
    bins.iter().sum::<f64>() / bins.len() as f64
}

#[test]
fn clean_paths_carry_traffic_encrypted_without_loss() {
    let r = run(&scenario(
        &["10mbit,10ms", "10mbit,30ms"],
        "cbr:50%",
        5,
        SessionSpec::default(),
    ))
    .unwrap();
    let sess = session(&r);
    assert!(
        sess.first(Side::Client, |e| matches!(e, Event::Connected { .. }))
            .unwrap()
            < secs(0.1)
    );
    // Packets offered before the handshake completed are refused (a few
    // milliseconds' worth); everything after arrives.
    assert!(r.loss_rate < 0.01, "loss {}", r.loss_rate);
    assert!(r.in_order_goodput_bps >= 0.99 * r.goodput_bps);
    assert!(sess.server_drops.is_empty(), "{:?}", sess.server_drops);
    assert_eq!(sess.overhead_bytes_per_packet, 66);
    // At this load the scheduler leaves path 1 idle client-to-server while
    // the server's loss reports still use it: probes must keep it up on
    // both sides (they once flapped).
    let flaps: Vec<_> = sess
        .events
        .iter()
        .filter(|e| matches!(e.raw, Event::PathDown { .. }))
        .collect();
    assert!(flaps.is_empty(), "{flaps:?}");
}

#[test]
fn same_seed_same_run() {
    let s = scenario(
        &["8mbit,10ms,loss=1%", "4mbit,40ms,jitter=5ms"],
        "cbr:80%",
        4,
        SessionSpec::default(),
    );
    let a = run(&s).unwrap();
    let b = run(&s).unwrap();
    assert_eq!(a, b);
}

#[test]
fn failover_marks_the_path_down_within_300ms_and_traffic_moves() {
    // Path 0 is cut at 3 s for good; the load fits path 1 alone.
    let r = run(&scenario(
        &["10mbit,10ms,blackout=3s+100s", "10mbit,20ms"],
        "cbr:40%",
        8,
        SessionSpec::default(),
    ))
    .unwrap();
    let sess = session(&r);
    let down = |e: &Event| matches!(e, Event::PathDown { path: 0, .. });
    for side in [Side::Client, Side::Server] {
        let t = sess
            .first(side, down)
            .unwrap_or_else(|| panic!("{side:?} never marked path 0 down"));
        assert!(
            t >= secs(3.0) && t <= secs(3.3),
            "{side:?} marked it down at {t:?}"
        );
    }
    assert!(sess
        .first(Side::Client, |e| matches!(
            e,
            Event::PathDown { path: 1, .. }
        ))
        .is_none());
    // After the failover the offered load arrives in full on path 1.
    let before = goodput_between(&r, 1.0, 3.0);
    let after = goodput_between(&r, 4.0, 8.0);
    assert!(
        after >= 0.97 * before,
        "goodput {before} before the cut, {after} after"
    );
}

#[test]
fn path_comes_back_after_a_blackout() {
    let r = run(&scenario(
        &["10mbit,10ms,blackout=2s+1s", "10mbit,20ms"],
        "cbr:40%",
        5,
        SessionSpec::default(),
    ))
    .unwrap();
    let sess = session(&r);
    let up_again = sess
        .events
        .iter()
        .find(|e| {
            e.side == Side::Client && e.t_s > 2.5 && matches!(e.raw, Event::PathUp { path: 0, .. })
        })
        .expect("path 0 back up");
    assert!(up_again.t_s <= 3.2, "back at {}", up_again.t_s);
    // And it carries its share again.
    let share_after = r.series.path_bps[0][40..50].iter().sum::<f64>();
    assert!(
        share_after > 0.0,
        "path 0 carries nothing after coming back"
    );
}

#[test]
fn nat_rebinding_mid_transfer_keeps_the_session() {
    let spec = SessionSpec {
        rebind: vec![(secs(2.0), 0), (secs(3.0), 1)],
        ..SessionSpec::default()
    };
    let r = run(&scenario(
        &["10mbit,10ms", "10mbit,25ms"],
        "cbr:50%",
        5,
        spec,
    ))
    .unwrap();
    let sess = session(&r);
    for path in [0u8, 1] {
        assert!(
            sess.first(
                Side::Server,
                |e| matches!(e, Event::PathRebound { path: p, .. } if *p == path)
            )
            .is_some(),
            "server adopted no new address for path {path}"
        );
    }
    assert!(sess
        .first(Side::Client, |e| matches!(e, Event::PathDown { .. }))
        .is_none());
    assert_eq!(sess.client_handshakes, 1, "no new handshake needed");
    assert!(sess.connected);
    assert!(r.loss_rate < 0.01, "loss {}", r.loss_rate);
}

#[test]
fn rekey_during_transfer_loses_nothing() {
    let spec = SessionSpec {
        rekey_after: Some(secs(1.0)),
        ..SessionSpec::default()
    };
    let base = run(&scenario(
        &["10mbit,10ms", "10mbit,30ms"],
        "cbr:50%",
        6,
        SessionSpec::default(),
    ))
    .unwrap();
    let r = run(&scenario(
        &["10mbit,10ms", "10mbit,30ms"],
        "cbr:50%",
        6,
        spec,
    ))
    .unwrap();
    let sess = session(&r);
    let rekeys = sess
        .events
        .iter()
        .filter(|e| e.side == Side::Server && e.raw == Event::Rekeyed)
        .count();
    assert!(rekeys >= 4, "{rekeys} rekeys");
    assert_eq!(r.loss_rate, base.loss_rate, "rekeying lost packets");
    assert!(sess.server_drops.is_empty(), "{:?}", sess.server_drops);
    assert!(
        sess.client_drops.iter().all(|(k, _)| k == "not_connected"),
        "{:?}",
        sess.client_drops
    );
}

#[test]
fn server_restart_client_reconnects_by_itself() {
    let spec = SessionSpec {
        server_restart_at: Some(secs(2.0)),
        ..SessionSpec::default()
    };
    let r = run(&scenario(
        &["10mbit,10ms", "10mbit,30ms"],
        "cbr:40%",
        6,
        spec,
    ))
    .unwrap();
    let sess = session(&r);
    let back = sess
        .first(Side::Client, |e| {
            *e == Event::Connected {
                peer_restarted: true,
            }
        })
        .expect("client reconnected");
    // Paths silent for 250 ms, the session for 500 ms: a new handshake.
    assert!(back <= secs(2.8), "reconnected at {back:?}");
    assert!(sess
        .server_drops
        .iter()
        .any(|(k, n)| k == "unknown_index" && *n > 0));
    // Traffic flows again in full after the reconnection.
    let before = goodput_between(&r, 0.5, 2.0);
    let after = goodput_between(&r, 5.0, 6.0);
    assert!(
        after >= 0.97 * before,
        "goodput {before} before, {after} after"
    );
}

#[test]
fn unknown_client_gets_no_reply_and_no_state() {
    let spec = SessionSpec {
        unknown_client: true,
        ..SessionSpec::default()
    };
    let r = run(&scenario(
        &["10mbit,10ms", "10mbit,30ms"],
        "cbr:10%",
        3,
        spec,
    ))
    .unwrap();
    let sess = session(&r);
    assert!(!sess.connected);
    assert_eq!(sess.server_datagrams, 0, "the server answered");
    assert_eq!(sess.server_sessions, 0);
    assert!(r.paths.iter().all(|p| p.sender.sent_packets == 0));
    assert!(sess
        .server_drops
        .iter()
        .any(|(k, n)| k == "unknown_peer" && *n >= 2));
    assert_eq!(r.goodput_bps, 0.0);
}

#[test]
fn backup_path_only_while_the_primary_is_down() {
    let r = run(&scenario(
        &["10mbit,10ms,blackout=3s+2s", "10mbit,10ms,role=backup"],
        "cbr:40%",
        7,
        SessionSpec::default(),
    ))
    .unwrap();
    let backup = &r.series.path_bps[1];
    let bin = r.series.bin_s;
    let at = |t: f64| backup[(t / bin) as usize];
    // Probes only (well under 1 % of 4 Mbit/s) while the primary is up...
    assert!(
        at(1.0) < 40_000.0 && at(6.5) < 40_000.0,
        "{} {}",
        at(1.0),
        at(6.5)
    );
    // ...and the load during the primary's blackout.
    assert!(at(4.0) > 3_000_000.0, "{}", at(4.0));
}

#[test]
fn overflow_path_carries_only_what_the_primary_cannot() {
    // The overflow path is the faster one: without its role earliest
    // arrival would put most of the traffic on it.
    let paths = ["10mbit,10ms,name=dsl", "10mbit,5ms,role=overflow,name=lte"];
    let r = run(&scenario(&paths, "cbr:40%", 6, SessionSpec::default())).unwrap();
    // 8 Mbit/s fits the primary: the overflow path carries probes only.
    let lte = r.paths[1].sender.sent_bytes as f64 * 8.0 / 6.0;
    assert!(lte < 40_000.0, "overflow path sent {lte} bit/s");
    // (0.3 %, as with the primary alone and no overflow path.)
    assert!(r.loss_rate <= 0.005, "{}", r.loss_rate);
    // 16 Mbit/s: the primary full, the overflow path takes the rest.
    let r = run(&scenario(&paths, "cbr:80%", 6, SessionSpec::default())).unwrap();
    assert!(r.paths[0].utilization >= 0.9, "{}", r.paths[0].utilization);
    let lte = r.paths[1].sender.sent_bytes as f64 * 8.0 / 6.0;
    assert!(lte > 4_000_000.0, "overflow path sent {lte} bit/s");
    assert!(r.loss_rate <= 0.02, "{}", r.loss_rate);
}

/// A path with a higher cost is used as an overflow path is, by the
/// client and by the server: the server has the costs' order from the
/// handshake.
#[test]
fn a_dearer_path_carries_only_what_the_cheaper_one_cannot_both_ways() {
    // The dearer path is the faster one: by arrival alone it would carry
    // most of the traffic.
    let paths = ["10mbit,10ms,cost=1", "10mbit,5ms,cost=3"];
    for download in [false, true] {
        let spec = SessionSpec {
            download,
            ..SessionSpec::default()
        };
        let r = run(&scenario(&paths, "cbr:40%", 6, spec.clone())).unwrap();
        let dear = r.paths[1].sender.sent_bytes as f64 * 8.0 / 6.0;
        assert!(
            dear < 40_000.0,
            "download {download}: dear path sent {dear} bit/s"
        );
        assert!(r.loss_rate <= 0.005, "{}", r.loss_rate);
        // More than the cheap path carries: the dear one takes the rest.
        let r = run(&scenario(&paths, "cbr:80%", 6, spec)).unwrap();
        assert!(r.paths[0].utilization >= 0.9, "{}", r.paths[0].utilization);
        let dear = r.paths[1].sender.sent_bytes as f64 * 8.0 / 6.0;
        assert!(
            dear > 4_000_000.0,
            "download {download}: dear path sent {dear} bit/s"
        );
    }
    // Equal costs leave the scheduler as it is: the faster path leads.
    let r = run(&scenario(
        &["10mbit,10ms,cost=2", "10mbit,5ms,cost=2"],
        "cbr:40%",
        6,
        SessionSpec::default(),
    ))
    .unwrap();
    assert!(
        r.paths[1].sender.sent_bytes > r.paths[0].sender.sent_bytes,
        "{:?}",
        r.paths
    );
}

#[test]
fn a_rate_limit_caps_what_the_client_sends_on_a_path() {
    let paths = ["10mbit,10ms", "10mbit,20ms,rate_limit=2mbit"];
    let r = run(&scenario(&paths, "cbr:110%", 6, SessionSpec::default())).unwrap();
    // Data the sender paced onto the limited path, IP bytes per second.
    let limited = r.paths[1].sender.sent_bytes as f64 * 8.0 / 6.0;
    assert!(
        (1_800_000.0..=2_000_000.0).contains(&limited),
        "limited path sent {limited} bit/s"
    );
    // The other path takes the rest.
    assert!(r.paths[0].utilization >= 0.95, "{}", r.paths[0].utilization);
}

/// One CUBIC flow through the session on the tunnel issue's two small lab
/// sets, its ACKs coming back through the server's session. Before the
/// pacing credit, the 1.25-BDP window cap of BBR's ProbeBW, and TCP
/// traffic in session runs, this could not run (`--session` refused TCP);
/// with the session's old 2-BDP cap it measured 0.79 and 0.59 of the ideal
/// at 30 s. The bound is the issue's: at least 0.85 of the ideal here (the
/// lab target is 0.90 of the sum of the paths), and never less than the
/// fastest path alone could carry.
#[test]
fn one_tcp_flow_uses_both_paths_through_the_session() {
    for (paths, fast_bps) in [
        (["8mbit,10ms", "2mbit,40ms"], 8e6),
        (["10mbit,5ms", "10mbit,50ms"], 10e6),
    ] {
        let mut s = scenario(&paths, "tcp:cubic", 30, SessionSpec::default());
        s.payload_bytes = braid_core::session::tunnel_mtu(1500, true);
        let r = run(&s).unwrap();
        let tcp = r.flows[0]
            .tcp
            .as_ref()
            .expect("a TCP flow reports TCP figures");
        // The fastest path alone, less the tunnel's and TCP's headers.
        let fast_alone = fast_bps * tcp.mss as f64 / s.wire_bytes() as f64;
        eprintln!(
            "{paths:?}: TCP utilization {:.3}, goodput {:.2} Mbit/s, fastest path alone {:.2}",
            tcp.utilization,
            tcp.goodput_bps / 1e6,
            fast_alone / 1e6
        );
        assert!(tcp.utilization >= 0.85, "{paths:?}: {:.3}", tcp.utilization);
        assert!(tcp.goodput_bps > fast_alone, "{paths:?}");
        // The slow path carried at least half its capacity.
        assert!(r.paths[1].utilization > 0.5, "{paths:?}: {:?}", r.paths[1]);
    }
}

/// The session carries re-sends like any data: a TCP flow through it over
/// a path that loses 1 % keeps its window (the session's data packets
/// carry the re-send flag, and its framing takes them as data).
#[test]
fn a_session_that_resends_hides_a_lossy_paths_loss_from_tcp() {
    let run_with = |resend: bool| {
        let mut s = scenario(
            &["10mbit,10ms,loss=1%", "10mbit,20ms"],
            "tcp:cubic",
            5,
            SessionSpec::default(),
        );
        s.payload_bytes = braid_core::session::tunnel_mtu(1500, true);
        s.resend_losses = resend;
        let r = run(&s).unwrap();
        let tcp = r.flows[0].tcp.clone().expect("a TCP flow");
        (r, tcp)
    };
    let (_, plain) = run_with(false);
    let (r, resent) = run_with(true);
    eprintln!(
        "TCP utilization {:.3} -> {:.3}",
        plain.utilization, resent.utilization
    );
    assert!(plain.utilization < 0.6, "{plain:?}");
    assert!(r.sender.as_ref().unwrap().resent > 10, "{:?}", r.sender);
    // 0.46 -> 0.79 of the ideal in these 5 s (what is left is the
    // sender's queue managing the flow, and start-up), and 22 -> 5 fast
    // recoveries: the path's losses no longer reach TCP.
    assert!(resent.utilization > 0.75, "{resent:?}");
    assert!(resent.utilization > 1.5 * plain.utilization, "{resent:?}");
    assert!(
        3 * resent.counters.fast_recoveries < plain.counters.fast_recoveries,
        "{plain:?} {resent:?}"
    );
}

#[test]
fn a_download_goes_through_the_servers_session_on_the_down_links() {
    // Uplinks of 4 and 1 Mbit/s, downlinks of 8 and 2: one TCP flow
    // server to client.
    let paths = ["4mbit/8mbit,10ms", "1mbit/2mbit,40ms"];
    let spec = SessionSpec {
        download: true,
        ..SessionSpec::default()
    };
    let r = run(&scenario(&paths, "tcp:cubic", 10, spec)).unwrap();
    // The figures are of the down links.
    assert!((r.capacity_bps - 10e6).abs() < 1.0, "{}", r.capacity_bps);
    let goodput = |r: &Report| r.flows[0].tcp.as_ref().expect("a TCP flow").goodput_bps;
    // More than the uplinks could carry at all: the data went down.
    assert!(goodput(&r) > 8e6, "{}", goodput(&r));
    // The server's sender carried it, on both paths.
    assert!(
        r.paths.iter().all(|p| p.sender.sent_packets > 1000),
        "{:?}",
        r.paths
    );
    assert!(session(&r).server_drops.is_empty());
    // The same paths as an upload: the uplinks' figures.
    let up = run(&scenario(&paths, "tcp:cubic", 10, SessionSpec::default())).unwrap();
    assert!((up.capacity_bps - 5e6).abs() < 1.0, "{}", up.capacity_bps);
    assert!(goodput(&up) < 5e6, "{}", goodput(&up));
    // An upload over the paths turned round meets the same links from
    // the client's side: within 5 % of the download.
    let turned = ["8mbit/4mbit,10ms", "2mbit/1mbit,40ms"];
    let mirrored = run(&scenario(&turned, "tcp:cubic", 10, SessionSpec::default())).unwrap();
    let (a, b) = (goodput(&r), goodput(&mirrored));
    assert!(
        (a - b).abs() < 0.05 * b,
        "download {a}, mirrored upload {b}"
    );
}

/// A mahimahi trace of 30 s at 20 Mbit/s that gives nothing from 10.0 to
/// 10.5 s and 5 Mbit/s to 11.0 s: an LTE fade.
fn twenty_mbit_with_a_fade() -> Trace {
    Trace::from_rates("fade", 30_000, |ms| match ms {
        10_000..10_500 => 0.0,
        10_500..11_000 => 5.0,
        _ => 20.0,
    })
    .unwrap()
}

/// The packets a fade holds for half a second are that path's delay, not
/// a step of the peer's clock: read as a step, they moved the path's
/// delay floor up by what they waited, earliest-arrival then priced the
/// path that much longer and gave it nothing, and so no sample came that
/// could move the floor back (an LTE path beside a fixed line carried
/// nothing for 6.7 s; BENCHMARKS.md, "A fade read as a clock step").
/// The path carries its share again within 2 s of the fade's end.
#[test]
fn a_path_that_faded_carries_its_share_again_within_two_seconds() {
    for download in [false, true] {
        let fading =
            PathSpec::parse_with("trace=fade,30ms", |_| Ok(twenty_mbit_with_a_fade())).unwrap();
        let mut s = Scenario::new(vec![PathSpec::parse("8mbit,10ms").unwrap(), fading]);
        s.traffic = TrafficSpec::parse("tcp:cubic").unwrap();
        s.duration = secs(16.0);
        s.payload_bytes = braid_core::session::tunnel_mtu(1500, true);
        s.resend_losses = true;
        s.session = Some(SessionSpec {
            download,
            ..SessionSpec::default()
        });
        let r = run(&s).unwrap();
        let before = mean_between(&r, &r.series.path_bps[1], 7.0, 10.0);
        let after = mean_between(&r, &r.series.path_bps[1], 11.0, 13.0);
        eprintln!(
            "download {download}: the fading path carried {:.1} Mbit/s before the fade, {:.1} in the 2 s after it",
            before / 1e6,
            after / 1e6
        );
        assert!(before > 8e6, "download {download}: {before}");
        assert!(
            after > 0.8 * before,
            "download {download}: {before} then {after}"
        );
    }
}

/// A path thin from the start (50 kbit/s for 5 s, then 2 Mbit/s) beside
/// 6 and 3 Mbit/s ones, under 110 % load, both ways. Earliest-arrival
/// gives a path known to be thin nothing it would deliver late, and what
/// the fade's queue dropped stays counted in flight until something shows
/// it lost: no later packet goes there to be acknowledged. The path's
/// probes show it (`PathSender::on_probe_answered`; a server probes such
/// a path too). Without them it carried nothing until 9.5 s, its silence
/// deadline stretched by the fade's round trips of 1.6 s; with them it
/// carries its 2 Mbit/s again from 5.5 s.
#[test]
fn a_thin_path_back_from_a_fade_carries_again_within_a_second() {
    let thin_then_two =
        Trace::from_rates("late", 20_000, |ms| if ms < 5_000 { 0.05 } else { 2.0 }).unwrap();
    for download in [false, true] {
        let late = PathSpec::parse_with("trace=late,40ms", |_| Ok(thin_then_two.clone())).unwrap();
        let mut s = Scenario::new(vec![
            PathSpec::parse("6mbit,10ms").unwrap(),
            PathSpec::parse("3mbit,20ms").unwrap(),
            late,
        ]);
        s.traffic = TrafficSpec::parse("cbr:110%").unwrap();
        s.duration = secs(9.0);
        s.resend_losses = true;
        s.session = Some(SessionSpec {
            download,
            ..SessionSpec::default()
        });
        let r = run(&s).unwrap();
        let thin = mean_between(&r, &r.series.path_bps[2], 3.0, 5.0);
        let back = mean_between(&r, &r.series.path_bps[2], 6.0, 9.0);
        assert!(thin < 0.1e6, "download {download}: {thin} in the fade");
        assert!(back > 1.8e6, "download {download}: {back} from 6 to 9 s");
    }
}

/// One TCP flow over `paths` for 20 s from `start_s` seconds in, through
/// the session with re-sends, at the tunnel's MTU.
fn tcp_over(paths: &[&str], start_s: f64, download: bool) -> Report {
    let mut s = scenario(
        paths,
        &format!("tcp:cubic@{start_s}s"),
        20,
        SessionSpec {
            download,
            ..SessionSpec::default()
        },
    );
    s.duration += Duration::from_secs_f64(start_s);
    s.payload_bytes = braid_core::session::tunnel_mtu(1500, true);
    s.resend_losses = true;
    run(&s).unwrap()
}

fn evdo_trace() -> String {
    let traces = concat!(env!("CARGO_MANIFEST_DIR"), "/../../traces");
    format!("trace={traces}/Verizon-EVDO-driving.down,50ms")
}

/// A 3G path while driving (the repository's Verizon EVDO trace, 50 ms
/// one way) beside an 8 Mbit/s fixed line: its fades hold single
/// datagrams for a second and more, and every packet of the fixed line
/// sent after one waits behind it at the receiver. The session copies a
/// minor path's overdue datagrams onto the fixed line, so one TCP flow
/// keeps nearly the fixed line's own rate, up and down. Without the
/// copies it got 6.77 and 6.20 Mbit/s in these 20 s, with 2 retransmission
/// timeouts each; with them 7.05 and 6.92, with 1 each; the fixed line
/// alone 7.33 (BENCHMARKS.md, "A 3G path's overdue datagrams").
#[test]
fn a_thin_fading_path_beside_a_fixed_line_costs_its_flow_little() {
    let thin = evdo_trace();
    let alone = tcp_over(&["8mbit,10ms"], 0.0, false).flows[0]
        .tcp
        .clone()
        .unwrap();
    for download in [false, true] {
        let r = tcp_over(&["8mbit,10ms", &thin], 0.0, download);
        let tcp = r.flows[0].tcp.clone().expect("a TCP flow");
        let sender = r.sender.clone().expect("sender counters");
        eprintln!(
            "download {download}: {:.2} Mbit/s ({} timeouts, {} copies) against {:.2} alone",
            tcp.goodput_bps / 1e6,
            tcp.counters.timeouts,
            sender.hedge_sent,
            alone.goodput_bps / 1e6
        );
        assert!(sender.hedge_sent > 0, "download {download}: {sender:?}");
        assert!(tcp.counters.timeouts <= 1, "download {download}: {tcp:?}");
        assert!(
            tcp.goodput_bps > 0.93 * alone.goodput_bps,
            "download {download}: {tcp:?}"
        );
    }
}

/// The same 3G path must not become its flow's round trip. The queue
/// held the 3G path's lead over the fixed line, up to its round trip of a
/// second in a fade: one flow started 1.5 s in (as on a fresh tunnel whose
/// paths were measured) ran at 1.14 s (p99) up and 1.12 s down, for 7.13
/// Mbit/s each way. A minor path's delays now size the queue at most 150
/// ms beyond the fixed line's: 0.29 and 0.30 s, for 7.38 and 7.36 Mbit/s;
/// the fixed line alone gives 7.34 at 0.08 s (BENCHMARKS.md, "A minor
/// path's lead"). The bound, 0.4 s: the fixed line's own, the 150 ms, and
/// the time an overdue copy takes to fill the 3G path's hole (its longer
/// way back, the copy's 30-ms margin, a round trip of the fixed line).
#[test]
fn a_thin_fading_paths_delay_is_not_its_flows_round_trip() {
    let thin = evdo_trace();
    let alone = tcp_over(&["8mbit,10ms"], 1.5, false).flows[0]
        .tcp
        .clone()
        .unwrap();
    for download in [false, true] {
        let r = tcp_over(&["8mbit,10ms", &thin], 1.5, download);
        let tcp = r.flows[0].tcp.clone().expect("a TCP flow");
        let rtt = tcp.rtt_ms.clone().expect("round trips measured");
        eprintln!(
            "download {download}: {:.2} Mbit/s, round trip p50 {:.0} ms, p99 {:.0} ms",
            tcp.goodput_bps / 1e6,
            rtt.p50,
            rtt.p99
        );
        assert!(rtt.p99 < 400.0, "download {download}: {tcp:?}");
        assert!(
            tcp.goodput_bps > 0.97 * alone.goodput_bps,
            "download {download}: {tcp:?}"
        );
    }
}
