//! Command-line arguments.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

use crate::sink::headless::LineFormat;
use crate::sink::report::Form;

pub use crate::input::replay::pacer::Speed;

/// steptop: where each training step's time goes, from the logs your job already writes.
///
/// `steptop LOG...` follows the logs in a live terminal view; the subcommands do the rest.
#[derive(Debug, Parser)]
#[command(
    name = "steptop",
    version = concat!(env!("CARGO_PKG_VERSION"), " (", env!("STEPTOP_COMMIT"), ")"),
    about,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    // Bare `steptop` shows the commands, not only `Usage: steptop <LOG>...`.
    arg_required_else_help = true
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
    #[command(flatten)]
    pub watch: WatchArgs,
    /// The training process; default: the process that writes LOG.
    #[arg(long)]
    pub pid: Option<u32>,
    #[command(flatten)]
    pub out: OutputArgs,
    /// Log files or globs to follow (`'logs/rank*.log'`), metric files (TensorBoard events,
    /// metrics.csv, scalars.json, trainer_state.json) or a run directory holding them; a file
    /// that does not exist yet is waited for.
    #[arg(required = true, value_name = "LOG")]
    pub logs: Vec<String>,
}

/// How a live command reads the hardware and shows it. Shared by `steptop LOG...` and
/// `steptop run`.
#[derive(Debug, clap::Args)]
pub struct WatchArgs {
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
    /// Do not sample the trainer's Python stacks.
    #[arg(long)]
    pub no_stacks: bool,
    /// GPUs to read: NVML indices (`0,2`, as nvidia-smi numbers them), UUIDs (`GPU-5a1f…`,
    /// `MIG-…`, or a unique start of one), or `cuda`: the GPUs the trainer's
    /// CUDA_VISIBLE_DEVICES gives it (steptop's own until the trainer is found), with CUDA's
    /// numbers. Default: all, or the trainer's ranks' once known.
    #[arg(long, value_name = "INDEX|UUID|cuda", value_parser = crate::probe::gpu::select::parse)]
    pub gpus: Option<crate::probe::gpu::select::GpuSelect>,
    /// SM and tensor-core activity from NVML's GPM (Hopper and newer).
    #[arg(long)]
    pub gpm: bool,
}

