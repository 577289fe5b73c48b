//! The help overlay, drawn from the keymap so it cannot fall out of date.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Paragraph;

use super::View;
use super::details::overlay;
use crate::settings::theme::Role;
use crate::sink::ui::action::bindings;

pub fn render(f: &mut Frame, area: Rect, v: &View) {
    let replay = v.ui.replay.is_some();
    let rows = bindings(replay).count() as u16;
    let inner = overlay(f, area, v.theme, (60, rows + 4), " keys (Esc closes) ");
    let mut lines: Vec<Line> = bindings(replay)
        .map(|b| {
            Line::from(vec![
                v.span(format!("{:>9}  ", b.label), Role::Info),
                v.span(b.help, Role::Text),
            ])
        })
        .collect();
    lines.push(Line::from(v.span(
        format!("theme: {} (t for the next)", v.theme.name),
        Role::Muted,
    )));
    f.render_widget(Paragraph::new(lines), inner);
}
