//! steptop: where each training step's time goes, from the logs a training job already writes.
//!
//! Data flows one way: bytes -> `source` -> `parse` (typed records) -> `feed` (time, rank)
//! -> `model` -> a sink (`report`). Whole files go through `ingest`; live logs through the
//! source thread in `follow`, the inbox of `msg::Msg`, and the `monitor`. The mode is chosen
//! here, in `run`, and nowhere else.

pub mod cli;
pub mod config;
pub mod diagnose;
pub mod error;
pub mod feed;
pub mod follow;
pub mod ingest;
pub mod loglines;
pub mod model;
pub mod monitor;
pub mod msg;
pub mod parse;
pub mod probe;
pub mod recording;
pub mod replay;
pub mod report;
pub mod source;
pub mod theme;
pub mod ui;
pub mod units;

use std::io::Write;
use std::path::PathBuf;

use std::io::IsTerminal;

use cli::{Cli, Command, LiveArgs, ProbeArgs, ProbeFormat, ReportArgs, ReportFormat};
use config::Config;
use error::Error;

/// Runs one command to completion.
pub fn run(cli: Cli) -> Result<(), Error> {
    match cli.command {
        Some(Command::Report(args)) => report_command(&args),
        Some(Command::Probe(args)) => probe_command(&args),
        None => live_command(&cli.live),
    }
}

fn live_command(args: &LiveArgs) -> Result<(), Error> {
    let no_color = std::env::var("NO_COLOR").ok();
    let theme = theme::Theme::choose(args.theme.as_deref(), no_color.as_deref())?;
    let config = match &args.config {
        Some(path) => Config::load(path)?,
        None => Config::default_checked(),
    };
    let inputs = args
        .logs
        .iter()
        .map(|l| source::InputSpec::parse(l).map_err(Error::Usage))
        .collect::<Result<Vec<_>, _>>()?;
    // Checked before anything touches the terminal: the full-screen view needs one.
    if !std::io::stdout().is_terminal() {
        return Err(Error::Usage(
            "steptop LOG shows a live full-screen view and stdout is not a terminal; \
             for a summary without a terminal use `steptop report LOG`"
                .into(),
        ));
    }
    let sampler = (!args.no_probe).then(|| probe::SamplerOptions {
        interval: args.interval,
        gpus: args.gpus.clone(),
        gpm: args.gpm,
        pid: args.pid,
        logs: args.logs.iter().map(PathBuf::from).collect(),
        ..probe::SamplerOptions::default()
    });
    ui::run(ui::LiveOptions {
        follow: source::FollowOptions {
            poll: std::time::Duration::from_millis(config.poll_ms),
            ..source::FollowOptions::default()
        },
        inputs,
        config,
        sampler,
        themes: ui::theme_cycle(theme)?,
    })
}

fn probe_command(args: &ProbeArgs) -> Result<(), Error> {
    if let Some(pid) = args.pid
        && !std::path::Path::new("/proc").join(pid.to_string()).exists()
    {
        return Err(Error::Usage(format!("--pid {pid}: no such process")));
    }
    let opts = probe::SamplerOptions {
        interval: args.interval,
        // --once reads everything on both of its readings.
        slow_every: if args.once { 1 } else { 5 },
        gpus: args.gpus.clone(),
        gpm: args.gpm,
        pid: args.pid,
        logs: args.logs.clone(),
        ..probe::SamplerOptions::default()
    };
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
            .map(|l| source::InputSpec::parse(&l.to_string_lossy()).map_err(Error::Usage))
            .collect::<Result<Vec<_>, _>>()?;
        follow::spawn(
            inputs,
            source::FollowOptions::default(),
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
    let mut samples = 0;
    for msg in inbox {
        if let Some(r) = &mut recorder {
            r.record(&msg)?;
        }
        let s = match msg {
            msg::Msg::Sample(s) => s,
            msg::Msg::SourceStopped { reason } => return Err(Error::Runtime(reason)),
            _ => continue,
        };
        samples += 1;
        if samples == 1 {
            continue;
        }
        let mut text = match args.format {
            ProbeFormat::Text => report::probe::text(&s),
            ProbeFormat::Json => {
                report::probe::json(&s).map_err(|e| Error::Runtime(e.to_string()))?
            }
        };
        // Text readings are set apart by a blank line; JSON is one object per line.
        if !args.once || args.format == ProbeFormat::Json {
            text.push('\n');
        }
        if !write_stdout(&text)? || args.once {
            return Ok(());
        }
    }
    Err(Error::Runtime("the sampler thread stopped".into()))
}

fn report_command(args: &ReportArgs) -> Result<(), Error> {
    let cfg = match &args.config {
        Some(path) => Config::load(path)?,
        None => Config::default_checked(),
    };
    let paths = expand_inputs(&args.logs)?;
    let analysis = report::analyze(&paths, &cfg)?;
    let r = report::Report::build(&analysis);
    let text = match args.format {
        ReportFormat::Text => report::render_text(&r),
        ReportFormat::Markdown => report::render_markdown(&r),
        ReportFormat::Json => {
            let mut s =
                serde_json::to_string_pretty(&r).map_err(|e| Error::Runtime(e.to_string()))?;
            s.push('\n');
            s
        }
    };
    write_stdout(&text).map(|_| ())
}

/// Paths and globs to the files that exist now, in the order given; a missing file or a glob
/// that matches nothing is an error naming it (report reads what is there; following waits).
fn expand_inputs(inputs: &[String]) -> Result<Vec<PathBuf>, Error> {
    let mut paths = Vec::new();
    for input in inputs {
        let spec = source::InputSpec::parse(input).map_err(Error::Usage)?;
        let found = spec.expand();
        if found.is_empty() {
            return Err(Error::Runtime(format!(
                "'{input}': no such file (nothing matches)"
            )));
        }
        for p in found {
            if !paths.contains(&p) {
                paths.push(p);
            }
        }
    }
    Ok(paths)
}

/// Writes to stdout; a closed pipe (`| head`) ends quietly. False when the pipe is closed.
fn write_stdout(text: &str) -> Result<bool, Error> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(false),
        Err(e) => Err(Error::Runtime(format!("cannot write the report: {e}"))),
    }
}
