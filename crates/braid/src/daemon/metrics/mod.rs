//! The Prometheus endpoint (`metrics = "127.0.0.1:9851"`): `GET /metrics`
//! answers with the daemon's `braid status --json` document in the
//! OpenMetrics text format. Rendered on request from the counters the
//! session and the daemon keep anyway: nothing is counted per packet for
//! it. HTTP is hyper's, one connection at a time per task on the daemon's
//! `LocalSet`, with a bounded number of connections and a header timeout
//! so that a slow or idle scraper costs nothing but a socket.

use std::cell::Cell;
use std::convert::Infallible;
use std::rc::Rc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use serde_json::Value;
use tokio::net::TcpListener;
use tracing::debug;

/// Scrapers served at once; more connections are closed at once.
const MAX_CONNECTIONS: usize = 8;
/// Time a connection has to send its request headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// Time a connection may take in all (a scraper that does not read).
const CONNECTION_TIMEOUT: Duration = Duration::from_secs(10);
const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Serves `GET /metrics` on `listener` with `status()` rendered, until the
/// task is dropped.
pub async fn serve(listener: TcpListener, status: Rc<dyn Fn() -> Value>) {
    let open = Rc::new(Cell::new(0usize));
    loop {
        let Ok((stream, _)) = listener.accept().await else {
            continue;
        };
        if open.get() >= MAX_CONNECTIONS {
            continue;
        }
        open.set(open.get() + 1);
        let (status, open) = (status.clone(), open.clone());
        tokio::task::spawn_local(async move {
            let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                let response = answer(&request, &*status);
                async move { Ok::<_, Infallible>(response) }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_TIMEOUT)
                .keep_alive(false)
                .serve_connection(TokioIo::new(stream), service);
            match tokio::time::timeout(CONNECTION_TIMEOUT, connection).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => debug!("metrics connection: {e}"),
                Err(_) => debug!("metrics connection: timed out"),
            }
            open.set(open.get() - 1);
        });
    }
}

fn answer(request: &Request<Incoming>, status: &dyn Fn() -> Value) -> Response<Full<Bytes>> {
    let reply = |code: StatusCode, content_type: &str, body: String| {
        Response::builder()
            .status(code)
            .header(hyper::header::CONTENT_TYPE, content_type)
            .body(Full::new(Bytes::from(body)))
            .expect("a static status and header are valid")
    };
    match (request.method(), request.uri().path()) {
        (&Method::GET, "/metrics") => reply(StatusCode::OK, CONTENT_TYPE, render(&status())),
        (&Method::GET, _) => reply(
            StatusCode::NOT_FOUND,
            "text/plain",
            "not found: try /metrics\n".into(),
        ),
        _ => reply(
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain",
            "only GET\n".into(),
        ),
    }
}

