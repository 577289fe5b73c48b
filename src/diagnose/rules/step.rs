//! Where the step's time goes beyond the input: time no log accounts for, one forward stage
//! that dominates, a larger batch that bought nothing, steps slower than the run's own norm.

use super::{Needs, Rule, View, grade, p, pct};
use crate::diagnose::params::{Basis, Knobs};
use crate::diagnose::{Finding, Severity};
use crate::parse::labels::Role;

pub const UNLOGGED_TIME: Rule = Rule {
    id: "unlogged_time",
    basis: Basis::Steps,
    summary: "most of the step is not covered by the logged stages (backward and optimizer are not timed)",
    params: &[
        p(
            "share",
            0.5,
            "unlogged share of step time from which the rule speaks",
        ),
        p(
            "exit",
            0.4,
            "unlogged share under which an active alert clears",
        ),
    ],
    detail: true,
    hidden_by: &[],
    needs: Needs::BLOCKS,
    check: unlogged_time,
};

fn unlogged_time(v: &View, k: &Knobs) -> Option<Finding> {
    if v.m.stages.blocks == 0 {
        return None;
    }
    let b = v.breakdown();
    let (forward, unlogged, step) = (b.forward_ms?, b.unlogged_ms?, b.step_ms?);
    if step <= 0.0 {
        return None;
    }
    let share = unlogged / step;
    let level = grade(share, k.get("share"), f64::INFINITY, k.get("exit"))?.map(|_| Severity::Info);
    let itemised = |role: Role| b.parts.iter().any(|p| p.role == role);
    let missing = match (itemised(Role::Backward), itemised(Role::Optimizer)) {
        (false, false) => ": backward and optimizer",
        (true, false) => ": the optimizer and what else the step does",
        (false, true) => ": the backward and what else the step does",
        (true, true) => "",
    };
    let title = || format!("{} of each step is not in any log{missing}", pct(share));
    let logged = |v: &View| {
        let b = v.breakdown();
        let mut names = vec![format!("the forward ({forward:.0} ms)")];
        if let Some(d) = b.data_ms.filter(|d| *d >= 0.5) {
            names.push(format!("data ({d:.0} ms)"));
        }
        names.extend(
            b.parts
                .iter()
                .map(|p| format!("{} ({:.0} ms)", p.name, p.ms)),
        );
        names.join(", ")
    };
    let mut f = v.graded(level, title)
        .why(|| if b.parts.is_empty() {
            format!(
                "the logged stages cover {forward:.0} ms of a {step:.0} ms step; {unlogged:.0} ms is not logged"
            )
        } else {
            format!("logged: {}; {unlogged:.0} ms of a {step:.0} ms step is not", logged(v))
        });
    if missing == ": backward and optimizer" {
        f = f.why(|| {
            format!(
                "backward + optimizer take {:.1}x the forward",
                unlogged / forward.max(1e-9)
            )
        });
    }
    if v.m.facts.gradient_checkpointing == Some(true) {
        f = f.why(|| "gradient checkpointing is on: the backward recomputes the forward");
    }
    Some(
        f.act(|| "time the backward and the optimizer too: torch.cuda.Event around loss.backward() and optimizer.step()")
            .act(|| "profile one step with torch.profiler before optimising the forward alone"),
    )
}

pub const STAGE_HOTSPOT: Rule = Rule {
    id: "stage_hotspot",
    basis: Basis::Steps,
    summary: "one forward stage takes a dominant share of the forward, or a stage regressed against its own baseline",
    params: &[
        p(
            "share",
            0.30,
            "share of the forward that one stage must take",
        ),
        p(
            "even-factor",
            2.0,
            "and at least this many times its even share (1 / stages)",
        ),
        p("exit", 0.25, "share under which an active alert clears"),
        p(
            "regress-factor",
            1.5,
            "a stage's recent mean over its early-run mean that counts as a regression",
        ),
    ],
    detail: true,
    hidden_by: &[],
    needs: Needs::TWO_STAGES,
    check: stage_hotspot,
};

