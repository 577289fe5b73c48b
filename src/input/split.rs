//! Byte chunks to lines: `\n`, `\r\n` and bare `\r` (tqdm redraws) each end one.
//!
//! Pure and allocation-light: when no partial line is held, lines are handed out as slices
//! of the caller's chunk; only an unfinished tail is copied, and never more than
//! [`MAX_LINE_BYTES`] of it.

use memchr::memchr2;

/// Longest line handed on; longer ones are cut so one runaway line cannot eat the memory.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// Splits a byte stream into lines while remembering the physical line each came from.
#[derive(Debug, Clone)]
pub struct LineSplitter {
    /// Start of the unfinished line, at most `MAX_LINE_BYTES` long.
    partial: Vec<u8>,
    /// The unfinished line grew past the cap: the rest of it is being dropped.
    overflowed: bool,
    /// Physical line (1-based) of the line being built.
    line_no: u64,
    /// The last byte seen was `\n` (or nothing was seen): no physical line is open.
    at_line_start: bool,
    cut_lines: u64,
}

impl Default for LineSplitter {
    fn default() -> Self {
        Self::new()
    }
}

impl LineSplitter {
    /// A splitter at line 1 holding nothing.
    pub fn new() -> Self {
        Self {
            partial: Vec::new(),
            overflowed: false,
            line_no: 1,
            at_line_start: true,
            cut_lines: 0,
        }
    }

    /// Feeds bytes; calls emit(line_no, line) for each complete line.
    pub fn push(&mut self, bytes: &[u8], emit: &mut dyn FnMut(u64, &[u8])) {
        let Some(&last) = bytes.last() else {
            return;
        };
        let mut rest = bytes;
        while let Some(found) = memchr2(b'\n', b'\r', rest) {
            self.complete(&rest[..found], emit);
            // Only `\n` starts a new physical line. The `\n` of a `\r\n` (even one in the next
            // chunk) ends an empty line, which is skipped: so the pair is one terminator.
            if rest[found] == b'\n' {
                self.line_no += 1;
            }
            rest = &rest[found + 1..];
        }
        self.hold(rest);
        self.at_line_start = last == b'\n';
    }

    /// End of input (whole-file reading): emits the held partial line if any.
    pub fn finish(&mut self, emit: &mut dyn FnMut(u64, &[u8])) {
        self.complete(&[], emit);
        // An unterminated last line is still a physical line.
        if !self.at_line_start {
            self.line_no += 1;
            self.at_line_start = true;
        }
    }

    /// How many bytes of an unfinished line are held, so callers can see nothing leaks.
    pub fn pending_bytes(&self) -> usize {
        self.partial.len()
    }

    /// How many lines were cut at `MAX_LINE_BYTES`, counted across resets, for the summary.
    pub fn cut_lines(&self) -> u64 {
        self.cut_lines
    }

    /// Physical lines completed so far (after `finish`, including an unterminated last one).
    pub fn lines(&self) -> u64 {
        self.line_no - 1
    }

    /// Forgets any partial line and starts again at line 1, for a truncated or replaced file.
    pub fn reset(&mut self) {
        let cut_lines = self.cut_lines;
        *self = Self::new();
        self.cut_lines = cut_lines;
    }

    /// Keeps an unfinished tail, up to the cap.
    fn hold(&mut self, bytes: &[u8]) {
        let room = MAX_LINE_BYTES - self.partial.len();
        if bytes.len() > room {
            self.overflowed = true;
        }
        self.partial
            .extend_from_slice(&bytes[..bytes.len().min(room)]);
    }

