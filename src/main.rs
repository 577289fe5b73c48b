//! The binary: parse arguments, run the library, print `error: ...` and exit with its code.

use std::process::ExitCode;

use clap::Parser;

/// See Cargo.toml: measured faster than the system's allocator on the bulk path.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    let cli = steptop::Cli::parse();
    match steptop::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e @ (steptop::Error::Alerted(_) | steptop::Error::Job(_))) => {
            eprintln!("steptop: {e}");
            ExitCode::from(e.exit_code())
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}
