//! One followed path: its open handle, how far it was read, the rotated-away file still being
//! read, and what the user was last told. The follow loop in live.rs calls `service` on every
//! wake-up and poll tick.

use std::fs::File;
use std::io::{self, Seek, SeekFrom};
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::{Duration, Instant};

use super::tail_event::{Sink, TailEvent};
use crate::input::file::{
    FileId, Step, TAIL_BYTES, decide, find_rotated_copy, identity, probe, pump, read_back,
    remember_tail,
};
use crate::input::split::LineSplitter;
use crate::monitor::msg::FileStatus;

/// An open read-only handle and where we are in it.
struct OpenFile {
    file: File,
    id: FileId,
    offset: u64,
    /// The last bytes read (at most `TAIL_BYTES`), ending at `offset`.
    tail: Vec<u8>,
}

/// What every read needs: the shared buffer, the stop flag and the sink.
pub(super) struct Ctx<'a, 's> {
    pub buf: &'a mut [u8],
    pub stop: &'a AtomicBool,
    pub sink: &'a mut Sink<'s>,
}

/// Splits a chunk (or, with `None`, ends the input) and sends the lines; sends nothing more
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
            flow = sink(TailEvent::Line {
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

/// How long the file a rename rotation moved away is still read after it last grew: a writer
/// that has not reopened its log yet goes on writing there.
const RETIRED_GRACE: Duration = Duration::from_secs(5);

/// The old file after a rename rotation, read until it has been quiet for `RETIRED_GRACE`.
struct Retired {
    open: OpenFile,
    splitter: LineSplitter,
    quiet_since: Instant,
}

/// One followed path: what is open, how far we read, and what the user was last told.
pub(super) struct Followed {
    index: usize,
    path: PathBuf,
    open: Option<OpenFile>,
    splitter: LineSplitter,
    retired: Option<Retired>,
    shown: Option<FileStatus>,
    ever_opened: bool,
    caught_up: bool,
    /// Start at the end on the first open (history not wanted, file present at the start).
    skip_history: bool,
}

impl Followed {
    pub fn new(index: usize, path: PathBuf, skip_history: bool) -> Self {
        let splitter = LineSplitter::new();
        let (open, shown, ever_opened, caught_up) = (None, None, false, false);
        Self {
            index,
            path,
            open,
            splitter,
            retired: None,
            shown,
            ever_opened,
            caught_up,
            skip_history,
        }
    }

    /// Stats the path and does whatever that calls for, reading everything available.
    pub fn service(&mut self, cx: &mut Ctx<'_, '_>) -> ControlFlow<()> {
        self.read_retired(cx)?;
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
                self.retire(cx)?;
                self.tell(FileStatus::Rotated, cx)?;
                self.open_and_read(cx)?;
            }
            Step::Gone => {
                // Between a rename rotation and the new file's creation the path is simply
                // gone: the writer may still add to the old file, so it is kept like a
                // rotated one.
                self.retire(cx)?;
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

    /// Reads what is left of the old file and keeps its handle as the retired one (ending the
    /// one retired before), so lines its writer adds before reopening are not lost.
    fn retire(&mut self, cx: &mut Ctx<'_, '_>) -> ControlFlow<()> {
        self.drain(cx)?;
        self.end_retired(cx)?;
        if let Some(open) = self.open.take() {
            self.retired = Some(Retired {
                open,
                splitter: std::mem::take(&mut self.splitter),
                quiet_since: Instant::now(),
            });
        }
        ControlFlow::Continue(())
    }

    /// Reads the retired file's new lines; lets go of it once it has been quiet long enough.
    fn read_retired(&mut self, cx: &mut Ctx<'_, '_>) -> ControlFlow<()> {
        let Some(r) = self.retired.as_mut() else {
            return ControlFlow::Continue(());
        };
        let (splitter, index, sink) = (&mut r.splitter, self.index, &mut *cx.sink);
        let mut grew = false;
        let read = pump(&mut r.open.file, cx.buf, cx.stop, |chunk| {
            grew = true;
            send(splitter, index, Some(chunk), sink)
        });
        if grew {
            r.quiet_since = Instant::now();
        }
        // A read error on a file already rotated away ends it like the grace period does.
        if read.is_err() || r.quiet_since.elapsed() >= RETIRED_GRACE {
            self.end_retired(cx)?;
        }
        read.unwrap_or(ControlFlow::Continue(()))
    }

    /// Ends the retired file's last line and closes it.
    fn end_retired(&mut self, cx: &mut Ctx<'_, '_>) -> ControlFlow<()> {
        match self.retired.take() {
            Some(mut r) => send(&mut r.splitter, self.index, None, cx.sink),
            None => ControlFlow::Continue(()),
        }
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
