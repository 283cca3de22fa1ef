//! `braid lab`: command-line glue over the `braid-lab` library.

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::ExitCode;

use braid_lab::{EmulatorProgram, LabError, Side, UpOptions};

const DEFAULT_NAME: &str = "lab";

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
        /// RATE,DELAY[,key=value]... or trace=FILE,DELAY[,...]; repeat for more paths
        #[arg(long = "path", value_name = "SPEC", required = true)]
        paths: Vec<String>,
        #[arg(long, default_value = DEFAULT_NAME)]
        name: String,
        /// Seed of the loss generators (default: from the clock)
        #[arg(long)]
        seed: Option<u64>,
    },
    /// Run a command inside the client or server namespace
    Exec {
        #[arg(long, default_value = DEFAULT_NAME)]
        name: String,
        side: SideArg,
        #[arg(
            trailing_var_arg = true,
            allow_hyphen_values = true,
            required = true,
            value_name = "CMD"
        )]
        command: Vec<String>,
    },
    /// Show namespaces, paths, settings and the emulator's counters
    Status {
        #[arg(long, default_value = DEFAULT_NAME)]
        name: String,
        #[arg(long)]
        json: bool,
    },
    /// Change a path's settings while traffic flows
    Set {
        #[arg(long, default_value = DEFAULT_NAME)]
        name: String,
        /// The path's name (its SPEC's name=, or p1, p2, ...)
        path: String,
        spec: String,
    },
    /// Remove everything the lab created, also after a crash
    Down {
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

fn dispatch(cmd: LabCommand) -> Result<ExitCode, LabError> {
    match cmd {
        LabCommand::Up { paths, name, seed } => {
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
            })?;
            print!("{}", braid_lab::render_status(&status));
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
            return Err(LabError::io(format!("running {command:?}"))(err));
        }
        LabCommand::Status { name, json } => {
            let status = braid_lab::status(&name)?;
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&status).expect("status serializes")
                );
            } else {
                print!("{}", braid_lab::render_status(&status));
            }
        }
        LabCommand::Set { name, path, spec } => {
            braid_lab::set(&name, &path, &spec)?;
            println!("path {path} now {spec}");
        }
        LabCommand::Down { name } => {
            let removed = braid_lab::down(&name)?;
            if removed.is_empty() {
                println!("no lab {name:?}: nothing to remove");
            }
            for what in removed {
                println!("removed {what}");
            }
        }
        LabCommand::Emulate { state } => braid_lab::emulator::run(&state)?,
    }
    Ok(ExitCode::SUCCESS)
}
