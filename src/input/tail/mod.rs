//! Following log files as they grow: through truncation, copytruncate, rename rotation and
//! deletion, losing no line and reading none twice.
//!
//! Wake-ups come from inotify on each input's parent directory (a watch on the file itself goes
//! silent after a rename) and from a stat poll that always runs, because nothing is notified for
//! bytes written by another machine on NFS or Lustre. Per-file decisions live in followed.rs;
//! the loop in [`follow`] only waits and dispatches; both speak the words in event.rs.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, Sender};
use std::time::{Duration, Instant};

use notify::event::{EventKind, ModifyKind};
use notify::{RecommendedWatcher, RecursiveMode, Watcher};

mod followed;
mod tail_event;

use crate::input::spec::InputSpec;
use crate::monitor::msg::FileStatus;
use followed::{Ctx, Followed};
pub use tail_event::{Sink, TailEvent};

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
    /// The source index of the first file: metric files followed beside the logs take the
    /// ones before it. The tail itself numbers its files from 0.
    pub first_source: usize,
    /// Metric files followed beside the logs give the run's steps (see `Feed`).
    pub steps_elsewhere: bool,
}

impl Default for FollowOptions {
    fn default() -> Self {
        Self {
            poll: Duration::from_secs(1),
            from_start: true,
            use_notify: true,
            first_source: 0,
            steps_elsewhere: false,
        }
    }
}

/// Files followed at most. A glob over a directory that keeps receiving files (a log per
/// restart, per hour) would otherwise open one more for as long as the run lasts.
pub const FILES_FOLLOWED: usize = 256;

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
    let mut told = false;
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
                    if files.len() >= FILES_FOLLOWED && !known.contains(&path) {
                        // The first file left out says so, once; it is numbered but not
                        // followed, and none after it is remembered.
                        if !told {
                            told = true;
                            known.insert(path.clone());
                            let file = files.len();
                            let opened = sink(TailEvent::Opened { file, path: &path });
                            let status = FileStatus::NotFollowed;
                            let said = sink(TailEvent::Status {
                                file,
                                path: &path,
                                status: &status,
                            });
                            if opened.is_break() || said.is_break() {
                                return Ok(());
                            }
                        }
                        continue;
                    }
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
        if sink(TailEvent::Waiting).is_break() {
            return Ok(());
        }
        rescan = wakeups.wait(next_poll);
    }
    Ok(())
}
