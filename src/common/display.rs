//! Log text as a terminal shows it: widths in cells, padding and cutting by cells, and the
//! characters a terminal would draw as nothing (or use to reorder a line) made visible.
//!
//! clean.rs has already removed control characters and escape sequences from every log line;
//! what is left can still lie to a reader. A right-to-left override (U+202E) makes `Stage8`
//! read as `8egatS` and can flip the figures after it; a zero-width space makes two different
//! stage names look the same. Every sink that writes to a terminal (the text and markdown
//! reports, headless text lines, the live view) passes log text through [`shown`]; JSON keeps
//! it as logged. A CJK character or an emoji takes two cells, so tables are laid out with
//! [`width`] and [`pad`], never with `format!` widths, which count chars.

use std::borrow::Cow;
use std::fmt::Write;

use unicode_width::UnicodeWidthStr;

/// How [`shown`] writes a tab.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tabs {
    /// Spaces to the next multiple of 8 cells, as a terminal would: for a whole log line shown
    /// from its first column (the log pane), where tab-separated fields (mmcv) should line up.
    Stops,
    /// One space: for a piece of log text inside our own layout (a stage name in a table, a
    /// line quoted in an alert), whose column in the log is unknown, so stops counted from our
    /// layout would be arbitrary and a wide gap would break the table.
    Space,
    /// As it is: steptop's own output written whole ([`terminal`]), whose tabs it chose.
    Kept,
}

/// Unicode format characters (general category Cf, as of Unicode 16), which a terminal draws
/// as nothing or uses to reorder the text around them, and the line and paragraph separators,
/// which could break a line of ours in two. Default-ignorable characters of other categories
/// (variation selectors, the combining grapheme joiner, Hangul fillers) are left alone: they
/// belong to the character before them or are letters.
const INVISIBLE: &[(char, char)] = &[
    ('\u{ad}', '\u{ad}'),       // soft hyphen
    ('\u{600}', '\u{605}'),     // Arabic number signs (prepended marks)
    ('\u{61c}', '\u{61c}'),     // Arabic letter mark (a bidi mark)
    ('\u{6dd}', '\u{6dd}'),     // Arabic end of ayah
    ('\u{70f}', '\u{70f}'),     // Syriac abbreviation mark
    ('\u{890}', '\u{891}'),     // Arabic pound and piastre marks above
    ('\u{8e2}', '\u{8e2}'),     // Arabic disputed end of ayah
    ('\u{180e}', '\u{180e}'),   // Mongolian vowel separator
    ('\u{200b}', '\u{200f}'),   // zero width space, non-joiner, joiner; LRM, RLM
    ('\u{2028}', '\u{2029}'),   // line and paragraph separators (not Cf: Zl, Zp)
    ('\u{202a}', '\u{202e}'),   // bidi embeddings and overrides, PDF
    ('\u{2060}', '\u{2064}'),   // word joiner, invisible operators
    ('\u{2066}', '\u{206f}'),   // bidi isolates, PDI, deprecated format characters
    ('\u{feff}', '\u{feff}'),   // zero width no-break space (byte order mark)
    ('\u{fff9}', '\u{fffb}'),   // interlinear annotation
    ('\u{110bd}', '\u{110bd}'), // Kaithi number sign
    ('\u{110cd}', '\u{110cd}'), // Kaithi number sign above
    ('\u{13430}', '\u{1343f}'), // Egyptian hieroglyph format controls
    ('\u{1bca0}', '\u{1bca3}'), // shorthand format controls
    ('\u{1d173}', '\u{1d17a}'), // musical symbol beams and phrases
    ('\u{e0001}', '\u{e0001}'), // language tag
    ('\u{e0020}', '\u{e007f}'), // tag characters (they can carry hidden ASCII)
];

/// The cells `text` takes on a terminal: 2 for a CJK character or an emoji, 0 for a combining
/// mark.
pub fn width(text: &str) -> usize {
    UnicodeWidthStr::width(text)
}

/// The longest start of `text` that fits in `cells`. A wide character that would straddle the
/// edge is left out whole; combining marks stay with the character they modify.
pub fn truncate(text: &str, cells: usize) -> &str {
    if width(text) <= cells {
        return text;
    }
    // Widths of whole prefixes, not sums of chars: an emoji sequence is measured as one.
    // Names are short, and this runs only when they are cut.
    let mut end = 0;
    for (i, c) in text.char_indices() {
        let next = i + c.len_utf8();
        if width(&text[..next]) > cells {
            break;
        }
        end = next;
    }
    &text[..end]
}