    /// Emits the line made of the held bytes plus `tail`, which ends at a terminator.
    fn complete(&mut self, tail: &[u8], emit: &mut dyn FnMut(u64, &[u8])) {
        if self.partial.is_empty() && !self.overflowed {
            // Hot path: nothing held, so the line is a slice of the caller's chunk.
            if tail.len() > MAX_LINE_BYTES {
                self.cut_lines += 1;
                emit(self.line_no, &tail[..MAX_LINE_BYTES]);
            } else if !tail.is_empty() {
                emit(self.line_no, tail);
            }
            return;
        }
        self.hold(tail);
        if self.overflowed {
            self.cut_lines += 1;
        }
        if !self.partial.is_empty() {
            emit(self.line_no, &self.partial);
        }
        self.partial.clear();
        self.overflowed = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(chunks: &[&[u8]], finish: bool) -> Vec<(u64, Vec<u8>)> {
        let mut splitter = LineSplitter::new();
        let mut out = Vec::new();
        let mut emit = |line: u64, rec: &[u8]| out.push((line, rec.to_vec()));
        for chunk in chunks {
            splitter.push(chunk, &mut emit);
        }
        if finish {
            splitter.finish(&mut emit);
        }
        out
    }

    fn rec(line: u64, s: &str) -> (u64, Vec<u8>) {
        (line, s.as_bytes().to_vec())
    }

    #[test]
    fn newline_crlf_and_bare_cr_each_end_a_record() {
        let got = split(&[b"a\nb\r\nc\rd\n"], false);
        assert_eq!(
            got,
            vec![rec(1, "a"), rec(2, "b"), rec(3, "c"), rec(3, "d")]
        );
    }

    #[test]
    fn crlf_split_across_chunks_is_one_terminator() {
        let got = split(&[b"a\r", b"\nb\n"], false);
        assert_eq!(got, vec![rec(1, "a"), rec(2, "b")]);
    }

    #[test]
    fn partial_record_waits_for_its_terminator() {
        let mut splitter = LineSplitter::new();
        let mut out = Vec::new();
        splitter.push(b"step 1 lo", &mut |l, r| out.push((l, r.to_vec())));
        assert!(out.is_empty());
        assert_eq!(splitter.pending_bytes(), 9);
        splitter.push(b"ss=2\n", &mut |l, r| out.push((l, r.to_vec())));
        assert_eq!(out, vec![rec(1, "step 1 loss=2")]);
        assert_eq!(splitter.pending_bytes(), 0);
    }

    #[test]
    fn empty_records_are_skipped_but_lines_counted() {
        let got = split(&[b"\n\r\n\r\rx\n"], false);
        assert_eq!(got, vec![rec(3, "x")]);
    }

    #[test]
    fn finish_emits_the_tail_and_counts_its_line() {
        let mut splitter = LineSplitter::new();
        let mut out = Vec::new();
        splitter.push(b"a\nb", &mut |l, r| out.push((l, r.to_vec())));
        splitter.finish(&mut |l, r| out.push((l, r.to_vec())));
        assert_eq!(out, vec![rec(1, "a"), rec(2, "b")]);
        assert_eq!(splitter.lines(), 2);
    }

    #[test]
    fn long_record_is_cut_in_one_chunk_and_across_chunks() {
        let long = vec![b'x'; MAX_LINE_BYTES + 10];
        let mut input = long.clone();
        input.extend_from_slice(b"\nok\n");
        let whole = split(&[&input], false);
        let (a, b) = input.split_at(1000);
        let pieces = split(&[a, b], false);
        for got in [whole, pieces] {
            assert_eq!(got.len(), 2);
            assert_eq!(got[0].1.len(), MAX_LINE_BYTES);
            assert_eq!(got[1], rec(2, "ok"));
        }
    }

    #[test]
    fn reset_starts_again_at_line_one_and_keeps_the_cut_count() {
        let mut splitter = LineSplitter::new();
        let big = vec![b'y'; MAX_LINE_BYTES + 1];
        splitter.push(&big, &mut |_, _| {});
        splitter.push(b"\nhalf", &mut |_, _| {});
        splitter.reset();
        assert_eq!(splitter.pending_bytes(), 0);
        assert_eq!(splitter.cut_lines(), 1);
        let mut out = Vec::new();
        splitter.push(b"new\n", &mut |l, r| out.push((l, r.to_vec())));
        assert_eq!(out, vec![rec(1, "new")]);
    }
}
