//! Headless lines: one per alert change, per periodic status and for the closing summary, as
//! text for people or as JSON lines. Pure: the same monitor and change give the same bytes.
//! Neither form ever holds a terminal control sequence: log text is cleaned before it reaches
//! an alert's words, and JSON escapes control characters.

use serde::Serialize;

use crate::common::display::{self, Tabs};
use crate::common::units::{clock, gain_words, ms, num, pct, push_clock, push_padded};
use crate::diagnose::{Alert, Change, ChangeKind, Severity};
use crate::model::baseline::{change, ratio};
use crate::model::breakdown::Over;
use crate::model::job::JobIdentity;
use crate::monitor::Monitor;

/// Bumped on any change a consumer of the JSON lines would notice.
pub const SCHEMA_VERSION: u32 = 1;

/// Where the message that caused a change came from.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Origin {
    pub host: Option<String>,
    /// The job, node and process rank from Slurm's and the launcher's variables.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job: Option<JobIdentity>,
    /// The log file and line, for a change a log line caused; null for a hardware sample.
    pub file: Option<String>,
    pub line: Option<u64>,
    pub rank: Option<u32>,
}

/// One alert change as a JSON line: the fields in the documented order, then the line's kind
/// and the schema version.
#[derive(Serialize)]
struct AlertLine<'a> {
    time: f64,
    step: Option<u64>,
    rule: &'static str,
    severity: Severity,
    change: ChangeKind,
    title: &'a str,
    evidence: &'a [String],
    gain: Option<f64>,
    actions: &'a [String],
    /// Named `source` in the JSON lines (schema 1), as documented.
    #[serde(rename = "source")]
    origin: &'a Origin,
    kind: &'static str,
    schema: u32,
}

/// The figures of a status line, as JSON and for the text form.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Status {
    pub time: f64,
    pub step: Option<u64>,
    pub total_steps: Option<u64>,
    pub samples_per_s: Option<f64>,
    /// Iterations per second, recent median: the rate when no batch size is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iters_per_s: Option<f64>,
    /// Tokens per second of the job and of one GPU, recent medians (LLM runs).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens_per_s: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens_per_gpu_s: Option<f64>,
    pub step_time_ms: Option<f64>,
    pub data_share: Option<f64>,
    /// Mean utilization of the GPUs read in the latest sample, 0..1.
    pub gpu_util: Option<f64>,
    pub verdict: Option<String>,
    pub verdict_severity: Option<Severity>,
    /// With `--baseline`: samples/s (else it/s) now over the baseline's.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vs_baseline: Option<f64>,
    pub kind: &'static str,
    pub schema: u32,
}

impl Status {
    /// The status of the monitor at `time`.
    pub fn of(mon: &Monitor, time: f64) -> Status {
        let m = &mon.model;
        let g = &m.merged;
        let window = m.cfg.window_steps;
        let gpus: Vec<f64> = m
            .hardware
            .latest()
            .map(|s| {
                s.gpus
                    .iter()
                    .filter_map(|g| g.util_pct)
                    .map(f64::from)
                    .collect()
            })
            .unwrap_or_default();
        let verdict = mon.diagnosis.verdict();
        Status {
            time,
            step: g.last_step,
            total_steps: g.total.or(m.facts.total_steps),
            samples_per_s: g.samples_per_s.recent(window).map(|s| s.p50),
            iters_per_s: g.iters_per_s.recent(window).map(|s| s.p50),
            tokens_per_s: g.tokens_per_s.recent(window).map(|s| s.p50),
            tokens_per_gpu_s: g.tokens_per_gpu_s.recent(window).map(|s| s.p50),
            step_time_ms: g.step_time_ms.recent(window).map(|s| s.p50),
            data_share: m.data_share(Over::Recent(window)),
            gpu_util: (!gpus.is_empty())
                .then(|| gpus.iter().sum::<f64>() / gpus.len() as f64 / 100.0),
            verdict: verdict.map(|a| a.rule.to_string()),
            verdict_severity: verdict.map(|a| a.severity),
            vs_baseline: mon.baseline.as_ref().and_then(|b| {
                ratio(
                    g.samples_per_s.recent(window).map(|s| s.p50),
                    b.samples_per_s,
                )
                .or_else(|| ratio(g.iters_per_s.recent(window).map(|s| s.p50), b.iters_per_s))
            }),
            kind: "status",
            schema: SCHEMA_VERSION,
        }
    }
}

/// The end of a headless run: how far it got and what it raised.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Summary {
    pub time: f64,
    pub step: Option<u64>,
    pub first_step: Option<u64>,
    /// Why it ended: `input finished`, `trainer 1234 exited`, `stopped by SIGTERM`.
    pub reason: String,
    pub raised: usize,
    pub warn: usize,
    pub crit: usize,
    /// The alerts still active, most urgent first.
    pub active: Vec<String>,
    pub verdict: Option<String>,
    pub verdict_title: Option<String>,
    pub kind: &'static str,
    pub schema: u32,
}

