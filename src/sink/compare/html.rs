//! The comparison as one self-contained HTML page, built like report's: the findings on top,
//! the figures side by side, each run's step time and throughput overlaid on the time since
//! it started, and the runs' step breakdowns one under the other on the same scale.

use std::fmt::Write;

use super::Comparison;
use super::render::{cell, table};
use crate::model::window::Point;
use crate::sink::report::{Curve, Draw, chart, html_escape as esc, page_start, share_bar};

/// The page.
pub fn render(c: &Comparison) -> String {
    let mut o = page_start("steptop compare");
    o.push_str("<header><h1>steptop compare</h1><p>");
    for (i, r) in c.runs.iter().enumerate() {
        let role = if i == 0 { " (the baseline)" } else { "" };
        let _ = write!(
            o,
            "<i class=\"key line-run{}\"></i><b>{}</b>{role}: {}<br>",
            i % 4,
            esc(&r.label),
            esc(&r.paths.join(", "))
        );
    }
    o.push_str("</p></header>\n");
    findings(&mut o, c);
    figures(&mut o, c);
    curves(&mut o, c);
    breakdowns(&mut o, c);
    if let Some(rows) = super::render::stacks_rows(c) {
        o.push_str("<section id=\"stacks\"><h2>Python stacks <small>sampled; shares are estimates</small></h2><ul>");
        for (label, top) in rows {
            let _ = write!(o, "<li><b>{}</b>: {}</li>", esc(&label), esc(&top));
        }
        o.push_str("</ul></section>\n");
    }
    for n in &c.notes {
        let _ = write!(o, "<p class=\"note\">{}</p>", esc(n));
    }
    o.push_str("</body></html>\n");
    o
}

fn findings(o: &mut String, c: &Comparison) {
    o.push_str("<section id=\"findings\"><h2>What changed</h2>");
    if c.findings.is_empty() {
        o.push_str("<p>No finding: nothing moved beyond the runs' own noise.</p>");
    }
    for f in &c.findings {
        let _ = write!(
            o,
            "<article class=\"alert sev-{}\"><h3><span class=\"sev\">{}</span> {}</h3><p class=\"meta\"><code>{}</code> {}</p><ul>",
            f.severity,
            f.severity,
            esc(&f.title),
            f.id,
            esc(&f.run)
        );
        for e in &f.evidence {
            let _ = write!(o, "<li>{}</li>", esc(e));
        }
        o.push_str("</ul>");
        if !f.actions.is_empty() {
            o.push_str("<ol>");
            for a in &f.actions {
                let _ = write!(o, "<li>{}</li>", esc(a));
            }
            o.push_str("</ol>");
        }
        o.push_str("</article>");
    }
    o.push_str("</section>\n");
}

fn figures(o: &mut String, c: &Comparison) {
    o.push_str("<section id=\"figures\"><h2>Figures</h2><table><tr><th>figure</th>");
    for r in &c.runs {
        let _ = write!(o, "<th>{}</th>", esc(&r.label));
    }
    o.push_str("</tr>");
    for (figure, base, cells) in table(c) {
        let _ = write!(
            o,
            "<tr><td><code>{}</code></td><td>{base}</td>",
            esc(&figure)
        );
        for ch in cells {
            let _ = write!(o, "<td>{}</td>", ch.map_or_else(|| "-".into(), cell));
        }
        o.push_str("</tr>");
    }
    o.push_str(
        "</table><p class=\"meta\">~: within the noise (the median step's uncertainty over the runs' steps for it and the rates; the runs' step-to-step spread for the rest).</p></section>\n",
    );
}

/// Each run's curve from its own first point: runs started at different times line up.
fn from_start(points: &[Point]) -> Vec<Point> {
    let t0 = points.first().map_or(0.0, |p| p.t0);
    points
        .iter()
        .map(|p| Point {
            t0: p.t0 - t0,
            t1: p.t1 - t0,
            ..*p
        })
        .collect()
}

fn curves(o: &mut String, c: &Comparison) {
    if c.drawings.is_empty() {
        return;
    }
    o.push_str("<section id=\"curves\"><h2>Over each run, from its start</h2>");
    let shifted = |f: fn(&crate::sink::report::Curves) -> &Vec<Point>| -> Vec<Vec<Point>> {
        c.drawings
            .iter()
            .map(|d| from_start(f(&d.curves)))
            .collect()
    };
    let step = shifted(|k| &k.step_ms);
    let rate = shifted(|k| &k.rate);
    let classes = ["run0", "run1", "run2", "run3"];
    let rate_unit = c.drawings[0].curves.rate_unit;
    for (title, unit, series) in [("Step time", "ms", &step), ("Throughput", rate_unit, &rate)] {
        let drawn: Vec<Curve> = series
            .iter()
            .enumerate()
            .map(|(i, points)| Curve {
                label: &c.runs[i].label,
                class: classes[i % classes.len()],
                draw: Draw::Line,
                points,
            })
            .collect();
        chart(o, title, unit, &drawn, &[]);
    }
    o.push_str("</section>\n");
}

fn breakdowns(o: &mut String, c: &Comparison) {
    if c.drawings.iter().all(|d| d.parts.is_empty()) {
        return;
    }
    o.push_str("<section id=\"breakdowns\"><h2>Where a step's time goes, run by run</h2>");
    for (r, d) in c.runs.iter().zip(&c.drawings) {
        let _ = write!(o, "<p class=\"meta\">{}</p>", esc(&r.label));
        share_bar(o, &d.parts);
    }
    o.push_str("<p class=\"legend\"><i class=\"key part-data\"></i>data <i class=\"key part-forward\"></i>forward <i class=\"key part-loss\"></i>other logged parts <i class=\"key part-unlogged\"></i>unlogged</p></section>\n");
}
