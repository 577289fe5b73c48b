//! steptop: where each training step's time goes, from the logs a training job already writes.
//!
//! Data flows one way: bytes -> `source` -> `parse` (typed records) -> `feed` (time, rank)
//! -> `monitor` (model and diagnosis) -> a sink. Lines already written (a report's files, a
//! replay, a followed file's history) go through `ingest` in blocks; lines that arrive live,
//! one by one, through the same feed. Live logs come from the source thread in `follow`,
//! finished ones from `replay`, both into the inbox of `msg::Msg` and the `monitor`, then the
//! live view (`ui`) or `headless` lines, with `metrics` beside either; `report` feeds a
//! monitor directly. The mode is chosen here, in `run`, and nowhere else.

pub mod cli;
pub mod compare;
pub mod config;
pub mod diagnose;
pub mod display;
pub mod error;
pub mod feed;
pub mod follow;
pub mod headless;
pub mod ingest;
pub mod loglines;
pub mod metrics;
pub mod model;
pub mod monitor;
pub mod msg;
pub mod parse;
pub mod probe;
pub mod recording;
pub mod replay;
pub mod report;
pub mod sample;
pub mod source;
pub mod theme;
pub mod ui;
pub mod units;
pub mod unparsed;
pub mod user_files;

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, Sender, SyncSender};

use cli::{
    Cli, Command, CompareArgs, CompareFormat, FailOn, LiveArgs, OutputArgs, ProbeArgs, ProbeFormat,
    ReplayArgs, ReportArgs, ReportFormat,
};
use config::Config;
use error::Error;
use msg::Msg;

/// Runs one command to completion.
pub fn run(cli: Cli) -> Result<(), Error> {
    match cli.command {
        Some(Command::Report(args)) => report_command(&args),
        Some(Command::Compare(args)) => compare_command(&args),
        Some(Command::Probe(args)) => probe_command(&args),
        Some(Command::Replay(args)) => replay_command(&args),
        Some(Command::Config(args)) => config_command(&args),
        Some(what @ (Command::Completions { .. } | Command::Man)) => generated_command(&what),
        None => live_command(&cli.live),
    }
}

fn live_command(args: &LiveArgs) -> Result<(), Error> {
    let config = load_config(args.config.as_deref())?;
    let inputs = args
        .logs
        .iter()
        .map(|l| source::InputSpec::parse(l).map_err(Error::Usage))
        .collect::<Result<Vec<_>, _>>()?;
    check_output(&args.out)?;
    let (tx, inbox) = msg::inbox();
    let stop = Arc::new(AtomicBool::new(false));
    let fail = |what: &str, e: std::io::Error| Error::Runtime(format!("cannot start {what}: {e}"));
    follow::spawn(
        inputs,
        source::FollowOptions {
            poll: std::time::Duration::from_millis(config.poll_ms),
            ..source::FollowOptions::default()
        },
        config.patterns.clone(),
        stop.clone(),
        tx.clone(),
    )
    .map_err(|e| fail("the log reader thread", e))?;
    if !args.no_probe {
        let opts = probe::SamplerOptions {
            interval: args.interval,
            gpus: args.gpus.clone(),
            gpm: args.gpm,
            pid: args.pid.or(args.out.until_exit),
            logs: args.logs.iter().map(PathBuf::from).collect(),
            ..probe::SamplerOptions::default()
        };
        probe::spawn(opts, tx.clone()).map_err(|e| fail("the sampler thread", e))?;
    }
    let feeding = Feeding {
        tx,
        inbox,
        mode: Mode::Live,
        probes_off: args.no_probe.then_some("probes off (--no-probe)"),
    };
    let result = sink(&args.out, args.theme.as_deref(), config, feeding);
    stop.store(true, Ordering::SeqCst);
    result
}

fn replay_command(args: &ReplayArgs) -> Result<(), Error> {
    let config = load_config(args.config.as_deref())?;
    let paths = expand_inputs(&args.logs)?;
    check_output(&args.out)?;
    let (tx, inbox) = msg::inbox();
    let (control, controls) = std::sync::mpsc::channel();
    replay::pace::spawn(
        replay::pace::Replay {
            paths,
            patterns: config.patterns.clone(),
            speed: args.speed,
            from: args.from,
        },
        tx.clone(),
        controls,
    )
    .map_err(|e| Error::Runtime(format!("cannot start the replay thread: {e}")))?;
    // Headless, nothing steers the replay: its controls hang up and it only keeps time.
    let feeding = Feeding {
        tx,
        inbox,
        mode: Mode::Replay {
            control: (!args.out.headless).then_some((control, args.speed)),
            from: args.from,
        },
        // A recording brings its readings with it; plain logs have none.
        probes_off: Some("no probe in a replay of logs"),
    };
    sink(&args.out, args.theme.as_deref(), config, feeding)
}

