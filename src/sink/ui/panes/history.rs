//! Step time over the chosen window as columns, the data wait as the lower part of each; the
//! loss and learning rate beside them.

use ratatui::Frame;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::Style;
use ratatui::text::Line;
use ratatui::widgets::Paragraph;

use super::{Pane, View};
use crate::common::units::{ms, num};
use crate::model::window::Series;
use crate::settings::theme::Role;
use crate::sink::ui::widgets::{column_cell, column_seconds, columns, paged_end};

pub fn render(f: &mut Frame, area: Rect, v: &View) {
    let g = &v.mon.model.merged;
    let (window, label) = v.ui.history_window();
    let step = &g.step_time_ms.series;
    let Some(end) = step.points().last().map(|p| p.t1) else {
        let block = v.block(Pane::History, format!("{label} (+/-)"));
        let inner = block.inner(area);
        f.render_widget(block, area);
        f.render_widget(
            Paragraph::new(v.span("no step times yet", Role::Muted)),
            inner,
        );
        return;
    };
    let start = step.points().next().map_or(end, |p| p.t0);
    let span = window.min(end - start).max(1.0);
    // The title needs the grain, which needs the inner width; a rule on top only, so the
    // inside is the area less its first row.
    let inner = v.block(Pane::History, String::new()).inner(area);
    let [chart, side] = if inner.width >= 50 {
        Layout::horizontal([Constraint::Fill(1), Constraint::Length(22)])
            .spacing(1)
            .areas(inner)
    } else {
        [inner, Rect::default()]
    };
    let width = chart.width as usize;
    // A column at least as long as a usual step: slower steps would leave every few columns
    // empty.
    let step_s = g
        .step_median_ms
        .or(g.step_time_ms.recent.last())
        .unwrap_or(0.0)
        / 1000.0;
    let col = column_seconds((span / width.max(1) as f64).max(step_s), 1);
    let paged = paged_end(end, col, width);
    let at = |s: &Series| columns(s.points().map(|p| (p.t1, p.mean)), paged, col, width);
    let steps = at(step);
    let data = at(&g.data_time_ms.series);
    let top = scale_top(&steps);
    let what = if inner.width >= 70 {
        "step time, data wait below · "
    } else {
        ""
    };
    let extra = format!(
        "{what}{label} (+/-) · {}/col · top {}",
        seconds(col),
        ms(top)
    );
    f.render_widget(v.block(Pane::History, extra), area);
    draw_columns(
        f.buffer_mut(),
        chart,
        &steps,
        (0.0, top),
        v.style(Role::Chart),
        Some((&data, v.style(Role::Data))),
    );
    if side.width > 0 {
        let col = column_seconds((span / f64::from(side.width)).max(step_s), 1);
        loss_panel(f, side, v, end, col);
    }
}

/// The chart's top: the highest column, unless a few spikes (a compiled first step, an
/// eval) are over twice the median; those are cut at the top so the usual steps keep the
/// height.
fn scale_top(columns: &[Option<f64>]) -> f64 {
    let mut values: Vec<f64> = columns.iter().flatten().copied().collect();
    let max = values.iter().copied().fold(0.0, f64::max);
    match crate::model::window::median(&mut values) {
        Some(m) if m > 0.0 => max.min(2.0 * m),
        _ => max,
    }
}

