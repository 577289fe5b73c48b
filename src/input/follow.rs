//! The follow thread of the live modes: follows the logs, parses each line through its file's
//! feed (time, rank) and sends the stamped records to the inbox. The wall clock is read here,
//! at the edge, as each line's arrival time; the monitor never reads one.

use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::SyncSender;
use std::thread::JoinHandle;

use crate::input::InputSpec;
use crate::input::ingest::{Feed, Ingest};
use crate::input::tail::{self, FollowOptions, TailEvent};
use crate::monitor::msg::{Backlog, Lines, Msg, unix_now};
use crate::parse::user::UserPattern;

/// Starts the follow thread. It ends when `stop` is set, when the inbox is gone, or when
/// following fails (then it says why in a last `InputStopped` message).
pub fn spawn(
    inputs: Vec<InputSpec>,
    opts: FollowOptions,
    patterns: Arc<Vec<UserPattern>>,
    stop: Arc<AtomicBool>,
    inbox: SyncSender<Msg>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("steptop-follow".into())
        .spawn(move || {
            let mut feeds: Vec<Feed> = Vec::new();
            // The tail numbers its files from 0; their sources start after the metric files'.
            let first = opts.first_source;
            // History read at the start arrived all at once: its arrival time says nothing,
            // so it is timed like a whole file (the log's timestamps, else its step times),
            // and it is parsed in bulk, as a report reads a file.
            let mut live: Vec<bool> = Vec::new();
            let mut history = History::default();
            let mut arrived = Arrived::default();
            let result = tail::follow(&inputs, &opts, &stop, &mut |event| {
                if let TailEvent::Line {
                    file,
                    line_no,
                    bytes,
                } = event
                    && live.get(file).is_some_and(|l| !*l)
                    && file < feeds.len()
                {
                    // One file's history at a time: another's lines are sent first.
                    if history.file.is_some_and(|f| f != file) {
                        history.flush(&mut feeds, &inbox)?;
                    }
                    return history.push(file, &mut feeds[file], line_no, bytes, &inbox);
                }
                // Whatever else comes is sent after the history read before it.
                history.flush(&mut feeds, &inbox)?;
                if let TailEvent::Line {
                    file,
                    line_no,
                    bytes,
                } = event
                {
                    let Some(feed) = feeds.get_mut(file) else {
                        return ControlFlow::Continue(());
                    };
                    return arrived.push(file, feed, line_no, bytes, &inbox);
                }
                // And after the lines that arrived before it.
                arrived.flush(&inbox)?;
                let msg = match event {
                    TailEvent::Opened { file, path } => {
                        let path = path.display().to_string();
                        while feeds.len() <= file {
                            let index = feeds.len();
                            let mut feed = Feed::new(first + index, &path, patterns.clone());
                            if opts.steps_elsewhere {
                                feed.steps_elsewhere();
                            }
                            // The history read at the start was written by now; later lines
                            // are placed by their arrival.
                            feed.set_year_reference(unix_now());
                            feeds.push(feed);
                            live.push(false);
                        }
                        // Its size now is the history to read: the view shows how far it is.
                        let size = std::fs::metadata(&path).map_or(0, |m| m.len());
                        let opened = Msg::Opened {
                            source: first + file,
                            path,
                        };
                        if inbox.send(opened).is_err() {
                            return ControlFlow::Break(());
                        }
                        Msg::HistorySize {
                            source: first + file,
                            bytes: size,
                        }
                    }
                    TailEvent::Status { file, status, .. } => Msg::Status {
                        source: first + file,
                        status: status.clone(),
                    },
                    TailEvent::CaughtUp { file } => {
                        if let Some(l) = live.get_mut(file) {
                            *l = true;
                        }
                        Msg::CaughtUp {
                            source: first + file,
                        }
                    }
                    TailEvent::Line { .. } | TailEvent::Waiting => {
                        return ControlFlow::Continue(());
                    }
                };
                match inbox.send(msg) {
                    Ok(()) => ControlFlow::Continue(()),
                    Err(_) => ControlFlow::Break(()),
                }
            });
            // Lines read before a stop in the middle of a read are sent as they were read.
            let _ = arrived.flush(&inbox);
            if let Err(reason) = result {
                // The monitor may be gone already; then nobody needs the reason.
                let _ = inbox.send(Msg::InputStopped { reason });
            }
        })
}

