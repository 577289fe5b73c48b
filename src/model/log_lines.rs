//! The last lines of the followed logs, cleaned for display: the log pane shows them. Every
//! control character but tab and every escape sequence is removed here, once, so no text from
//! a log can move the cursor, retitle the window or write the clipboard of the terminal
//! showing it. Tabs and invisible characters are kept as logged (a rule quotes these lines in
//! an alert's JSON); the pane shows them (`display::shown`) when it draws a line.

use std::collections::VecDeque;

use crate::parse::clean::clean;
use crate::parse::record::Record;

/// Lines kept for the log pane, and the characters kept of each: enough to fill a zoomed pane.
const KEPT: usize = 500;
const CHARS: usize = 400;
/// Lines kept where no pane shows them: those a rule quotes (`stalled`: what the log said
/// last, when the trainer is gone).
pub const QUOTED: usize = 5;

/// What a line gave the model, for marking it in the log pane.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineKind {
    /// No format recognised it.
    Plain,
    /// It gave records (a step, stage timings, a config fact).
    Parsed,
    /// It reported an event (OOM, traceback, NaN, checkpoint, eval).
    Event,
}

/// One cleaned line and where it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct LogLine {
    pub source: usize,
    pub line: u64,
    pub kind: LineKind,
    pub text: String,
}

/// The newest lines, oldest first; bounded.
#[derive(Clone, Debug)]
pub struct LogLines {
    pub lines: VecDeque<LogLine>,
    /// Lines kept so far, the ones dropped since included: the first kept is line
    /// `kept - lines.len()` of all, a number that stays with it as lines come and go.
    pub kept: u64,
    /// How many: the pane's `KEPT`, or `QUOTED` where no pane shows them.
    cap: usize,
}

impl Default for LogLines {
    fn default() -> Self {
        LogLines::for_pane(true)
    }
}

impl LineKind {
    /// What a line that gave `records` is.
    pub fn of(records: &[Record]) -> LineKind {
        if records.iter().any(|r| matches!(r, Record::Event { .. })) {
            LineKind::Event
        } else if records.is_empty() {
            LineKind::Plain
        } else {
            LineKind::Parsed
        }
    }
}

impl LogLines {
    /// The lines the log pane shows when `pane`, else only those a rule quotes: a report
    /// cleaned and kept 500 lines of every block it read for no pane (a twentieth of the
    /// monitor thread's work on the mixed log).
    pub fn for_pane(pane: bool) -> LogLines {
        LogLines {
            lines: VecDeque::new(),
            kept: 0,
            cap: if pane { KEPT } else { QUOTED },
        }
    }

    /// Keeps line `line` of `source` (its bytes as read) unless nothing of it can be shown:
    /// the reference the tests hold `kept_of` and `keep` to.
    #[cfg(test)]
    pub fn push(&mut self, source: usize, line: u64, raw: &[u8], kind: LineKind) {
        if let Some(text) = shown(raw) {
            self.keep(source, line, text, kind);
        }
    }

    /// Keeps line `line` of `source`, whose text `shown` gave.
    pub fn keep(&mut self, source: usize, line: u64, text: String, kind: LineKind) {
        if self.lines.len() >= self.cap {
            self.lines.pop_front();
        }
        self.lines.push_back(LogLine {
            source,
            line,
            kind,
            text,
        });
        self.kept += 1;
    }

    /// Of lines about to be pushed in order (`raws`), those that will still be kept after
    /// the last, as their indexes and texts, in order: keeping only these leaves the same
    /// lines as pushing all, and each line is cleaned once.
    pub fn kept_of<'a>(
        &self,
        raws: impl DoubleEndedIterator<Item = &'a [u8]> + ExactSizeIterator,
    ) -> Vec<(usize, String)> {
        let mut kept = Vec::new();
        for (i, raw) in raws.enumerate().rev() {
            if kept.len() == self.cap {
                break;
            }
            if let Some(text) = shown(raw) {
                kept.push((i, text));
            }
        }
        kept.reverse();
        kept
    }

    /// The last `n` lines, oldest first.
    pub fn last(&self, n: usize) -> impl Iterator<Item = &LogLine> {
        self.lines.iter().skip(self.lines.len().saturating_sub(n))
    }
}

