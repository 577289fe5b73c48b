//! What steptop read of one source (a file being read): its lines, the records they gave,
//! the lines nothing read and those whose figures cannot be true. The report's sources table
//! and the live header show it.

use crate::parse::record::Record;
use crate::parse::{FormatCounts, LineInfo};

/// Counts for one file: the report's sources table and the live header.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SourceStats {
    /// Physical lines read.
    pub lines: u64,
    /// Typed records the lines gave.
    pub records: u64,
    /// Non-blank lines (or `\r` redraws) that gave no record, rejected ones included.
    pub unparsed: u64,
    /// Lines whose figures cannot be true: a step number that overflows or goes back with no
    /// restart to explain it, a negative or non-finite time or rate, a number that overflows.
    pub rejected: u64,
    /// The first of them: its line number, what is impossible, and its text.
    pub first_rejected: Option<(u64, &'static str, String)>,
    /// Lines recognised per format.
    pub formats: FormatCounts,
    /// What in a metric file could not be read (a record that fails its checksum, a torn
    /// last record), with where: the rest of the file still is.
    pub problems: Vec<String>,
    /// Per user `[[pattern]]` (by its place in the config's list), the lines it read and of
    /// them those rejected.
    pub patterns: Vec<PatternCount>,
    /// Step lines whose data time is longer than their step time (by more than rounding), and
    /// the first of them: a figure read for another, or a smoothed step beside a raw wait.
    pub data_over_step: u64,
    pub first_data_over_step: Option<u64>,
    /// Step lines that repeat the line before them figure for figure (a logger's copy beside
    /// a print's), read as one step, and the first of them.
    pub repeated: u64,
    pub first_repeated: Option<u64>,
}

/// What one user pattern read of a file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PatternCount {
    pub matched: u64,
    pub rejected: u64,
    /// Of them, the lines whose data time is longer than their step time.
    pub data_over_step: u64,
}

/// Whether a step record's data time is longer than its step time by more than rounding.
pub fn data_over_step(rec: &Record) -> bool {
    matches!(rec, Record::Step(s) if s.data_time_ms.zip(s.step_time_ms).is_some_and(|(d, t)| d > t * 1.05 + 0.5))
}

/// Whether nothing read a line that gave `records` records: not blank, and no format
/// recognised it (a recognised line may say nothing to count, as a cache block's head).
pub fn read_nothing(info: &LineInfo, records: usize) -> bool {
    !info.blank && records == 0 && info.format.is_none()
}

impl SourceStats {
    fn pattern(&mut self, p: u8) -> &mut PatternCount {
        let i = usize::from(p);
        if self.patterns.len() <= i {
            self.patterns.resize(i + 1, PatternCount::default());
        }
        &mut self.patterns[i]
    }

    /// Counts line `line_no`, which gave `records` records; true when nothing read it.
    pub fn count(&mut self, line_no: u64, info: &LineInfo, records: usize) -> bool {
        self.lines = self.lines.max(line_no);
        if let Some(p) = info.pattern {
            self.pattern(p).matched += 1;
        }
        if info.data_over_step {
            self.data_over_step += 1;
            self.first_data_over_step.get_or_insert(line_no);
            if let Some(p) = info.pattern {
                self.pattern(p).data_over_step += 1;
            }
        }
        self.formats.add(info);
        self.records += records as u64;
        let unparsed = read_nothing(info, records);
        self.unparsed += u64::from(unparsed);
        unparsed
    }

    /// Counts line `line_no` as rejected for `what`: unparsed, whatever format it looked like;
    /// the first one is kept with its text (cleaned, its first 200 characters). `info` says
    /// which user pattern read it, if one did.
    pub fn reject(&mut self, line_no: u64, info: &LineInfo, what: &'static str, raw: &[u8]) {
        self.lines = self.lines.max(line_no);
        if let Some(p) = info.pattern {
            let count = self.pattern(p);
            count.matched += 1;
            count.rejected += 1;
        }
        self.unparsed += 1;
        self.rejected += 1;
        if self.first_rejected.is_none() {
            let mut buf = String::new();
            let text = crate::parse::clean::clean(raw, &mut buf).trim();
            let end = text.char_indices().nth(200).map_or(text.len(), |(i, _)| i);
            self.first_rejected = Some((line_no, what, text[..end].to_string()));
        }
    }
}
