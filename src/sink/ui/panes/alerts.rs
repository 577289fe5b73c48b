//! The verdict in one line coloured by its severity, then the other active alerts with their
//! evidence and first action, then the recently cleared ones, dimmed.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Paragraph;

use super::{Pane, View};
use crate::diagnose::{Alert, Diagnosis};
use crate::settings::theme::Role;
use crate::sink::ui::widgets::{fit, fit_words, severity_role};

/// Cleared alerts listed after the active ones.
const CLEARED_SHOWN: usize = 3;

/// The alerts as the pane lists them: the verdict, the other active alerts (most severe
/// first), then the latest cleared ones (newest first). The details view indexes this list.
pub fn listed(d: &Diagnosis) -> Vec<&Alert> {
    let verdict = d.verdict();
    let mut active: Vec<&Alert> = d
        .active()
        .filter(|a| !verdict.is_some_and(|v| std::ptr::eq(*a, v)))
        .collect();
    active.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then(a.first_time.total_cmp(&b.first_time))
    });
    let cleared = d
        .alerts
        .iter()
        .rev()
        .filter(|a| !a.active())
        .take(CLEARED_SHOWN);
    verdict.into_iter().chain(active).chain(cleared).collect()
}

/// Rows the pane's text takes: two per active alert, one per cleared one, and one for the
/// all-clear line when nothing is active.
pub fn rows(d: &Diagnosis) -> usize {
    let alerts = listed(d);
    let active = alerts.iter().filter(|a| a.active()).count();
    usize::from(active == 0) + 2 * active + (alerts.len() - active)
}

pub fn render(f: &mut Frame, area: Rect, v: &View) {
    let alerts = listed(&v.mon.diagnosis);
    let active = alerts.iter().filter(|a| a.active()).count();
    let extra = match active {
        0 => String::new(),
        1 => "1 active".into(),
        n => format!("{n} active"),
    };
    let block = v.block(Pane::Alerts, extra);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let width = inner.width as usize;
    let selected =
        (v.ui.focus == Pane::Alerts).then_some(v.ui.selected.min(alerts.len().max(1) - 1));
    let mut lines = Vec::new();
    // Where each alert's first row is, to keep the selected one in sight.
    let mut starts = Vec::with_capacity(alerts.len());
    if alerts.first().is_none_or(|a| !a.active()) {
        lines.push(Line::from(if v.mon.model.merged.records == 0 {
            v.span("waiting for steps to judge", Role::Muted)
        } else {
            v.span("✓ no bottleneck found: nothing to fix now", Role::Ok)
        }));
    }
    for (i, a) in alerts.iter().enumerate() {
        starts.push(lines.len());
        let mark = if selected == Some(i) { "▶" } else { " " };
        if !a.active() {
            let at = a
                .cleared_step
                .map(|s| format!(" at step {s}"))
                .unwrap_or_default();
            let text = format!("{mark}cleared{at}: {}", a.title);
            lines.push(Line::from(v.span(fit(&text, width), Role::Muted)));
            continue;
        }
        let role = severity_role(a.severity);
        let head = if i == 0 { "●" } else { "•" };
        let title = format!(
            "{mark}{head} {} {}",
            a.severity.name().to_uppercase(),
            a.title
        );
        lines.push(Line::from(v.span(fit(&title, width), role)));
        let mut detail = String::from("   ");
        if let Some(e) = a.evidence.first() {
            detail.push_str(e);
        }
        if let Some(act) = a.actions.first() {
            detail.push_str(" → ");
            detail.push_str(act);
        }
        lines.push(Line::from(v.span(fit_words(&detail, width), Role::Text)));
    }
    let room = inner.height as usize;
    // The selected alert stays in sight when the list is longer than the pane: its title
    // always, its evidence when there is room.
    let skip = match selected.and_then(|s| starts.get(s)) {
        Some(&at) => (at + 2).saturating_sub(room).min(at),
        None => 0,
    };
    let shown: Vec<Line> = lines.into_iter().skip(skip).take(room).collect();
    f.render_widget(Paragraph::new(shown), inner);
}
