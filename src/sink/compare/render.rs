//! A comparison as text (a side-by-side table, then the findings) and as markdown.

use std::fmt::Write;

use ratatui::style::Color;

use super::{Comparison, FigureChange};
use crate::common::display::{self, Painted};
use crate::settings::theme::{Role, Theme};
use crate::sink::probe_sample::words;

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
        "tokens_per_gpu_s" => "tokens/s a GPU".into(),
        "mfu_pct" => "MFU %".into(),
        "data_share" => "data share".into(),
        "forward_ms" => "forward".into(),
        "unlogged_ms" => "unlogged".into(),
        "cache.hit_rate" => "cache hit rate".into(),
        "hardware.gpus.0.util_pct.p50" => "GPU util p50 %".into(),
        "hardware.gpus.0.power_w.p50" => "GPU power p50 W".into(),
        "hardware.gpus.0.mem_used_bytes.p50" => "GPU memory p50".into(),
        "hardware.host_mem_peak_bytes" => "host memory peak".into(),
        other => other.into(),
    }
}

/// Each figure, the baseline's value, and each other run's change (None where it has none).
pub(super) fn table(c: &Comparison) -> Vec<(String, String, Vec<Option<&FigureChange>>)> {
    figures(c)
        .into_iter()
        .map(|figure| {
            let base = c
                .changes
                .iter()
                .find(|ch| ch.figure == figure)
                .map(|ch| number(&figure, ch.from))
                .unwrap_or_default();
            let cells = c
                .runs
                .iter()
                .skip(1)
                .map(|r| {
                    c.changes
                        .iter()
                        .find(|ch| ch.figure == figure && ch.run == r.label)
                })
                .collect();
            (figure, base, cells)
        })
        .collect()
}

/// `3.64 -51%`, with `~` when the change is within the runs' spread.
pub(super) fn cell(ch: &FigureChange) -> String {
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
    } else if figure.ends_with("bytes.p50") || figure.ends_with("_bytes") {
        crate::common::units::gib(v as u64)
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// Whether a larger value of `figure` is better (throughput, cache hits, GPU use), worse (times,
/// the data share), or neither (memory).
fn larger_is_better(figure: &str) -> Option<bool> {
    match figure {
        "samples_per_s" | "iters_per_s" | "tokens_per_s" | "tokens_per_gpu_s" | "mfu_pct"
        | "cache.hit_rate" => Some(true),
        f if f.starts_with("hardware.gpus.") && !f.contains("mem_used") => Some(true),
        f if f.starts_with("hardware.host_mem") => None,
        f if f.contains("mem_used") || f.contains("mem_peak") => None,
        _ => Some(false),
    }
}

/// The role a change is shown in: better or worse when significant, muted when noise.
fn role_of(ch: &FigureChange) -> Role {
    let Some(r) = ch.ratio.filter(|_| ch.significant) else {
        return Role::Muted;
    };
    match larger_is_better(&ch.figure) {
        Some(up) if (r > 1.0) == up => Role::Ok,
        Some(_) => Role::Warn,
        None => Role::Text,
    }
}

/// The SGR code of the theme's colour for `role`, if it has one.
fn sgr(role: Role, theme: Option<&Theme>) -> Option<String> {
    let fg = theme.and_then(|t| t.style(role).fg)?;
    let code = match fg {
        Color::Rgb(r, g, b) => format!("38;2;{r};{g};{b}"),
        Color::Indexed(n) => format!("38;5;{n}"),
        Color::Black => "30".into(),
        Color::Red => "31".into(),
        Color::Green => "32".into(),
        Color::Yellow => "33".into(),
        Color::Blue => "34".into(),
        Color::Magenta => "35".into(),
        Color::Cyan => "36".into(),
        Color::Gray => "37".into(),
        Color::DarkGray => "90".into(),
        Color::LightRed => "91".into(),
        Color::LightGreen => "92".into(),
        Color::LightYellow => "93".into(),
        Color::LightBlue => "94".into(),
        Color::LightMagenta => "95".into(),
        Color::LightCyan => "96".into(),
        Color::White => "97".into(),
        Color::Reset => return None,
    };
    Some(code)
}

/// The text form; with a theme (stdout is a terminal), changes are coloured by its roles:
/// better, worse, or noise.
pub fn text(c: &Comparison, theme: Option<&Theme>) -> Painted {
    let mut o = Painted::default();
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
            &crate::sink::ui::widgets::fit(&r.label, RUN_W - 1),
            RUN_W,
        ));
    }
    let _ = writeln!(o, "\n{}", head.trim_end());
    for (figure, base, cells) in table(c) {
        // The row's plain text not yet written: its end is trimmed.
        let mut row = display::pad(
            &crate::sink::ui::widgets::fit(&label(&figure), FIGURE_W - 1),
            FIGURE_W,
        );
        row.push_str(&display::pad(&base, RUN_W));
        for ch in cells {
            let v = display::pad(&ch.map(cell).unwrap_or_else(|| "-".into()), RUN_W);
            // Padded first, so colours never move the columns.
            match ch.and_then(|ch| sgr(role_of(ch), theme)) {
                Some(code) => {
                    o.paint(&std::mem::take(&mut row), None);
                    o.paint(&v, Some(&code));
                }
                None => row.push_str(&v),
            }
        }
        let _ = writeln!(o, "{}", row.trim_end());
    }
    let _ = writeln!(
        o,
        "(times in ms; ~: within the noise: for the median step and the"
    );
    let _ = writeln!(
        o,
        " rates, its uncertainty over the runs' steps; else their spread)"
    );
    stacks(c, &mut o);
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
        let _ = writeln!(o);
        words(&mut o, "note: ", 6, n);
    }
    o
}

