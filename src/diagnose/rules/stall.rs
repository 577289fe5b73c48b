//! A run that stopped stepping: hung with the trainer alive, crashed with it gone, finished,
//! or a log of a run that ended long before steptop was started on it; and a start that has
//! logged no step yet. Judged on this machine's clock (the probes' samples, or the live loop's
//! ticks when no probe runs), never the log's own times against it: a log's timestamps carry
//! no zone.

use super::{Needs, Rule, View, p};
use crate::common::units::clock;
use crate::diagnose::params::{Basis, Knobs};
use crate::diagnose::{Finding, Severity};
use crate::model::log_lines::QUOTED;

pub const STALLED: Rule = Rule {
    id: "stalled",
    basis: Basis::Seconds,
    summary: "no new step for many times the usual step time: hung (process alive) or crashed (process gone); a slow start; a log of a run that ended long ago",
    params: &[
        p(
            "factor",
            10.0,
            "usual step times without a step that count as a stall",
        ),
        p("min-seconds", 60.0, "and at least these seconds"),
        p(
            "boundary-seconds",
            900.0,
            "seconds allowed after an eval, checkpoint or epoch end was logged",
        ),
        p(
            "start-seconds",
            600.0,
            "seconds of readings without any step that count as a slow start",
        ),
        p(
            "idle-pct",
            5.0,
            "GPU utilization % under which the GPUs count as idle",
        ),
        p(
            "ended-seconds",
            86400.0,
            "seconds by which the log's last step (its own clock) precedes steptop's start for a run that ended long ago; a day, since a log's times carry no zone",
        ),
    ],
    detail: false,
    hidden_by: &["crash_event"],
    needs: Needs::NOTHING,
    check: stalled,
};

/// How the run stopped, as far as the readings and the log tell.
enum Stop {
    /// The trainer the probes watched is gone.
    Exited,
    /// The trainer is alive and its GPUs idle.
    Hung,
    /// The log printed the run's summary: it finished.
    Finished,
    /// The log's last step came long before steptop started (seconds before).
    EndedLongAgo(f64),
    /// Nothing tells more than that no step came.
    Quiet,
}

