//! The thread that follows metric files in the live modes, beside the follow thread of the
//! logs: what each file holds at the start is read as history (timed by its own wall times),
//! then each file is looked at four times a second and what was written since goes to the
//! inbox as lines (`metric_files::growing`). Its files take the first source indices. A
//! tracker's hardware samples go with its lines: while its history is read, always (they are
//! the run's own readings of its GPUs); after, only with the probes off, when they are the
//! only readings of the GPUs (with the probes on, NVML reads them here).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::SyncSender;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::input::ingest::Feed;
use crate::input::metric_files::growing::Growing;
use crate::input::metric_files::{self, Entry, InOrder, Kind, UserTags};
use crate::monitor::msg::{FileStatus, Msg, unix_now};
use crate::parse::user::UserPattern;

/// How often each file is looked at: a value flushed shows within this.
const LOOK_EVERY: Duration = Duration::from_millis(250);

/// Starts the thread for `files`, sources 0.. in their order. It ends when `stop` is set or
/// the inbox is gone. `live_samples`: a tracker's samples written from now on go to the inbox
/// too (the probes are off).
pub fn spawn(
    files: Vec<(PathBuf, Kind)>,
    (patterns, tags): (Arc<Vec<UserPattern>>, Arc<UserTags>),
    live_samples: bool,
    stop: Arc<AtomicBool>,
    inbox: SyncSender<Msg>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("steptop-metrics-follow".into())
        .spawn(move || {
            let mut followed: Vec<(Growing, Feed, u64)> = Vec::new();
            for (i, (path, kind)) in files.into_iter().enumerate() {
                let shown = path.display().to_string();
                if inbox
                    .send(Msg::Opened {
                        source: i,
                        path: shown.clone(),
                    })
                    .is_err()
                {
                    return;
                }
                let mut feed = Feed::new(i, &shown, patterns.clone());
                feed.set_tags(tags.clone());
                followed.push((Growing::new(path, kind), feed, 0));
            }
            let mut history = true;
            while !stop.load(Ordering::Relaxed) {
                for (i, (file, feed, lines)) in followed.iter_mut().enumerate() {
                    let path = file.path.clone();
                    let look = file.look();
                    let problems = look.problems;
                    // A restart's new event file takes the source over, as a rotated log does.
                    if file.path != path
                        && inbox
                            .send(Msg::Opened {
                                source: i,
                                path: file.path.display().to_string(),
                            })
                            .is_err()
                    {
                        return;
                    }
                    // The first problem of a look is said in the view (`report` lists them all).
                    if let Some(p) = problems.first()
                        && inbox
                            .send(Msg::Status {
                                source: i,
                                status: FileStatus::Damaged(p.clone()),
                            })
                            .is_err()
                    {
                        return;
                    }
                    // History is timed by the file's wall times; a live value arrives now,
                    // unless the file gives no time of its own: a CSV logger writes a hundred
                    // rows at once, and arrivals would make their steps take no time.
                    let arrival = (!history && file.kind.timed()).then(unix_now);
                    let samples = if history || live_samples {
                        look.samples
                    } else {
                        Vec::new()
                    };
                    for item in metric_files::in_order(look.entries, samples) {
                        let msg = match item {
                            InOrder::Sample(s) => Msg::Sample(s),
                            InOrder::Entry(_, e) => {
                                *lines += 1;
                                message(feed, *lines, e, file.kind, arrival)
                            }
                        };
                        if inbox.send(msg).is_err() {
                            return;
                        }
                    }
                    if history && inbox.send(Msg::CaughtUp { source: i }).is_err() {
                        return;
                    }
                }
                history = false;
                std::thread::sleep(LOOK_EVERY);
            }
        })
}

/// One entry as the line message the follow thread would send for a log line.
fn message(feed: &mut Feed, line_no: u64, e: Entry, kind: Kind, arrival: Option<f64>) -> Msg {
    let text = e.text();
    let mut records = Vec::new();
    let (info, stamp) = feed.entry(line_no, &e, &text, kind.format(), arrival, &mut |_, r| {
        records.push(r)
    });
    Msg::Line {
        stamp,
        info,
        records,
        text,
        arrival,
    }
}
