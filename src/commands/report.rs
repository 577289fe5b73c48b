//! `steptop report LOG...`: a summary of finished logs, in text, markdown, HTML or JSON.

use super::cli::{ReportArgs, ReportFormat};
use super::{Output, expand_inputs, load_config, write_stdout};
use crate::analysis::read_progress::{self, Progress};
use crate::common::error::Error;
use crate::sink::report;

/// Reads the logs whole and prints the report.
pub fn run(args: &ReportArgs) -> Result<(), Error> {
    let mut cfg = load_config(args.config.as_deref())?;
    cfg.model = cfg.model.summary(matches!(args.format, ReportFormat::Html));
    let paths = expand_inputs(&args.logs)?;
    let progress = Progress::new(read_progress::total_bytes(&paths), args.quiet);
    let analysis = crate::analysis::analyze_run(&paths, &cfg, None, &progress)?;
    // The bar is cleared before the report is printed.
    drop(progress);
    let r = report::Report::build(&analysis);
    let output = match args.format {
        ReportFormat::Text => Output::Text(report::render_text(&r)),
        ReportFormat::Markdown => Output::Text(report::render_markdown(&r)),
        ReportFormat::Html => Output::Text(report::render_html(
            &r,
            &report::Curves::of(&analysis.model),
        )),
        ReportFormat::Json => {
            let mut s =
                serde_json::to_string_pretty(&r).map_err(|e| Error::Runtime(e.to_string()))?;
            s.push('\n');
            Output::Json(s)
        }
    };
    write_stdout(output).map(|_| ())
}
