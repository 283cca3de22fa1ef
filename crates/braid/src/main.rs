//! braid: multipath bonding. This binary runs the tunnel's daemons
//! (`client`, `server`, `status`, `genkey`, `pubkey`), the reliable transfer
//! (`send`, `recv`), the simulator (`bench`, `demo`) and the
//! network-namespace lab (`lab`).

mod bench;
mod config;
mod daemon;
mod demo;
mod demo_lab;
mod keys_cmd;
mod lab_cmd;
mod lab_tunnel;
mod plot;
mod status_cmd;
mod table;
mod transfer;

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
    /// Bond an embedded DSL + LTE example and compare it with each line alone: as root through the
    /// real tunnel in an emulated lab, otherwise in the simulator
    Demo(demo::DemoArgs),
    /// Simulate bonding over paths you describe and report goodput, loss and reordering
    Bench(bench::BenchArgs),
    /// Emulated multi-path testbed in network namespaces (needs root)
    Lab(lab_cmd::LabArgs),
    /// Run the client end of a bonded tunnel (needs root: it creates a TUN device)
    Client(daemon::client::ClientArgs),
    /// Run the server end of bonded tunnels (needs root: it creates a TUN device)
    Server(daemon::server::ServerArgs),
    /// Send files (or stdin) to `braid recv` over several paths at once, encrypted
    Send(transfer::send::SendArgs),
    /// Receive one transfer from `braid send` into a directory (or stdout)
    Recv(transfer::recv::RecvArgs),
    /// Show a running client's or server's paths and sessions
    Status(status_cmd::StatusArgs),
    /// Print a new private key (base64) for a client or server config
    Genkey,
    /// Read a private key on stdin and print its public key
    Pubkey,
}

/// A failure and the exit status it maps to: 2 for bad input, 1 at run time.
#[derive(Debug)]
pub enum Failure {
    Usage(String),
    Runtime(String),
}

/// Output that cannot be written (a full disk, a closed file) is a run-time
/// failure with one line; a closed pipe never gets here (see `main`).
pub fn write_stdout(text: &str) -> Result<(), Failure> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| Failure::Runtime(format!("cannot write output: {e}")))
}

/// Why datagrams cannot be sent to `addr`, a peer's address from the user,
/// if they cannot: port 0 or an unspecified address would be accepted by
/// the socket and reach nobody; a multicast or the broadcast address
/// reaches no one peer (a session has one).
pub(crate) fn unsendable(addr: std::net::SocketAddr) -> Option<&'static str> {
    use config::values::SpecialAddr;
    if addr.port() == 0 {
        return Some("port 0 is no peer's port");
    }
    match SpecialAddr::of(addr.ip()) {
        Some(SpecialAddr::Unspecified) => {
            Some("an unspecified address (0.0.0.0 or ::) is no peer's address")
        }
        Some(SpecialAddr::Multicast) => Some("a multicast address is no peer's address"),
        Some(SpecialAddr::Broadcast) => Some("the broadcast address is no peer's address"),
        _ => None,
    }
}

/// Restores the default action of SIGPIPE, which Rust sets to "ignore":
/// like every Unix filter, `braid demo | head -1` then ends quietly when the
/// reader goes away, in every subcommand, instead of failing on a write.
fn exit_quietly_on_closed_pipe() {
    // SAFETY: called first thing in main, before any other thread exists;
    // SIG_DFL is a valid disposition for SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// Makes a write to a closed pipe an error (EPIPE) again instead of the
/// end of the process: for `braid recv --stdout`, whose sender must be told
/// that its data has nowhere to go.
pub(crate) fn fail_on_closed_pipe() {
    // SAFETY: called before the subcommand starts any thread; SIG_IGN is a
    // valid disposition for SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
}

fn main() -> ExitCode {
    exit_quietly_on_closed_pipe();
    let cli = Cli::parse();
    let result = match cli.cmd {
        Command::Demo(args) => demo::run(&args),
        Command::Bench(args) => bench::run(&args),
        Command::Lab(args) => return lab_cmd::run(args),
        Command::Client(args) => daemon::client::run(&args),
        Command::Server(args) => daemon::server::run(&args),
        Command::Send(args) => transfer::send::run(&args),
        Command::Recv(args) => transfer::recv::run(&args),
        Command::Status(args) => status_cmd::run(&args),
        Command::Genkey => keys_cmd::genkey(),
        Command::Pubkey => keys_cmd::pubkey(),
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
