//! `steptop LOG...`: follows the logs and reads the GPUs, the host and the trainer live.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use super::cli::LiveArgs;
use super::load_config;
use super::sink::{Feeding, Mode, check_output, sink};
use crate::common::error::Error;
use crate::input::{self, follow};
use crate::monitor::msg;
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
    let (tx, inbox) = msg::inbox();
    let stop = Arc::new(AtomicBool::new(false));
    let fail = |what: &str, e: std::io::Error| Error::Runtime(format!("cannot start {what}: {e}"));
    follow::spawn(
        inputs,
        input::FollowOptions {
            poll: std::time::Duration::from_millis(config.poll_ms),
            ..input::FollowOptions::default()
        },
        config.patterns.clone(),
        stop.clone(),
        tx.clone(),
    )
    .map_err(|e| fail("the log reader thread", e))?;
    if !args.watch.no_probe {
        let opts = probe::SamplerOptions {
            interval: args.watch.interval,
            gpus: args.watch.gpus.clone(),
            gpm: args.watch.gpm,
            pid: args.pid.or(args.out.until_exit),
            logs: args.logs.iter().map(PathBuf::from).collect(),
            stacks: config.stacks.clone().filter(|_| !args.watch.no_stacks),
            ..probe::SamplerOptions::default()
        };
        probe::spawn(opts, tx.clone()).map_err(|e| fail("the sampler thread", e))?;
    }
    let feeding = Feeding {
        tx,
        inbox,
        mode: Mode::Live,
        probes_off: args.watch.no_probe.then_some("probes off (--no-probe)"),
    };
    let result = sink(&args.out, args.watch.theme.as_deref(), config, feeding);
    stop.store(true, Ordering::SeqCst);
    result
}
