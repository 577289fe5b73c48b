//! What the changes between a run and the baseline mean, as findings with evidence and what to
//! do next. A finding reads only the figures and changes `compare` computed.

use serde::Serialize;
use serde_json::Value;

use super::{FigureChange, RunOut};

/// A throughput within this of the baseline's is "the same" for batch scaling, whatever the
/// noise: a bigger batch is bought for throughput, and 5% is not worth its memory.
const SAME_THROUGHPUT: f64 = 0.05;
/// A data share that moves less than this (points of the step) is no input finding.
const DATA_SHARE_POINTS: f64 = 0.05;
/// A data share from which a run that got faster is still data-bound: `data_loading_bound`'s
/// warning share.
const STILL_DATA_BOUND: f64 = 0.10;
/// A stage, the unlogged time or a GPU figure must move at least this much to be a finding.
const MOVED: f64 = 0.05;
/// Stages named at most, the largest moves first.
const STAGES_NAMED: usize = 3;
/// A loss this much worse at the same last step diverged; the step-to-step spread of a loss is
/// not known from a report, so the bound is fixed.
const LOSS_WORSE: f64 = 0.05;

#[derive(Clone, Debug, Serialize)]
pub struct Finding {
    pub id: &'static str,
    pub severity: &'static str,
    /// The run it is about (its label).
    pub run: String,
    pub title: String,
    pub evidence: Vec<String>,
    pub actions: Vec<String>,
}

/// Settings compared between runs, as the report's `config` names them.
const SETTINGS: [&str; 7] = [
    "batch_size",
    "num_workers",
    "world_size",
    "pin_memory",
    "amp_dtype",
    "gradient_checkpointing",
    "cudnn_benchmark",
];

