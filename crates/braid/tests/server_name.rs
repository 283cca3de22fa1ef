//! A client that knows its server by name (`endpoint = "NAME:PORT"`).
//! Root: each test runs the daemons in a network namespace of its own,
//! which it deletes at the end, so nothing (no DNS query either) leaves it.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use braid_lab::root_guard::have_root_or_skip as have_root;
use common::{accepts, braid, genkey, pubkey, run, stop};
use serde_json::Value;

/// A network namespace with only its loopback, up; deleted when dropped.
struct Netns(String);

impl Netns {
    fn new(tag: &str) -> Netns {
        let name = format!("braid-{tag}-{}", std::process::id());
        let out = run(Command::new("ip").args(["netns", "add", &name]));
        assert!(out.status.success(), "ip netns add: {out:?}");
        let ns = Netns(name);
        let out = run(ns.exec("ip").args(["link", "set", "lo", "up"]));
        assert!(out.status.success(), "lo up: {out:?}");
        ns
    }

    /// `program` run inside the namespace.
    fn exec(&self, program: &str) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.0, program]);
        cmd
    }

    /// `braid ARGS` run inside the namespace, its output to `log`.
    fn braid(&self, args: &[&str], log: &Path) -> Child {
        let log = std::fs::File::create(log).unwrap();
        self.exec(env!("CARGO_BIN_EXE_braid"))
            .args(args)
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap()
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = run(Command::new("ip").args(["netns", "del", &self.0]));
    }
}

fn client_config(dir: &Path, private: &str, server_public: &str, endpoint: &str) -> String {
    format!(
        "private_key = \"{private}\"\ncontrol_socket = \"{}\"\n\
         [server]\npublic_key = \"{server_public}\"\nendpoint = \"{endpoint}\"\n\
         [tunnel]\nname = \"bnc0\"\nipv4 = \"10.78.0.2/24\"\n\
         [[path]]\ninterface = \"lo\"\n",
        dir.join("client.sock").display()
    )
}

/// A server on the namespace's `listen` address and a client that names
/// it `endpoint`, each logging to a file in `dir`.
struct Pair {
    server: Option<Child>,
    client: Option<Child>,
    client_log: std::path::PathBuf,
    client_socket: std::path::PathBuf,
}

impl Pair {
    fn start(ns: &Netns, dir: &Path, listen: &str, endpoint: &str) -> Pair {
        let (server_key, client_key) = (genkey(), genkey());
        let server_toml = dir.join("server.toml");
        std::fs::write(
            &server_toml,
            format!(
                "private_key = \"{server_key}\"\nlisten = [\"{listen}\"]\ncontrol_socket = \"{}\"\n\
                 [tunnel]\nname = \"bns0\"\nipv4 = \"10.78.0.1/24\"\n\
                 [[peer]]\npublic_key = \"{}\"\nallowed = [\"10.78.0.2/32\"]\n",
                dir.join("server.sock").display(),
                pubkey(&client_key)
            ),
        )
        .unwrap();
        let client_toml = dir.join("client.toml");
        std::fs::write(
            &client_toml,
            client_config(dir, &client_key, &pubkey(&server_key), endpoint),
        )
        .unwrap();
        let server = ns.braid(
            &["server", "--config", server_toml.to_str().unwrap()],
            &dir.join("server.log"),
        );
        let deadline = Instant::now() + Duration::from_secs(15);
        while !accepts(&dir.join("server.sock")) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let client_log = dir.join("client.log");
        let client = ns.braid(
            &["client", "--config", client_toml.to_str().unwrap()],
            &client_log,
        );
        Pair {
            server: Some(server),
            client: Some(client),
            client_log,
            client_socket: dir.join("client.sock"),
        }
    }

    fn client_status(&self) -> Option<Value> {
        let out = run(braid()
            .args(["status", "--json", "--socket"])
            .arg(&self.client_socket));
        out.status
            .success()
            .then(|| serde_json::from_slice(&out.stdout).unwrap())
    }

