//! `braid client` and `braid server` refusing bad configs before they touch
//! the system: exit 2, one line naming file, line and field. No root needed.

use std::process::{Command, Output};

fn braid(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_braid"))
        .args(args)
        .output()
        .expect("run braid")
}

/// Writes `text` to `name` in `dir`, which removes it when dropped.
fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> std::path::PathBuf {
    let path = dir.path().join(name);
    std::fs::write(&path, text).unwrap();
    path
}

fn one_line_error(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(err.lines().count(), 1, "{err}");
    err
}

const CLIENT: &str = "private_key = \"AlysX+WJqMQ8zAiklyPA2EhTBP+wt+Y7nxUuA1mb7Gs=\"\n\
[server]\npublic_key = \"Y6DiCd5dVCDaRa7uH3KNOuEpi3ODFUpij6Kbrlhstew=\"\nendpoint = \"192.0.2.1:51820\"\n\
[tunnel]\nipv4 = \"10.77.0.2/24\"\n[[path]]\ninterface = \"eth0\"\n";

/// The one client a test server serves (a server without a peer is refused).
const PEER: &str = "[[peer]]\npublic_key = \"cD+3h/LfNRMz1ev65aN3biwobLWdo+N1ERuiq1ckGSk=\"\nallowed = [\"10.77.0.2/32\"]\n";

/// A server config: its private key on line 1, then `body`, then [`PEER`].
fn server_config(body: &str) -> String {
    format!("private_key = \"OvrnGSIVl2rdwtyoSSp8GyveXsq33GAVbFdk/UfjaCI=\"\n{body}{PEER}")
}

#[test]
fn a_malformed_config_fails_with_file_line_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        &dir,
        "bad.toml",
        &CLIENT.replace("interface = \"eth0\"", "interfac = \"eth0\""),
    );
    let err = one_line_error(&braid(&["client", "--config", path.to_str().unwrap()]));
    assert!(err.contains("bad.toml:8: "), "{err}");
    assert!(err.contains("unknown field `interfac`"), "{err}");
}

#[test]
fn a_missing_nat_uplink_is_named_at_start() {
    let server = server_config(
        "listen = [\"127.0.0.1:51897\"]\n[tunnel]\nipv4 = \"10.77.0.1/24\"\n[nat]\nuplink = \"nosuchif0\"\n",
    );
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, "nat.toml", &server);
    let err = one_line_error(&braid(&["server", "--config", path.to_str().unwrap()]));
    assert!(
        err.contains("nat.toml:6: [nat] uplink: interface \"nosuchif0\" does not exist"),
        "{err}"
    );
}

#[test]
fn a_missing_interface_is_named_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, "iface.toml", &CLIENT.replace("eth0", "nosuchif0"));
    let err = one_line_error(&braid(&["client", "--config", path.to_str().unwrap()]));
    assert!(
        err.contains("iface.toml:7: path \"nosuchif0\": interface \"nosuchif0\" does not exist"),
        "{err}"
    );
    assert!(err.contains("optional = true"), "says how to wait: {err}");
}

#[test]
fn status_without_a_daemon_names_the_socket_and_fails() {
    let socket = std::env::temp_dir().join(format!("braid-no-daemon-{}.sock", std::process::id()));
    let out = braid(&["status", "--socket", socket.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains(&format!("no daemon answers on {}", socket.display())),
        "{err}"
    );
}

/// What a config can get wrong fails before the TUN device is made: here
/// a metrics address no listener can bind (no interface holds it). The daemon runs without
/// CAP_NET_ADMIN (`setpriv`, when run as root), so making the device first
/// would fail on that instead.
#[test]
fn a_bad_metrics_address_fails_before_the_tunnel_device_is_made() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("ctl.sock");
    let server = server_config(&format!(
        "listen = [\"127.0.0.1:51898\"]\ncontrol_socket = \"{}\"\nmetrics = \"192.0.2.1:9851\"\n\
         [tunnel]\nname = \"braidmtest0\"\nipv4 = \"10.77.0.1/24\"\n",
        socket.display()
    ));
    let path = write(&dir, "metrics.toml", &server);
    let out = Command::new("setpriv")
        .args(["--bounding-set", "-net_admin", "--inh-caps", "-net_admin"])
        .arg(env!("CARGO_BIN_EXE_braid"))
        .args(["server", "--config", path.to_str().unwrap()])
        .output()
        .expect("run setpriv (util-linux)");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("metrics 192.0.2.1:9851: "), "{err}");
    assert!(!socket.exists(), "the control socket was left behind");
}

/// A `listen` address the server cannot bind (no interface holds it) is
/// named with its line, before anything else is set up.
#[test]
fn a_listen_address_that_cannot_be_bound_is_named_with_its_line() {
    let server =
        server_config("listen = [\"192.0.2.1:51899\"]\n[tunnel]\nipv4 = \"10.77.0.1/24\"\n");
    let dir = tempfile::tempdir().unwrap();
    let path = write(&dir, "listen.toml", &server);
    let out = braid(&["server", "--config", path.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("listen.toml:2: listen 192.0.2.1:51899: "),
        "{err}"
    );
}

/// A `[tunnel] name` another device has (here `lo`) is named with its
/// line. Making a TUN device needs CAP_NET_ADMIN: as root only.
#[test]
fn a_tunnel_name_another_device_has_is_named_with_its_line() {
    if !braid_lab::root_guard::have_root_or_skip() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("ctl.sock");
    let server = server_config(&format!(
        "listen = [\"127.0.0.1:51899\"]\ncontrol_socket = \"{}\"\n\
         [tunnel]\nname = \"lo\"\nipv4 = \"10.77.0.1/24\"\n",
        socket.display()
    ));
    let path = write(&dir, "name.toml", &server);
    let err = one_line_error(&braid(&["server", "--config", path.to_str().unwrap()]));
    assert!(err.contains("name.toml:5: [tunnel] name: "), "{err}");
    assert!(!socket.exists(), "the control socket was left behind");
}
