//! A client that knows its server by name (`endpoint = "NAME:PORT"`).
//! Root: each test runs the daemons in a network namespace of its own,
//! which it deletes at the end, so nothing (no DNS query either) leaves it.

mod common;

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{accepts, braid, genkey, pubkey, run, stop};
use serde_json::Value;

fn have_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

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

/// The client resolves `localhost` (every hosts file has it) and keeps a
/// session with a server on the namespace's loopback.
#[test]
fn a_client_reaches_a_server_it_knows_by_name() {
    if !have_root() {
        return;
    }
    let ns = Netns::new("sname");
    let dir = tempfile::tempdir().unwrap();
    let (server_key, client_key) = (genkey(), genkey());
    let server_toml = dir.path().join("server.toml");
    std::fs::write(
        &server_toml,
        format!(
            "private_key = \"{server_key}\"\nlisten = [\"127.0.0.1:51820\"]\ncontrol_socket = \"{}\"\n\
             [tunnel]\nname = \"bns0\"\nipv4 = \"10.78.0.1/24\"\n\
             [[peer]]\npublic_key = \"{}\"\nallowed = [\"10.78.0.2/32\"]\n",
            dir.path().join("server.sock").display(),
            pubkey(&client_key)
        ),
    )
    .unwrap();
    let client_toml = dir.path().join("client.toml");
    std::fs::write(
        &client_toml,
        client_config(
            dir.path(),
            &client_key,
            &pubkey(&server_key),
            "localhost:51820",
        ),
    )
    .unwrap();
    let server_log = dir.path().join("server.log");
    let client_log = dir.path().join("client.log");
    let server = ns.braid(
        &["server", "--config", server_toml.to_str().unwrap()],
        &server_log,
    );
    let deadline = Instant::now() + Duration::from_secs(15);
    while !accepts(&dir.path().join("server.sock")) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let client = ns.braid(
        &["client", "--config", client_toml.to_str().unwrap()],
        &client_log,
    );
    let status = || -> Option<Value> {
        let out = run(braid()
            .args(["status", "--json", "--socket"])
            .arg(dir.path().join("client.sock")));
        out.status
            .success()
            .then(|| serde_json::from_slice(&out.stdout).unwrap())
    };
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut last = None;
    while Instant::now() < deadline {
        last = status();
        if last
            .as_ref()
            .is_some_and(|s| s["session"]["paths"][0]["state"] == "up")
        {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    stop(client);
    stop(server);
    let log = std::fs::read_to_string(&client_log).unwrap();
    let last = last.unwrap_or_else(|| panic!("no status from the client; its log:\n{log}"));
    let path = &last["session"]["paths"][0];
    assert_eq!(path["state"], "up", "{last:#}\nclient log:\n{log}");
    assert_eq!(path["remote"], "127.0.0.1:51820", "{last:#}");
    assert!(log.contains("name=localhost:51820"), "{log}");
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
