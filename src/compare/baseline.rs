//! `--baseline RUN`: a finished run, read once as `report` reads it, whose figures the live
//! view, headless status lines and `/metrics` show beside the live ones. It is an input like
//! the logs: read before the monitor starts, never changed after.

use std::path::PathBuf;

use crate::config::Config;
use crate::error::Error;
use crate::report::{self, Report};

/// The baseline's figures, under the names the live figures have.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Baseline {
    pub label: String,
    pub samples_per_s: Option<f64>,
    pub iters_per_s: Option<f64>,
    pub tokens_per_s: Option<f64>,
    pub step_time_ms: Option<f64>,
    pub data_share: Option<f64>,
    pub forward_ms: Option<f64>,
    /// Each stage's mean over the run, by name.
    pub stages: Vec<(String, f64)>,
    /// The step breakdown's parts over the run, in step order: role (`data`, `forward`,
    /// `unlogged`, ...) and milliseconds; and the mean step they are parts of.
    pub parts: Vec<(&'static str, f64)>,
    pub mean_step_ms: Option<f64>,
}

impl Baseline {
    /// Reads the run at `paths`.
    pub fn read(label: String, paths: &[PathBuf], cfg: &Config) -> Result<Baseline, Error> {
        let a = report::analyze(paths, cfg)?;
        Ok(Baseline::of(label, &Report::build(&a)))
    }

    pub fn of(label: String, r: &Report) -> Baseline {
        Baseline {
            label,
            samples_per_s: r.samples_per_s,
            iters_per_s: r.iters_per_s,
            tokens_per_s: r.tokens_per_s,
            step_time_ms: r.step_time_ms.as_ref().map(|q| q.p50),
            data_share: r.data_share,
            forward_ms: r.forward_ms,
            stages: r
                .stages
                .iter()
                .map(|s| (s.name.clone(), s.mean_ms))
                .collect(),
            parts: r
                .breakdown
                .parts
                .iter()
                .filter_map(|p| Some((p.role, p.ms?)))
                .collect(),
            mean_step_ms: r.breakdown.step_ms,
        }
    }

    /// The baseline's mean of stage `name`.
    pub fn stage(&self, name: &str) -> Option<f64> {
        self.stages
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, ms)| *ms)
    }
}

/// `now` over `then`, when both are there and `then` is not zero.
pub fn ratio(now: Option<f64>, then: Option<f64>) -> Option<f64> {
    let then = then.filter(|t| *t != 0.0)?;
    Some(now? / then)
}

/// A ratio as a signed change: `-2%`, `+46%`.
pub fn change(ratio: f64) -> String {
    format!("{:+.0}%", (ratio - 1.0) * 100.0)
}
