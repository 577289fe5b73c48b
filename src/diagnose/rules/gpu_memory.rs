//! GPU memory: near its limit, growing step after step, or mostly unused while the GPU waits.

use super::{Needs, Rule, View, gib, grade, p, pct};
use crate::diagnose::params::{Basis, Knobs};
use crate::diagnose::signals::fit;
use crate::diagnose::{Finding, Severity};
use crate::model::sample::GpuReading;

pub const GPU_MEMORY_PRESSURE: Rule = Rule {
    id: "gpu_memory_pressure",
    basis: Basis::Seconds,
    summary: "GPU memory near its limit",
    params: &[
        p("warn", 0.95, "share of GPU memory used that warns"),
        p("crit", 0.98, "share of GPU memory used that is critical"),
        p("exit", 0.92, "share under which an active alert clears"),
    ],
    detail: false,
    hidden_by: &[],
    needs: Needs::NOTHING,
    check: gpu_memory_pressure,
};

fn memory_share(g: &GpuReading) -> Option<f64> {
    Some(g.mem_used_bytes? as f64 / g.mem_total_bytes.filter(|t| *t > 0)? as f64)
}

fn gpu_memory_pressure(v: &View, k: &Knobs) -> Option<Finding> {
    let latest = v.latest()?;
    let Some((g, share)) = latest
        .gpus
        .iter()
        .filter_map(|g| Some((g, memory_share(g)?)))
        .max_by(|a, b| a.1.total_cmp(&b.1))
    else {
        return logged_pressure(v, k, latest);
    };
    let level = grade(share, k.get("warn"), k.get("crit"), k.get("exit"))?;
    let title = || format!("GPU {} memory is {} full", g.label(), pct(share));
    Some(
        v.graded(level, title)
            .why(|| {
                format!(
                    "{} of {} used",
                    gib(g.mem_used_bytes.unwrap_or(0) as f64),
                    gib(g.mem_total_bytes.unwrap_or(0) as f64)
                )
            })
            .act(|| "a smaller batch with gradient accumulation, or activation checkpointing")
            .act(|| "bf16 autocast halves activation memory")
            .act(|| "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True against fragmentation"),
    )
}

/// GPU memory the log prints (`max_mem: 4212M`, `memory: 15.2G`) against the GPU's size,
/// when the driver gives the size but not the use (an old driver, a MIG slice).
fn logged_pressure(v: &View, k: &Knobs, latest: &crate::model::sample::Sample) -> Option<Finding> {
    let total = latest
        .gpus
        .iter()
        .filter_map(|g| g.mem_total_bytes)
        .max()
        .filter(|t| *t > 0)? as f64;
    let (rank, used_mb) =
        v.m.ranks
            .iter()
            .filter_map(|(r, s)| Some((*r, s.memory_mb?)))
            .max_by(|a, b| a.1.total_cmp(&b.1))?;
    let used = used_mb * f64::from(1 << 20);
    let share = used / total;
    let level = grade(share, k.get("warn"), k.get("crit"), k.get("exit"))?;
    let step = v.m.ranks.get(&rank).and_then(|s| s.last_step);
    Some(
        v.graded(level, || format!("GPU memory is {} full", pct(share)))
            .why(|| {
                let at = step.map_or(String::new(), |s| format!(", step {s}"));
                format!(
                    "{} of {} used (the log's memory figure, rank {rank}{at})",
                    gib(used),
                    gib(total)
                )
            })
            .act(|| "a smaller batch with gradient accumulation, or activation checkpointing")
            .act(|| "bf16 autocast halves activation memory"),
    )
}

pub const GPU_MEMORY_UNDERUSED: Rule = Rule {
    id: "gpu_memory_underused",
    basis: Basis::Seconds,
    summary: "a small share of GPU memory used while the GPU is starved: room for a larger batch",
    params: &[p(
        "share",
        0.30,
        "share of GPU memory used under which it counts as underused",
    )],
    detail: true,
    hidden_by: &[],
    needs: Needs::NOTHING,
    check: gpu_memory_underused,
};