/// What the pane shows of a line as read: its cleaned text, its first `CHARS` characters,
/// or None when nothing of it can be shown.
pub fn shown(raw: &[u8]) -> Option<String> {
    let mut buf = String::new();
    let text = clean(raw, &mut buf).trim_end();
    if text.is_empty() {
        return None;
    }
    // Copied at once rather than character by character; a text of no more bytes than
    // `CHARS` has no more characters, and is not walked.
    let end = if text.len() <= CHARS {
        text.len()
    } else {
        text.char_indices()
            .nth(CHARS)
            .map_or(text.len(), |(i, _)| i)
    };
    Some(text[..end].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::record::EventKind;

    #[test]
    fn escape_sequences_never_survive() {
        let mut l = LogLines::default();
        let nasty =
            "loss 1.0 \x1b]52;c;cm0gLXJmIH4=\x07\x1b]0;pwned\x07\x1b[2J\x1b[H\u{9b}31m\r\x08ok\t2";
        l.push(0, 1, nasty.as_bytes(), LineKind::Plain);
        let t = &l.lines[0].text;
        assert!(!t.chars().any(|c| c.is_control() && c != '\t'), "{t:?}");
        assert_eq!(t, "loss 1.0 31mok\t2");
    }

    #[test]
    fn lines_are_marked_and_bounded() {
        let mut l = LogLines::default();
        let ev = Record::Event {
            kind: EventKind::Traceback,
            text: String::new(),
        };
        l.push(
            0,
            1,
            b"Traceback (most recent call last):",
            LineKind::of(&[ev]),
        );
        l.push(0, 2, b"   ", LineKind::Plain);
        assert_eq!((l.lines.len(), l.lines[0].kind), (1, LineKind::Event));
        for i in 0..(KEPT as u64 + 10) {
            l.push(1, i, "x".repeat(1000).as_bytes(), LineKind::Plain);
        }
        assert_eq!(l.lines.len(), KEPT);
        assert_eq!(l.lines[0].line, 10);
        assert_eq!(l.lines[0].text.len(), CHARS);
        // Characters, not bytes: 300 two-byte ones are kept whole, 500 are cut at `CHARS`.
        let chars = |n: usize| shown("é".repeat(n).as_bytes()).map(|t| t.chars().count());
        assert_eq!((chars(300), chars(500)), (Some(300), Some(CHARS)));
        assert_eq!(
            l.last(2).map(|x| x.line).collect::<Vec<_>>(),
            [KEPT as u64 + 8, KEPT as u64 + 9]
        );
    }

    #[test]
    fn pushing_only_the_kept_tail_leaves_the_same_lines() {
        let mut raws: Vec<Vec<u8>> = Vec::new();
        for i in 0..(4 * KEPT) {
            // Blank and escape-only lines are never kept, so they do not count.
            raws.push(match i % 3 {
                0 => b"   ".to_vec(),
                1 => b"\x1b[2K".to_vec(),
                _ => format!("step {i}").into_bytes(),
            });
        }
        let mut all = LogLines::default();
        all.push(9, 0, b"an older line", LineKind::Plain);
        let mut tail = all.clone();
        for (i, r) in raws.iter().enumerate() {
            all.push(0, i as u64, r, LineKind::Plain);
        }
        let kept = tail.kept_of(raws.iter().map(Vec::as_slice));
        assert!(kept.len() == KEPT && kept[0].0 > 0);
        for (i, text) in kept {
            tail.keep(0, i as u64, text, LineKind::Plain);
        }
        assert_eq!(all.lines, tail.lines);
        // Fewer lines than are kept: all of them.
        let few = tail.kept_of(raws[..10].iter().map(Vec::as_slice));
        assert_eq!(few.iter().map(|k| k.0).collect::<Vec<_>>(), [2, 5, 8]);
    }
}
