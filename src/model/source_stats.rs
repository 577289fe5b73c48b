//! What steptop read of one source (a file being read): its lines, the records they gave,
//! the lines nothing read and those whose figures cannot be true. The report's sources table
//! and the live header show it.

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
}

/// Whether nothing read a line that gave `records` records: not blank, and no format
/// recognised it (a recognised line may say nothing to count, as a cache block's head).
pub fn read_nothing(info: &LineInfo, records: usize) -> bool {
    !info.blank && records == 0 && info.format.is_none()
}

impl SourceStats {
    /// Counts line `line_no`, which gave `records` records; true when nothing read it.
    pub fn count(&mut self, line_no: u64, info: &LineInfo, records: usize) -> bool {
        self.lines = self.lines.max(line_no);
        self.formats.add(info);
        self.records += records as u64;
        let unparsed = read_nothing(info, records);
        self.unparsed += u64::from(unparsed);
        unparsed
    }

    /// Counts line `line_no` as rejected for `what`: unparsed, whatever format it looked like;
    /// the first one is kept with its text (cleaned, its first 200 characters).
    pub fn reject(&mut self, line_no: u64, what: &'static str, raw: &[u8]) {
        self.lines = self.lines.max(line_no);
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
