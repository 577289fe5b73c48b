//! `steptop compare`: what a change did. Each run is read exactly as `report` reads it, and
//! its report's figures are compared with the first run's (the baseline) under the report
//! JSON's own names. A change counts as significant only past its noise: for the median step
//! time (and the rates that are its inverse) the uncertainty of a median over the runs' steps,
//! for the rest the runs' own step-to-step spread; the findings (`findings.rs`) say what the changes mean and what to do.

pub mod baseline;
pub mod findings;
pub mod html;
pub mod render;

use std::path::PathBuf;

use serde::Serialize;
use serde_json::Value;

use crate::analysis::read_progress::Progress;
use crate::common::error::Error;
use crate::settings::config::Config;
use crate::sink::report::{self, Report};

/// Version of the compare JSON; bumped when a field changes meaning or goes away.
pub const SCHEMA_VERSION: u32 = 1;

/// The report figures a run is summarised by, under the report JSON's names.
const FIGURES: [&str; 15] = [
    "steps",
    "loss",
    "step_time_ms",
    "samples_per_s",
    "iters_per_s",
    "tokens_per_s",
    "tokens_per_gpu_s",
    "mfu_pct",
    "data_share",
    "forward_ms",
    "unlogged_ms",
    "stages",
    "cache",
    "config",
    "last",
];

/// A relative change smaller than this is noise however steady the runs were.
const NOISE_FLOOR: f64 = 0.02;

/// One run to compare: its files and what to call it.
#[derive(Clone, Debug)]
pub struct RunInput {
    pub label: String,
    pub paths: Vec<PathBuf>,
    /// Which run of the files (0 the first) when they hold several; None for all of them.
    pub run: Option<usize>,
}

/// A run as compare shows it.
#[derive(Debug, Serialize)]
pub struct RunOut {
    pub label: String,
    pub paths: Vec<String>,
    /// The report's figures (`FIGURES`, and `hardware` and `stacks` for a recording), as
    /// `report` names them.
    #[serde(flatten)]
    pub figures: serde_json::Map<String, Value>,
    /// Its step time's relative spread, (p95 - p50) / p50: what a change of a figure that is
    /// not the median step must exceed.
    pub spread: Option<f64>,
    /// The relative standard error of its median step time, over the steps it has: what a
    /// change of the median must exceed (three times, with the other run's).
    pub median_error: Option<f64>,
}

/// One figure of one run against the baseline.
#[derive(Clone, Debug, Serialize)]
pub struct FigureChange {
    /// The report JSON's path: `samples_per_s`, `step_time_ms.p50`, `stages.VRT Stage8.mean_ms`.
    pub figure: String,
    /// The run's label.
    pub run: String,
    pub from: f64,
    pub to: f64,
    pub ratio: Option<f64>,
    /// Past the noise (and 2%): for the median step time and the rates that move as its
    /// inverse, three standard errors of the medians' difference; for the rest, the larger
    /// of the runs' step-to-step spreads.
    pub significant: bool,
}

#[derive(Debug, Serialize)]
pub struct Comparison {
    pub schema_version: u32,
    pub runs: Vec<RunOut>,
    pub changes: Vec<FigureChange>,
    pub findings: Vec<findings::Finding>,
    /// Sentences on what could not be compared (a run with no step timing, one much shorter).
    pub notes: Vec<String>,
    /// What the HTML page draws of each run, in order (none when built from reports alone).
    #[serde(skip)]
    pub drawings: Vec<RunDrawing>,
}

/// One run as the HTML page draws it: its curves and its step breakdown.
#[derive(Debug)]
pub struct RunDrawing {
    pub curves: report::Curves,
    pub parts: Vec<report::PartOut>,
}

