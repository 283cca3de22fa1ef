//! NAT end to end: the tunnel through `braid lab up --tunnel --nat` (each
//! path behind its own masquerading NAT), a NAT rebinding mid-transfer,
//! and the server's own `[nat]` masquerading the tunnel out of an uplink.
//! Needs root (namespaces, TUN, nftables); skips without it, fails in CI.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use braid_lab::root_guard::have_root_or_skip as have_root;
use serde_json::Value;

mod common;
use common::{accepts, braid, genkey, pubkey, run, stop};

const SERVER_TUN: &str = "10.77.0.1";
/// Generous: these tests must pass beside a CPU-heavy job.
const PATIENCE: Duration = Duration::from_secs(30);

fn ok(what: &str, out: Output) -> Output {
    assert!(
        out.status.success(),
        "{what}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stdout));
    })
}

/// A lab (and whatever else the test adds to `namespaces`), removed when
/// the test ends, pass, fail or panic.
struct Lab {
    name: String,
    /// Namespaces of the test's own, deleted on drop.
    namespaces: Vec<String>,
    /// Folders of the test's own, removed on drop.
    dirs: Vec<PathBuf>,
    children: Vec<Child>,
}

impl Lab {
    fn up(name: &str, args: &[&str]) -> Lab {
        let _ = run(braid().args(["lab", "down", "--name", name]));
        let lab = Lab {
            name: name.to_owned(),
            namespaces: Vec::new(),
            dirs: Vec::new(),
            children: Vec::new(),
        };
        ok(
            "lab up",
            run(braid()
                .args(["lab", "up", "--name", name, "--seed", "1"])
                .args(args)),
        );
        lab
    }

    fn exec(&self, side: &str, argv: &[&str]) -> Output {
        run(&mut self.exec_command(side, argv))
    }

    fn exec_command(&self, side: &str, argv: &[&str]) -> Command {
        let mut cmd = braid();
        cmd.args(["lab", "exec", "--name", &self.name, side, "--"])
            .args(argv);
        cmd
    }

    fn status(&self) -> Value {
        json(&ok(
            "lab status",
            run(braid().args(["lab", "status", "--name", &self.name, "--json"])),
        ))
    }

    /// Runs `argv` in the emulator namespace (where the lab's NATs are).
    fn in_emulator(&self, argv: &[&str]) -> Output {
        let ns = format!("braid-{}-emu", self.name);
        run(Command::new("ip").args(["netns", "exec", &ns]).args(argv))
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for child in self.children.drain(..) {
            stop(child);
        }
        let _ = run(braid().args(["lab", "down", "--name", &self.name]));
        for ns in &self.namespaces {
            let _ = run(Command::new("ip").args(["netns", "delete", ns]));
        }
        for dir in &self.dirs {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

fn daemon_status(socket: &Path) -> Value {
    json(&ok(
        "braid status",
        run(braid().args(["status", "--json", "--socket"]).arg(socket)),
    ))
}

/// The remote address (`ADDR:PORT`) of each of the server's paths.
fn server_remotes(socket: &Path) -> Vec<String> {
    let status = daemon_status(socket);
    status["peers"][0]["session"]["paths"]
        .as_array()
        .expect("the server has a session")
        .iter()
        .map(|p| p["remote"].as_str().unwrap_or("").to_owned())
        .collect()
}

/// The `tunnel` member of `braid lab status --json`: a daemon's socket.
fn tunnel_socket(lab: &Lab, side: &str) -> PathBuf {
    let status = lab.status();
    PathBuf::from(
        status["tunnel"][format!("{side}_socket")]
            .as_str()
            .expect("lab status names the tunnel's sockets"),
    )
}

fn ping(lab: &Lab, target: &str, count: u32) -> u32 {
    let out = lab.exec(
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
            "5",
            target,
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

/// `iperf3 -c TARGET -C cubic -J -t SECS` from the client namespace.
fn iperf_client(lab: &Lab, target: &str, secs: u32) -> Command {
    let secs = secs.to_string();
    let mut cmd = lab.exec_command(
        "client",
        &["iperf3", "-c", target, "-C", "cubic", "-J", "-t", &secs],
    );
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    cmd
}

/// Waits for a child with a deadline; kills it and fails after that.
fn wait_output(mut child: Child, what: &str, limit: Duration) -> Output {
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!(
                "{what} still running after {limit:?}: {}",
                String::from_utf8_lossy(&out.stdout)
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("output")
}

/// What the iperf3 receiver counted, in bytes.
fn received_bytes(doc: &Value) -> u64 {
    doc["end"]["sum_received"]["bytes"]
        .as_u64()
        .expect("iperf3 reports what it received")
}

/// What one TCP transfer carries: a fixed amount, so that a slow run on a
/// loaded machine takes longer instead of failing (correctness, not speed).
const TRANSFER_BYTES: usize = 1 << 20;

/// Runs `f` on a thread inside network namespace `ns`; sockets it makes
/// stay in that namespace.
fn in_netns<T: Send>(ns: &str, f: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let file = std::fs::File::open(format!("/run/netns/{ns}")).unwrap();
                // SAFETY: setns on this thread only, with a namespace fd
                // that stays open for the call.
                let r = unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) };
                assert_eq!(r, 0, "setns {ns}: {}", std::io::Error::last_os_error());
                f()
            })
            .join()
            .unwrap()
    })
}

