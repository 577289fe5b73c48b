//! The cluster table from one refresh's answers: a row per node (and per rank, where a node
//! logs several), problems first, with a summary per job. Pure: the same answers give the
//! same table, whatever the clock; ages are measured from Prometheus's own time.

use std::collections::BTreeMap;

use serde::Serialize;

use super::fetch::{Fetched, instance_host};
use super::queries::{DCGM_HOST_LABELS, HISTORY_POINTS, HISTORY_SECONDS};
use crate::common::units::duration;
use crate::diagnose::Severity;
use crate::input::prometheus::{Answer, Failure, Series};
use crate::model::window::nearest_rank;

/// When a node counts as stale: no step for this many of its usual step times, and at least
/// `stale_after` seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Limits {
    pub stale_after: f64,
    pub stale_factor: f64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            stale_after: 60.0,
            stale_factor: 10.0,
        }
    }
}

/// A unit's step time over the median of the others' at which it is a straggler.
pub const STRAGGLER_RATIO: f64 = 1.2;
/// Seconds of steps (its lag times the median step time) behind the furthest at which a unit
/// lags.
pub const LAG_SECONDS: f64 = 30.0;

#[derive(Clone, Debug, Default, Serialize)]
pub struct Cluster {
    /// Prometheus's time of the answers, Unix seconds.
    pub time: f64,
    pub queries: u32,
    pub refresh_seconds: f64,
    /// By job, the job with the worst node first.
    pub jobs: Vec<Job>,
    /// Queries that failed and Prometheus's warnings: the table may be partial.
    pub problems: Vec<String>,
    /// Why the figures could not be read at all, when they could not: the table is empty
    /// for want of an answer, not for want of nodes.
    #[serde(skip)]
    pub unreadable: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct Job {
    pub job_id: Option<String>,
    pub job_name: Option<String>,
    pub summary: Summary,
    pub rows: Vec<Row>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Summary {
    pub nodes: usize,
    /// Nodes Prometheus still scrapes (stale ones included).
    pub up: usize,
    /// Across the nodes that are up: their recent median step times.
    pub step_time_p50_s: Option<f64>,
    pub step_time_p95_s: Option<f64>,
    pub step_time_max_s: Option<f64>,
    pub slowest: Option<String>,
    /// Verdicts and how many nodes share each, most shared first.
    pub verdicts: Vec<Shared>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Shared {
    pub rule: String,
    pub nodes: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    /// Its scrape fails (`up` is 0).
    Down,
    /// Prometheus no longer has its figures: the target went away or stopped answering.
    Gone,
    /// Scraped, but no new step for too long.
    Stale,
    Up,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct Row {
    /// The host, with `/rN` for one rank of a node that logs several.
    pub name: String,
    pub instance: String,
    pub host: Option<String>,
    pub node_rank: Option<u32>,
    pub process_rank: Option<u32>,
    /// The logged rank, on a rank's row.
    pub rank: Option<u32>,
    pub state: Option<State>,
    /// Why it is down, gone or stale, in words.
    pub why: Option<String>,
    pub straggler: bool,
    pub lagging: bool,
    pub step: Option<f64>,
    pub total_steps: Option<f64>,
    /// Steps behind the furthest unit of its job.
    pub lag: Option<f64>,
    pub step_time_s: Option<f64>,
    pub step_time_p95_s: Option<f64>,
    /// Step time of the newest third of the history over its oldest third.
    pub trend: Option<f64>,
    /// Step time over the history, one slot a point (for the sparkline).
    #[serde(skip)]
    pub history: Vec<Option<f64>>,
    pub samples_per_s: Option<f64>,
    pub tokens_per_s: Option<f64>,
    pub iterations_per_s: Option<f64>,
    pub data_share: Option<f64>,
    pub verdict: Option<String>,
    pub verdict_severity: Option<Severity>,
    /// Active alerts, most severe first.
    pub alerts: Vec<AlertInfo>,
    pub gpu: Option<Gpus>,
    pub scrape_age_s: Option<f64>,
    pub step_age_s: Option<f64>,
    /// Its job (the rows are grouped by it: `Job` says it once).
    #[serde(skip)]
    pub job_id: Option<String>,
    #[serde(skip)]
    pub job_name: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AlertInfo {
    pub rule: String,
    pub severity: Severity,
    pub verdict: bool,
    pub title: String,
    pub evidence: Vec<String>,
    pub actions: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Gpus {
    /// `dcgm` (dcgm-exporter's series of the host) or `steptop` (its own NVML readings).
    pub source: &'static str,
    pub count: usize,
    /// Mean utilization, 0..1.
    pub util: Option<f64>,
    /// Mean graphics-engine activity (DCGM's profiling field), 0..1.
    pub engine_active: Option<f64>,
    pub power_w: Option<f64>,
    pub power_limit_w: Option<f64>,
    pub power_share: Option<f64>,
    pub memory_used_bytes: Option<f64>,
    pub memory_total_bytes: Option<f64>,
}

/// One node's figures as the answers give them.
#[derive(Default)]
struct Node {
    labels: BTreeMap<String, String>,
    figures: BTreeMap<String, f64>,
    ranks: BTreeMap<u32, (Option<f64>, Option<f64>)>,
    alerts: Vec<AlertInfo>,
    gpus: BTreeMap<String, BTreeMap<String, f64>>,
    scraped: Option<f64>,
    steps: Vec<(f64, f64)>,
    step_times: Vec<(f64, f64)>,
    present: bool,
}

impl Node {
    fn label(&self, name: &str) -> Option<&str> {
        self.labels.get(name).map(String::as_str)
    }

    fn figure(&self, name: &str) -> Option<f64> {
        self.figures.get(name).copied().filter(|v| v.is_finite())
    }

    fn host(&self) -> Option<&str> {
        self.label("host")
    }
}

/// The node a series belongs to: its target, else its host.
fn key(s: &Series) -> Option<String> {
    s.label("instance")
        .or_else(|| s.label("host"))
        .map(str::to_string)
}

/// The labels that say which node and job, kept from whichever series has them.
const NODE_LABELS: [&str; 6] = [
    "instance",
    "host",
    "job_id",
    "job_name",
    "node_rank",
    "process_rank",
];

/// Builds the table from one refresh.
pub fn build(f: &Fetched, limits: Limits) -> Cluster {
    let mut problems = Vec::new();
    let mut answer = |what: &str, a: &Result<Answer, Failure>| -> Option<Answer> {
        match a {
            Ok(a) => {
                problems.extend(a.warnings.iter().map(|w| format!("{what}: {w}")));
                Some(a.clone())
            }
            Err(e) => {
                problems.push(format!("{what}: {e}"));
                None
            }
        }
    };
    let figures = answer("figures", &f.figures);
    let scraped = answer("scrape times", &f.scraped);
    let up = answer("up", &f.up);
    let history = answer("history", &f.history);
    let dcgm = f.dcgm.as_ref().and_then(|a| answer("dcgm-exporter", a));

    let mut nodes: BTreeMap<String, Node> = BTreeMap::new();
    for s in figures.iter().flat_map(|a| &a.series) {
        let Some(n) = node_of(&mut nodes, s) else {
            continue;
        };
        n.present = true;
        fold_figure(n, s);
    }
    for s in history.iter().flat_map(|a| &a.series) {
        let Some(n) = node_of(&mut nodes, s) else {
            continue;
        };
        let points = s.points.iter().map(|p| (p.time, p.value)).collect();
        match s.name() {
            "steptop_step" => n.steps = points,
            _ => n.step_times = points,
        }
    }
    for s in scraped.iter().flat_map(|a| &a.series) {
        if let (Some(k), Some(v)) = (key(s), s.value())
            && let Some(n) = nodes.get_mut(&k)
        {
            n.scraped = Some(v);
        }
    }
    let mut ups: BTreeMap<String, f64> = BTreeMap::new();
    for s in up.iter().flat_map(|a| &a.series) {
        if let (Some(i), Some(v)) = (s.label("instance"), s.value()) {
            let e = ups.entry(i.to_string()).or_insert(v);
            *e = e.max(v);
        }
    }
    let dcgm = dcgm_by_host(dcgm.as_ref());

    let mut rows: Vec<Row> = nodes
        .iter()
        .flat_map(|(k, n)| node_rows(k, n, f.now, limits, ups.get(k).copied(), &dcgm))
        .collect();
    flag_slow(&mut rows);
    Cluster {
        time: f.now,
        queries: f.queries,
        refresh_seconds: f.seconds,
        jobs: group(rows),
        problems,
        unreadable: f.figures.as_ref().err().map(|e| e.message.clone()),
    }
}

/// The node of a series, its node labels kept.
fn node_of<'a>(nodes: &'a mut BTreeMap<String, Node>, s: &Series) -> Option<&'a mut Node> {
    let n = nodes.entry(key(s)?).or_default();
    for l in NODE_LABELS {
        if let Some(v) = s.label(l) {
            n.labels
                .entry(l.to_string())
                .or_insert_with(|| v.to_string());
        }
    }
    Some(n)
}

/// One series of the figures answer into its node.
fn fold_figure(n: &mut Node, s: &Series) {
    let Some(v) = s.value() else { return };
    let name = s.name().trim_start_matches("steptop_");
    match name {
        "rank_step" | "rank_step_time_seconds" => {
            if let Some(r) = s.label("rank").and_then(|r| r.parse().ok()) {
                let e = n.ranks.entry(r).or_default();
                if name == "rank_step" {
                    e.0 = Some(v);
                } else {
                    e.1 = Some(v);
                }
            }
        }
        "alert_info" => n.alerts.push(AlertInfo {
            rule: s.label("rule").unwrap_or_default().to_string(),
            severity: severity(s.label("severity")),
            verdict: s.label("verdict") == Some("true"),
            title: s.label("title").unwrap_or_default().to_string(),
            evidence: lines(s.label("evidence")),
            actions: lines(s.label("actions")),
        }),
        gpu if gpu.starts_with("gpu_") => {
            let id = s.label("gpu").unwrap_or_default().to_string();
            n.gpus.entry(id).or_default().insert(gpu.to_string(), v);
        }
        other => {
            n.figures.insert(other.to_string(), v);
        }
    }
}

fn severity(s: Option<&str>) -> Severity {
    match s {
        Some("crit") => Severity::Crit,
        Some("warn") => Severity::Warn,
        _ => Severity::Info,
    }
}

fn lines(s: Option<&str>) -> Vec<String> {
    s.into_iter()
        .flat_map(|s| s.split('\n'))
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

/// dcgm-exporter's readings by host, then by GPU, then by field.
type DcgmByHost = BTreeMap<String, BTreeMap<String, BTreeMap<String, f64>>>;

fn dcgm_by_host(a: Option<&Answer>) -> DcgmByHost {
    let mut out = DcgmByHost::new();
    for s in a.iter().flat_map(|a| &a.series) {
        let host = DCGM_HOST_LABELS.iter().find_map(|l| s.label(l));
        let gpu = s.label("UUID").or_else(|| s.label("gpu"));
        if let (Some(host), Some(gpu), Some(v)) = (host, gpu, s.value()) {
            out.entry(host.to_string())
                .or_default()
                .entry(gpu.to_string())
                .or_default()
                .insert(s.name().to_string(), v);
        }
    }
    out
}

/// A node's row, then its ranks' rows when it logs several.
fn node_rows(
    k: &str,
    n: &Node,
    now: f64,
    limits: Limits,
    up: Option<f64>,
    dcgm: &DcgmByHost,
) -> Vec<Row> {
    let host = n.host().map(str::to_string);
    let instance = n.label("instance").unwrap_or(k).to_string();
    let number = |l: &str| n.label(l).and_then(|v| v.parse().ok());
    let last_history_time = n.steps.last().map(|p| p.0);
    let step_time = n.figure("step_time_p50_seconds");
    let step_age = n
        .figure("last_step_seen_timestamp_seconds")
        .or_else(|| last_change(&n.steps))
        .map(|t| (now - t).max(0.0));
    let alerts = {
        let mut a = n.alerts.clone();
        a.sort_by(|x, y| y.severity.cmp(&x.severity).then(x.rule.cmp(&y.rule)));
        a
    };
    let verdict = alerts
        .iter()
        .find(|a| a.verdict)
        .or_else(|| alerts.first())
        .map(|a| (a.rule.clone(), a.severity));
    let (state, why) = if !n.present {
        let ago = last_history_time.map(|t| format!(" for {}", duration(now - t)));
        match up {
            Some(u) if u < 1.0 => (
                State::Down,
                format!("Prometheus cannot scrape it{}", ago.unwrap_or_default()),
            ),
            _ => (
                State::Gone,
                format!("no figures{}", ago.unwrap_or_default()),
            ),
        }
    } else {
        let limit = step_time.map_or(limits.stale_after, |t| {
            (t * limits.stale_factor).max(limits.stale_after)
        });
        let stalled = alerts.iter().find(|a| a.rule == "stalled");
        match (step_age, stalled) {
            (_, Some(a)) => (State::Stale, a.title.clone()),
            (Some(age), None) if age > limit => {
                (State::Stale, format!("no new step for {}", duration(age)))
            }
            _ => (State::Up, String::new()),
        }
    };
    let name = host.clone().unwrap_or_else(|| instance.clone());
    let row = Row {
        name: name.clone(),
        instance,
        host: host.clone(),
        node_rank: number("node_rank"),
        process_rank: number("process_rank"),
        rank: None,
        state: Some(state),
        why: Some(why).filter(|w| !w.is_empty()),
        straggler: false,
        lagging: false,
        step: n.figure("step").or_else(|| n.steps.last().map(|p| p.1)),
        total_steps: n.figure("total_steps"),
        lag: None,
        step_time_s: step_time,
        step_time_p95_s: n.figure("step_time_p95_seconds"),
        trend: trend(&n.step_times),
        history: slots(&n.step_times, now),
        samples_per_s: n.figure("samples_per_second"),
        tokens_per_s: n.figure("tokens_per_second"),
        iterations_per_s: n.figure("iterations_per_second"),
        data_share: n.figure("data_wait_ratio"),
        verdict: verdict.as_ref().map(|v| v.0.clone()),
        verdict_severity: verdict.map(|v| v.1),
        alerts,
        gpu: gpus(n, host.as_deref(), dcgm),
        scrape_age_s: n.scraped.map(|t| (now - t).max(0.0)),
        step_age_s: step_age,
        job_id: n.label("job_id").map(str::to_string),
        job_name: n.label("job_name").map(str::to_string),
    };
    let mut out = vec![row];
    if n.ranks.len() > 1 {
        let node = &out[0];
        let ranks: Vec<Row> = n
            .ranks
            .iter()
            .map(|(r, (step, time))| Row {
                name: format!("{name}/r{r}"),
                rank: Some(*r),
                step: *step,
                step_time_s: *time,
                instance: node.instance.clone(),
                host: node.host.clone(),
                node_rank: node.node_rank,
                state: node.state,
                job_id: node.job_id.clone(),
                job_name: node.job_name.clone(),
                ..Row::default()
            })
            .collect();
        out.extend(ranks);
    }
    out
}

/// The GPUs of a node: dcgm-exporter's when it reports the host, else steptop's own.
fn gpus(n: &Node, host: Option<&str>, dcgm: &DcgmByHost) -> Option<Gpus> {
    let mean = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64);
    let sum = |v: &[f64]| (!v.is_empty()).then(|| v.iter().sum::<f64>());
    let field = |gpus: &BTreeMap<String, BTreeMap<String, f64>>, f: &str| -> Vec<f64> {
        gpus.values()
            .filter_map(|g| g.get(f).copied())
            .filter(|v| v.is_finite())
            .collect()
    };
    let own_limit = sum(&field(&n.gpus, "gpu_power_limit_watts"));
    let found = host
        .and_then(|h| dcgm.get(h))
        .or_else(|| dcgm.get(instance_host(n.label("instance")?)));
    let mut g = match found {
        Some(d) => {
            const MIB: f64 = 1024.0 * 1024.0;
            let used = sum(&field(d, "DCGM_FI_DEV_FB_USED"));
            let free = sum(&field(d, "DCGM_FI_DEV_FB_FREE"));
            Gpus {
                source: "dcgm",
                count: d.len(),
                util: mean(&field(d, "DCGM_FI_DEV_GPU_UTIL")).map(|u| u / 100.0),
                engine_active: mean(&field(d, "DCGM_FI_PROF_GR_ENGINE_ACTIVE")),
                power_w: sum(&field(d, "DCGM_FI_DEV_POWER_USAGE")),
                power_limit_w: sum(&field(d, "DCGM_FI_DEV_POWER_MGMT_LIMIT")).or(own_limit),
                memory_used_bytes: used.map(|u| u * MIB),
                memory_total_bytes: used.zip(free).map(|(u, f)| (u + f) * MIB),
                power_share: None,
            }
        }
        None if !n.gpus.is_empty() => Gpus {
            source: "steptop",
            count: n.gpus.len(),
            util: mean(&field(&n.gpus, "gpu_utilization_ratio")),
            engine_active: None,
            power_w: sum(&field(&n.gpus, "gpu_power_watts")),
            power_limit_w: own_limit,
            memory_used_bytes: sum(&field(&n.gpus, "gpu_memory_used_bytes")),
            memory_total_bytes: sum(&field(&n.gpus, "gpu_memory_total_bytes")),
            power_share: None,
        },
        None => return None,
    };
    g.power_share = g
        .power_w
        .zip(g.power_limit_w)
        .filter(|(_, l)| *l > 0.0)
        .map(|(p, l)| p / l);
    Some(g)
}

/// When the step last changed in the history (for nodes that publish no step clock).
fn last_change(steps: &[(f64, f64)]) -> Option<f64> {
    steps
        .windows(2)
        .rev()
        .find(|w| w[1].1 != w[0].1)
        .map(|w| w[1].0)
}

/// The newest third's mean over the oldest third's.
fn trend(points: &[(f64, f64)]) -> Option<f64> {
    let n = points.len() / 3;
    if n < 2 {
        return None;
    }
    let mean = |p: &[(f64, f64)]| p.iter().map(|p| p.1).sum::<f64>() / p.len() as f64;
    let (old, new) = (mean(&points[..n]), mean(&points[points.len() - n..]));
    (old > 0.0).then(|| new / old)
}

/// The points placed on the history's grid, oldest slot first.
fn slots(points: &[(f64, f64)], now: f64) -> Vec<Option<f64>> {
    let n = HISTORY_POINTS as usize + 1;
    let step = HISTORY_SECONDS / HISTORY_POINTS;
    let start = now - HISTORY_SECONDS;
    let mut out = vec![None; n];
    for &(t, v) in points {
        let i = ((t - start) / step).round();
        if i >= 0.0 && (i as usize) < n {
            out[i as usize] = Some(v);
        }
    }
    out
}

/// Marks stragglers and laggards among the units of each job: the rank rows of a node that
/// logs several ranks, else the node rows. Only units that are up compare. Sorting once keeps
/// it O(n log n) for a job of thousands of ranks.
fn flag_slow(rows: &mut [Row]) {
    let with_ranks: std::collections::HashSet<String> = rows
        .iter()
        .filter(|r| r.rank.is_some())
        .map(|r| r.instance.clone())
        .collect();
    let multi: Vec<bool> = rows
        .iter()
        .map(|r| r.rank.is_none() && with_ranks.contains(&r.instance))
        .collect();
    let mut jobs: BTreeMap<Option<String>, Vec<usize>> = BTreeMap::new();
    for (i, r) in rows.iter().enumerate() {
        if !multi[i] && r.state == Some(State::Up) {
            jobs.entry(r.job_id.clone()).or_default().push(i);
        }
    }
    for members in jobs.values() {
        let mut times: Vec<f64> = members
            .iter()
            .filter_map(|&i| rows[i].step_time_s)
            .collect();
        times.sort_by(f64::total_cmp);
        let furthest = members
            .iter()
            .filter_map(|&i| rows[i].step)
            .fold(None, |m: Option<f64>, s| Some(m.map_or(s, |m| m.max(s))));
        let median_all = median_of_sorted(&times);
        for &i in members {
            if let (Some(f), Some(s)) = (furthest, rows[i].step) {
                rows[i].lag = Some(f - s);
                rows[i].lagging = median_all.is_some_and(|m| (f - s) * m >= LAG_SECONDS);
            }
            let Some(t) = rows[i].step_time_s else {
                continue;
            };
            let k = times.partition_point(|x| *x < t);
            rows[i].straggler =
                median_without(&times, k).is_some_and(|m| m > 0.0 && t / m >= STRAGGLER_RATIO);
        }
    }
    // A node that logs several ranks is as slow as its slowest.
    let mut worst: BTreeMap<String, (bool, bool)> = BTreeMap::new();
    for r in rows.iter().filter(|r| r.rank.is_some()) {
        let w = worst.entry(r.instance.clone()).or_default();
        *w = (w.0 || r.straggler, w.1 || r.lagging);
    }
    for (i, r) in rows.iter_mut().enumerate() {
        if multi[i]
            && let Some((s, l)) = worst.get(&r.instance)
        {
            r.straggler = *s;
            r.lagging = *l;
        }
    }
}

fn median_of_sorted(s: &[f64]) -> Option<f64> {
    let n = s.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(s[n / 2]),
        _ => Some((s[n / 2 - 1] + s[n / 2]) / 2.0),
    }
}

/// The median of sorted values without the one at `k`: the others' median.
fn median_without(s: &[f64], k: usize) -> Option<f64> {
    let m = s.len().checked_sub(1)?;
    // The j-th of the others is s[j] before k and s[j + 1] from k on.
    let at = |j: usize| if j < k { s[j] } else { s[j + 1] };
    match m {
        0 => None,
        _ if m % 2 == 1 => Some(at(m / 2)),
        _ => Some((at(m / 2 - 1) + at(m / 2)) / 2.0),
    }
}

/// Where a row goes: nodes whose scrape fails, nodes gone from Prometheus (a target removed:
/// perhaps a job that ended), stale ones, stragglers, laggards, then by verdict severity,
/// slowest first.
fn urgency(r: &Row) -> (u8, u8, std::cmp::Reverse<i64>) {
    let class = match r.state {
        Some(State::Down) => 0,
        Some(State::Gone) => 1,
        Some(State::Stale) => 2,
        _ if r.straggler => 3,
        _ if r.lagging => 4,
        _ => 5,
    };
    let severity = match r.verdict_severity {
        Some(Severity::Crit) => 0,
        Some(Severity::Warn) => 1,
        Some(Severity::Info) => 2,
        None => 3,
    };
    let slow = (r.step_time_s.unwrap_or(0.0) * 1e6) as i64;
    (class, severity, std::cmp::Reverse(slow))
}

/// Rows by job, each job's nodes in order of urgency (a node's rank rows follow it, in
/// their own order), the job with the most urgent node first.
fn group(rows: Vec<Row>) -> Vec<Job> {
    let mut by_job: BTreeMap<Option<String>, Vec<Row>> = BTreeMap::new();
    for r in rows {
        by_job.entry(r.job_id.clone()).or_default().push(r);
    }
    let mut jobs: Vec<Job> = by_job
        .into_iter()
        .map(|(job_id, rows)| {
            let (nodes, ranks): (Vec<Row>, Vec<Row>) =
                rows.into_iter().partition(|r| r.rank.is_none());
            let mut nodes = nodes;
            nodes.sort_by(|a, b| urgency(a).cmp(&urgency(b)).then(a.name.cmp(&b.name)));
            let summary = summarize(&nodes);
            let mut by_node: BTreeMap<String, Vec<Row>> = BTreeMap::new();
            for r in ranks {
                by_node.entry(r.instance.clone()).or_default().push(r);
            }
            let mut ordered = Vec::new();
            for n in nodes {
                let mut mine = by_node.remove(&n.instance).unwrap_or_default();
                mine.sort_by(|a, b| urgency(a).cmp(&urgency(b)).then(a.rank.cmp(&b.rank)));
                ordered.push(n);
                ordered.extend(mine);
            }
            Job {
                job_name: ordered.iter().find_map(|r| r.job_name.clone()),
                job_id,
                summary,
                rows: ordered,
            }
        })
        .collect();
    jobs.sort_by(|a, b| {
        let worst = |j: &Job| j.rows.first().map(urgency);
        worst(a).cmp(&worst(b)).then(a.job_id.cmp(&b.job_id))
    });
    jobs
}

fn summarize(nodes: &[Row]) -> Summary {
    let up: Vec<&Row> = nodes
        .iter()
        .filter(|r| matches!(r.state, Some(State::Up | State::Stale)))
        .collect();
    let mut times: Vec<f64> = up.iter().filter_map(|r| r.step_time_s).collect();
    times.sort_by(f64::total_cmp);
    let slowest = up
        .iter()
        .filter(|r| r.step_time_s.is_some())
        .max_by(|a, b| {
            a.step_time_s
                .unwrap_or(0.0)
                .total_cmp(&b.step_time_s.unwrap_or(0.0))
        })
        .map(|r| r.name.clone());
    let mut verdicts: Vec<Shared> = Vec::new();
    for r in &up {
        if let Some(v) = &r.verdict {
            match verdicts.iter_mut().find(|s| &s.rule == v) {
                Some(s) => s.nodes += 1,
                None => verdicts.push(Shared {
                    rule: v.clone(),
                    nodes: 1,
                }),
            }
        }
    }
    verdicts.sort_by(|a, b| b.nodes.cmp(&a.nodes).then(a.rule.cmp(&b.rule)));
    Summary {
        nodes: nodes.len(),
        up: up.len(),
        step_time_p50_s: quantile(&times, 0.5),
        step_time_p95_s: quantile(&times, 0.95),
        step_time_max_s: times.last().copied(),
        slowest,
        verdicts,
    }
}

/// The nearest-rank quantile of sorted values, as the model's summaries take it.
fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    (!sorted.is_empty()).then(|| sorted[nearest_rank(q, sorted.len())])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::prometheus::answer::Point;

    const NOW: f64 = 1_764_115_200.0;

    fn series(name: &str, labels: &[(&str, &str)], points: &[(f64, f64)]) -> Series {
        let mut l: BTreeMap<String, String> = labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        l.insert("__name__".into(), name.into());
        Series {
            labels: l,
            points: points
                .iter()
                .map(|&(time, value)| Point { time, value })
                .collect(),
        }
    }

    /// A node's figures: step, step time, and what else is given.
    fn node(host: &str, step: f64, step_time: f64, extra: &[(&str, f64)]) -> Vec<Series> {
        let labels = [
            ("instance", &*format!("{host}:9464")),
            ("host", host),
            ("job_id", "77"),
        ]
        .map(|(k, v)| (k, v.to_string()));
        let l: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let mut out = vec![
            series("steptop_step", &l, &[(NOW, step)]),
            series("steptop_step_time_p50_seconds", &l, &[(NOW, step_time)]),
            series(
                "steptop_last_step_seen_timestamp_seconds",
                &l,
                &[(NOW, NOW - 1.0)],
            ),
        ];
        for (name, v) in extra {
            out.push(series(&format!("steptop_{name}"), &l, &[(NOW, *v)]));
        }
        out
    }

    fn alert(host: &str, rule: &str, severity: &str) -> Series {
        series(
            "steptop_alert_info",
            &[
                ("instance", &format!("{host}:9464")),
                ("host", host),
                ("job_id", "77"),
                ("rule", rule),
                ("severity", severity),
                ("verdict", "true"),
                ("title", "a title"),
                ("evidence", "one\ntwo"),
                ("actions", "fix it"),
            ],
            &[(NOW, 1.0)],
        )
    }

    fn answer(series: Vec<Series>) -> Result<Answer, Failure> {
        Ok(Answer {
            series,
            warnings: Vec::new(),
        })
    }

    fn fetched(figures: Vec<Series>, history: Vec<Series>, up: Vec<Series>) -> Fetched {
        Fetched {
            figures: answer(figures),
            scraped: answer(Vec::new()),
            up: answer(up),
            history: answer(history),
            dcgm: None,
            now: NOW,
            queries: 5,
            seconds: 0.01,
        }
    }

    fn names(c: &Cluster) -> Vec<&str> {
        c.jobs[0].rows.iter().map(|r| r.name.as_str()).collect()
    }

    #[test]
    fn problems_come_first_and_the_summary_counts_shared_verdicts() {
        let mut figures = Vec::new();
        figures.extend(node("a", 500.0, 0.100, &[]));
        figures.extend(node("b", 500.0, 0.101, &[("data_wait_ratio", 0.6)]));
        figures.push(alert("b", "data_loading_bound", "crit"));
        figures.extend(node("c", 400.0, 0.130, &[]));
        figures.extend(node("d", 500.0, 0.100, &[]));
        // d's last step came 100 s ago: past 60 s (and ten step times).
        figures.retain(|s| !(s.label("host") == Some("d") && s.name().contains("last_step_seen")));
        figures.push(series(
            "steptop_last_step_seen_timestamp_seconds",
            &[("instance", "d:9464"), ("host", "d"), ("job_id", "77")],
            &[(NOW, NOW - 100.0)],
        ));
        figures.push(alert("a", "compute_bound", "info"));
        figures.push(alert("c", "compute_bound", "info"));
        // e and f only in the history: e's target went away, f's scrape fails.
        let history = ["e", "f"]
            .iter()
            .map(|h| {
                series(
                    "steptop_step",
                    &[
                        ("instance", &format!("{h}:9464")),
                        ("host", h),
                        ("job_id", "77"),
                    ],
                    &[(NOW - 300.0, 10.0), (NOW - 240.0, 20.0)],
                )
            })
            .collect();
        let up = vec![series("up", &[("instance", "f:9464")], &[(NOW, 0.0)])];
        let c = build(&fetched(figures, history, up), Limits::default());
        assert_eq!(names(&c), vec!["f", "e", "d", "c", "b", "a"]);
        let rows = &c.jobs[0].rows;
        assert_eq!(rows[0].state, Some(State::Down));
        assert_eq!(rows[1].state, Some(State::Gone));
        assert_eq!(rows[1].why.as_deref(), Some("no figures for 0:04:00"));
        assert_eq!(rows[1].step, Some(20.0), "the last step it had");
        assert_eq!(rows[2].state, Some(State::Stale));
        assert!(rows[3].straggler && rows[3].lag == Some(100.0));
        assert!(!rows[3].lagging, "100 steps of 0.1 s is not 30 s");
        assert!(!rows[4].straggler && !rows[5].straggler);
        assert_eq!(rows[4].alerts[0].evidence, vec!["one", "two"]);
        let s = &c.jobs[0].summary;
        assert_eq!((s.nodes, s.up), (6, 4));
        assert_eq!(s.slowest.as_deref(), Some("c"));
        assert_eq!(s.step_time_max_s, Some(0.130));
        assert_eq!(
            s.verdicts,
            vec![
                Shared {
                    rule: "compute_bound".into(),
                    nodes: 2
                },
                Shared {
                    rule: "data_loading_bound".into(),
                    nodes: 1
                }
            ]
        );
    }

    #[test]
    fn a_node_that_logs_several_ranks_has_a_row_for_each_and_its_slow_rank_is_the_straggler() {
        let mut figures = node("n1", 900.0, 0.2, &[]);
        let l = |r: &str| {
            vec![
                ("instance", "n1:9464".to_string()),
                ("host", "n1".into()),
                ("job_id", "77".into()),
                ("rank", r.to_string()),
            ]
        };
        for (r, step, time) in [("0", 900.0, 0.20), ("1", 880.0, 0.21), ("2", 600.0, 0.30)] {
            let labels = l(r);
            let lv: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
            figures.push(series("steptop_rank_step", &lv, &[(NOW, step)]));
            figures.push(series(
                "steptop_rank_step_time_seconds",
                &lv,
                &[(NOW, time)],
            ));
        }
        let c = build(&fetched(figures, Vec::new(), Vec::new()), Limits::default());
        assert_eq!(names(&c), vec!["n1", "n1/r2", "n1/r1", "n1/r0"]);
        let rows = &c.jobs[0].rows;
        assert!(
            rows[1].straggler && rows[1].lagging,
            "300 steps of 0.2 s behind"
        );
        assert_eq!(rows[1].lag, Some(300.0));
        assert!(rows[0].straggler, "the node is as slow as its slowest rank");
        assert!(!rows[2].straggler && !rows[3].straggler);
    }

    #[test]
    fn dcgm_joins_by_either_host_label_and_steptops_own_gpus_fill_in() {
        let mut figures = node("new", 10.0, 0.1, &[]);
        figures.extend(node("own", 10.0, 0.1, &[]));
        let gpu = |name: &str, id: &str, v: f64| {
            series(
                name,
                &[
                    ("instance", "own:9464"),
                    ("host", "own"),
                    ("job_id", "77"),
                    ("gpu", id),
                ],
                &[(NOW, v)],
            )
        };
        figures.push(gpu("steptop_gpu_utilization_ratio", "0", 0.5));
        figures.push(gpu("steptop_gpu_utilization_ratio", "1", 0.7));
        figures.push(gpu("steptop_gpu_power_watts", "0", 300.0));
        figures.push(gpu("steptop_gpu_power_watts", "1", 400.0));
        figures.push(gpu("steptop_gpu_power_limit_watts", "0", 700.0));
        figures.push(gpu("steptop_gpu_power_limit_watts", "1", 700.0));
        let dcgm = |name: &str, v: f64| {
            series(
                name,
                &[("gpu", "0"), ("UUID", "GPU-1"), ("hostname", "new")],
                &[(NOW, v)],
            )
        };
        let mut f = fetched(figures, Vec::new(), Vec::new());
        f.dcgm = Some(answer(vec![
            dcgm("DCGM_FI_DEV_GPU_UTIL", 87.0),
            dcgm("DCGM_FI_DEV_POWER_USAGE", 350.0),
            dcgm("DCGM_FI_DEV_FB_USED", 1024.0),
        ]));
        let c = build(&f, Limits::default());
        let row = |n: &str| c.jobs[0].rows.iter().find(|r| r.name == n).unwrap();
        let new = row("new").gpu.clone().unwrap();
        assert_eq!((new.source, new.count), ("dcgm", 1));
        assert_eq!((new.util, new.power_w), (Some(0.87), Some(350.0)));
        assert_eq!(new.memory_used_bytes, Some(1024.0 * 1024.0 * 1024.0));
        assert_eq!((new.memory_total_bytes, new.power_share), (None, None));
        let own = row("own").gpu.clone().unwrap();
        assert_eq!((own.source, own.count), ("steptop", 2));
        assert_eq!(own.util, Some(0.6));
        assert_eq!(own.power_share, Some(0.5));
    }

    #[test]
    fn the_others_median_leaves_one_value_out() {
        let s = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(median_without(&s, 0), Some(3.0));
        assert_eq!(median_without(&s, 3), Some(2.0));
        assert_eq!(median_without(&s, 1), Some(3.0));
        assert_eq!(median_without(&[1.0, 2.0], 1), Some(1.0));
        assert_eq!(median_without(&[5.0, 6.0, 7.0], 1), Some(6.0));
        assert_eq!(median_without(&[1.0], 0), None);
        assert_eq!(median_without(&[], 0), None);
    }

    #[test]
    fn a_failed_query_is_a_problem_and_the_others_still_count() {
        let mut f = fetched(node("a", 1.0, 0.1, &[]), Vec::new(), Vec::new());
        f.history = Err(Failure {
            message: "http://p:9090: timed out".into(),
            transient: true,
        });
        f.up = Ok(Answer {
            series: Vec::new(),
            warnings: vec!["a store did not answer".into()],
        });
        let c = build(&f, Limits::default());
        assert_eq!(names(&c), vec!["a"]);
        assert_eq!(
            c.problems,
            vec![
                "up: a store did not answer".to_string(),
                "history: http://p:9090: timed out".to_string()
            ]
        );
    }
}