/// The inbox a sink reads, and where its input comes from.
struct Feeding {
    /// For the sink's own producers (keys, signals).
    tx: SyncSender<Msg>,
    inbox: Receiver<Msg>,
    mode: Mode,
    /// Why no probe reads the hardware, when none does.
    probes_off: Option<&'static str>,
}

/// Followed files, or a replay: then time is the replayed time, and the input ends.
enum Mode {
    Live,
    Replay {
        /// Its controls and starting speed, for the live view's keys (headless: none).
        control: Option<(Sender<replay::pace::Control>, replay::pace::Speed)>,
        /// Its `--from`.
        from: Option<u64>,
    },
}

/// Options that cannot work here, checked before any thread starts or the terminal changes.
fn check_output(out: &OutputArgs) -> Result<(), Error> {
    if !out.headless && !std::io::stdout().is_terminal() {
        return Err(Error::Usage(
            "the live view needs a terminal and stdout is not one; add --headless for one \
             line per alert change, or use `steptop report LOG` for a summary"
                .into(),
        ));
    }
    if let Some(pid) = out.until_exit
        && !probe::process::running(pid)
    {
        return Err(Error::Usage(format!("--until-exit {pid}: no such process")));
    }
    Ok(())
}

/// The live view or headless lines, with the metrics endpoint beside either.
fn sink(
    out: &OutputArgs,
    theme: Option<&str>,
    config: Config,
    feeding: Feeding,
) -> Result<(), Error> {
    let host = match &out.host {
        Some(h) => Some(h.clone()),
        None if matches!(feeding.mode, Mode::Replay { .. }) => None,
        None => Some(host_name()),
    };
    let metrics = match out.metrics_addr {
        Some(addr) => {
            let endpoint = metrics::Endpoint::new(host.as_deref());
            let bound = metrics::server::serve(addr, endpoint.clone())?;
            // On stderr: stdout is headless lines. With port 0 this is how to find the port.
            eprintln!("steptop: metrics on http://{bound}/metrics");
            Some(metrics::Publisher::new(endpoint))
        }
        None => None,
    };
    let mut mon = monitor::Monitor::new(config.model, config.diagnose.clone());
    if let Some(run) = &out.baseline {
        let label = run_label(run);
        mon.baseline = Some(compare::baseline::read(label, &run_paths(run)?, &config)?);
    }
    if out.headless {
        ui::input::spawn_signals(feeding.tx, false)
            .map_err(|e| Error::Runtime(format!("cannot start the signal thread: {e}")))?;
        return headless::run(
            headless::Headless {
                format: out.format,
                status_every: out.status_every,
                exec: out.exec.clone().map(|cmd| (cmd, out.exec_timeout)),
                fail_on: out.fail_on.map(|f| match f {
                    FailOn::Warn => diagnose::Severity::Warn,
                    FailOn::Crit => diagnose::Severity::Crit,
                }),
                until_exit: out.until_exit,
                replay: matches!(feeding.mode, Mode::Replay { .. }),
                from: match feeding.mode {
                    Mode::Replay { from, .. } => from,
                    Mode::Live => None,
                },
                host,
                metrics,
            },
            mon,
            &feeding.inbox,
        );
    }
    let no_color = std::env::var("NO_COLOR").ok();
    let theme = theme::Theme::choose(theme, no_color.as_deref())?;
    ui::run(ui::LiveOptions {
        mon,
        tx: feeding.tx,
        inbox: feeding.inbox,
        replay: match feeding.mode {
            Mode::Replay { control, .. } => control,
            Mode::Live => None,
        },
        themes: ui::theme_cycle(theme)?,
        metrics,
        probes_off: feeding.probes_off,
    })
}

/// `--config FILE`, else the file the environment names (`user_files`), else the defaults.
fn load_config(path: Option<&std::path::Path>) -> Result<Config, Error> {
    user_files::load_config(path, &user_files::Env::from_env())
}

/// The runs one input holds (a log with appended runs, restarts or resumes), to compare
/// side by side; an input with one run is not enough to compare.
fn runs_of(
    input: &compare::RunInput,
    labels: &[String],
    cfg: &Config,
) -> Result<Vec<compare::RunInput>, Error> {
    let a = report::analyze(&input.paths, cfg)?;
    let earlier = &a.model.runs;
    if earlier.is_empty() {
        return Err(Error::Usage(format!(
            "{} holds one run: compare needs two or more runs, or one file that holds several \
             (appended runs, restarts)",
            input.label
        )));
    }
    let last_first = a.model.run_lines.map(|(_, first, _)| first);
    let lines = earlier
        .iter()
        .map(|r| Some(r.first_line))
        .chain([last_first]);
    Ok(lines
        .enumerate()
        .map(|(k, first)| compare::RunInput {
            label: labels.get(k).cloned().unwrap_or_else(|| match first {
                Some(line) => format!("run {} (line {line})", k + 1),
                None => format!("run {}", k + 1),
            }),
            paths: input.paths.clone(),
            run: Some(k),
        })
        .collect())
}

