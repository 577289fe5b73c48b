//! Phase timers that frameworks print after a logged step, itemising what the step line only
//! totals: Megatron's `time (ms) | forward-compute: 340.72 | backward-compute: 176.25 |
//! optimizer: 13.99 | batch-generator: 42.49` and its `(min, max) time across ranks (ms):`
//! blocks of `    forward-compute .....: (5424.15, 6285.74)` lines, and DeepSpeed's
//! `time (ms) | fwd: 6567.66 | bwd: 17950.35 | bwd_inner: 17711.19 | bwd_allreduce: 239.11 |
//! step: 1139.29`.
//!
//! Lightning's profiler report (`FIT Profiler Report`, then `|  action  |  mean (s)  | ...`
//! rows) gives the same parts as means over the run.
//!
//! Each name is read for what its framework times, which its layout does not show: Megatron
//! runs batch-generator inside forward-compute, its forward-backward holds both computes, and
//! DeepSpeed's bwd holds bwd_inner and bwd_allreduce. Containers and sub-timers are left out so
//! that nothing counts twice; startup and checkpoint timers are not parts of a step.

use crate::parse::labels::Role;
use crate::parse::record::{Format, PhaseTimers, Record, StageRecord};
use crate::parse::{kv, num};

/// What one timer measures of the step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// A part of the step, with the role it plays and the role of the timer it runs inside.
    Part(Role, Option<Role>),
    /// Holds other timers of the block, or is held by one, or is not a step's part at all.
    Skip,
}

/// Megatron's names (megatron/training.py `timers_to_log`, in Megatron-LM and its forks).
fn megatron_phase(name: &str) -> Phase {
    match name {
        "forward-compute" => Phase::Part(Role::Forward, None),
        "backward-compute" => Phase::Part(Role::Backward, None),
        "optimizer" => Phase::Part(Role::Optimizer, None),
        "batch-generator" => Phase::Part(Role::Data, Some(Role::Forward)),
        // The communication that follows the backward: gradient all-reduce or reduce-scatter,
        // the embedding and layernorm gradient syncs, the parameter all-gather.
        _ if !name.starts_with("optimizer-")
            && ["all-reduce", "reduce-scatter", "all-gather", "grads-sync"]
                .iter()
                .any(|w| name.contains(w)) =>
        {
            Phase::Part(Role::Stage, None)
        }
        // forward-backward (a container), optimizer-* (inside optimizer), send/recv between
        // pipeline stages (inside forward-backward), startup, setup and checkpoint timers.
        _ => Phase::Skip,
    }
}

/// DeepSpeed's global timer names (deepspeed/utils/timer.py); `bwd` holds the other two.
fn deepspeed_phase(name: &str) -> Option<Phase> {
    Some(match name {
        "fwd" | "forward" => Phase::Part(Role::Forward, None),
        "bwd_inner" | "backward_inner" => Phase::Part(Role::Backward, None),
        "bwd_allreduce" | "backward_allreduce" => Phase::Part(Role::Stage, None),
        "step" => Phase::Part(Role::Optimizer, None),
        "bwd" | "backward" => Phase::Skip,
        _ => return None,
    })
}