type Labels = Vec<(&'static str, String)>;
type GaugeFamily = Family<Labels, Gauge<f64, AtomicU64>>;
type CounterFamily = Family<Labels, Counter>;

/// Adds families to a registry and fills them from the status document.
struct Builder {
    registry: Registry,
}

impl Builder {
    fn gauge(&mut self, name: &str, help: &str) -> GaugeFamily {
        let family = GaugeFamily::default();
        self.registry.register(name, help, family.clone());
        family
    }

    fn counter(&mut self, name: &str, help: &str) -> CounterFamily {
        let family = CounterFamily::default();
        self.registry.register(name, help, family.clone());
        family
    }
}

fn set(family: &GaugeFamily, labels: &Labels, value: Option<f64>) {
    if let Some(v) = value {
        family.get_or_create(labels).set(v);
    }
}

fn add(family: &CounterFamily, labels: &Labels, value: Option<u64>) {
    if let Some(v) = value {
        family.get_or_create(labels).inc_by(v);
    }
}

fn with(labels: &Labels, key: &'static str, value: &str) -> Labels {
    let mut l = labels.clone();
    l.push((key, value.to_owned()));
    l
}

/// The per-path and per-session families.
struct SessionFamilies {
    up: GaugeFamily,
    role: GaugeFamily,
    rtt: GaugeFamily,
    min_rtt: GaugeFamily,
    queueing: GaugeFamily,
    loss: GaugeFamily,
    cwnd: GaugeFamily,
    in_flight: GaugeFamily,
    send_rate: GaugeFamily,
    sent_bytes: CounterFamily,
    received_bytes: CounterFamily,
    sent_packets: CounterFamily,
    received_packets: CounterFamily,
    probes: CounterFamily,
    times_down: CounterFamily,
    cap_bytes: GaugeFamily,
    cap_used: GaugeFamily,
    cap_demoted: GaugeFamily,
    established: GaugeFamily,
    handshakes: CounterFamily,
    rekeys: CounterFamily,
    held_packets: GaugeFamily,
    held_bytes: GaugeFamily,
    reseq_delay_max: GaugeFamily,
    reseq_delay_mean: GaugeFamily,
    delivered: CounterFamily,
    reseq_timeouts: CounterFamily,
    send_queue: GaugeFamily,
    send_dropped: CounterFamily,
    send_codel_dropped: CounterFamily,
    send_codel_marked: CounterFamily,
    send_reinjected: CounterFamily,
    send_resent: CounterFamily,
    send_resend_stale: CounterFamily,
    send_reinject_stale: CounterFamily,
    send_overdue_copies: CounterFamily,
    drops: CounterFamily,
}

impl SessionFamilies {
    fn new(b: &mut Builder) -> SessionFamilies {
        SessionFamilies {
            up: b.gauge("braid_path_up", "1 if the path is up (answers), else 0"),
            role: b.gauge(
                "braid_path_role",
                "1 for the path's current role (primary, overflow, backup)",
            ),
            rtt: b.gauge("braid_path_rtt_seconds", "Smoothed round-trip time"),
            min_rtt: b.gauge(
                "braid_path_min_rtt_seconds",
                "Smallest round-trip time seen",
            ),
            queueing: b.gauge(
                "braid_path_queueing_delay_seconds",
                "One-way delay above the path's floor",
            ),
            loss: b.gauge(
                "braid_path_loss_ratio",
                "Recent loss rate of data sent on the path",
            ),
            cwnd: b.gauge("braid_path_cwnd_bytes", "Congestion window"),
            in_flight: b.gauge(
                "braid_path_in_flight_bytes",
                "Bytes sent and not yet acknowledged",
            ),
            send_rate: b.gauge(
                "braid_path_send_rate_bits_per_second",
                "The congestion controller's rate estimate",
            ),
            sent_bytes: b.counter(
                "braid_path_sent_bytes",
                "UDP payload bytes sent on the path",
            ),
            received_bytes: b.counter(
                "braid_path_received_bytes",
                "UDP payload bytes received (authenticated) on the path",
            ),
            sent_packets: b.counter("braid_path_sent_packets", "Datagrams sent on the path"),
            received_packets: b.counter(
                "braid_path_received_packets",
                "Datagrams received (authenticated) on the path",
            ),
            probes: b.counter(
                "braid_path_probes_sent",
                "Keepalive probes sent on the path",
            ),
            times_down: b.counter(
                "braid_path_down_transitions",
                "Times the path was marked down",
            ),
            cap_bytes: b.gauge(
                "braid_path_data_cap_bytes",
                "The path's data cap per period (sent + received UDP payload)",
            ),
            cap_used: b.gauge(
                "braid_path_data_cap_used_bytes",
                "Bytes the path used in the current cap period",
            ),
            cap_demoted: b.gauge(
                "braid_path_data_cap_demoted",
                "1 while the path is demoted to backup by its data cap",
            ),
            established: b.gauge("braid_session_established", "1 if the session has keys"),
            handshakes: b.counter("braid_session_handshakes", "Handshakes completed"),
            rekeys: b.counter("braid_session_rekeys", "Key rotations"),
            held_packets: b.gauge(
                "braid_reseq_held_packets",
                "Inner packets the resequencer holds",
            ),
            held_bytes: b.gauge("braid_reseq_held_bytes", "Bytes the resequencer holds"),
            reseq_delay_max: b.gauge(
                "braid_reseq_delay_max_seconds",
                "Largest resequencing delay of a delivered packet",
            ),
            reseq_delay_mean: b.gauge(
                "braid_reseq_delay_mean_seconds",
                "Mean resequencing delay of delivered packets",
            ),
            delivered: b.counter(
                "braid_reseq_delivered_packets",
                "Inner packets delivered in order",
            ),
            reseq_timeouts: b.counter(
                "braid_reseq_timeouts",
                "Times the resequencer's hole timer ran out and it gave up on a hole",
            ),
            send_queue: b.gauge(
                "braid_send_queue_bytes",
                "Inner packet bytes waiting to be sent",
            ),
            send_dropped: b.counter(
                "braid_send_dropped_packets",
                "Inner packets dropped in the send queue",
            ),
            send_codel_dropped: b.counter(
                "braid_send_codel_dropped_packets",
                "Inner packets the send queue's CoDel dropped (the inner flows' congestion signal)",
            ),
            send_codel_marked: b.counter(
                "braid_send_codel_marked_packets",
                "ECN-capable inner packets the send queue's CoDel marked Congestion Experienced instead of dropping",
            ),
            send_reinjected: b.counter(
                "braid_send_reinjected_packets",
                "Inner packets a path had in flight when it went down, sent again on another path",
            ),
            send_resent: b.counter(
                "braid_send_resent_packets",
                "Inner packets a live path lost, sent again (resend_losses)",
            ),
            send_resend_stale: b.counter(
                "braid_send_resend_stale_packets",
                "Lost inner packets not sent again: held past the queue delay limit",
            ),
            send_reinject_stale: b.counter(
                "braid_send_reinject_stale_packets",
                "Inner packets a path had in flight when it went silent, not sent again: held past the queue delay limit",
            ),
            send_overdue_copies: b.counter(
                "braid_send_overdue_copies_packets",
                "Inner packets a minor path held past their due while the receiver waited, copied onto a quicker path",
            ),
            drops: b.counter(
                "braid_session_drops",
                "Datagrams the session dropped, by reason",
            ),
        }
    }

    /// One session's `braid status --json` object, under `base` labels.
    fn fill(&self, base: &Labels, s: &Value) {
        let ms = |v: &Value| v.as_f64().map(|ms| ms / 1e3);
        for p in s["paths"].as_array().into_iter().flatten() {
            let l = with(base, "path", p["name"].as_str().unwrap_or("?"));
            set(&self.up, &l, Some(f64::from(u8::from(p["state"] == "up"))));
            if let Some(role) = p["role"].as_str() {
                set(&self.role, &with(&l, "role", role), Some(1.0));
            }
            set(&self.rtt, &l, ms(&p["rtt_ms"]));
            set(&self.min_rtt, &l, ms(&p["min_rtt_ms"]));
            set(&self.queueing, &l, ms(&p["queueing_delay_ms"]));
            set(&self.loss, &l, p["loss"].as_f64());
            set(&self.cwnd, &l, p["cwnd_bytes"].as_f64());
            set(&self.in_flight, &l, p["in_flight_bytes"].as_f64());
            set(&self.send_rate, &l, p["send_rate_bps"].as_f64());
            add(&self.sent_bytes, &l, p["tx_bytes"].as_u64());
            add(&self.received_bytes, &l, p["rx_bytes"].as_u64());
            add(&self.sent_packets, &l, p["tx_packets"].as_u64());
            add(&self.received_packets, &l, p["rx_packets"].as_u64());
            add(&self.probes, &l, p["probes_sent"].as_u64());
            add(&self.times_down, &l, p["times_down"].as_u64());
            let cap = &p["data_cap"];
            set(&self.cap_bytes, &l, cap["cap_bytes"].as_f64());
            set(&self.cap_used, &l, cap["used_bytes"].as_f64());
            set(
                &self.cap_demoted,
                &l,
                cap["demoted"].as_bool().map(|d| f64::from(u8::from(d))),
            );
        }
        set(
            &self.established,
            base,
            s["established"].as_bool().map(|e| f64::from(u8::from(e))),
        );
        add(&self.handshakes, base, s["handshakes"].as_u64());
        add(&self.rekeys, base, s["rekeys"].as_u64());
        let r = &s["reseq"];
        set(&self.held_packets, base, r["held_packets"].as_f64());
        set(&self.held_bytes, base, r["held_bytes"].as_f64());
        set(&self.reseq_delay_max, base, ms(&r["delay_max_ms"]));
        set(&self.reseq_delay_mean, base, ms(&r["delay_mean_ms"]));
        add(&self.delivered, base, r["delivered"].as_u64());
        add(&self.reseq_timeouts, base, r["timeouts"].as_u64());
        set(&self.send_queue, base, s["send_queue_bytes"].as_f64());
        add(&self.send_dropped, base, s["send_dropped"].as_u64());
        add(
            &self.send_codel_dropped,
            base,
            s["send_codel_dropped"].as_u64(),
        );
        add(
            &self.send_codel_marked,
            base,
            s["send_codel_marked"].as_u64(),
        );
        add(&self.send_reinjected, base, s["send_reinjected"].as_u64());
        add(&self.send_resent, base, s["send_resent"].as_u64());
        add(
            &self.send_resend_stale,
            base,
            s["send_resend_stale"].as_u64(),
        );
        add(
            &self.send_reinject_stale,
            base,
            s["send_reinject_stale"].as_u64(),
        );
        add(
            &self.send_overdue_copies,
            base,
            s["send_overdue_copies"].as_u64(),
        );
        drops(&self.drops, base, &s["drops"]);
    }
}

fn drops(family: &CounterFamily, base: &Labels, d: &Value) {
    for (reason, n) in d.as_object().into_iter().flatten() {
        add(family, &with(base, "reason", reason), n.as_u64());
    }
}

/// A `braid status --json` document (client or server) as OpenMetrics
/// text. A server's sessions carry a `peer` label.
pub fn render(doc: &Value) -> String {
    let mut b = Builder {
        registry: Registry::default(),
    };
    let sessions = SessionFamilies::new(&mut b);
    match doc["role"].as_str() {
        Some("client") => sessions.fill(&Labels::new(), &doc["session"]),
        Some("server") => {
            let count = b.gauge("braid_server_sessions", "Clients with a session");
            set(&count, &Labels::new(), doc["sessions"].as_f64());
            let accepted = b.counter("braid_server_handshakes_accepted", "Handshakes accepted");
            add(
                &accepted,
                &Labels::new(),
                doc["handshakes_accepted"].as_u64(),
            );
            let dropped = b.counter(
                "braid_server_drops",
                "Datagrams dropped before any session, by reason",
            );
            drops(&dropped, &Labels::new(), &doc["drops"]);
            for peer in doc["peers"].as_array().into_iter().flatten() {
                if !peer["session"].is_null() {
                    let labels = vec![("peer", peer["name"].as_str().unwrap_or("?").to_owned())];
                    sessions.fill(&labels, &peer["session"]);
                }
            }
        }
        _ => {}
    }
    for (key, value) in doc["daemon"].as_object().into_iter().flatten() {
        // A switch (TUN offload) is a 0/1 gauge; the rest are counters.
        if let Some(on) = value.as_bool() {
            let family = b.gauge(
                &format!("braid_daemon_{key}"),
                "Daemon setting, 1 when on (braid status: daemon)",
            );
            set(&family, &Labels::new(), Some(f64::from(u8::from(on))));
            continue;
        }
        let family = b.counter(
            &format!("braid_daemon_{key}"),
            "Daemon counter (braid status: daemon)",
        );
        add(&family, &Labels::new(), value.as_u64());
    }
    let mut text = String::new();
    encode(&mut text, &b.registry).expect("writing to a String cannot fail");
    text
}

#[cfg(test)]
mod tests;