impl Summary {
    pub fn of(mon: &Monitor, time: f64, reason: &str) -> Summary {
        let d = &mon.diagnosis;
        // Every alert of the run, kept or retired, at the severity it has now.
        let raised = |sev: Severity| d.now_at(sev) as usize;
        let mut active: Vec<&Alert> = d.active().collect();
        active.sort_by(|a, b| b.severity.cmp(&a.severity).then(a.rule.cmp(b.rule)));
        let verdict = d.verdict();
        Summary {
            time,
            step: mon.model.merged.last_step,
            first_step: mon.model.merged.first_step,
            reason: reason.to_string(),
            raised: d.raised() as usize,
            warn: raised(Severity::Warn),
            crit: raised(Severity::Crit),
            active: active.iter().map(|a| a.rule.to_string()).collect(),
            verdict: verdict.map(|a| a.rule.to_string()),
            verdict_title: verdict.map(|a| a.title.clone()),
            kind: "summary",
            schema: SCHEMA_VERSION,
        }
    }
}

/// One alert change as one JSON line (no newline).
pub fn alert_json(c: &Change, a: &Alert, origin: &Origin) -> String {
    json(&AlertLine {
        time: c.time,
        step: c.step,
        rule: c.rule,
        severity: c.severity,
        change: c.change,
        title: &a.title,
        evidence: &a.evidence,
        gain: a.gain,
        actions: &a.actions,
        origin,
        kind: "alert",
        schema: SCHEMA_VERSION,
    })
}

/// One alert change for people: when, the change, the rule and its words on one line.
/// Written piece by piece into one string: a replay prints thousands, and the formatting
/// machinery and the copies of the joined evidence were most of their cost.
pub fn alert_text(c: &Change, a: &Alert, origin: &Origin) -> String {
    let words = a.evidence.iter().map(String::len).sum::<usize>()
        + a.actions.first().map_or(0, String::len);
    let mut out = String::with_capacity(96 + a.title.len() + words + 2 * a.evidence.len());
    push_clock(&mut out, c.time);
    out.push_str("  ");
    match c.step {
        Some(s) => {
            out.push_str("step ");
            push_padded(&mut out, s, 1);
        }
        None => out.push_str("step -"),
    }
    out.push_str("  ");
    push_left(&mut out, &c.change.name().to_uppercase(), 9);
    out.push(' ');
    push_left(&mut out, c.severity.name(), 4);
    out.push(' ');
    out.push_str(c.rule);
    out.push_str(": ");
    push_one_line(&mut out, &a.title);
    if let Some(g) = a.gain.filter(|g| *g > 0.0) {
        out.push_str(&format!(" ({})", gain_words(g)));
    }
    if c.change != ChangeKind::Cleared {
        if !a.evidence.is_empty() {
            out.push_str(" | ");
            // Plain pieces joined by `; ` are plain: each goes in as it is.
            if a.evidence.iter().all(|e| plain(e)) {
                for (i, e) in a.evidence.iter().enumerate() {
                    if i > 0 {
                        out.push_str("; ");
                    }
                    out.push_str(e);
                }
            } else {
                out.push_str(&one_line_each(&a.evidence.join("; ")));
            }
        }
        if let Some(fix) = a.actions.first() {
            out.push_str(" | fix: ");
            push_one_line(&mut out, fix);
        }
    }
    if let Some(file) = &origin.file {
        let name = file.rsplit('/').next().unwrap_or(file);
        out.push_str(" [");
        push_one_line(&mut out, name);
        out.push(':');
        push_padded(&mut out, origin.line.unwrap_or(0), 1);
        out.push(']');
    }
    if let Some(job) = &origin.job {
        out.push_str(&job_text(job));
    }
    out
}

/// `s` left-aligned in `width` characters (as `{s:<width$}`).
fn push_left(out: &mut String, s: &str, width: usize) {
    out.push_str(s);
    for _ in s.chars().count()..width {
        out.push(' ');
    }
}

/// ` (job 4180321 node 3 rank 27)`: the parts known, for a text line.
fn job_text(job: &JobIdentity) -> String {
    let parts: Vec<String> = [
        job.id.as_ref().map(|id| format!("job {}", one_line(id))),
        job.node.map(|n| format!("node {n}")),
        job.rank.map(|r| format!("rank {r}")),
    ]
    .into_iter()
    .flatten()
    .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!(" ({})", parts.join(" "))
    }
}

pub fn status_json(s: &Status) -> String {
    json(s)
}

