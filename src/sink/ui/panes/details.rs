//! The alert details overlay (`a`): the rule, everything it saw, and every suggested action.

use ratatui::Frame;
use ratatui::layout::{Constraint, Flex, Layout, Rect};
use ratatui::text::Line;
use ratatui::widgets::{Block, Clear, Paragraph, Wrap};

use super::View;
use super::alerts::listed;
use crate::common::units::{duration, gain_words};
use crate::diagnose::rules::RULES;
use crate::settings::theme::{Role, Theme};
use crate::sink::ui::widgets::{severity_role, styled};

pub fn render(f: &mut Frame, area: Rect, v: &View) {
    let alerts = listed(&v.mon.diagnosis);
    let inner = overlay(
        f,
        area,
        v.theme,
        (76, 20),
        " alert details (↑↓ other alerts, Esc closes) ",
    );
    let Some(a) = alerts.get(v.ui.selected.min(alerts.len().saturating_sub(1))) else {
        f.render_widget(
            Paragraph::new(v.span("No alert has been raised.", Role::Muted)),
            inner,
        );
        return;
    };
    let mut lines = vec![Line::from(vec![
        v.span(
            format!("{} ", a.severity.name().to_uppercase()),
            severity_role(a.severity),
        ),
        v.span(a.title.clone(), Role::Title),
    ])];
    if let Some(rule) = RULES.iter().find(|r| r.id == a.rule) {
        lines.push(Line::from(
            v.span(format!("{}: {}", a.rule, rule.summary), Role::Muted),
        ));
    }
    let since = match (a.first_step, a.cleared_step, a.active()) {
        (Some(s), _, true) => format!("active since step {s}"),
        (Some(s), Some(c), false) => format!("raised at step {s}, cleared at step {c}"),
        (_, _, true) => "active".to_string(),
        (_, _, false) => format!(
            "cleared after {}",
            duration(a.cleared_time.unwrap_or(a.first_time) - a.first_time)
        ),
    };
    let gain = a
        .gain
        .filter(|g| *g > 0.0)
        .map(|g| format!("; {}", gain_words(g)))
        .unwrap_or_default();
    lines.push(Line::from(v.span(format!("{since}{gain}"), Role::Text)));
    lines.push(Line::from(v.span("Evidence", Role::Title)));
    for e in &a.evidence {
        lines.push(Line::from(v.span(format!("  {e}"), Role::Text)));
    }
    lines.push(Line::from(v.span("What to do", Role::Title)));
    for (i, act) in a.actions.iter().enumerate() {
        lines.push(Line::from(
            v.span(format!("  {}. {act}", i + 1), Role::Text),
        ));
    }
    f.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), inner);
}

/// Clears a framed box of at most `w` x `h` in the middle of `area` and returns its inside.
pub fn overlay(f: &mut Frame, area: Rect, theme: &Theme, (w, h): (u16, u16), title: &str) -> Rect {
    let popup = centered(area, w, h);
    f.render_widget(Clear, popup);
    let block = Block::bordered()
        .border_style(theme.style(Role::BorderFocused))
        .title(styled(theme, title.to_string(), Role::Title));
    let inner = block.inner(popup);
    f.render_widget(block, popup);
    inner
}

/// A rectangle of at most `w` x `h` in the middle of `area`.
pub fn centered(area: Rect, w: u16, h: u16) -> Rect {
    let [row] = Layout::vertical([Constraint::Length(h.min(area.height))])
        .flex(Flex::Center)
        .areas(area);
    let [cell] = Layout::horizontal([Constraint::Length(w.min(area.width))])
        .flex(Flex::Center)
        .areas(row);
    cell
}
