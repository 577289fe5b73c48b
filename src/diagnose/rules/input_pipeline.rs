//! The input pipeline: data loading share of the step, its causes (too few workers, saturated
//! CPUs), and the sample cache.

use super::{Needs, Rule, View, grade, p, pct, push_pct};
use crate::common::units::{Fixed, count, push_padded};
use crate::diagnose::params::{Basis, Knobs};
use crate::diagnose::{Finding, Severity};
use crate::parse::labels::Role;

pub const DATA_LOADING_BOUND: Rule = Rule {
    id: "data_loading_bound",
    basis: Basis::Steps,
    summary: "the step waits for data: data_time is a large share of step time",
    params: &[
        p("warn", 0.10, "data_time share of step time that warns"),
        p(
            "crit",
            0.20,
            "data_time share of step time that is critical",
        ),
        p("exit", 0.07, "share under which an active alert clears"),
        p(
            "floor-ms",
            1.0,
            "mean data_time (ms) under which the rule stays quiet",
        ),
        p(
            "gpu-busy-pct",
            90.0,
            "mean GPU utilization from which the GPU, not the data, is the limit (quiet)",
        ),
    ],
    detail: false,
    hidden_by: &["loader_workers_starved", "input_cpu_saturated"],
    needs: Needs::NOTHING,
    check: data_loading_bound,
};

/// The data-bound symptom every input rule starts from: (share, data ms, step ms).
fn data_bound(v: &View, share_at_least: f64, floor_ms: f64) -> Option<(f64, f64, f64)> {
    let share = v.data_share()?;
    let data = v.data_ms()?;
    let step = v.paired_step_ms()?;
    (share >= share_at_least && data >= floor_ms).then_some((share, data, step))
}

/// A specific input cause's finding: it hides data_loading_bound, so it carries the severity
/// that rule would give the same share (crit from the rule's `crit` knob, else warn), and the
/// same evidence.
fn input_cause<S: Into<String>>(
    v: &View,
    k: &Knobs,
    (share, data, step): (f64, f64, f64),
    title: impl FnOnce() -> S,
) -> Finding {
    let severity = if share >= k.get("crit") {
        Severity::Crit
    } else {
        Severity::Warn
    };
    data_evidence(v, v.enter(severity, title), share, data, step)
}

fn data_evidence(v: &View, f: Finding, share: f64, data: f64, step: f64) -> Finding {
    // In pieces, not `format!`: an active alert's words are rewritten every 10 steps, and
    // the formatting was most of their cost.
    let mut f = f.why(|| {
        let mut words = String::with_capacity(72);
        words.push_str("data_time ");
        Fixed(data, 1).push_to(&mut words);
        words.push_str(" ms of a ");
        Fixed(step, 1).push_to(&mut words);
        words.push_str(" ms step (");
        push_pct(&mut words, share);
        words.push_str(") over the last ");
        let steps = v.m.merged.paired_step_ms.recent.len().min(v.windows.steps);
        push_padded(&mut words, steps as u64, 1);
        words.push_str(" steps");
        words
    });
    if let Some(swing) = v.gpu_util_swing().filter(|s| *s >= 50.0) {
        f = f.why(|| {
            format!("GPU utilization swings by {swing:.0} points: it idles while each batch loads")
        });
    }
    f.gain(share)
}

fn data_loading_bound(v: &View, k: &Knobs) -> Option<Finding> {
    let (share, data, step) = data_bound(v, k.get("exit"), k.get("floor-ms"))?;
    // A GPU kept busy is the limit whatever the data wait reads (a wait that overlaps the
    // GPU's work, or a timer that holds a CUDA sync): the data is not what to fix.
    let util = v.gpu_util();
    if util.is_some_and(|u| u >= k.get("gpu-busy-pct")) {
        return None;
    }
    let level = grade(share, k.get("warn"), k.get("crit"), k.get("exit"))?;
    let title = || {
        let mut words = String::from("data loading takes ");
        push_pct(&mut words, share);
        words.push_str(" of each step");
        if let Some(util) = util {
            words.push_str(" while the GPU is ");
            push_pct(&mut words, util / 100.0);
            words.push_str(" busy");
        }
        words
    };
    let mut f = data_evidence(v, v.graded(level, title), share, data, step);
    // Workers waiting on the disk (state D) or a host in iowait: the storage is the limit.
    let waiting = v
        .trainer()
        .map_or(0, |t| t.workers.iter().filter(|w| w.state == "D").count());
    let iowait = v.host_mean(|h| h.iowait_pct).unwrap_or(0.0);
    let storage = waiting > 0 || iowait >= 5.0;
    if storage {
        f = f.why(|| {
            format!(
                "{} on I/O (state D); the host spends {iowait:.0}% in iowait",
                waiting_words(waiting)
            )
        });
        f = f.act(|| "the storage is slow: copy the dataset to local NVMe, or pack it in large shards (WebDataset, TFRecord)");
    }
    // Only for the words: the stacks' shares are not read at an evaluation that has none.
    if v.describe
        && let Some(split) = super::code::workers_split(v)
    {
        f = f.why(|| split);
    }
    // The same log read live names the cause more exactly: the readings make the difference.
    if v.latest().is_none() {
        f = f.why(|| "from the log alone: with the trainer's readings (live, or a `steptop probe --record` recording) its DataLoader workers and the host's CPU tell whether it is too few workers (loader_workers_starved), the CPU (input_cpu_saturated) or the storage".to_string());
    }
    Some(
        f.act(|| "raise DataLoader num_workers, with persistent_workers=True")
            .act(|| "pin_memory=True and .to(device, non_blocking=True)")
            .act(|| "cache decoded samples, or move decoding and augmentation off the step"),
    )
}