/// The findings of every run against the first.
pub fn find(runs: &[RunOut], changes: &[FigureChange]) -> Vec<Finding> {
    let Some((base, rest)) = runs.split_first() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for run in rest {
        let of = |figure: &str| {
            changes
                .iter()
                .find(|c| c.run == run.label && c.figure == figure)
        };
        let finding = |id, severity, title: String| Finding {
            id,
            severity,
            run: run.label.clone(),
            title,
            evidence: Vec::new(),
            actions: Vec::new(),
        };
        let config = |r: &RunOut, key: &str| -> Option<String> {
            let stated = r.figures.get("config").and_then(|c| c.get(key));
            // A batch printed on the step lines (`bs 8`) when no setting states one.
            let printed = (key == "batch_size")
                .then(|| r.figures.get("last").and_then(|l| l.get(key)))
                .flatten()
                .and_then(Value::as_f64)
                .map(|b| Value::from(b.round() as u64));
            let v = stated.filter(|v| !v.is_null()).cloned().or(printed)?;
            Some(match v {
                Value::String(s) => s,
                other => other.to_string(),
            })
        };
        let differ: Vec<(String, String, String)> = SETTINGS
            .iter()
            .filter_map(|k| {
                let (a, b) = (config(base, k), config(run, k));
                (a != b && (a.is_some() || b.is_some())).then(|| {
                    let show = |x: Option<String>| x.unwrap_or_else(|| "not logged".into());
                    ((*k).to_string(), show(a), show(b))
                })
            })
            .collect();
        let batch = differ
            .iter()
            .find(|(k, a, b)| k == "batch_size" && a != "not logged" && b != "not logged");

        if let (Some((_, a, b)), Some(it)) = (batch, of("iters_per_s")) {
            let sps = of("samples_per_s");
            let gained = sps.and_then(|c| c.ratio).map(|r| r - 1.0);
            // The advice turns on which way the batch moved: a smaller batch that lost
            // throughput left the GPU short of work, a bigger one that lost it is too big.
            let grew = match (a.parse::<f64>(), b.parse::<f64>()) {
                (Ok(a), Ok(b)) => b > a,
                _ => true,
            };
            let (severity, verdict, actions) = match gained {
                Some(g) if g > SAME_THROUGHPUT => (
                    "info",
                    format!("samples/s up {}", signed_pct(g)),
                    vec!["keep it if the memory allows; scale the learning rate with the batch"],
                ),
                Some(g) if g < -SAME_THROUGHPUT && grew => (
                    "warn",
                    format!("samples/s down {}", signed_pct(g)),
                    vec![
                        "go back to the smaller batch: the bigger one is slower per sample",
                        "check GPU memory: a batch near the limit spends time in the allocator",
                    ],
                ),
                Some(g) if g < -SAME_THROUGHPUT => (
                    "warn",
                    format!("samples/s down {}", signed_pct(g)),
                    vec![
                        "go back to the bigger batch: the smaller one leaves the GPU short of work",
                        "if memory forced the smaller batch, accumulate gradients to keep the \
                         effective batch",
                    ],
                ),
                _ if grew => (
                    "warn",
                    "no throughput gained".to_string(),
                    vec![
                        "the GPU was already saturated: a bigger batch buys memory use, not speed",
                        "to speed up, cut work per sample (bf16, torch.compile) or feed more GPUs",
                        "halved it/s is expected when the batch doubles: compare samples/s",
                    ],
                ),
                _ => (
                    "info",
                    "no throughput lost".to_string(),
                    vec![
                        "the GPU stays saturated at the smaller batch: it frees memory at no cost",
                        "scale the learning rate with the batch",
                    ],
                ),
            };
            let mut f = finding(
                "batch_scaling",
                severity,
                format!("batch {a} → {b}: {verdict}"),
            );
            f.evidence.push(format!("batch {a} → {b}"));
            f.evidence
                .push(format!("{} → {} it/s", sig(it.from), sig(it.to)));
            if let Some(c) = sps {
                f.evidence
                    .push(format!("{} → {} samples/s", sig(c.from), sig(c.to)));
            }
            // More GPUs change the throughput as much as the batch does.
            if let Some((_, wa, wb)) = differ.iter().find(|(k, ..)| k == "world_size") {
                f.evidence.push(format!(
                    "the GPU count changed too ({wa} → {wb}): part of the change is theirs"
                ));
            }
            f.actions = actions.into_iter().map(String::from).collect();
            out.push(f);
        }

        if let Some(c) = of("data_share").filter(|c| c.significant) {
            let moved = c.to - c.from;
            if moved.abs() >= DATA_SHARE_POINTS {
                let (id, severity, actions) = if moved < 0.0 {
                    (
                        "input_fixed",
                        "info",
                        vec!["input no longer limits the step: look at the compute next"],
                    )
                } else {
                    (
                        "input_regressed",
                        "warn",
                        vec![
                            "data loading takes more of each step than before: check num_workers, \
                             the data path and the cache",
                        ],
                    )
                };
                let mut f = finding(
                    id,
                    severity,
                    format!("data loading {} → {} of each step", pct(c.from), pct(c.to)),
                );
                f.evidence
                    .push(format!("data share {} → {}", pct(c.from), pct(c.to)));
                if let Some((_, a, b)) = differ.iter().find(|(k, ..)| k == "num_workers") {
                    f.evidence.push(format!("num_workers {a} → {b}"));
                }
                f.actions = actions.into_iter().map(String::from).collect();
                out.push(f);
            }
        }

        let throughput = ["samples_per_s", "tokens_per_s"]
            .iter()
            .find_map(|f| of(f))
            .or_else(|| of("iters_per_s").filter(|_| batch.is_none()));
        if let Some(c) = throughput
            && let Some(r) = c.ratio
        {
            let unit = unit_of(&c.figure);
            let noise = if c.significant { "" } else { ", within noise" };
            let mut f = finding(
                "throughput_changed",
                "info",
                format!(
                    "{unit} {} → {} ({}{noise})",
                    sig(c.from),
                    sig(c.to),
                    signed_pct(r - 1.0)
                ),
            );
            f.evidence.push(format!(
                "{unit} {} → {}, {}",
                sig(c.from),
                sig(c.to),
                if c.significant {
                    "past the noise of the runs' median step"
                } else {
                    "within the noise of the runs' median step: not a change"
                }
            ));
            out.push(f);
            // Did the change help? Then say what still limits the run, if the input does.
            let better = r > 1.0;
            if c.significant
                && better
                && let Some(share) = run.value("data_share").filter(|s| *s >= STILL_DATA_BOUND)
            {
                let workers = differ.iter().find(|(k, ..)| k == "num_workers");
                let mut f = finding(
                    "still_data_bound",
                    "warn",
                    format!("faster, and still {} data-bound", pct(share)),
                );
                f.evidence
                    .push(format!("data loading takes {} of each step", pct(share)));
                f.actions.push(match workers {
                    Some((_, a, b)) => format!(
                        "num_workers {a} → {b} helped: more workers would help again, while the \
                         cores allow"
                    ),
                    None => "the input still limits the step: more DataLoader workers, faster \
                             storage, or decoding off the step"
                        .to_string(),
                });
                out.push(f);
            }
        }

        let mut stages: Vec<&FigureChange> = changes
            .iter()
            .filter(|c| c.run == run.label && c.figure.starts_with("stages.") && c.significant)
            .filter(|c| c.ratio.is_some_and(|r| (r - 1.0).abs() >= MOVED))
            .collect();
        stages.sort_by(|a, b| (b.to - b.from).abs().total_cmp(&(a.to - a.from).abs()));
        for c in stages.into_iter().take(STAGES_NAMED) {
            let name = c
                .figure
                .strip_prefix("stages.")
                .and_then(|s| s.strip_suffix(".mean_ms"))
                .unwrap_or(&c.figure);
            let faster = c.to < c.from;
            let mut f = finding(
                "stage_changed",
                if faster { "info" } else { "warn" },
                format!(
                    "{name} {} → {} ms ({})",
                    sig(c.from),
                    sig(c.to),
                    signed_pct(c.ratio.unwrap_or(1.0) - 1.0)
                ),
            );
            f.evidence
                .push(format!("{name}: mean {} → {} ms", sig(c.from), sig(c.to)));
            out.push(f);
        }

        if let Some(c) = of("unlogged_ms")
            .filter(|c| c.significant && c.ratio.is_some_and(|r| (r - 1.0).abs() >= MOVED))
        {
            let mut f = finding(
                "unlogged_changed",
                if c.to < c.from { "info" } else { "warn" },
                format!(
                    "backward and optimizer (unlogged) {} → {} ms",
                    sig(c.from),
                    sig(c.to)
                ),
            );
            f.evidence.push(format!(
                "step time not in the logged parts: {} → {} ms",
                sig(c.from),
                sig(c.to)
            ));
            if let Some((_, a, b)) = differ.iter().find(|(k, ..)| k == "gradient_checkpointing") {
                f.evidence.push(format!("gradient_checkpointing {a} → {b}"));
            }
            out.push(f);
        }

        for (figure, what) in [
            ("hardware.gpus.0.util_pct.p50", "GPU utilization"),
            ("hardware.gpus.0.power_w.p50", "GPU power"),
        ] {
            if let Some(c) = of(figure)
                .filter(|c| c.significant && c.ratio.is_some_and(|r| (r - 1.0).abs() >= MOVED))
            {
                let unit = if figure.contains("power") { " W" } else { "%" };
                let mut f = finding(
                    "gpu_changed",
                    "info",
                    format!("{what} {}{unit} → {}{unit}", sig(c.from), sig(c.to)),
                );
                f.evidence.push(format!(
                    "{what} p50 {}{unit} → {}{unit}",
                    sig(c.from),
                    sig(c.to)
                ));
                out.push(f);
            }
        }

        let at = |r: &RunOut, path: &str| r.value(path);
        if let (Some(step), Some(from), Some(to)) = (
            at(base, "steps.last").filter(|s| at(run, "steps.last") == Some(*s)),
            at(base, "loss.last"),
            at(run, "loss.last"),
        ) && from > 0.0
            && to > from * (1.0 + LOSS_WORSE)
        {
            let mut f = finding(
                "loss_diverged",
                "warn",
                format!(
                    "loss at step {step:.0}: {} → {} ({})",
                    sig(from),
                    sig(to),
                    signed_pct(to / from - 1.0)
                ),
            );
            f.evidence.push(format!(
                "the last loss of both runs, at the same step {step:.0}: {} → {}",
                sig(from),
                sig(to)
            ));
            f.actions = vec![
                "check the learning rate against the new batch size (scale it linearly)".into(),
                "with AMP, watch for overflows: a loss scale that keeps dropping, NaN steps".into(),
            ];
            out.push(f);
        }

        if !differ.is_empty() {
            let list: Vec<String> = differ
                .iter()
                .map(|(k, a, b)| format!("{k} {a} → {b}"))
                .collect();
            let mut f = finding("config_changed", "info", list.join(", "));
            f.evidence = list;
            out.push(f);
        }
    }
    out
}