/// `steptop config`: where the config file is looked for, or the documented defaults.
fn config_command(args: &cli::ConfigArgs) -> Result<(), Error> {
    if args.default {
        write_stdout(user_files::DEFAULT_CONFIG)?;
        return Ok(());
    }
    let (path, about) = user_files::describe_lookup(&user_files::Env::from_env());
    eprint!("{about}");
    write_stdout(&path)?;
    Ok(())
}

/// `steptop completions SHELL` and `steptop man`, from the same definitions as the parser.
fn generated_command(what: &Command) -> Result<(), Error> {
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
    write_stdout(&String::from_utf8_lossy(&out))?;
    Ok(())
}

/// This machine's name, for the `host` label and headless lines.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown".into())
}

fn probe_command(args: &ProbeArgs) -> Result<(), Error> {
    if let Some(pid) = args.pid
        && !probe::process::running(pid)
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
    let cfg = load_config(args.config.as_deref())?;
    let paths = expand_inputs(&args.logs)?;
    let analysis = report::analyze(&paths, &cfg)?;
    let r = report::Report::build(&analysis);
    let text = match args.format {
        ReportFormat::Text => report::render_text(&r),
        ReportFormat::Markdown => report::render_markdown(&r),
        ReportFormat::Html => report::render_html(&r, &report::Curves::of(&analysis.model)),
        ReportFormat::Json => {
            let mut s =
                serde_json::to_string_pretty(&r).map_err(|e| Error::Runtime(e.to_string()))?;
            s.push('\n');
            s
        }
    };
    write_stdout(&text).map(|_| ())
}

fn compare_command(args: &CompareArgs) -> Result<(), Error> {
    let cfg = load_config(args.config.as_deref())?;
    if args.labels.len() > args.runs.len() {
        return Err(Error::Usage(format!(
            "{} --label given for {} runs: one per run at most, in order",
            args.labels.len(),
            args.runs.len()
        )));
    }
    let mut runs = Vec::new();
    for (i, run) in args.runs.iter().enumerate() {
        let label = args
            .labels
            .get(i)
            .cloned()
            .unwrap_or_else(|| run_label(run));
        runs.push(compare::RunInput {
            label,
            paths: run_paths(run)?,
            run: None,
        });
    }
    if let [one] = runs.as_slice() {
        runs = runs_of(one, &args.labels, &cfg)?;
    }
    // Two runs named alike (`a/train.log`, `b/train.log`) are told apart by their directory.
    let alike: Vec<bool> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            args.labels.get(i).is_none() && runs.iter().filter(|o| o.label == r.label).count() > 1
        })
        .collect();
    for (i, run) in runs.iter_mut().enumerate() {
        let Some(input) = args.runs.get(i) else {
            break;
        };
        let parent = Path::new(input).parent().and_then(Path::file_name);
        if let (true, Some(p)) = (alike[i], parent) {
            run.label = format!("{}/{}", p.to_string_lossy(), run.label);
        }
    }
    let c = compare::compare(&runs, &cfg)?;
    let text = match args.format {
        CompareFormat::Text => {
            // Colours only on a terminal, in the theme the live view would use.
            let theme = std::io::stdout()
                .is_terminal()
                .then(|| theme::Theme::choose(None, std::env::var("NO_COLOR").ok().as_deref()).ok())
                .flatten();
            compare::render::text(&c, theme.as_ref())
        }
        CompareFormat::Markdown => compare::render::markdown(&c),
        CompareFormat::Html => compare::html::render(&c),
        CompareFormat::Json => {
            let mut s =
                serde_json::to_string_pretty(&c).map_err(|e| Error::Runtime(e.to_string()))?;
            s.push('\n');
            s
        }
    };
    write_stdout(&text).map(|_| ())
}

/// The files of one run: a directory's files, else the file or glob's matches.
fn run_paths(run: &str) -> Result<Vec<PathBuf>, Error> {
    let path = Path::new(run);
    if !path.is_dir() {
        return expand_inputs(&[run.to_string()]);
    }
    let mut files: Vec<PathBuf> = std::fs::read_dir(path)
        .map_err(|e| Error::Runtime(format!("'{run}': {e}")))?
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(Error::Runtime(format!("'{run}': a directory with no file")));
    }
    Ok(files)
}

/// A run's name when none is given: its file or directory name.
fn run_label(run: &str) -> String {
    Path::new(run)
        .file_name()
        .map_or_else(|| run.to_string(), |n| n.to_string_lossy().into_owned())
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
