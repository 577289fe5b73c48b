//! The batch path: whole files through ingest and the monitor to a finished analysis (the
//! model they built and its diagnosis), what `report`, `compare` and `--baseline` share. The
//! sinks receive an analysis; nothing here knows how it is shown.

#[cfg(test)]
pub mod fixture_inputs;
pub mod read_progress;

use std::path::PathBuf;

use crate::common::error::Error;
use crate::diagnose::Diagnosis;
use crate::input::ingest::{self, Feed};
use crate::input::recording;
use crate::model::Model;
use crate::monitor::Monitor;
use crate::monitor::msg::Msg;
use crate::settings::config::Config;
use read_progress::Progress;

/// The files read, the model they built and its diagnosis.
pub struct Analysis {
    pub model: Model,
    pub diagnosis: Diagnosis,
    pub feeds: Vec<Feed>,
}

/// Reads every file whole, in the order given, into one model and its diagnosis.
pub fn analyze(paths: &[PathBuf], cfg: &Config) -> Result<Analysis, Error> {
    analyze_run(paths, cfg, None, &Progress::off())
}

/// As `analyze`, keeping only run `run` (0 the first) where the files hold several, and
/// saying how far it is on `progress`.
pub fn analyze_run(
    paths: &[PathBuf],
    cfg: &Config,
    run: Option<usize>,
    progress: &Progress,
) -> Result<Analysis, Error> {
    let mut model = Monitor::new(cfg.model, cfg.diagnose.clone());
    model.only_run = run;
    let mut feeds = Vec::with_capacity(paths.len());
    let metric_files = crate::input::metric_files::any(paths.iter().map(PathBuf::as_path));
    for (i, path) in paths.iter().enumerate() {
        progress.file(i + 1, paths.len(), path);
        if recording::is_recording(path) {
            replay_recording(path, cfg, &mut model, &mut feeds)?;
            progress.advance(std::fs::metadata(path).map_or(0, |m| m.len()));
            continue;
        }
        let mut feed = Feed::new(
            feeds.len(),
            &path.display().to_string(),
            cfg.patterns.clone(),
        );
        if metric_files && crate::input::metric_files::kind_of(path).is_none() {
            feed.steps_elsewhere();
        }
        feed.set_tags(cfg.tags.clone());
        feed.set_year_reference(crate::input::file::modified(path));
        ingest::read_file(path, &mut feed, &mut |msg| match msg {
            Msg::Lines(lines) => {
                progress.advance(lines.bytes);
                model.lines(*lines, &mut |_, _| {});
            }
            msg => {
                model.apply(msg);
            }
        })
        .map_err(|e| Error::Runtime(e.to_string()))?;
        feeds.push(feed);
    }
    model.finish();
    Ok(Analysis {
        model: model.model,
        diagnosis: model.diagnosis,
        feeds,
    })
}

/// A recording's lines through one feed per recorded file (at their recorded arrival times),
/// and its samples into the model, as a replay sends them.
fn replay_recording(
    path: &std::path::Path,
    cfg: &Config,
    model: &mut Monitor,
    feeds: &mut Vec<Feed>,
) -> Result<(), Error> {
    let read =
        crate::input::replay::messages(&[path], &cfg.patterns, feeds.len(), &mut |msg, _| {
            model.apply(msg);
        })?;
    feeds.extend(read);
    Ok(())
}
