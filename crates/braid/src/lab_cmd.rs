//! `braid lab`: command-line glue over the `braid-lab` library.

// The clap doc comments here are `--help` text, where brackets are usage
// syntax (`bulk[:SIZE]`, `[tunnel]`), not links.
#![allow(rustdoc::broken_intra_doc_links)]

use std::io::Write;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::ExitCode;

use braid_lab::{EmulatorProgram, LabError, Side, UpOptions};

const DEFAULT_NAME: &str = "lab";
/// What a shell answers for a command it cannot find or cannot run.
const EXIT_NOT_FOUND: u8 = 127;
const EXIT_NOT_EXECUTABLE: u8 = 126;

#[derive(clap::Args, Debug)]
pub struct LabArgs {
    #[command(subcommand)]
    pub cmd: LabCommand,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum SideArg {
    Client,
    Server,
}

#[derive(clap::Subcommand, Debug)]
pub enum LabCommand {
    /// Create a client and a server namespace joined by one emulated path per SPEC
    Up {
        /// RATE,DELAY[,key=value]... or trace=FILE,DELAY[,...], or direct[,name=NAME] for a plain veth pair without emulator; repeat for more paths (at most 32 in a lab)
        #[arg(long = "path", value_name = "SPEC", required = true)]
        paths: Vec<String>,
        /// The lab's name (several labs may run side by side)
        #[arg(long, default_value = DEFAULT_NAME)]
        name: String,
        /// Seed of the loss generators (default: from the clock)
        #[arg(long)]
        seed: Option<u64>,
        /// Also start a braid server and client with fresh keys, one braid path per emulated path
        #[arg(long)]
        tunnel: bool,
        /// With --tunnel: neither end re-sends what a path loses ([tunnel] resend_losses = false), to compare
        #[arg(long, requires = "tunnel")]
        no_resend: bool,
        /// Put each path behind a masquerading NAT of its own, in the emulator namespace (needs nft)
        #[arg(long)]
        nat: bool,
    },
    /// Run a command inside the client or server namespace
    Exec {
        /// The lab's name (several labs may run side by side)
        #[arg(long, default_value = DEFAULT_NAME)]
        name: String,
        /// Which namespace: the client's or the server's
        side: SideArg,
        /// The command and its arguments (put `--` before them if they start with `-`)
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            required = true,
            value_name = "CMD"
        )]
        command: Vec<String>,
    },
    /// Show namespaces, paths, settings and the emulator's counters (exit 1 if the emulator or a tunnel daemon is not running, 2 if no lab has that name)
    Status {
        /// The lab's name (several labs may run side by side)
        #[arg(long, default_value = DEFAULT_NAME)]
        name: String,
        /// Print one JSON object instead of the text
        #[arg(long)]
        json: bool,
    },
    /// Change a path's settings while traffic flows
    Set {
        /// The lab's name (several labs may run side by side)
        #[arg(long, default_value = DEFAULT_NAME)]
        name: String,
        /// The path's name (its SPEC's name=, or p1, p2, ...)
        path: String,
        /// The path's new SPEC, whole (RATE,DELAY[,key=value]...): what it leaves out is
        /// reset; name=, role= and rate_limit= cannot change
        spec: String,
    },
    /// Remove everything the lab created, also after a crash
    Down {
        /// The lab's name (several labs may run side by side)
        #[arg(long, default_value = DEFAULT_NAME)]
        name: String,
    },
    /// The emulator process that `up` starts (internal)
    #[command(name = "_emulate", hide = true)]
    Emulate {
        #[arg(long)]
        state: PathBuf,
    },
}

pub fn run(args: LabArgs) -> ExitCode {
    match dispatch(args.cmd) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("braid lab: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

/// Writes `text` to standard output. A reader that went away (`| head`)
/// is no error: the lab's work is done whether or not anyone reads on.
fn emit(text: &str) -> Result<(), LabError> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(LabError::io("writing to standard output")(e))
        }
        _ => Ok(()),
    }
}

