//! What the trainer's own Python code does, from its sampled stacks: one function that holds
//! the main thread while the GPU waits (the users' seed 003: nested Python loops in every
//! step, a GPU at 100 W of 575 W).

use super::{Needs, Rule, View, grade, p, pct};
use crate::diagnose::params::{Basis, Knobs};
use crate::diagnose::{Finding, Severity};
use crate::model::stacks::{Place, Role};

pub const PYTHON_HOTSPOT: Rule = Rule {
    id: "python_hotspot",
    basis: Basis::Seconds,
    summary: "one function of the user's Python code holds the trainer's main thread in a large share of its sampled stacks, and the step is not data bound",
    params: &[
        p(
            "warn",
            0.30,
            "share of the main thread's samples in one user function at which the rule warns",
        ),
        p(
            "crit",
            0.50,
            "share at which it is critical, while the GPU is underused or not read",
        ),
        p("exit", 0.20, "share under which an active alert clears"),
        p(
            "min-samples",
            20.0,
            "main-thread samples in the window before the rule judges",
        ),
        p(
            "data-share",
            0.20,
            "data_time share at or above which the step counts as data bound instead",
        ),
        p(
            "gpu-util",
            60.0,
            "mean GPU utilization % under which the GPU counts as underused",
        ),
    ],
    detail: false,
    hidden_by: &[
        "crash_event",
        "stalled",
        "data_loading_bound",
        "loader_workers_starved",
    ],
    needs: Needs::NOTHING,
    check: python_hotspot,
};

fn python_hotspot(v: &View, k: &Knobs) -> Option<Finding> {
    let stacks = &v.m.stacks;
    let newest = stacks.latest()?;
    // Samples of a trainer that has gone say nothing of now.
    if v.latest()
        .is_some_and(|s| s.time - newest > v.windows.seconds / 2.0)
    {
        return None;
    }
    let main = stacks.shares(Role::Main, v.windows.seconds);
    if (main.samples as f64) < k.get("min-samples") {
        return None;
    }
    // The function whose own Python runs most: waiting in a call (a GPU sync, a read) is
    // another rule's.
    let top = main.functions.iter().max_by_key(|f| f.running)?;
    let running = top.running as f64 / main.samples as f64;
    if v.data_share().is_some_and(|d| d >= k.get("data-share")) {
        return None;
    }
    let util = v.gpu_util();
    let underused = util.is_none_or(|u| u < k.get("gpu-util"));
    let level = match grade(running, k.get("warn"), k.get("crit"), k.get("exit"))? {
        Some(Severity::Crit) if !underused => Some(Severity::Warn),
        level => level,
    };
    let name = format!("{} ({}:{})", top.function, top.file, top.line);
    let mut f = v
        .graded(level, || format!("{name} holds the training loop's thread"))
        .why(|| {
            format!(
                "{} of the main thread's {} sampled stacks over the last {:.0} s run {name} \
                 (sampled shares are estimates)",
                pct(running),
                main.samples,
                main.seconds
            )
        });
    let waiting = main
        .places
        .iter()
        .find(|(p, _)| *p == Place::WaitingForBatch)
        .map_or(0.0, |(_, s)| *s);
    f = f.why(|| format!("waiting for the next batch: {}", pct(waiting)));
    if let Some(u) = util {
        f = f.why(|| format!("mean GPU utilization {u:.0}%"));
    }
    if let Some(power) = v.gpu_power_share() {
        f = f.why(|| format!("the GPU draws {} of its power limit", pct(power)));
    }
    if underused {
        f = f.gain(running);
    }
    Some(
        f.act(|| {
            format!(
                "vectorise {}: tensor or numpy operations instead of Python loops",
                top.function
            )
        })
        .act(|| {
            "or move it into the Dataset's __getitem__, so that the DataLoader's workers run \
             it in parallel; or compute it once, if its inputs repeat"
        })
        .act(|| "each step waits for it (and a GPU, if any, idles meanwhile): the step cannot be faster than it"),
    )
}

/// The workers' sampled split, for the input rules: reading against computing, and the
/// function that holds them most.
pub(super) fn workers_split(v: &View) -> Option<String> {
    let w = v.m.stacks.shares(Role::Worker, v.windows.seconds);
    if w.samples < 10 {
        return None;
    }
    let share = |place| {
        w.places
            .iter()
            .find(|(p, _)| *p == place)
            .map_or(0.0, |(_, s)| *s)
    };
    let mut text = format!(
        "the DataLoader workers' sampled stacks: reading (waiting on files or the network) {}, \
         computing (decoding, augmenting) {}",
        pct(share(Place::Reading)),
        pct(share(Place::Computing) + share(Place::Collating))
    );
    if let Some(f) = w.functions.first() {
        text.push_str(&format!(
            "; most in {} ({}:{}) {}",
            f.function,
            f.file,
            f.line,
            pct(f.share)
        ));
    }
    Some(text)
}