    /// Waits up to `within` for the client's path to be up, and fails
    /// with the last status seen and the client's log if it is not;
    /// returns the path's status and the log.
    fn wait_for_path_up(&self, within: Duration) -> (Value, String) {
        let deadline = Instant::now() + within;
        let mut last = None;
        while Instant::now() < deadline {
            last = self.client_status();
            if last
                .as_ref()
                .is_some_and(|s| s["session"]["paths"][0]["state"] == "up")
            {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let log = self.client_log();
        let last = last.unwrap_or_else(|| panic!("no status from the client; its log:\n{log}"));
        let path = last["session"]["paths"][0].clone();
        assert_eq!(path["state"], "up", "{last:#}\nclient log:\n{log}");
        (path, log)
    }

    fn client_log(&self) -> String {
        std::fs::read_to_string(&self.client_log).unwrap_or_default()
    }
}

impl Drop for Pair {
    fn drop(&mut self) {
        for child in [self.client.take(), self.server.take()]
            .into_iter()
            .flatten()
        {
            stop(child);
        }
    }
}

/// The client resolves `localhost` (every hosts file has it) and keeps a
/// session with a server on the namespace's loopback.
#[test]
fn a_client_reaches_a_server_it_knows_by_name() {
    if !have_root() {
        return;
    }
    let ns = Netns::new("sname");
    let dir = tempfile::tempdir().unwrap();
    let pair = Pair::start(&ns, dir.path(), "127.0.0.1:51820", "localhost:51820");
    let (path, log) = pair.wait_for_path_up(Duration::from_secs(20));
    assert_eq!(path["remote"], "127.0.0.1:51820", "{path:#}");
    assert!(log.contains("name=localhost:51820"), "{log}");
}

/// `/etc/netns/NAME/hosts`, which `ip netns exec NAME` mounts over
/// `/etc/hosts` for what it runs; removed when dropped.
struct NetnsHosts(std::path::PathBuf);

impl NetnsHosts {
    fn new(ns: &Netns, text: &str) -> NetnsHosts {
        let dir = Path::new("/etc/netns").join(&ns.0);
        std::fs::create_dir_all(&dir).unwrap();
        let hosts = NetnsHosts(dir);
        hosts.write(text);
        hosts
    }

    /// Rewrites the file in place: the mount shows the same inode.
    fn write(&self, text: &str) {
        std::fs::write(self.0.join("hosts"), text).unwrap();
    }
}

impl Drop for NetnsHosts {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The server's name first points where no server is (127.0.0.1), then,
/// as a dynamic-DNS record would after the server's address changed, at
/// the server (127.0.0.2): the client, which heard nothing, resolves the
/// name again and reaches it without a restart (within 10 s of silence
/// plus one 10-s lookup interval; the test allows 40 s).
#[test]
fn a_client_finds_its_server_again_when_the_name_moves() {
    if !have_root() {
        return;
    }
    let ns = Netns::new("smoved");
    let hosts = NetnsHosts::new(&ns, "127.0.0.1 braid-server.test\n");
    let dir = tempfile::tempdir().unwrap();
    let pair = Pair::start(
        &ns,
        dir.path(),
        "127.0.0.2:51820",
        "braid-server.test:51820",
    );
    std::thread::sleep(Duration::from_secs(2));
    let before = pair.client_status().expect("the client answers");
    assert_ne!(before["session"]["paths"][0]["state"], "up", "{before:#}");
    hosts.write("127.0.0.2 braid-server.test\n");
    let moved = Instant::now();
    let (path, log) = pair.wait_for_path_up(Duration::from_secs(40));
    assert_eq!(path["remote"], "127.0.0.2:51820", "{path:#}");
    assert!(
        log.contains("resolves to a new address"),
        "up {:?} after the move\n{log}",
        moved.elapsed()
    );
}

/// A name that does not resolve stops the client at start with one line
/// naming the file and the name. The namespace has no route anywhere, so
/// the resolver's query fails at once and goes nowhere.
#[test]
fn a_server_name_that_does_not_resolve_stops_the_client_with_one_line() {
    if !have_root() {
        return;
    }
    let ns = Netns::new("noname");
    let dir = tempfile::tempdir().unwrap();
    let client_toml = dir.path().join("client.toml");
    let server_public = pubkey(&genkey());
    std::fs::write(
        &client_toml,
        client_config(
            dir.path(),
            &genkey(),
            &server_public,
            "braid-test.invalid:51820",
        ),
    )
    .unwrap();
    let out = run(ns.exec(env!("CARGO_BIN_EXE_braid")).args([
        "client",
        "--config",
        client_toml.to_str().unwrap(),
    ]));
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!(
            "{}: server endpoint braid-test.invalid:51820: cannot resolve it: ",
            client_toml.display()
        )),
        "{err}"
    );
    let links = run(ns.exec("ip").args(["-o", "link"]));
    let links = String::from_utf8_lossy(&links.stdout);
    assert!(!links.contains("bnc0"), "no TUN device was made: {links}");
}
