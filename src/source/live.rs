//! Following log files as they grow: through truncation, copytruncate, rename rotation and
//! deletion, losing no line and reading none twice.
//!
//! Wake-ups come from inotify on each input's parent directory (a watch on the file itself goes
//! silent after a rename) and from a stat poll that always runs, because nothing is notified for
//! bytes written by another machine on NFS or Lustre. Per-file decisions live in [`Followed`];
//! the loop in [`follow`] only waits and dispatches.

use std::collections::HashSet;
use std::fs::File;
use std::io::{self, Seek, SeekFrom};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant};

use notify::event::{EventKind, ModifyKind};
use notify::{RecommendedWatcher, RecursiveMode, Watcher};

use super::file::{
    FileId, Step, TAIL_BYTES, decide, find_rotated_copy, identity, probe, pump, read_back,
    remember_tail,
};
use super::glob::InputSpec;
use super::split::LineSplitter;

/// Read buffer: a wake-up usually brings a few lines; history comes in chunks this size.
const CHUNK_BYTES: usize = 1 << 20;
/// A zero poll would spin; a huge one would overflow the clock.
const POLL_RANGE: (Duration, Duration) = (Duration::from_millis(1), Duration::from_secs(3600));

/// How to follow, chosen by the caller (the CLI, tests, the benchmark).
#[derive(Debug, Clone)]
pub struct FollowOptions {
    /// Stat poll period: the safety net for file systems that send no notifications
    /// (kept between 1 ms and 1 h).
    pub poll: Duration,
    /// Read existing content as history first; when false, files present at the start are
    /// followed from their end and line numbers count from there.
    pub from_start: bool,
    /// Use inotify wake-ups; false leaves only the poll, as on NFS (also used to test that path).
    pub use_notify: bool,
}

impl Default for FollowOptions {
    fn default() -> Self {
        Self {
            poll: Duration::from_secs(1),
            from_start: true,
            use_notify: true,
        }
    }
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
}

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
    /// One record (a line or a `\r` redraw), raw bytes.
    Record {
        /// Which file.
        file: usize,
        /// Physical line (1-based, from where reading began); `\r` redraws share one.
        line_no: u64,
        /// The record without its terminator, undecoded, at most `MAX_RECORD_BYTES`.
        bytes: &'a [u8],
    },
    /// The file's existing content has been read (or there was none): history is done.
    CaughtUp {
        /// Which file.
        file: usize,
    },
}

/// The receiver of events; `Break` stops following.
pub type Sink<'s> = dyn FnMut(TailEvent<'_>) -> ControlFlow<()> + 's;

/// An open read-only handle and where we are in it.
struct OpenFile {
    file: File,
    id: FileId,
    offset: u64,
    /// The last bytes read (at most `TAIL_BYTES`), ending at `offset`.
    tail: Vec<u8>,
}

/// What every read needs: the shared buffer, the stop flag and the sink.
struct Ctx<'a, 's> {
    buf: &'a mut [u8],
    stop: &'a AtomicBool,
    sink: &'a mut Sink<'s>,
}

/// Splits a chunk (or, with `None`, ends the input) and sends the records; sends nothing more
/// once the sink says stop.
fn send(
    splitter: &mut LineSplitter,
    file: usize,
    bytes: Option<&[u8]>,
    sink: &mut Sink<'_>,
) -> ControlFlow<()> {
    let mut flow = ControlFlow::Continue(());
    let mut emit = |line_no: u64, bytes: &[u8]| {
        if flow.is_continue() {
            flow = sink(TailEvent::Record {
                file,
                line_no,
                bytes,
            });
        }
    };
    match bytes {
        Some(bytes) => splitter.push(bytes, &mut emit),
        None => splitter.finish(&mut emit),
    }
    flow
}

/// One followed path: what is open, how far we read, and what the user was last told.
struct Followed {
    index: usize,
    path: PathBuf,
    open: Option<OpenFile>,
    splitter: LineSplitter,
    shown: Option<FileStatus>,
    ever_opened: bool,
    caught_up: bool,
    /// Start at the end on the first open (history not wanted, file present at the start).
    skip_history: bool,
}

impl Followed {
    fn new(index: usize, path: PathBuf, skip_history: bool) -> Self {
        let splitter = LineSplitter::new();
        let (open, shown, ever_opened, caught_up) = (None, None, false, false);
        Self {
            index,
            path,
            open,
            splitter,
            shown,
            ever_opened,
            caught_up,
            skip_history,
        }
    }

