//! The logged forward stages, hottest first: recent p50, share of the forward time, and the
//! trend against the run's own early blocks.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::Line;
use ratatui::widgets::Paragraph;

use super::{Pane, View};
use crate::common::display;
use crate::common::units::ms;
use crate::model::baseline::change;
use crate::model::breakdown::Over;
use crate::settings::theme::Role;
use crate::sink::ui::widgets::fit;

/// A trend this far from 1.0 is shown as a rise or fall.
const TREND_SHOWN: f64 = 0.1;

pub fn render(f: &mut Frame, area: Rect, v: &View) {
    let m = &v.mon.model;
    let n = m.cfg.window_steps;
    let forward = m.forward_ms(Over::Recent(n));
    let extra = forward
        .map(|fw| format!("forward {}", ms(fw)))
        .unwrap_or_default();
    let block = v.block(Pane::Stages, extra);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let hottest = m.stages.hottest();
    if hottest.is_empty() {
        let msg = "no stage timings in the log (a per-stage timing block fills this)";
        f.render_widget(Paragraph::new(v.span(msg, Role::Muted)), inner);
        return;
    }
    let width = inner.width as usize;
    // With a baseline and room: its mean of each stage and the change, before the trend.
    // `278 -46%`: the baseline's mean in whole ms, then the change.
    let base = v.mon.baseline.as_ref().filter(|_| width >= 36);
    let base_w = if base.is_some() { 11 } else { 0 };
    // In a narrow pane the baseline takes the trend's place.
    let trend_shown = base.is_none() || width >= 50;
    let trend_w = if trend_shown { 8 } else { 0 };
    let name_w = width.saturating_sub(18 + trend_w + base_w).max(6);
    let mut head = format!("{:<name_w$} {:>10} {:>6}", "stage", "p50", "share");
    if base.is_some() {
        head.push_str(&format!(" {:>10}", "baseline"));
    }
    if trend_shown {
        head.push_str(&format!(" {:>7}", "trend"));
    }
    let mut lines = vec![Line::from(v.span(head, Role::Muted))];
    for s in hottest.iter().take(inner.height.saturating_sub(1) as usize) {
        let Some(p50) = s
            .recent
            .last_n(n)
            .map(|x| x.p50)
            .or_else(|| s.ms.quantile(0.5))
        else {
            continue;
        };
        let share = forward
            .filter(|fw| *fw > 0.0)
            .and_then(|fw| Some(s.mean(Over::Recent(n))? / fw));
        let share = share.map_or("-".into(), |x| format!("{:.0}%", x * 100.0));
        let (trend, role) = match s.trend(n) {
            Some(t) if t >= 1.0 + TREND_SHOWN => (format!("↑{t:.2}x"), Role::Warn),
            Some(t) if t <= 1.0 - TREND_SHOWN => (format!("↓{t:.2}x"), Role::Ok),
            Some(_) => ("=".into(), Role::Muted),
            None => ("".into(), Role::Muted),
        };
        let indent = "  ".repeat(usize::from(s.depth));
        // Padded by cells: a CJK name takes two per character.
        let name = display::pad(&fit(&format!("{indent}{}", s.name), name_w), name_w);
        let mut row = vec![v.span(format!("{name} {:>10} {share:>6} ", ms(p50)), Role::Text)];
        if let Some(b) = base {
            let (text, role) = match b.stage(&s.name) {
                Some(then) if then > 0.0 => {
                    let r = p50 / then;
                    let role = if r >= 1.0 + TREND_SHOWN {
                        Role::Warn
                    } else if r <= 1.0 - TREND_SHOWN {
                        Role::Ok
                    } else {
                        Role::Muted
                    };
                    (format!("{then:.0} {}", change(r)), role)
                }
                _ => ("-".into(), Role::Muted),
            };
            row.push(v.span(format!("{text:>10} "), role));
        }
        if trend_shown {
            row.push(v.span(format!("{trend:>7}"), role));
        }
        lines.push(Line::from(row));
    }
    f.render_widget(Paragraph::new(lines), inner);
}
