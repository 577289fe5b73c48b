//! The cluster table's sinks: `--once` as text or JSON (`text`), and the live view (`view`).
//! Both draw a row's cells from `cells`, so the two always say the same.

pub mod text;
pub mod view;

use serde::Serialize;

use crate::common::units::{gib, ms};
use crate::nodes::rows::{Cluster, Job, Row, State};
use crate::sink::ui::widgets::ago;

/// Bumped on any change a consumer of `--once --format json` would notice.
pub const SCHEMA_VERSION: u32 = 1;

/// The columns, in the order `cells` gives them.
pub const COLUMNS: usize = 14;
pub const HEADS: [&str; COLUMNS] = [
    "NODE",
    "STATE",
    "STEP",
    "LAG",
    "STEP TIME",
    "TREND",
    "RATE",
    "DATA",
    "GPU",
    "POWER",
    "MEM",
    "VERDICT",
    "ALERTS",
    "SCRAPE/STEP",
];
/// Where the trend and the verdict are among them.
pub const TREND: usize = 5;
pub const VERDICT: usize = 11;

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
pub fn cells(r: &Row) -> [String; COLUMNS] {
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
    let rate = match (r.tokens_per_s, r.samples_per_s, r.iterations_per_s) {
        (Some(t), _, _) => Some(format!("{} tok/s", short(t))),
        (None, Some(s), _) => Some(format!("{} sam/s", short(s))),
        (None, None, Some(i)) => Some(format!("{} it/s", short(i))),
        (None, None, None) => None,
    };
    // The most severe active alerts, and how many others.
    let alerts = r.alerts.first().map(|top| {
        let same = r
            .alerts
            .iter()
            .filter(|a| a.severity == top.severity)
            .count();
        let others = r.alerts.len() - same;
        let more = if others > 0 {
            format!(" +{others}")
        } else {
            String::new()
        };
        format!("{same} {}{more}", top.severity.name())
    });
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
        opt(rate),
        opt(r.data_share.map(pct0)),
        opt(gpu.and_then(|g| g.util).map(pct0)),
        opt(power),
        opt(gpu.and_then(|g| g.memory_used_bytes).map(|b| gib(b as u64))),
        opt(verdict),
        opt(alerts),
        fresh,
    ]
}

/// A rate in three figures at most: `950`, `12.5k`, `1.2M`.
fn short(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.1}M", v / 1e6)
    } else if v >= 1e4 {
        format!("{:.0}k", v / 1e3)
    } else if v >= 1e3 {
        format!("{:.1}k", v / 1e3)
    } else if v >= 10.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::diagnose::Severity;
    use crate::nodes::rows::AlertInfo;

    #[test]
    fn a_rows_cells_say_what_is_wrong_in_few_characters() {
        let alert = |rule: &str, severity| AlertInfo {
            rule: rule.into(),
            severity,
            verdict: false,
            title: String::new(),
            evidence: Vec::new(),
            actions: Vec::new(),
        };
        let r = Row {
            name: "n7".into(),
            state: Some(State::Up),
            straggler: true,
            step: Some(1200.0),
            total_steps: Some(5000.0),
            lag: Some(37.0),
            step_time_s: Some(0.4123),
            trend: Some(1.12),
            tokens_per_s: Some(52_400.0),
            samples_per_s: Some(12.0),
            data_share: Some(0.334),
            verdict: Some("data_loading_bound".into()),
            alerts: vec![
                alert("data_loading_bound", Severity::Crit),
                alert("config_hint", Severity::Info),
                alert("low_gpu_util", Severity::Warn),
            ],
            scrape_age_s: Some(4.0),
            step_age_s: Some(75.0),
            ..Row::default()
        };
        let c = cells(&r);
        assert_eq!(
            c,
            [
                "n7",
                "slow",
                "1200/5000",
                "-37",
                "412.3 ms",
                "+12%",
                "52k tok/s",
                "33%",
                "",
                "",
                "",
                "data_loading_bound",
                "1 crit +2",
                "4s/1m",
            ]
            .map(String::from)
        );
    }
}
