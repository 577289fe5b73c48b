//! The run's pace: outlier steps, the pauses evals and checkpoints add, and one rank or GPU
//! that holds the others back.

use super::{Needs, Rule, View, grade, p, pct};
use crate::diagnose::params::{Basis, Knobs};
use crate::diagnose::{Finding, Severity};
use crate::model::window::median;

pub const STEP_SPIKES: Rule = Rule {
    id: "step_spikes",
    basis: Basis::Steps,
    summary: "outlier steps (median + k MAD), and whether they are periodic; a step right after an eval, checkpoint or epoch end is that pause (eval_overhead's), not an outlier",
    params: &[
        p(
            "k",
            6.0,
            "MADs (scaled to a standard deviation) above the median that make a spike",
        ),
        p(
            "min-ratio",
            1.5,
            "and at least this many times the median step",
        ),
        p(
            "count",
            3.0,
            "spikes among the last 200 steps from which the rule warns",
        ),
        p(
            "share",
            0.05,
            "share of the time of those steps that the spikes add, from which it warns",
        ),
    ],
    detail: true,
    hidden_by: &[],
    needs: Needs::NOTHING,
    check: step_spikes,
};

fn step_spikes(v: &View, k: &Knobs) -> Option<Finding> {
    let marks = &v.m.timeline.marks;
    if marks.len() < 20 {
        return None;
    }
    let (med, mad) = v.m.timeline.spread?;
    let mad = mad * 1.4826;
    let limit = (med + k.get("k") * mad).max(k.get("min-ratio") * med);
    // No step over the limit, no spike: most steps end here, without the pass below.
    if v.m.timeline.longest_ms().is_none_or(|ms| ms <= limit) {
        return None;
    }
    // A spike stands alone: a run of slow steps is a slower phase (throughput_drift's), not
    // outliers. The newest step has no next one yet, so it is judged by the one before.
    let slow = |i: usize| marks.get(i).is_some_and(|m| m.ms > limit);
    // Step times that are the gaps between lines' arrivals hold when steptop read each line:
    // a line read late is a long step, and the next line, read at once, a short one that
    // gives the excess back. A spike is a slow step only when the next line does not (so
    // the newest is judged once the next comes).
    let arrivals = v.m.basis.times_from_arrivals();
    let given_back = |i: usize| arrivals && marks.get(i + 1).is_none_or(|m| m.ms < med / 2.0);
    let alone = |i: usize| !(slow(i + 1) || i > 0 && slow(i - 1));
    let spike = |i: usize| slow(i) && alone(i) && !given_back(i);
    // Evaluated every step: one pass that allocates nothing; the spikes themselves are
    // listed only for the words.
    // A spike right after an eval, a checkpoint or an epoch end is that pause, logged inside
    // the step's time: eval_overhead's to name, not an outlier of training; so is the run's
    // first step (compilation, the loader's start).
    // A log that prints every hundredth step shows one step of each hundred: a spike among
    // them is one slow step, weighed against the time of all the steps the lines stand for.
    let (total, steps_seen) = v.m.timeline.covered();
    let (mut extra, mut n, mut at_boundary) = (0.0, 0, 0);
    for (i, m) in marks.iter().enumerate() {
        if m.ms > limit && spike(i) {
            if m.after_pause() {
                at_boundary += 1;
            } else {
                extra += m.ms - med;
                n += 1;
            }
        }
    }
    let share = extra / total.max(1e-9);
    if n == 0 {
        return None;
    }
    let level = if n as f64 >= k.get("count") && share >= k.get("share") {
        Some(Severity::Warn)
    } else if n > 0 && share >= k.get("share") / 2.0 {
        None
    } else {
        return None;
    };
    let spikes: Vec<_> = (0..marks.len())
        .filter(|&i| v.describe && spike(i) && !marks[i].after_pause())
        .map(|i| &marks[i])
        .collect();
    let steps: Vec<u64> = spikes.iter().filter_map(|m| m.step).collect();
    let gaps: Vec<u64> = steps
        .windows(2)
        .map(|w| w[1].saturating_sub(w[0]))
        .collect();
    let period = match (gaps.iter().min(), gaps.iter().max()) {
        (Some(&lo), Some(&hi)) if gaps.len() >= 2 && lo > 1 && hi - lo <= 1 => Some(lo),
        _ => None,
    };
    let worst = spikes.iter().map(|m| m.ms).fold(0.0, f64::max);
    let title = || match period {
        Some(every) => format!(
            "a slow step every {every} steps: {} of the time",
            pct(share)
        ),
        None => format!("{n} outlier steps: {} of the time", pct(share)),
    };
    let mut f = v
        .graded(level, title)
        .why(|| {
            format!(
                "{n} of the last {} steps{} over {limit:.0} ms (median {med:.0} ms, worst {worst:.0} ms): {} of their time is the spikes' excess",
                marks.len(),
                if steps_seen > marks.len() as f64 {
                    format!(" logged (of {steps_seen:.0} run)")
                } else {
                    String::new()
                },
                pct(share)
            )
        })
        .why(|| {
            let listed: Vec<String> = steps.iter().rev().take(5).rev().map(u64::to_string).collect();
            format!("at steps {}", listed.join(", "))
        });
    if at_boundary > 0 {
        f = f.why(|| {
            format!("besides {at_boundary} at the start or right after an eval, checkpoint or epoch end: those pauses are not counted")
        });
    }
    if arrivals {
        f = f.why(|| "step times are the gaps between the lines' arrivals (the log prints no time): a long gap the next line gave back (read late, not slow) is not counted".to_string());
    }
    Some(
        f.gain(share)
            .act(|| "match the spike steps with what runs then: logging, garbage collection (gc.freeze() after setup), other jobs on the node")
            .act(|| "a periodic spike at a fixed interval is usually logging, a metric sync (.item()) or a checkpoint"),
    )
}

