//! `braid status`: asks a running client or server over its control socket
//! and shows per-path state, RTT, loss, window, rate, role and bytes used,
//! and per session the resequencer's figures and drops by reason.

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;

use crate::config::{client, server};
use crate::daemon;
use crate::{write_stdout, Failure};

#[derive(clap::Args, Debug)]
pub struct StatusArgs {
    /// The daemon's control socket (default: the client's, else the server's)
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// Print the daemon's JSON document
    #[arg(long)]
    pub json: bool,
    /// Refresh every second until interrupted
    #[arg(long)]
    pub watch: bool,
}

pub fn run(args: &StatusArgs) -> Result<(), Failure> {
    let socket = match &args.socket {
        Some(socket) => socket.clone(),
        None => default_socket().ok_or_else(|| {
            Failure::Runtime(format!(
                "no braid client or server is running here (neither {} nor {} exists); \
                 give a daemon's control socket with --socket",
                client::DEFAULT_CONTROL_SOCKET,
                server::DEFAULT_CONTROL_SOCKET
            ))
        })?,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Runtime(format!("runtime: {e}")))?;
    loop {
        let text = runtime
            .block_on(daemon::query(&socket))
            .map_err(|e| Failure::Runtime(e.to_string()))?;
        // Checked in both forms: a script reading --json must not get a
        // document that is no status with exit 0.
        let bad = |e: String| Failure::Runtime(format!("{}: {e}", socket.display()));
        let doc: Value = serde_json::from_str(&text)
            .map_err(|e| bad(format!("the daemon sent bad JSON: {e}")))?;
        let table = render(&doc).map_err(bad)?;
        let out = if args.json {
            let mut text = text;
            if !text.ends_with('\n') {
                text.push('\n');
            }
            text
        } else {
            table
        };
        if !args.watch {
            return write_stdout(&out);
        }
        // Clear the screen and home the cursor, like watch(1), only for a
        // person watching a terminal.
        let clear = if std::io::stdout().is_terminal() {
            "\x1b[2J\x1b[H"
        } else {
            ""
        };
        write_stdout(&format!("{clear}{out}"))?;
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// The client's default control socket if it exists, else the server's.
fn default_socket() -> Option<PathBuf> {
    [
        client::DEFAULT_CONTROL_SOCKET,
        server::DEFAULT_CONTROL_SOCKET,
    ]
    .into_iter()
    .map(PathBuf::from)
    .find(|p| p.exists())
}

/// The status document as a table per session; an error for a document
/// that is no daemon's status.
pub fn render(doc: &Value) -> Result<String, String> {
    let mut out = String::new();
    match doc["role"].as_str() {
        Some("client") => session(&mut out, &doc["session"]),
        Some("server") => {
            let _ = writeln!(
                out,
                "server: {} session(s), {} handshake(s) accepted, drops {}",
                doc["sessions"],
                doc["handshakes_accepted"],
                drops(&doc["drops"])
            );
            for peer in doc["peers"].as_array().into_iter().flatten() {
                let _ = writeln!(
                    out,
                    "\npeer {} ({})",
                    peer["name"].as_str().unwrap_or("?"),
                    peer["allowed"]
                        .as_array()
                        .map(|a| a
                            .iter()
                            .filter_map(Value::as_str)
                            .collect::<Vec<_>>()
                            .join(", "))
                        .unwrap_or_default()
                );
                if peer["session"].is_null() {
                    out.push_str("  no session\n");
                } else {
                    session(&mut out, &peer["session"]);
                }
            }
        }
        _ => {
            return Err(
                "the answer is no braid status (its \"role\" is neither \"client\" nor \"server\")"
                    .to_owned(),
            )
        }
    }
    let _ = writeln!(out, "\ndaemon: {}", doc["daemon"]);
    Ok(out)
}

fn session(out: &mut String, s: &Value) {
    let _ = writeln!(
        out,
        "{:<12} {:<11} {:<8} {:>9} {:>6} {:>9} {:>11} {:>12}",
        "path", "state", "role", "rtt", "loss", "cwnd", "rate", "bytes used"
    );
    for p in s["paths"].as_array().into_iter().flatten() {
        let _ = writeln!(
            out,
            "{:<12} {:<11} {:<8} {:>9} {:>5.1}% {:>9} {:>11} {:>12}",
            p["name"].as_str().unwrap_or("?"),
            p["state"].as_str().unwrap_or("?"),
            p["role"].as_str().unwrap_or("?"),
            p["rtt_ms"]
                .as_f64()
                .map_or("-".to_owned(), |ms| format!("{ms:.1} ms")),
            p["loss"].as_f64().unwrap_or(0.0) * 100.0,
            p["cwnd_bytes"].as_u64().unwrap_or(0),
            p["send_rate_bps"]
                .as_f64()
                .map_or("-".to_owned(), |bps| format!("{:.2} Mbit/s", bps / 1e6)),
            p["bytes_used"].as_u64().unwrap_or(0),
        );
        // Why, when the client knows the path's link is gone.
        if p["down_reason"] == "link_lost" {
            let _ = writeln!(
                out,
                "  link lost: {}",
                p["link"].as_str().unwrap_or("(no detail)")
            );
        }
    }
    for p in s["paths"].as_array().into_iter().flatten() {
        let cap = &p["data_cap"];
        if cap.is_object() {
            let _ = writeln!(
                out,
                "data cap {}: {} of {} this {} (to {}){}",
                p["name"].as_str().unwrap_or("?"),
                decimal_bytes(cap["used_bytes"].as_u64().unwrap_or(0)),
                decimal_bytes(cap["cap_bytes"].as_u64().unwrap_or(0)),
                cap["period"].as_str().unwrap_or("?"),
                cap["period_end"].as_str().unwrap_or("?"),
                if cap["demoted"] == true {
                    ", reached: demoted to backup"
                } else {
                    ""
                },
            );
        }
    }
    let r = &s["reseq"];
    let _ = writeln!(
        out,
        "established {}, reseq: {} held ({} bytes), delay mean {:.1} ms max {:.1} ms, {} delivered ({} early for their flow, {} late, {} skipped, {} hole timeouts); send queue {} bytes, {} dropped ({} more by CoDel, {} ECN-marked instead), {} re-sent off a dead path ({} too late to re-send), {} lost and re-sent ({} too late to re-send), {} overdue on a minor path and copied to a quicker one; drops {}",
        s["established"],
        r["held_packets"],
        r["held_bytes"],
        r["delay_mean_ms"].as_f64().unwrap_or(0.0),
        r["delay_max_ms"].as_f64().unwrap_or(0.0),
        r["delivered"],
        r["delivered_early"].as_u64().unwrap_or(0),
        r["delivered_late"].as_u64().unwrap_or(0),
        r["skipped"].as_u64().unwrap_or(0),
        r["timeouts"].as_u64().unwrap_or(0),
        s["send_queue_bytes"],
        s["send_dropped"],
        s["send_codel_dropped"].as_u64().unwrap_or(0),
        s["send_codel_marked"].as_u64().unwrap_or(0),
        s["send_reinjected"].as_u64().unwrap_or(0),
        s["send_reinject_stale"].as_u64().unwrap_or(0),
        s["send_resent"].as_u64().unwrap_or(0),
        s["send_resend_stale"].as_u64().unwrap_or(0),
        s["send_overdue_copies"].as_u64().unwrap_or(0),
        drops(&s["drops"]),
    );
}

/// Bytes in decimal units, as data caps are written (`50GB`).
fn decimal_bytes(n: u64) -> String {
    const UNITS: [(f64, &str); 4] = [(1e12, "TB"), (1e9, "GB"), (1e6, "MB"), (1e3, "kB")];
    let x = n as f64;
    UNITS
        .iter()
        .find(|(scale, _)| x >= *scale)
        .map_or(format!("{n} B"), |(scale, unit)| {
            format!("{:.2} {unit}", x / scale)
        })
}

fn drops(d: &Value) -> String {
    match d.as_object() {
        Some(m) if !m.is_empty() => m
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" "),
        _ => "none".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whatever answers on the socket, a document without a daemon's role
    /// is an error, not a table of question marks and an exit status of 0.
    #[test]
    fn a_document_that_is_no_status_is_refused() {
        for doc in [
            serde_json::json!({}),
            serde_json::json!({"role": "proxy", "paths": "x"}),
            serde_json::json!([1, 2]),
        ] {
            let e = render(&doc).unwrap_err();
            assert!(e.contains("no braid status"), "{e}");
        }
    }

    /// `--json` passes the daemon's document through, but only one that
    /// is a status: a script must not read `{"foo":1}` with exit 0.
    #[test]
    fn json_output_is_refused_for_a_document_that_is_no_status() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("fake.sock");
        let listener = std::os::unix::net::UnixListener::bind(&path).unwrap();
        let daemon = std::thread::spawn(move || {
            use std::io::Write;
            let (mut stream, _) = listener.accept().unwrap();
            stream.write_all(br#"{"foo":1}"#).unwrap();
        });
        let args = StatusArgs {
            socket: Some(path),
            json: true,
            watch: false,
        };
        let e = run(&args).expect_err("refused");
        daemon.join().unwrap();
        assert!(
            matches!(&e, Failure::Runtime(m) if m.contains("no braid status")),
            "{e:?}"
        );
    }

    #[test]
    fn a_server_shows_each_peer_and_whether_it_has_a_session() {
        let doc = serde_json::json!({
            "role": "server",
            "sessions": 1,
            "handshakes_accepted": 3,
            "drops": {},
            "peers": [
                {"name": "home", "allowed": ["10.77.0.2/32"], "session": {"paths": [
                    {"name": "p1", "state": "up", "role": "primary"}]}},
                {"name": "van", "allowed": ["10.77.0.3/32", "fd77::3/128"], "session": null},
            ],
            "daemon": {},
        });
        let text = render(&doc).unwrap();
        assert!(
            text.starts_with("server: 1 session(s), 3 handshake(s) accepted, drops none\n"),
            "{text}"
        );
        assert!(text.contains("\npeer home (10.77.0.2/32)\n"), "{text}");
        assert!(text.contains("\np1 "), "{text}");
        assert!(
            text.contains("\npeer van (10.77.0.3/32, fd77::3/128)\n  no session\n"),
            "{text}"
        );
    }

    /// The session line names what the resequencer gave up on and what
    /// the sender could not send again, each apart.
    #[test]
    fn the_session_line_shows_hole_timeouts_and_stale_put_backs() {
        let doc = serde_json::json!({
            "role": "client",
            "session": {"paths": [], "established": true,
                        "reseq": {"delivered": 90, "skipped": 7, "timeouts": 3},
                        "send_reinjected": 11, "send_reinject_stale": 5,
                        "send_resent": 4, "send_resend_stale": 2},
            "daemon": {},
        });
        let text = render(&doc).unwrap();
        assert!(text.contains("7 skipped, 3 hole timeouts)"), "{text}");
        assert!(
            text.contains(
                "11 re-sent off a dead path (5 too late to re-send), 4 lost and re-sent (2 too late to re-send)"
            ),
            "{text}"
        );
    }

    #[test]
    fn a_capped_path_shows_its_usage_cap_and_demotion() {
        let doc = serde_json::json!({
            "role": "client",
            "session": {"paths": [
                {"name": "dsl", "state": "up", "role": "primary", "bytes_used": 10},
                {"name": "lte", "state": "up", "role": "backup", "bytes_used": 5,
                 "data_cap": {"cap_bytes": 50_000_000_000u64, "period": "month",
                              "used_bytes": 50_123_000_000u64, "demoted": true,
                              "period_start": "2026-11-01T00:00:00Z",
                              "period_end": "2026-12-01T00:00:00Z"}},
            ]},
            "daemon": {},
        });
        let text = super::render(&doc).unwrap();
        assert!(
            text.contains(
                "data cap lte: 50.12 GB of 50.00 GB this month (to 2026-12-01T00:00:00Z), \
                 reached: demoted to backup\n"
            ),
            "{text}"
        );
        assert!(!text.contains("data cap dsl"), "{text}");
        assert_eq!(super::decimal_bytes(999), "999 B");
        assert_eq!(super::decimal_bytes(1500), "1.50 kB");
    }

    #[test]
    fn a_path_whose_link_is_lost_says_what_happened() {
        let doc = serde_json::json!({
            "role": "client",
            "session": {"paths": [
                {"name": "dsl", "state": "up", "down_reason": null},
                {"name": "lte", "state": "down", "down_reason": "link_lost",
                 "link": "interface \"wwan0\" does not exist"},
                {"name": "sat", "state": "down", "down_reason": "silent",
                 "link": "interface \"sat0\" is up"},
            ]},
            "daemon": {},
        });
        let text = render(&doc).unwrap();
        assert!(
            text.contains("lte          down")
                && text.contains("\n  link lost: interface \"wwan0\" does not exist\n"),
            "{text}"
        );
        assert_eq!(text.matches("link lost").count(), 1, "{text}");
    }
}
