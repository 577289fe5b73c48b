//! What the follower tells its sink about the files it follows, and the sink's type: the
//! words shared by the loop (`tail`) and each followed file (`followed`).

use std::ops::ControlFlow;
use std::path::Path;

use crate::monitor::msg::FileStatus;

/// What the follower tells its sink, borrowing from its buffers so no line is copied.
#[derive(Debug)]
pub enum TailEvent<'a> {
    /// A file (an input or a new glob match) got index `file`, stable for the whole run.
    Opened {
        /// Index used by every later event about this file.
        file: usize,
        /// The path as found (a glob match is its directory joined with the name).
        path: &'a Path,
    },
    /// The file's status changed.
    Status {
        /// Which file.
        file: usize,
        /// Its path, so a status line needs no lookup.
        path: &'a Path,
        /// The new status.
        status: &'a FileStatus,
    },
    /// One line (ended by a newline, or a `\r` redraw), raw bytes.
    Line {
        /// Which file.
        file: usize,
        /// Physical line (1-based, from where reading began); `\r` redraws share one.
        line_no: u64,
        /// The line without its terminator, undecoded, at most `MAX_LINE_BYTES`.
        bytes: &'a [u8],
    },
    /// The file's existing content has been read (or there was none): history is done.
    CaughtUp {
        /// Which file.
        file: usize,
    },
    /// Every file was read to its end: the follower waits for more. What a sink holds of the
    /// lines read so far is best sent now.
    Waiting,
}

/// The receiver of events; `Break` stops following.
pub type Sink<'s> = dyn FnMut(TailEvent<'_>) -> ControlFlow<()> + 's;
