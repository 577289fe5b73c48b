//! `steptop probe`: what the probes read now (GPUs, host, trainer), once or on a loop,
//! optionally recorded with the logs' lines for a later replay.

use super::cli::{ProbeArgs, ProbeFormat};
use super::{Output, load_config, write_stdout};
use crate::common::error::Error;
use crate::input::{self, follow, recording};
use crate::model::stacks::Stacks;
use crate::monitor::msg;
use crate::probe;

/// The stacks' window in the probe's output.
const STACK_WINDOW_SECONDS: f64 = 30.0;
/// `--once` with stacks: seconds of them before it answers, and readings it waits at most.
const ONCE_STACK_SECONDS: f64 = 3.0;
const ONCE_READINGS_AT_MOST: u32 = 10;
use crate::sink::probe_sample;

/// Prints the probes' readings until the pipe closes (or once, with `--once`).
pub fn run(args: &ProbeArgs) -> Result<(), Error> {
    if let Some(pid) = args.pid
        && !probe::process::running(pid)
    {
        return Err(Error::Usage(format!("--pid {pid}: no such process")));
    }
    let config = load_config(args.config.as_deref())?;
    let opts = probe::SamplerOptions {
        interval: args.interval,
        // --once reads everything on both of its readings.
        slow_every: if args.once { 1 } else { 5 },
        gpus: args.gpus.clone(),
        gpm: args.gpm,
        pid: args.pid,
        logs: args.logs.clone(),
        stacks: config.stacks.clone().filter(|_| !args.no_stacks),
        ..probe::SamplerOptions::default()
    };
    let stacks_on = opts.stacks.is_some();
    let mut stacks = Stacks::default();
    let mut recorder = args
        .record
        .as_deref()
        .map(recording::Recorder::create)
        .transpose()?;
    let (tx, inbox) = msg::inbox();
    // A recording holds the logs' lines too: they are followed from their start, and every
    // message is recorded in the order it arrives, as a live monitor would take them.
    if recorder.is_some() && !args.logs.is_empty() {
        let inputs = args
            .logs
            .iter()
            .map(|l| input::InputSpec::parse(&l.to_string_lossy()).map_err(Error::Usage))
            .collect::<Result<Vec<_>, _>>()?;
        follow::spawn(
            inputs,
            input::FollowOptions::default(),
            std::sync::Arc::default(),
            std::sync::Arc::default(),
            tx.clone(),
        )
        .map_err(|e| Error::Runtime(format!("cannot start the log reader thread: {e}")))?;
    }
    probe::spawn(opts, tx)
        .map_err(|e| Error::Runtime(format!("cannot start the sampler thread: {e}")))?;
    // The first reading only starts the rates; --once prints the second. The threads end at
    // their next message once this inbox is gone.
    let mut samples: u32 = 0;
    for msg in inbox {
        if let Some(r) = &mut recorder {
            r.record(&msg)?;
        }
        let s = match msg {
            msg::Msg::Sample(s) => s,
            msg::Msg::Stacks(reading) => {
                stacks.apply(*reading);
                continue;
            }
            msg::Msg::InputStopped { reason } => return Err(Error::Runtime(reason)),
            _ => continue,
        };
        samples += 1;
        if samples == 1 {
            continue;
        }
        // --once answers with a few seconds of the trainer's stacks, once it is known (and
        // looks like Python: another process is refused only after a few tries).
        if args.once
            && stacks_on
            && s.trainer
                .as_ref()
                .is_some_and(|t| t.command.contains("python"))
            && stacks.span() < ONCE_STACK_SECONDS
            && stacks.refusals.is_empty()
            && samples < ONCE_READINGS_AT_MOST
        {
            continue;
        }
        let summary = (stacks_on && (s.trainer.is_some() || stacks.any()))
            .then(|| stacks.summary(STACK_WINDOW_SECONDS));
        let mut text = match args.format {
            ProbeFormat::Text => probe_sample::text(&s, summary.as_ref()),
            ProbeFormat::Json => probe_sample::json(&s, summary.as_ref())
                .map_err(|e| Error::Runtime(e.to_string()))?,
        };
        // Text readings are set apart by a blank line; JSON is one object per line.
        if !args.once || args.format == ProbeFormat::Json {
            text.push('\n');
        }
        let output = match args.format {
            ProbeFormat::Text => Output::Text(text),
            ProbeFormat::Json => Output::Json(text),
        };
        if !write_stdout(output)? || args.once {
            return Ok(());
        }
    }
    Err(Error::Runtime("the sampler thread stopped".into()))
}
