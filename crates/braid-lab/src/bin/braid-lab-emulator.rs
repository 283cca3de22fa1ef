//! The lab's emulator as a program of its own: `braid-lab-emulator --state DIR`.
//! `braid lab up` starts the same code as `braid lab _emulate --state DIR`.

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let state_dir = match args.as_slice() {
        [flag, dir] if flag == "--state" => PathBuf::from(dir),
        _ => {
            eprintln!("usage: braid-lab-emulator --state DIR");
            return ExitCode::from(2);
        }
    };
    match braid_lab::emulator::run(&state_dir) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("braid-lab emulator: {e}");
            ExitCode::FAILURE
        }
    }
}
