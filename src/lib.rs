//! steptop: where each training step's time goes, from the logs a training job already writes.
//!
//! Data flows one way: bytes -> `source` -> `parse` (typed records) -> `feed` (time, rank)
//! -> `monitor` (model and diagnosis) -> a sink. Lines already written (a report's files, a
//! replay, a followed file's history) go through `ingest` in blocks; lines that arrive live,
//! one by one, through the same feed. Live logs come from the source thread in `follow`,
//! finished ones from `replay`, both into the inbox of `msg::Msg` and the `monitor`, then the
//! live view (`ui`) or `headless` lines, with `metrics` beside either; `report` feeds a
//! monitor directly. The mode is chosen here, in `run`, and nowhere else.

mod commands;
mod common;
mod diagnose;
mod input;
mod model;
mod monitor;
mod parse;
mod probe;
mod settings;
mod sink;

use commands::cli::Command;

// What the binary runs.
pub use commands::cli::Cli;
pub use common::error::Error;

// The pipeline, for the integration tests and the benchmarks that drive it from code: files
// to lines (`InputSpec`, `tail`, `read_records`), lines to records and messages (`Feed`,
// `read_file`, `spawn_follow`, `replay_messages`), messages to the state every sink shows
// (`Monitor`, `Model`), and its finished forms (`analyze`, `exposition`).
pub use diagnose::{DiagnoseConfig, Severity};
pub use input::follow::spawn as spawn_follow;
pub use input::ingest::{Feed, read_file};
pub use input::replay::messages as replay_messages;
pub use input::tail::follow as tail;
pub use input::{
    FILES_FOLLOWED, FollowOptions, InputSpec, LineSplitter, MAX_RECORD_BYTES, TailEvent,
    read_records,
};
pub use model::{Model, ModelConfig};
pub use monitor::Monitor;
pub use monitor::keys::{Key, KeyCode, Mods};
pub use monitor::msg::{FileStatus, Msg, inbox};
pub use parse::record::Record;
pub use probe::{HostReading, Sample, Sampler, SamplerOptions};
pub use settings::config::Config;
pub use sink::metrics::server::serve as serve_metrics;
pub use sink::metrics::{Endpoint, exposition};
pub use sink::report::analyze;

/// The internals that snapshot and integration tests check directly: the live view's parts,
/// the probes' pieces, the text helpers and the rules' table. Not steptop's offer; kept
/// narrow so that what is public above says what steptop is.
#[doc(hidden)]
pub mod testing {
    pub use crate::common::{display, units};
    pub use crate::diagnose::rules::RULES;
    pub use crate::model::breakdown::Over;
    pub use crate::probe::gpu::select::CudaEnv;
    pub use crate::probe::gpu::{GpuProbe, open as open_nvml};
    pub use crate::probe::trainer::by_log_writer;
    pub use crate::settings::theme::{BUILTIN, Role, Theme};
    pub use crate::sink::compare::baseline::read as read_baseline;
    pub use crate::sink::headless::line::{Status, status_text};
    pub use crate::sink::ui::action::{Action, KEYMAP, bindings};
    pub use crate::sink::ui::draw;
    pub use crate::sink::ui::panes::{View, render};
    pub use crate::sink::ui::state::{Pane, UiState};
}

/// Runs one command to completion.
pub fn run(cli: Cli) -> Result<(), Error> {
    match cli.command {
        Some(Command::Report(args)) => commands::report::run(&args),
        Some(Command::Compare(args)) => commands::compare::run(&args),
        Some(Command::Probe(args)) => commands::probe::run(&args),
        Some(Command::Replay(args)) => commands::replay::run(&args),
        Some(Command::Config(args)) => commands::config::run(&args),
        Some(what @ (Command::Completions { .. } | Command::Man)) => {
            commands::generated::run(&what)
        }
        None => commands::live::run(&cli.live),
    }
}