/// `time (ms) | name: value | ...`: a block of timers on one line.
pub fn time_line(p: &str, out: &mut Vec<Record>) -> Option<Format> {
    let rest = p
        .strip_prefix("time (ms)")?
        .trim_start()
        .strip_prefix('|')?;
    let pairs: Vec<(&str, f64)> = rest
        .split('|')
        .filter_map(|pair| {
            let (name, value) = pair.split_once(':')?;
            Some((name.trim(), num::number(value.trim())?))
        })
        .collect();
    if pairs.is_empty() {
        return None;
    }
    // DeepSpeed's micro-step timers time one micro-batch each (`fwd_microstep`), and its ZeRO
    // optimizer's own timers sit inside `step`: the global line itemises the step.
    if pairs.iter().any(|(n, _)| n.ends_with("_microstep")) {
        return Some(Format::DeepSpeed);
    }
    // A line of DeepSpeed's names only is DeepSpeed's; any other is Megatron's.
    let (phase_of, timers, format): (fn(&str) -> Phase, _, _) =
        if pairs.iter().all(|(n, _)| deepspeed_phase(n).is_some()) {
            let phase_of = |n: &str| deepspeed_phase(n).unwrap_or(Phase::Skip);
            (phase_of, PhaseTimers::SinceLastBlock, Format::DeepSpeed)
        } else {
            (megatron_phase, PhaseTimers::PerStep, Format::Megatron)
        };
    // Nothing when no forward is timed (startup or checkpoint timers, or a log level that
    // times the forward and backward only together).
    if pairs
        .iter()
        .all(|(n, _)| phase_of(n) != Phase::Part(Role::Forward, None))
    {
        return Some(format);
    }
    out.push(Record::StageBlockStart {
        step: None,
        timers: Some(timers),
    });
    for &(name, ms) in &pairs {
        push_part(name, ms, phase_of(name), out);
    }
    Some(format)
}

/// `(min, max) time across ranks (ms):` (or `(max)`, `(min)`): the header of Megatron's
/// timer block, one timer a line after it.
pub fn across_ranks_header(p: &str, out: &mut Vec<Record>) -> Option<Format> {
    let (_, tail) = p.split_once(") time across ranks (ms)")?;
    if !tail.trim().trim_end_matches(':').is_empty() {
        return None;
    }
    out.push(Record::StageBlockStart {
        step: None,
        timers: Some(PhaseTimers::PerStep),
    });
    Some(Format::Megatron)
}

/// `forward-compute ......: (5424.15, 6285.74)` or `forward-compute ......: 6285.74`: one
/// timer of the block, at the slowest rank's time (the step waits for it). The colon after
/// the dots tells it from a row of the argument dump (`seq_length ...... 2048`).
pub fn across_ranks_line(p: &str, out: &mut Vec<Record>) -> Option<Format> {
    if !p.contains("...:") {
        return None;
    }
    let (name, value) = kv::dotted_row(p)?;
    let slowest = match value.strip_prefix('(') {
        Some(pair) => pair.strip_suffix(')')?.rsplit(',').next()?,
        None => value,
    };
    let ms = num::number(slowest.trim())?;
    let timer_name = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit() || "-_/".contains(c);
    if !name.chars().all(timer_name) {
        return None;
    }
    push_part(name, ms, megatron_phase(name), out);
    Some(Format::Megatron)
}

/// `FIT Profiler Report`: the head of Lightning's profiler table, printed when `fit` ends.
pub fn profiler_header(p: &str, out: &mut Vec<Record>) -> Option<Format> {
    (p == "FIT Profiler Report").then_some(())?;
    out.push(Record::StageBlockStart {
        step: None,
        timers: Some(PhaseTimers::RunMeans),
    });
    Some(Format::Lightning)
}

/// `|  [Strategy]SingleDeviceStrategy.training_step  \t|  0.0029583  \t|  256  \t| ...`: one
/// action of Lightning's profiler table with its mean duration in seconds.
pub fn profiler_row(p: &str, out: &mut Vec<Record>) -> Option<Format> {
    let mut cells = p.strip_prefix('|')?.split('|').map(str::trim);
    let (action, mean) = (cells.next()?, cells.next()?);
    if action == "Action" && mean == "Mean duration (s)" {
        return Some(Format::Lightning);
    }
    let ms = match mean {
        "-" if action == "Total" => return Some(Format::Lightning),
        _ => num::number(mean)? * 1000.0,
    };
    let (kind, method) = match action.strip_prefix('[') {
        Some(rest) => {
            let (kind, call) = rest.split_once(']')?;
            (kind, call.rsplit('.').next()?)
        }
        None if action.starts_with("run_training_") => return Some(Format::Lightning),
        None => return None,
    };
    // Automatic optimization runs training_step and backward in optimizer_step's closure.
    let phase = match (kind, method) {
        ("_TrainingEpochLoop", "train_dataloader_next") => Phase::Part(Role::Data, None),
        ("Strategy", "batch_to_device") => Phase::Part(Role::Copy, None),
        ("Strategy", "training_step") => Phase::Part(Role::Forward, Some(Role::Optimizer)),
        ("Strategy", "backward") => Phase::Part(Role::Backward, Some(Role::Optimizer)),
        ("LightningModule", "optimizer_step") => Phase::Part(Role::Optimizer, None),
        _ => Phase::Skip,
    };
    push_part(action, ms, phase, out);
    Some(Format::Lightning)
}