fn gpu_memory_underused(v: &View, k: &Knobs) -> Option<Finding> {
    let starved = v.is_active("gpu_starved") || v.is_active("low_gpu_util");
    let share = v.gpu_mean(memory_share)?;
    if !starved || share >= k.get("share") {
        return None;
    }
    Some(
        v.enter(Severity::Info, || {
            format!("the GPUs use only {} of their memory", pct(share))
        })
        .why(|| format!("mean GPU memory use {}", pct(share)))
        .why(|| "the GPU is starved: a larger batch gives it more work per step")
        .act(|| "raise the batch size (scale the learning rate with it)"),
    )
}

pub const GPU_MEMORY_CREEP: Rule = Rule {
    id: "gpu_memory_creep",
    basis: Basis::Seconds,
    summary: "GPU memory grows steadily (a tensor kept across steps), with the time until it is full",
    params: &[
        p(
            "seconds",
            300.0,
            "seconds of readings the trend is fitted over",
        ),
        p(
            "min-growth",
            0.03,
            "growth over those seconds, as a share of the GPU's memory, that counts",
        ),
        p(
            "fit",
            0.8,
            "r² of the straight line from which the growth counts as steady",
        ),
        p(
            "warn-minutes",
            120.0,
            "minutes until full at this pace under which the rule warns",
        ),
        p(
            "crit-minutes",
            15.0,
            "minutes until full under which it is critical",
        ),
    ],
    detail: false,
    hidden_by: &["gpu_memory_pressure"],
    needs: Needs::NOTHING,
    check: gpu_memory_creep,
};

/// One GPU's memory trend: growth rate in bytes/s, the fit, latest used and total bytes.
struct Creep {
    gpu: u32,
    rate: f64,
    r2: f64,
    used: f64,
    total: f64,
}

fn creep_of(v: &View, gpu: u32, seconds: f64) -> Option<Creep> {
    let latest = v.latest()?;
    let since = latest.time - seconds;
    let mut points = Vec::new();
    let mut last = None;
    for s in v.m.hardware.recent.iter().filter(|s| s.time >= since) {
        if let Some(g) = s.gpus.iter().find(|g| g.index == gpu && g.failed.is_none())
            && let (Some(used), Some(total)) = (g.mem_used_bytes, g.mem_total_bytes)
        {
            points.push((s.time, used as f64));
            last = Some((used as f64, total as f64));
        }
    }
    // A trend needs most of the span: a run that just started has none yet.
    let span = points.last()?.0 - points.first()?.0;
    if span < 0.8 * seconds {
        return None;
    }
    let line = fit(&points)?;
    let (used, total) = last?;
    Some(Creep {
        gpu,
        rate: line.slope,
        r2: line.r2,
        used,
        total,
    })
}

fn gpu_memory_creep(v: &View, k: &Knobs) -> Option<Finding> {
    let seconds = k.get("seconds");
    let latest = v.latest()?;
    let c = latest
        .gpus
        .iter()
        .filter_map(|g| creep_of(v, g.index, seconds))
        .max_by(|a, b| a.rate.total_cmp(&b.rate))?;
    let growth = c.rate * seconds / c.total.max(1.0);
    let minutes = (c.total - c.used).max(0.0) / c.rate / 60.0;
    let steady = c.rate > 0.0 && c.r2 >= k.get("fit");
    let level = if steady && growth >= k.get("min-growth") {
        if minutes <= k.get("crit-minutes") {
            Some(Severity::Crit)
        } else if minutes <= k.get("warn-minutes") {
            Some(Severity::Warn)
        } else {
            None
        }
    } else {
        None
    };
    // An active alert stays while memory still grows at half the pace that counts.
    if level.is_none() && !(c.rate > 0.0 && growth >= k.get("min-growth") / 2.0) {
        return None;
    }
    let title = || {
        format!(
            "GPU {} memory grows steadily: full in about {minutes:.0} min",
            c.gpu
        )
    };
    Some(
        v.graded(level, title)
            .strength(c.rate)
            .why(|| {
                format!(
                    "+{}/min over the last {seconds:.0} s (r² {:.2}), {} of {} used now",
                    gib(c.rate * 60.0),
                    c.r2,
                    gib(c.used),
                    gib(c.total)
                )
            })
            .act(|| "look for tensors kept across steps: total_loss += loss (use loss.item()), outputs appended to a list")
            .act(|| "detach and move to the CPU what is kept for metrics or logging")
            .act(|| "torch.cuda.memory._record_memory_history() and a snapshot show what holds the memory"),
    )
}