/// One TCP connection from the lab's client namespace to `listener`
/// carrying [`TRANSFER_BYTES`]; checks that every byte arrived as sent and
/// returns the sender's address as the receiver saw it.
fn tcp_transfer(lab: &Lab, listener: TcpListener) -> SocketAddr {
    let target = listener.local_addr().unwrap();
    let receiver = std::thread::spawn(move || {
        let (mut stream, peer) = listener.accept().unwrap();
        stream.set_read_timeout(Some(PATIENCE)).unwrap();
        let mut got = Vec::new();
        stream.read_to_end(&mut got).unwrap();
        (got, peer)
    });
    let mut stream = in_netns(&format!("braid-{}-client", lab.name), || {
        TcpStream::connect_timeout(&target, PATIENCE)
    })
    .unwrap_or_else(|e| panic!("connecting to {target}: {e}"));
    stream.set_write_timeout(Some(PATIENCE)).unwrap();
    let sent: Vec<u8> = (0..TRANSFER_BYTES).map(|i| (i % 251) as u8).collect();
    stream.write_all(&sent).unwrap();
    stream.shutdown(Shutdown::Write).unwrap();
    let (got, peer) = receiver.join().unwrap();
    assert!(
        got == sent,
        "TCP to {target}: {} of {} bytes arrived, equal: {}",
        got.len(),
        sent.len(),
        got.len() == sent.len() && got == sent
    );
    peer
}

