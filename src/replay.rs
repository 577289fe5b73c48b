//! Finished logs and recordings as the messages a live run would have sent, in order: the
//! same monitor then gives the same state as it did live. The render tests use it, and so will
//! `steptop replay`.

use std::path::Path;
use std::sync::Arc;

use crate::error::Error;
use crate::feed::Feed;
use crate::msg::Msg;
use crate::parse::user::UserPattern;
use crate::recording::{self, Entry};

/// Calls `each` with every message of the files, in the order given: an `Opened` per file,
/// then its lines (a plain log's with no arrival time, a recording's with its recorded one)
/// and a recording's samples, then `CaughtUp`.
pub fn messages(
    paths: &[&Path],
    patterns: &Arc<Vec<UserPattern>>,
    each: &mut dyn FnMut(Msg),
) -> Result<(), Error> {
    let mut feeds: Vec<Feed> = Vec::new();
    let open = |feeds: &mut Vec<Feed>, path: &str, each: &mut dyn FnMut(Msg)| {
        feeds.push(Feed::new(feeds.len(), path, patterns.clone()));
        each(Msg::Opened {
            source: feeds.len() - 1,
            path: path.to_string(),
        });
        feeds.len() - 1
    };
    for path in paths {
        let first = feeds.len();
        if recording::is_recording(path) {
            recording::read(path, &mut |entry| match entry {
                Entry::Line { t, file, text } => {
                    let i = match feeds[first..].iter().position(|f| f.path == file) {
                        Some(i) => first + i,
                        None => open(&mut feeds, &file, each),
                    };
                    let line_no = feeds[i].stats.lines + 1;
                    each(feeds[i].message(line_no, text.as_bytes(), t));
                }
                Entry::Sample { sample } => each(Msg::Sample(sample)),
                Entry::Header { .. } => {}
            })?;
        } else {
            let i = open(&mut feeds, &path.display().to_string(), each);
            let feed = &mut feeds[i];
            crate::source::read_records(path, &mut |line_no, raw| {
                each(feed.message(line_no, raw, None));
            })
            .map_err(|e| Error::Runtime(format!("cannot read {}: {e}", path.display())))?;
        }
        for source in first..feeds.len() {
            each(Msg::CaughtUp { source });
        }
    }
    Ok(())
}
