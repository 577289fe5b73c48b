//! The trainer's Python code, from its sampled stacks: where the main threads are (running the
//! user's code, waiting for a batch, in the forward...) and the functions that hold them, then
//! the same for the DataLoader workers. A function whose thread waits in a call it made (a
//! GPU sync, a read) is marked as waiting.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Paragraph, Wrap};

use super::{Pane, View};
use crate::common::display;
use crate::model::stacks::{Role, RoleShares};
use crate::settings::theme::Role as Style;

pub fn render(f: &mut Frame, area: Rect, v: &View) {
    let stacks = &v.mon.model.stacks;
    let window = v.mon.diagnosis.config().windows().seconds;
    let main = stacks.shares(Role::Main, window);
    let workers = stacks.shares(Role::Worker, window);
    let extra = if main.samples + workers.samples > 0 {
        format!(
            "{} samples, last {window:.0} s",
            main.samples + workers.samples
        )
    } else {
        String::new()
    };
    let block = v.block(Pane::Code, extra);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let mut lines = Vec::new();
    for (who, r) in [("main", &main), ("workers", &workers)] {
        role_lines(v, who, r, usize::from(inner.width), &mut lines);
    }
    if lines.is_empty() {
        let why = stacks
            .refusals
            .values()
            .next()
            .map(String::as_str)
            .or(v.ui.probes_off)
            .unwrap_or("no Python stacks yet: they come once the trainer is found");
        lines.push(Line::from(v.span(why, Style::Muted)));
    }
    for note in stacks.notes.values() {
        lines.push(Line::from(v.span(note.as_str(), Style::Muted)));
    }
    f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
}

/// One role: where it was (the two largest places), then its top functions.
fn role_lines<'a>(v: &View, who: &str, r: &RoleShares, width: usize, lines: &mut Vec<Line<'a>>) {
    if r.samples == 0 {
        return;
    }
    let places: Vec<String> = r
        .places
        .iter()
        .take(2)
        .map(|(p, s)| format!("{} {:.0}%", p.short(), s * 100.0))
        .collect();
    lines.push(Line::from(vec![
        v.span(format!("{who:<8}"), Style::Title),
        v.span(places.join(", "), Style::Text),
    ]));
    for fun in r.functions.iter().take(3) {
        // Mostly waiting in a call it made (a sync, a read): not its own Python's time.
        let waiting = fun.waiting * 2 > fun.samples;
        let mut spans = vec![
            v.span(format!("{:>5.0}% ", fun.share * 100.0), Style::Text),
            v.span(
                fun.function.clone(),
                if waiting { Style::Muted } else { Style::Warn },
            ),
        ];
        let at = format!(" {}:{}", fun.file, fun.line);
        let mark = if waiting { " (waiting)" } else { "" };
        let used: usize = spans.iter().map(|s| s.width()).sum();
        if used + display::width(&at) + mark.len() <= width {
            spans.push(v.span(at, Style::Muted));
        }
        spans.push(v.span(mark, Style::Muted));
        lines.push(Line::from(spans));
    }
}
