//! One bar splitting the recent step into data wait, the logged forward stages, and the time
//! no log line covers (backward and optimizer), with milliseconds and shares; p50 and p95 in
//! the title.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::{Pane, View};
use crate::common::units::ms;
use crate::model::Model;
use crate::model::breakdown::Over;
use crate::settings::theme::Role;
use crate::sink::ui::widgets::fit;

/// One part of the step.
pub struct Segment {
    pub name: String,
    pub ms: f64,
    pub role: Role,
    pub fill: char,
}

/// The recent step's parts, in step order: Model::step_breakdown over the steps the
/// diagnosis judges, so that the bar and the verdict speak of the same steps. A log with stage
/// timings but no step time (a timing log on its own) gives the forward's pieces alone.
pub fn segments(m: &Model, steps: usize) -> Vec<Segment> {
    let b = m.step_breakdown(Over::Recent(steps));
    let mut out = Vec::new();
    if let Some(d) = b.data_ms {
        out.push(Segment {
            name: "data".into(),
            ms: d,
            role: Role::Data,
            fill: '█',
        });
    }
    for (i, p) in b.pieces.iter().enumerate() {
        let (role, fill) = if i % 2 == 0 {
            (Role::Forward, '▓')
        } else {
            (Role::ChartAlt, '▒')
        };
        out.push(Segment {
            name: p.name.to_string(),
            ms: p.ms,
            role,
            fill,
        });
    }
    // The forward's own time beyond its logged pieces (the glue between them, or a forward
    // logged as one line) is part of it too.
    if let Some(fwd) = b.forward_ms {
        let pieces: f64 = b.pieces.iter().map(|p| p.ms).sum();
        let rest = fwd - pieces;
        if b.pieces.is_empty() || rest > 0.02 * fwd {
            out.push(Segment {
                name: if b.pieces.is_empty() {
                    "forward"
                } else {
                    "forward (rest)"
                }
                .into(),
                ms: rest.max(0.0),
                role: Role::Forward,
                fill: '▓',
            });
        }
    }
    for p in &b.parts {
        out.push(Segment {
            name: p.name.to_string(),
            ms: p.ms,
            role: Role::ChartAlt,
            fill: '▒',
        });
    }
    if b.step_ms.is_none() {
        return out;
    }
    match b.unlogged_ms {
        Some(u) => out.push(Segment {
            name: "unlogged (backward, optimizer)".into(),
            ms: u,
            role: Role::Unlogged,
            fill: '░',
        }),
        None => {
            let logged: f64 = out.iter().map(|s| s.ms).sum();
            out.push(Segment {
                name: "compute (not itemised)".into(),
                ms: (b.step_ms.unwrap_or(0.0) - logged).max(0.0),
                role: Role::Forward,
                fill: '▓',
            });
        }
    }
    out
}