    /// Stats the path and does whatever that calls for, reading everything available.
    fn service(&mut self, cx: &mut Ctx<'_, '_>) -> ControlFlow<()> {
        let held = self.open.as_ref().map(|o| (o.id, o.offset));
        match decide(held, &probe(&self.path)) {
            Step::Absent => {
                // A file that appears later is new content: read it all.
                self.skip_history = false;
                let gone = if self.ever_opened {
                    FileStatus::Deleted
                } else {
                    FileStatus::Waiting
                };
                self.tell(gone, cx)?;
            }
            Step::Unreadable(why) => self.tell(FileStatus::Unreadable(why), cx)?,
            Step::Open => self.open_and_read(cx)?,
            Step::Read => self.drain(cx)?,
            Step::Truncated => self.restart(cx)?,
            Step::Replaced => {
                self.close(cx)?;
                self.tell(FileStatus::Rotated, cx)?;
                self.open_and_read(cx)?;
            }
            Step::Gone => {
                self.close(cx)?;
                self.tell(FileStatus::Deleted, cx)?;
            }
        }
        if !std::mem::replace(&mut self.caught_up, true) {
            (cx.sink)(TailEvent::CaughtUp { file: self.index })?;
        }
        ControlFlow::Continue(())
    }

    /// Tells a status once, when it changes.
    fn tell(&mut self, status: FileStatus, cx: &mut Ctx<'_, '_>) -> ControlFlow<()> {
        if self.shown.as_ref() == Some(&status) {
            return ControlFlow::Continue(());
        }
        let (file, path) = (self.index, &self.path);
        let flow = (cx.sink)(TailEvent::Status {
            file,
            path,
            status: &status,
        });
        self.shown = Some(match status {
            FileStatus::Truncated | FileStatus::Rotated => FileStatus::Following,
            other => other,
        });
        flow
    }

    fn open_and_read(&mut self, cx: &mut Ctx<'_, '_>) -> ControlFlow<()> {
        match self.open_file() {
            Ok(open) => {
                self.open = Some(open);
                self.ever_opened = true;
                self.tell(FileStatus::Following, cx)?;
                self.drain(cx)
            }
            Err(e) => self.tell(FileStatus::Unreadable(e.to_string()), cx),
        }
    }

    fn open_file(&mut self) -> io::Result<OpenFile> {
        let mut file = File::open(&self.path)?;
        // The identity of what we opened, not of what the path named a moment ago.
        let id = identity(&file.metadata()?);
        let (mut offset, mut tail) = (0, Vec::new());
        if std::mem::take(&mut self.skip_history) {
            offset = file.seek(SeekFrom::End(0))?;
            tail = read_back(&mut file, offset, offset.min(TAIL_BYTES as u64) as usize)?;
        }
        Ok(OpenFile {
            file,
            id,
            offset,
            tail,
        })
    }

    /// Reads the open handle to its end.
    fn drain(&mut self, cx: &mut Ctx<'_, '_>) -> ControlFlow<()> {
        let Some(open) = self.open.as_mut() else {
            return ControlFlow::Continue(());
        };
        let (splitter, index, sink) = (&mut self.splitter, self.index, &mut *cx.sink);
        let read = pump(&mut open.file, cx.buf, cx.stop, |chunk| {
            open.offset += chunk.len() as u64;
            remember_tail(&mut open.tail, chunk);
            send(splitter, index, Some(chunk), sink)
        });
        match read {
            Ok(flow) => {
                flow?;
                self.tell(FileStatus::Following, cx)
            }
            // Keep the handle: the next wake-up tries again (NFS errors are often passing).
            Err(e) => self.tell(FileStatus::Unreadable(e.to_string()), cx),
        }
    }

    /// Reads what is left of the old file, ends its last record, and lets go of it.
    fn close(&mut self, cx: &mut Ctx<'_, '_>) -> ControlFlow<()> {
        self.drain(cx)?;
        self.open = None;
        let flow = send(&mut self.splitter, self.index, None, cx.sink);
        self.splitter.reset();
        flow
    }

    /// After a truncation: first the bytes a copytruncate moved to the copy, then the file
    /// again from 0.
    fn restart(&mut self, cx: &mut Ctx<'_, '_>) -> ControlFlow<()> {
        let Some(open) = self.open.as_mut() else {
            return ControlFlow::Continue(());
        };
        let copy = (open.offset > 0)
            .then(|| find_rotated_copy(&self.path, open.offset, &open.tail))
            .flatten();
        if let Some(mut copy) = copy {
            let (splitter, index, sink) = (&mut self.splitter, self.index, &mut *cx.sink);
            // A copy that fails mid-read has given what it could; the new content follows.
            let read = pump(&mut copy, cx.buf, cx.stop, |chunk| {
                send(splitter, index, Some(chunk), sink)
            });
            read.unwrap_or(ControlFlow::Continue(()))?;
        }
        (open.offset, open.tail) = (0, Vec::new());
        let rewound = open.file.seek(SeekFrom::Start(0));
        send(&mut self.splitter, self.index, None, cx.sink)?;
        self.splitter.reset();
        self.tell(FileStatus::Truncated, cx)?;
        match rewound {
            Ok(_) => self.drain(cx),
            Err(e) => self.tell(FileStatus::Unreadable(e.to_string()), cx),
        }
    }
}

