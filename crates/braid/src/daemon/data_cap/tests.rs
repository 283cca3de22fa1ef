//! Data caps on an injected wall clock: counting, demotion, the new
//! period's restoration, restarts, and the wiring to a real session.

use std::net::SocketAddr;

use braid_core::crypto::StaticKeypair;
use braid_core::session::{self, SessionConfig, MAX_DATAGRAM_LEN};
use rand::SeedableRng;

use super::*;
use crate::config::Period;

/// 2026-11-23T21:55:47Z.
const NOV_23: u64 = 1_795_470_947;
/// 2026-11-24T00:00:00Z and 2026-12-01T00:00:00Z.
const NOV_24: u64 = 1_795_478_400;
const DEC_1: u64 = 1_796_083_200;

fn cap(bytes: u64, period: Period) -> DataCap {
    DataCap { bytes, period }
}

#[test]
fn a_path_is_demoted_at_its_cap_and_restored_when_the_day_ends() {
    let mut c = PathCap::new(cap(1000, Period::Day), None, NOV_23);
    assert_eq!(c.update(NOV_23, 400), None);
    assert_eq!(c.update(NOV_23 + 1, 999), None);
    assert_eq!(c.saved().used_bytes, 999);
    assert_eq!(c.update(NOV_23 + 2, 1000), Some(Change::Reached));
    assert_eq!(c.update(NOV_23 + 3, 5000), None, "reached once");
    assert_eq!(c.status()["demoted"], true);
    assert_eq!(c.status()["period_end"], "2026-11-24T00:00:00Z");
    // One second before midnight: still the same day.
    assert_eq!(c.update(NOV_24 - 1, 6000), None);
    assert_eq!(c.saved().used_bytes, 6000);
    // Midnight: a new day; bytes since the last reading counted in the
    // old one.
    assert_eq!(c.update(NOV_24, 6100), Some(Change::Restored));
    assert_eq!(c.saved().used_bytes, 0);
    assert_eq!(c.saved().period_start, NOV_24);
    assert_eq!(c.update(NOV_24 + 1, 6600), None);
    assert_eq!(c.saved().used_bytes, 500);
    assert_eq!(c.status()["demoted"], false);
}

#[test]
fn a_monthly_cap_goes_on_from_the_saved_usage_of_the_same_month() {
    let mut first = PathCap::new(cap(10_000, Period::Month), None, NOV_23);
    first.update(NOV_23, 7000);
    let saved = first.saved();
    assert_eq!(saved.period_start, 1_793_491_200, "2026-11-01");
    // A restart a day later: the new session counts from zero again.
    let mut second = PathCap::new(cap(10_000, Period::Month), Some(saved), NOV_24);
    assert_eq!(second.saved().used_bytes, 7000);
    assert_eq!(second.update(NOV_24, 2999), None);
    assert_eq!(second.update(NOV_24 + 1, 3000), Some(Change::Reached));
    // A restart in December: November's usage is over.
    let mut december = PathCap::new(cap(10_000, Period::Month), Some(second.saved()), DEC_1);
    assert_eq!(december.saved().used_bytes, 0);
    assert_eq!(december.update(DEC_1, 10), None);
}

#[test]
fn a_saved_period_of_another_kind_is_not_carried_over() {
    let mut daily = PathCap::new(cap(10_000, Period::Day), None, NOV_23);
    daily.update(NOV_23, 9000);
    let monthly = PathCap::new(cap(10_000, Period::Month), Some(daily.saved()), NOV_23);
    assert_eq!(monthly.saved().used_bytes, 0);
}

#[test]
fn a_clock_that_steps_back_keeps_the_period_under_way() {
    let mut c = PathCap::new(cap(1000, Period::Day), None, NOV_23);
    assert_eq!(c.update(NOV_23, 1500), Some(Change::Reached));
    // The clock jumps back a week: still demoted, still counting.
    assert_eq!(c.update(NOV_23 - 7 * 86_400, 1600), None);
    assert_eq!(c.saved().used_bytes, 1600);
    // A restart with the clock in 1970 keeps the saved day too.
    let mut restarted = PathCap::new(cap(1000, Period::Day), Some(c.saved()), 0);
    assert_eq!(restarted.saved().used_bytes, 1600);
    assert_eq!(restarted.update(0, 0), Some(Change::Reached));
    // Once the clock is right again, the day ends as it should.
    assert_eq!(restarted.update(NOV_24, 0), Some(Change::Restored));
}