pub fn status_text(s: &Status) -> String {
    let mut parts = vec![match (s.step, s.total_steps) {
        (Some(n), Some(t)) => format!("step {n}/{t}"),
        (Some(n), None) => format!("step {n}"),
        (None, _) => "no step yet".to_string(),
    }];
    // A rate, whatever the log tells: samples/s with a batch size, else it/s.
    match (s.samples_per_s, s.iters_per_s) {
        (Some(v), _) => parts.push(format!("{} samples/s", num(v))),
        (None, Some(v)) => parts.push(format!("{} it/s", num(v))),
        (None, None) => {}
    }
    if let Some(v) = s.tokens_per_s.or(s.tokens_per_gpu_s) {
        let a_gpu = if s.tokens_per_s.is_some() {
            ""
        } else {
            " a GPU"
        };
        parts.push(format!("{} tokens/s{a_gpu}", num(v)));
    }
    if let Some(v) = s.step_time_ms {
        parts.push(format!("step {}", ms(v)));
    }
    if let Some(v) = s.data_share {
        parts.push(format!("data {}", pct(v)));
    }
    if let Some(v) = s.gpu_util {
        parts.push(format!("GPU {}", pct(v)));
    }
    if let Some(r) = s.vs_baseline {
        parts.push(format!("{} vs baseline", change(r)));
    }
    parts.push(match (&s.verdict, s.verdict_severity) {
        (Some(rule), Some(sev)) => format!("verdict {rule} ({})", sev.name()),
        _ => "no alert".to_string(),
    });
    format!("{}  status  {}", clock(s.time), parts.join(" · "))
}

pub fn summary_json(s: &Summary) -> String {
    json(s)
}

pub fn summary_text(s: &Summary) -> String {
    let steps = match (s.first_step, s.step) {
        (Some(a), Some(b)) => format!("steps {a}..{b}"),
        _ => "no steps".to_string(),
    };
    let mut out = format!(
        "{}  summary  {}: {steps} · {} alerts raised ({} crit, {} warn)",
        clock(s.time),
        s.reason,
        s.raised,
        s.crit,
        s.warn
    );
    if !s.active.is_empty() {
        out.push_str(&format!(" · active: {}", s.active.join(", ")));
    }
    if let (Some(rule), Some(title)) = (&s.verdict, &s.verdict_title) {
        out.push_str(&format!(" · verdict {rule}: {}", one_line(title)));
    }
    out
}

/// Text on one line with no control characters: a line break in a title or in quoted log text
/// must not break the one-line-per-change promise. Invisible characters are shown escaped
/// (`display::shown`); a tab is one space, as the text sits mid-line.
fn one_line(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    push_one_line(&mut out, s);
    out
}

/// `one_line` at the end of `out`.
fn push_one_line(out: &mut String, s: &str) {
    if plain(s) {
        out.push_str(s);
    } else {
        out.push_str(&one_line_each(s));
    }
}

/// Printable ASCII, which `one_line` leaves as it is: most titles and evidence, copied whole
/// (character by character, they were most of a replay's printing).
fn plain(s: &str) -> bool {
    s.is_ascii() && !s.bytes().any(|b| b.is_ascii_control())
}

/// `one_line` character by character.
fn one_line_each(s: &str) -> String {
    let flat = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    display::shown_owned(flat, Tabs::Space)
}