/// Loss as columns scaled between its lowest and highest shown value, with the last value,
/// the run's lowest, and the learning rate.
fn loss_panel(f: &mut Frame, area: Rect, v: &View, end: f64, col: f64) {
    let g = &v.mon.model.merged;
    let width = area.width as usize;
    let loss = columns(
        g.loss.series.points().map(|p| (p.t1, p.mean)),
        paged_end(end, col, width),
        col,
        width,
    );
    let mut text = Vec::new();
    match (g.loss_track.last, g.loss_track.min) {
        (Some(last), Some(min)) => {
            text.push(Line::from(vec![
                v.span("loss ", Role::Muted),
                v.span(num(last), Role::Text),
                v.span(format!(" min {}", num(min)), Role::Muted),
            ]));
        }
        _ => text.push(Line::from(v.span("no loss logged", Role::Muted))),
    }
    if let Some(lr) = g.lr {
        text.push(Line::from(vec![
            v.span("lr ", Role::Muted),
            v.span(format!("{lr:.3e}"), Role::Text),
        ]));
    }
    let rows = text.len() as u16;
    let [head, chart] =
        Layout::vertical([Constraint::Length(rows), Constraint::Fill(1)]).areas(area);
    f.render_widget(Paragraph::new(text), head);
    let shown = loss.iter().flatten();
    let lo = shown.clone().copied().fold(f64::INFINITY, f64::min);
    let hi = shown.copied().fold(f64::NEG_INFINITY, f64::max);
    if lo.is_finite() {
        // A flat loss still shows as a low line, not as nothing.
        let floor = lo - (hi - lo).max(lo.abs() * 1e-3) * 0.1;
        draw_columns(
            f.buffer_mut(),
            chart,
            &loss,
            round_scale(floor, hi),
            v.style(Role::ChartAlt),
            None,
        );
    }
}

/// `lo` and `hi` widened to the grid of a round step (1, 2 or 5 times a power of ten) of
/// about a tenth of their span: a loss that falls a little at every step moves the scale
/// only when it crosses the grid, not every column's height at every step.
fn round_scale(lo: f64, hi: f64) -> (f64, f64) {
    let span = hi - lo;
    if span <= 0.0 || !span.is_finite() {
        return (lo, hi);
    }
    let tenth = span / 10.0;
    let power = 10f64.powf(tenth.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * power)
        .find(|s| *s >= tenth)
        .unwrap_or(10.0 * power);
    ((lo / step).floor() * step, (hi / step).ceil() * step)
}

/// Columns of block characters, bottom up, scaled from `lo` to `hi`; with `under`, the lower
/// part of each column (its own value) in a second style.
fn draw_columns(
    buf: &mut Buffer,
    area: Rect,
    values: &[Option<f64>],
    (lo, hi): (f64, f64),
    style: Style,
    under: Option<(&[Option<f64>], Style)>,
) {
    let rows = area.height as usize;
    let range = hi - lo;
    if rows == 0 || range <= 0.0 {
        return;
    }
    let scale = |x: f64| ((x - lo) / range).clamp(0.0, 1.0) * rows as f64;
    for (i, value) in values.iter().enumerate().take(area.width as usize) {
        let Some(value) = value else { continue };
        let height = scale(*value).max(0.125);
        let low = under.and_then(|(u, s)| Some((scale(u.get(i).copied().flatten()?), s)));
        for r in 0..rows {
            let ch = column_cell(height, r);
            if ch == ' ' {
                break;
            }
            let st = match low {
                Some((h, s)) if (r as f64) + 0.5 < h => s,
                _ => style,
            };
            let x = area.x + i as u16;
            let y = area.y + area.height - 1 - r as u16;
            buf[(x, y)].set_char(ch).set_style(st);
        }
    }
}

fn seconds(s: f64) -> String {
    if s >= 3600.0 {
        format!("{:.0}h", s / 3600.0)
    } else if s >= 60.0 {
        format!("{:.0}m", s / 60.0)
    } else {
        format!("{s:.0}s")
    }
}

#[cfg(test)]
mod tests {
    use super::round_scale;

    #[test]
    fn a_scale_moves_only_when_its_values_cross_the_grid() {
        // The grid of 5.3..6.6 is 0.2: 5.2..6.6.
        let (lo, hi) = round_scale(5.3, 6.6);
        assert!(
            (lo - 5.2).abs() < 1e-9 && (hi - 6.6).abs() < 1e-9,
            "{lo} {hi}"
        );
        // A lower minimum within the same grid step leaves the scale as it was.
        let (a, b) = (round_scale(5.31, 6.61), round_scale(5.305, 6.61));
        assert_eq!(a, b);
        assert!(a.0 <= 5.305 && a.1 >= 6.61);
        // A flat series is left alone.
        assert_eq!(round_scale(2.0, 2.0), (2.0, 2.0));
    }
}
