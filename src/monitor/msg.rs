//! The one message type of the inbox: everything the monitor learns arrives as a `Msg`, owned
//! and stamped by the thread that made it, so the monitor needs no clock and no locks and the
//! same messages always give the same state.

use std::sync::mpsc::{Receiver, Sender, SyncSender, sync_channel};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use crate::model::Stamp;
use crate::parse::LineInfo;
use crate::parse::record::{Record, StepBoxes};

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
    /// Consecutive lines of one file, as the `Line`s they are, in order: lines that were in
    /// it before it was read (a whole file, a followed file's history, a replay at full speed),
    /// parsed in bulk, or the lines one read of a followed file found.
    Lines(Box<Lines>),
    /// A followed file's status changed (waiting, following, truncated, rotated, gone).
    Status { source: usize, status: FileStatus },
    /// A file's content present at the start has been read: what follows is live.
    CaughtUp { source: usize },
    /// How many bytes a followed file held when following began: its history, whose reading
    /// the live view shows until it has caught up.
    HistorySize { source: usize, bytes: u64 },
    /// A hardware sample (GPUs, host, trainer), read by the sampler thread.
    Sample(Box<crate::model::sample::Sample>),
    /// The trainer's Python stacks: a sample of one process's main thread, or why a process
    /// cannot be sampled; read by the stack sampler thread.
    Stacks(Box<crate::model::stacks::StackReading>),
    /// The live loop read this machine's clock (Unix seconds): how time passes when no
    /// sample comes (probes off) and no line does (a hung job). A replay sends none: its time
    /// is the replayed one.
    Tick(f64),
    /// The job `steptop run` started ended: its pid, and its exit code or the signal that
    /// killed it.
    JobEnded {
        pid: u32,
        code: Option<i32>,
        signal: Option<i32>,
    },
    /// The input thread (following or replaying the logs) stopped for good, with the reason.
    InputStopped { reason: String },
    /// A key, a resize or a signal for the live view; the monitor ignores it.
    Ui(crate::monitor::keys::UiEvent),
    /// Where a replay is (the last one has `finished` set); the monitor ignores it.
    Replay(Position),
}

/// Consecutive lines of one file in one allocation each for their heads, records and text:
/// what the bulk reader (`ingest`) hands the monitor instead of a message per line.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Lines {
    pub heads: Vec<LineHead>,
    /// Every line's records, in order: `LineHead::records` say how many are each line's.
    pub records: Vec<Record>,
    /// The lines' bytes as read, one after another.
    pub text: Vec<u8>,
    /// Input bytes the lines span, their ends of line included (a replay's position).
    pub bytes: u64,
    /// Its place in the inbox's bulk allowance, given back when it is dropped.
    pub held: Held,
    /// Where the boxes of its step records go once the model has read them.
    pub home: Home,
}

/// One line of a `Lines`: what a `Msg::Line` says besides its records and text.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LineHead {
    pub stamp: Stamp,
    pub info: LineInfo,
    /// How many records the line gave.
    pub records: u32,
    /// Where its bytes are in `Lines::text`.
    pub start: usize,
    pub end: usize,
    /// When it was read (Unix seconds), for a line that arrived while followed; None for one
    /// already in the file.
    pub arrival: Option<f64>,
}

impl Lines {
    /// Adds one line: its bytes, the stamp and records `parse` gives them (the records pushed
    /// to the sink it is handed), and its arrival (None for a line already in its file).
    pub fn add(
        &mut self,
        raw: &[u8],
        arrival: Option<f64>,
        parse: impl FnOnce(&mut dyn FnMut(&Stamp, Record)) -> (LineInfo, Stamp),
    ) {
        let start = self.text.len();
        self.text.extend_from_slice(raw);
        let before = self.records.len();
        let records = &mut self.records;
        let (info, stamp) = parse(&mut |_, r| records.push(r));
        self.heads.push(LineHead {
            stamp,
            info,
            records: u32::try_from(self.records.len() - before).unwrap_or(u32::MAX),
            start,
            end: self.text.len(),
            arrival,
        });
    }

    /// One line's bytes.
    pub fn text_of(&self, head: &LineHead) -> &[u8] {
        &self.text[head.start..head.end]
    }