fn stalled(v: &View, k: &Knobs) -> Option<Finding> {
    let (first, now) = (v.m.wall.first?, v.m.wall.now?);
    let t = &v.m.timeline;
    let Some(seen) = t.step_seen(&v.m.wall) else {
        return slow_start(v, k, now - first);
    };
    let gap = now - seen;
    let usual =
        v.m.merged
            .step_time_ms
            .recent
            .last_n(20)
            .map(|s| s.p50 / 1000.0);
    let limit = match (t.pending, usual) {
        (Some(_), _) => k.get("boundary-seconds"),
        (None, Some(u)) => (k.get("factor") * u).max(k.get("min-seconds")),
        (None, None) => k.get("min-seconds"),
    };
    // The log's own time of its last step, when it has times and the step was in the history.
    let logged_at = t.last_time.filter(|_| !t.step_live);
    let ended = logged_at
        .map(|at| first - at)
        .filter(|ago| *ago >= k.get("ended-seconds"));
    if gap < limit && ended.is_none() {
        return None;
    }
    let latest = v.latest();
    let seen_trainer = v.m.hardware.recent.iter().find_map(|s| s.trainer.as_ref());
    let trainer = latest.and_then(|s| s.trainer.as_ref());
    let idle = v.gpu_util().is_some_and(|u| u < k.get("idle-pct"));
    let stop = if latest.is_some() && trainer.is_none() && seen_trainer.is_some() {
        Stop::Exited
    } else if v.m.summary.runtime_s.is_some() {
        Stop::Finished
    } else if let Some(ago) = ended {
        Stop::EndedLongAgo(ago)
    } else if trainer.is_some() && idle {
        Stop::Hung
    } else {
        Stop::Quiet
    };
    let severity = match stop {
        Stop::Finished | Stop::EndedLongAgo(_) => Severity::Info,
        Stop::Exited => Severity::Crit,
        Stop::Hung | Stop::Quiet if gap >= 3.0 * limit => Severity::Crit,
        Stop::Hung | Stop::Quiet => Severity::Warn,
    };
    let since = || {
        if t.step_live {
            format!("for {}", duration(gap))
        } else {
            format!("since steptop started {} ago", duration(gap))
        }
    };
    let title = || match stop {
        Stop::Exited => format!("the trainer exited: no step {}", since()),
        Stop::Hung => format!(
            "hung: no step {}, the trainer is alive and the GPUs idle",
            since()
        ),
        Stop::Finished => format!(
            "the run finished: its summary was logged, no new step {}",
            since()
        ),
        Stop::EndedLongAgo(ago) => format!(
            "a run that ended long ago: its last step was logged {} before steptop started",
            duration(ago)
        ),
        Stop::Quiet => format!("no new step {}", since()),
    };
    let last =
        v.m.merged
            .last_step
            .map_or("none".into(), |s| s.to_string());
    let mut f = v.enter(severity, title).strength(gap).why(|| {
        let usual = usual.map_or(String::new(), |u| {
            format!(" (a step usually takes {u:.1} s)")
        });
        if t.step_live {
            format!("the last step was {last}, {} ago{usual}", duration(gap))
        } else {
            format!("the last step, {last}, was in the log when steptop started{usual}")
        }
    });
    if let Some(at) = logged_at {
        f = f.why(|| {
            format!(
                "the log's last step was at {} by the log's clock",
                clock(at)
            )
        });
    }
    if let Some(kind) = t.pending {
        f = f.why(|| format!("a {} was logged after it", kind.name()));
    }
    match (trainer, seen_trainer) {
        (Some(tr), _) => {
            f = f.why(|| {
                format!(
                    "the trainer (pid {}) is alive: state {}, {:.0}% CPU",
                    tr.pid,
                    tr.state.as_deref().unwrap_or("?"),
                    tr.cpu_pct.unwrap_or(0.0)
                )
            });
            if let Some(stuck) = super::code::main_stuck(v) {
                f = f.why(|| stuck);
            }
        }
        (None, Some(was)) => {
            f = f.why(|| format!("the trainer (pid {}) is gone", was.pid));
            for line in v.m.log.last(QUOTED) {
                f = f.why(|| format!("log: {}", line.text));
            }
        }
        (None, None) if latest.is_none() => {
            f = f.why(|| {
                "no probe reads this machine: whether the trainer is alive is not known here"
                    .to_string()
            });
        }
        (None, None) => {}
    }
    if let Some(u) = v.gpu_util() {
        f = f.why(|| format!("GPU utilization {u:.0}%"));
    }
    Some(match stop {
        Stop::Exited => f.act(|| "read the end of the log for the error; an exit without one is often the OOM killer: dmesg | grep -i -e oom -e killed"),
        Stop::Finished | Stop::EndedLongAgo(_) => f
            .act(|| "nothing to fix if the run is over: `steptop report LOG` summarises it")
            .act(|| "to watch a run that is going on, point steptop at the log it writes now"),
        Stop::Hung | Stop::Quiet => f
            .act(|| {
                let pid = trainer
                    .or(seen_trainer)
                    .map_or("PID".to_string(), |t| t.pid.to_string());
                format!("py-spy dump --pid {pid} shows where every thread of the trainer waits")
            })
            .act(|| "a GPU busy with no progress is often a collective waiting for a rank: NCCL_DEBUG=INFO, and a timeout in init_process_group")
            .act(|| "a long eval or checkpoint looks the same: [rules.stalled] boundary-seconds sets how long one may take"),
    })
}

/// Time passes (readings or ticks), no step yet.
fn slow_start(v: &View, k: &Knobs, waited: f64) -> Option<Finding> {
    if waited < k.get("start-seconds") {
        return None;
    }
    let mut f = v
        .enter(Severity::Info, || {
            format!("no step logged yet after {}", duration(waited))
        })
        .why(|| {
            format!(
                "steptop has watched for {}, no step line in the logs",
                duration(waited)
            )
        });
    if let Some(tr) = v.trainer() {
        f = f.why(|| {
            format!(
                "the trainer (pid {}) is at {:.0}% CPU",
                tr.pid,
                tr.cpu_pct.unwrap_or(0.0)
            )
        });
    }
    if let Some(u) = v.gpu_util() {
        f = f.why(|| format!("GPU utilization {u:.0}%"));
    }
    Some(
        f.act(|| "a first step is often slow: dataset indexing, torch.compile, cudnn autotuning")
            .act(
                || "if the log is not the one the trainer writes, point steptop at the right file",
            ),
    )
}

fn duration(s: f64) -> String {
    if s >= 2.0 * 86400.0 {
        format!("{:.0} days", s / 86400.0)
    } else if s >= 3600.0 {
        format!("{:.1} h", s / 3600.0)
    } else if s >= 120.0 {
        format!("{:.0} min", s / 60.0)
    } else {
        format!("{s:.0} s")
    }
}
