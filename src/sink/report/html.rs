//! The report as one self-contained HTML page to attach to an issue or open from a shared
//! drive: inline CSS and SVG, no script, no font, nothing fetched; light or dark as the
//! reader's system prefers, and printable. Every figure is the report's own (the same summary
//! as text and JSON); the curves are the model's decimated history (min, max and mean per
//! bucket), so a week-long run is a small page. Text from logs is escaped everywhere.

use std::fmt::Write;

use super::{PartOut, Report};
use crate::common::units::{duration, gain_words, ms, num, pct};
use crate::diagnose::Alert;
use crate::diagnose::checklist::Status;
use crate::model::Model;
use crate::model::window::Point;

/// The curves a page draws, taken from the model once.
#[derive(Debug)]
pub struct Curves {
    pub step_ms: Vec<Point>,
    pub data_ms: Vec<Point>,
    /// Samples/s, else it/s: what the run logged.
    pub rate: Vec<Point>,
    pub rate_unit: &'static str,
    pub loss: Vec<Point>,
    /// The cache's hit rate between readings, in percent.
    pub cache_hit_pct: Vec<Point>,
    /// A recording's readings: the GPUs' mean utilization (%), summed power (W) and memory
    /// (GiB), the host's used memory (GiB).
    pub gpu_util_pct: Vec<Point>,
    pub gpu_power_w: Vec<Point>,
    pub gpu_mem_gib: Vec<Point>,
    pub host_mem_gib: Vec<Point>,
}

impl Curves {
    pub fn of(m: &Model) -> Curves {
        let points = |s: &crate::model::window::Series| s.points().copied().collect::<Vec<_>>();
        let r = &m.merged;
        let (rate, rate_unit) = if r.samples_per_s.series.is_empty() {
            (points(&r.iters_per_s.series), "it/s")
        } else {
            (points(&r.samples_per_s.series), "samples/s")
        };
        let scaled = |s: &crate::model::window::Series, k: f64| {
            s.points()
                .map(|p| Point {
                    min: p.min * k,
                    max: p.max * k,
                    mean: p.mean * k,
                    ..*p
                })
                .collect::<Vec<_>>()
        };
        let hw = &m.hardware.curves;
        let gib = 1.0 / f64::from(1u32 << 30);
        Curves {
            step_ms: points(&r.step_time_ms.series),
            data_ms: points(&r.data_time_ms.series),
            rate,
            rate_unit,
            loss: points(&r.loss.series),
            cache_hit_pct: scaled(&m.cache.recent_series, 100.0),
            gpu_util_pct: points(&hw.gpu_util_pct),
            gpu_power_w: points(&hw.gpu_power_w),
            gpu_mem_gib: scaled(&hw.gpu_mem_bytes, gib),
            host_mem_gib: scaled(&hw.host_mem_bytes, gib),
        }
    }
}

/// The page.
pub fn render(r: &Report, c: &Curves) -> String {
    let mut o = page_start("steptop report");
    header(&mut o, r);
    verdict(&mut o, r);
    breakdown(&mut o, r);
    curves(&mut o, r, c);
    stages(&mut o, r);
    stacks(&mut o, r);
    readings(&mut o, r, c);
    checklist(&mut o, r);
    sources(&mut o, r);
    o.push_str("</body></html>\n");
    o
}

/// A page's head (its title, the style sheet) and the start of its body.
pub(crate) fn page_start(title: &str) -> String {
    let mut o = String::with_capacity(64 * 1024);
    o.push_str("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">");
    o.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">");
    let _ = writeln!(
        o,
        "<title>{}</title><style>{CSS}</style></head><body>",
        esc(title)
    );
    o
}

