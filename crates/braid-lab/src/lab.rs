//! The lab's life cycle: `up`, `status`, `set`, `exec`, `down`.

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::control::{ask, DirectionStatus, EmulatorStatus, Request, Response};
pub use crate::daemon::EmulatorProgram;
use crate::iface::IfaceControl;
use crate::layout::{LabLayout, PathLayout, MAX_PATHS, SERVER_ADDR};
use crate::lock::LabLock;
use crate::state::{parse_spec, LabConfig, Namespaces, PathConfig};
use crate::{daemon, direct, netns, topology, LabError};

/// How long `up` waits for the emulator to answer its first request (and
/// for the paths' carrier). Generous: the emulators of other labs run at
/// real-time priority, and on a 2-core machine busy with them and a build
/// 10 s was once not enough.
const EMULATOR_START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long `down` gives the emulator to exit after SIGTERM.
const EMULATOR_STOP_TIMEOUT: Duration = Duration::from_secs(2);

#[derive(Debug, Clone)]
pub struct UpOptions {
    pub name: String,
    pub specs: Vec<String>,
    /// Seeds the loss generators; `None` picks one from the clock.
    pub seed: Option<u64>,
    pub emulator: EmulatorProgram,
    /// Puts each path behind a masquerading NAT of its own (nftables in
    /// the emulator namespace; needs the `nft` program).
    pub nat: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Client,
    Server,
}

/// What `status` reports: the lab's layout and, while the emulator runs, its
/// live settings and counters.
#[derive(Debug, Clone, serde::Serialize)]
pub struct LabStatus {
    pub name: String,
    pub namespaces: Namespaces,
    pub server_addr: std::net::Ipv4Addr,
    /// Whether each path is behind a NAT of its own (`up --nat`; each
    /// path's `nat` says where).
    pub nat: bool,
    pub emulator: Option<EmulatorStatus>,
    pub paths: Vec<PathReport>,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct PathReport {
    #[serde(flatten)]
    pub layout: PathLayout,
    /// The SPEC in force.
    pub spec: String,
    /// Live settings and counters of each direction; absent while the
    /// emulator is down.
    pub up: Option<DirectionStatus>,
    pub down: Option<DirectionStatus>,
}

fn require_root() -> Result<(), LabError> {
    // SAFETY: geteuid cannot fail.
    if unsafe { libc::geteuid() } != 0 {
        return Err(LabError::NotRoot);
    }
    Ok(())
}

/// The pid of the lab's emulator if it is alive (and really is it: a pid
/// from a stale file may since belong to another process).
pub fn emulator_pid(layout: &LabLayout) -> Option<libc::pid_t> {
    let pid: libc::pid_t = std::fs::read_to_string(layout.pid_file())
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let state_dir = layout.state_dir();
    let ours = cmdline
        .split(|b| *b == 0)
        .any(|arg| arg == state_dir.as_os_str().as_encoded_bytes());
    ours.then_some(pid)
}

/// What of the lab exists now, in words, for error messages.
fn leftovers(layout: &LabLayout) -> Vec<String> {
    let mut found: Vec<String> = layout
        .namespaces()
        .into_iter()
        .filter(|ns| netns::exists(ns))
        .map(|ns| format!("namespace {ns}"))
        .collect();
    if layout.state_dir().exists() {
        found.push(format!("state directory {}", layout.state_dir().display()));
    }
    found
}

/// Creates the lab. On any failure nothing of it is left behind. Of two
/// `up` of one name at once, one creates the lab and the other is told that
/// it is running.
pub fn up(opts: &UpOptions) -> Result<LabStatus, LabError> {
    let layout = LabLayout::new(&opts.name)?;
    let config = plan(&layout, opts)?;
    require_root()?;
    let lock = LabLock::try_take(&layout)?;
    if emulator_pid(&layout).is_some() {
        return Err(LabError::AlreadyRunning(layout.name));
    }
    let found = leftovers(&layout);
    if !found.is_empty() {
        return Err(LabError::Leftover {
            name: layout.name,
            what: found.join(", "),
        });
    }
    let result = create(&layout, &config, &opts.emulator);
    if let Err(e) = result {
        // Undo whatever part was made; the first error is the one to report.
        if remove(&layout).is_ok() {
            let _ = lock.remove();
        }
        return Err(e);
    }
    drop(lock);
    status(&layout.name)
}

/// Checks the input and decides every name and address, touching nothing.
fn plan(layout: &LabLayout, opts: &UpOptions) -> Result<LabConfig, LabError> {
    if opts.specs.is_empty() {
        return Err(LabError::NoPaths);
    }
    if opts.specs.len() > MAX_PATHS {
        return Err(LabError::TooManyPaths {
            max: MAX_PATHS,
            given: opts.specs.len(),
        });
    }
    let cwd = std::env::current_dir().map_err(LabError::io("current directory"))?;
    let mut paths: Vec<PathConfig> = Vec::with_capacity(opts.specs.len());
    for (index, text) in opts.specs.iter().enumerate() {
        let name = match direct::parse(text)? {
            Some(_) if opts.nat => {
                return Err(LabError::DirectSpec {
                    spec: text.clone(),
                    why: "--nat puts each path's NAT in the emulator namespace, which a \
                          direct path does not pass through"
                        .into(),
                })
            }
            Some(direct) => direct.name_or_default(index),
            None => parse_spec(text, &cwd)?.name_or_default(index),
        };
        if paths.iter().any(|p| p.layout.name == name) {
            return Err(LabError::DuplicatePath(name));
        }
        let layout = PathLayout::new(index, &name);
        paths.push(PathConfig {
            layout: if opts.nat {
                layout.behind_nat(index)
            } else {
                layout
            },
            spec: text.clone(),
            cwd: cwd.clone(),
        });
    }
    let seed = opts.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64)
    });
    Ok(LabConfig {
        name: layout.name.clone(),
        namespaces: Namespaces {
            client: layout.ns_client(),
            server: layout.ns_server(),
            emulator: layout.ns_emulator(),
        },
        server_addr: SERVER_ADDR,
        seed,
        paths,
    })
}