/// Lines that arrive in one read of a followed file, sent as one message once the follower
/// has read every file to its end (or another file's line or any other news comes): a log
/// that grows by thousands of lines a second costs one hand-off and one wake-up of the view a
/// read, not one a line. Each line is stamped with its own arrival, as a single one is.
#[derive(Default)]
struct Arrived {
    file: Option<usize>,
    lines: Lines,
}

/// The most lines one message holds: a read of megabytes still reaches the view in steps.
const ARRIVED_LINES: usize = 4096;

impl Arrived {
    fn push(
        &mut self,
        file: usize,
        feed: &mut Feed,
        line_no: u64,
        raw: &[u8],
        inbox: &SyncSender<Msg>,
    ) -> ControlFlow<()> {
        if self.file.is_some_and(|f| f != file) {
            self.flush(inbox)?;
        }
        self.file = Some(file);
        let lines = &mut self.lines;
        lines.bytes += raw.len() as u64 + 1;
        let arrival = Some(unix_now());
        lines.add(raw, arrival, |sink| feed.line(line_no, raw, arrival, sink));
        if lines.heads.len() >= ARRIVED_LINES {
            return self.flush(inbox);
        }
        ControlFlow::Continue(())
    }

    fn flush(&mut self, inbox: &SyncSender<Msg>) -> ControlFlow<()> {
        self.file = None;
        if self.lines.heads.is_empty() {
            return ControlFlow::Continue(());
        }
        let lines = std::mem::take(&mut self.lines);
        match inbox.send(Msg::Lines(Box::new(lines))) {
            Ok(()) => ControlFlow::Continue(()),
            Err(_) => ControlFlow::Break(()),
        }
    }
}

/// The history being read: one file's lines at a time through the bulk reader, sent in
/// blocks within the inbox's bulk allowance.
#[derive(Default)]
struct History {
    ingest: Option<Ingest>,
    /// The file whose lines are in the reader.
    file: Option<usize>,
    backlog: Backlog,
}

impl History {
    fn push(
        &mut self,
        file: usize,
        feed: &mut Feed,
        line_no: u64,
        raw: &[u8],
        inbox: &SyncSender<Msg>,
    ) -> ControlFlow<()> {
        self.file = Some(file);
        let ingest = self.ingest.get_or_insert_with(|| Ingest::new(feed));
        let mut gone = false;
        let backlog = &self.backlog;
        let sent = ingest.push(feed, line_no, raw, &mut |lines| {
            gone |= !backlog.send(inbox, lines);
        });
        settle(sent, gone, inbox)
    }

    /// Sends what the reader holds of the file being read. The reader and its threads go
    /// with it: once the history is read, lines come one by one.
    fn flush(&mut self, feeds: &mut [Feed], inbox: &SyncSender<Msg>) -> ControlFlow<()> {
        let (Some(file), Some(mut ingest)) = (self.file.take(), self.ingest.take()) else {
            return ControlFlow::Continue(());
        };
        let Some(feed) = feeds.get_mut(file) else {
            return ControlFlow::Continue(());
        };
        let mut gone = false;
        let backlog = &self.backlog;
        let sent = ingest.flush(feed, &mut |lines| {
            gone |= !backlog.send(inbox, lines);
        });
        settle(sent, gone, inbox)
    }
}

/// Stops following when the inbox is gone or the reader failed (a parser thread stopped:
/// the lines it held are lost, so following on would show a wrong history).
fn settle(sent: std::io::Result<()>, gone: bool, inbox: &SyncSender<Msg>) -> ControlFlow<()> {
    if let Err(e) = sent {
        let _ = inbox.send(Msg::InputStopped {
            reason: format!("reading the history: {e}"),
        });
        return ControlFlow::Break(());
    }
    if gone {
        ControlFlow::Break(())
    } else {
        ControlFlow::Continue(())
    }
}
