//! `--baseline RUN`: a finished run, read once as `report` reads it, into the figures the
//! live view, headless status lines and `/metrics` show beside the live ones
//! (`model::baseline`).

use std::path::PathBuf;

use crate::common::error::Error;
pub use crate::model::baseline::Baseline;
use crate::settings::config::Config;
use crate::sink::report::Report;

/// Reads the run at `paths` as `report` reads it, without the chart series only its HTML page
/// draws: the baseline is the report's figures.
pub fn read(label: String, paths: &[PathBuf], cfg: &Config) -> Result<Baseline, Error> {
    let mut cfg = cfg.clone();
    cfg.model = cfg.model.summary(false);
    let a = crate::analysis::analyze(paths, &cfg)?;
    Ok(of(label, &Report::build(&a)))
}

/// The figures of a run's report.
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
