//! The client's `[routing]` end to end in the lab: traffic to an address
//! only the server namespace has goes through the tunnel, the paths' own
//! packets do not, and the routes and rules are gone when the client stops
//! (or, after it was killed, when it starts again). Needs root (namespaces,
//! TUN); skips without it, fails in CI.

use std::path::PathBuf;
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

use braid_lab::root_guard::have_root_or_skip as have_root;
use serde_json::Value;

/// Addresses on the server namespace's loopback that the lab routes
/// nowhere: only the tunnel reaches them.
mod common;
use common::{accepts, braid, genkey, pubkey, run, stop_with as stop};

const ONLY_SERVER_V4: &str = "198.51.100.7";
const ONLY_SERVER_V6: &str = "2001:db8:51::7";
const TABLE: &str = "51820";
const TUN: &str = "braid0";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A lab with a braid server and client; everything stopped and removed on
/// drop (pass, fail or panic).
struct Lab {
    name: String,
    dir: PathBuf,
    server: Option<Child>,
    client: Option<Child>,
}

impl Lab {
    /// The lab, and the configs: the client with `routing` (a `[routing]`
    /// section) and `paths` (its `[[path]]` sections); both ends with an
    /// IPv4 and an IPv6 tunnel address.
    fn up(name: &str, specs: &[&str], routing: &str, paths: &str) -> Lab {
        let _ = run(braid().args(["lab", "down", "--name", name]));
        let mut up = braid();
        up.args(["lab", "up", "--name", name, "--seed", "1"]);
        for spec in specs {
            up.args(["--path", spec]);
        }
        let out = run(up.stdout(Stdio::null()));
        assert!(out.status.success(), "lab up: {}", text(&out.stderr));
        let dir = std::env::temp_dir().join(format!("braid-routing-test-{name}"));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let lab = Lab {
            name: name.to_owned(),
            dir,
            server: None,
            client: None,
        };
        let (server_key, client_key) = (genkey(), genkey());
        let server_config = format!(
            "private_key = \"{server_key}\"\nlisten = [\"198.19.0.1:51820\"]\n\
             control_socket = \"{}\"\n[tunnel]\nipv4 = \"10.77.0.1/24\"\nipv6 = \"fd77::1/64\"\n\
             [[peer]]\nname = \"lab\"\npublic_key = \"{}\"\n\
             allowed = [\"10.77.0.2/32\", \"fd77::2/128\"]\n",
            lab.socket("server").display(),
            pubkey(&client_key)
        );
        let client_config = format!(
            "private_key = \"{client_key}\"\ncontrol_socket = \"{}\"\n[server]\n\
             public_key = \"{}\"\nendpoint = \"198.19.0.1:51820\"\n\
             [tunnel]\nname = \"{TUN}\"\nipv4 = \"10.77.0.2/24\"\nipv6 = \"fd77::2/64\"\n\
             {routing}\n{paths}",
            lab.socket("client").display(),
            pubkey(&server_key)
        );
        std::fs::write(lab.dir.join("server.toml"), server_config).unwrap();
        std::fs::write(lab.dir.join("client.toml"), client_config).unwrap();
        // The lab switches IPv6 off in its namespaces; the tunnel's IPv6
        // needs it on at both ends (the paths stay IPv4).
        for side in ["client", "server"] {
            for conf in ["all", "default"] {
                let file = format!("/proc/sys/net/ipv6/conf/{conf}/disable_ipv6");
                let out = lab.exec(side, &["sh", "-c", &format!("echo 0 > {file}")]);
                assert!(out.status.success(), "{file}: {}", text(&out.stderr));
            }
        }
        lab.ip(
            "server",
            &["addr", "add", &format!("{ONLY_SERVER_V4}/32"), "dev", "lo"],
        );
        lab.ip(
            "server",
            &["addr", "add", &format!("{ONLY_SERVER_V6}/128"), "dev", "lo"],
        );
        lab
    }

    fn socket(&self, side: &str) -> PathBuf {
        self.dir.join(format!("{side}.sock"))
    }

    fn log(&self, side: &str) -> String {
        std::fs::read_to_string(self.dir.join(format!("{side}.log"))).unwrap_or_default()
    }