/// `steptop run -- CMD...`: the job started by steptop.
#[derive(Debug, clap::Args)]
pub struct RunArgs {
    /// Where the job's output (its stdout and stderr, unchanged) is appended and followed.
    #[arg(long, value_name = "FILE", default_value = "steptop-run.log")]
    pub log: PathBuf,
    #[command(flatten)]
    pub watch: WatchArgs,
    #[command(flatten)]
    pub out: OutputArgs,
    /// The job: `python train.py`, `torchrun --nproc-per-node 8 train.py`, `accelerate
    /// launch train.py`.
    #[arg(required = true, last = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// Where the monitor's findings go besides the live view: headless lines, a hook, a metrics
/// endpoint. Shared by `steptop LOG...`, `steptop run` and `steptop replay`.
#[derive(Clone, Debug, clap::Args)]
pub struct OutputArgs {
    /// A finished run (a log, a quoted glob, a directory or a recording) whose figures are
    /// shown beside the live ones: samples/s then -> now in the header, each stage's mean,
    /// the ratio in status lines and /metrics.
    #[arg(long, value_name = "RUN")]
    pub baseline: Option<String>,
    /// No full-screen view: print each alert change (raised, escalated, cleared) as one line.
    #[arg(long)]
    pub headless: bool,
    /// Headless lines: text for people, or JSON lines (see docs/headless.md for the schema).
    #[arg(long, value_enum, default_value_t = LineFormat::Text, requires = "headless")]
    pub format: LineFormat,
    /// Also print a one-line status this often (`60s`, `5m`): step, samples/s, step time,
    /// data share, GPU utilization, verdict. Replays count replayed time.
    #[arg(long, value_parser = parse_every, value_name = "INTERVAL", requires = "headless")]
    pub status_every: Option<std::time::Duration>,
    /// Run this shell command for each alert change, with STEPTOP_RULE, STEPTOP_SEVERITY,
    /// STEPTOP_TITLE, STEPTOP_CHANGE and STEPTOP_JSON set (`curl ... -d "$STEPTOP_JSON"`).
    #[arg(long, value_name = "CMD", requires = "headless")]
    pub exec: Option<String>,
    /// How long a hook may run before it is killed.
    #[arg(long, default_value = "10s", value_parser = parse_interval, requires = "exec")]
    pub exec_timeout: std::time::Duration,
    /// The least severity whose changes run the hook: info alerts (what is fine, a detail)
    /// would page someone at every start.
    #[arg(long, value_enum, default_value_t = MinSeverity::Warn, value_name = "SEVERITY", requires = "exec")]
    pub exec_min_severity: MinSeverity,
    /// Exit 1 at the end if an alert of this severity or worse was raised.
    #[arg(long, value_enum, value_name = "SEVERITY", requires = "headless")]
    pub fail_on: Option<FailOn>,
    /// Stop when this process exits (the trainer), after a last summary line.
    #[arg(long, value_name = "PID", requires = "headless")]
    pub until_exit: Option<u32>,
    /// The `host` of metrics and headless lines; default: this machine's name when following,
    /// none in a replay (the run may come from elsewhere).
    #[arg(long, value_name = "NAME")]
    pub host: Option<String>,
    /// Serve Prometheus / OpenMetrics text on http://ADDR/metrics: `9464` or `:9464` listen
    /// on loopback (127.0.0.1:9464); give an address (`0.0.0.0:9464`) to expose it.
    #[arg(long, value_name = "[HOST]:PORT", value_parser = parse_metrics_addr)]
    pub metrics_addr: Option<std::net::SocketAddr>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    Warn,
    Crit,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum MinSeverity {
    Info,
    Warn,
    Crit,
}

impl MinSeverity {
    pub fn severity(self) -> crate::diagnose::Severity {
        match self {
            MinSeverity::Info => crate::diagnose::Severity::Info,
            MinSeverity::Warn => crate::diagnose::Severity::Warn,
            MinSeverity::Crit => crate::diagnose::Severity::Crit,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// One-shot analysis of whole log files (a finished run, or a running one so far).
    Report(ReportArgs),
    /// What a change did: runs side by side against the first (the baseline), each read as
    /// `report` reads it, with the changes that exceed the runs' own noise and what they mean.
    Compare(CompareArgs),
    /// What steptop can read on this machine now: GPUs, host, and the trainer's process tree.
    Probe(ProbeArgs),
    /// Starts the job (`steptop run -- python train.py`) and watches it: its output goes to a
    /// log, unchanged; its Python stacks need no privileges (it is steptop's child); its exit
    /// code is steptop's. Quitting the view leaves the job running.
    Run(RunArgs),
    /// Many nodes at once, from the Prometheus that scrapes each node's `steptop --headless
    /// --metrics-addr` (and dcgm-exporter): which node or rank is slowest, which are
    /// data-bound, which stopped, and whether they share one cause.
    Cluster(ClusterArgs),
    /// Plays finished logs or a `probe --record` recording through the live monitor, in the
    /// live view or headless, at their own pace or faster.
    Replay(ReplayArgs),
    /// Where the config file is looked for without --config ($STEPTOP_CONFIG, then
    /// $XDG_CONFIG_HOME/steptop/config.toml or ~/.config/steptop/config.toml), or the
    /// documented default config.
    Config(ConfigArgs),
    /// A completion script for a shell, on stdout (bash, zsh, fish, elvish, powershell).
    Completions {
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// The man page, in roff: `steptop man > ~/.local/share/man/man1/steptop.1`.
    Man,
}

#[derive(Debug, clap::Args)]
pub struct ClusterArgs {
    /// The Prometheus to read: `http://HOST:9090`, `https://HOST/prometheus`; default: the
    /// config file's [cluster] prometheus. Credentials come from STEPTOP_PROMETHEUS_TOKEN, or
    /// STEPTOP_PROMETHEUS_USER and STEPTOP_PROMETHEUS_PASSWORD, or the config file.
    #[arg(long, value_name = "URL")]
    pub prometheus: Option<String>,
    /// Only this job's nodes: its SLURM_JOB_ID or torchrun rendezvous id (the `job_id` label).
    #[arg(long, value_name = "ID")]
    pub job: Option<String>,
    /// Label matchers every query carries, as PromQL writes them: `'{cluster="a"}'`.
    #[arg(long, value_name = "{MATCHERS}")]
    pub selector: Option<String>,
    /// Print the table once and exit (1 when Prometheus cannot be read).
    #[arg(long)]
    pub once: bool,
    /// With --once: a table for people, or one JSON object.
    #[arg(long, value_enum, default_value_t = OnceFormat::Text, requires = "once")]
    pub format: OnceFormat,
    /// Time between refreshes of the live view.
    #[arg(long, default_value = "5s", value_parser = parse_interval)]
    pub interval: std::time::Duration,
    /// Time without a new step after which a node counts as stale (and ten of its step times
    /// at least); default: the config file's, 60s.
    #[arg(long, value_name = "INTERVAL", value_parser = parse_interval)]
    pub stale_after: Option<std::time::Duration>,
    /// Theme of the live view (see `steptop --help`).
    #[arg(long, value_name = "NAME|FILE")]
    pub theme: Option<String>,
    /// Config file ([cluster] section: Prometheus, selector, credentials).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OnceFormat {
    Text,
    Json,
}

#[derive(Debug, clap::Args)]
#[group(required = true, multiple = false)]
pub struct ConfigArgs {
    /// Print the default config: every key at its default, documented.
    #[arg(long)]
    pub default: bool,
    /// Print the path of the config file read without --config (on stderr: why that one,
    /// whether it exists, and where themes are looked for).
    #[arg(long)]
    pub path: bool,
}

#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    /// How fast: `1` as it happened, `10` ten times faster, `max` as fast as it reads (the
    /// same input then gives the same output, byte for byte).
    #[arg(long, default_value = "1", value_parser = parse_speed, value_name = "N|max")]
    pub speed: Speed,
    /// Read up to this step at once, then play at --speed; headless prints nothing before it.
    #[arg(long, value_name = "STEP")]
    pub from: Option<u64>,
    /// Theme of the live view (see `steptop --help`).
    #[arg(long, value_name = "NAME|FILE")]
    pub theme: Option<String>,
    /// Config file (patterns for in-house formats, window sizes, rule thresholds).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub out: OutputArgs,
    /// Finished logs (or globs), metric files, run directories and recordings, read in the
    /// order given.
    #[arg(required = true, value_name = "LOG|RECORDING")]
    pub logs: Vec<String>,
}

/// `9464` or `:9464` (loopback), or a full `ADDR:PORT`.
pub fn parse_metrics_addr(s: &str) -> Result<std::net::SocketAddr, String> {
    let t = s.trim();
    let port = t.strip_prefix(':').unwrap_or(t);
    if let Ok(p) = port.parse::<u16>() {
        return Ok(std::net::SocketAddr::from(([127, 0, 0, 1], p)));
    }
    t.parse().map_err(|_| {
        format!("'{s}' is not a port (9464, listened on loopback) or an address (0.0.0.0:9464)")
    })
}

/// `max`, or a factor like `10`, `0.5`, `10x`.
pub fn parse_speed(s: &str) -> Result<Speed, String> {
    let t = s.trim();
    if t.eq_ignore_ascii_case("max") {
        return Ok(Speed::Max);
    }
    t.trim_end_matches(['x', 'X'])
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite() && (0.01..=100_000.0).contains(v))
        .map(Speed::Times)
        .ok_or_else(|| format!("'{s}' is not a speed: a factor from 0.01 to 100000, or max"))
}

/// `60s`, `5m`, `1h`, `500ms`: the interval of a periodic status line.
pub fn parse_every(s: &str) -> Result<std::time::Duration, String> {
    let t = s.trim();
    let scaled = |suffix: char, scale: f64| {
        t.strip_suffix(suffix)
            .and_then(|n| n.trim().parse::<f64>().ok())
            .map(|v| v * scale)
    };
    let secs = if t.ends_with("ms") {
        parse_interval(t).ok().map(|d| d.as_secs_f64())
    } else {
        scaled('h', 3600.0)
            .or_else(|| scaled('m', 60.0))
            .or_else(|| parse_interval(t).ok().map(|d| d.as_secs_f64()))
    };
    secs.filter(|v| v.is_finite() && (0.1..=86_400.0).contains(v))
        .map(std::time::Duration::from_secs_f64)
        .ok_or_else(|| format!("'{s}' is not an interval between 100ms and 24h (like 60s or 5m)"))
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
    /// Do not sample the trainer's Python stacks (with them, --once samples them for a few
    /// seconds before it answers).
    #[arg(long)]
    pub no_stacks: bool,
    /// Config file (the `[stacks]` sampling rates; the rest is for the other commands).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Time between readings: `1s`, `500ms`, `2.5s`.
    #[arg(long, default_value = "1s", value_parser = parse_interval)]
    pub interval: std::time::Duration,
    /// GPUs to read: NVML indices (`0,2`, as nvidia-smi numbers them), UUIDs (`GPU-5a1f…`,
    /// `MIG-…`, or a unique start of one), or `cuda`: the GPUs the trainer's
    /// CUDA_VISIBLE_DEVICES gives it (steptop's own until the trainer is found), with CUDA's
    /// numbers. Default: all, or the trainer's ranks' once known.
    #[arg(long, value_name = "INDEX|UUID|cuda", value_parser = crate::probe::gpu::select::parse)]
    pub gpus: Option<crate::probe::gpu::select::GpuSelect>,
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
    #[arg(long, value_enum, default_value_t = Form::Text)]
    pub format: Form,
    /// Config file (patterns for in-house formats, window sizes).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Draw no progress bar on stderr (drawn only on a terminal, for reads over half a second).
    #[arg(long)]
    pub quiet: bool,
    /// Log files or globs (`'logs/rank*.log'`), metric files or run directories, read in the
    /// order given.
    #[arg(required = true, value_name = "LOG")]
    pub logs: Vec<String>,
}

#[derive(Debug, clap::Args)]
pub struct CompareArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = CompareFormat::Text)]
    pub format: CompareFormat,
    /// Config file (patterns for in-house formats, window sizes).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// A name for each run, in order (default: the file or directory name).
    #[arg(long = "label", value_name = "NAME")]
    pub labels: Vec<String>,
    /// Draw no progress bar on stderr (drawn only on a terminal, for reads over half a second).
    #[arg(long)]
    pub quiet: bool,
    /// Runs, the baseline first: a log file, a quoted glob (`'runA/rank*.log'`), a directory
    /// (every file in it) or a `probe --record` recording. One log that holds several runs
    /// (appended runs, restarts, resumes) compares its runs.
    #[arg(required = true, num_args = 1.., value_name = "RUN")]
    pub runs: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum CompareFormat {
    Text,
    Json,
    Markdown,
    /// One self-contained page: the runs' curves overlaid, their breakdowns side by side.
    Html,
}

/// `steptop reprot run1.log`: a first log that is no file and one or two letters from a
/// subcommand's name is that subcommand mistyped, not a file to wait for.
pub fn not_a_misspelt_command(logs: &[String]) -> Result<(), crate::Error> {
    use clap::CommandFactory;
    let Some(first) = logs.first() else {
        return Ok(());
    };
    let word = first.as_str();
    let plain = !word.is_empty() && word.bytes().all(|b| b.is_ascii_lowercase() || b == b'-');
    if !plain || std::path::Path::new(word).exists() {
        return Ok(());
    }
    let cli = Cli::command();
    let near = cli
        .get_subcommands()
        .map(clap::Command::get_name)
        .filter(|name| *name != "help")
        .map(|name| (edits(word, name), name))
        .filter(|(d, name)| *d <= 2 && *d < name.len() / 2 + 1)
        .min();
    match near {
        Some((_, name)) => Err(crate::Error::Usage(format!(
            "no file `{word}` here: did you mean `steptop {name}`? (a log that does not exist \
             yet is waited for: write `./{word}` to wait for it)"
        ))),
        None => Ok(()),
    }
}

/// The letters to insert, delete or change to make `a` into `b`.
fn edits(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod typo_tests {
    use super::*;

    #[test]
    fn a_subcommand_mistyped_is_named() {
        let err =
            not_a_misspelt_command(&["reprot".into(), "run1.log".into()]).expect_err("a typo");
        assert!(
            err.to_string().contains("did you mean `steptop report`?"),
            "{err}"
        );
        assert!(not_a_misspelt_command(&["comapre".into()]).is_err());
        // A log that merely is not there yet, or is far from any command, is waited for.
        assert!(not_a_misspelt_command(&["train.log".into()]).is_ok());
        assert!(not_a_misspelt_command(&["rank".into()]).is_ok());
        assert_eq!(edits("reprot", "report"), 2);
        assert_eq!(edits("", "run"), 3);
    }
}
