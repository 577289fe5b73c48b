//! Runs that ended in the same file before the one the model shows: a log that holds several
//! launches (a run appended after another, a restart from step 0, a resume from a
//! checkpoint) is not one blended run. When a file's step count goes back, the model keeps a
//! few figures of the run that ended here and starts afresh.

use serde::Serialize;

use super::rank_state::RankState;

/// Runs listed; later ones are only counted.
pub const RUNS_KEPT: usize = 64;

/// What is kept of a run that ended.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RunSummary {
    /// The file it was read from (its index among the inputs) and its first and last lines.
    #[serde(skip)]
    pub source: usize,
    pub first_line: u64,
    pub last_line: u64,
    pub first_step: Option<u64>,
    pub last_step: Option<u64>,
    /// Step records it had.
    pub steps: u64,
    pub step_time_ms: Option<f64>,
    pub samples_per_s: Option<f64>,
    pub tokens_per_s: Option<f64>,
    pub loss_last: Option<f64>,
    /// Alerts raised while it ran.
    pub alerts: u64,
    /// Settings the next run logged differently (`num_workers` 4, then 64): a change between
    /// runs, not a disagreement inside one.
    pub then_changed: Vec<super::SettingChange>,
}

impl RunSummary {
    /// `steps 3..120`, or that its lines named no step.
    pub fn steps_words(&self) -> String {
        match (self.first_step, self.last_step) {
            (Some(a), Some(b)) => format!("steps {a}..{b}"),
            _ => "no step numbers".into(),
        }
    }

    /// The settings the next run logged differently, in words (`num_workers 4 -> 64`).
    pub fn then_changed_words(&self) -> Option<String> {
        let words: Vec<String> = (self.then_changed.iter())
            .map(|c| format!("{} {} -> {}", c.key, c.was, c.now))
            .collect();
        (!words.is_empty()).then(|| words.join(", "))
    }

    /// The figures of `merged`, the run that ended.
    pub fn of(merged: &RankState, lines: (usize, u64, u64), alerts: u64) -> RunSummary {
        let (source, first_line, last_line) = lines;
        RunSummary {
            source,
            first_line,
            last_line,
            first_step: merged.first_step,
            last_step: merged.last_step,
            steps: merged.records,
            step_time_ms: merged.mean_step_ms(),
            samples_per_s: merged.samples_per_s.run.quantile(0.5),
            tokens_per_s: merged.tokens_per_s.run.quantile(0.5),
            loss_last: merged.loss_track.last,
            alerts,
            then_changed: Vec::new(),
        }
    }
}
