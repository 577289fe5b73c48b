//! `steptop report LOG...`: a summary of finished logs, in text, markdown, HTML or JSON.

use super::cli::ReportArgs;
use super::{Output, expand_inputs, load_config, write_stdout};
use crate::analysis::read_progress::{self, Progress};
use crate::common::error::Error;
use crate::sink::report;

/// Reads the logs whole and prints the report.
pub fn run(args: &ReportArgs) -> Result<(), Error> {
    let mut cfg = load_config(args.config.as_deref())?;
    cfg.model = cfg.model.summary(args.format == report::Form::Html);
    let paths = expand_inputs(&args.logs)?;
    let progress = Progress::new(read_progress::total_bytes(&paths), args.quiet);
    let analysis = crate::analysis::analyze_run(&paths, &cfg, None, &progress)?;
    // The bar is cleared before the report is printed.
    drop(progress);
    let text = report::render(&analysis, args.format)?;
    let output = match args.format {
        report::Form::Json => Output::Json(text),
        _ => Output::Text(text),
    };
    write_stdout(output).map(|_| ())
}