/// `text` filled with spaces to `cells`, a left-aligned column as `{:<N}` makes one but counted
/// in cells; longer text is kept whole, as `format!` keeps it (cut it first with [`truncate`]).
pub fn pad(text: &str, cells: usize) -> String {
    let mut out = String::with_capacity(text.len() + cells);
    out.push_str(text);
    out.extend(std::iter::repeat_n(' ', cells.saturating_sub(width(text))));
    out
}

/// `text` safe to write to a terminal: every invisible or reordering character (see
/// `INVISIBLE`) written as `\u{202e}`, tabs expanded as `tabs` says. Borrowed when there is
/// nothing to change, the common case.
pub fn shown(text: &str, tabs: Tabs) -> Cow<'_, str> {
    if plain(text, tabs) {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(escape(text, tabs))
    }
}

/// [`shown`] for text already owned, reusing it when nothing changes.
pub fn shown_owned(text: String, tabs: Tabs) -> String {
    if plain(text.as_str(), tabs) {
        text
    } else {
        escape(&text, tabs)
    }
}

/// Everything steptop writes for a person to read (a report, a comparison, a probe's readings,
/// the cluster's table, headless lines, an error) as the terminal must get it: every control
/// character but newline and tab, and every invisible or reordering character (`INVISIBLE`),
/// written as `\u{1b}`. Whatever a label, a file name or a log line holds, no escape sequence
/// of it reaches the terminal: not a title change (`ESC ] 0 ;`), not a cleared screen
/// (`ESC [ 2 J`), not text reversed by U+202E. The one function every text output goes
/// through whole, where it is written; JSON goes through [`json_terminal`].
pub fn terminal(text: &str) -> Cow<'_, str> {
    shown(text, Tabs::Kept)
}

/// JSON made safe for a terminal with every value kept: each character [`terminal`] would
/// escape is written as a JSON escape (`\u001b`, `\u202e`; a surrogate pair past U+FFFF).
/// Outside its strings JSON holds only ASCII punctuation, digits, letters and white space, so
/// such a character can only be inside a string, where the escape decodes to it.
pub fn json_terminal(json: &str) -> Cow<'_, str> {
    if plain(json, Tabs::Kept) {
        return Cow::Borrowed(json);
    }
    let mut out = String::with_capacity(json.len() + 16);
    for c in json.chars() {
        if c != '\n' && c != '\t' && hidden(c) {
            let mut units = [0u16; 2];
            for u in c.encode_utf16(&mut units) {
                let _ = write!(out, "\\u{u:04x}");
            }
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Text with steptop's own colours: plain runs and runs painted with an SGR code, built like a
/// `String` (`write!`). [`Painted::for_terminal`] puts each run through [`terminal`] before it
/// adds the colours, so the only escape sequences written are steptop's own colours.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Painted {
    runs: Vec<(String, Option<String>)>,
}

impl Painted {
    /// `text` in the colour of `sgr` (`32`, `38;5;208`), or plain without one.
    pub fn paint(&mut self, text: &str, sgr: Option<&str>) {
        match sgr {
            Some(code) => self.runs.push((text.to_string(), Some(code.to_string()))),
            None => {
                let _ = self.write_str(text);
            }
        }
    }

    /// The text without its colours.
    pub fn plain(&self) -> String {
        self.runs.iter().map(|(t, _)| t.as_str()).collect()
    }

    /// The text as the terminal gets it: each run through [`terminal`], then coloured.
    pub fn for_terminal(&self) -> String {
        let mut out = String::new();
        for (text, sgr) in &self.runs {
            match sgr {
                Some(code) => {
                    let _ = write!(out, "\x1b[{code}m{}\x1b[0m", terminal(text));
                }
                None => out.push_str(&terminal(text)),
            }
        }
        out
    }
}

impl Write for Painted {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        match self.runs.last_mut() {
            Some((text, None)) => text.push_str(s),
            _ => self.runs.push((s.to_string(), None)),
        }
        Ok(())
    }
}

/// True when `text` has nothing [`shown`] would change. Every character it escapes is outside
/// ASCII but for tab and the other controls, so ASCII text is checked byte by byte.
fn plain(text: &str, tabs: Tabs) -> bool {
    let tab_kept = tabs == Tabs::Kept;
    if text.is_ascii() {
        return !text
            .bytes()
            .any(|b| b.is_ascii_control() && b != b'\n' && !(tab_kept && b == b'\t'));
    }
    !text
        .chars()
        .any(|c| if c == '\t' { !tab_kept } else { hidden(c) })
}

/// A character written as its code point. Control characters other than tab and newline
/// never come from a log (clean.rs strips them); one that came another way (a file's name)
/// is shown the same way rather than sent to the terminal.
fn hidden(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || INVISIBLE.iter().any(|&(lo, hi)| (lo..=hi).contains(&c))
}