pub const EVAL_OVERHEAD: Rule = Rule {
    id: "eval_overhead",
    basis: Basis::Steps,
    summary: "evaluation and checkpointing take a large share of wall time (the gaps around their markers, less the training steps logged within them)",
    params: &[
        p(
            "warn",
            0.10,
            "share of wall time in eval and checkpoint pauses that warns",
        ),
        p("crit", 0.30, "share that is critical"),
        p("exit", 0.07, "share under which an active alert clears"),
        p("min-pauses", 2.0, "pauses measured before the rule speaks"),
    ],
    detail: false,
    hidden_by: &[],
    needs: Needs::NOTHING,
    check: eval_overhead,
};

fn eval_overhead(v: &View, k: &Knobs) -> Option<Finding> {
    let t = &v.m.timeline;
    let pauses = &t.pauses.seconds;
    let count = pauses.count();
    if (count as f64) < k.get("min-pauses") {
        return None;
    }
    let wall = t.wall_s()?;
    let total = pauses.sum();
    let share = total / wall;
    let level = grade(share, k.get("warn"), k.get("crit"), k.get("exit"))?;
    let mean = total / count as f64;
    let title = || {
        format!(
            "evaluation and checkpoints take {} of the wall time",
            pct(share)
        )
    };
    let mut f = v.graded(level, title).why(|| {
        format!(
            "{count} pauses of {mean:.0} s on average: {total:.0} s of {wall:.0} s ({})",
            pct(share)
        )
    });
    if let (Some(a), Some(b)) = (t.pauses.first_step, t.pauses.last_step)
        && b > a
    {
        let every = (b - a) as f64 / (count - 1) as f64;
        f = f.why(|| format!("one every {every:.0} steps"));
    }
    // Not a gain of the step: the pauses are between steps.
    f = f.why(|| {
        format!(
            "without them the run would end up to {} sooner; no step would be shorter",
            pct(share)
        )
    });
    Some(
        f.act(|| "evaluate less often (eval_steps, val_check_interval) or on fewer batches (limit_val_batches)")
            .act(|| "save checkpoints less often, or asynchronously (torch.distributed.checkpoint.async_save)")
            .act(|| "run evaluation in a separate job on a saved checkpoint"),
    )
}

pub const STRAGGLER: Rule = Rule {
    id: "straggler",
    basis: Basis::Steps,
    summary: "one rank or GPU consistently slower or less busy than the others",
    params: &[
        p(
            "ratio",
            1.2,
            "a rank's step time over the others' median that makes it a straggler",
        ),
        p(
            "util-gap",
            25.0,
            "points of utilization one GPU trails the others' median by",
        ),
        p(
            "clock-share",
            0.85,
            "SM clock of one busy GPU over the others' median that makes it slow",
        ),
        p("min-steps", 20.0, "steps each rank must have logged"),
    ],
    detail: false,
    hidden_by: &["crash_event"],
    needs: Needs::RANKS.or(Needs::SAMPLES),
    check: straggler,
};

