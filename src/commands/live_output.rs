//! The sink the two live commands (`steptop LOG` and `replay`) share: the live view or
//! headless lines, with the metrics endpoint beside either, fed from one inbox.

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::{Receiver, Sender, SyncSender};

use super::cli::{FailOn, OutputArgs, WatchArgs};
use super::{run_label, run_paths};
use crate::common::error::Error;
use crate::diagnose;
use crate::input::metric_files::Kind;
use crate::input::replay;
use crate::input::{FollowOptions, InputSpec, follow, follow_metric_files};
use crate::model::ModelConfig;
use crate::model::job::{JobIdentity, NodeIdentity};
use crate::monitor;
use crate::monitor::msg::{self, Msg};
use crate::probe;
use crate::settings::config::Config;
use crate::settings::theme;
use crate::sink::headless::Exec;
use crate::sink::{compare, exposition, headless, ui};

/// The inbox a sink reads, and where its input comes from.
pub(super) struct Feeding {
    /// For the sink's own producers (keys, signals).
    pub tx: SyncSender<Msg>,
    pub inbox: Receiver<Msg>,
    pub mode: Mode,
    /// Why no probe reads the hardware, when none does.
    pub probes_off: Option<&'static str>,
}

/// Followed files, or a replay: then time is the replayed time, and the input ends.
pub(super) enum Mode {
    Live,
    Replay {
        /// Its controls and starting speed, for the live view's keys (headless: none).
        control: Option<(Sender<replay::pacer::Control>, replay::pacer::Speed)>,
        /// Its `--from`.
        from: Option<u64>,
    },
}

/// Follows `inputs` and `metric_files` and, unless `--no-probe`, reads the hardware and the
/// trainer's stacks, all into one inbox: what `steptop LOG` and `steptop run` watch.
/// `trainer` says how the sampler finds the trainer (`pid`, `job` or `logs`); the rest comes
/// from `w` and `config`. Metric files, when there are any, give the run's steps.
pub(super) fn watch(
    inputs: Vec<InputSpec>,
    metric_files: Vec<(std::path::PathBuf, Kind)>,
    w: &WatchArgs,
    config: &Config,
    trainer: probe::SamplerOptions,
    stop: &Arc<AtomicBool>,
) -> Result<Feeding, Error> {
    let (tx, inbox) = msg::inbox();
    let fail = |what: &str, e: std::io::Error| Error::Runtime(format!("cannot start {what}: {e}"));
    let metrics = metric_files.len();
    if metrics > 0 {
        follow_metric_files::spawn(
            metric_files,
            (config.patterns.clone(), config.tags.clone()),
            w.no_probe,
            stop.clone(),
            tx.clone(),
        )
        .map_err(|e| fail("the metric file thread", e))?;
    }
    // Metric files alone need no log follower (it would say it has nothing to follow).
    if !inputs.is_empty() || metrics == 0 {
        follow::spawn(
            inputs,
            FollowOptions {
                poll: std::time::Duration::from_millis(config.poll_ms),
                first_source: metrics,
                steps_elsewhere: metrics > 0,
                ..FollowOptions::default()
            },
            config.patterns.clone(),
            stop.clone(),
            tx.clone(),
        )
        .map_err(|e| fail("the log reader thread", e))?;
    }
    if !w.no_probe {
        let opts = probe::SamplerOptions {
            interval: w.interval,
            gpus: w.gpus.clone(),
            gpm: w.gpm,
            stacks: config.stacks.clone().filter(|_| !w.no_stacks),
            ..trainer
        };
        probe::spawn(opts, tx.clone()).map_err(|e| fail("the sampler thread", e))?;
    }
    Ok(Feeding {
        tx,
        inbox,
        mode: Mode::Live,
        probes_off: w.no_probe.then_some("probes off (--no-probe)"),
    })
}

/// Options that cannot work here, checked before any thread starts or the terminal changes.
pub(super) fn check_output(out: &OutputArgs) -> Result<(), Error> {
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
pub(super) fn sink(
    out: &OutputArgs,
    theme: Option<&str>,
    config: Config,
    feeding: Feeding,
) -> Result<(), Error> {
    // A replayed run may come from another machine and job: its host is the one given, and
    // its job the one its recording read from the trainer.
    let replay = matches!(feeding.mode, Mode::Replay { .. });
    let node = NodeIdentity {
        host: match &out.host {
            Some(h) => Some(h.clone()),
            None if replay => None,
            None => Some(host_name()),
        },
        own_job: if replay {
            JobIdentity::default()
        } else {
            probe::environ::own_job()
        },
    };
    let metrics = match out.metrics_addr {
        Some(addr) => {
            let endpoint = exposition::Endpoint::new(node.clone());
            let bound = exposition::server::serve(addr, endpoint.clone())?;
            // On stderr: stdout is headless lines. With port 0 this is how to find the port.
            eprintln!("steptop: metrics on http://{bound}/metrics");
            Some(exposition::Publisher::new(endpoint))
        }
        None => None,
    };
    // Headless lines and the metrics draw no chart and no log pane: no chart series is kept
    // for them, and only the log lines a rule quotes.
    let model = ModelConfig {
        charts: !out.headless,
        pane: !out.headless,
        ..config.model
    };
    let mut mon = monitor::Monitor::new(model, config.diagnose.clone());
    if let Some(run) = &out.baseline {
        let label = run_label(run);
        mon.baseline = Some(compare::baseline::read(label, &run_paths(run)?, &config)?);
    }
    if out.headless {
        ui::producers::spawn_signals(feeding.tx, false)
            .map_err(|e| Error::Runtime(format!("cannot start the signal thread: {e}")))?;
        return headless::run(
            headless::Headless {
                format: out.format,
                status_every: out.status_every,
                exec: out.exec.clone().map(|cmd| Exec {
                    cmd,
                    timeout: out.exec_timeout,
                    min: out.exec_min_severity.severity(),
                }),
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
                node,
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

/// This machine's name, for the `host` label and headless lines.
fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_else(|| "unknown".into())
}
