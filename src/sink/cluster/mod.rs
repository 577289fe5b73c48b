//! The cluster table's sinks: `--once` as text or JSON (`text`), and the live view (`view`).
//! Both draw a row's cells from `cells`, so the two always say the same.

pub mod text;
pub mod view;

use serde::Serialize;

use crate::cluster::table::{Cluster, Job, Row, State};
use crate::common::units::{gib, ms};
use crate::sink::ui::widgets::ago;

/// Bumped on any change a consumer of `--once --format json` would notice.
pub const SCHEMA_VERSION: u32 = 1;

/// The column heads, in the order `cells` gives them.
pub const HEADS: [&str; 12] = [
    "NODE",
    "STATE",
    "STEP",
    "LAG",
    "STEP TIME",
    "TREND",
    "DATA",
    "GPU",
    "POWER",
    "MEM",
    "VERDICT",
    "SCRAPE/STEP",
];

/// A row's state in one word: what is wrong first.
pub fn state(r: &Row) -> &'static str {
    match r.state {
        Some(State::Down) => "down",
        Some(State::Gone) => "gone",
        Some(State::Stale) => "stale",
        _ if r.straggler => "slow",
        _ if r.lagging => "lags",
        Some(State::Up) => "ok",
        None => "",
    }
}

/// A row's cells, under `HEADS`.
pub fn cells(r: &Row) -> [String; 12] {
    let opt = |v: Option<String>| v.unwrap_or_default();
    let step = match (r.step, r.total_steps) {
        (Some(s), Some(t)) => format!("{s:.0}/{t:.0}"),
        (Some(s), None) => format!("{s:.0}"),
        _ => String::new(),
    };
    let gpu = r.gpu.as_ref();
    let power = gpu.and_then(|g| {
        g.power_share
            .map(pct0)
            .or_else(|| g.power_w.map(|w| format!("{w:.0} W")))
    });
    // The rule alone: the live view colours it by severity, JSON and the node's alerts say it.
    let verdict = r.verdict.clone().or_else(|| r.why.clone());
    let fresh = match (r.scrape_age_s, r.step_age_s) {
        (Some(a), Some(b)) => format!("{}/{}", ago(a), ago(b)),
        (Some(a), None) => format!("{}/-", ago(a)),
        (None, Some(b)) => format!("-/{}", ago(b)),
        (None, None) => String::new(),
    };
    [
        r.name.clone(),
        state(r).to_string(),
        step,
        opt(r.lag.filter(|l| *l > 0.0).map(|l| format!("-{l:.0}"))),
        opt(r.step_time_s.map(|s| ms(s * 1000.0))),
        opt(r.trend.map(|t| format!("{:+.0}%", (t - 1.0) * 100.0))),
        opt(r.data_share.map(pct0)),
        opt(gpu.and_then(|g| g.util).map(pct0)),
        opt(power),
        opt(gpu.and_then(|g| g.memory_used_bytes).map(|b| gib(b as u64))),
        opt(verdict),
        fresh,
    ]
}

/// A share with no decimals: a table cell.
fn pct0(v: f64) -> String {
    format!("{:.0}%", v * 100.0)
}

/// A job's summary line: nodes up, step times across them, the slowest, shared verdicts.
pub fn summary_line(j: &Job) -> String {
    summary_parts(j).join(" · ")
}

/// The summary's parts, for a view that wraps them to its width.
pub fn summary_parts(j: &Job) -> Vec<String> {
    let s = &j.summary;
    let mut parts = vec![match (&j.job_id, &j.job_name) {
        (Some(id), Some(name)) => format!("job {id} ({name})"),
        (Some(id), None) => format!("job {id}"),
        (None, Some(name)) => format!("job {name}"),
        (None, None) => "no job label".to_string(),
    }];
    parts.push(format!("{} of {} nodes up", s.up, s.nodes));
    if let (Some(p50), Some(p95), Some(max)) =
        (s.step_time_p50_s, s.step_time_p95_s, s.step_time_max_s)
    {
        parts.push(format!(
            "step time p50 {} p95 {}",
            ms(p50 * 1000.0),
            ms(p95 * 1000.0)
        ));
        let slowest = s
            .slowest
            .as_ref()
            .map(|n| format!(" ({n})"))
            .unwrap_or_default();
        parts.push(format!("max {}{slowest}", ms(max * 1000.0)));
    }
    for v in &s.verdicts {
        parts.push(format!("{} of {} nodes {}", v.nodes, s.up, v.rule));
    }
    parts
}

/// The line above the table: where from, how many queries, how long they took.
pub fn source_line(url: &str, c: &Cluster) -> String {
    format!(
        "steptop cluster · {url} · {} queries in {:.0} ms",
        c.queries,
        c.refresh_seconds * 1000.0
    )
}

#[derive(Serialize)]
struct JsonOut<'a> {
    prometheus: &'a str,
    #[serde(flatten)]
    cluster: &'a Cluster,
    kind: &'static str,
    schema: u32,
}

/// `--once --format json`: the whole table as one object.
pub fn json(url: &str, c: &Cluster) -> String {
    let out = JsonOut {
        prometheus: url,
        cluster: c,
        kind: "cluster",
        schema: SCHEMA_VERSION,
    };
    // Serializing plain structs of strings and numbers cannot fail.
    serde_json::to_string_pretty(&out).unwrap_or_default()
}
