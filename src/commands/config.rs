//! `steptop config`: where the config file is looked for, or the documented defaults.

use super::cli::ConfigArgs;
use super::{Output, write_stdout};
use crate::common::display;
use crate::common::error::Error;
use crate::settings::user_files;

/// Prints the config file's path (and how it was found), or the defaults with `--default`.
pub fn run(args: &ConfigArgs) -> Result<(), Error> {
    if args.default {
        write_stdout(Output::Text(user_files::DEFAULT_CONFIG.to_string()))?;
        return Ok(());
    }
    let (path, about) = user_files::describe_lookup(&user_files::Env::from_env());
    eprint!("{}", display::terminal(&about));
    write_stdout(Output::Text(path))?;
    Ok(())
}