fn header(o: &mut String, r: &Report) {
    let _ = write!(
        o,
        "<header><h1>steptop report</h1><p>{} step records",
        r.steps.count
    );
    o.push_str(&r.steps.range());
    let files: Vec<String> = r.sources.iter().map(|s| esc(&s.path)).collect();
    let _ = write!(o, " from {}</p>", files.join(", "));
    for note in r.separate_runs.iter().chain(&r.reading_notes) {
        let _ = write!(o, "<p class=\"note\">{}</p>", esc(note));
    }
    if !r.earlier_runs.is_empty() {
        let _ = write!(
            o,
            "<p class=\"note\">The file held {} earlier run{} before this one: ",
            r.earlier_runs.len() as u64 + r.earlier_runs_dropped,
            if r.earlier_runs.len() == 1 { "" } else { "s" }
        );
        let runs: Vec<String> = r
            .earlier_runs
            .iter()
            .map(|run| {
                let changed = (run.run.then_changed_words())
                    .map_or(String::new(), |c| format!("; then changed: {c}"));
                format!(
                    "lines {}-{} ({}{changed})",
                    run.run.first_line,
                    run.run.last_line,
                    run.run.steps_words()
                )
            })
            .collect();
        let _ = write!(
            o,
            "{}. This report covers the last.</p>",
            esc(&runs.join(", "))
        );
    }
    o.push_str("<details><summary>How the figures were read</summary><ul>");
    for (label, text) in r.basis.rows() {
        let _ = write!(o, "<li>{label}: {}</li>", esc(text));
    }
    o.push_str("</ul></details>");
    o.push_str("</header>\n");
}

fn verdict(o: &mut String, r: &Report) {
    o.push_str("<section id=\"verdict\"><h2>Verdict</h2>");
    match &r.verdict {
        Some(v) => {
            let gain = (v.gain.filter(|g| *g > 0.0))
                .map_or(String::new(), |g| format!(" ({})", gain_words(g)));
            let _ = write!(
                o,
                "<p class=\"verdict sev-{}\"><b>{}</b> {}{}</p>",
                v.severity.name(),
                v.severity.name(),
                esc(&v.title),
                esc(&gain)
            );
        }
        None => o.push_str("<p class=\"verdict\">No alert is active.</p>"),
    }
    if !r.alerts.is_empty() {
        let active = r.alerts.iter().filter(|a| a.active()).count();
        let _ = write!(
            o,
            "<h2>Alerts <small>{active} active, {} cleared</small></h2>",
            r.alerts.len() - active
        );
        for a in &r.alerts {
            alert(o, a);
        }
    }
    o.push_str("</section>\n");
}

fn alert(o: &mut String, a: &Alert) {
    let steps = match (a.first_step, a.cleared_step) {
        (Some(f), Some(c)) => format!("steps {f}..{c}"),
        (Some(f), None) => format!("since step {f}"),
        _ => String::new(),
    };
    let _ = write!(
        o,
        "<article class=\"alert sev-{}\"><h3><span class=\"sev\">{}</span> {}</h3><p class=\"meta\"><code>{}</code> {steps}{}</p>",
        a.severity.name(),
        a.severity.name(),
        esc(&a.title),
        a.rule,
        if a.active() { "" } else { " (cleared)" }
    );
    list(o, "ul", &a.evidence);
    if !a.actions.is_empty() {
        o.push_str("<p class=\"meta\">What to change:</p>");
        list(o, "ol", &a.actions);
    }
    o.push_str("</article>");
}

fn list(o: &mut String, tag: &str, items: &[String]) {
    let _ = write!(o, "<{tag}>");
    for i in items {
        let _ = write!(o, "<li>{}</li>", esc(i));
    }
    let _ = write!(o, "</{tag}>");
}

/// The mean step as one stacked bar of its parts, then the same figures as a table.
fn breakdown(o: &mut String, r: &Report) {
    if r.breakdown.parts.is_empty() {
        return;
    }
    let _ = write!(
        o,
        "<section id=\"breakdown\"><h2>Where a step's time goes <small>{}</small></h2>",
        r.breakdown.step_ms.map_or_else(
            || "no step times: the parts alone".into(),
            |s| format!("mean step {}", ms(s))
        )
    );
    if r.breakdown.step_ms.is_some() {
        share_bar(o, &r.breakdown.parts);
    }
    o.push_str("<table><tr><th></th><th>part</th><th>mean</th><th>share</th></tr>");
    for p in &r.breakdown.parts {
        let _ = write!(
            o,
            "<tr><td><i class=\"key part-{}\"></i></td><td>{}</td><td>{}</td><td>{}</td></tr>",
            p.role,
            esc(&p.name),
            p.ms.map_or_else(|| "-".into(), ms),
            p.share.map_or_else(|| "-".into(), pct)
        );
    }
    let itemised: f64 = r.breakdown.parts.iter().filter_map(|p| p.share).sum();
    if let Some(step) = r.breakdown.step_ms.filter(|_| itemised < 0.999) {
        let rest = 1.0 - itemised;
        let _ = write!(
            o,
            "<tr><td><i class=\"key part-rest\"></i></td><td>the rest of the step, not itemised</td><td>{}</td><td>{}</td></tr>",
            ms(rest * step),
            pct(rest)
        );
    }
    o.push_str("</table></section>\n");
}

