//! What the log says happened: crashes, NaN losses, AMP overflow backoffs; and the logged
//! configuration, when it explains a symptom or disagrees with what runs.

use super::{Needs, Rule, View, p};
use crate::diagnose::params::{Basis, Knobs};
use crate::diagnose::{Finding, Severity};
use crate::parse::record::EventKind;

pub const CRASH_EVENT: Rule = Rule {
    id: "crash_event",
    basis: Basis::Events,
    summary: "CUDA out of memory, a DataLoader worker killed, an NCCL timeout or a torchrun failure in the log",
    params: &[p(
        "steps-after",
        0.0,
        "steps after the event during which it counts as current",
    )],
    detail: false,
    hidden_by: &[],
    needs: Needs::NOTHING,
    check: crash_event,
};

const CRASHES: [EventKind; 4] = [
    EventKind::CudaOom,
    EventKind::DataloaderKilled,
    EventKind::NcclTimeout,
    EventKind::TorchrunFailure,
];

fn crash_event(v: &View, k: &Knobs) -> Option<Finding> {
    let since = v.m.steps_since(&CRASHES)?;
    if since as f64 > k.get("steps-after") {
        return None;
    }
    let e = v.m.events.iter().rev().find(|e| CRASHES.contains(&e.kind));
    let kind = e.map_or(EventKind::CudaOom, |e| e.kind);
    let (title, actions): (&str, &[&str]) = match kind {
        EventKind::CudaOom => (
            "CUDA ran out of memory",
            &[
                "a smaller batch with gradient accumulation, or activation checkpointing",
                "bf16 autocast; PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True",
            ],
        ),
        EventKind::DataloaderKilled => (
            "a DataLoader worker was killed (usually out of host memory)",
            &[
                "fewer workers, or a cache shared between them instead of one per worker",
                "check dmesg for the OOM killer",
            ],
        ),
        EventKind::NcclTimeout => (
            "an NCCL collective timed out",
            &[
                "look for the rank that stopped first (its log ends earlier, or it crashed)",
                "NCCL_DEBUG=INFO, and TORCH_NCCL_ASYNC_ERROR_HANDLING=1",
            ],
        ),
        _ => (
            "torchrun reports a failed worker",
            &["the first traceback in the failed rank's log is the cause"],
        ),
    };
    let mut f = v.enter(Severity::Crit, || title);
    if let Some(e) = e {
        f = f.why(|| format!("log line {}: {}", e.line, e.text));
    }
    Some(actions.iter().fold(f, |f, a| f.act(|| *a)))
}

pub const NONFINITE_LOSS: Rule = Rule {
    id: "nonfinite_loss",
    basis: Basis::Events,
    summary: "the loss became NaN or Inf",
    params: &[
        p(
            "steps-after",
            20.0,
            "steps after the NaN/Inf during which it counts as current",
        ),
        p(
            "overflow-steps",
            200.0,
            "steps before it in which AMP overflow backoffs are counted",
        ),
    ],
    detail: false,
    hidden_by: &[],
    needs: Needs::NOTHING,
    check: nonfinite_loss,
};

fn nonfinite_loss(v: &View, k: &Knobs) -> Option<Finding> {
    let since = v.m.steps_since(&[EventKind::NonFinite])?;
    if since as f64 > k.get("steps-after") {
        return None;
    }
    let mut f = v.enter(Severity::Crit, || "the loss is NaN or Inf");
    if let Some(e) =
        v.m.events
            .iter()
            .rev()
            .find(|e| e.kind == EventKind::NonFinite)
    {
        f = f.why(|| format!("log line {}: {}", e.line, e.text));
    }
    let overflows =
        v.m.recent_count(EventKind::LossScaleOverflow, k.get("overflow-steps") as u64);
    if overflows > 0 {
        f = f.why(|| {
            format!("after {overflows} AMP loss-scale overflow backoffs: fp16 ran out of range")
        });
        f = f.act(|| "bf16 autocast instead of fp16 (same range as fp32, no loss scaling)");
    }
    Some(
        f.act(|| "lower the learning rate or add warm-up; clip gradients (clip_grad_norm_)")
            .act(|| "torch.autograd.set_detect_anomaly(True) on a short run to find the first NaN"),
    )
}

pub const LOSS_SCALE_UNSTABLE: Rule = Rule {
    id: "loss_scale_unstable",
    basis: Basis::Events,
    summary: "repeated AMP loss-scale overflow backoffs",
    params: &[
        p(
            "count",
            3.0,
            "overflow backoffs within the window that warn",
        ),
        p("steps", 100.0, "the window, in steps"),
    ],
    detail: false,
    hidden_by: &["nonfinite_loss"],
    needs: Needs::NOTHING,
    check: loss_scale_unstable,
};

fn loss_scale_unstable(v: &View, k: &Knobs) -> Option<Finding> {
    let n =
        v.m.recent_count(EventKind::LossScaleOverflow, k.get("steps") as u64);
    if (n as f64) < k.get("count") {
        return None;
    }
    let mut f = v
        .enter(Severity::Warn, || {
            format!("AMP loss scale backed off {n} times")
        })
        .why(|| {
            format!(
                "{n} overflow backoffs in the last {:.0} steps",
                k.get("steps")
            )
        });
    if let Some(scale) = v.m.merged.loss_scale {
        f = f.why(|| format!("loss scale now {scale}"));
    }
    Some(
        f.act(|| "bf16 autocast instead of fp16 avoids loss scaling altogether")
            .act(|| "clip gradients; lower the learning rate if the backoffs keep coming"),
    )
}

