//! Per GPU: utilisation with a sparkline, memory, power against its limit, temperature, SM
//! clock, and why the clocks are held down; the reason when NVML gives nothing. MIG devices
//! sit under their GPU as `1:0`; with `--gpus cuda` a GPU is named `cuda0=2` (CUDA's number,
//! then NVML's). The GPUs' notes (hidden GPUs, numbering, foreign process ids) close the pane.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Paragraph, Wrap};

use super::{Pane, View};
use crate::model::sample::GpuReading;
use crate::settings::theme::Role;
use crate::sink::ui::widgets::{columns, fit, sparkline};

/// Seconds per sparkline cell; a fixed grain so the line shifts at most this often.
const SPARK_S: f64 = 5.0;

pub fn render(f: &mut Frame, area: Rect, v: &View) {
    let h = &v.mon.model.hardware;
    let latest = h.latest();
    let count = latest.map_or(0, |s| s.gpus.len());
    let numbering = if latest.is_some_and(|s| s.gpus.iter().any(|g| g.cuda_index.is_some())) {
        "CUDA numbers · "
    } else {
        ""
    };
    let extra = match count {
        0 => String::new(),
        n => format!("{n} · {numbering}util {}s/cell", SPARK_S as u32),
    };
    let block = v.block(Pane::Gpus, extra);
    let inner = block.inner(area);
    f.render_widget(block, area);
    let Some(sample) = latest else {
        let msg = v.ui.probes_off.unwrap_or("no hardware readings yet");
        f.render_widget(
            Paragraph::new(v.span(msg, Role::Muted)).wrap(Wrap { trim: true }),
            inner,
        );
        return;
    };
    if sample.gpus.is_empty() {
        let why = sample
            .gpu_error
            .clone()
            .unwrap_or_else(|| "no GPU selected".into());
        // The reason's first clause when the whole would take more than two rows: a narrow
        // pane keeps its room for what is read (the rest is in `steptop probe`'s words).
        let full = format!("no GPU readings: {why}");
        let said = if crate::common::display::width(&full) > 2 * usize::from(inner.width) {
            format!(
                "no GPU readings: {}",
                why.split(": ").next().unwrap_or(&why)
            )
        } else {
            full
        };
        let mut text = vec![Line::from(v.span(said, Role::Muted))];
        text.extend(notes(v, sample));
        f.render_widget(Paragraph::new(text).wrap(Wrap { trim: true }), inner);
        return;
    }
    let width = inner.width as usize;
    let two_rows = width < 64 && inner.height as usize >= 2 * sample.gpus.len();
    let label_w = sample
        .gpus
        .iter()
        .map(|g| g.label().len())
        .max()
        .unwrap_or(1);
    let mut lines = Vec::new();
    for g in &sample.gpus {
        let spark_w = if two_rows {
            width.saturating_sub(22).min(24)
        } else {
            12
        };
        let history: Vec<(f64, f64)> = h
            .recent
            .iter()
            .filter_map(|s| {
                let r = s.gpus.iter().find(|x| x.key() == g.key())?;
                Some((s.time, f64::from(r.util_pct?)))
            })
            .collect();
        let spark = sparkline(
            &columns(history.into_iter(), sample.time, SPARK_S, spark_w),
            100.0,
        );
        let mut head = vec![
            v.span(format!("{:<label_w$} ", g.label()), Role::Title),
            v.span(format!("{} ", fit(&short_name(&g.name), 12)), Role::Muted),
        ];
        if let Some(why) = &g.failed {
            head.push(v.span(format!("lost: {why}"), Role::Crit));
            lines.push(Line::from(head));
            continue;
        }
        head.push(v.span(spark, Role::Chart));
        // NVML gives no utilization for a GPU in MIG mode, nor for its MIG devices.
        let no_util = if g.mig == Some(crate::model::sample::Mig::Parent) {
            " MIG"
        } else {
            " -"
        };
        head.push(v.span(
            g.util_pct.map_or(no_util.into(), |u| format!(" {u:>3}%")),
            util_role(g.util_pct),
        ));
        let rest = details(v, g);
        if two_rows {
            lines.push(Line::from(head));
            let mut second = vec![Span::raw("  ")];
            second.extend(rest);
            lines.push(Line::from(second));
        } else {
            head.push(Span::raw(" "));
            head.extend(rest);
            lines.push(Line::from(head));
        }
    }
    let used = (lines.len() as u16).min(inner.height);
    f.render_widget(Paragraph::new(lines), inner);
    let rest = Rect {
        y: inner.y + used,
        height: inner.height - used,
        ..inner
    };
    if rest.height > 0 {
        let text: Vec<Line> = notes(v, sample).collect();
        f.render_widget(Paragraph::new(text).wrap(Wrap { trim: true }), rest);
    }
}

/// The GPUs' notes, muted, one line each before wrapping.
fn notes<'a>(
    v: &'a View,
    s: &'a crate::model::sample::Sample,
) -> impl Iterator<Item = Line<'a>> + 'a {
    s.gpu_notes
        .iter()
        .map(move |n| Line::from(v.span(n.clone(), Role::Muted)))
}

/// Memory, power, temperature, clock and throttle reasons, as spans.
fn details<'a>(v: &View, g: &GpuReading) -> Vec<Span<'a>> {
    let mut out = Vec::new();
    if let (Some(used), Some(total)) = (g.mem_used_bytes, g.mem_total_bytes) {
        let share = used as f64 / total.max(1) as f64;
        let role = if share >= 0.95 {
            Role::Warn
        } else {
            Role::Text
        };
        out.push(v.span(format!("{:.1}/{:.0}G ", gib(used), gib(total)), role));
    }
    if let Some(p) = g.power_w {
        let limit = g
            .power_limit_w
            .map(|l| format!("/{l:.0}"))
            .unwrap_or_default();
        out.push(v.span(format!("{p:.0}{limit}W "), Role::Text));
    }
    if let Some(t) = g.temp_c {
        let role = if t >= 85 { Role::Warn } else { Role::Text };
        out.push(v.span(format!("{t}°C "), role));
    }
    if let Some(c) = g.sm_clock_mhz {
        out.push(v.span(format!("{c}MHz "), Role::Muted));
    }
    if let Some(reasons) = g.throttle.as_ref().filter(|r| !r.is_empty()) {
        out.push(v.span(reasons.join(","), Role::Warn));
    }
    out
}

fn util_role(u: Option<u32>) -> Role {
    match u {
        Some(u) if u < 50 => Role::Warn,
        Some(_) => Role::Ok,
        None => Role::Muted,
    }
}

fn gib(bytes: u64) -> f64 {
    bytes as f64 / f64::from(1u32 << 30)
}

/// `NVIDIA H100 80GB HBM3` is `H100 80GB HBM3`: the vendor is the same on every line. A MIG
/// device is its profile (`MIG 3g.40gb`): its GPU's name is on the line above.
fn short_name(name: &str) -> String {
    match name.find("MIG ") {
        Some(at) => name[at..].to_string(),
        None => name.trim_start_matches("NVIDIA ").to_string(),
    }
}
