//! `steptop completions SHELL` and `steptop man`, generated from the same definitions as the
//! argument parser.

use super::cli::{Cli, Command};
use super::{Output, write_stdout};
use crate::common::error::Error;

/// Prints the completion script or the man page.
pub fn run(what: &Command) -> Result<(), Error> {
    use clap::CommandFactory;
    let mut cmd = Cli::command();
    let mut out = Vec::new();
    match what {
        Command::Completions { shell } => {
            clap_complete::generate(*shell, &mut cmd, "steptop", &mut out);
        }
        _ => clap_mangen::Man::new(cmd)
            .render(&mut out)
            .map_err(|e| Error::Runtime(format!("cannot write the man page: {e}")))?,
    }
    write_stdout(Output::Text(String::from_utf8_lossy(&out).into_owned()))?;
    Ok(())
}
