//! `braid status`: asks a running client or server over its control socket
//! and shows per-path state, RTT, loss, window, rate, role and bytes used,
//! and per session the resequencer's figures and drops by reason.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
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
    let socket = args.socket.clone().unwrap_or_else(default_socket);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| Failure::Runtime(format!("runtime: {e}")))?;
    loop {
        let text = runtime.block_on(daemon::query(&socket)).map_err(|e| {
            Failure::Runtime(format!("no daemon answers on {}: {e}", socket.display()))
        })?;
        let out = if args.json {
            text
        } else {
            let doc: Value = serde_json::from_str(&text)
                .map_err(|e| Failure::Runtime(format!("daemon sent bad JSON: {e}")))?;
            render(&doc)
        };
        if args.watch {
            // Clear the screen and home the cursor, like watch(1).
            write_stdout(&format!("\x1b[2J\x1b[H{out}"))?;
            std::thread::sleep(Duration::from_secs(1));
        } else {
            return write_stdout(&out);
        }
    }
}

fn default_socket() -> PathBuf {
    let client = Path::new(client::DEFAULT_CONTROL_SOCKET);
    if client.exists() {
        client.to_owned()
    } else {
        server::DEFAULT_CONTROL_SOCKET.into()
    }
}

/// The status document as a table per session.
pub fn render(doc: &Value) -> String {
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
        _ => out.push_str("unknown status document\n"),
    }
    let _ = writeln!(out, "\ndaemon: {}", doc["daemon"]);
    out
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
    let r = &s["reseq"];
    let _ = writeln!(
        out,
        "established {}, reseq: {} held ({} bytes), delay mean {:.1} ms max {:.1} ms, {} delivered; send queue {} bytes, {} dropped; drops {}",
        s["established"],
        r["held_packets"],
        r["held_bytes"],
        r["delay_mean_ms"].as_f64().unwrap_or(0.0),
        r["delay_max_ms"].as_f64().unwrap_or(0.0),
        r["delivered"],
        s["send_queue_bytes"],
        s["send_dropped"],
        drops(&s["drops"]),
    );
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
        let text = render(&doc);
        assert!(
            text.contains("lte          down")
                && text.contains("\n  link lost: interface \"wwan0\" does not exist\n"),
            "{text}"
        );
        assert_eq!(text.matches("link lost").count(), 1, "{text}");
    }
}