fn escape(text: &str, tabs: Tabs) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    // Where the current line starts in `out`, for tab stops.
    let mut line = 0;
    for c in text.chars() {
        match c {
            '\t' => {
                let n = match tabs {
                    Tabs::Stops => 8 - width(&out[line..]) % 8,
                    Tabs::Space => 1,
                    Tabs::Kept => {
                        out.push('\t');
                        continue;
                    }
                };
                out.extend(std::iter::repeat_n(' ', n));
            }
            '\n' => {
                out.push(c);
                line = out.len();
            }
            c if hidden(c) => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widths_count_cells() {
        assert_eq!(width("VRT Stage8"), 10);
        assert_eq!(width("前向传播总耗时"), 14);
        assert_eq!(width("VRT处理"), 7);
        assert_eq!(width("🔥"), 2);
        // e + combining acute accent: one cell.
        assert_eq!(width("e\u{301}"), 1);
        assert_eq!(width(""), 0);
    }

    #[test]
    fn padding_fills_to_the_cell_and_never_splits_a_wide_char() {
        assert_eq!(pad("VRT处理", 10), "VRT处理   ");
        assert_eq!(width(&pad("前向传播总耗时", 20)), 20);
        assert_eq!(pad("前向传播总耗时", 4), "前向传播总耗时");
        // 3 cells of room for two 2-cell characters: the second is left out whole.
        assert_eq!(truncate("处理", 3), "处");
        assert_eq!(pad(truncate("处理", 3), 3), "处 ");
        assert_eq!(truncate("a🔥b", 2), "a");
        assert_eq!(truncate("a🔥b", 3), "a🔥");
        // The accent stays with its letter.
        assert_eq!(truncate("ae\u{301}x", 2), "ae\u{301}");
        assert_eq!(truncate("abc", 0), "");
        for cells in 0..24 {
            let p = pad(truncate("前向 传播 VRT处理 🔥", cells), cells);
            assert_eq!(width(&p), cells, "{p:?}");
        }
    }

    #[test]
    fn every_invisible_character_is_escaped() {
        let listed = [
            '\u{202a}',
            '\u{202b}',
            '\u{202c}',
            '\u{202d}',
            '\u{202e}',
            '\u{2066}',
            '\u{2067}',
            '\u{2068}',
            '\u{2069}',
            '\u{200e}',
            '\u{200f}',
            '\u{61c}',
            '\u{200b}',
            '\u{200c}',
            '\u{200d}',
            '\u{2060}',
            '\u{2061}',
            '\u{2062}',
            '\u{2063}',
            '\u{2064}',
            '\u{feff}',
            '\u{ad}',
            '\u{180e}',
            '\u{e0041}',
            '\u{2028}',
        ];
        for c in listed {
            let text = format!("Stage{c}8");
            let want = format!("Stage\\u{{{:x}}}8", u32::from(c));
            assert_eq!(shown(&text, Tabs::Space), want);
            assert_eq!(shown_owned(text, Tabs::Stops), want);
        }
        assert_eq!(
            shown("VRT Stage\u{202e}8\u{200b}", Tabs::Space),
            "VRT Stage\\u{202e}8\\u{200b}"
        );
        // Controls that did not go through clean.rs are shown, not sent.
        assert_eq!(shown("a\u{1b}[2Jb", Tabs::Space), "a\\u{1b}[2Jb");
        assert_eq!(shown("x\u{9b}y", Tabs::Space), "x\\u{9b}y");
    }

    #[test]
    fn visible_text_is_borrowed_unchanged() {
        for text in [
            "step 1 loss=2.5",
            "前向传播总耗时 : 1805.28ms",
            "é 🔥 ❤\u{fe0f}",
            "a\nb",
        ] {
            assert!(matches!(shown(text, Tabs::Stops), Cow::Borrowed(t) if t == text));
        }
    }

    #[test]
    fn tabs_go_to_the_next_stop_or_become_one_space() {
        assert_eq!(shown("a\tb", Tabs::Stops), "a       b");
        assert_eq!(shown("12345678\tb", Tabs::Stops), "12345678        b");
        // Stops count cells: a CJK character takes two.
        assert_eq!(shown("处理\tms", Tabs::Stops), "处理    ms");
        // An escape is as wide as its text.
        assert_eq!(shown("\u{200b}\tx", Tabs::Stops), "\\u{200b}        x");
        assert_eq!(shown("x\ty\n\tz", Tabs::Stops), "x       y\n        z");
        assert_eq!(shown("a\t\tb", Tabs::Space), "a  b");
    }
}