#[test]
fn counts_saturate_instead_of_overflowing() {
    let saved = SavedUsage {
        period: Period::Day,
        period_start: NOV_23 - NOV_23 % 86_400,
        used_bytes: u64::MAX - 5,
    };
    let mut c = PathCap::new(cap(u64::MAX, Period::Day), Some(saved), NOV_23);
    assert_eq!(c.update(NOV_23, 100), Some(Change::Reached));
    assert_eq!(c.saved().used_bytes, u64::MAX);
}

fn client_session(paths: usize) -> Session {
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    let server = StaticKeypair::generate(&mut rng);
    let remote: SocketAddr = "192.0.2.1:51820".parse().unwrap();
    Session::client(
        session::ClientConfig {
            local: StaticKeypair::generate(&mut rng),
            server: server.public,
            psk: None,
            paths: (0..paths)
                .map(|i| session::PathConfig {
                    name: format!("p{i}"),
                    role: PathRole::Primary,
                    cost: 0.0,
                    remote,
                    rate_limit_bps: None,
                })
                .collect(),
            session: SessionConfig::default(),
        },
        [3; 32],
    )
    .unwrap()
}

/// Lets the session send what it has (handshake initiations, which count
/// as the path's bytes) into the void.
fn drain(session: &mut Session, now: Instant) {
    session.handle_timeout(now);
    let mut buf = vec![0u8; MAX_DATAGRAM_LEN];
    while session.poll_transmit(now, &mut buf).is_some() {}
}

#[test]
fn caps_demote_and_restore_a_session_path_and_survive_a_restart() {
    let dir = std::env::temp_dir().join(format!("braid-data-cap-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let file = dir.join("client.usage.json");
    let setup = [
        PathSetup {
            name: "p0".into(),
            role: PathRole::Primary,
            cap: None,
        },
        PathSetup {
            name: "p1".into(),
            role: PathRole::Primary,
            cap: Some(cap(100, Period::Day)),
        },
    ];
    let mut caps = DataCaps::start(file.clone(), &setup, NOV_23)
        .unwrap()
        .unwrap();
    assert!(file.exists(), "written at start");
    let mut session = client_session(2);
    let role = |s: &Session| s.stats(Instant::ZERO).paths[1].role;
    // Initiations go out on each path in turn until one is answered
    // (never, here): path 1's first one is over 100 bytes.
    let mut now = Instant::ZERO;
    while session.stats(now).paths[1].tx_bytes == 0 {
        drain(&mut session, now);
        now += Duration::from_secs(1);
    }
    assert_eq!(caps.poll_timeout(), Instant::ZERO);
    caps.handle_timeout(now, NOV_23 + 10, &mut session);
    assert_eq!(role(&session), PathRole::Backup);
    assert_eq!(caps.status(1).unwrap()["demoted"], true);
    assert!(caps.status(0).is_none());
    assert_eq!(caps.poll_timeout(), now + UPDATE_INTERVAL);
    // Before its interval nothing is read.
    caps.handle_timeout(now, NOV_24, &mut session);
    assert_eq!(role(&session), PathRole::Backup);

    // The demotion was saved: a restarted daemon demotes the path at once.
    let used = caps.status(1).unwrap()["used_bytes"].as_u64().unwrap();
    assert!(used >= 100, "{used}");
    let mut restarted = DataCaps::start(file.clone(), &setup, NOV_23 + 20)
        .unwrap()
        .unwrap();
    let mut fresh = client_session(2);
    restarted.handle_timeout(Instant::ZERO, NOV_23 + 20, &mut fresh);
    assert_eq!(role(&fresh), PathRole::Backup);
    assert_eq!(restarted.status(1).unwrap()["used_bytes"], used);

    // The next day restores the configured role.
    now += UPDATE_INTERVAL;
    caps.handle_timeout(now, NOV_24 + 1, &mut session);
    assert_eq!(role(&session), PathRole::Primary);
    assert_eq!(caps.status(1).unwrap()["demoted"], false);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn no_caps_no_file_and_a_corrupt_file_counts_from_zero() {
    let dir = std::env::temp_dir().join(format!("braid-data-cap-test2-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let file = dir.join("u.json");
    let uncapped = [PathSetup {
        name: "p0".into(),
        role: PathRole::Primary,
        cap: None,
    }];
    assert!(DataCaps::start(file.clone(), &uncapped, NOV_23)
        .unwrap()
        .is_none());
    assert!(!file.exists());

    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(&file, "{\"version\":1,\"paths\":{").unwrap();
    let capped = [PathSetup {
        name: "p0".into(),
        role: PathRole::Primary,
        cap: Some(cap(100, Period::Month)),
    }];
    let caps = DataCaps::start(file.clone(), &capped, NOV_23)
        .unwrap()
        .unwrap();
    assert_eq!(caps.status(0).unwrap()["used_bytes"], 0);
    assert!(dir.join("u.json.corrupt").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
