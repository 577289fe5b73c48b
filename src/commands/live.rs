//! `steptop LOG...`: follows the logs and reads the GPUs, the host and the trainer live.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::cli::LiveArgs;
use super::live_output::{check_output, sink, watch};
use super::{load_config, not_a_log, run_dir_files};
use crate::common::error::Error;
use crate::input;
use crate::probe;

/// Runs the live view, or headless lines, until the user or a signal stops it.
pub fn run(args: &LiveArgs) -> Result<(), Error> {
    let config = load_config(args.watch.config.as_deref())?;
    let (inputs, metric_files) = live_inputs(&args.logs)?;
    check_output(&args.out)?;
    let stop = Arc::new(AtomicBool::new(false));
    let trainer = probe::SamplerOptions {
        pid: args.pid.or(args.out.until_exit),
        logs: args.logs.iter().map(PathBuf::from).collect(),
        ..probe::SamplerOptions::default()
    };
    let feeding = watch(inputs, metric_files, &args.watch, &config, trainer, &stop)?;
    let result = sink(&args.out, args.watch.theme.as_deref(), config, feeding);
    stop.store(true, Ordering::SeqCst);
    result
}

/// The logs to follow and the metric files beside them: a run directory gives its own
/// (`input::run_dir`, said on stderr before the view starts), a metric file is one, anything
/// else a log or a glob (a file that does not exist yet is waited for).
fn live_inputs(args: &[String]) -> Result<LiveInputs, Error> {
    let mut logs = Vec::new();
    let mut metric_files = Vec::new();
    for a in args {
        let path = std::path::Path::new(a);
        if path.is_dir() {
            for f in run_dir_files(path)? {
                match input::metric_files::kind_of(&f) {
                    Some(k) => metric_files.push((f, k)),
                    None => logs.push(input::InputSpec::File(f)),
                }
            }
        } else if let Some(k) = input::metric_files::kind_of(path) {
            metric_files.push((path.to_path_buf(), k));
        } else {
            if path.is_file() {
                not_a_log(path)?;
            }
            logs.push(input::InputSpec::parse(a).map_err(Error::Usage)?);
        }
    }
    // The event files of one directory are one writer's, restarted: the first is followed,
    // and reading goes on in each newer one (`metric_files::live`).
    let mut dirs = std::collections::HashSet::new();
    metric_files.retain(|(p, k)| {
        *k != input::metric_files::Kind::Events || dirs.insert(p.parent().map(PathBuf::from))
    });
    Ok((logs, metric_files))
}

type LiveInputs = (
    Vec<input::InputSpec>,
    Vec<(PathBuf, input::metric_files::Kind)>,
);
