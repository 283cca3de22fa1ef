//! braid: multipath bonding. This binary runs the simulator (`bench`,
//! `demo`) and the network-namespace lab (`lab`).

mod bench;
mod demo;
mod lab_cmd;
mod plot;
mod table;

use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser, Debug)]
#[command(
    name = "braid",
    version,
    about = "Multipath bonding: the sum of several network paths, in order",
    long_about = "braid bonds several network paths (DSL + LTE, two ISPs, a handful of modems) \
                  into one logical link.\n\nStart with `braid demo`; measure schedulers with \
                  `braid bench`; build an emulated multi-path testbed with `braid lab`."
)]
struct Cli {
    #[command(subcommand)]
    cmd: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Bond an embedded DSL + LTE example in the simulator and compare it with each line alone
    Demo(demo::DemoArgs),
    /// Simulate bonding over paths you describe and report goodput, loss and reordering
    Bench(bench::BenchArgs),
    /// Emulated multi-path testbed in network namespaces (needs root)
    Lab(lab_cmd::LabArgs),
}

/// A failure and the exit status it maps to: 2 for bad input, 1 at run time.
#[derive(Debug)]
pub enum Failure {
    Usage(String),
    Runtime(String),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.cmd {
        Command::Demo(args) => demo::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::Lab(args) => return lab_cmd::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(msg)) => {
            eprintln!("braid: error: {msg}");
            ExitCode::from(2)
        }
        Err(Failure::Runtime(msg)) => {
            eprintln!("braid: error: {msg}");
            ExitCode::from(1)
        }
    }
}