/// The odd one out: (its key, its value, the median of the others), by `worst`.
fn odd_one<K: Clone + PartialEq>(
    values: &[(K, f64)],
    worst: impl Fn(f64, f64) -> bool,
) -> Option<(K, f64, f64)> {
    if values.len() < 2 {
        return None;
    }
    let (key, x) = values
        .iter()
        .reduce(|a, b| if worst(b.1, a.1) { b } else { a })?
        .clone();
    let mut others: Vec<f64> = values.iter().filter(|v| v.0 != key).map(|v| v.1).collect();
    let med = median(&mut others)?;
    Some((key, x, med))
}

fn straggler(v: &View, k: &Knobs) -> Option<Finding> {
    // One rank and one GPU have nobody to trail.
    if v.m.ranks.len() < 2 && v.latest().is_none_or(|s| s.gpus.len() < 2) {
        return None;
    }
    let n = v.windows.steps;
    let min = k.get("min-steps") as u64;
    let ranks: Vec<(u32, f64)> =
        v.m.ranks
            .iter()
            .filter(|(_, r)| r.step_time_ms.run.count() >= min)
            .filter_map(|(id, r)| Some((*id, r.step_time_ms.recent.mean_last(n)?)))
            .collect();
    let rank = odd_one(&ranks, |a, b| a > b).filter(|(_, x, med)| *x >= k.get("ratio") * med);
    // Per GPU of the latest reading, the window's mean of `f`.
    let gpus =
        |f: &dyn Fn(&crate::model::sample::GpuReading) -> Option<f64>| -> Vec<(String, f64)> {
            let latest = v.latest().map_or(&[][..], |s| &s.gpus[..]);
            latest
                .iter()
                .filter_map(|g| {
                    let mean = v.gpu_mean(|r| if r.key() == g.key() { f(r) } else { None })?;
                    Some((g.label(), mean))
                })
                .collect()
        };
    let util = odd_one(&gpus(&|g| g.util_pct.map(f64::from)), |a, b| a < b)
        .filter(|(_, x, med)| med - x >= k.get("util-gap") && *med >= 50.0);
    let clock = odd_one(
        &gpus(&|g| {
            g.util_pct.filter(|u| *u >= 50)?;
            g.sm_clock_mhz.map(f64::from)
        }),
        |a, b| a < b,
    )
    .filter(|(_, x, med)| *x < k.get("clock-share") * med);
    if rank.is_none() && util.is_none() && clock.is_none() {
        return None;
    }
    let title = || match (&rank, &util, &clock) {
        (Some((r, x, med)), _, _) => format!(
            "rank {r} is {:.0}% slower than the others",
            (x / med - 1.0) * 100.0
        ),
        (None, Some((g, x, med)), _) => {
            format!("GPU {g} is busy {x:.0}% while the others are at {med:.0}%")
        }
        (None, None, Some((g, x, med))) => {
            format!("GPU {g} runs at {x:.0} MHz while the others run at {med:.0} MHz")
        }
        (None, None, None) => String::new(),
    };
    let mut f = v.enter(Severity::Warn, title);
    if let Some((r, x, med)) = rank {
        f = f
            .why(|| format!("rank {r}: {x:.0} ms per step; the other ranks' median {med:.0} ms"))
            .gain(1.0 - med / x);
    }
    if let Some((g, x, med)) = &util {
        f = f.why(|| format!("GPU {g}: {x:.0}% utilization; the others' median {med:.0}%"));
    }
    if let Some((g, x, med)) = &clock {
        f = f.why(|| {
            format!("GPU {g}: SM clock {x:.0} MHz while busy; the others' median {med:.0} MHz")
        });
    }
    Some(
        f.act(|| "look at that rank's node: other jobs (nvidia-smi, top), its disk, its network")
            .act(|| "compare data_time per rank: an uneven shard or a slow local disk shows there")
            .act(|| "a GPU with lower clocks: check its temperature and power (nvidia-smi -q -d PERFORMANCE)"),
    )
}
