//! Small drawing helpers the panes share: time-bucketed columns, sparklines, bars. Columns are
//! anchored to absolute time, so a chart shifts only when a whole column of time has passed:
//! between shifts, only the newest column is redrawn, which keeps the bytes sent over ssh low.

use std::borrow::Cow;

use ratatui::text::Span;

use crate::common::display::{self, Tabs};
use crate::diagnose::Severity;
use crate::settings::theme::{Role, Theme};

/// Text in a role's style. Every view's text goes through here, so this is where log text is
/// shown (see `display::shown`): a stage name with a right-to-left override cannot reorder a
/// row.
pub fn styled<'s>(theme: &Theme, text: impl Into<Cow<'s, str>>, role: Role) -> Span<'s> {
    let text = match text.into() {
        Cow::Borrowed(t) => display::shown(t, Tabs::Space),
        Cow::Owned(t) => Cow::Owned(display::shown_owned(t, Tabs::Space)),
    };
    Span::styled(text, theme.style(role))
}

/// Seconds per column, picked from a ladder of round values so the grain changes rarely as a
/// run grows.
const LADDER: [f64; 16] = [
    1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0, 7200.0,
    14400.0, 43200.0,
];

/// The column width for `span` seconds over `width` columns.
pub fn column_seconds(span: f64, width: usize) -> f64 {
    let want = span / width.max(1) as f64;
    LADDER
        .iter()
        .copied()
        .find(|s| *s >= want)
        .unwrap_or(LADDER[LADDER.len() - 1])
}

/// The time the last of `width` columns of `col` seconds holds when the newest value is at
/// `end` and the chart moves a page at a time: the newest column fills the page to the right
/// (its columns ahead of it blank), and only once the page is full do the columns move, by a
/// quarter of the width. A chart that moved a column at every new one rewrote every cell of
/// it each time: on a real Megatron log, one step a second, a fifth of what the live view
/// wrote to the terminal.
pub fn paged_end(end: f64, col: f64, width: usize) -> f64 {
    let page = (width / 4).max(1) as f64;
    let last = (end / col).floor();
    let right = ((last / page).floor() + 1.0) * page - 1.0;
    (right + 0.5) * col
}

/// Means of timestamped values in `width` columns of `col` seconds, the last column holding
/// `end`; None for a column with no value. `points` are oldest first.
pub fn columns(
    points: impl Iterator<Item = (f64, f64)>,
    end: f64,
    col: f64,
    width: usize,
) -> Vec<Option<f64>> {
    let mut sums = vec![(0.0, 0u32); width];
    let last = (end / col).floor();
    for (t, v) in points {
        let back = last - (t / col).floor();
        if back < 0.0 || back >= width as f64 || !v.is_finite() {
            continue;
        }
        let slot = &mut sums[width - 1 - back as usize];
        slot.0 += v;
        slot.1 += 1;
    }
    sums.into_iter()
        .map(|(s, n)| (n > 0).then(|| s / f64::from(n)))
        .collect()
}

