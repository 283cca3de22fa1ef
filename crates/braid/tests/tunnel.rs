//! The tunnel end to end: `braid server` and `braid client` in the lab's
//! namespaces, one braid path per emulated path, traffic through the TUN
//! devices. Needs root (namespaces, TUN); skips without it, fails in CI.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

const SERVER_TUN: &str = "10.77.0.1";
const CLIENT_TUN: &str = "10.77.0.2";

fn braid() -> Command {
    Command::new(env!("CARGO_BIN_EXE_braid"))
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("run a command")
}

use braid_lab::root_guard::have_root_or_skip as have_root;

fn genkey() -> String {
    let out = run(braid().arg("genkey"));
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

fn pubkey(private: &str) -> String {
    let mut child = braid()
        .arg("pubkey")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(private.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// A lab with a braid server and client in it; everything stopped and
/// removed on drop (pass, fail or panic).
struct Tunnel {
    lab: String,
    dir: PathBuf,
    server: Option<Child>,
    client: Option<Child>,
}

impl Tunnel {
    /// `client_key_matches`: false gives the client a key the server does
    /// not know.
    fn up(lab: &str, specs: &[&str], client_key_matches: bool) -> Tunnel {
        // The lab's client address on path i; its policy routing sends
        // packets from it over that path.
        Tunnel::up_with(lab, specs, client_key_matches, &|i| {
            format!("[[path]]\nname = \"p{i}\"\nsource = \"198.18.{i}.2\"\n")
        })
    }

    /// [`Tunnel::up`] with the client's `[[path]]` of lab path `i` (from 1)
    /// written by `path_toml`.
    fn up_with(
        lab: &str,
        specs: &[&str],
        client_key_matches: bool,
        path_toml: &dyn Fn(usize) -> String,
    ) -> Tunnel {
        let _ = run(braid().args(["lab", "down", "--name", lab]));
        let mut up = braid();
        up.args(["lab", "up", "--name", lab, "--seed", "1"]);
        for spec in specs {
            up.args(["--path", spec]);
        }
        let out = run(up.stdout(Stdio::null()));
        assert!(
            out.status.success(),
            "lab up: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let dir = std::env::temp_dir().join(format!("braid-tunnel-test-{lab}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let mut tunnel = Tunnel {
            lab: lab.to_owned(),
            dir,
            server: None,
            client: None,
        };

        let (server_key, client_key) = (genkey(), genkey());
        let known_client = if client_key_matches {
            pubkey(&client_key)
        } else {
            pubkey(&genkey())
        };
        let server_config = format!(
            "private_key = \"{server_key}\"\nlisten = [\"198.19.0.1:51820\"]\n\
             control_socket = \"{}\"\n[tunnel]\nipv4 = \"{SERVER_TUN}/24\"\n\
             [[peer]]\nname = \"lab\"\npublic_key = \"{known_client}\"\nallowed = [\"{CLIENT_TUN}/32\"]\n",
            tunnel.socket("server").display()
        );
        let mut client_config = format!(
            "private_key = \"{client_key}\"\ncontrol_socket = \"{}\"\n[server]\n\
             public_key = \"{}\"\nendpoint = \"198.19.0.1:51820\"\n[tunnel]\nipv4 = \"{CLIENT_TUN}/24\"\n",
            tunnel.socket("client").display(),
            pubkey(&server_key)
        );
        for i in 1..=specs.len() {
            client_config += &path_toml(i);
        }
        std::fs::write(tunnel.dir.join("server.toml"), server_config).unwrap();
        std::fs::write(tunnel.dir.join("client.toml"), client_config).unwrap();
        tunnel.server = Some(tunnel.start("server"));
        tunnel.wait_for_socket("server");
        tunnel.client = Some(tunnel.start("client"));
        tunnel.wait_for_socket("client");
        tunnel
    }

    fn socket(&self, side: &str) -> PathBuf {
        self.dir.join(format!("{side}.sock"))
    }

    fn start(&self, side: &str) -> Child {
        let log = std::fs::File::create(self.dir.join(format!("{side}.log"))).unwrap();
        braid()
            .args(["lab", "exec", "--name", &self.lab, side, "--"])
            .arg(env!("CARGO_BIN_EXE_braid"))
            .args([side, "--config"])
            .arg(self.dir.join(format!("{side}.toml")))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap()
    }

    fn log(&self, side: &str) -> String {
        std::fs::read_to_string(self.dir.join(format!("{side}.log"))).unwrap_or_default()
    }

    fn wait_for_socket(&self, side: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.socket(side).exists() {
            assert!(
                Instant::now() < deadline,
                "{side} did not start: {}",
                self.log(side)
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn status(&self, side: &str) -> Value {
        let out = run(braid()
            .args(["status", "--json", "--socket"])
            .arg(self.socket(side)));
        assert!(
            out.status.success(),
            "status: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }

    /// The client's path states, in path order.
    fn path_states(&self) -> Vec<String> {
        let status = self.status("client");
        status["session"]["paths"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["state"].as_str().unwrap().to_owned())
            .collect()
    }

    fn wait_until_all_paths_up(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let states = self.path_states();
            if states.iter().all(|s| s == "up") {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "paths {states:?} not all up after 10 s\nclient log:\n{}\nserver log:\n{}",
                self.log("client"),
                self.log("server")
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn exec(&self, side: &str, argv: &[&str]) -> Output {
        run(braid()
            .args(["lab", "exec", "--name", &self.lab, side, "--"])
            .args(argv))
    }

    fn spawn(&self, side: &str, argv: &[&str]) -> Child {
        braid()
            .args(["lab", "exec", "--name", &self.lab, side, "--"])
            .args(argv)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    fn set(&self, path: &str, spec: &str) {
        let out = run(braid().args(["lab", "set", "--name", &self.lab, path, spec]));
        assert!(
            out.status.success(),
            "lab set: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

impl Drop for Tunnel {
    fn drop(&mut self) {
        for child in [self.client.take(), self.server.take()]
            .into_iter()
            .flatten()
        {
            stop(child);
        }
        let _ = run(braid().args(["lab", "down", "--name", &self.lab]));
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// SIGTERM, then SIGKILL if it has not ended within 2 s.
fn stop(mut child: Child) {
    // SAFETY: signalling a child this test started, by its pid.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_secs(2);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Pings `count` times at 0.2 s; returns how many answers came back.
fn ping(tunnel: &Tunnel, count: u32) -> u32 {
    let out = tunnel.exec(
        "client",
        &[
            "ping",
            "-n",
            "-q",
            "-c",
            &count.to_string(),
            "-i",
            "0.2",
            "-W",
            "2",
            SERVER_TUN,
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout);
    text.split(',')
        .find_map(|part| part.trim().strip_suffix(" received"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| {
            panic!(
                "ping output: {text}{}",
                String::from_utf8_lossy(&out.stderr)
            )
        })
}

/// One TCP flow (CUBIC) from client to server for `secs`; returns the
/// receiver's goodput in bit/s.
fn iperf(tunnel: &Tunnel, secs: u32) -> f64 {
    let mut server = tunnel.spawn("server", &["iperf3", "-s", "-1", "-B", SERVER_TUN]);
    std::thread::sleep(Duration::from_millis(300));
    let out = tunnel.exec(
        "client",
        &[
            "iperf3",
            "-c",
            SERVER_TUN,
            "-C",
            "cubic",
            "-J",
            "-t",
            &secs.to_string(),
        ],
    );
    let _ = server.kill();
    let _ = server.wait();
    assert!(
        out.status.success(),
        "iperf3: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).unwrap();
    doc["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .unwrap()
}

#[test]
fn two_paths_carry_ping_and_tcp() {
    if !have_root() {
        return;
    }
    let tunnel = Tunnel::up("tun-two", &["8mbit,10ms", "2mbit,40ms"], true);
    tunnel.wait_until_all_paths_up();
    assert_eq!(ping(&tunnel, 5), 5);

    let bps = iperf(&tunnel, 3);
    // A correctness bound, not a performance one: TCP gets through. The
    // paths sum to 10 Mbit/s; a first 3-s run on a fresh tunnel gets a
    // fraction of what later ones do (BENCHMARKS.md, "Tunnel (lab)", has
    // the figures), and this machine's load varies, so the bound is low.
    assert!(bps > 256e3, "TCP through the tunnel: {bps} bit/s");
    let status = tunnel.status("client");
    for p in status["session"]["paths"].as_array().unwrap() {
        assert!(
            p["tx_bytes"].as_u64().unwrap() > 10_000,
            "every path carries data: {p}"
        );
    }
    let server = tunnel.status("server");
    assert_eq!(server["daemon"]["inner_source_refused"], 0);
}

#[test]
fn a_cut_path_is_reported_down_within_a_second_and_traffic_continues() {
    if !have_root() {
        return;
    }
    let tunnel = Tunnel::up("tun-cut", &["8mbit,10ms", "2mbit,40ms"], true);
    tunnel.wait_until_all_paths_up();
    assert_eq!(ping(&tunnel, 3), 3);

    tunnel.set("p2", "2mbit,40ms,loss=100%");
    let cut = Instant::now();
    loop {
        let states = tunnel.path_states();
        if states[1] == "down" {
            break;
        }
        assert!(
            cut.elapsed() < Duration::from_secs(1),
            "p2 still {} 1 s after its cut",
            states[1]
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let noticed = cut.elapsed();
    assert_eq!(tunnel.path_states()[0], "up");
    assert_eq!(
        ping(&tunnel, 5),
        5,
        "traffic continues over p1 (p2 down after {noticed:?})"
    );
    assert!(
        tunnel
            .log("client")
            .contains("path down: nothing heard on it"),
        "the log says why: {}",
        tunnel.log("client")
    );

    tunnel.set("p2", "2mbit,40ms");
    tunnel.wait_until_all_paths_up();
}

#[test]
fn a_client_with_a_wrong_key_gets_no_reply() {
    if !have_root() {
        return;
    }
    let tunnel = Tunnel::up("tun-key", &["8mbit,10ms"], false);
    std::thread::sleep(Duration::from_secs(2));
    let client = tunnel.status("client");
    assert_eq!(client["session"]["established"], false);
    let path = &client["session"]["paths"][0];
    assert_eq!(path["rx_packets"], 0, "nothing came back: {path}");
    assert!(
        path["tx_packets"].as_u64().unwrap() >= 1,
        "the client tried: {path}"
    );
    let server = tunnel.status("server");
    assert_eq!(server["sessions"], 0);
    assert!(
        server["drops"]["unknown_peer"].as_u64().unwrap_or(0) >= 1,
        "the server counted the stranger: {server}"
    );
    assert_eq!(ping(&tunnel, 2), 0);
}

#[test]
fn lab_up_tunnel_starts_both_ends_and_reports_them() {
    if !have_root() {
        return;
    }
    struct Down;
    impl Drop for Down {
        fn drop(&mut self) {
            let _ = run(braid().args(["lab", "down", "--name", "tun-lab"]));
        }
    }
    let _down = Down;
    let _ = run(braid().args(["lab", "down", "--name", "tun-lab"]));
    let out = run(braid().args([
        "lab",
        "up",
        "--name",
        "tun-lab",
        "--tunnel",
        "--path",
        "8mbit,10ms",
        "--path",
        "2mbit,40ms",
    ]));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("iperf3 -c 10.77.0.1 -C cubic"),
        "a guide: {text}"
    );

    let out = run(braid().args(["lab", "status", "--name", "tun-lab", "--json"]));
    assert!(out.status.success());
    let status: Value = serde_json::from_slice(&out.stdout).unwrap();
    let tunnel = &status["tunnel"];
    assert_eq!(tunnel["server_addr"], SERVER_TUN);
    assert_eq!(tunnel["client_addr"], CLIENT_TUN);
    assert_eq!(tunnel["listen"], "198.19.0.1:51820");
    let states: Vec<&str> = tunnel["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["state"].as_str().unwrap())
        .collect();
    assert_eq!(states, ["up", "up"]);

    let out = run(braid().args([
        "lab", "exec", "--name", "tun-lab", "client", "--", "ping", "-c", "2", "-i", "0.2", "-W",
        "2", SERVER_TUN,
    ]));
    assert!(out.status.success(), "ping through the lab's tunnel");

    let out = run(braid().args(["lab", "down", "--name", "tun-lab"]));
    assert!(String::from_utf8_lossy(&out.stdout).contains("removed tunnel files"));
    assert!(!std::path::Path::new("/run/braid-lab/tun-lab.tunnel").exists());
}

/// `braid demo` as root: the real tunnel in a lab of its own, a TCP upload
/// that survives a cut, and no lab left behind.
#[test]
fn demo_runs_the_real_tunnel_and_leaves_no_lab() {
    if !have_root() {
        return;
    }
    let mut child = braid()
        .args(["demo", "--seconds", "6"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run braid demo");
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > Duration::from_secs(180) {
            child.kill().expect("kill");
            let _ = run(braid().args(["lab", "down", "--name", "braid-demo"]));
            panic!("braid demo still running after 180 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = child.wait_with_output().expect("demo output");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for line in [
        "dsl alone (no tunnel)",
        "lte alone (no tunnel)",
        "braid: dsl + lte",
        "dsl cut",
        "The TCP connection survived the cut",
        "The lab is down again",
    ] {
        assert!(text.contains(line), "no {line:?} in:\n{text}");
    }
    // Data went through the tunnel in every phase: the bonded rows' goodput.
    let goodput = |label: &str| -> f64 {
        let row = text.lines().find(|l| l.contains(label)).expect("row");
        row.split_whitespace()
            .rev()
            .nth(2)
            .and_then(|v| v.parse().ok())
            .unwrap_or_else(|| panic!("no goodput in {row:?}"))
    };
    for label in ["braid: dsl + lte", "dsl cut", "dsl back"] {
        assert!(goodput(label) > 0.0, "{label}: {text}");
    }
    let namespaces = run(Command::new("ip").args(["netns", "list"]));
    let list = String::from_utf8_lossy(&namespaces.stdout);
    assert!(!list.contains("braid-demo"), "left behind: {list}");
}

/// Runs `ip ARGS` in the client namespace; it must succeed.
fn client_ip(tunnel: &Tunnel, args: &[&str]) {
    let argv: Vec<&str> = std::iter::once("ip").chain(args.iter().copied()).collect();
    let out = tunnel.exec("client", &argv);
    assert!(
        out.status.success(),
        "ip {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Gives lab path `i`'s client interface, now called `iface` and up, back
/// what taking it down flushed: its static neighbour and its routes to the
/// server (as the lab's topology made them).
fn restore_lab_routes(tunnel: &Tunnel, iface: &str, i: usize) {
    let gateway = format!("198.18.{i}.1");
    let mac = format!("02:62:72:{i:02x}:00:01");
    client_ip(
        tunnel,
        &[
            "neigh",
            "replace",
            &gateway,
            "lladdr",
            &mac,
            "dev",
            iface,
            "nud",
            "permanent",
        ],
    );
    let table = (100 + i).to_string();
    for extra in [["metric", table.as_str()], ["table", table.as_str()]] {
        let mut args = vec![
            "route",
            "replace",
            "198.19.0.1/32",
            "via",
            &gateway,
            "dev",
            iface,
        ];
        args.extend(extra);
        client_ip(tunnel, &args);
    }
}

/// The client's path `i` (from 0) in `braid status --json`.
fn client_path(tunnel: &Tunnel, i: usize) -> Value {
    tunnel.status("client")["session"]["paths"][i].clone()
}

/// Waits until `limit` after `start` for `pred` on the client's path `i`;
/// returns how long after `start` it held.
fn wait_for_path(
    tunnel: &Tunnel,
    i: usize,
    start: Instant,
    limit: Duration,
    what: &str,
    pred: impl Fn(&Value) -> bool,
) -> Duration {
    loop {
        let p = client_path(tunnel, i);
        if pred(&p) {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < limit,
            "path {i} not {what} after {limit:?}: {p}\nclient log:\n{}",
            tunnel.log("client")
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Pings through the tunnel while lab path 1 (the client's path 0) is
/// cut: every answer then came over path 2. Returns path 2's TX packets
/// during the pings; path 1 is restored after.
fn ping_over_p2_alone(tunnel: &Tunnel, p1_spec: &str) -> u64 {
    tunnel.set("p1", &format!("{p1_spec},loss=100%"));
    wait_for_path(
        tunnel,
        0,
        Instant::now(),
        Duration::from_secs(2),
        "down",
        |p| p["state"] == "down",
    );
    let before = client_path(tunnel, 1)["tx_packets"].as_u64().unwrap();
    assert_eq!(ping(tunnel, 5), 5, "p2 alone carries the tunnel");
    let sent = client_path(tunnel, 1)["tx_packets"].as_u64().unwrap() - before;
    tunnel.set("p1", p1_spec);
    sent
}

#[test]
fn a_path_whose_interface_goes_is_down_at_once_and_comes_back_without_a_restart() {
    if !have_root() {
        return;
    }
    let mut tunnel = Tunnel::up_with("tun-ifgone", &["8mbit,10ms", "2mbit,40ms"], true, &|i| {
        format!("[[path]]\nname = \"p{i}\"\ninterface = \"p{i}\"\n")
    });
    tunnel.wait_until_all_paths_up();
    assert_eq!(ping(&tunnel, 3), 3);

    // Traffic flows while the interface goes: 40 pings over 8 s.
    let pinger = tunnel.spawn(
        "client",
        &[
            "ping", "-n", "-q", "-c", "40", "-i", "0.2", "-W", "2", SERVER_TUN,
        ],
    );
    std::thread::sleep(Duration::from_secs(1));
    // Renamed away (the kernel renames only an interface that is down).
    let gone = Instant::now();
    client_ip(&tunnel, &["link", "set", "p2", "down"]);
    let noticed = wait_for_path(&tunnel, 1, gone, Duration::from_secs(1), "down", |p| {
        p["state"] == "down" && p["down_reason"] == "link_lost"
    });
    let renamed = Instant::now();
    client_ip(&tunnel, &["link", "set", "p2", "name", "p2away"]);
    wait_for_path(
        &tunnel,
        1,
        renamed,
        Duration::from_secs(1),
        "missing",
        |p| p["link"] == "interface \"p2\" does not exist",
    );
    assert_eq!(client_path(&tunnel, 0)["state"], "up");
    assert_eq!(
        ping(&tunnel, 5),
        5,
        "traffic continues over p1 (p2 down within {noticed:?})"
    );
    let log = tunnel.log("client");
    assert!(
        log.contains("link lost: interface \"p2\" is down or has no carrier")
            && log.contains("path down: its link is lost"),
        "the log says why: {log}"
    );

    // Back under its name: the same client process picks it up.
    client_ip(&tunnel, &["link", "set", "p2away", "name", "p2"]);
    client_ip(&tunnel, &["link", "set", "p2", "up"]);
    let returned = Instant::now();
    restore_lab_routes(&tunnel, "p2", 2);
    let back = wait_for_path(&tunnel, 1, returned, Duration::from_secs(10), "up", |p| {
        p["state"] == "up"
    });
    let out = tunnel
        .client
        .as_mut()
        .unwrap()
        .try_wait()
        .expect("client status");
    assert!(out.is_none(), "the client kept running: {out:?}");
    let out = pinger.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let received: u32 = text
        .split(',')
        .find_map(|part| part.trim().strip_suffix(" received"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("ping output: {text}"));
    // Pings in flight or queued on p2 when it went may be lost; not more.
    assert!(
        received >= 34,
        "{received}/40 pings through the change: {text}"
    );
    println!("p2 down {noticed:?} after `ip link set p2 down`, up {back:?} after its return");
    let sent = ping_over_p2_alone(&tunnel, "8mbit,10ms");
    assert!(
        sent >= 5,
        "p2 carried the pings ({sent} datagrams; up {back:?} after its return)"
    );
}

#[test]
fn an_optional_path_whose_interface_is_missing_at_start_is_picked_up_when_it_appears() {
    if !have_root() {
        return;
    }
    let tunnel = Tunnel::up_with("tun-iflate", &["8mbit,10ms", "2mbit,40ms"], true, &|i| {
        if i == 2 {
            "[[path]]\nname = \"p2\"\ninterface = \"late2\"\noptional = true\n".to_owned()
        } else {
            format!("[[path]]\nname = \"p{i}\"\ninterface = \"p{i}\"\n")
        }
    });
    wait_for_path(
        &tunnel,
        0,
        Instant::now(),
        Duration::from_secs(10),
        "up",
        |p| p["state"] == "up",
    );
    let p2 = client_path(&tunnel, 1);
    assert_eq!(p2["state"], "down", "{p2}");
    assert_eq!(p2["link"], "interface \"late2\" does not exist", "{p2}");
    assert_eq!(p2["tx_packets"], 0, "nothing sent on a missing link: {p2}");
    assert!(
        tunnel
            .log("client")
            .contains("interface \"late2\" does not exist: waiting for it"),
        "{}",
        tunnel.log("client")
    );
    assert_eq!(ping(&tunnel, 3), 3, "p1 carries the tunnel meanwhile");

    // The interface appears (the lab's second link, under the awaited name).
    client_ip(&tunnel, &["link", "set", "p2", "down"]);
    client_ip(&tunnel, &["link", "set", "p2", "name", "late2"]);
    let appeared = Instant::now();
    client_ip(&tunnel, &["link", "set", "late2", "up"]);
    restore_lab_routes(&tunnel, "late2", 2);
    let up = wait_for_path(&tunnel, 1, appeared, Duration::from_secs(10), "up", |p| {
        p["state"] == "up"
    });
    println!("p2 up {up:?} after its interface appeared");
    let sent = ping_over_p2_alone(&tunnel, "8mbit,10ms");
    assert!(
        sent >= 5,
        "p2 carried the pings ({sent} datagrams; up {up:?} after it appeared)"
    );
}