fn json<T: Serialize>(v: &T) -> String {
    // Plain structs of strings and numbers: serde_json cannot fail on them; NaN and infinities
    // become null.
    serde_json::to_string(v).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        // A failing case is printed, not written beside the code.
        #![proptest_config(ProptestConfig {
            failure_persistence: None,
            ..ProptestConfig::with_cases(512)
        })]
        #[test]
        fn one_line_copies_plain_text_as_the_character_walk_makes_it(
            s in "[ -~\t\n\r\u{7f}\u{85}\u{200b}é]{0,40}",
        ) {
            prop_assert_eq!(one_line(&s), one_line_each(&s));
        }

        /// The text line, written piece by piece, is what the formatting wrote.
        #[test]
        fn a_text_line_is_what_the_formatting_wrote(
            title in "[ -~\t\n\u{85}\u{200b}é]{0,30}",
            evidence in proptest::collection::vec("[ -~\n\u{200b}]{0,30}", 0..4),
            fix in proptest::option::of("[ -~\r]{0,20}"),
            step in proptest::option::of(proptest::num::u64::ANY),
            time in proptest::prop_oneof![0.0..1e8f64, 1e8..3e9f64],
            gain in proptest::option::of(-0.5..1.5f64),
            kind in 0usize..3,
            file in proptest::option::of("[a-z/]{1,12}(\n)?"),
            line in proptest::option::of(proptest::num::u64::ANY),
        ) {
            let (mut c, mut a) = change();
            a.title = title;
            a.evidence = evidence;
            a.actions = fix.into_iter().collect();
            a.gain = gain;
            c.step = step;
            c.time = time;
            c.change = [ChangeKind::Raised, ChangeKind::Escalated, ChangeKind::Cleared][kind];
            let origin = Origin { file, line, ..Origin::default() };
            prop_assert_eq!(alert_text(&c, &a, &origin), alert_text_formatted(&c, &a, &origin));
        }
    }

    /// `alert_text` as it was written with `format!`: the reference.
    fn alert_text_formatted(c: &Change, a: &Alert, origin: &Origin) -> String {
        let step = c
            .step
            .map_or_else(|| "step -".to_string(), |s| format!("step {s}"));
        let mut out = format!(
            "{}  {}  {:<9} {:<4} {}: {}",
            clock(c.time),
            step,
            c.change.name().to_uppercase(),
            c.severity.name(),
            c.rule,
            one_line(&a.title)
        );
        if let Some(g) = a.gain.filter(|g| *g > 0.0) {
            out.push_str(&format!(" ({})", gain_words(g)));
        }
        if c.change != ChangeKind::Cleared {
            if !a.evidence.is_empty() {
                out.push_str(" | ");
                out.push_str(&one_line(&a.evidence.join("; ")));
            }
            if let Some(fix) = a.actions.first() {
                out.push_str(" | fix: ");
                out.push_str(&one_line(fix));
            }
        }
        if let Some(file) = &origin.file {
            let name = file.rsplit('/').next().unwrap_or(file);
            out.push_str(&format!(
                " [{}:{}]",
                one_line(name),
                origin.line.unwrap_or(0)
            ));
        }
        out
    }

    fn change() -> (Change, Alert) {
        let a = Alert {
            rule: "input_bound",
            severity: Severity::Warn,
            title: "Data loading\nwaits".into(),
            evidence: vec!["data_time 43% of step".into()],
            gain: Some(0.43),
            actions: vec!["raise num_workers".into()],
            first_step: Some(120),
            first_time: 1_701_224_370.0,
            last_step: Some(120),
            cleared_step: None,
            cleared_time: None,
        };
        let c = Change {
            time: 1_701_224_370.0,
            step: Some(120),
            rule: "input_bound",
            severity: Severity::Warn,
            change: ChangeKind::Raised,
            alert: 0,
        };
        (c, a)
    }

    #[test]
    fn json_fields_come_in_the_documented_order() {
        let (c, a) = change();
        let line = alert_json(&c, &a, &Origin::default());
        let keys: Vec<&str> = [
            "time", "step", "rule", "severity", "change", "title", "evidence", "gain", "actions",
            "source", "kind", "schema",
        ]
        .to_vec();
        let mut at = 0;
        for k in keys {
            let i = line[at..]
                .find(&format!("\"{k}\":"))
                .unwrap_or_else(|| panic!("{k} missing or out of order in {line}"));
            at += i;
        }
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["gain"], 0.43);
        assert_eq!(v["step"], 120);
        assert_eq!(v["change"], "raised");
    }

    #[test]
    fn a_text_line_names_the_job_node_and_rank_it_knows() {
        let (c, a) = change();
        let origin = Origin {
            job: Some(JobIdentity {
                id: Some("4180321".into()),
                node: Some(3),
                rank: Some(27),
                ..JobIdentity::default()
            }),
            ..Origin::default()
        };
        let line = alert_text(&c, &a, &origin);
        assert!(line.ends_with(" (job 4180321 node 3 rank 27)"), "{line}");
        assert!(!alert_text(&c, &a, &Origin::default()).contains("(job"));
    }

    #[test]
    fn text_is_one_line_without_control_characters() {
        let (c, a) = change();
        let line = alert_text(&c, &a, &Origin::default());
        assert!(!line.chars().any(char::is_control), "{line:?}");
        assert!(line.starts_with("2023-11-29 02:19:30  step 120  RAISED    warn input_bound"));
        assert!(
            line.contains("(fixed: steps up to 43% shorter, 1.75x as fast)")
                && line.contains("fix: raise num_workers"),
            "{line}"
        );
    }

    #[test]
    fn invisible_characters_are_escaped_in_text_and_kept_in_json() {
        let (c, mut a) = change();
        a.title = "VRT Stage\u{202e}8\u{200b} takes 33% of the forward".into();
        let origin = Origin {
            file: Some("/runs/\u{202e}gol.txt".into()),
            line: Some(9),
            ..Origin::default()
        };
        let text = alert_text(&c, &a, &origin);
        assert!(
            text.contains("VRT Stage\\u{202e}8\\u{200b} takes 33%"),
            "{text}"
        );
        assert!(text.ends_with("[\\u{202e}gol.txt:9]"), "{text}");
        let json: serde_json::Value = serde_json::from_str(&alert_json(&c, &a, &origin)).unwrap();
        assert_eq!(
            json["title"],
            "VRT Stage\u{202e}8\u{200b} takes 33% of the forward"
        );
    }
}
