//! The report as markdown, for pasting into an issue or a chat.

use std::fmt::Write;

use super::Report;
use crate::common::display::{self, Tabs};
use crate::common::units::{duration, gain_words, ms, num, pct};
use crate::diagnose::checklist::Status;

/// GitHub-flavoured markdown tables.
pub fn render(r: &Report) -> String {
    let mut o = String::from("## steptop report\n\n");
    let _ = writeln!(o, "{} step records", r.steps.count);
    o.push_str(&r.steps.range());
    o.push_str("\n\n");
    for note in r.separate_runs.iter().chain(&r.reading_notes) {
        let _ = writeln!(
            o,
            "> {}\n",
            crate::common::display::shown(note, crate::common::display::Tabs::Space)
        );
    }
    match &r.verdict {
        Some(v) => {
            let gain = (v.gain.filter(|g| *g > 0.0))
                .map_or(String::new(), |g| format!(" ({})", gain_words(g)));
            let _ = writeln!(
                o,
                "**Verdict ({}):** {}{gain}\n",
                v.severity.name(),
                escape(&v.title)
            );
        }
        None => o.push_str("**Verdict:** no alert is active.\n\n"),
    }
    if !r.alerts.is_empty() {
        o.push_str("### Alerts\n\n| rule | severity | steps | title | evidence | first action |\n|---|---|---|---|---|---|\n");
        for a in &r.alerts {
            let steps = match (a.first_step, a.cleared_step) {
                (Some(f), Some(c)) => format!("{f}..{c}"),
                (Some(f), None) => format!("{f}.. (active)"),
                _ => "-".into(),
            };
            let evidence: Vec<String> = a.evidence.iter().map(|e| escape(e)).collect();
            let _ = writeln!(
                o,
                "| `{}` | {} | {steps} | {} | {} | {} |",
                a.rule,
                a.severity.name(),
                escape(&a.title),
                evidence.join("<br>"),
                a.actions.first().map_or(String::new(), |x| escape(x))
            );
        }
        o.push('\n');
    }
    o.push_str("### Where a step's time goes\n\n");
    match r.step_time_ms {
        Some(step) => {
            let _ = writeln!(
                o,
                "Step time p50 {}, p95 {}, mean {}.",
                ms(step.p50),
                ms(step.p95),
                ms(step.mean)
            );
        }
        None => o.push_str("No step times in these logs.\n"),
    }
    if !r.breakdown.parts.is_empty() {
        o.push_str("\n| part | time | share of step |\n|---|---:|---:|\n");
        for p in &r.breakdown.parts {
            let name = match p.role {
                "data" => "data loading".to_string(),
                "forward" => "forward (timing log)".to_string(),
                "unlogged" => format!(
                    "unlogged ({})",
                    super::text::unlogged_words(&r.breakdown.parts)
                ),
                role => format!("{} ({role})", escape(&p.name)),
            };
            let value = p.ms.map_or("-".to_string(), ms);
            let share = p.share.map_or("-".to_string(), pct);
            let _ = writeln!(o, "| {name} | {value} | {share} |");
        }
    }
    if let Some(reading) = &r.timing_reading {
        let _ = writeln!(o, "\nTiming log: {}", escape(reading));
    }
    if !r.stages.is_empty() {
        o.push_str("\n### Forward stages\n\n| stage | mean | p50 | share of forward |\n|---|---:|---:|---:|\n");
        for s in &r.stages {
            let name = format!(
                "{}{}",
                "&nbsp;&nbsp;".repeat(usize::from(s.depth)),
                escape(&s.name)
            );
            let share = s.share.map_or("-".into(), pct);
            let _ = writeln!(
                o,
                "| {name} | {} | {} | {share} |",
                ms(s.mean_ms),
                ms(s.p50_ms)
            );
        }
    }
    o.push_str("\n### Figures\n\n| figure | value |\n|---|---|\n");
    let mut row = |k: &str, v: Option<String>| {
        if let Some(v) = v {
            let _ = writeln!(o, "| {k} | {v} |");
        }
    };
    row("samples/s (p50)", r.samples_per_s.map(num));
    row("it/s (p50)", r.iters_per_s.map(num));
    row("tokens/s (p50)", r.tokens_per_s.map(num));
    row("tokens/s a GPU (p50)", r.tokens_per_gpu_s.map(num));
    row("MFU (last)", r.mfu_pct.map(|m| format!("{m:.1}%")));
    row("data share", r.data_share.map(pct));
    row(
        "loss first / last / min",
        r.loss
            .first
            .zip(r.loss.last)
            .zip(r.loss.min)
            .map(|((f, l), m)| format!("{} / {} / {}", num(f), num(l), num(m))),
    );
    row(
        "cache hit rate",
        r.cache.as_ref().and_then(|c| c.hit_rate).map(pct),
    );
    row(
        "cache recent hit rate",
        r.cache.as_ref().and_then(|c| c.recent_hit_rate).map(pct),
    );
    row(
        "ETA",
        if r.progress.finished {
            Some(format!("finished{}", r.steps.range()))
        } else {
            r.progress.eta_s.map(duration)
        },
    );
    o.push_str("\n### How the figures were read\n\n");
    for (label, text) in r.basis.rows() {
        let _ = writeln!(o, "- {label}: {}", escape(text));
    }
    if !r.earlier_runs.is_empty() {
        o.push_str("\n### Earlier runs in the same file\n\nThis report covers the last run; these ended before it.\n\n| file | lines | steps | records | step time | last loss | then changed |\n|---|---|---|---:|---:|---:|---|\n");
        for run in &r.earlier_runs {
            let file = run.source.rsplit('/').next().unwrap_or(&run.source);
            let steps = match (run.run.first_step, run.run.last_step) {
                (Some(a), Some(b)) => format!("{a}..{b}"),
                _ => "-".into(),
            };
            let _ = writeln!(
                o,
                "| {} | {}-{} | {steps} | {} | {} | {} | {} |",
                escape(file),
                run.run.first_line,
                run.run.last_line,
                run.run.steps,
                run.run.step_time_ms.map_or("-".into(), ms),
                run.run.loss_last.map_or("-".into(), num),
                escape(&run.run.then_changed_words().unwrap_or_default())
            );
        }
    }
    if let Some(st) = &r.stacks {
        let _ = write!(
            o,
            "\n### Python stacks\n\nSampled over {:.0} s; shares are estimates.\n\n| who | where | share |\n|---|---|---:|\n",
            st.seconds
        );
        for (who, role) in [("main thread", &st.main), ("workers", &st.workers)] {
            for (place, share) in &role.places {
                let _ = writeln!(o, "| {who} | {} | {} |", place.words(), pct(*share));
            }
            for f in &role.functions {
                let _ = writeln!(
                    o,
                    "| {who} | `{}` {}:{} | {} |",
                    escape(&f.function).replace('`', "'"),
                    escape(&f.file),
                    f.line,
                    pct(f.share)
                );
            }
        }
        for why in st.refused.iter().chain(&st.notes) {
            let _ = writeln!(o, "\n{}", escape(why));
        }
    }
    if !r.event_counts.is_empty() {
        o.push_str("\n### Events\n\n");
        for c in &r.event_counts {
            let _ = writeln!(o, "- {} {}", c.count, c.kind);
        }
    }
    o.push_str("\n### Sources\n\n| file | format | rank | lines | records | unparsed | rejected |\n|---|---|---:|---:|---:|---:|---:|\n");
    for s in &r.sources {
        let rank = s.rank.map_or("-".into(), |r| r.to_string());
        let rejected = match &s.first_rejected {
            Some(x) => format!(
                "{} (line {}: {}: `{}`)",
                s.rejected,
                x.line,
                x.why,
                escape(&x.text).replace('`', "'")
            ),
            None => s.rejected.to_string(),
        };
        let _ = writeln!(
            o,
            "| {} | {} | {rank} | {} | {} | {} | {rejected} |",
            escape(&s.path),
            s.format.unwrap_or("-"),
            s.lines,
            s.records,
            s.unparsed
        );
    }
    if !r.unparsed_shapes.is_empty() {
        o.push_str("\n### Not understood\n\nThe most frequent shapes of unparsed lines (numbers as N):\n\n| lines | shape | first example |\n|---:|---|---|\n");
        for u in &r.unparsed_shapes {
            let file = u.source.rsplit('/').next().unwrap_or(&u.source);
            let _ = writeln!(
                o,
                "| {} | `{}` | {}:{}: `{}` |",
                u.count,
                escape(&u.shape).replace('`', "'"),
                escape(file),
                u.line,
                escape(&u.example).replace('`', "'")
            );
        }
    }
    o.push_str("\n### Checklist\n\n| check | status | value |\n|---|---|---|\n");
    for c in &r.checklist {
        let status = match c.status {
            Status::Pass => "pass",
            Status::Fail => "**fail**",
            Status::Unknown => "unknown",
        };
        let _ = writeln!(
            o,
            "| {} | {status} | {} |",
            escape(c.label),
            escape(c.value.as_deref().unwrap_or("-"))
        );
    }
    // Tables are not aligned by hand here, so one pass over the whole text shows every stage
    // name, alert word and path: nothing invisible reaches the terminal or the issue.
    display::shown_owned(o, Tabs::Space)
}

/// Keeps a log's text from breaking the table.
fn escape(s: &str) -> String {
    s.replace('|', "\\|").replace('<', "&lt;")
}
