//! Command-line arguments.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// steptop: where each training step's time goes, from the logs your job already writes.
///
/// `steptop LOG...` follows the logs in a live terminal view; the subcommands do the rest.
#[derive(Debug, Parser)]
#[command(
    name = "steptop",
    version,
    about,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub live: LiveArgs,
}

/// `steptop LOG...`: the live view.
#[derive(Debug, clap::Args)]
pub struct LiveArgs {
    /// Theme: default, light, mono, high-contrast, or a theme file (TOML roles; see
    /// themes/). NO_COLOR selects mono.
    #[arg(long, value_name = "NAME|FILE")]
    pub theme: Option<String>,
    /// Config file (patterns for in-house formats, window sizes, rule thresholds).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Time between hardware readings: `1s`, `500ms`.
    #[arg(long, default_value = "1s", value_parser = parse_interval)]
    pub interval: std::time::Duration,
    /// Read no GPU or host figures: the logs only.
    #[arg(long)]
    pub no_probe: bool,
    /// GPUs to read, by index (`0,2`); default: all, or the trainer's once known.
    #[arg(long, value_delimiter = ',', value_name = "INDEX")]
    pub gpus: Option<Vec<u32>>,
    /// The training process; default: the process that writes LOG.
    #[arg(long)]
    pub pid: Option<u32>,
    /// SM and tensor-core activity from NVML's GPM (Hopper and newer).
    #[arg(long)]
    pub gpm: bool,
    /// Log files or globs to follow (`'logs/rank*.log'`); a file that does not exist yet is
    /// waited for.
    #[arg(required = true, value_name = "LOG")]
    pub logs: Vec<String>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// One-shot analysis of whole log files (a finished run, or a running one so far).
    Report(ReportArgs),
    /// What steptop can read on this machine now: GPUs, host, and the trainer's process tree.
    Probe(ProbeArgs),
}

#[derive(Debug, clap::Args)]
pub struct ProbeArgs {
    /// Print one reading and exit (it waits one interval, since CPU shares need two
    /// readings).
    #[arg(long)]
    pub once: bool,
    /// Output format: text, or one JSON object per reading.
    #[arg(long, value_enum, default_value_t = ProbeFormat::Text)]
    pub format: ProbeFormat,
    /// Time between readings: `1s`, `500ms`, `2.5s`.
    #[arg(long, default_value = "1s", value_parser = parse_interval)]
    pub interval: std::time::Duration,
    /// GPUs to read, by index (`0,2`); default: all, or the trainer's once known.
    #[arg(long, value_delimiter = ',', value_name = "INDEX")]
    pub gpus: Option<Vec<u32>>,
    /// SM and tensor-core activity from NVML's GPM (Hopper and newer). Off by default: it can
    /// disturb a DCGM exporter on the same node.
    #[arg(long)]
    pub gpm: bool,
    /// The training process; default: the process that writes LOG, or a GPU's compute
    /// process.
    #[arg(long)]
    pub pid: Option<u32>,
    /// Also write every reading, and every line of the LOGs from their start, to FILE as a
    /// recording (JSON lines) that `steptop report` reads.
    #[arg(long, value_name = "FILE")]
    pub record: Option<PathBuf>,
    /// Logs the trainer writes: to find it by, and to record with --record.
    #[arg(value_name = "LOG")]
    pub logs: Vec<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ProbeFormat {
    Text,
    Json,
}

/// `1s`, `500ms`, `2.5s` or a bare number of seconds, at least 10 ms.
pub fn parse_interval(s: &str) -> Result<std::time::Duration, String> {
    let t = s.trim();
    let (num, scale) = if let Some(ms) = t.strip_suffix("ms") {
        (ms, 1e-3)
    } else if let Some(sec) = t.strip_suffix('s') {
        (sec, 1.0)
    } else {
        (t, 1.0)
    };
    let secs = num
        .trim()
        .parse::<f64>()
        .ok()
        .map(|v| v * scale)
        .filter(|v| v.is_finite() && (0.01..=3600.0).contains(v))
        .ok_or_else(|| {
            format!("'{s}' is not an interval between 10ms and 3600s (like 1s or 500ms)")
        })?;
    Ok(std::time::Duration::from_secs_f64(secs))
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