/// The parts' shares of the mean step, side by side in one bar.
pub(crate) fn share_bar(o: &mut String, parts: &[PartOut]) {
    let width = 720.0;
    let _ = write!(
        o,
        "<svg class=\"bar\" width=\"{width}\" height=\"36\" viewBox=\"0 0 {width} 36\" role=\"img\">"
    );
    let mut x = 0.0;
    for p in parts {
        let Some(share) = p.share.filter(|s| *s > 0.0) else {
            continue;
        };
        let w = (share * width).min(width - x);
        let _ = write!(
            o,
            "<rect class=\"part-{}\" x=\"{x:.1}\" y=\"0\" width=\"{w:.1}\" height=\"36\"><title>{}: {}</title></rect>",
            p.role,
            esc(&p.name),
            pct(share)
        );
        if w > 60.0 {
            let _ = write!(
                o,
                "<text x=\"{:.1}\" y=\"23\">{}</text>",
                x + 4.0,
                pct(share)
            );
        }
        x += w;
    }
    // What the parts leave of the step: the rest of it, drawn so that the bar is the step.
    if x < width - 0.5 {
        let rest = (width - x) / width;
        let _ = write!(
            o,
            "<rect class=\"part-rest\" x=\"{x:.1}\" y=\"0\" width=\"{:.1}\" height=\"36\"><title>the rest of the step, not itemised: {}</title></rect>",
            width - x,
            pct(rest)
        );
        if width - x > 60.0 {
            let _ = write!(
                o,
                "<text x=\"{:.1}\" y=\"23\">{}</text>",
                x + 4.0,
                pct(rest)
            );
        }
    }
    o.push_str("</svg>");
}

fn curves(o: &mut String, r: &Report, c: &Curves) {
    if c.step_ms.is_empty() && c.rate.is_empty() && c.loss.is_empty() {
        return;
    }
    o.push_str("<section id=\"curves\"><h2>Over the run</h2>");
    // The step time and throughput charts show where the evaluations and checkpoints
    // paused the run, beside the alerts that name them.
    let mut marks = alert_marks(r);
    marks.extend(pause_marks(r));
    if !c.step_ms.is_empty() {
        chart(
            o,
            "Step time, data wait below",
            "ms",
            &[
                band("step time", "step", &c.step_ms),
                Curve {
                    label: "data wait",
                    class: "data",
                    draw: Draw::Area,
                    points: &c.data_ms,
                },
            ],
            &marks,
        );
    }
    if !c.rate.is_empty() {
        chart(
            o,
            "Throughput",
            c.rate_unit,
            &[band(c.rate_unit, "rate", &c.rate)],
            &marks,
        );
    }
    if !c.loss.is_empty() {
        chart(o, "Loss", "", &[band("loss", "loss", &c.loss)], &[]);
    }
    o.push_str("</section>\n");
}

/// The cache and a recording's hardware readings over the run, after the stages.
fn readings(o: &mut String, r: &Report, c: &Curves) {
    let curves = [
        &c.cache_hit_pct,
        &c.gpu_util_pct,
        &c.gpu_power_w,
        &c.gpu_mem_gib,
        &c.host_mem_gib,
    ];
    if curves.iter().all(|p| p.is_empty()) {
        return;
    }
    o.push_str("<section id=\"readings\"><h2>Cache and hardware over the run</h2>");
    let marks = alert_marks(r);
    if !c.cache_hit_pct.is_empty() {
        let cache = [band("hit rate", "rate", &c.cache_hit_pct)];
        chart(o, "Cache hit rate", "%", &cache, &marks);
    }
    if !c.gpu_util_pct.is_empty() {
        let util = [band("mean of the GPUs", "step", &c.gpu_util_pct)];
        chart(o, "GPU utilization", "%", &util, &marks);
    }
    if !c.gpu_power_w.is_empty() {
        let power = [band("all GPUs", "loss", &c.gpu_power_w)];
        chart(o, "GPU power", "W", &power, &marks);
    }
    if !c.gpu_mem_gib.is_empty() || !c.host_mem_gib.is_empty() {
        let mem = [
            band("GPU memory, all GPUs", "step", &c.gpu_mem_gib),
            band("host memory used", "rate", &c.host_mem_gib),
        ];
        chart(o, "Memory", "GiB", &mem, &marks);
    }
    o.push_str("</section>\n");
}