fn stage_hotspot(v: &View, k: &Knobs) -> Option<Finding> {
    if v.m.stages.by_name.len() < 2 {
        return None;
    }
    let shares = v.stage_shares();
    let n = shares.len();
    if n < 2 {
        return None;
    }
    let &(name, ms, share) = shares.first()?;
    let even = 1.0 / n as f64;
    let dominant = share >= k.get("share") && share >= k.get("even-factor") * even;
    let holds = share >= k.get("exit") && share >= k.get("even-factor") * even * 0.8;
    let regressed = regression(v, k.get("regress-factor"));
    let f = match (dominant, regressed) {
        (true, _) => v.enter(Severity::Warn, || {
            format!("{name} takes {} of the forward", pct(share))
        }),
        (false, Some((stage, x))) => v.enter(Severity::Warn, || {
            format!("{stage} is {x:.1}x slower than earlier in the run")
        }),
        (false, None) if holds => v.stay(|| format!("{name} takes {} of the forward", pct(share))),
        (false, None) => return None,
    };
    let mut f = f.why(|| {
        format!(
            "{name}: {ms:.0} ms of a {:.0} ms forward ({}; {n} stages, an even share is {})",
            ms / share,
            pct(share),
            pct(even)
        )
    });
    if let Some(&(next, next_ms, _)) = shares.get(1) {
        f = f.why(|| format!("the next largest is {next} at {next_ms:.0} ms"));
    }
    if let Some((stage, x)) = regressed {
        f = f
            .why(|| format!("{stage} takes {x:.1}x its mean over the early run"))
            .strength(x);
    }
    if let Some(step) = v.step_mean() {
        f = f.gain(ms / 2.0 / step);
    }
    Some(
        f.act(|| format!("profile {name} alone (torch.profiler with record_function around it)"))
            .act(|| "look there for fp32 islands, unfused attention, or Python loops")
            .act(|| "if it is memory-bound, bf16 and fused kernels (torch.compile) help most"),
    )
}

/// The forward piece that slowed most against its own early-run mean, if by `factor`.
fn regression<'a>(v: &View<'a>, factor: f64) -> Option<(&'a str, f64)> {
    v.m.stages
        .by_name
        .iter()
        .filter(|s| s.leaf)
        .filter_map(|s| Some((s.name.as_str(), s.trend(v.windows.steps)?)))
        .filter(|(_, x)| *x >= factor)
        .max_by(|a, b| a.1.total_cmp(&b.1))
}

pub const BATCH_SCALING: Rule = Rule {
    id: "batch_scaling",
    basis: Basis::Steps,
    summary: "the batch size grew but samples/s did not (iter/s fell instead)",
    params: &[
        p(
            "batch-ratio",
            1.5,
            "growth of the batch size from which the rule compares",
        ),
        p(
            "samples-gain",
            1.15,
            "samples/s ratio under which the larger batch bought nothing",
        ),
        p("min-steps", 5.0, "steps needed at each batch size"),
    ],
    detail: true,
    hidden_by: &[],
    needs: Needs::BATCHES,
    check: batch_scaling,
};

fn batch_scaling(v: &View, k: &Knobs) -> Option<Finding> {
    let segs = &v.m.batches.segments;
    let min = k.get("min-steps") as u64;
    let last = segs.last().filter(|s| s.samples_per_s.count() >= min)?;
    let before = segs[..segs.len() - 1]
        .iter()
        .rev()
        .find(|s| s.samples_per_s.count() >= min && last.batch >= k.get("batch-ratio") * s.batch)?;
    let (s0, s1) = (before.samples_per_s.mean()?, last.samples_per_s.mean()?);
    let (i0, i1) = (before.iters_per_s.mean()?, last.iters_per_s.mean()?);
    if s1 >= k.get("samples-gain") * s0 {
        return None;
    }
    let title = || {
        format!(
            "batch {:.0} -> {:.0} did not raise samples/s ({s0:.1} -> {s1:.1})",
            before.batch, last.batch
        )
    };
    let mut f = v
        .enter(Severity::Warn, title)
        .why(|| format!("batch {:.0}: {i0:.2} it/s, {s0:.1} samples/s", before.batch))
        .why(|| format!("batch {:.0}: {i1:.2} it/s, {s1:.1} samples/s", last.batch));
    let data = v.data_share();
    f = match (data, v.gpu_util()) {
        (Some(d), _) if d >= 0.10 => f.why(|| {
            format!(
                "data loading takes {} of each step: the input caps samples/s",
                pct(d)
            )
        }),
        (_, Some(u)) => f.why(|| {
            format!("GPU utilization {u:.0}%: the GPU was already saturated at the smaller batch")
        }),
        _ => f.why(|| "the GPU was likely saturated already, or the input caps samples/s"),
    };
    Some(
        f.act(|| "keep the smaller batch unless the larger one helps convergence")
            .act(|| "check GPU utilization and data_time at the smaller batch to see which limit it hit"),
    )
}

