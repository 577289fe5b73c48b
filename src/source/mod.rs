//! Bytes from log files to lines: whole-file reading and live following.

pub mod file;
mod followed;
pub mod glob;
pub mod live;
pub mod split;

pub use file::{ReadStats, read_records};
pub use glob::InputSpec;
pub use live::{FILES_FOLLOWED, FileStatus, FollowOptions, TailEvent, follow};
pub use split::{LineSplitter, MAX_RECORD_BYTES};