/// Evaluations and checkpoints marked on a chart at most.
const MARKED_PAUSES: usize = 48;

/// Each evaluation and checkpoint (its first line: one event), on the time axis.
fn pause_marks(r: &Report) -> Vec<Mark> {
    r.events
        .iter()
        .filter(|e| e.kind == "eval" || e.kind == "checkpoint")
        .take(MARKED_PAUSES)
        .map(|e| Mark {
            t: e.time,
            class: "pause",
            label: format!("{} at line {}", e.kind, e.line),
        })
        .collect()
}

/// A curve drawn as its mean over its min-max band.
fn band<'a>(label: &'a str, class: &'a str, points: &'a [Point]) -> Curve<'a> {
    Curve {
        label,
        class,
        draw: Draw::Band,
        points,
    }
}

/// Alerts marked on a chart at most: past that the axis is a smear (a long run can keep 500).
const MARKED_ALERTS: usize = 24;

/// Each alert's raise and clear, on the time axis: the most severe first, then the earliest.
fn alert_marks(r: &Report) -> Vec<Mark> {
    let mut alerts: Vec<&Alert> = r.alerts.iter().collect();
    alerts.sort_by(|a, b| {
        b.severity
            .cmp(&a.severity)
            .then(a.first_time.total_cmp(&b.first_time))
    });
    alerts
        .into_iter()
        .take(MARKED_ALERTS)
        .flat_map(|a| {
            let raised = Mark {
                t: a.first_time,
                class: "raised",
                label: format!("{} raised: {}", a.rule, a.title),
            };
            let cleared = a.cleared_time.map(|t| Mark {
                t,
                class: "cleared",
                label: format!("{} cleared", a.rule),
            });
            std::iter::once(raised).chain(cleared)
        })
        .collect()
}

/// One curve of a chart.
pub(crate) struct Curve<'a> {
    pub label: &'a str,
    /// Its colour, by CSS class (`step`, `data`, `rate`, `loss`, `run0`..`run3`).
    pub class: &'a str,
    pub draw: Draw,
    pub points: &'a [Point],
}

#[derive(Clone, Copy, PartialEq)]
pub(crate) enum Draw {
    /// The mean, over the band between each bucket's min and max.
    Band,
    /// The mean alone (curves of several runs overlaid).
    Line,
    /// Filled down to zero: a part of the curve above it.
    Area,
}

/// An alert raised or cleared, on the time axis.
pub(crate) struct Mark {
    pub t: f64,
    pub class: &'static str,
    pub label: String,
}

const W: f64 = 720.0;
const H: f64 = 180.0;
const LEFT: f64 = 64.0;

