//! `steptop cluster --once`: the table as aligned text, a summary line above each job's rows,
//! and what could not be read below.

use super::{COLUMNS, HEADS, cells, source_line, summary_line};
use crate::common::display;
use crate::nodes::rows::Cluster;

pub fn render(url: &str, c: &Cluster) -> String {
    let mut out = source_line(url, c);
    out.push('\n');
    if c.jobs.is_empty() {
        out.push_str(
            "no steptop node found: is each node running `steptop --headless --metrics-addr` \
             and is it in Prometheus's scrape config (see docs/metrics.md)?\n",
        );
    }
    for j in &c.jobs {
        out.push('\n');
        out.push_str(&summary_line(j));
        out.push('\n');
        let rows: Vec<[String; COLUMNS]> = j.rows.iter().map(cells).collect();
        let mut widths = HEADS.map(display::width);
        for r in &rows {
            for (w, cell) in widths.iter_mut().zip(r) {
                *w = (*w).max(display::width(&display::shown(cell, display::Tabs::Space)));
            }
        }
        let line = |cells: &[String]| {
            let mut l = String::new();
            for (cell, w) in cells.iter().zip(widths) {
                let cell = display::shown(cell, display::Tabs::Space);
                l.push_str(&cell);
                l.push_str(&" ".repeat(w - display::width(&cell) + 2));
            }
            l.trim_end().to_string() + "\n"
        };
        out.push_str(&line(&HEADS.map(String::from)));
        for r in &rows {
            out.push_str(&line(r));
        }
    }
    for p in &c.problems {
        out.push_str(&format!(
            "\nproblem: {}",
            display::shown(p, display::Tabs::Space)
        ));
    }
    if !c.problems.is_empty() {
        out.push('\n');
    }
    out
}