    /// The lines as one `Msg::Line` each (a replay paced line by line), with the input bytes
    /// each spans, its end of line included.
    pub fn into_messages(self) -> impl Iterator<Item = (Msg, u64)> {
        let Lines {
            heads,
            records,
            text,
            ..
        } = self;
        let mut records = records.into_iter();
        heads.into_iter().map(move |h| {
            let line = Msg::Line {
                stamp: h.stamp,
                info: h.info,
                records: records.by_ref().take(h.records as usize).collect(),
                text: String::from_utf8_lossy(&text[h.start..h.end]).into_owned(),
                arrival: h.arrival,
            };
            (line, (h.end - h.start) as u64 + 1)
        })
    }
}

/// Bulk messages (`Lines`) the inbox may hold at once: it counts messages, and these are up
/// to half a MiB of text each.
pub const BULK_IN_INBOX: usize = 4;

/// The bulk allowance of one inbox, shared by the threads that send it `Lines`.
#[derive(Clone, Default)]
pub struct Backlog(Arc<(Mutex<usize>, Condvar)>);

impl Backlog {
    /// Sends `lines`, first waiting until fewer than `BULK_IN_INBOX` bulk messages are in the
    /// inbox. False when the inbox is gone.
    pub fn send(&self, inbox: &SyncSender<Msg>, mut lines: Lines) -> bool {
        let (count, freed) = &*self.0;
        let mut n = count.lock().unwrap_or_else(PoisonError::into_inner);
        while *n >= BULK_IN_INBOX {
            n = freed.wait(n).unwrap_or_else(PoisonError::into_inner);
        }
        *n += 1;
        drop(n);
        lines.held = Held(OnlySent(Some(Arc::clone(&self.0))));
        inbox.send(Msg::Lines(Box::new(lines))).is_ok()
    }
}

/// What only the message sent holds (its place in the inbox, the way back to its reader): a
/// copy holds none of it, and it takes no part in comparing or showing messages.
pub struct OnlySent<T>(Option<T>);

impl<T> Default for OnlySent<T> {
    fn default() -> Self {
        OnlySent(None)
    }
}

impl<T> Clone for OnlySent<T> {
    fn clone(&self) -> Self {
        OnlySent(None)
    }
}

impl<T> PartialEq for OnlySent<T> {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl<T> std::fmt::Debug for OnlySent<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() { "sent" } else { "copy" })
    }
}

/// A `Lines`' place in its inbox's allowance: whoever drops it (the monitor, or the inbox
/// when nobody reads it any more) frees the place.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Held(OnlySent<Arc<(Mutex<usize>, Condvar)>>);

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(place) = self.0.0.take() {
            let (count, freed) = &*place;
            let mut n = count.lock().unwrap_or_else(PoisonError::into_inner);
            *n = n.saturating_sub(1);
            freed.notify_one();
        }
    }
}

/// The bulk reader that made a `Lines`, for the boxes of its step records (`StepBoxes`): the
/// monitor sends them back once the model has read them, from whatever thread it runs on.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Home(OnlySent<Sender<StepBoxes>>);

impl Home {
    pub fn to(reader: &Sender<StepBoxes>) -> Home {
        Home(OnlySent(Some(reader.clone())))
    }

    /// Sends `boxes` back; when the reader is gone (the history read, the file done), they
    /// are dropped here.
    pub fn send(&self, boxes: StepBoxes) {
        if let Some(reader) = &self.0.0 {
            let _ = reader.send(boxes);
        }
    }
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

/// Unix time now, in seconds: the clock the producer threads (follow, sampler, sinks) stamp
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
    /// Part of a metric file could not be read (a record that fails its checksum), with where;
    /// the rest of it still is.
    Damaged(String),
}

/// Messages the inbox holds before its producers wait. Bounded, so that a thread reading a
/// long history cannot run ahead of the monitor and pile the whole file up in memory.
pub const INBOX_CAPACITY: usize = 1024;

/// A new inbox: the senders for the producer threads and the monitor's end.
pub fn inbox() -> (SyncSender<Msg>, Receiver<Msg>) {
    sync_channel(INBOX_CAPACITY)
}
