//! `braid lab up --tunnel`: a braid server and client in the lab's
//! namespaces, with fresh keys and one braid path per emulated path.
//!
//! Their configs, logs and control sockets live in
//! `/run/braid-lab/NAME.tunnel/`; `braid lab down` ends the daemons (with
//! every other process in the lab's namespaces) and removes that folder.

use std::io;
use std::net::Ipv4Addr;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use braid_core::crypto::StaticKeypair;
use braid_core::session::PathRole;
use braid_lab::{LabError, LabStatus, Side};
use braid_sim::spec::PathSpec;
use rand::rngs::OsRng;
use serde_json::{json, Value};

use crate::daemon;

/// The tunnel's inner addresses (a /24 of their own, apart from the lab's).
pub const SERVER_TUN: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 1);
pub const CLIENT_TUN: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 2);
const PORT: u16 = 51820;
/// How long `up` waits for every path of the client to answer.
const UP_TIMEOUT: Duration = Duration::from_secs(10);

fn dir(name: &str) -> PathBuf {
    PathBuf::from(braid_lab::layout::STATE_ROOT).join(format!("{name}.tunnel"))
}

fn socket(name: &str, side: &str) -> PathBuf {
    dir(name).join(format!("{side}.sock"))
}

fn listen(status: &LabStatus) -> String {
    format!("{}:{PORT}", status.server_addr)
}

/// Writes the configs, starts both daemons and waits until every path is up.
/// `resend_losses` goes into both ends' `[tunnel]`.
pub fn start(status: &LabStatus, resend_losses: bool) -> Result<(), LabError> {
    let name = &status.name;
    let dir = dir(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).map_err(LabError::io("creating the tunnel's folder"))?;
    let server = StaticKeypair::generate(&mut OsRng);
    let client = StaticKeypair::generate(&mut OsRng);
    let server_toml = format!(
        "private_key = \"{}\"\nlisten = [\"{}\"]\ncontrol_socket = \"{}\"\n\
         [tunnel]\nipv4 = \"{SERVER_TUN}/24\"\nresend_losses = {resend_losses}\n\
         [[peer]]\nname = \"lab-client\"\npublic_key = \"{}\"\nallowed = [\"{CLIENT_TUN}/32\"]\n",
        server.private.to_base64(),
        listen(status),
        socket(name, "server").display(),
        client.public.to_base64(),
    );
    let mut client_toml = format!(
        "private_key = \"{}\"\ncontrol_socket = \"{}\"\n\
         [server]\npublic_key = \"{}\"\nendpoint = \"{}\"\n\
         [tunnel]\nipv4 = \"{CLIENT_TUN}/24\"\nresend_losses = {resend_losses}\n",
        client.private.to_base64(),
        socket(name, "client").display(),
        server.public.to_base64(),
        listen(status),
    );
    for path in &status.paths {
        // `role=` and `rate_limit=` in a path's SPEC are the braid path's; a
        // direct path has neither.
        let (role, rate_limit_bps) = if braid_lab::direct::is_direct(&path.spec) {
            (PathRole::Primary, None)
        } else {
            let spec = PathSpec::parse(&path.spec).map_err(|source| LabError::Spec {
                spec: path.spec.clone(),
                source,
            })?;
            (spec.role, spec.rate_limit_bps)
        };
        // The lab routes packets from a path's client address over it.
        client_toml += &format!(
            "[[path]]\nname = \"{}\"\nsource = \"{}\"\nrole = \"{}\"\n",
            path.layout.name,
            path.layout.client_addr,
            role.name()
        );
        if let Some(bps) = rate_limit_bps {
            client_toml += &format!("rate_limit = \"{bps}bit\"\n");
        }
    }
    for (side, text) in [("server", server_toml), ("client", client_toml)] {
        std::fs::write(dir.join(format!("{side}.toml")), text)
            .map_err(LabError::io("writing the tunnel's configs"))?;
    }
    spawn(name, Side::Server, "server")?;
    spawn(name, Side::Client, "client")?;
    wait_until_up(name, status.paths.len())
}

fn spawn(name: &str, side: Side, role: &str) -> Result<(), LabError> {
    let dir = dir(name);
    let program = std::env::current_exe().map_err(LabError::io("locating the braid binary"))?;
    let argv = vec![
        program.display().to_string(),
        role.to_owned(),
        "--config".to_owned(),
        dir.join(format!("{role}.toml")).display().to_string(),
    ];
    let log = std::fs::File::create(dir.join(format!("{role}.log")))
        .map_err(LabError::io("creating the daemon's log"))?;
    let mut cmd = braid_lab::exec_command(name, side, &argv)?;
    cmd.stdin(Stdio::null()).stdout(Stdio::null()).stderr(log);
    // Its own session: the daemon outlives `braid lab up` and the terminal.
    // SAFETY: setsid is async-signal-safe.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            Ok(())
        });
    }
    cmd.spawn()
        .map_err(LabError::io("starting the braid daemon"))?;
    Ok(())
}