pub const THROUGHPUT_DRIFT: Rule = Rule {
    id: "throughput_drift",
    basis: Basis::Steps,
    summary: "recent steps are well slower than the run's own norm",
    params: &[
        p(
            "factor",
            1.3,
            "recent step time (the mean of the last window without its largest, at most its median) over the run's median that warns",
        ),
        p(
            "exit-factor",
            1.15,
            "ratio under which an active alert clears",
        ),
        p("min-steps", 50.0, "steps in the run before it has a norm"),
        p(
            "busy-cpu-pct",
            90.0,
            "host CPU % from which the machine's load may explain a drift of step times read from lines' arrivals (then info, not warn)",
        ),
    ],
    detail: true,
    // A larger batch makes each step slower on purpose.
    hidden_by: &["batch_scaling"],
    needs: Needs::NOTHING,
    check: throughput_drift,
};

fn throughput_drift(v: &View, k: &Knobs) -> Option<Finding> {
    let run = &v.m.merged.step_time_ms.run;
    if (run.count() as f64) < k.get("min-steps") {
        return None;
    }
    // The median: a compiled first step or eval pauses do not move it.
    let norm = v.m.merged.step_median_ms?;
    // The recent mean without its largest step, but no more than the recent median: a slower
    // phase is most of the window, a few slow steps (a pause logged in a step, a brief
    // hiccup) are not a drift.
    let steps = &v.m.merged.step_time_ms;
    let mean = steps.recent.mean_last_but_max(v.windows.steps)?;
    // The recent figure is at most that mean: when the mean is under the exit factor already,
    // so is the figure, whatever the median (a sort of the window, at every step) would be.
    if norm > 0.0 && mean / norm < k.get("exit-factor") {
        return None;
    }
    let recent = mean.min(steps.recent(v.windows.steps)?.p50);
    let ratio = recent / norm;
    let mut level = grade(ratio, k.get("factor"), f64::INFINITY, k.get("exit-factor"))?;
    // Step times that are the gaps between lines' arrivals move when steptop reads late as
    // much as when the job slows: a machine this busy may be why, and with no reading of its
    // load nothing rules that out. Then the drift is said, not warned.
    let arrivals = v.m.basis.times_from_arrivals();
    let load = v.host_mean(|h| h.cpu_pct);
    let unexplained = load.is_some_and(|l| l < k.get("busy-cpu-pct"));
    if arrivals && !unexplained {
        level = level.map(|_| Severity::Info);
    }
    let title = || {
        format!(
            "steps are {:.0}% slower than this run's norm",
            (ratio - 1.0) * 100.0
        )
    };
    let mut f = v.graded(level, title).why(|| {
        format!("recent steps take {recent:.0} ms against a median of {norm:.0} ms over the run")
    });
    let others: Vec<&str> = v
        .active_rules()
        .filter(|r| *r != "throughput_drift" && *r != "compute_bound")
        .collect();
    if !others.is_empty() {
        f = f.why(|| format!("active at the same time: {}", others.join(", ")));
    }
    if arrivals {
        f = f.why(|| {
            let load = load.map_or("no probe reads this machine's load".to_string(), |l| {
                format!("this machine's CPU is at {l:.0}%")
            });
            format!("step times are the gaps between the lines' arrivals (the log prints no time), which a busy machine delays too; {load}")
        });
    }
    Some(
        f.gain(1.0 - 1.0 / ratio).act(
            || "see what else changed: other jobs on the node, GPU clocks, data on a slower disk",
        ),
    )
}
