//! One file per subcommand, each building its inputs, its monitor and its sink from the
//! parsed arguments (`cli`); `lib.rs` only chooses among them. `sink` is the live view or
//! headless lines that `live`, `run` and `replay` share; the helpers below find the inputs, the
//! config and stdout for all of them.

pub mod cli;
pub mod cluster;
pub mod compare;
pub mod config;
pub mod generated;
pub mod live;
mod live_output;
pub mod probe;
pub mod replay;
pub mod report;
pub mod run;

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::common::display;
use crate::common::error::Error;
use crate::input::{InputSpec, run_dir};
use crate::settings::config::Config;
use crate::settings::user_files;

/// `--config FILE`, else the file the environment names (`user_files`), else the defaults.
pub(super) fn load_config(path: Option<&std::path::Path>) -> Result<Config, Error> {
    user_files::load_config(path, &user_files::Env::from_env())
}

/// The files of one run: a run directory's logs and metric files, else the file or glob's
/// matches.
pub(super) fn run_paths(run: &str) -> Result<Vec<PathBuf>, Error> {
    expand_inputs(&[run.to_string()])
}

/// A run directory's files (`input::run_dir`), saying on stderr what it read and left out.
pub(super) fn run_dir_files(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let found =
        run_dir::discover(dir).map_err(|e| Error::Runtime(format!("'{}': {e}", dir.display())))?;
    if found.files.is_empty() {
        return Err(Error::Runtime(format!(
            "'{}': no log or metric file in it (looked {} folders deep)",
            dir.display(),
            run_dir::MAX_DEPTH
        )));
    }
    eprintln!("{}", display::terminal(&run_dir::summary(dir, &found)));
    Ok(found.files)
}

/// An error naming `path` when it is a file steptop must not read as a log (a tracker's
/// binary file or own diagnostics log); metric files are read as what they are.
pub(super) fn not_a_log(path: &Path) -> Result<(), Error> {
    if crate::input::metric_files::kind_of(path).is_some() {
        return Ok(());
    }
    match crate::input::sniff::not_a_log(path) {
        Some(what) => Err(Error::Usage(format!(
            "'{}' is {what}, not a training log: give the log the job printed (in a W&B run \
             folder, files/output.log)",
            path.display()
        ))),
        None => Ok(()),
    }
}

/// A run's name when none is given: its file or directory name.
pub(super) fn run_label(run: &str) -> String {
    Path::new(run)
        .file_name()
        .map_or_else(|| run.to_string(), |n| n.to_string_lossy().into_owned())
}

/// Paths, globs and run directories to the files that exist now, in the order given; a
/// missing file or a glob that matches nothing is an error naming it (report reads what is
/// there; following waits).
pub(super) fn expand_inputs(inputs: &[String]) -> Result<Vec<PathBuf>, Error> {
    let mut paths = Vec::new();
    for input in inputs {
        let spec = InputSpec::parse(input).map_err(Error::Usage)?;
        let found = spec.expand();
        if found.is_empty() {
            return Err(Error::Runtime(format!(
                "'{input}': no such file (nothing matches)"
            )));
        }
        for p in found {
            let files = if p.is_dir() {
                run_dir_files(&p)?
            } else {
                not_a_log(&p)?;
                vec![p]
            };
            for f in files {
                if !paths.contains(&f) {
                    paths.push(f);
                }
            }
        }
    }
    Ok(paths)
}

/// What a command prints on stdout, by how it is made safe for a terminal.
pub(super) enum Output {
    /// Text for people (text, markdown, HTML, a generated file): through `display::terminal`.
    Text(String),
    /// JSON: through `display::json_terminal`, every value kept.
    Json(String),
    /// Text with steptop's own colours: each run through `display::terminal`, then coloured.
    Painted(display::Painted),
}

/// Writes to stdout, made safe for a terminal whatever its text quotes; a closed pipe
/// (`| head`) ends quietly. False when the pipe is closed.
pub(super) fn write_stdout(output: Output) -> Result<bool, Error> {
    let text = match &output {
        Output::Text(t) => display::terminal(t),
        Output::Json(j) => display::json_terminal(j),
        Output::Painted(p) => std::borrow::Cow::Owned(p.for_terminal()),
    };
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(Error::Runtime(format!("cannot write the report: {e}"))),
    }
}