/// How long the main thread waits in calls from the user's code (a GPU sync, a blocking copy),
/// for the copy rule: None under 5% of its samples.
pub(super) fn main_waits_in_calls(v: &View) -> Option<String> {
    let m = v.m.stacks.shares(Role::Main, v.windows.seconds);
    let blocked: f64 = m
        .places
        .iter()
        .filter(|(p, _)| matches!(p, Place::Blocked | Place::GpuSync))
        .map(|(_, s)| *s)
        .sum();
    // Syncs are named only where a sample was placed at one: a process with no GPU driver
    // loaded waits on no GPU.
    let syncs = m.places.iter().any(|(p, _)| *p == Place::GpuSync);
    if m.samples < 10 || blocked < 0.05 {
        return None;
    }
    let at = m
        .functions
        .iter()
        .max_by_key(|f| f.waiting)
        .map(|f| format!(", most in {} ({}:{})", f.function, f.file, f.line))
        .unwrap_or_default();
    let what = if syncs {
        " (syncs such as .item() or .cpu(), blocking .to())"
    } else {
        ""
    };
    Some(format!(
        "the main thread's sampled stacks wait in calls from its code{what} {}{at}",
        pct(blocked)
    ))
}

/// Where the main thread was at its newest sample, for a stalled run: what it waits in.
pub(super) fn main_stuck(v: &View) -> Option<String> {
    let s = v.m.stacks.last_main.as_ref()?;
    let inner = s.frames.first()?;
    let what = if s
        .frames
        .iter()
        .any(|f| f.path.contains("torch/distributed"))
    {
        " (a collective or a barrier of torch.distributed: another rank may be gone or late)"
    } else if s
        .frames
        .iter()
        .any(|f| f.path.ends_with("/threading.py") && f.function.contains("acquire"))
    {
        " (a lock)"
    } else {
        ""
    };
    let (place, user, _) = crate::model::stacks::classify(s);
    let user = user.map_or(String::new(), |u| {
        format!(", called from {} ({}:{})", u.function, u.file, u.line)
    });
    Some(format!(
        "the main thread's last sampled stack: {} in {} ({}:{}){user}{what}",
        place.words(),
        inner.function,
        inner.file,
        inner.line
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::DiagnoseConfig;
    use crate::diagnose::signals::View;
    use crate::model::stacks::{PyFrame, StackReading, StackSample};
    use crate::model::{Model, ModelConfig};

    /// A model whose main thread spent `hot` of 40 samples in `_generate_targets`.
    fn model(hot: usize) -> Model {
        let mut m = Model::new(ModelConfig::default());
        let frame = |function: &str| PyFrame {
            function: function.into(),
            file: "train.py".into(),
            path: "/home/u/train.py".into(),
            line: 42,
        };
        for i in 0..40 {
            // The rest of the time the loop waits in a call (a GPU sync, a sleep).
            let (active, frames) = if i < hot {
                (true, vec![frame("_generate_targets"), frame("main")])
            } else {
                (false, vec![frame("main")])
            };
            m.stacks.apply(StackReading::Sample(StackSample {
                time: 1000.0 + i as f64,
                pid: 7,
                role: Role::Main,
                active,
                gil: active,
                frames,
                code: None,
                cuda: None,
            }));
        }
        m
    }

    fn check(m: &Model) -> Option<Finding> {
        let cfg = DiagnoseConfig::default();
        let i = crate::diagnose::rules::RULES
            .iter()
            .position(|r| r.id == "python_hotspot")
            .expect("rule");
        python_hotspot(&View::new(m, cfg.windows(), (Vec::new(), 0)), &cfg.rules[i])
    }

    #[test]
    fn a_function_that_holds_the_main_thread_is_named_with_its_share() {
        let f = check(&model(28)).expect("found");
        assert_eq!(
            f.enter,
            Some(Severity::Crit),
            "no GPU reading: it may be the limit"
        );
        assert!(
            f.title.contains("_generate_targets (train.py:42)"),
            "{}",
            f.title
        );
        assert!(
            f.evidence[0].starts_with("70% of the main thread's 40"),
            "{:?}",
            f.evidence
        );
        assert_eq!(f.gain, Some(0.7));
        // Under the exit share: nothing; between exit and warn: an active alert stays.
        assert!(check(&model(6)).is_none());
        let stay = check(&model(10)).expect("stays");
        assert_eq!(stay.enter, None);
    }

    #[test]
    fn a_stuck_main_thread_says_what_it_waits_in() {
        let mut m = Model::new(ModelConfig::default());
        let frame = |function: &str, path: &str| PyFrame {
            function: function.into(),
            file: path.rsplit('/').next().unwrap_or(path).into(),
            path: path.into(),
            line: 3,
        };
        m.stacks.apply(StackReading::Sample(StackSample {
            time: 1.0,
            pid: 7,
            role: Role::Main,
            active: false,
            gil: false,
            frames: vec![
                frame(
                    "all_reduce",
                    "/venv/lib/python3.11/site-packages/torch/distributed/c10d.py",
                ),
                frame("sync_grads", "/home/u/train.py"),
            ],
            code: None,
            cuda: None,
        }));
        let cfg = DiagnoseConfig::default();
        let stuck = main_stuck(&View::new(&m, cfg.windows(), (Vec::new(), 0))).expect("said");
        assert!(stuck.contains("in all_reduce (c10d.py:3)"), "{stuck}");
        assert!(
            stuck.contains("called from sync_grads (train.py:3)"),
            "{stuck}"
        );
        assert!(stuck.contains("a collective or a barrier"), "{stuck}");
    }
}
