//! steptop: where each training step's time goes, from the logs a training job already writes.
//!
//! The folders are the data flow, one way:
//!
//! ```text
//! input (files -> lines -> messages) --\
//!                                      +--> monitor (inbox -> model + diagnose) --> sink
//! probe (GPUs, host, trainer -> samples) /
//! ```
//!
//! `input` reads the user's files (followed live, replayed, or read whole) and `parse` turns
//! each line into typed records; `probe` reads the hardware. Both send owned, stamped
//! messages into one bounded inbox. The `monitor` folds them into the `model` and its
//! diagnosis (`diagnose`), with no I/O and no clock of its own, so the same messages give the
//! same state. A `sink` shows it: the live view, headless lines, a report, the metrics
//! endpoint, a comparison. `cluster` is the one path that starts elsewhere: the nodes'
//! metrics, read back from Prometheus into a table. `commands` builds each subcommand from
//! these parts; `settings` and `common` serve the layers. No module imports one that imports
//! it back (`tests/layout.rs` checks). The command is chosen here, in `run`, and nowhere else.

mod analysis;
mod commands;
mod common;
mod diagnose;
mod input;
mod model;
mod monitor;
mod nodes;
mod parse;
mod probe;
mod settings;
mod sink;

use commands::cli::Command;

// What the binary runs.
pub use commands::cli::Cli;
pub use common::error::Error;

// The pipeline, for the integration tests and the benchmarks that drive it from code: files
// to lines (`InputSpec`, `tail`, `read_lines`), lines to records and messages (`Feed`,
// `read_file`, `spawn_follow`, `replay_messages`), messages to the state every sink shows
// (`Monitor`, `Model`), and its finished forms (`analyze`, `exposition`).
pub use analysis::analyze;
pub use diagnose::{DiagnoseConfig, Severity};
pub use input::follow::spawn as spawn_follow;
pub use input::ingest::{Feed, read_file};
pub use input::replay::messages as replay_messages;
pub use input::tail::follow as tail;
pub use input::{
    FILES_FOLLOWED, FollowOptions, InputSpec, LineSplitter, MAX_LINE_BYTES, TailEvent, read_lines,
};
pub use model::job::{JobIdentity, NodeIdentity};
pub use model::{Model, ModelConfig, Stamp};
pub use monitor::Monitor;
pub use monitor::keys::{Key, KeyCode, Mods, UiEvent};
pub use monitor::msg::{FileStatus, Msg, inbox};
pub use parse::record::{Record, StepBoxes};
pub use probe::{HostReading, Sample, Sampler, SamplerOptions};
pub use settings::config::Config;
pub use sink::exposition::server::serve as serve_metrics;
pub use sink::exposition::{Endpoint, exposition};

/// The internals that snapshot and integration tests check directly: the live view's parts,
/// the probes' pieces, the text helpers and the rules' table; and the shape key, whose cost
/// the throughput bench prints as the parser's floor. Not steptop's offer; kept narrow so
/// that what is public above says what steptop is.
#[doc(hidden)]
pub mod testing {
    pub use crate::common::{display, units};
    pub use crate::diagnose::rules::RULES;
    pub use crate::model::breakdown::Over;
    pub use crate::parse::shape_key;
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
    common::contain::install();
    match cli.command {
        Some(Command::Report(args)) => commands::report::run(&args),
        Some(Command::Compare(args)) => commands::compare::run(&args),
        Some(Command::Probe(args)) => commands::probe::run(&args),
        Some(Command::Replay(args)) => commands::replay::run(&args),
        Some(Command::Run(args)) => commands::run::run(&args),
        Some(Command::Cluster(args)) => commands::cluster::run(&args),
        Some(Command::Config(args)) => commands::config::run(&args),
        Some(what @ (Command::Completions { .. } | Command::Man)) => {
            commands::generated::run(&what)
        }
        None => {
            commands::cli::not_a_misspelt_command(&cli.live.logs)?;
            commands::live::run(&cli.live)
        }
    }
}