    /// Waits up to 10 s for `side`'s log to contain `needle`: the control
    /// socket accepts before the routes are made, and so before what their
    /// setup logs.
    fn wait_for_log(&self, side: &str, needle: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.log(side).contains(needle) {
            assert!(
                Instant::now() < deadline,
                "no {needle:?} in {side}'s log within 10 s:\n{}",
                self.log(side)
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Starts `braid SIDE` in its namespace and waits for its control
    /// socket. The log is appended to, so a restart keeps the first run's.
    fn start(&mut self, side: &str) {
        let _ = std::fs::remove_file(self.socket(side));
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.join(format!("{side}.log")))
            .unwrap();
        let child = braid()
            .args(["lab", "exec", "--name", &self.name, side, "--"])
            .arg(env!("CARGO_BIN_EXE_braid"))
            .args([side, "--config"])
            .arg(self.dir.join(format!("{side}.toml")))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        match side {
            "server" => self.server = Some(child),
            _ => self.client = Some(child),
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        while !accepts(&self.socket(side)) {
            assert!(
                Instant::now() < deadline,
                "{side} did not start: {}",
                self.log(side)
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Stops the client: SIGTERM or SIGHUP (a clean stop) or SIGKILL (a crash).
    fn stop_client(&mut self, signal: i32) {
        let child = self.client.take().expect("a running client");
        stop(child, signal);
    }

    fn exec(&self, side: &str, argv: &[&str]) -> Output {
        run(braid()
            .args(["lab", "exec", "--name", &self.name, side, "--"])
            .args(argv))
    }

    /// `ip ARGS` in the namespace of `side`, which must succeed; its output.
    fn ip(&self, side: &str, args: &[&str]) -> String {
        let mut argv = vec!["ip"];
        argv.extend_from_slice(args);
        let out = self.exec(side, &argv);
        assert!(
            out.status.success(),
            "ip {args:?} in {side}: {}",
            text(&out.stderr)
        );
        text(&out.stdout)
    }

    /// The client namespace's rules of both families, and the routes of
    /// braid's table (empty when the table does not exist).
    fn client_rules_and_table(&self) -> (String, String) {
        let rules =
            self.ip("client", &["rule", "show"]) + &self.ip("client", &["-6", "rule", "show"]);
        let mut routes = String::new();
        for family in ["-4", "-6"] {
            let out = self.exec("client", &["ip", family, "route", "show", "table", TABLE]);
            routes += &text(&out.stdout);
        }
        (rules, routes)
    }

    fn status(&self, side: &str) -> Value {
        let out = run(braid()
            .args(["status", "--json", "--socket"])
            .arg(self.socket(side)));
        assert!(out.status.success(), "status: {}", text(&out.stderr));
        serde_json::from_slice(&out.stdout).unwrap()
    }

    fn wait_until_all_paths_up(&self) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let status = self.status("client");
            let states: Vec<String> = status["session"]["paths"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p["state"].as_str().unwrap().to_owned())
                .collect();
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

    /// Pings `dest` from the client namespace until one answer comes back
    /// (a fresh IPv6 address may still be tentative for a moment), then
    /// `count` times; returns how many of those were answered.
    fn ping(&self, dest: &str, count: u32) -> u32 {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.ping_once(dest, 1) == 0 {
            assert!(
                Instant::now() < deadline,
                "no answer from {dest} through the tunnel within 10 s\nclient log:\n{}",
                self.log("client")
            );
        }
        self.ping_once(dest, count)
    }

    fn ping_once(&self, dest: &str, count: u32) -> u32 {
        let count = count.to_string();
        let argv = [
            "ping", "-n", "-q", "-c", &count, "-i", "0.2", "-W", "1", dest,
        ];
        let out = self.exec("client", &argv);
        let stdout = text(&out.stdout);
        stdout
            .split(',')
            .find_map(|part| part.trim().strip_suffix(" received"))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("ping output: {stdout}{}", text(&out.stderr)))
    }

    /// The interface the client namespace's routing picks for `dest`.
    fn route_device(&self, dest: &str) -> String {
        let out = self.ip("client", &["route", "get", dest]);
        out.split_whitespace()
            .skip_while(|w| *w != "dev")
            .nth(1)
            .unwrap_or_else(|| panic!("ip route get {dest}: {out}"))
            .to_owned()
    }

    fn tun_packets(&self) -> (u64, u64) {
        let daemon = &self.status("client")["daemon"];
        let count = |key: &str| daemon[key].as_u64().unwrap();
        (count("tun_rx_packets"), count("tun_tx_packets"))
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        for child in [self.client.take(), self.server.take()]
            .into_iter()
            .flatten()
        {
            stop(child, libc::SIGTERM);
        }
        let _ = run(braid().args(["lab", "down", "--name", &self.name]));
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Makes the client namespace an ordinary dual-homed host: one default
/// route per link (the first preferred) instead of the lab's routes to the
/// server and its per-source rules. Only the mark then keeps a path bound
/// to a source address out of braid's default route.
fn make_client_an_ordinary_host(lab: &Lab) {
    for (i, metric) in [(1, "1"), (2, "2")] {
        lab.ip(
            "client",
            &["route", "del", "198.19.0.1/32", "dev", &format!("p{i}")],
        );
        lab.ip(
            "client",
            &[
                "rule",
                "del",
                "from",
                &format!("198.18.{i}.2"),
                "lookup",
                &format!("10{i}"),
            ],
        );
        lab.ip(
            "client",
            &[
                "route",
                "add",
                "default",
                "via",
                &format!("198.18.{i}.1"),
                "dev",
                &format!("p{i}"),
                "metric",
                metric,
            ],
        );
    }
}

#[test]
fn route_all_sends_everything_but_the_paths_through_the_tunnel_and_cleans_up() {
    if !have_root() {
        return;
    }
    // Path 1 bound to its source address, path 2 to its interface.
    let paths = "[[path]]\nname = \"p1\"\nsource = \"198.18.1.2\"\n\
                 [[path]]\nname = \"p2\"\ninterface = \"p2\"\n";
    let mut lab = Lab::up(
        "rt-all",
        &["20mbit,5ms", "20mbit,5ms"],
        "[routing]\nroute_all = true\n",
        paths,
    );
    make_client_an_ordinary_host(&lab);
    lab.start("server");
    lab.start("client");

    // Both paths reach the server: neither is looped into the tunnel.
    lab.wait_until_all_paths_up();
    let (rules, routes) = lab.client_rules_and_table();
    for expected in [
        "31820:\tfrom all lookup main suppress_prefixlength 0",
        "31821:\tnot from all fwmark 0xca6c lookup 51820",
    ] {
        assert_eq!(
            rules.matches(expected).count(),
            2,
            "one per family:\n{rules}"
        );
    }
    assert!(
        routes.contains(&format!("default dev {TUN} proto static scope link")),
        "{routes}"
    );
    assert!(
        routes.contains(&format!("default dev {TUN} proto static metric")),
        "IPv6 too: {routes}"
    );

    // Everything else goes into the tunnel; the host's own links do not.
    assert_eq!(lab.route_device(ONLY_SERVER_V4), TUN);
    assert_eq!(lab.route_device("198.19.0.1"), TUN);
    assert_eq!(lab.route_device("198.18.2.1"), "p2");
    let (rx_before, tx_before) = lab.tun_packets();
    assert_eq!(lab.ping(ONLY_SERVER_V4, 5), 5);
    assert_eq!(lab.ping(ONLY_SERVER_V6, 5), 5);
    let (rx, tx) = lab.tun_packets();
    assert!(
        rx - rx_before >= 10 && tx - tx_before >= 10,
        "the pings went through the TUN device: rx {rx_before} -> {rx}, tx {tx_before} -> {tx}"
    );
    lab.wait_until_all_paths_up();

    // A crash leaves the rules behind; the next start removes them.
    lab.stop_client(libc::SIGKILL);
    let (rules, _) = lab.client_rules_and_table();
    assert!(
        rules.contains("31821:"),
        "a killed client cannot clean up:\n{rules}"
    );
    lab.start("client");
    lab.wait_until_all_paths_up();
    assert!(
        lab.log("client").contains("removed a leftover"),
        "{}",
        lab.log("client")
    );
    let (rules, _) = lab.client_rules_and_table();
    assert_eq!(
        rules.matches("31821:").count(),
        2,
        "no duplicates:\n{rules}"
    );
    assert_eq!(lab.ping(ONLY_SERVER_V4, 3), 3);

    // A clean stop removes everything.
    lab.stop_client(libc::SIGTERM);
    let (rules, routes) = lab.client_rules_and_table();
    assert!(!rules.contains("3182"), "rules left behind:\n{rules}");
    assert!(routes.trim().is_empty(), "routes left behind:\n{routes}");
    assert_eq!(lab.route_device("198.19.0.1"), "p1");
}

#[test]
fn prefixes_route_only_what_they_list() {
    if !have_root() {
        return;
    }
    // The lab as it is: paths bound to their source addresses.
    let paths = "[[path]]\nname = \"p1\"\nsource = \"198.18.1.2\"\n";
    let mut lab = Lab::up(
        "rt-prefix",
        &["20mbit,5ms"],
        "[routing]\nprefixes = [\"198.51.100.0/24\"]\n",
        paths,
    );
    let unrouted = lab.exec("client", &["ping", "-c", "1", "-W", "1", ONLY_SERVER_V4]);
    assert!(!unrouted.status.success(), "reachable without the tunnel");
    lab.start("server");
    lab.start("client");
    lab.wait_until_all_paths_up();

    let (rules, routes) = lab.client_rules_and_table();
    assert!(!rules.contains("31820:"), "no suppressing rule:\n{rules}");
    assert_eq!(rules.matches("31821:").count(), 1, "IPv4 only:\n{rules}");
    assert_eq!(
        routes.trim(),
        format!("198.51.100.0/24 dev {TUN} proto static scope link")
    );
    assert_eq!(lab.route_device(ONLY_SERVER_V4), TUN);
    assert_eq!(lab.route_device("198.19.0.1"), "p1");
    assert_eq!(lab.ping(ONLY_SERVER_V4, 5), 5);

    // A hangup (the client's terminal closed) stops it as cleanly.
    lab.stop_client(libc::SIGHUP);
    let (rules, routes) = lab.client_rules_and_table();
    assert!(!rules.contains("3182"), "rules left behind:\n{rules}");
    assert!(routes.trim().is_empty(), "routes left behind:\n{routes}");
}

/// A `[routing]` the daemon cannot carry out fails before anything is
/// created: exit 2 and one line naming the file and the problem. No root.
#[test]
fn bad_routing_fails_with_one_clear_line() {
    let dir = std::env::temp_dir().join(format!("braid-routing-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let base = format!(
        "private_key = \"{}\"\n[server]\npublic_key = \"{}\"\nendpoint = \"192.0.2.1:51820\"\n\
         [tunnel]\nipv4 = \"10.77.0.2/24\"\n[[path]]\nsource = \"192.0.2.2\"\n",
        genkey(),
        pubkey(&genkey())
    );
    for (routing, expected) in [
        (
            "[routing]\nprefixes = [\"2001:db8::/32\"]\n",
            "prefix 2001:db8::/32 is IPv6 but [tunnel] has no IPv6 address",
        ),
        (
            "[routing]\nroute_all = true\ntable = 254\n",
            "table = 254 is one the kernel reserves",
        ),
    ] {
        let file = dir.join("client.toml");
        std::fs::write(&file, format!("{base}{routing}")).unwrap();
        let out = run(braid().arg("client").arg("--config").arg(&file));
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(
            stderr.contains("client.toml: [routing]: ") && stderr.contains(expected),
            "{stderr}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// With route_all, strict reverse-path filtering would drop the server's
/// answers (their reverse route is braid's default route): said at start.
#[test]
fn strict_reverse_path_filtering_is_warned_about() {
    if !have_root() {
        return;
    }
    let paths = "[[path]]\nname = \"p1\"\nsource = \"198.18.1.2\"\n";
    let mut lab = Lab::up(
        "rt-rpf",
        &["20mbit,5ms"],
        "[routing]\nroute_all = true\n",
        paths,
    );
    let strict = "echo 1 > /proc/sys/net/ipv4/conf/p1/rp_filter";
    let out = lab.exec("client", &["sh", "-c", strict]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    lab.start("server");
    lab.start("client");
    lab.wait_for_log(
        "client",
        "strict reverse-path filtering (rp_filter = 1) on p1 drops",
    );
}