/// The exit status and message of a command that could not be started, as
/// a shell gives them.
fn exec_failure(program: &str, err: &std::io::Error) -> ExitCode {
    eprintln!("braid lab: {program}: {err}");
    let code = match err.kind() {
        std::io::ErrorKind::NotFound => EXIT_NOT_FOUND,
        _ => EXIT_NOT_EXECUTABLE,
    };
    ExitCode::from(code)
}

fn dispatch(cmd: LabCommand) -> Result<ExitCode, LabError> {
    match cmd {
        LabCommand::Up {
            paths,
            name,
            seed,
            tunnel,
            no_resend,
            nat,
        } => {
            let program =
                std::env::current_exe().map_err(LabError::io("locating the braid binary"))?;
            let status = braid_lab::up(&UpOptions {
                name,
                specs: paths,
                seed,
                emulator: EmulatorProgram {
                    program,
                    args: vec!["lab".into(), "_emulate".into()],
                },
                nat,
            })?;
            if tunnel {
                if let Err(e) = crate::lab_tunnel::start(&status, !no_resend) {
                    let _ = braid_lab::down(&status.name);
                    let _ = crate::lab_tunnel::remove(&status.name);
                    return Err(e);
                }
                let guide = crate::lab_tunnel::guide(&status);
                emit(&format!("{}{guide}", braid_lab::render_status(&status)))?;
            } else {
                emit(&braid_lab::render_status(&status))?;
            }
        }
        LabCommand::Exec {
            name,
            side,
            command,
        } => {
            let side = match side {
                SideArg::Client => Side::Client,
                SideArg::Server => Side::Server,
            };
            // exec only returns on failure.
            let err = braid_lab::exec_command(&name, side, &command)?.exec();
            return Ok(exec_failure(&command[0], &err));
        }
        LabCommand::Status { name, json } => {
            let status = braid_lab::status(&name)?;
            let tunnel = crate::lab_tunnel::status(&status);
            if json {
                let mut doc = serde_json::to_value(&status).expect("status serializes");
                if let (Some(tunnel), Some(map)) = (&tunnel, doc.as_object_mut()) {
                    map.insert("tunnel".to_owned(), tunnel.clone());
                }
                let text = serde_json::to_string_pretty(&doc).expect("status serializes");
                emit(&format!("{text}\n"))?;
            } else {
                let mut text = braid_lab::render_status(&status);
                if let Some(t) = &tunnel {
                    text += &format!(
                        "tunnel: client {} <-> server {}, listen {}, established {}\n",
                        t["client_addr"].as_str().unwrap_or("?"),
                        t["server_addr"].as_str().unwrap_or("?"),
                        t["listen"].as_str().unwrap_or("?"),
                        t["established"]
                    );
                }
                emit(&text)?;
            }
            if status.emulator.is_none() {
                return Err(LabError::EmulatorNotRunning(name));
            }
            if let Some(t) = &tunnel {
                let down: Vec<&str> = [("client", "client_running"), ("server", "server_running")]
                    .into_iter()
                    .filter(|(_, key)| t[key] != true)
                    .map(|(side, _)| side)
                    .collect();
                if !down.is_empty() {
                    eprintln!(
                        "braid lab: the tunnel's {} daemon of lab {name:?} does not answer on its \
                         control socket; recreate the lab with `braid lab down` and `braid lab up --tunnel`",
                        down.join(" and ")
                    );
                    return Ok(ExitCode::from(1));
                }
            }
        }
        LabCommand::Set { name, path, spec } => {
            braid_lab::set(&name, &path, &spec)?;
            emit(&format!("path {path} now {spec}\n"))?;
        }
        LabCommand::Down { name } => {
            let mut removed = braid_lab::down(&name)?;
            removed.extend(crate::lab_tunnel::remove(&name));
            let mut text = String::new();
            if removed.is_empty() {
                text = format!("no lab {name:?}: nothing to remove\n");
            }
            for what in removed {
                text += &format!("removed {what}\n");
            }
            emit(&text)?;
        }
        LabCommand::Emulate { state } => braid_lab::emulator::run(&state)?,
    }
    Ok(ExitCode::SUCCESS)
}
