//! Finished logs and recordings as the messages a live run would have sent, in order: the
//! same monitor then gives the same state as it did live. `steptop replay` plays them through
//! `pacer` (at their own pace, faster, or as fast as they read); the render tests and `report`
//! read them here directly.

pub mod pacer;

use std::path::Path;
use std::sync::Arc;

use crate::common::error::Error;
use crate::input::ingest::Feed;
use crate::input::metric_files::UserTags;
use crate::input::recording::{self, Entry};
use crate::monitor::msg::Msg;
use crate::parse::user::UserPattern;

/// Calls `each` with every message of the files, in the order given, and the bytes of input
/// read so far: an `Opened` per file, then its lines (a plain log's in bulk, as `Lines`; a
/// recording's one by one, with their recorded arrival) and a recording's samples, then `CaughtUp`. Files are
/// numbered from `first_source`. Returns the files' feeds, with their counts.
pub fn messages(
    paths: &[&Path],
    patterns: &Arc<Vec<UserPattern>>,
    first_source: usize,
    each: &mut dyn FnMut(Msg, u64),
) -> Result<Vec<Feed>, Error> {
    messages_tagged(paths, (patterns, &Arc::default()), first_source, each)
}

/// As `messages`, with the user's own metric names (`[tags]`) for metric files.
pub fn messages_tagged(
    paths: &[&Path],
    (patterns, tags): (&Arc<Vec<UserPattern>>, &Arc<UserTags>),
    first_source: usize,
    each: &mut dyn FnMut(Msg, u64),
) -> Result<Vec<Feed>, Error> {
    let mut feeds: Vec<Feed> = Vec::new();
    let mut done = 0u64;
    // `written`: when the file holding the lines was last written, the reference for their
    // year-less timestamps. A recording's lines that arrived live are placed by their arrival,
    // as they were live; those it found already written, by the recording's own time.
    let open = |feeds: &mut Vec<Feed>,
                path: &str,
                written: f64,
                each: &mut dyn FnMut(Msg, u64),
                at: u64| {
        let source = first_source + feeds.len();
        let mut feed = Feed::new(source, path, patterns.clone());
        feed.set_tags(tags.clone());
        feed.set_year_reference(written);
        feeds.push(feed);
        each(
            Msg::Opened {
                source,
                path: path.to_string(),
            },
            at,
        );
        feeds.len() - 1
    };
    let metric_files = crate::input::metric_files::any(paths.iter().copied());
    for path in paths {
        let first = feeds.len();
        let written = crate::input::file::modified(path);
        if recording::is_recording(path) {
            recording::read(path, &mut |entry, bytes| match entry {
                Entry::Line { t, file, text } => {
                    let i = match feeds[first..].iter().position(|f| f.path == file) {
                        Some(i) => first + i,
                        None => open(&mut feeds, &file, written, each, done + bytes),
                    };
                    let line_no = feeds[i].stats.lines + 1;
                    each(feeds[i].message(line_no, text.as_bytes(), t), done + bytes);
                }
                Entry::Sample { sample } => each(Msg::Sample(sample), done + bytes),
                Entry::Stacks { stacks } => each(Msg::Stacks(stacks), done + bytes),
                // `read` gives stack samples back whole, as `Stacks`.
                Entry::Header { .. } | Entry::Frames { .. } | Entry::Stack { .. } => {}
            })?;
        } else {
            let i = open(&mut feeds, &path.display().to_string(), written, each, done);
            let feed = &mut feeds[i];
            if metric_files && crate::input::metric_files::kind_of(path).is_none() {
                feed.steps_elsewhere();
            }
            // The lines and their ends: a position in bytes, near enough for a progress figure.
            let mut bytes = done;
            crate::input::ingest::read_file(path, feed, &mut |msg| {
                if let Msg::Lines(lines) = &msg {
                    bytes += lines.bytes;
                }
                each(msg, bytes);
            })
            .map_err(|e| Error::Runtime(format!("cannot read {}: {e}", path.display())))?;
        }
        done += std::fs::metadata(path).map_or(0, |m| m.len());
        for i in first..feeds.len() {
            each(
                Msg::CaughtUp {
                    source: first_source + i,
                },
                done,
            );
        }
    }
    Ok(feeds)
}
