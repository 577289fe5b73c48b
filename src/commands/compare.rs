//! `steptop compare RUN RUN...`: runs side by side, or the runs one log holds.

use std::io::IsTerminal;
use std::path::Path;

use super::cli::{CompareArgs, CompareFormat};
use super::{Output, load_config, run_label, run_paths, write_stdout};
use crate::analysis::read_progress::{self, Progress};
use crate::common::error::Error;
use crate::settings::config::Config;
use crate::settings::theme;
use crate::sink::compare;

/// Reads each run and prints what differs between them, and why.
pub fn run(args: &CompareArgs) -> Result<(), Error> {
    let mut cfg = load_config(args.config.as_deref())?;
    cfg.model = cfg
        .model
        .summary(matches!(args.format, CompareFormat::Html));
    if args.labels.len() > args.runs.len() {
        return Err(Error::Usage(format!(
            "{} --label given for {} runs: one per run at most, in order",
            args.labels.len(),
            args.runs.len()
        )));
    }
    let mut runs = Vec::new();
    for (i, run) in args.runs.iter().enumerate() {
        let label = args
            .labels
            .get(i)
            .cloned()
            .unwrap_or_else(|| run_label(run));
        runs.push(compare::RunInput {
            label,
            paths: run_paths(run)?,
            run: None,
        });
    }
    if let [one] = runs.as_slice() {
        runs = runs_of(one, &args.labels, &cfg)?;
    }
    // Two runs named alike (`a/train.log`, `b/train.log`) are told apart by their directory.
    let alike: Vec<bool> = runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            args.labels.get(i).is_none() && runs.iter().filter(|o| o.label == r.label).count() > 1
        })
        .collect();
    for (i, run) in runs.iter_mut().enumerate() {
        let Some(input) = args.runs.get(i) else {
            break;
        };
        let parent = Path::new(input).parent().and_then(Path::file_name);
        if let (true, Some(p)) = (alike[i], parent) {
            run.label = format!("{}/{}", p.to_string_lossy(), run.label);
        }
    }
    let total = read_progress::total_bytes(runs.iter().flat_map(|r| &r.paths));
    let c = compare::compare(&runs, &cfg, &Progress::new(total, args.quiet))?;
    let output = match args.format {
        CompareFormat::Text => {
            // Colours only on a terminal, in the theme the live view would use.
            let theme = std::io::stdout()
                .is_terminal()
                .then(|| theme::Theme::choose(None, std::env::var("NO_COLOR").ok().as_deref()).ok())
                .flatten();
            Output::Painted(compare::render::text(&c, theme.as_ref()))
        }
        CompareFormat::Markdown => Output::Text(compare::render::markdown(&c)),
        CompareFormat::Html => Output::Text(compare::html::render(&c)),
        CompareFormat::Json => {
            let mut s =
                serde_json::to_string_pretty(&c).map_err(|e| Error::Runtime(e.to_string()))?;
            s.push('\n');
            Output::Json(s)
        }
    };
    write_stdout(output).map(|_| ())
}

/// The runs one input holds (a log with appended runs, restarts or resumes), to compare
/// side by side; an input with one run is not enough to compare.
fn runs_of(
    input: &compare::RunInput,
    labels: &[String],
    cfg: &Config,
) -> Result<Vec<compare::RunInput>, Error> {
    let a = crate::analysis::analyze(&input.paths, cfg)?;
    let earlier = &a.model.runs;
    if earlier.is_empty() {
        return Err(Error::Usage(format!(
            "{} holds one run: compare needs two or more runs, or one file that holds several \
             (appended runs, restarts)",
            input.label
        )));
    }
    let last_first = a.model.run_lines.map(|(_, first, _)| first);
    let lines = earlier
        .iter()
        .map(|r| Some(r.first_line))
        .chain([last_first]);
    Ok(lines
        .enumerate()
        .map(|(k, first)| compare::RunInput {
            label: labels.get(k).cloned().unwrap_or_else(|| match first {
                Some(line) => format!("run {} (line {line})", k + 1),
                None => format!("run {}", k + 1),
            }),
            paths: input.paths.clone(),
            run: Some(k),
        })
        .collect())
}