/// The function that held a recorded run's main thread most, from its sampled stacks; None
/// for a run whose stacks were not sampled.
pub(super) fn stacks_top(r: &super::RunOut) -> Option<String> {
    let f = r.figures.get("stacks")?.pointer("/main/functions/0")?;
    Some(format!(
        "{} ({}:{}) {:.0}% of the main thread",
        f.get("function")?.as_str()?,
        f.get("file")?.as_str()?,
        f.get("line")?.as_u64()?,
        f.get("share")?.as_f64()? * 100.0
    ))
}

/// Each run's `stacks_top`, when any run was sampled.
pub(super) fn stacks_rows(c: &Comparison) -> Option<Vec<(String, String)>> {
    c.runs.iter().any(|r| stacks_top(r).is_some()).then(|| {
        c.runs
            .iter()
            .map(|r| {
                let top = stacks_top(r).unwrap_or_else(|| "not sampled".into());
                (r.label.clone(), top)
            })
            .collect()
    })
}

fn stacks(c: &Comparison, o: &mut Painted) {
    let Some(rows) = stacks_rows(c) else {
        return;
    };
    let _ = writeln!(o, "\npython stacks (sampled; shares are estimates)");
    for (i, (label, top)) in rows.iter().enumerate() {
        words(o, &format!("  {} {label}: ", i + 1), 6, top);
    }
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
    for (figure, base, cells) in table(c) {
        let _ = write!(o, "| `{}` | {base} |", escape(&figure));
        for ch in cells {
            let _ = write!(o, " {} |", ch.map(cell).unwrap_or_else(|| "-".into()));
        }
        o.push('\n');
    }
    let _ = writeln!(
        o,
        "\n`~`: within the noise (the median step's uncertainty over the runs' steps for it and \
         the rates; the runs' step-to-step spread for the rest).\n"
    );
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
    if let Some(rows) = stacks_rows(c) {
        o.push_str("\n### Python stacks\n\nSampled; shares are estimates.\n\n");
        for (label, top) in rows {
            let _ = writeln!(o, "- {}: {}", escape(&label), escape(&top));
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sink::compare::RunOut;

    fn run(label: &str) -> RunOut {
        RunOut {
            label: label.into(),
            paths: vec![format!("{label}.log")],
            figures: serde_json::Map::new(),
            spread: Some(0.01),
            median_error: None,
        }
    }

    fn change(figure: &str, to: f64, significant: bool) -> FigureChange {
        FigureChange {
            figure: figure.into(),
            run: "b".into(),
            from: 100.0,
            to,
            ratio: Some(to / 100.0),
            significant,
        }
    }

    #[test]
    fn changes_are_coloured_better_worse_or_noise_only_with_a_theme() {
        let c = Comparison {
            schema_version: 1,
            runs: vec![run("a"), run("b")],
            changes: vec![
                change("samples_per_s", 130.0, true),
                change("step_time_ms.p50", 130.0, true),
                change("data_share", 0.5, false),
            ],
            findings: Vec::new(),
            notes: Vec::new(),
            drawings: Vec::new(),
        };
        let theme = Theme::load("default").expect("theme");
        let painted = |role: Role, v: &str| {
            let code = sgr(role, Some(&theme)).expect("the theme colours it");
            format!("\x1b[{code}m{}\x1b[0m", display::pad(v, RUN_W))
        };
        let coloured = text(&c, Some(&theme)).for_terminal();
        assert!(
            coloured.contains(&painted(Role::Ok, "130 +30%")),
            "{coloured:?}"
        );
        assert!(
            coloured.contains(&painted(Role::Warn, "130 +30%")),
            "{coloured:?}"
        );
        assert!(
            coloured.contains(&painted(Role::Muted, "50.0% -100% ~")),
            "{coloured:?}"
        );
        let plain = text(&c, None).for_terminal();
        assert!(!plain.contains('\x1b'), "{plain:?}");
        assert_eq!(
            plain.lines().count(),
            coloured.lines().count(),
            "colour changes no line"
        );
    }
}
