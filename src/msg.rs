//! The one message type of the inbox: everything the monitor learns arrives as a `Msg`, owned
//! and stamped by the thread that made it, so the monitor needs no clock and no locks and the
//! same messages always give the same state.

use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use crate::model::Stamp;
use crate::parse::LineInfo;
use crate::parse::record::Record;
use crate::source::FileStatus;

/// One thing that happened, for the monitor.
#[derive(Clone, Debug, PartialEq)]
pub enum Msg {
    /// A followed file got its index (stable for the run) and its path.
    Opened { source: usize, path: String },
    /// One log line (or `\r` redraw): its stamp, what it said besides records, and its typed
    /// records (none for a line no format recognised); with its text as read (invalid UTF-8
    /// replaced) for the log pane and recordings, and its arrival time, None for a line that
    /// was already in the file when steptop started.
    Line {
        stamp: Stamp,
        info: LineInfo,
        records: Vec<Record>,
        text: String,
        arrival: Option<f64>,
    },
    /// A followed file's status changed (waiting, following, truncated, rotated, gone).
    Status { source: usize, status: FileStatus },
    /// A file's content present at the start has been read: what follows is live.
    CaughtUp { source: usize },
    /// A hardware sample (GPUs, host, trainer), read by the sampler thread.
    Sample(Box<crate::probe::Sample>),
    /// The source thread stopped for good, with the reason.
    SourceStopped { reason: String },
    /// A key, a resize or a signal for the live view; the monitor ignores it.
    Ui(crate::ui::input::UiEvent),
    /// Where a replay is (the last one has `finished` set); the monitor ignores it.
    Replay(crate::replay::pace::Position),
}

/// Messages the inbox holds before its producers wait. Bounded, so that a source reading a
/// long history cannot run ahead of the monitor and pile the whole file up in memory.
pub const INBOX_CAPACITY: usize = 1024;

/// A new inbox: the senders for the producer threads and the monitor's end.
pub fn inbox() -> (SyncSender<Msg>, Receiver<Msg>) {
    sync_channel(INBOX_CAPACITY)
}