fn unit_of(figure: &str) -> &'static str {
    match figure {
        "samples_per_s" => "samples/s",
        "tokens_per_s" => "tokens/s",
        _ => "it/s",
    }
}

/// Three significant digits: 7.45, 29.8, 1200.
fn sig(v: f64) -> String {
    let a = v.abs();
    if a >= 100.0 || a == 0.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 1.0 {
        format!("{v:.2}")
    } else {
        format!("{v:.3}")
    }
}

fn pct(share: f64) -> String {
    format!("{:.0}%", share * 100.0)
}

fn signed_pct(change: f64) -> String {
    format!("{:+.0}%", change * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(label: &str, figures: Value) -> RunOut {
        RunOut {
            label: label.into(),
            paths: Vec::new(),
            figures: figures.as_object().cloned().unwrap_or_default(),
            spread: None,
            median_error: None,
        }
    }

    /// num_workers 0 then 2: twice the iterations a second, and the input still takes 96% of
    /// each step. "Did my change help?" goes on to what still limits the run.
    #[test]
    fn a_change_that_helped_says_what_still_limits_the_run() {
        let base = run(
            "workers0",
            json!({"config": {"num_workers": 0}, "data_share": 0.98}),
        );
        let two = run(
            "workers2",
            json!({"config": {"num_workers": 2}, "data_share": 0.96}),
        );
        let changes = vec![FigureChange {
            figure: "iters_per_s".into(),
            run: "workers2".into(),
            from: 11.9,
            to: 24.4,
            ratio: Some(24.4 / 11.9),
            significant: true,
        }];
        let found = find(&[base, two], &changes);
        let still = found
            .iter()
            .find(|f| f.id == "still_data_bound")
            .expect("said");
        assert_eq!(still.title, "faster, and still 96% data-bound");
        assert!(
            still.actions[0].contains("num_workers 0 → 2 helped: more workers would help again"),
            "{still:?}"
        );
    }
}
