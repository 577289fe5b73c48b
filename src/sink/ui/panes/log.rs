//! The last lines of the followed logs: events marked, the figures of parsed lines
//! highlighted, optionally filtered (`/`) and scrolled back (↑, PgUp). The text was cleaned of
//! every control and escape sequence when it arrived (`loglines`); here tabs go to the next
//! stop of 8, as the line is drawn from its first column, and invisible characters are shown
//! escaped (`display::shown`).

use std::borrow::Cow;
use std::ops::Range;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Paragraph;

use super::{Pane, View};
use crate::common::display::{self, Tabs};
use crate::model::log_lines::{LineKind, LogLine};
use crate::settings::theme::Role;

pub fn render(f: &mut Frame, area: Rect, v: &View) {
    let ui = v.ui;
    let needle = ui.filter.to_lowercase();
    let mut extra = String::new();
    if !ui.filter.is_empty() || ui.editing {
        extra = format!("filter: {}{}", ui.filter, if ui.editing { "▏" } else { "" });
    }
    if ui.log_back > 0 {
        extra.push_str(&format!(" {} lines back", ui.log_back));
    }
    let block = v.block(Pane::Log, extra);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let several = v.mon.sources.len() > 1;
    let matching: Vec<&LogLine> = v
        .mon
        .model
        .log
        .lines
        .iter()
        .filter(|l| needle.is_empty() || l.text.to_lowercase().contains(&needle))
        .collect();
    if matching.is_empty() {
        let msg = if needle.is_empty() {
            "no lines yet"
        } else {
            "no line matches"
        };
        f.render_widget(Paragraph::new(v.span(msg, Role::Muted)), inner);
        return;
    }
    let rows = inner.height as usize;
    let end = matching
        .len()
        .saturating_sub(ui.log_back.min(matching.len().saturating_sub(1)));
    let start = if needle.is_empty() && ui.log_back == 0 {
        following(v.mon.model.log.kept, matching.len(), rows)
    } else {
        end.saturating_sub(rows)
    };
    let lines: Vec<Line> = matching[start..end]
        .iter()
        .map(|l| line(v, l, several))
        .collect();
    f.render_widget(Paragraph::new(lines), inner);
}

/// The first of `len` lines to show in `rows` rows when following the newest of `kept` lines
/// a page at a time: new lines are added below the last, and once the pane is full its lines
/// move up by a third of its height at once. A pane that moved a row at every new line
/// rewrote every row each time: on a real Megatron log, one step a second, most of what the
/// live view wrote to the terminal.
fn following(kept: u64, len: usize, rows: usize) -> usize {
    let page = (rows / 3).max(1) as u64;
    let first = kept.saturating_sub(len as u64);
    let top = kept.saturating_sub(rows as u64).div_ceil(page) * page;
    usize::try_from(top.max(first) - first).map_or(len, |s| s.min(len))
}

fn line<'a>(v: &View, l: &'a LogLine, several: bool) -> Line<'a> {
    let (mark, role) = match l.kind {
        LineKind::Event => ("! ", Role::Crit),
        LineKind::Parsed => ("· ", Role::Info),
        LineKind::Plain => ("  ", Role::Muted),
    };
    let mut spans = vec![v.span(mark, role)];
    if several {
        spans.push(v.span(format!("{} ", l.source), Role::Muted));
    }
    let text = display::shown(&l.text, Tabs::Stops);
    match l.kind {
        LineKind::Event => spans.push(v.span(text, Role::Crit)),
        LineKind::Plain => spans.push(v.span(text, Role::Text)),
        LineKind::Parsed => {
            for (range, role) in figures(&text) {
                // Borrowed from the line when showing it changed nothing, the common case.
                let piece = match &text {
                    Cow::Borrowed(t) => Cow::Borrowed(&t[range]),
                    Cow::Owned(t) => Cow::Owned(t[range].to_string()),
                };
                spans.push(v.span(piece, role));
            }
        }
    }
    Line::from(spans)
}

/// A parsed line's runs, with its numbers highlighted: the figures steptop read from it.
fn figures(text: &str) -> Vec<(Range<usize>, Role)> {
    let mut out = Vec::new();
    let mut run_start = 0;
    let mut in_num = false;
    for (i, c) in text.char_indices() {
        let numeric = c.is_ascii_digit() || (in_num && matches!(c, '.' | 'e' | '-' | '+'));
        if numeric != in_num {
            if i > run_start {
                let role = if in_num { Role::Info } else { Role::Text };
                out.push((run_start..i, role));
            }
            run_start = i;
            in_num = numeric;
        }
    }
    let role = if in_num { Role::Info } else { Role::Text };
    out.push((run_start..text.len(), role));
    out
}

#[cfg(test)]
mod tests {
    use super::following;

    #[test]
    fn a_followed_pane_moves_a_third_of_its_height_once_full() {
        // 18 rows, 500 lines kept: pages of 6.
        let shown = |kept: u64| {
            let len = kept.min(500) as usize;
            let first = kept - len as u64;
            first + following(kept, len, 18) as u64..kept
        };
        assert_eq!(shown(12), 0..12, "not full yet: every line");
        assert_eq!(shown(198), 180..198, "full");
        // A new line moves the lines up by six, and the next five are added below them.
        assert_eq!(shown(199), 186..199);
        assert_eq!(shown(204), 186..204);
        assert_eq!(shown(205), 192..205);
        // Past the lines kept, the same.
        assert_eq!(shown(10_001), 9984..10_001);
    }
}