/// Reads every run, all at once (each through report's ingest, on a thread of its own), and
/// compares them.
pub fn compare(runs: &[RunInput], cfg: &Config, progress: &Progress) -> Result<Comparison, Error> {
    type Read = Result<(Report, report::Curves), Error>;
    let reports: Vec<Read> = std::thread::scope(|scope| {
        let handles: Vec<_> = runs
            .iter()
            .map(|run| {
                scope.spawn(move || {
                    crate::analysis::analyze_run(&run.paths, cfg, run.run, progress)
                        .map(|a| (Report::build(&a), report::Curves::of(&a.model)))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| {
                    Err(Error::Runtime("a run's reader stopped unexpectedly".into()))
                })
            })
            .collect()
    });
    let (reports, curves): (Vec<Report>, Vec<report::Curves>) = reports
        .into_iter()
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .unzip();
    let mut c = build(runs, &reports);
    c.drawings = reports
        .into_iter()
        .zip(curves)
        .map(|(r, curves)| RunDrawing {
            curves,
            parts: r.breakdown.parts,
        })
        .collect();
    Ok(c)
}

/// The comparison of reports already built, the first being the baseline.
pub fn build(runs: &[RunInput], reports: &[Report]) -> Comparison {
    let values: Vec<Value> = reports
        .iter()
        .map(|r| serde_json::to_value(r).unwrap_or(Value::Null))
        .collect();
    let outs: Vec<RunOut> = runs
        .iter()
        .zip(&values)
        .map(|(run, v)| run_out(run, v))
        .collect();
    let mut notes = Vec::new();
    for o in &outs {
        if o.figures.get("step_time_ms").is_none_or(Value::is_null) {
            notes.push(format!(
                "{}: no step line gives a step time, so its step time and throughput are not \
                 compared (its timing blocks are)",
                o.label
            ));
        }
    }
    let mut changes = Vec::new();
    if let Some((base, rest)) = values.split_first() {
        let base_steps = count(base);
        for (i, v) in rest.iter().enumerate() {
            let run = &outs[i + 1];
            changes.extend(figure_changes(
                base,
                v,
                &run.label,
                Noise::between(&outs[0], run),
            ));
            let (a, b) = (base_steps, count(v));
            if a > 0 && b > 0 && (a.min(b) as f64) < 0.25 * a.max(b) as f64 {
                notes.push(format!(
                    "{} has {b} steps and {} has {a}: the figures compare what each has, \
                     over very different lengths",
                    run.label, outs[0].label
                ));
            }
        }
    }
    let findings = findings::find(&outs, &changes);
    Comparison {
        schema_version: SCHEMA_VERSION,
        runs: outs,
        changes,
        findings,
        notes,
        drawings: Vec::new(),
    }
}

fn run_out(run: &RunInput, v: &Value) -> RunOut {
    let mut figures = serde_json::Map::new();
    for key in FIGURES.iter().chain(["hardware", "stacks"].iter()) {
        if let Some(x) = v.get(key).filter(|x| !x.is_null()) {
            figures.insert((*key).to_string(), x.clone());
        }
    }
    let p = |q: &str| {
        v.pointer(&format!("/step_time_ms/{q}"))
            .and_then(Value::as_f64)
    };
    let spread = match (p("p50"), p("p95")) {
        (Some(p50), Some(p95)) if p50 > 0.0 => Some((p95 - p50) / p50),
        _ => None,
    };
    RunOut {
        label: run.label.clone(),
        paths: run.paths.iter().map(|p| p.display().to_string()).collect(),
        figures,
        spread,
        median_error: spread.and_then(|s| median_error(s, count(v))),
    }
}

fn count(v: &Value) -> u64 {
    v.pointer("/steps/count")
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

/// The relative standard error of a median over `n` steps whose spread, (p95 - p50) / p50, is
/// `spread`: the spread read as 1.645 standard deviations of a normal distribution, whose
/// median has a standard error of 1.2533 sigma / sqrt(n). A median of many steps is known far
/// better than one step is: a run of 500 steps whose p95 is 50% over its median knows that
/// median to about 2%, and a change of half of it is no noise.
fn median_error(spread: f64, n: u64) -> Option<f64> {
    (n >= 2).then(|| 1.2533 * (spread / 1.645) / (n as f64).sqrt())
}

/// What a change of the median step time must exceed: three standard errors of the
/// difference, at least 2%.
fn median_noise(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    Some((3.0 * (a?.powi(2) + b?.powi(2)).sqrt()).max(NOISE_FLOOR))
}

/// What a relative change must exceed: the larger spread of the two runs, at least 2%.
fn noise(a: Option<f64>, b: Option<f64>) -> f64 {
    a.into_iter().chain(b).fold(NOISE_FLOOR, f64::max)
}

/// What a change must exceed to be more than noise.
#[derive(Clone, Copy, Debug)]
struct Noise {
    /// For a figure of the steps' spread (p95, a stage's mean): the runs' spread.
    spread: f64,
    /// For the median step time and the rates that are its inverse: the median's error.
    median: Option<f64>,
}

impl Noise {
    /// What a change from run `a` to run `b` must exceed.
    fn between(a: &RunOut, b: &RunOut) -> Noise {
        Noise {
            spread: noise(a.spread, b.spread),
            median: median_noise(a.median_error, b.median_error),
        }
    }
}

/// How far a rate's change may be from the step time's inverse for a step's work to count as
/// the same.
const SAME_WORK: f64 = 0.05;

/// The rates one step time's change also moves: one change, one verdict on each row.
const RATES: [&str; 4] = [
    "samples_per_s",
    "iters_per_s",
    "tokens_per_s",
    "tokens_per_gpu_s",
];

/// Every figure both runs have, as a change from `base` to `run`.
fn figure_changes(base: &Value, run: &Value, label: &str, noise: Noise) -> Vec<FigureChange> {
    let mut paths: Vec<String> = [
        "step_time_ms.p50",
        "step_time_ms.p95",
        "samples_per_s",
        "iters_per_s",
        "tokens_per_s",
        "tokens_per_gpu_s",
        "mfu_pct",
        "data_share",
        "forward_ms",
        "unlogged_ms",
        "cache.hit_rate",
        "hardware.gpus.0.util_pct.p50",
        "hardware.gpus.0.power_w.p50",
        "hardware.gpus.0.mem_used_bytes.p50",
        "hardware.host_mem_peak_bytes",
    ]
    .iter()
    .map(|s| (*s).to_string())
    .collect();
    let stage_names = |v: &Value| -> Vec<String> {
        v.get("stages")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.get("name")?.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let theirs = stage_names(run);
    for name in stage_names(base).into_iter().filter(|n| theirs.contains(n)) {
        paths.push(format!("stages.{name}.mean_ms"));
    }
    let mut changes: Vec<FigureChange> = paths
        .into_iter()
        .filter_map(|figure| {
            let from = value_at(base, &figure)?;
            let to = value_at(run, &figure)?;
            let ratio = (from != 0.0).then(|| to / from);
            let bound = match noise.median {
                Some(m) if figure == "step_time_ms.p50" => m,
                _ => noise.spread,
            };
            let significant = ratio.is_some_and(|r| (r - 1.0).abs() > bound)
                // A share moves in points: a change under one point is noise.
                && (figure != "data_share" || (to - from).abs() >= 0.01);
            Some(FigureChange {
                figure,
                run: label.to_string(),
                from,
                to,
                ratio,
                significant,
            })
        })
        .collect();
    // A rate is the median step's inverse times a step's work: where it moved as that inverse
    // (the same work a step), its change is the step time's, and gets its verdict. A batch
    // that changed moves samples/s apart from the step: judged on its own.
    let step = changes
        .iter()
        .find(|c| c.figure == "step_time_ms.p50")
        .and_then(|c| Some((c.ratio?, c.significant)));
    if let (Some((r, significant)), Some(_)) = (step, noise.median) {
        for c in changes
            .iter_mut()
            .filter(|c| RATES.contains(&c.figure.as_str()))
        {
            if c.ratio.is_some_and(|q| (q * r - 1.0).abs() < SAME_WORK) {
                c.significant = significant;
            }
        }
    }
    changes
}

/// The number at a report path: dots separate keys; `stages.NAME.x` finds the stage by name,
/// and a number is an array index.
pub fn value_at(v: &Value, path: &str) -> Option<f64> {
    value_in(|key| v.get(key), path)
}

impl RunOut {
    /// The number at a report path among the run's figures.
    pub fn value(&self, path: &str) -> Option<f64> {
        value_in(|key| self.figures.get(key), path)
    }
}

/// `value_at`, with `top` giving the top-level figures.
fn value_in<'a>(top: impl Fn(&str) -> Option<&'a Value>, path: &str) -> Option<f64> {
    if let Some(rest) = path.strip_prefix("stages.") {
        let (name, key) = rest.rsplit_once('.')?;
        let stage = top("stages")?
            .as_array()?
            .iter()
            .find(|s| s.get("name").and_then(Value::as_str) == Some(name))?;
        return stage.get(key)?.as_f64();
    }
    let mut keys = path.split('.');
    let mut at = top(keys.next()?)?;
    for key in keys {
        at = match key.parse::<usize>() {
            Ok(i) => at.get(i)?,
            Err(_) => at.get(key)?,
        };
    }
    at.as_f64()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn figures_are_read_at_their_report_paths() {
        let v = json!({
            "samples_per_s": 29.8,
            "step_time_ms": {"p50": 134.2},
            "stages": [{"name": "VRT Stage8", "mean_ms": 1200.0}],
            "hardware": {"gpus": [{"power_w": {"p50": 100.0}}]}
        });
        assert_eq!(value_at(&v, "samples_per_s"), Some(29.8));
        assert_eq!(value_at(&v, "step_time_ms.p50"), Some(134.2));
        assert_eq!(value_at(&v, "stages.VRT Stage8.mean_ms"), Some(1200.0));
        assert_eq!(value_at(&v, "hardware.gpus.0.power_w.p50"), Some(100.0));
        assert_eq!(value_at(&v, "cache.hit_rate"), None);
    }

    #[test]
    fn a_change_is_significant_only_past_both_runs_spread() {
        let base = json!({"samples_per_s": 100.0});
        let small = json!({"samples_per_s": 104.0});
        let large = json!({"samples_per_s": 110.0});
        let at = |v: &Value, spread| {
            let noise = Noise {
                spread,
                median: None,
            };
            figure_changes(&base, v, "b", noise)[0].significant
        };
        assert!(!at(&small, 0.05));
        assert!(at(&large, 0.05));
        assert!(at(&small, noise(Some(0.01), Some(0.03))));
        assert!(!at(&small, noise(Some(0.01), Some(0.06))));
    }
}

#[cfg(test)]
mod median_tests {
    use super::*;
    use serde_json::json;

    /// Two runs of one script, num_workers 0 then 2: the median step halves, while the
    /// second run's steps spread wide (p95 2.4 times its median). Over hundreds of steps the
    /// median is known to a few percent: a halving is a change, on the step time's row and on
    /// every rate's, one verdict for one change.
    #[test]
    fn a_halved_median_is_a_change_on_every_row_that_shows_it() {
        let run = |p50: f64, p95: f64, steps: u64, its: f64| {
            json!({
                "steps": {"count": steps},
                "step_time_ms": {"p50": p50, "p95": p95},
                "iters_per_s": its,
            })
        };
        let (a, b) = (run(83.5, 90.0, 300, 11.9), run(41.2, 100.0, 600, 24.4));
        let inputs = [
            RunInput {
                label: "workers0".into(),
                paths: Vec::new(),
                run: None,
            },
            RunInput {
                label: "workers2".into(),
                paths: Vec::new(),
                run: None,
            },
        ];
        let changes_of = |a: &Value, b: &Value| {
            let outs: Vec<RunOut> = inputs
                .iter()
                .zip([a, b])
                .map(|(i, v)| run_out(i, v))
                .collect();
            figure_changes(a, b, "workers2", Noise::between(&outs[0], &outs[1]))
        };
        let changes = changes_of(&a, &b);
        let verdict = |figure: &str| {
            changes
                .iter()
                .find(|c| c.figure == figure)
                .map(|c| c.significant)
        };
        assert_eq!(verdict("step_time_ms.p50"), Some(true), "{changes:?}");
        assert_eq!(verdict("iters_per_s"), Some(true), "{changes:?}");
        // The tail is judged by the spread: p95 90 -> 100 is within it.
        assert_eq!(verdict("step_time_ms.p95"), Some(false));
        // Ten steps each: the same halving is within the median's noise, on both rows.
        let (a, b) = (run(83.5, 200.0, 10, 11.9), run(60.0, 200.0, 10, 16.0));
        let changes = changes_of(&a, &b);
        assert!(changes.iter().all(|c| !c.significant), "{changes:?}");
    }
}