pub const LOADER_WORKERS_STARVED: Rule = Rule {
    id: "loader_workers_starved",
    basis: Basis::Steps,
    summary: "data loading bound with few DataLoader workers for the cores, or every worker busy while cores idle",
    params: &[
        p(
            "share",
            0.10,
            "data_time share of step time from which the rule looks at workers (warn)",
        ),
        p("crit", 0.20, "data_time share that makes it critical"),
        p(
            "few-workers",
            2.0,
            "this many workers or fewer is few when cores are free",
        ),
        p(
            "busy-pct",
            90.0,
            "mean worker CPU % at which every worker counts as busy",
        ),
        p(
            "idle-host-pct",
            70.0,
            "host CPU % under which cores count as idle",
        ),
    ],
    detail: false,
    hidden_by: &[],
    needs: Needs::SAMPLES.or(Needs::WORKERS),
    check: loader_workers_starved,
};

fn loader_workers_starved(v: &View, k: &Knobs) -> Option<Finding> {
    let (share, data, step) = data_bound(v, k.get("share"), 1.0)?;
    let trainer = v.trainer();
    let observed = trainer.map(|t| t.workers.len() as f64);
    let workers = observed.or(v.m.facts.num_workers.map(f64::from))?;
    let cores = trainer.and_then(|t| t.usable_cores);
    let host_cpu = v.host_mean(|h| h.cpu_pct);
    let few = workers <= k.get("few-workers") && cores.is_none_or(|c| c >= 2.0 * (workers + 1.0));
    let busy = v.trainer_mean(|t| {
        let n = t.workers.len();
        (n > 0).then(|| t.workers.iter().filter_map(|w| w.cpu_pct).sum::<f64>() / n as f64)
    });
    let saturated = busy.is_some_and(|b| b >= k.get("busy-pct"))
        && host_cpu.is_some_and(|c| c < k.get("idle-host-pct"));
    if !few && !saturated {
        return None;
    }
    let title = || {
        format!(
            "{} cannot keep up: data loading takes {} of each step",
            count(workers, "DataLoader worker"),
            pct(share)
        )
    };
    let mut f = input_cause(v, k, (share, data, step), title);
    let source = if observed.is_some() {
        "running"
    } else {
        "configured (num_workers)"
    };
    f = f.why(|| match cores {
        Some(c) => format!(
            "{} {source} for {}",
            count(workers, "worker"),
            count(c, "usable core")
        ),
        None => format!("{} {source}", count(workers, "worker")),
    });
    if let (Some(b), true) = (busy, saturated) {
        f = f.why(|| {
            format!(
                "the workers average {b:.0}% CPU each while the host is at {:.0}%",
                host_cpu.unwrap_or(0.0)
            )
        });
    }
    // Only for the words: the stacks' shares are not read at an evaluation that has none.
    if v.describe
        && let Some(split) = super::code::workers_split(v)
    {
        f = f.why(|| split);
    }
    let suggest = cores.map_or(8.0, |c| (c - 1.0).clamp(workers + 2.0, 16.0));
    Some(
        f.act(|| format!(
            "num_workers={suggest:.0} (a few per GPU, below the usable cores), persistent_workers=True"
        ))
        .act(|| "prefetch_factor=4 so that batches are ready before the step asks")
        .act(|| "pin_memory=True"),
    )
}

pub const INPUT_CPU_SATURATED: Rule = Rule {
    id: "input_cpu_saturated",
    basis: Basis::Steps,
    summary: "data loading bound while the host CPUs are saturated",
    params: &[
        p(
            "share",
            0.10,
            "data_time share of step time from which the rule looks at the CPUs",
        ),
        p("crit", 0.20, "data_time share that makes it critical"),
        p("cpu-pct", 90.0, "mean host CPU % that counts as saturated"),
    ],
    detail: false,
    hidden_by: &[],
    needs: Needs::SAMPLES,
    check: input_cpu_saturated,
};