pub fn render(f: &mut Frame, area: Rect, v: &View) {
    let m = &v.mon.model;
    let n = v.mon.diagnosis.config().window_steps;
    let extra = match m.merged.step_time_ms.recent(n) {
        Some(s) => format!("{} steps · p50 {} · p95 {}", s.n, ms(s.p50), ms(s.p95)),
        None if !m.stages.by_name.is_empty() => "forward stages only: no step time logged".into(),
        None => String::new(),
    };
    let block = v.block(Pane::Breakdown, extra);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let segs = segments(m, n);
    let total: f64 = segs.iter().map(|s| s.ms).sum();
    // Shares of the mean step, as the report and the rules give them; of the parts' sum when
    // no step time is logged.
    let whole = m
        .step_ms(Over::Recent(n))
        .filter(|s| *s > 0.0)
        .unwrap_or(total);
    if segs.is_empty() || total <= 0.0 {
        let msg = "no step or stage times yet (the log has not said how long a step takes)";
        f.render_widget(Paragraph::new(v.span(msg, Role::Muted)), inner);
        return;
    }
    let width = inner.width as usize;
    let mut rows = (inner.height as usize).saturating_sub(1);
    let baseline = baseline_segments(v).filter(|_| rows >= 3);
    let mut lines = Vec::new();
    match baseline {
        // `--baseline`: its step as a thin bar under this one, both on one scale (the longer
        // step fills the width less its label), so a shorter bar is a faster step.
        Some((base, base_total)) => {
            let label = format!(" baseline {}", ms(base_total));
            let room = width.saturating_sub(label.len()).max(2);
            let scale = total.max(base_total);
            let cells = |ms: f64| ((ms / scale) * room as f64).round().max(1.0) as usize;
            lines.push(Line::from(bar(v, &segs, total, cells(total))));
            let mut spans = bar(v, &base, base_total, cells(base_total));
            spans.push(v.span(label, Role::Muted));
            lines.push(Line::from(spans));
            rows -= 1;
        }
        None => lines.push(Line::from(bar(v, &segs, total, width))),
    }
    let legend = |s: &Segment| format!("{} {} {:.0}%", s.name, ms(s.ms), 100.0 * s.ms / whole);
    if rows >= 3 || rows >= segs.len() {
        // One row per part; when they do not all fit, the costliest ones.
        let mut shown: Vec<&Segment> = segs.iter().collect();
        if shown.len() > rows {
            shown.sort_by(|a, b| b.ms.total_cmp(&a.ms));
            shown.truncate(rows);
        }
        for s in shown {
            lines.push(Line::from(vec![
                v.span(s.fill.to_string(), s.role),
                v.span(format!(" {}", fit(&legend(s), width - 2)), Role::Text),
            ]));
        }
    } else {
        let mut spans = Vec::new();
        for (i, s) in segs.iter().enumerate() {
            if i > 0 {
                spans.push(v.span(" · ", Role::Muted));
            }
            spans.push(v.span(s.fill.to_string(), s.role));
            spans.push(v.span(format!(" {}", legend(s)), Role::Text));
        }
        lines.push(Line::from(spans));
    }
    f.render_widget(Paragraph::new(lines), inner);
}

/// The baseline's step in the live bar's parts, and its total; what its logs did not itemise
/// is compute, as in the live bar.
fn baseline_segments(v: &View) -> Option<(Vec<Segment>, f64)> {
    let b = v.mon.baseline.as_ref().filter(|b| !b.parts.is_empty())?;
    let mut base: Vec<Segment> = b
        .parts
        .iter()
        .map(|(role, ms)| Segment {
            name: (*role).to_string(),
            ms: *ms,
            role: match *role {
                "data" => Role::Data,
                "unlogged" => Role::Unlogged,
                "forward" => Role::Forward,
                _ => Role::ChartAlt,
            },
            fill: '▁',
        })
        .collect();
    let logged: f64 = base.iter().map(|s| s.ms).sum();
    if let Some(rest) = b.mean_step_ms.map(|s| s - logged).filter(|r| *r > 0.0) {
        base.push(Segment {
            name: "compute".into(),
            ms: rest,
            role: Role::Forward,
            fill: '▁',
        });
    }
    let total: f64 = base.iter().map(|s| s.ms).sum();
    (total > 0.0).then_some((base, total))
}

/// The bar: each part as wide as its share, at least one cell when it is there at all.
fn bar<'a>(v: &View, segs: &[Segment], total: f64, width: usize) -> Vec<Span<'a>> {
    let mut cells: Vec<usize> = segs
        .iter()
        .map(|s| ((s.ms / total) * width as f64).round().max(1.0) as usize)
        .collect();
    // Rounding may overshoot or fall short: the widest part absorbs the difference.
    let sum: usize = cells.iter().sum();
    if let Some(widest) = (0..cells.len()).max_by_key(|i| cells[*i]) {
        cells[widest] = (cells[widest] + width).saturating_sub(sum).max(1);
    }
    segs.iter()
        .zip(cells)
        .map(|(s, n)| v.span(s.fill.to_string().repeat(n), s.role))
        .collect()
}
