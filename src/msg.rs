//! The one message type of the inbox: everything the monitor learns arrives as a `Msg`, owned
//! and stamped by the thread that made it, so the monitor needs no clock and no locks and the
//! same messages always give the same state.

use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use crate::model::Stamp;
use crate::parse::LineInfo;
use crate::parse::record::Record;

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
    Sample(Box<crate::sample::Sample>),
    /// The source thread stopped for good, with the reason.
    SourceStopped { reason: String },
    /// A key, a resize or a signal for the live view; the monitor ignores it.
    Ui(crate::ui::input::UiEvent),
    /// Where a replay is (the last one has `finished` set); the monitor ignores it.
    Replay(Position),
}

/// Where a replay is, for the live view's indicator.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Position {
    /// Bytes of input read, of `total`.
    pub bytes: u64,
    pub total: u64,
    /// The replayed time of the first message with one, and of the latest.
    pub start: Option<f64>,
    pub time: Option<f64>,
    /// Everything has been sent.
    pub finished: bool,
}

impl Position {
    /// How far along, 0..=1.
    pub fn share(&self) -> f64 {
        if self.finished || self.total == 0 {
            return if self.finished { 1.0 } else { 0.0 };
        }
        (self.bytes as f64 / self.total as f64).clamp(0.0, 1.0)
    }
}

/// Unix time now, in seconds: the clock the producer threads (sources, sampler, sinks) stamp
/// with; the monitor has none of its own.
pub fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Where a followed file stands, shown to the user; trouble is state, not an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileStatus {
    /// The path does not exist yet.
    Waiting,
    /// Open and being read.
    Following,
    /// One-off notice: the file shrank, so it is read again from 0 (following goes on).
    Truncated,
    /// One-off notice: the file was renamed away and a new one is read from 0.
    Rotated,
    /// The file is gone; it will be read from 0 if it comes back.
    Deleted,
    /// It exists but cannot be read; the reason.
    Unreadable(String),
    /// It matched, but `FILES_FOLLOWED` files are followed already: it and later matches are
    /// left out. Said by the first file left out, once.
    NotFollowed,
}

/// Messages the inbox holds before its producers wait. Bounded, so that a source reading a
/// long history cannot run ahead of the monitor and pile the whole file up in memory.
pub const INBOX_CAPACITY: usize = 1024;

/// A new inbox: the senders for the producer threads and the monitor's end.
pub fn inbox() -> (SyncSender<Msg>, Receiver<Msg>) {
    sync_channel(INBOX_CAPACITY)
}