/// One chart: the curves on a shared time axis from the first point to the last, from zero
/// to the largest value, with the alerts' marks.
pub(crate) fn chart(o: &mut String, title: &str, unit: &str, curves: &[Curve], marks: &[Mark]) {
    let all = || curves.iter().flat_map(|c| c.points.iter());
    let t0 = all().map(|p| p.t0).fold(f64::INFINITY, f64::min);
    let t1 = all().map(|p| p.t1).fold(f64::NEG_INFINITY, f64::max);
    let top = all().map(|p| p.max).fold(0.0, f64::max) * 1.05;
    if !t0.is_finite() || !t1.is_finite() || top <= 0.0 {
        return;
    }
    let span = (t1 - t0).max(1e-9);
    let x = |t: f64| LEFT + (t - t0) / span * (W - LEFT - 8.0);
    let y = |v: f64| 8.0 + (1.0 - v / top) * (H - 28.0);
    let _ = write!(
        o,
        "<figure><figcaption>{}{}</figcaption><svg class=\"chart\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\" role=\"img\">",
        esc(title),
        if unit.is_empty() {
            String::new()
        } else {
            format!(" <small>({})</small>", esc(unit))
        }
    );
    let _ = write!(
        o,
        "<line class=\"axis\" x1=\"{LEFT}\" y1=\"{:.1}\" x2=\"{W}\" y2=\"{:.1}\"/>",
        y(0.0),
        y(0.0)
    );
    let _ = write!(
        o,
        "<text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
        LEFT - 4.0,
        y(top / 1.05) + 4.0,
        num(top / 1.05)
    );
    let _ = write!(
        o,
        "<text class=\"tick\" x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"end\">0</text>",
        LEFT - 4.0,
        y(0.0) + 4.0
    );
    let _ = write!(
        o,
        "<text class=\"tick\" x=\"{W}\" y=\"{H}\" text-anchor=\"end\">{} of run</text>",
        duration(span)
    );
    for c in curves.iter().filter(|c| !c.points.is_empty()) {
        let mid = |p: &Point| (p.t0 + p.t1) / 2.0;
        if c.draw == Draw::Area {
            let _ = write!(o, "<polygon class=\"area-{}\" points=\"", c.class);
            let _ = write!(o, "{:.1},{:.1} ", x(mid(&c.points[0])), y(0.0));
            for p in c.points {
                let _ = write!(o, "{:.1},{:.1} ", x(mid(p)), y(p.mean));
            }
            let last = &c.points[c.points.len() - 1];
            let _ = write!(o, "{:.1},{:.1}\"/>", x(mid(last)), y(0.0));
            continue;
        }
        if c.draw == Draw::Band {
            // Up along the maxima, back along the minima.
            let _ = write!(o, "<polygon class=\"band-{}\" points=\"", c.class);
            for p in c.points {
                let _ = write!(o, "{:.1},{:.1} ", x(mid(p)), y(p.max));
            }
            for p in c.points.iter().rev() {
                let _ = write!(o, "{:.1},{:.1} ", x(mid(p)), y(p.min));
            }
            o.push_str("\"/>");
        }
        let _ = write!(o, "<polyline class=\"line-{}\" points=\"", c.class);
        for p in c.points {
            let _ = write!(o, "{:.1},{:.1} ", x(mid(p)), y(p.mean));
        }
        o.push_str("\"/>");
    }
    for m in marks.iter().filter(|m| m.t >= t0 && m.t <= t1) {
        let _ = write!(
            o,
            "<line class=\"mark-{}\" x1=\"{:.1}\" y1=\"8\" x2=\"{:.1}\" y2=\"{:.1}\"><title>{}</title></line>",
            m.class,
            x(m.t),
            x(m.t),
            y(0.0),
            esc(&m.label)
        );
    }
    o.push_str("</svg><p class=\"legend\">");
    for c in curves.iter().filter(|c| !c.points.is_empty()) {
        let _ = write!(o, "<i class=\"key line-{}\"></i>{} ", c.class, esc(c.label));
    }
    if marks.iter().any(|m| m.class != "pause") {
        o.push_str("<i class=\"key mark-raised\"></i>alert raised <i class=\"key mark-cleared\"></i>cleared ");
    }
    if marks.iter().any(|m| m.class == "pause") {
        o.push_str("<i class=\"key mark-pause\"></i>evaluation or checkpoint");
    }
    o.push_str("</p></figure>");
}

/// The forward stages, largest first, as bars of their mean, with share and trend.
fn stages(o: &mut String, r: &Report) {
    if r.stages.is_empty() {
        return;
    }
    let mut rows: Vec<_> = r.stages.iter().collect();
    rows.sort_by(|a, b| b.mean_ms.total_cmp(&a.mean_ms));
    let shown = rows.len().min(24);
    let top = rows.first().map_or(1.0, |s| s.mean_ms.max(1e-9));
    let _ = write!(
        o,
        "<section id=\"stages\"><h2>Forward stages <small>{shown} of {}, largest first</small></h2><table class=\"stages\"><tr><th>stage</th><th></th><th>mean</th><th>share</th><th>trend</th></tr>",
        rows.len()
    );
    for s in rows.iter().take(shown) {
        let w = (s.mean_ms / top * 300.0).max(1.0);
        let _ = write!(
            o,
            "<tr><td class=\"name\" style=\"padding-left:{}em\">{}</td><td><svg class=\"stagebar\" width=\"300\" height=\"12\" viewBox=\"0 0 300 12\"><rect class=\"part-stage\" width=\"{w:.1}\" height=\"12\"/></svg></td><td>{}</td><td>{}</td><td>{}</td></tr>",
            f64::from(s.depth),
            esc(&s.name),
            ms(s.mean_ms),
            s.share.map_or_else(|| "-".into(), pct),
            s.trend.map_or_else(|| "-".into(), |t| format!("{t:.2}x"))
        );
    }
    o.push_str("</table></section>\n");
}