fn input_cpu_saturated(v: &View, k: &Knobs) -> Option<Finding> {
    let (share, data, step) = data_bound(v, k.get("share"), 1.0)?;
    let cpu = v.host_mean(|h| h.cpu_pct)?;
    if cpu < k.get("cpu-pct") {
        return None;
    }
    let title = || {
        format!(
            "the CPUs are saturated ({cpu:.0}%) and data loading takes {} of each step",
            pct(share)
        )
    };
    let mut f = input_cause(v, k, (share, data, step), title);
    f = f.why(|| {
        format!(
            "host CPU {cpu:.0}% over the last {:.0} s",
            v.windows.seconds
        )
    });
    if let Some((h, load)) = v.host().and_then(|h| Some((h, h.load_avg?))) {
        f = f.why(|| format!("load average {:.1} on {} CPUs", load[0], h.cpus));
    }
    Some(
        f.act(|| "cheaper preprocessing: decode at lower resolution, simpler augmentation")
            .act(|| "decode and augment on the GPU (NVIDIA DALI, torchvision.io.decode_jpeg on cuda)")
            .act(|| "preprocess once and cache the result, instead of every epoch"),
    )
}

pub const CACHE_INEFFECTIVE: Rule = Rule {
    id: "cache_ineffective",
    basis: Basis::Steps,
    summary: "the sample cache's recent hit rate is low after warm-up, weighed by what its misses cost: the data loading's share of the step",
    params: &[
        p("warn", 0.60, "hit rate under which the rule warns"),
        p("exit", 0.65, "hit rate above which an active alert clears"),
        p(
            "data-share",
            0.10,
            "data_time share that makes a poor hit rate critical",
        ),
        p(
            "costless-share",
            0.02,
            "data_time share under which the misses cost too little to fix: info at most",
        ),
    ],
    detail: false,
    hidden_by: &[],
    needs: Needs::CACHE,
    check: cache_ineffective,
};

fn cache_ineffective(v: &View, k: &Knobs) -> Option<Finding> {
    let rate = v.cache_hit_rate()?;
    // Lower is worse: graded on the miss rate.
    let level = grade(
        1.0 - rate,
        1.0 - k.get("warn"),
        f64::INFINITY,
        1.0 - k.get("exit"),
    )?;
    // A miss costs what loading the sample costs: with data loading a sliver of the step,
    // the best cache gains next to nothing.
    let share = v.data_share();
    let level = match (level, share) {
        (Some(_), Some(s)) if s >= k.get("data-share") => Some(Severity::Crit),
        (Some(_), Some(s)) if s < k.get("costless-share") => Some(Severity::Info),
        (l, _) => l,
    };
    let costless = share.is_some_and(|s| s < k.get("costless-share"));
    let title = || {
        if costless {
            format!(
                "the sample cache hits only {} of lookups, but its misses cost little",
                pct(rate)
            )
        } else {
            format!("the sample cache hits only {} of lookups", pct(rate))
        }
    };
    let mut f = v
        .graded(level, title)
        .why(|| format!("recent cache hit rate {}", pct(rate)));
    if let Some(s) = share {
        f = f.why(|| format!("data loading takes {:.1}% of each step", s * 100.0));
    }
    // What a perfect cache could save at most; none worth naming when the misses cost little
    // (the verdict then stays with what does limit the run).
    if let Some(s) = share.filter(|_| !costless) {
        f = f.gain(s);
    }
    if let (Some(used), Some(total)) = (v.m.cache.memory_used_mb, v.m.cache.memory_total_mb) {
        f = f.why(|| format!("cache memory {used:.0} MB of {total:.0} MB"));
    }
    Some(
        f.act(|| "make the cache larger, or cache what is reused (decoded samples, not raw bytes)")
            .act(
                || "share one cache between DataLoader workers (shared memory), not one per worker",
            )
            .act(|| "check the cache key: augmented or randomly cropped inputs never hit"),
    )
}

pub const H2D_COPY_BOUND: Rule = Rule {
    id: "h2d_copy_bound",
    basis: Basis::Steps,
    summary: "host-to-device copies cost the step: heavy PCIe receive traffic while the GPU idles, or a logged copy stage",
    params: &[
        p(
            "rx-gbs",
            3.0,
            "PCIe receive GB/s (host to GPU) that counts as heavy",
        ),
        p(
            "idle-util",
            60.0,
            "GPU utilization % under which the GPU counts as waiting",
        ),
        p(
            "share",
            0.10,
            "share of the step a logged copy stage (h2d, to_device, copy, transfer) takes that warns",
        ),
    ],
    detail: false,
    hidden_by: &[],
    needs: Needs::STAGES.or(Needs::SAMPLES),
    check: h2d_copy_bound,
};

