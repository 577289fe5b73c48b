//! Command-line arguments.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// steptop: where each training step's time goes, from the logs your job already writes.
#[derive(Debug, Parser)]
#[command(name = "steptop", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// One-shot analysis of whole log files (a finished run, or a running one so far).
    Report(ReportArgs),
}

#[derive(Debug, clap::Args)]
pub struct ReportArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = ReportFormat::Text)]
    pub format: ReportFormat,
    /// Config file (patterns for in-house formats, window sizes).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Log files or globs (`'logs/rank*.log'`), read in the order given.
    #[arg(required = true, value_name = "LOG")]
    pub logs: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ReportFormat {
    Text,
    Json,
    Markdown,
}