const EIGHTHS: [char; 9] = [' ', '▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// One row of block characters scaled to `max`; a gap stays blank, a tiny value shows as ▁.
pub fn sparkline(values: &[Option<f64>], max: f64) -> String {
    values
        .iter()
        .map(|v| match v {
            None => ' ',
            Some(v) if max > 0.0 => {
                let i = ((v / max).clamp(0.0, 1.0) * 8.0).round() as usize;
                EIGHTHS[i.max(1)]
            }
            Some(_) => EIGHTHS[1],
        })
        .collect()
}

/// The block character for the part of a column between `row` and `row + 1` (in cells from
/// the bottom) of a bar `height` cells tall.
pub fn column_cell(height: f64, row: usize) -> char {
    let fill = ((height - row as f64).clamp(0.0, 1.0) * 8.0).round() as usize;
    EIGHTHS[fill]
}

/// The role a severity is shown in.
pub fn severity_role(s: Severity) -> Role {
    match s {
        Severity::Crit => Role::Crit,
        Severity::Warn => Role::Warn,
        Severity::Info => Role::Info,
    }
}

/// Cuts text to `width` cells, marking the cut with an ellipsis. The text is shown (see
/// `display::shown`) first, so an escape is measured at the width it is drawn.
pub fn fit(text: &str, width: usize) -> String {
    let text = display::shown(text, Tabs::Space);
    if display::width(&text) <= width {
        return text.into_owned();
    }
    let mut s = display::truncate(&text, width.saturating_sub(1)).to_string();
    if width > 0 {
        s.push('…');
    }
    s
}

/// `fit`, cut between words where a word boundary is near the edge: advice cut mid-word
/// (`raise DataLoader num_worke…`) reads as a typo, one cut after a word as a pause.
pub fn fit_words(text: &str, width: usize) -> String {
    let fitted = fit(text, width);
    let Some(cut) = fitted.strip_suffix('…') else {
        return fitted;
    };
    // The cut is mid-word unless the next character of the text is a space.
    let next = text.get(cut.len()..).and_then(|rest| rest.chars().next());
    if next.is_none_or(char::is_whitespace) {
        return fitted;
    }
    match cut.rfind(' ') {
        Some(at) if display::width(&cut[..at]) * 3 >= width * 2 => {
            format!("{}…", cut[..at].trim_end())
        }
        _ => fitted,
    }
}

/// `4s`, `3m`, `2h`, `5d`: how long ago, coarsely, so the header does not change every second
/// once the moment is long past.
pub fn ago(seconds: f64) -> String {
    let s = seconds.max(0.0);
    if s < 60.0 {
        format!("{s:.0}s")
    } else if s < 3600.0 {
        format!("{:.0}m", (s / 60.0).floor())
    } else if s < 86_400.0 {
        format!("{:.0}h", (s / 3600.0).floor())
    } else {
        format!("{:.0}d", (s / 86_400.0).floor())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_anchored_to_absolute_time() {
        let pts = [
            (100.0, 1.0),
            (101.0, 3.0),
            (104.0, 5.0),
            (109.9, 7.0),
            (95.0, 9.0),
        ];
        let c = columns(pts.into_iter(), 109.9, 5.0, 3);
        assert_eq!(c, vec![Some(9.0), Some(3.0), Some(7.0)]);
        // A little later, within the same column: the older columns are unchanged.
        let c2 = columns(pts.into_iter(), 109.95, 5.0, 3);
        assert_eq!(c, c2);
    }

    #[test]
    fn a_paged_chart_moves_a_quarter_of_its_width_once_the_page_is_full() {
        let pts = |end: f64| (0..=(end as u64)).map(|t| (t as f64, t as f64));
        // Columns of 1 s, 8 wide: pages of 2.
        let at = |end: f64| columns(pts(end), paged_end(end, 1.0, 8), 1.0, 8);
        assert_eq!(
            at(10.0)[7],
            None,
            "the newest column, 10, is first in its page"
        );
        assert_eq!(at(10.0)[6], Some(10.0));
        assert_eq!(at(11.0)[7], Some(11.0), "the page is full");
        // Within a page, the columns before stay where they were.
        assert_eq!(at(10.0)[..7], at(11.0)[..7]);
        // The next page moves them by two.
        assert_eq!(at(12.0)[4], Some(10.0));
        assert_eq!(at(12.0)[6], Some(12.0));
    }

    #[test]
    fn advice_is_cut_between_words() {
        let text = "data_time 120.0 ms of a 400.0 ms step → raise DataLoader num_workers";
        assert_eq!(
            fit_words(text, 60),
            "data_time 120.0 ms of a 400.0 ms step → raise DataLoader…"
        );
        assert_eq!(fit_words(text, 200), text);
        // A last word too long to keep: cut in it rather than lose a third of the line.
        assert_eq!(fit_words("a verylongwordwithoutbreaks", 12), "a verylongw…");
    }

    #[test]
    fn the_grain_comes_from_the_ladder() {
        assert_eq!(column_seconds(100.0, 60), 2.0);
        assert_eq!(column_seconds(3600.0, 60), 60.0);
        assert_eq!(column_seconds(1e9, 60), 43200.0);
        assert_eq!(column_seconds(0.0, 0), 1.0);
    }

    #[test]
    fn sparklines_and_columns_scale() {
        assert_eq!(
            sparkline(&[None, Some(0.0), Some(5.0), Some(10.0)], 10.0),
            " ▁▄█"
        );
        assert_eq!(column_cell(2.5, 0), '█');
        assert_eq!(column_cell(2.5, 2), '▄');
        assert_eq!(column_cell(2.5, 3), ' ');
    }

    #[test]
    fn text_is_fitted_and_times_are_coarse() {
        assert_eq!(fit("abcdef", 4), "abc…");
        assert_eq!(fit("abc", 4), "abc");
        assert_eq!(fit("前向传播总耗时", 6), "前向…");
        assert_eq!(fit("VRT处理", 7), "VRT处理");
        assert_eq!(fit("a\u{202e}b", 20), "a\\u{202e}b");
        assert_eq!(ago(42.4), "42s");
        assert_eq!(ago(3599.0), "59m");
        assert_eq!(ago(7300.0), "2h");
    }
}