fn wait_until_up(name: &str, paths: usize) -> Result<(), LabError> {
    let start = Instant::now();
    loop {
        if let Some(status) = daemon_status(name, "client") {
            let up = status["session"]["paths"]
                .as_array()
                .map_or(0, |p| p.iter().filter(|p| p["state"] == "up").count());
            if up == paths {
                return Ok(());
            }
        }
        if start.elapsed() > UP_TIMEOUT {
            let log = std::fs::read_to_string(dir(name).join("client.log")).unwrap_or_default();
            return Err(LabError::io("starting the tunnel")(io::Error::other(
                format!(
                    "not every path up after {} s; client log:\n{log}",
                    UP_TIMEOUT.as_secs()
                ),
            )));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The status document of the lab's daemon on `side`, if it answers.
fn daemon_status(name: &str, side: &str) -> Option<Value> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok()?;
    let text = runtime.block_on(daemon::query(&socket(name, side))).ok()?;
    serde_json::from_str(&text).ok()
}

/// The `tunnel` member of `braid lab status --json`, if the lab has one.
/// `client_running` and `server_running` say whether each daemon answers
/// on its control socket.
pub fn status(lab: &LabStatus) -> Option<Value> {
    if !dir(&lab.name).exists() {
        return None;
    }
    let client = daemon_status(&lab.name, "client");
    let server_running = daemon_status(&lab.name, "server").is_some();
    Some(json!({
        "client_running": client.is_some(),
        "server_running": server_running,
        "server_addr": SERVER_TUN.to_string(),
        "client_addr": CLIENT_TUN.to_string(),
        "listen": listen(lab),
        "client_socket": socket(&lab.name, "client").display().to_string(),
        "server_socket": socket(&lab.name, "server").display().to_string(),
        "established": client.as_ref().map(|c| c["session"]["established"].clone()),
        "paths": client.as_ref().map(|c| c["session"]["paths"].clone()),
    }))
}

/// Removes the tunnel's folder (the daemons ended with the namespaces).
pub fn remove(name: &str) -> Option<String> {
    let dir = dir(name);
    std::fs::remove_dir_all(&dir)
        .ok()
        .map(|()| format!("tunnel files {}", dir.display()))
}

/// What to try next, printed by `braid lab up --tunnel`.
pub fn guide(lab: &LabStatus) -> String {
    let name = &lab.name;
    let n = if name == "lab" {
        String::new()
    } else {
        format!(" --name {name}")
    };
    // Only an emulated path can be cut; a lab of direct paths has none.
    let cut = lab
        .paths
        .iter()
        .find(|p| !braid_lab::direct::is_direct(&p.spec))
        .map_or(String::new(), |p| {
            format!(
                "\x20 braid lab set{n} {} {},loss=100%     # cut a path, watch it go down\n",
                p.layout.name, p.spec
            )
        });
    format!(
        "\ntunnel up: client {CLIENT_TUN} <-> server {SERVER_TUN}, server listening on {}\n\
         try:\n\
         \x20 braid lab exec{n} server -- iperf3 -s -B {SERVER_TUN} &\n\
         \x20 braid lab exec{n} client -- iperf3 -c {SERVER_TUN} -C cubic -t 10\n\
         \x20 braid status --watch --socket {}\n\
         {cut}\
         \x20 braid lab down{n}\n",
        listen(lab),
        socket(name, "client").display(),
    ) + &nat_guide(lab)
}

/// With `--nat`: where to see that the server knows the paths by their
/// NATs' addresses, and how to make a NAT rebind a path.
fn nat_guide(lab: &LabStatus) -> String {
    let Some(nat) = lab.paths.first().and_then(|p| p.layout.nat.as_ref()) else {
        return String::new();
    };
    format!(
        "each path is behind its own NAT (nftables in {emu}); the server sees them as {outer}, ...:
           braid status --socket {server}
           ip netns exec {emu} conntrack -D -p udp --orig-src {client}   # the NAT forgets the path's mapping
",
        emu = lab.namespaces.emulator,
        outer = nat.outer_addr,
        server = socket(&lab.name, "server").display(),
        client = lab.paths[0].layout.client_addr,
    )
}
