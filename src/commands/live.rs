//! `steptop LOG...`: follows the logs and reads the GPUs, the host and the trainer live.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::cli::LiveArgs;
use super::load_config;
use super::sink::{check_output, sink, watch};
use crate::common::error::Error;
use crate::input;
use crate::probe;

/// Runs the live view, or headless lines, until the user or a signal stops it.
pub fn run(args: &LiveArgs) -> Result<(), Error> {
    let config = load_config(args.watch.config.as_deref())?;
    let inputs = args
        .logs
        .iter()
        .map(|l| input::InputSpec::parse(l).map_err(Error::Usage))
        .collect::<Result<Vec<_>, _>>()?;
    check_output(&args.out)?;
    let stop = Arc::new(AtomicBool::new(false));
    let trainer = probe::SamplerOptions {
        pid: args.pid.or(args.out.until_exit),
        logs: args.logs.iter().map(PathBuf::from).collect(),
        ..probe::SamplerOptions::default()
    };
    let feeding = watch(inputs, &args.watch, &config, trainer, &stop)?;
    let result = sink(&args.out, args.watch.theme.as_deref(), config, feeding);
    stop.store(true, Ordering::SeqCst);
    result
}
