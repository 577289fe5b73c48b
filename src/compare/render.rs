//! A comparison as text (a side-by-side table, then the findings) and as markdown.

use std::fmt::Write;

use super::{Comparison, FigureChange};
use crate::display;
use crate::report::probe::words;

/// Width of the figure column and of each run's column.
const FIGURE_W: usize = 24;
const RUN_W: usize = 18;

/// The figures shown, in order: those every change list has, then the stages.
fn figures(c: &Comparison) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    for ch in &c.changes {
        if !seen.contains(&ch.figure) {
            seen.push(ch.figure.clone());
        }
    }
    seen
}

/// A figure's name for a reader: `stage VRT Stage8`, `step time p50`.
fn label(figure: &str) -> String {
    if let Some(stage) = figure
        .strip_prefix("stages.")
        .and_then(|s| s.strip_suffix(".mean_ms"))
    {
        return format!("stage {stage}");
    }
    match figure {
        "step_time_ms.p50" => "step time p50".into(),
        "step_time_ms.p95" => "step time p95".into(),
        "samples_per_s" => "samples/s".into(),
        "iters_per_s" => "it/s".into(),
        "tokens_per_s" => "tokens/s".into(),
        "data_share" => "data share".into(),
        "forward_ms" => "forward".into(),
        "unlogged_ms" => "unlogged".into(),
        "cache.hit_rate" => "cache hit rate".into(),
        "hardware.gpus.0.util_pct.p50" => "GPU util p50 %".into(),
        "hardware.gpus.0.power_w.p50" => "GPU power p50 W".into(),
        "hardware.gpus.0.mem_used_bytes.p50" => "GPU memory p50".into(),
        other => other.into(),
    }
}

/// `3.64 -51%`, with `~` when the change is within the runs' spread.
fn cell(ch: &FigureChange) -> String {
    let value = number(ch.figure.as_str(), ch.to);
    match ch.ratio {
        Some(r) => {
            let mark = if ch.significant { "" } else { " ~" };
            format!("{value} {:+.0}%{mark}", (r - 1.0) * 100.0)
        }
        None => value,
    }
}

fn number(figure: &str, v: f64) -> String {
    if figure == "data_share" || figure.ends_with("hit_rate") {
        format!("{:.1}%", v * 100.0)
    } else if figure.ends_with("bytes.p50") {
        crate::units::gib(v as u64)
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

pub fn text(c: &Comparison) -> String {
    let mut o = String::new();
    let _ = writeln!(
        o,
        "steptop compare: {} runs, the first is the baseline",
        c.runs.len()
    );
    for (i, r) in c.runs.iter().enumerate() {
        let head = format!("  {} {}: ", i + 1, r.label);
        let files = display::shown(&r.paths.join(", "), display::Tabs::Space).into_owned();
        let room = 80usize.saturating_sub(display::width(&head)).max(20);
        let _ = writeln!(o, "{head}{}", keep_end(&files, room));
    }
    let mut head = display::pad("", FIGURE_W);
    for r in &c.runs {
        head.push_str(&display::pad(
            &crate::ui::widgets::fit(&r.label, RUN_W - 1),
            RUN_W,
        ));
    }
    let _ = writeln!(o, "\n{}", head.trim_end());
    for figure in figures(c) {
        let base = c
            .changes
            .iter()
            .find(|ch| ch.figure == figure)
            .map(|ch| number(&figure, ch.from))
            .unwrap_or_default();
        let mut row = display::pad(
            &crate::ui::widgets::fit(&label(&figure), FIGURE_W - 1),
            FIGURE_W,
        );
        row.push_str(&display::pad(&base, RUN_W));
        for r in c.runs.iter().skip(1) {
            let v = c
                .changes
                .iter()
                .find(|ch| ch.figure == figure && ch.run == r.label)
                .map(cell)
                .unwrap_or_else(|| "-".into());
            row.push_str(&display::pad(&v, RUN_W));
        }
        let _ = writeln!(o, "{}", row.trim_end());
    }
    let _ = writeln!(o, "(times in ms; ~: within the runs' step-to-step spread,");
    let _ = writeln!(o, " (p95 - p50) / p50 of their step times)");
    if !c.findings.is_empty() {
        let _ = writeln!(o, "\nfindings");
    }
    for f in &c.findings {
        let head = format!("  {:<4}  ", f.severity);
        words(
            &mut o,
            &head,
            8,
            &format!("{} ({}): {}", f.id, f.run, f.title),
        );
        for e in &f.evidence {
            words(&mut o, "        ", 8, e);
        }
        for a in &f.actions {
            words(&mut o, "        -> ", 11, a);
        }
    }
    for n in &c.notes {
        o.push('\n');
        words(&mut o, "note: ", 6, n);
    }
    o
}

pub fn markdown(c: &Comparison) -> String {
    let mut o = String::new();
    let _ = writeln!(o, "## steptop compare\n");
    let mut head = "| figure |".to_string();
    let mut rule = "|---|".to_string();
    for r in &c.runs {
        let _ = write!(head, " {} |", escape(&r.label));
        rule.push_str("---|");
    }
    let _ = writeln!(o, "{head}\n{rule}");
    for figure in figures(c) {
        let base = c
            .changes
            .iter()
            .find(|ch| ch.figure == figure)
            .map(|ch| number(&figure, ch.from))
            .unwrap_or_default();
        let _ = write!(o, "| `{}` | {base} |", escape(&figure));
        for r in c.runs.iter().skip(1) {
            let v = c
                .changes
                .iter()
                .find(|ch| ch.figure == figure && ch.run == r.label)
                .map(cell)
                .unwrap_or_else(|| "-".into());
            let _ = write!(o, " {v} |");
        }
        o.push('\n');
    }
    let _ = writeln!(o, "\n`~`: within the runs' step-to-step spread.\n");
    for f in &c.findings {
        let _ = writeln!(
            o,
            "- **{}** `{}` ({}): {}",
            f.severity,
            f.id,
            escape(&f.run),
            escape(&f.title)
        );
        for e in &f.evidence {
            let _ = writeln!(o, "  - {}", escape(e));
        }
    }
    for n in &c.notes {
        let _ = writeln!(o, "\n> {}", escape(n));
    }
    o
}

/// The end of `text` in `width` cells, `…` standing for what is cut: a path's file name is
/// what tells runs apart.
fn keep_end(text: &str, width: usize) -> String {
    if display::width(text) <= width {
        return text.to_string();
    }
    let mut kept: Vec<char> = Vec::new();
    let mut used = 1;
    for c in text.chars().rev() {
        let w = display::width(c.encode_utf8(&mut [0; 4]));
        if used + w > width {
            break;
        }
        used += w;
        kept.push(c);
    }
    std::iter::once('…').chain(kept.into_iter().rev()).collect()
}

/// Log text in a table or a list item: its pipes and control characters cannot break it.
fn escape(s: &str) -> String {
    display::shown(s, display::Tabs::Space).replace('|', "\\|")
}
