//! The input path: bytes from the user's log files to messages in the monitor's inbox. `spec`
//! names the files (paths and globs), `split` cuts bytes into lines, `file` reads a file whole
//! and `tail` follows files as they grow, rotate and come back. `ingest` alone turns a file's
//! lines into messages (parsed, stamped, counted): `follow` is the live thread that sends them,
//! `replay` replays finished logs and `recording` writes and reads back what a session saw.
//! `metrics` reads the metric files jobs write instead of logs (TensorBoard events, CSV and
//! JSON loggers), `follow_metric_files` follows them live, and `run_dir` finds a run directory's
//! logs and metric files. `prometheus` is the other input: the query API `steptop cluster`
//! reads. steptop only reads the user's files here: it never writes, locks or truncates them.

pub mod file;
pub mod follow;
pub mod follow_metric_files;
pub mod ingest;
pub mod metric_files;
pub mod prometheus;
pub mod recording;
pub mod replay;
pub mod run_dir;
pub mod sniff;
pub mod spec;
pub mod split;
pub mod tail;

pub use file::read_lines;
pub use spec::InputSpec;
pub use split::{LineSplitter, MAX_LINE_BYTES};
pub use tail::{FILES_FOLLOWED, FollowOptions, TailEvent};
