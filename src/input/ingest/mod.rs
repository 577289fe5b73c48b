//! A file's lines become messages here and nowhere else. Each source (a file being read) has
//! its `Feed`: its parser, its step order and its clock. One line takes `Feed::message` (live
//! following); lines already written go through `bulk` in blocks, parsed ahead on other
//! threads and passed through the same feed, line by line, in order. Either way a line is
//! parsed, judged (`order`: can its step follow the ones before?), stamped with its time and
//! rank, and counted.

mod bulk;
mod feed;
mod order;
mod shape_names;

pub use bulk::{Ingest, read_file};
pub use feed::Feed;
