//! One followed file's records on their way to the model: parsed, given their time and rank,
//! and counted for the report's sources table. Shared by whole-file reading and live following.

use std::sync::Arc;

use crate::model::Stamp;
use crate::msg::Msg;
use crate::parse::record::{Format, Record};
use crate::parse::user::UserPattern;
use crate::parse::{FormatCounts, LineInfo, Parser};

/// Counts for one file: the report's sources table and the live header.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceStats {
    /// Physical lines read.
    pub lines: u64,
    /// Typed records the lines gave.
    pub records: u64,
    /// Non-blank lines (or `\r` redraws) that gave no record.
    pub unparsed: u64,
    /// Lines recognised per format.
    pub formats: FormatCounts,
}

impl SourceStats {
    /// Counts line `line_no`, which gave `records` records.
    pub fn count(&mut self, line_no: u64, info: &LineInfo, records: usize) {
        self.lines = self.lines.max(line_no);
        self.formats.add(info);
        if !info.blank && records == 0 {
            self.unparsed += 1;
        }
        self.records += records as u64;
    }
}

/// A file's parser and clock.
pub struct Feed {
    pub index: usize,
    pub path: String,
    pub stats: SourceStats,
    parser: Parser,
    /// The rank the file name gives (`rank3.log`), used when lines carry none.
    file_rank: Option<u32>,
    /// The last rank a line named, for the report.
    line_rank: Option<u32>,
    last_log_time: Option<f64>,
    /// A timeline made of the logged step times, for files without timestamps.
    synthetic: f64,
    scratch: Vec<Record>,
}

impl Feed {
    pub fn new(index: usize, path: &str, patterns: Arc<Vec<UserPattern>>) -> Self {
        Feed {
            index,
            path: path.to_string(),
            stats: SourceStats::default(),
            parser: Parser::with_patterns(patterns),
            file_rank: rank_from_name(path),
            line_rank: None,
            last_log_time: None,
            synthetic: 0.0,
            scratch: Vec::new(),
        }
    }

    /// Parses one record and hands each typed record to `sink` with its stamp. `arrival` is the
    /// wall-clock time for live lines; whole-file reading passes `None`. Returns what the line
    /// said besides its records, and its stamp.
    pub fn line(
        &mut self,
        line_no: u64,
        raw: &[u8],
        arrival: Option<f64>,
        sink: &mut dyn FnMut(&Stamp, Record),
    ) -> (LineInfo, Stamp) {
        let mut out = std::mem::take(&mut self.scratch);
        let info = self.parser.parse(raw, &mut out);
        let stamp = self.deliver(line_no, &info, out.drain(..), arrival, sink);
        self.scratch = out;
        (info, stamp)
    }

    /// One line as the message a live source sends: its records, what else it said, and its
    /// text (invalid UTF-8 replaced) for the log pane and recordings. Sent for every line,
    /// so that the monitor counts them too.
    pub fn message(&mut self, line_no: u64, raw: &[u8], arrival: Option<f64>) -> Msg {
        let mut records = Vec::new();
        let (info, stamp) = self.line(line_no, raw, arrival, &mut |_, r| records.push(r));
        Msg::Line {
            stamp,
            info,
            records,
            text: String::from_utf8_lossy(raw).into_owned(),
            arrival,
        }
    }

    /// Counts, stamps and hands on the records parsed from line `line_no`, in their order.
    pub fn deliver(
        &mut self,
        line_no: u64,
        info: &LineInfo,
        records: impl ExactSizeIterator<Item = Record>,
        arrival: Option<f64>,
        sink: &mut dyn FnMut(&Stamp, Record),
    ) -> Stamp {
        self.stats.count(line_no, info, records.len());
        let stamp = self.stamp(info, line_no, arrival);
        for rec in records {
            if !stamp.real_time
                && let Record::Step(s) = &rec
                && let Some(ms) = s.step_time_ms
            {
                self.synthetic += ms / 1000.0;
            }
            sink(&stamp, rec);
        }
        stamp
    }

    /// This file's parser, for whole-file reading that parses ahead on other threads.
    pub(crate) fn parser(&mut self) -> &mut Parser {
        &mut self.parser
    }

    fn stamp(&mut self, info: &LineInfo, line: u64, arrival: Option<f64>) -> Stamp {
        if info.rank.is_some() {
            self.line_rank = info.rank;
        }
        let rank = info.rank.or(self.file_rank).unwrap_or(0);
        let (time, real_time) = match (info.time, arrival) {
            (Some(t), _) => {
                self.last_log_time = Some(t);
                (t, true)
            }
            (None, Some(now)) => (now, true),
            (None, None) => (self.last_log_time.unwrap_or(self.synthetic), false),
        };
        Stamp {
            time,
            real_time,
            source: self.index,
            line,
            rank,
        }
    }

    /// The file's primary format, if any line was recognised.
    pub fn format(&self) -> Option<Format> {
        self.stats.formats.primary()
    }

    /// Lines recognised per format.
    pub fn format_counts(&self) -> Vec<(Format, u64)> {
        self.stats.formats.counts()
    }

    /// The rank of this file: from its lines' prefixes, else from its name.
    pub fn rank(&self) -> Option<u32> {
        self.line_rank.or(self.file_rank)
    }
}

/// `rank3.log`, `train_rank12.txt`, `log.rank1` give 3, 12 and 1.
fn rank_from_name(path: &str) -> Option<u32> {
    let name = path.rsplit('/').next()?.to_ascii_lowercase();
    let at = name.rfind("rank")?;
    let digits: String = name[at + 4..]
        .chars()
        .skip_while(|c| *c == '_' || *c == '-')
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rank_from_file_names() {
        assert_eq!(rank_from_name("logs/rank3.log"), Some(3));
        assert_eq!(rank_from_name("train_rank_12.txt"), Some(12));
        assert_eq!(rank_from_name("/x/rank/train.log"), None);
    }

    #[test]
    fn lines_without_time_follow_a_timeline_of_step_times() {
        let mut feed = Feed::new(0, "t.log", Arc::default());
        let mut times = Vec::new();
        for (i, line) in [
            "iter 1: loss 1.0, time 500.00ms",
            "iter 2: loss 1.0, time 500.00ms",
            "noise",
        ]
        .iter()
        .enumerate()
        {
            feed.line(i as u64 + 1, line.as_bytes(), None, &mut |s, _| {
                times.push((s.time, s.real_time))
            });
        }
        assert_eq!(times, vec![(0.0, false), (0.5, false)]);
        let stats = &feed.stats;
        assert_eq!((stats.lines, stats.records, stats.unparsed), (3, 2, 1));
        assert_eq!(feed.format_counts(), vec![(Format::NanoGpt, 2)]);
    }
}