/// A timer's line of the block, when it is a part of the step.
fn push_part(name: &str, ms: f64, phase: Phase, out: &mut Vec<Record>) {
    if let Phase::Part(role, inside) = phase {
        out.push(Record::Stage(StageRecord {
            name: name.to_string(),
            role,
            ms,
            share_pct: None,
            depth: 0,
            step: None,
            inside,
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stages(out: &[Record]) -> Vec<(String, Role, f64, Option<Role>)> {
        out.iter()
            .filter_map(|r| match r {
                Record::Stage(s) => Some((s.name.clone(), s.role, s.ms, s.inside)),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn megatron_deepspeed_one_line() {
        // microsoft/Megatron-DeepSpeed, examples/MoE/log (fixtures/wild/mds-gpt125m-...).
        let line = "time (ms) | forward-compute: 340.72 | backward-compute: 176.25 | backward-embedding-all-reduce: 0.01 | optimizer: 313.71 | batch-generator: 42.49";
        let mut out = Vec::new();
        assert_eq!(time_line(line, &mut out), Some(Format::Megatron));
        assert_eq!(
            out[0],
            Record::StageBlockStart {
                step: None,
                timers: Some(PhaseTimers::PerStep)
            }
        );
        assert_eq!(
            stages(&out),
            vec![
                ("forward-compute".into(), Role::Forward, 340.72, None),
                ("backward-compute".into(), Role::Backward, 176.25, None),
                (
                    "backward-embedding-all-reduce".into(),
                    Role::Stage,
                    0.01,
                    None
                ),
                ("optimizer".into(), Role::Optimizer, 313.71, None),
                (
                    "batch-generator".into(),
                    Role::Data,
                    42.49,
                    Some(Role::Forward)
                ),
            ]
        );
    }

    #[test]
    fn startup_timers_are_no_step() {
        let mut out = Vec::new();
        let line = "time (ms) | model-and-optimizer-setup: 29012.03 | train/valid/test-data-iterators-setup: 3106242.77";
        assert_eq!(time_line(line, &mut out), Some(Format::Megatron));
        assert!(out.is_empty());
    }

    #[test]
    fn deepspeed_global_timers_leave_out_the_container() {
        let mut out = Vec::new();
        let micro = "time (ms) | fwd_microstep: 6567.68 | bwd_microstep: 17950.36 | bwd_inner_microstep: 17711.20 | bwd_allreduce_microstep: 239.11 | step_microstep: 1139.27";
        assert_eq!(time_line(micro, &mut out), Some(Format::DeepSpeed));
        assert!(out.is_empty());
        let global = "time (ms) | fwd: 6567.66 | bwd: 17950.35 | bwd_inner: 17711.19 | bwd_allreduce: 239.11 | step: 1139.29";
        assert_eq!(time_line(global, &mut out), Some(Format::DeepSpeed));
        assert_eq!(
            out[0],
            Record::StageBlockStart {
                step: None,
                timers: Some(PhaseTimers::SinceLastBlock)
            }
        );
        let names: Vec<String> = stages(&out).into_iter().map(|s| s.0).collect();
        assert_eq!(names, ["fwd", "bwd_inner", "bwd_allreduce", "step"]);
    }

    #[test]
    fn across_ranks_block() {
        let mut out = Vec::new();
        assert!(across_ranks_header("(min, max) time across ranks (ms):", &mut out).is_some());
        for line in [
            "forward-backward ...............................: (7842.32, 7842.67)",
            "all-grads-sync .................................: (377.77, 378.23)",
            "optimizer-inner-step ...........................: (104.73, 132.16)",
            "optimizer ......................................: (829.09, 829.84)",
            "batch-generator ................................: (91.94, 100.80)",
            "forward-compute ................................: (5424.15, 6285.74)",
        ] {
            assert_eq!(across_ranks_line(line, &mut out), Some(Format::Megatron));
        }
        assert_eq!(
            stages(&out),
            vec![
                ("all-grads-sync".into(), Role::Stage, 378.23, None),
                ("optimizer".into(), Role::Optimizer, 829.84, None),
                (
                    "batch-generator".into(),
                    Role::Data,
                    100.80,
                    Some(Role::Forward)
                ),
                ("forward-compute".into(), Role::Forward, 6285.74, None),
            ]
        );
        // A max-only block, and lines that are not timers.
        let mut out = Vec::new();
        assert!(across_ranks_line("backward-compute ....: 1298.90", &mut out).is_some());
        assert_eq!(stages(&out)[0].2, 1298.90);
        assert!(across_ranks_line("  lr ........ 0.0001", &mut out).is_none());
        assert!(
            across_ranks_line(
                "seq_length ...................................... 2048",
                &mut out
            )
            .is_none()
        );
    }

    #[test]
    fn lightning_profiler_rows() {
        // Lightning 2.6 on CPU (fixtures/phase_timers/lightning_simple_profiler).
        let mut out = Vec::new();
        assert!(profiler_header("FIT Profiler Report", &mut out).is_some());
        for row in [
            "|  Action                                             \t|  Mean duration (s)\t|  Num calls      \t|  Total time (s) \t|  Percentage %   \t|",
            "|  Total                                              \t|  -              \t|  7716           \t|  8.1074         \t|  100 %          \t|",
            "|  run_training_epoch                                 \t|  4.0446         \t|  2              \t|  8.0892         \t|  99.775         \t|",
            "|  [_TrainingEpochLoop].train_dataloader_next         \t|  0.019361       \t|  256            \t|  4.9564         \t|  61.134         \t|",
            "|  [LightningModule]Net.optimizer_step                \t|  0.011257       \t|  256            \t|  2.8817         \t|  35.544         \t|",
            "|  [Strategy]SingleDeviceStrategy.training_step       \t|  0.0029583      \t|  256            \t|  0.75731        \t|  9.341          \t|",
            "|  [Callback]TQDMProgressBar.on_train_batch_end       \t|  0.00040001     \t|  256            \t|  0.1024         \t|  1.2631         \t|",
        ] {
            assert_eq!(
                profiler_row(row, &mut out),
                Some(Format::Lightning),
                "{row}"
            );
        }
        let got: Vec<(String, Role, Option<Role>)> = stages(&out)
            .into_iter()
            .map(|(n, r, _, i)| (n, r, i))
            .collect();
        assert_eq!(
            got,
            vec![
                (
                    "[_TrainingEpochLoop].train_dataloader_next".into(),
                    Role::Data,
                    None
                ),
                (
                    "[LightningModule]Net.optimizer_step".into(),
                    Role::Optimizer,
                    None
                ),
                (
                    "[Strategy]SingleDeviceStrategy.training_step".into(),
                    Role::Forward,
                    Some(Role::Optimizer)
                ),
            ]
        );
        // A table of settings is not the profiler's.
        assert!(profiler_row("| batch_size | 32 |", &mut out).is_none());
    }
}
