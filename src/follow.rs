//! The source thread of the live modes: follows the logs, parses each line through its file's
//! feed (time, rank) and sends the stamped records to the inbox. The wall clock is read here,
//! at the edge, as each line's arrival time; the monitor never reads one.

use std::ops::ControlFlow;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc::SyncSender;
use std::thread::JoinHandle;

use crate::feed::Feed;
use crate::msg::Msg;
use crate::msg::unix_now;
use crate::parse::user::UserPattern;
use crate::source::{self, FollowOptions, InputSpec, TailEvent};

/// Starts the source thread. It ends when `stop` is set, when the inbox is gone, or when
/// following fails (then it says why in a last `SourceStopped` message).
pub fn spawn(
    inputs: Vec<InputSpec>,
    opts: FollowOptions,
    patterns: Arc<Vec<UserPattern>>,
    stop: Arc<AtomicBool>,
    inbox: SyncSender<Msg>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("steptop-source".into())
        .spawn(move || {
            let mut feeds: Vec<Feed> = Vec::new();
            // History read at the start arrived all at once: its arrival time says nothing,
            // so it is timed like a whole file (the log's timestamps, else its step times).
            let mut live: Vec<bool> = Vec::new();
            let result = source::follow(&inputs, &opts, &stop, &mut |event| {
                let msg = match event {
                    TailEvent::Opened { file, path } => {
                        let path = path.display().to_string();
                        while feeds.len() <= file {
                            let index = feeds.len();
                            let mut feed = Feed::new(index, &path, patterns.clone());
                            // The history read at the start was written by now; later lines
                            // are placed by their arrival.
                            feed.set_year_reference(unix_now());
                            feeds.push(feed);
                            live.push(false);
                        }
                        Msg::Opened { source: file, path }
                    }
                    TailEvent::Status { file, status, .. } => Msg::Status {
                        source: file,
                        status: status.clone(),
                    },
                    TailEvent::CaughtUp { file } => {
                        if let Some(l) = live.get_mut(file) {
                            *l = true;
                        }
                        Msg::CaughtUp { source: file }
                    }
                    TailEvent::Record {
                        file,
                        line_no,
                        bytes,
                    } => {
                        let Some(feed) = feeds.get_mut(file) else {
                            return ControlFlow::Continue(());
                        };
                        let arrival = live.get(file).is_some_and(|l| *l).then(unix_now);
                        feed.message(line_no, bytes, arrival)
                    }
                };
                match inbox.send(msg) {
                    Ok(()) => ControlFlow::Continue(()),
                    Err(_) => ControlFlow::Break(()),
                }
            });
            if let Err(reason) = result {
                // The monitor may be gone already; then nobody needs the reason.
                let _ = inbox.send(Msg::SourceStopped { reason });
            }
        })
}
