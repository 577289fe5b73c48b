//! The help overlay, drawn from the keymap so it cannot fall out of date.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::{Block, Clear, Paragraph};

use super::View;
use super::details::centered;
use crate::theme::Role;
use crate::ui::action::KEYMAP;

pub fn render(f: &mut Frame, area: Rect, v: &View) {
    let popup = centered(area, 60, KEYMAP.len() as u16 + 4);
    f.render_widget(Clear, popup);
    let block = Block::bordered()
        .border_style(v.style(Role::BorderFocused))
        .title(v.span(" keys (Esc closes) ", Role::Title));
    let inner = block.inner(popup);
    f.render_widget(block, popup);
    let mut lines: Vec<Line> = KEYMAP
        .iter()
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