#[test]
fn behind_nats_the_tunnel_carries_ping_and_tcp_and_the_server_sees_the_nats() {
    if !have_root() {
        return;
    }
    let lab = Lab::up(
        "nat-tunnel",
        &[
            "--tunnel",
            "--nat",
            "--path",
            "8mbit,10ms",
            "--path",
            "2mbit,40ms",
        ],
    );
    let status = lab.status();
    assert_eq!(status["nat"], true, "lab status says NAT is on: {status}");
    let paths = status["paths"].as_array().unwrap();
    let states: Vec<&Value> = status["tunnel"]["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| &p["state"])
        .collect();
    assert_eq!(states, ["up", "up"]);
    assert_eq!(ping(&lab, SERVER_TUN, 5), 5);

    let listener = in_netns(&format!("braid-{}-server", lab.name), || {
        TcpListener::bind((SERVER_TUN, 5201)).unwrap()
    });
    let peer = tcp_transfer(&lab, listener);
    assert_eq!(
        peer.ip().to_string(),
        "10.77.0.2",
        "inside the tunnel: {peer}"
    );

    let remotes = server_remotes(&tunnel_socket(&lab, "server"));
    assert_eq!(remotes.len(), 2);
    for (remote, path) in remotes.iter().zip(paths) {
        let nat = path["nat"]["outer_addr"].as_str().unwrap();
        let client = path["client_addr"].as_str().unwrap();
        assert_ne!(nat, client);
        assert!(
            remote.starts_with(&format!("{nat}:")),
            "the server sees path {} from its NAT {nat}, not the client {client}: {remote}",
            path["name"]
        );
    }
    let nft = lab.in_emulator(&["nft", "list", "table", "ip", "braid_lab_nat"]);
    let rules = String::from_utf8_lossy(&nft.stdout);
    for w in [
        "oifname \"w1\" masquerade fully-random",
        "oifname \"w2\" masquerade fully-random",
    ] {
        assert!(rules.contains(w), "no {w:?} in {rules}");
    }
}

#[test]
fn a_nat_rebinding_mid_transfer_is_survived() {
    if !have_root() {
        return;
    }
    let lab = Lab::up(
        "nat-rebind",
        &[
            "--tunnel",
            "--nat",
            "--path",
            "8mbit,10ms",
            "--path",
            "2mbit,40ms",
        ],
    );
    let socket = tunnel_socket(&lab, "server");
    let before = server_remotes(&socket);
    let mut server = lab
        .exec_command("server", &["iperf3", "-s", "-1", "-B", SERVER_TUN])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    let secs: u32 = 8;
    let client = iperf_client(&lab, SERVER_TUN, secs).spawn().unwrap();
    std::thread::sleep(Duration::from_secs(3));

    // p1's NAT forgets its mapping and picks a port from a range no
    // ephemeral port is in (Linux: 32768-60999): the next packet of the
    // path leaves from a new address.
    ok(
        "nft insert",
        lab.in_emulator(&[
            "nft",
            "insert",
            "rule",
            "ip",
            "braid_lab_nat",
            "postrouting",
            "oifname",
            "w1",
            "meta",
            "l4proto",
            "udp",
            "masquerade",
            "to",
            ":20000-20999",
        ]),
    );
    let rebound_at = Instant::now();
    ok(
        "conntrack -D",
        lab.in_emulator(&["conntrack", "-D", "-p", "udp", "--orig-src", "198.18.1.2"]),
    );

    let out = wait_output(
        client,
        "iperf3",
        PATIENCE + Duration::from_secs(secs.into()),
    );
    let _ = server.kill();
    let _ = server.wait();
    let out = ok("iperf3 across the rebinding", out);
    let doc = json(&out);
    // Data flowed in the transfer's last second, well after the rebinding.
    let intervals = doc["intervals"].as_array().unwrap();
    let last = intervals.last().unwrap()["sum"]["bytes"].as_u64().unwrap();
    assert!(
        last > 0,
        "nothing moved in the last interval ({:?} after the rebinding): {intervals:?}",
        rebound_at.elapsed()
    );
    // 8 s on 10 Mbit/s of paths: far more than this even on a loaded
    // machine (the rebinding itself costs at most a round trip or two).
    let bytes = received_bytes(&doc);
    assert!(bytes > 1_000_000, "{bytes} bytes in {secs} s");

    let after = server_remotes(&socket);
    let port = |r: &str| -> u16 { r.rsplit(':').next().unwrap().parse().unwrap() };
    assert!(
        after[0].starts_with("198.18.129.2:") && (20000..=20999).contains(&port(&after[0])),
        "the server uses p1's new address: before {before:?}, after {after:?}"
    );
    assert_eq!(after[1], before[1], "p2 kept its address");
    let log = std::fs::read_to_string(socket.with_file_name("server.log")).unwrap();
    assert!(log.contains("path rebound (NAT)"), "{log}");
    let client_status = daemon_status(&tunnel_socket(&lab, "client"));
    for p in client_status["session"]["paths"].as_array().unwrap() {
        assert_eq!(p["state"], "up", "{p}");
    }
}

/// `braid SIDE --config DIR/SIDE.toml` in the lab's namespace of `side`,
/// logging to `DIR/SIDE.log`.
fn start_daemon(lab: &Lab, dir: &Path, side: &str) -> Child {
    let log = std::fs::File::create(dir.join(format!("{side}.log"))).unwrap();
    lab.exec_command(side, &[env!("CARGO_BIN_EXE_braid"), side, "--config"])
        .arg(dir.join(format!("{side}.toml")))
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .unwrap()
}

/// The server's `[nat]`: a host beyond the server's uplink, with no route
/// back to the tunnel's addresses, is reached from the client and sees the
/// uplink's address; the table is there while the server runs (a stale one
/// replaced) and gone when it stops.
#[test]
fn the_servers_nat_masquerades_the_tunnel_out_of_its_uplink() {
    if !have_root() {
        return;
    }
    let name = "nat-server";
    let mut lab = Lab::up(name, &["--path", "8mbit,10ms"]);
    let server_ns = format!("braid-{name}-server");
    let beyond = format!("braid-{name}-beyond");
    let _ = run(Command::new("ip").args(["netns", "delete", &beyond]));
    lab.namespaces.push(beyond.clone());
    for argv in [
        vec!["netns", "add", &beyond],
        vec![
            "-n", &server_ns, "link", "add", "up0", "type", "veth", "peer", "name", "up0", "netns",
            &beyond,
        ],
        vec![
            "-n",
            &server_ns,
            "address",
            "add",
            "203.0.113.1/24",
            "dev",
            "up0",
        ],
        vec!["-n", &server_ns, "link", "set", "up0", "up"],
        vec![
            "-n",
            &beyond,
            "address",
            "add",
            "203.0.113.2/24",
            "dev",
            "up0",
        ],
        vec!["-n", &beyond, "link", "set", "up0", "up"],
        vec!["-n", &beyond, "link", "set", "lo", "up"],
    ] {
        ok(&format!("ip {argv:?}"), run(Command::new("ip").args(&argv)));
    }
    // A table of that name from a crashed run, with a chain of its own.
    for argv in [
        vec!["nft", "add", "table", "inet", "braid_nat_braid0"],
        vec!["nft", "add", "chain", "inet", "braid_nat_braid0", "stale"],
    ] {
        ok("stale table", lab.exec("server", &argv));
    }

    let dir = std::env::temp_dir().join(format!("braid-nat-test-{name}"));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    lab.dirs.push(dir.clone());
    let (server_key, client_key) = (genkey(), genkey());
    let server_socket = dir.join("server.sock");
    let client_socket = dir.join("client.sock");
    std::fs::write(
        dir.join("server.toml"),
        format!(
            "private_key = \"{server_key}\"\nlisten = [\"198.19.0.1:51820\"]\n\
             control_socket = \"{}\"\n[tunnel]\nipv4 = \"{SERVER_TUN}/24\"\n\
             [nat]\nuplink = \"up0\"\n\
             [[peer]]\npublic_key = \"{}\"\nallowed = [\"10.77.0.2/32\"]\n",
            server_socket.display(),
            pubkey(&client_key)
        ),
    )
    .unwrap();
    std::fs::write(
        dir.join("client.toml"),
        format!(
            "private_key = \"{client_key}\"\ncontrol_socket = \"{}\"\n[server]\n\
             public_key = \"{}\"\nendpoint = \"198.19.0.1:51820\"\n\
             [tunnel]\nipv4 = \"10.77.0.2/24\"\n\
             [[path]]\nname = \"p1\"\nsource = \"198.18.1.2\"\n",
            client_socket.display(),
            pubkey(&server_key)
        ),
    )
    .unwrap();
    let log =
        |side: &str| std::fs::read_to_string(dir.join(format!("{side}.log"))).unwrap_or_default();
    let server = start_daemon(&lab, &dir, "server");
    lab.children.push(server);
    let deadline = Instant::now() + PATIENCE;
    while !accepts(&server_socket) {
        assert!(
            Instant::now() < deadline,
            "server did not start: {}",
            log("server")
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let client = start_daemon(&lab, &dir, "client");
    lab.children.push(client);
    loop {
        let up = accepts(&client_socket)
            && daemon_status(&client_socket)["session"]["paths"][0]["state"] == "up";
        if up {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "client not up: {}",
            log("client")
        );
        std::thread::sleep(Duration::from_millis(50));
    }

    let table = json(&ok(
        "nft list",
        lab.exec(
            "server",
            &["nft", "-j", "list", "table", "inet", "braid_nat_braid0"],
        ),
    ));
    let items = table["nftables"].as_array().unwrap();
    let chains: Vec<&Value> = items.iter().filter_map(|i| i.get("chain")).collect();
    assert_eq!(chains.len(), 1, "the stale chain is gone: {table}");
    assert_eq!(chains[0]["name"], "postrouting");
    assert_eq!(chains[0]["type"], "nat");
    let rules: Vec<&Value> = items.iter().filter_map(|i| i.get("rule")).collect();
    assert_eq!(rules.len(), 1, "{table}");
    let expr = &rules[0]["expr"];
    assert_eq!(expr[0]["match"]["left"]["meta"]["key"], "iifname");
    assert_eq!(expr[0]["match"]["right"], "braid0");
    assert_eq!(expr[1]["match"]["left"]["meta"]["key"], "oifname");
    assert_eq!(expr[1]["match"]["right"], "up0");
    assert!(expr[2].get("masquerade").is_some(), "{table}");
    assert!(
        log("server").contains("IPv4 forwarding switched on"),
        "the log says forwarding was switched on: {}",
        log("server")
    );

    // The client routes the far network into its tunnel; the far host has
    // no route back to 10.77.0.0/24, so only masquerading gets an answer.
    ok(
        "route",
        lab.exec(
            "client",
            &["ip", "route", "add", "203.0.113.0/24", "dev", "braid0"],
        ),
    );
    assert_eq!(
        ping(&lab, "203.0.113.2", 3),
        3,
        "server log: {}",
        log("server")
    );
    let listener = in_netns(&beyond, || {
        TcpListener::bind(("203.0.113.2", 5201)).unwrap()
    });
    let peer = tcp_transfer(&lab, listener);
    assert_eq!(
        peer.ip().to_string(),
        "203.0.113.1",
        "the far host sees the uplink's address"
    );

    // Stopping the server deletes the table.
    let server = lab.children.remove(0);
    stop(server);
    let gone = lab.exec(
        "server",
        &["nft", "list", "table", "inet", "braid_nat_braid0"],
    );
    assert!(!gone.status.success(), "the table outlived the server");
    assert!(
        log("server").contains("NAT off: table deleted"),
        "{}",
        log("server")
    );
}