fn h2d_copy_bound(v: &View, k: &Knobs) -> Option<Finding> {
    // Only a log that times a copy needs the breakdown.
    let copies = v.m.stages.by_name.iter().any(|s| s.copies)
        || v.m.stages.parts.iter().any(|p| p.role == Role::Copy);
    let b = copies.then(|| v.breakdown());
    let stage = b
        .iter()
        .flat_map(|b| b.parts.iter().chain(&b.pieces))
        .find(|p| p.role == Role::Copy)
        .and_then(|p| Some((p.name, p.ms, p.ms / v.step_mean().filter(|m| *m > 0.0)?)))
        .filter(|(_, _, share)| *share >= k.get("share"));
    let rx = v.gpu_mean(|g| g.pcie_rx_bytes_per_s.map(|b| b as f64));
    let util = v.gpu_util();
    let pcie = match (rx, util) {
        (Some(rx), Some(u)) if rx >= k.get("rx-gbs") * 1e9 && u < k.get("idle-util") => {
            Some((rx, u))
        }
        _ => None,
    };
    if stage.is_none() && pcie.is_none() {
        return None;
    }
    let title = || match stage {
        Some((name, _, share)) => format!(
            "copying to the GPU ({name}) takes {} of each step",
            pct(share)
        ),
        None => "the GPU waits on host-to-device copies".to_string(),
    };
    let mut f = v.enter(Severity::Warn, title);
    if let Some((name, ms, share)) = stage {
        f = f
            .why(|| format!("{name}: {ms:.1} ms of a {:.1} ms step", ms / share))
            .gain(share);
    }
    if let Some((rx, u)) = pcie {
        f = f
            .why(|| {
                format!(
                    "PCIe receive {:.1} GB/s while the GPU is busy {u:.0}% of the time",
                    rx / 1e9
                )
            })
            .gain(1.0 - u / 100.0);
    }
    if v.m.facts.pin_memory == Some(false) {
        f = f.why(|| "pin_memory is off: every copy is staged through pageable memory");
    }
    if let Some(waits) = super::code::main_waits_in_calls(v) {
        f = f.why(|| waits);
    }
    Some(
        f.act(|| "pin_memory=True in the DataLoader and .to(device, non_blocking=True)")
            .act(|| "send uint8 images and convert and normalise on the GPU")
            .act(|| "keep data that fits on the GPU there (a preloaded dataset, no per-step copy)"),
    )
}

/// `1 worker waits`, `3 workers wait`.
fn waiting_words(n: usize) -> String {
    let verb = if n == 1 { "waits" } else { "wait" };
    format!("{} {verb}", count(n as f64, "worker"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::DiagnoseConfig;
    use crate::model::{Model, ModelConfig, Stamp};
    use crate::parse::record::{Record, StageRecord, StepRecord};

    /// Steps of 200 ms whose timing blocks log a copy stage of `copy_ms` beside the forward.
    fn model(copy_ms: f64) -> Model {
        let mut m = Model::new(ModelConfig::default());
        for step in 1..=30u32 {
            let stamp = Stamp {
                time: f64::from(step) * 0.2,
                ..Stamp::default()
            };
            m.apply(
                &stamp,
                Record::StageBlockStart {
                    step: Some(step.into()),
                    timers: None,
                },
            );
            for (name, ms) in [("H2D copy", copy_ms), ("forward", 80.0)] {
                let rec = StageRecord {
                    name: name.into(),
                    role: crate::parse::labels::role(name),
                    ms,
                    share_pct: None,
                    depth: 0,
                    step: Some(step.into()),
                    inside: None,
                };
                m.apply(&stamp, Record::Stage(rec));
            }
            let rec = StepRecord {
                step: Some(step.into()),
                step_time_ms: Some(200.0),
                ..StepRecord::default()
            };
            m.apply(&stamp, Record::Step(Box::new(rec)));
        }
        m.finish();
        m
    }

    #[test]
    fn a_logged_copy_stage_that_costs_the_step_is_named() {
        let cfg = DiagnoseConfig::default();
        let i = crate::diagnose::rules::RULES
            .iter()
            .position(|r| r.id == "h2d_copy_bound")
            .expect("rule");
        let m = model(30.0);
        let f = h2d_copy_bound(
            &View::new(&m, cfg.windows(), (Vec::new(), 0)),
            &cfg.rules[i],
        )
        .expect("found");
        assert_eq!(f.enter, Some(Severity::Warn));
        assert_eq!(
            f.title,
            "copying to the GPU (H2D copy) takes 15% of each step"
        );
        assert_eq!(f.gain, Some(0.15));
        // 10 ms of a 200 ms step is under the 10% that counts.
        let m = model(10.0);
        assert!(
            h2d_copy_bound(
                &View::new(&m, cfg.windows(), (Vec::new(), 0)),
                &cfg.rules[i]
            )
            .is_none()
        );
    }
}