/// Where the trainer's Python stacks were, per role: places, then the functions that held it.
fn stacks(o: &mut String, r: &Report) {
    let Some(st) = &r.stacks else {
        return;
    };
    let _ = write!(
        o,
        "<section id=\"stacks\"><h2>Python stacks <small>sampled over {:.0} s; shares are estimates</small></h2><table class=\"stages\"><tr><th>who</th><th>where</th><th>share</th></tr>",
        st.seconds
    );
    for (who, role) in [("main thread", &st.main), ("workers", &st.workers)] {
        if role.samples == 0 {
            continue;
        }
        for (place, share) in &role.places {
            let _ = write!(
                o,
                "<tr><td>{who} ({} samples)</td><td>{}</td><td>{}</td></tr>",
                role.samples,
                esc(place.words()),
                pct(*share)
            );
        }
        for f in &role.functions {
            let _ = write!(
                o,
                "<tr><td>{who}</td><td class=\"name\"><code>{}</code> {}:{}</td><td>{}</td></tr>",
                esc(&f.function),
                esc(&f.file),
                f.line,
                pct(f.share)
            );
        }
    }
    o.push_str("</table>");
    for why in st.refused.iter().chain(&st.notes) {
        let _ = write!(o, "<p>{}</p>", esc(why));
    }
    o.push_str("</section>\n");
}

fn checklist(o: &mut String, r: &Report) {
    if r.checklist.is_empty() {
        return;
    }
    o.push_str("<section id=\"checklist\"><h2>Checklist</h2><ul class=\"checklist\">");
    for i in &r.checklist {
        let (class, mark) = match i.status {
            Status::Pass => ("pass", "pass"),
            Status::Fail => ("fail", "FAIL"),
            Status::Unknown => ("unknown", "?"),
        };
        let _ = write!(
            o,
            "<li class=\"{class}\"><b>{mark}</b> {}{}</li>",
            esc(i.label),
            i.value
                .as_ref()
                .map_or_else(String::new, |v| format!(": {}", esc(v)))
        );
    }
    o.push_str("</ul></section>\n");
}

fn sources(o: &mut String, r: &Report) {
    o.push_str("<section id=\"sources\"><h2>Sources</h2><table><tr><th>file</th><th>format</th><th>lines</th><th>records</th><th>unparsed</th><th>rejected</th></tr>");
    for s in &r.sources {
        let _ = write!(
            o,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&s.path),
            s.format.unwrap_or("-"),
            s.lines,
            s.records,
            s.unparsed,
            s.rejected
        );
    }
    o.push_str("</table>");
    if !r.unparsed_shapes.is_empty() {
        o.push_str("<h3>Not understood</h3><p>The most frequent shapes of unparsed lines (numbers as N), with the first example of each.</p><table><tr><th>lines</th><th>shape</th><th>first example</th></tr>");
        for u in &r.unparsed_shapes {
            let _ = write!(
                o,
                "<tr><td>{}</td><td><code>{}</code></td><td>{}:{}: <code>{}</code></td></tr>",
                u.count,
                esc(&u.shape),
                esc(&u.source),
                u.line,
                esc(&u.example)
            );
        }
        o.push_str("</table>");
    }
    o.push_str("</section>\n");
}