pub const CONFIG_HINT: Rule = Rule {
    id: "config_hint",
    basis: Basis::Steps,
    summary: "a logged configuration that explains an active symptom (num_workers <= 2, pin_memory off, cudnn.benchmark off, no AMP)",
    params: &[p(
        "few-workers",
        2.0,
        "num_workers at or under which it is named",
    )],
    detail: true,
    hidden_by: &[],
    needs: Needs::WORKERS.or(Needs::SETTINGS),
    check: config_hint,
};

fn config_hint(v: &View, k: &Knobs) -> Option<Finding> {
    let d = v;
    let data = [
        "data_loading_bound",
        "loader_workers_starved",
        "input_cpu_saturated",
    ]
    .iter()
    .any(|r| d.is_active(r));
    let gpu = d.is_active("gpu_starved") || d.is_active("low_gpu_util");
    let compute = d.is_active("compute_bound");
    let facts = &v.m.facts;
    // (the setting, what it does to the run, the action)
    let mut hints: Vec<(String, Effect, &str)> = Vec::new();
    let slowed = if data { Effect::Data } else { Effect::Idle };
    if let Some(w) = facts
        .num_workers
        .filter(|w| data && f64::from(*w) <= k.get("few-workers"))
    {
        hints.push((
            format!("num_workers={w} while the step waits for data"),
            Effect::Data,
            "raise num_workers",
        ));
    }
    if facts.pin_memory == Some(false) && (data || gpu) {
        hints.push((
            "pin_memory is off".into(),
            slowed,
            "pin_memory=True with non_blocking=True copies",
        ));
    }
    let busy = if gpu { Effect::Idle } else { Effect::Compute };
    if facts.cudnn_benchmark == Some(false) && (gpu || compute) {
        hints.push((
            "cudnn.benchmark is off".into(),
            busy,
            "torch.backends.cudnn.benchmark=True for fixed input shapes",
        ));
    }
    if compute
        && facts
            .amp_dtype
            .as_deref()
            .is_some_and(|a| a == "fp32" || a == "no")
    {
        hints.push((
            "mixed precision is off".into(),
            Effect::Compute,
            "bf16 autocast",
        ));
    }
    if hints.is_empty() {
        return None;
    }
    // The title says what the settings do; the evidence names each setting.
    let title = || match hints.len() {
        1 => format!("a logged setting {}", hints[0].1.words(false)),
        n => format!("{n} logged settings {}", hints[0].1.words(true)),
    };
    let f = hints
        .iter()
        .fold(v.enter(Severity::Info, title), |f, (why, _, _)| {
            f.why(|| why.clone())
        });
    Some(hints.iter().fold(f, |f, (_, _, act)| f.act(|| *act)))
}

/// What a setting does to the run, as `config_hint`'s title says it.
#[derive(Clone, Copy)]
enum Effect {
    Data,
    Idle,
    Compute,
}

impl Effect {
    fn words(self, plural: bool) -> &'static str {
        match (self, plural) {
            (Effect::Data, false) => "slows data loading",
            (Effect::Data, true) => "slow data loading",
            (Effect::Idle, false) => "keeps the GPU waiting",
            (Effect::Idle, true) => "keep the GPU waiting",
            (Effect::Compute, false) => "slows the GPU's compute",
            (Effect::Compute, true) => "slow the GPU's compute",
        }
    }
}

pub const CONFIG_MISMATCH: Rule = Rule {
    id: "config_mismatch",
    basis: Basis::Steps,
    summary: "the logged configuration disagrees with what runs (num_workers against the worker processes) or with itself (cudnn.benchmark configured on, printed off)",
    params: &[],
    detail: true,
    hidden_by: &[],
    needs: Needs::WORKERS.or(Needs::CHANGED),
    check: config_mismatch,
};

fn config_mismatch(v: &View, _k: &Knobs) -> Option<Finding> {
    // A DataLoader starts num_workers processes; train and eval loaders may both run, so
    // only fewer than configured is a disagreement.
    let workers = v
        .m
        .facts
        .num_workers
        .zip(v.trainer())
        .and_then(|(configured, t)| {
            (t.workers.len() < configured as usize).then_some((configured, t.workers.len(), t.pid))
        });
    let changed = &v.m.facts.changed;
    let title = || match (workers, changed.first()) {
        (Some((configured, running, _)), _) => {
            format!("num_workers={configured} is logged, but {running} worker processes run")
        }
        (None, Some(c)) => format!("the log says {}={}, then {}={}", c.key, c.was, c.key, c.now),
        (None, None) => String::new(),
    };
    if workers.is_none() && changed.is_empty() {
        return None;
    }
    let mut f = v.enter(Severity::Warn, title);
    if let Some((_, running, pid)) = workers {
        f = f.why(|| format!("the trainer (pid {pid}) has {running} child processes"));
    }
    // The words alone need the list: a check skips it.
    for c in changed.iter().filter(|_| v.describe) {
        f = f.why(|| {
            format!(
                "{} is logged as {}, later as {}: the later value is the one in effect",
                c.key, c.was, c.now
            )
        });
    }
    Some(f.act(|| {
        "check which config the run really loaded: a value hard-coded in the training script overrides the config file"
    }))
}