/// Directory watches and the channel their events arrive on.
struct Wakeups {
    watcher: Option<RecommendedWatcher>,
    watched: HashSet<PathBuf>,
    rx: Receiver<notify::Result<notify::Event>>,
    /// Kept so `recv_timeout` waits out the poll period even when no watcher holds a sender.
    _tx: Sender<notify::Result<notify::Event>>,
}

impl Wakeups {
    fn new(use_notify: bool) -> Self {
        let (tx, rx) = mpsc::channel();
        // Without a watcher (inotify limit, unsupported system) the poll alone carries on.
        let watcher = use_notify
            .then(|| notify::recommended_watcher(tx.clone()).ok())
            .flatten();
        Self {
            watcher,
            watched: HashSet::new(),
            rx,
            _tx: tx,
        }
    }

    /// Watches `dir` unless already watched; a failure (no such directory yet) is retried at
    /// the next poll tick.
    fn watch(&mut self, dir: &Path) {
        if let Some(watcher) = self.watcher.as_mut()
            && !self.watched.contains(dir)
            && watcher.watch(dir, RecursiveMode::NonRecursive).is_ok()
        {
            self.watched.insert(dir.to_path_buf());
        }
    }

    /// Blocks until a change worth a look or `deadline`; says whether names changed (a glob
    /// may have new matches).
    fn wait(&self, deadline: Instant) -> bool {
        let mut renamed = false;
        while let Ok(event) = self
            .rx
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            let mut woke = false;
            for event in std::iter::once(event).chain(self.rx.try_iter()) {
                match event.map(|e| e.kind) {
                    // Opens and closes (our own included) change no content.
                    Ok(EventKind::Access(_)) => {}
                    Ok(EventKind::Modify(ModifyKind::Data(_) | ModifyKind::Metadata(_))) => {
                        woke = true
                    }
                    // Creations, removals, renames and errors (a lost event queue): look again.
                    _ => (woke, renamed) = (true, true),
                }
            }
            if woke {
                break;
            }
        }
        renamed
    }
}

/// Follows the inputs until sink returns ControlFlow::Break(()) (e.g. the inbox closed) or `stop` is set.
///
/// `stop` is looked at on every wake-up, so it takes effect within one poll period.
pub fn follow(
    inputs: &[InputSpec],
    opts: &FollowOptions,
    stop: &AtomicBool,
    sink: &mut Sink<'_>,
) -> Result<(), String> {
    if inputs.is_empty() {
        return Err("nothing to follow: no input files given".to_string());
    }
    let poll = opts.poll.clamp(POLL_RANGE.0, POLL_RANGE.1);
    let mut wakeups = Wakeups::new(opts.use_notify);
    let mut files: Vec<Followed> = Vec::new();
    let mut known: HashSet<PathBuf> = HashSet::new();
    let mut buf = vec![0u8; CHUNK_BYTES];
    let mut first = true;
    let mut next_poll = Instant::now();
    let mut rescan = true;
    while !stop.load(Ordering::Relaxed) {
        let tick = Instant::now() >= next_poll;
        if tick {
            next_poll = Instant::now() + poll;
        }
        if tick || rescan {
            for spec in inputs {
                // Watch before reading, so nothing written in between goes unnoticed.
                wakeups.watch(&spec.dir());
                for path in spec.expand() {
                    if known.insert(path.clone()) {
                        let index = files.len();
                        if sink(TailEvent::Opened {
                            file: index,
                            path: &path,
                        })
                        .is_break()
                        {
                            return Ok(());
                        }
                        files.push(Followed::new(index, path, first && !opts.from_start));
                    }
                }
            }
            first = false;
        }
        let mut cx = Ctx {
            buf: &mut buf,
            stop,
            sink: &mut *sink,
        };
        if files
            .iter_mut()
            .any(|file| file.service(&mut cx).is_break())
        {
            return Ok(());
        }
        rescan = wakeups.wait(next_poll);
    }
    Ok(())
}