fn create(
    layout: &LabLayout,
    config: &LabConfig,
    emulator: &EmulatorProgram,
) -> Result<(), LabError> {
    let dir = layout.state_dir();
    std::fs::create_dir_all(&dir).map_err(LabError::io(format!("creating {}", dir.display())))?;
    config.save(layout)?;
    let links: Vec<topology::PathLink> = config
        .paths
        .iter()
        .map(|p| topology::PathLink {
            layout: p.layout.clone(),
            direct: direct::is_direct(&p.spec),
        })
        .collect();
    topology::build(layout, &links)?;
    let path_layouts: Vec<PathLayout> = config.paths.iter().map(|p| p.layout.clone()).collect();
    daemon::spawn(emulator, &dir, &layout.log_file())?;
    wait_for_emulator(layout)?;
    wait_for_carrier(layout, &path_layouts)
}

/// Waits until every path's interface in the client and server namespaces
/// has carrier: a veth end reports none for a moment after its peer comes
/// up, and a program started at once (`braid send` picking interfaces,
/// a daemon binding one) would see the path as down.
fn wait_for_carrier(layout: &LabLayout, paths: &[PathLayout]) -> Result<(), LabError> {
    let deadline = Instant::now() + EMULATOR_START_TIMEOUT;
    for ns in [layout.ns_client(), layout.ns_server()] {
        loop {
            let down = netns::run_in(&ns, || {
                let control = IfaceControl::open().map_err(LabError::io("opening a socket"))?;
                for p in paths {
                    let running = control
                        .is_running(&p.client_iface)
                        .map_err(LabError::io(format!("reading {}", p.client_iface)))?;
                    if !running {
                        return Ok(Some(p.client_iface.clone()));
                    }
                }
                Ok(None)
            })?;
            let Some(iface) = down else { break };
            if Instant::now() > deadline {
                return Err(LabError::io(format!("bringing up {iface} in {ns}"))(
                    std::io::Error::other(format!("no carrier after {EMULATOR_START_TIMEOUT:?}")),
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    Ok(())
}

fn wait_for_emulator(layout: &LabLayout) -> Result<(), LabError> {
    let deadline = Instant::now() + EMULATOR_START_TIMEOUT;
    let what = loop {
        if layout.pid_file().exists() && emulator_pid(layout).is_none() {
            break "it exited".to_string();
        }
        if let Ok(Response::Status(_)) = ask(layout, &Request::Status) {
            return Ok(());
        }
        if Instant::now() > deadline {
            break format!("no answer within {EMULATOR_START_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let log = std::fs::read_to_string(layout.log_file()).unwrap_or_default();
    let log = match log.trim() {
        "" => "(nothing)",
        text => text,
    };
    Err(LabError::EmulatorStart(format!(
        "{what}; its log says: {log}"
    )))
}

pub fn status(name: &str) -> Result<LabStatus, LabError> {
    let layout = LabLayout::new(name)?;
    require_root()?;
    let config = load_config(&layout)?;
    let emulator = match ask(&layout, &Request::Status) {
        Ok(Response::Status(s)) => Some(s),
        _ => None,
    };
    let paths = config
        .paths
        .iter()
        .map(|p| {
            let live = emulator
                .as_ref()
                .and_then(|e| e.paths.iter().find(|l| l.name == p.layout.name));
            PathReport {
                layout: p.layout.clone(),
                spec: p.spec.clone(),
                up: live.map(|l| l.up.clone()),
                down: live.map(|l| l.down.clone()),
            }
        })
        .collect();
    Ok(LabStatus {
        nat: config.paths.iter().any(|p| p.layout.nat.is_some()),
        name: config.name,
        namespaces: config.namespaces,
        server_addr: config.server_addr,
        emulator,
        paths,
    })
}

fn load_config(layout: &LabLayout) -> Result<LabConfig, LabError> {
    if !layout.config_file().exists() {
        return Err(LabError::NoSuchLab(layout.name.clone()));
    }
    LabConfig::load(layout)
}

/// Changes path `path`'s settings while the lab runs.
pub fn set(name: &str, path: &str, spec: &str) -> Result<(), LabError> {
    let layout = LabLayout::new(name)?;
    require_root()?;
    let mut config = load_config(&layout)?;
    let cwd = std::env::current_dir().map_err(LabError::io("current directory"))?;
    let known = config.path_names();
    let entry = config
        .paths
        .iter_mut()
        .find(|p| p.layout.name == path)
        .ok_or_else(|| LabError::NoSuchPath {
            name: path.to_owned(),
            known,
        })?;
    let why = if direct::is_direct(&entry.spec) {
        Some("a direct veth pair has no emulator settings to change")
    } else if direct::parse(spec)?.is_some() {
        Some("an emulated path cannot become direct while the lab runs")
    } else {
        None
    };
    let refused = |why: String| LabError::SetRefused {
        path: path.to_owned(),
        why,
    };
    if let Some(why) = why {
        return Err(refused(why.to_owned()));
    }
    let parsed = parse_spec(spec, &cwd)?;
    // The path keeps its name; a different `name=` would orphan its links.
    if let Some(other) = parsed.name.as_ref().filter(|n| *n != path) {
        return Err(refused(format!("a path cannot be renamed (name={other})")));
    }
    // Role and rate limit are the tunnel's (`up --tunnel` writes them into
    // the client's config); the emulator has neither, so a change would be
    // reported as done and never happen.
    let before = parse_spec(&entry.spec, &entry.cwd)?;
    if parsed.role != before.role || parsed.rate_limit_bps != before.rate_limit_bps {
        return Err(refused(format!(
            "role= and rate_limit= are the tunnel's path settings, fixed when `braid lab up \
             --tunnel` starts it: keep them as in the path's spec {:?} (`lab set` changes the \
             emulated link only)",
            entry.spec
        )));
    }
    let request = Request::Set {
        path: path.to_owned(),
        spec: spec.to_owned(),
        cwd: cwd.clone(),
    };
    match ask(&layout, &request)? {
        Response::Applied => {}
        Response::Rejected(why) => return Err(LabError::Control(why)),
        Response::Status(_) => return Err(LabError::Control("unexpected answer".into())),
    }
    entry.spec = spec.to_owned();
    entry.cwd = cwd;
    config.save(&layout)
}

/// The namespace of lab `name`'s `side`, which must exist.
fn side_namespace(name: &str, side: Side) -> Result<String, LabError> {
    let layout = LabLayout::new(name)?;
    require_root()?;
    let ns = match side {
        Side::Client => layout.ns_client(),
        Side::Server => layout.ns_server(),
    };
    if !netns::exists(&ns) {
        return Err(LabError::NoSuchLab(layout.name));
    }
    Ok(ns)
}

/// The command that runs `argv` inside the lab's client or server namespace
/// (it enters the namespace between fork and exec).
pub fn exec_command(name: &str, side: Side, argv: &[String]) -> Result<Command, LabError> {
    let ns = side_namespace(name, side)?;
    let (program, args) = argv.split_first().ok_or(LabError::NoCommand)?;
    let mut cmd = Command::new(program);
    cmd.args(args);
    netns::enter_on_exec(&mut cmd, &ns)?;
    Ok(cmd)
}

/// Runs `f` on a thread inside the namespace of `side`; sockets it makes
/// stay there when handed back.
pub fn run_in<T: Send>(
    name: &str,
    side: Side,
    f: impl FnOnce() -> Result<T, LabError> + Send,
) -> Result<T, LabError> {
    let ns = side_namespace(name, side)?;
    netns::run_in(&ns, f)
}

/// Removes the lab: emulator, processes in its namespaces, namespaces (and
/// with them every link), state. Works on a half-made or crashed lab too.
/// Returns what was removed; empty when there was no such lab.
pub fn down(name: &str) -> Result<Vec<String>, LabError> {
    let layout = LabLayout::new(name)?;
    require_root()?;
    // Waits for an `up` in progress rather than tearing down half a lab.
    let lock = LabLock::take(&layout)?;
    let removed = remove(&layout)?;
    lock.remove()?;
    Ok(removed)
}

/// `down` for a caller that holds the lab's lock.
fn remove(layout: &LabLayout) -> Result<Vec<String>, LabError> {
    let mut removed = Vec::new();
    if let Some(pid) = emulator_pid(layout) {
        stop_process(pid);
        removed.push(format!("emulator (pid {pid})"));
    }
    // Every namespace is tried (each delete kills its processes first)
    // even when one fails; the state directory stays then, so that
    // `down` can be run again.
    let mut first_error = None;
    for ns in layout.namespaces() {
        if netns::exists(&ns) {
            match netns::delete(&ns) {
                Ok(()) => removed.push(format!("namespace {ns}")),
                Err(e) => {
                    first_error.get_or_insert(e);
                }
            }
        }
    }
    if let Some(e) = first_error {
        return Err(e);
    }
    let dir: PathBuf = layout.state_dir();
    if dir.exists() {
        std::fs::remove_dir_all(&dir)
            .map_err(LabError::io(format!("removing {}", dir.display())))?;
        removed.push(format!("state directory {}", dir.display()));
    }
    Ok(removed)
}

/// SIGTERM, then SIGKILL if it is still there after a grace period.
fn stop_process(pid: libc::pid_t) {
    let alive = || std::path::Path::new(&format!("/proc/{pid}")).exists();
    // SAFETY: kill has no memory effects.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let deadline = Instant::now() + EMULATOR_STOP_TIMEOUT;
    while alive() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    if alive() {
        // SAFETY: as above.
        unsafe { libc::kill(pid, libc::SIGKILL) };
        while alive() {
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nat_is_refused_for_a_direct_path() {
        let layout = LabLayout::new("plan-test").unwrap();
        let opts = |nat| UpOptions {
            name: "plan-test".into(),
            specs: vec!["10mbit,5ms".into(), "direct".into()],
            seed: Some(1),
            emulator: EmulatorProgram {
                program: "unused".into(),
                args: Vec::new(),
            },
            nat,
        };
        let Err(err) = plan(&layout, &opts(true)) else {
            panic!("--nat with a direct path must be refused")
        };
        assert!(
            matches!(err, LabError::DirectSpec { ref spec, .. } if spec == "direct"),
            "{err}"
        );
        let config = plan(&layout, &opts(false)).unwrap();
        assert!(config.paths.iter().all(|p| p.layout.nat.is_none()));
    }
}