/// Text as HTML text or attribute value: a stage named `<script>` stays text.
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const CSS: &str = "
:root{color-scheme:light dark;--fg:#1d2330;--muted:#5b6475;--bg:#fff;--line:#d5d9e0;
--step:#2f6fd6;--data:#e39b22;--rate:#2a9d6f;--loss:#8a55c9;--unlogged:#9aa3b2;--forward:#2f6fd6;
--warn:#b8620b;--crit:#c8312b;--info:#2f6fd6;--ok:#2a9d6f}
@media (prefers-color-scheme:dark){:root{--fg:#e4e7ee;--muted:#9aa3b2;--bg:#15181e;--line:#333a46;
--step:#6ea2ff;--data:#f2b44c;--rate:#4fc793;--loss:#b58cf0;--unlogged:#6b7484;--forward:#6ea2ff;
--warn:#f0a04b;--crit:#ff6b61;--info:#6ea2ff;--ok:#4fc793}}
body{font:15px/1.45 system-ui,sans-serif;color:var(--fg);background:var(--bg);max-width:780px;margin:2em auto;padding:0 1em}
h1{font-size:1.5em;margin:0}h2{font-size:1.15em;border-bottom:1px solid var(--line);padding-bottom:.2em;margin-top:1.6em}
small,.meta,.legend,.tick{color:var(--muted);font-size:.85em}code{font-size:.9em}
.verdict{font-size:1.1em}.sev-warn .sev,.verdict.sev-warn b{color:var(--warn)}.sev-crit .sev,.verdict.sev-crit b{color:var(--crit)}
.sev-info .sev,.verdict.sev-info b{color:var(--info)}.sev{text-transform:uppercase;font-size:.8em}
.alert{border-left:3px solid var(--line);padding:.1em .8em;margin:.8em 0}.alert.sev-warn{border-color:var(--warn)}.alert.sev-crit{border-color:var(--crit)}
.alert h3{font-size:1em;margin:.3em 0}
table{border-collapse:collapse;font-size:.9em}td,th{padding:.15em .6em;text-align:left}td:nth-child(n+3){text-align:right;font-variant-numeric:tabular-nums}
svg text{fill:var(--fg);font-size:12px}.tick{fill:var(--muted)}.axis{stroke:var(--line)}
.part-data{fill:var(--data)}.part-rest{fill:var(--unlogged);opacity:.35}.part-forward,.part-stage{fill:var(--forward)}.part-unlogged{fill:var(--unlogged)}
.part-loss,.part-backward,.part-optimizer,.part-copy{fill:var(--rate)}
.line-step,.line-rate,.line-loss{fill:none;stroke-width:1.5}.line-step{stroke:var(--step)}.line-rate{stroke:var(--rate)}.line-loss{stroke:var(--loss)}
.band-step{fill:var(--step);opacity:.15}.band-rate{fill:var(--rate);opacity:.15}.band-loss{fill:var(--loss);opacity:.15}
.area-data{fill:var(--data);opacity:.7}.mark-raised{stroke:var(--crit);stroke-dasharray:3 3}.mark-cleared{stroke:var(--ok);stroke-dasharray:3 3}.mark-pause{stroke:var(--unlogged);stroke-dasharray:1 2}
.key{display:inline-block;width:.8em;height:.8em;margin:0 .3em 0 .8em;vertical-align:middle}
i.line-step{background:var(--step)}i.line-data{background:var(--data)}i.line-rate{background:var(--rate)}i.line-loss{background:var(--loss)}
i.mark-raised{background:var(--crit)}i.mark-cleared{background:var(--ok)}i.mark-pause{background:var(--unlogged)}i.part-rest{background:var(--unlogged);opacity:.35}i.part-data{background:var(--data)}i.part-forward,i.part-stage{background:var(--forward)}
i.part-unlogged{background:var(--unlogged)}i.part-loss,i.part-backward,i.part-optimizer,i.part-copy{background:var(--rate)}
.checklist{list-style:none;padding:0}.checklist .pass b{color:var(--ok)}.checklist .fail b{color:var(--crit)}.checklist .unknown b{color:var(--muted)}
.line-run0,.line-run1,.line-run2,.line-run3{fill:none;stroke-width:1.5}.line-run0{stroke:var(--step)}.line-run1{stroke:var(--data)}
.line-run2{stroke:var(--rate)}.line-run3{stroke:var(--loss)}i.line-run0{background:var(--step)}i.line-run1{background:var(--data)}
i.line-run2{background:var(--rate)}i.line-run3{background:var(--loss)}
figure{margin:1em 0}figcaption{font-weight:600;margin-bottom:.3em}svg{max-width:100%;height:auto}
@media print{body{margin:0;max-width:none}section{break-inside:avoid}}
";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_text_is_escaped() {
        assert_eq!(
            esc("<script>alert('x') & \"y\"</script>"),
            "&lt;script&gt;alert(&#39;x&#39;) &amp; &quot;y&quot;&lt;/script&gt;"
        );
    }
}
