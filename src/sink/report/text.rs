//! The report for a terminal: where a step's time goes first, then the figures behind it.

use std::fmt::Write;

use super::Report;
use crate::common::display::{self, Tabs};
use crate::common::units::{duration, gain_words, ms, num, pct};
use crate::diagnose::Alert;
use crate::diagnose::checklist::Status;
use crate::sink::probe_sample::words;

/// Plain text, at most 80 columns, no escape sequences.
pub fn render(r: &Report) -> String {
    let mut o = String::new();
    let files = r.sources.len();
    let _ = write!(
        o,
        "steptop report: {files} file{}, {} step records",
        plural(files),
        r.steps.count
    );
    o.push_str(&r.steps.range());
    o.push('\n');
    if let Some(note) = &r.separate_runs {
        words(&mut o, &display::pad("note", 14), 14, note);
    }
    for note in &r.reading_notes {
        words(&mut o, &display::pad("note", 14), 14, note);
    }
    verdict(r, &mut o);
    breakdown(r, &mut o);
    stages(r, &mut o);
    o.push('\n');
    line(&mut o, "throughput", throughput(r));
    basis(r, &mut o);
    if let Some(s) = &r.rank_spread {
        let label = display::pad("ranks", 14);
        words(&mut o, &label, 14, &rank_spread(s));
        // Three fit on one line: a rank and its time never part.
        let slowest: Vec<String> = s
            .slowest
            .iter()
            .take(3)
            .map(|r| format!("{} at {}", r.rank, ms(r.step_time_ms)))
            .collect();
        line(&mut o, "slowest ranks", slowest.join(", "));
    }
    line(&mut o, "loss", loss(r));
    if let Some(c) = &r.cache {
        let mut s = match c.hit_rate {
            Some(h) => format!("hit rate {}", pct(h)),
            None => "hit rate -".to_string(),
        };
        if let Some(rr) = c.recent_hit_rate {
            let _ = write!(s, " (recent {})", pct(rr));
        }
        if let (Some(h), Some(m)) = (c.hits, c.misses) {
            let _ = write!(s, ", {h} hits / {m} misses");
        }
        line(&mut o, "cache", s);
    }
    if r.progress.finished {
        line(&mut o, "eta", format!("finished{}", r.steps.range()));
    } else if let Some(eta) = r.progress.eta_s {
        line(&mut o, "eta", duration(eta));
    }
    if let Some(s) = &r.summary
        && let Some(rt) = s.runtime_s
    {
        line(&mut o, "train runtime", duration(rt));
    }
    hardware(r, &mut o);
    if let Some(st) = &r.stacks {
        o.push('\n');
        crate::sink::probe_sample::stack_text(&mut o, st);
    }
    earlier_runs(r, &mut o);
    events(r, &mut o);
    checklist(r, &mut o);
    o.push_str("\nsources\n");
    for s in &r.sources {
        let _ = writeln!(
            o,
            "  {}  {}  rank {}  {} lines, {} records, {} unparsed",
            s.path,
            s.format.unwrap_or("unrecognised"),
            s.rank.map_or("-".to_string(), |r| r.to_string()),
            s.lines,
            s.records,
            s.unparsed
        );
        if let Some(x) = &s.first_rejected {
            let shown = display::shown(&x.text, Tabs::Space);
            let text = display::truncate(&shown, 60);
            let _ = writeln!(
                o,
                "    {} rejected: {}; the first, line {}: {text}",
                s.rejected, x.why, x.line
            );
        }
        for p in &s.problems {
            let _ = writeln!(o, "    problem: {}", display::shown(p, Tabs::Space));
        }
    }
    if !r.unparsed_shapes.is_empty() {
        o.push_str("\nnot understood (the most frequent shapes of unparsed lines, numbers as N)\n");
        for u in &r.unparsed_shapes {
            let (shape, example) = (
                display::shown(&u.shape, Tabs::Space),
                display::shown(&u.example, Tabs::Space),
            );
            let (shape, example) = (
                display::truncate(&shape, 70),
                display::truncate(&example, 70),
            );
            let file = u.source.rsplit('/').next().unwrap_or(&u.source);
            let _ = writeln!(o, "  {:>6}x  {shape}", u.count);
            let _ = writeln!(o, "           e.g. {file}:{}: {example}", u.line);
        }
    }
    // Log text laid out by cells above was shown before it was measured; this pass shows the
    // rest (sources' paths, events' file names), so nothing invisible reaches the terminal.
    display::shown_owned(o, Tabs::Space)
}

/// What limits the run first, then every alert: active ones with their evidence and first
/// action, cleared ones on a line each.
fn verdict(r: &Report, o: &mut String) {
    match &r.verdict {
        Some(v) => {
            let head = format!("\nverdict       {} ", v.severity.name());
            words(o, &head, 14, &v.title);
            if let Some(g) = v.gain.filter(|g| *g > 0.0) {
                words(o, "              ", 14, &gain_words(g));
            }
        }
        None => o.push_str("\nverdict       no alert is active\n"),
    }
    let active: Vec<&Alert> = r.alerts.iter().filter(|a| a.active()).collect();
    let cleared: Vec<&Alert> = r.alerts.iter().filter(|a| !a.active()).collect();
    if r.alerts.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "\nalerts ({} active, {} cleared)",
        active.len(),
        cleared.len()
    );
    if let Some(from) = r.judged_from.filter(|_| r.warmup_steps > 0) {
        words(
            o,
            "  ",
            2,
            &format!(
                "judged from step {from}: the {} step lines before it were the warm-up",
                r.warmup_steps
            ),
        );
    }
    for a in active {
        let since = a
            .first_step
            .map_or(String::new(), |s| format!(", since step {s}"));
        let head = format!("  {:<5} {}{since}: ", a.severity.name(), a.rule);
        words(o, &head, 8, &a.title);
        for e in &a.evidence {
            words(o, "        ", 8, e);
        }
        if let Some(act) = a.actions.first() {
            words(o, "        -> ", 11, act);
        }
    }
    for a in cleared {
        let span = match (a.first_step, a.cleared_step) {
            (Some(f), Some(c)) => format!(" (steps {f} to {c})"),
            _ => String::new(),
        };
        words(o, &format!("  clear {}{span}: ", a.rule), 8, &a.title);
    }
}

fn checklist(r: &Report, o: &mut String) {
    o.push_str("\nchecklist\n");
    for c in &r.checklist {
        let status = match c.status {
            Status::Pass => "pass",
            Status::Fail => "FAIL",
            Status::Unknown => "  - ",
        };
        let value = c.value.as_deref().unwrap_or("no reading");
        let label = display::pad(c.label, 38);
        words(o, &format!("  {status}  {label} "), 47, value);
    }
}

fn breakdown(r: &Report, o: &mut String) {
    match r.step_time_ms {
        Some(step) => {
            let _ = writeln!(
                o,
                "\nwhere a step's time goes (step p50 {}, p95 {}, mean {})",
                ms(step.p50),
                ms(step.p95),
                ms(step.mean)
            );
        }
        None => o.push_str("\nno step times in these logs: what they itemise\n"),
    }
    let b = &r.breakdown;
    let unlogged = unlogged_words(&b.parts);
    for p in &b.parts {
        let why = match p.role {
            "data" => "waiting for the next batch",
            "forward" => "in the timing log",
            "unlogged" => unlogged,
            _ => "itemised in the timing log",
        };
        // Shown before it is measured: an escape is wider than the character it stands for.
        let shown = display::shown(&p.name, Tabs::Space);
        let name = display::pad(display::truncate(&shown, 17), 17);
        let value = p.ms.map_or("-".to_string(), ms);
        let (share, drawn) = match p.share {
            Some(x) => (pct(x), bar(x, 12)),
            None => ("-".to_string(), String::new()),
        };
        let _ = writeln!(o, "  {name} {value:>11} {share:>6}  {drawn:<12} {why}");
    }
    if r.step_time_ms.is_some() && !b.parts.iter().any(|p| p.role == "forward") {
        let _ = writeln!(
            o,
            "  {:<17} {:>11} {:>6}  {:<12} not in the logs",
            "forward", "-", "", ""
        );
    }
    if let Some(reading) = &r.timing_reading {
        words(o, "  timing log: ", 15, reading);
    }
}

fn stages(r: &Report, o: &mut String) {
    if r.stages.is_empty() {
        return;
    }
    let _ = writeln!(
        o,
        "\nforward stages, hottest first        mean        p50   share"
    );
    for s in r.stages.iter().take(12) {
        let indent = "  ".repeat(usize::from(s.depth) + 1);
        // Shown before it is measured: an escape is wider than the character it stands for.
        let shown = display::shown(&s.name, Tabs::Space);
        let width = 32usize.saturating_sub(indent.len());
        let name = display::pad(display::truncate(&shown, width), width);
        let _ = writeln!(
            o,
            "{indent}{name} {:>10} {:>10} {:>7}",
            ms(s.mean_ms),
            ms(s.p50_ms),
            s.share.map_or("-".to_string(), pct),
        );
    }
    if r.stages.len() > 12 {
        let _ = writeln!(o, "  ... {} more", r.stages.len() - 12);
    }
}

/// `16384; step time p50 102.5 ms, p95 104.6 ms, max 142.0 ms; behind the furthest ...`.
fn rank_spread(s: &crate::model::ranks::RankSpread) -> String {
    let mut parts = vec![s.ranks.to_string()];
    if let Some(t) = s.step_time_ms {
        parts.push(format!(
            "step time p50 {}, p95 {}, max {}",
            ms(t.p50),
            ms(t.p95),
            ms(t.max)
        ));
    }
    if let Some(l) = s.lag_steps.filter(|l| l.max > 0.0) {
        parts.push(format!(
            "behind the furthest p50 {:.0}, p95 {:.0}, max {:.0} steps",
            l.p50, l.p95, l.max
        ));
    }
    parts.join("; ")
}

fn throughput(r: &Report) -> String {
    let mut parts = Vec::new();
    if let Some(v) = r.samples_per_s {
        parts.push(format!("{} samples/s", num(v)));
    }
    if let Some(v) = r.iters_per_s {
        parts.push(format!("{} it/s", num(v)));
    }
    match (r.tokens_per_s, r.tokens_per_gpu_s) {
        (Some(v), Some(g)) if (v - g).abs() > 0.5 => {
            parts.push(format!("{} tokens/s ({} a GPU)", num(v), num(g)));
        }
        (Some(v), _) => parts.push(format!("{} tokens/s", num(v))),
        (None, Some(g)) => parts.push(format!("{} tokens/s a GPU", num(g))),
        (None, None) => {}
    }
    if let Some(m) = r.mfu_pct {
        parts.push(format!("MFU {m:.1}%"));
    }
    if let Some(v) = r.data_share {
        parts.push(format!("data share {}", pct(v)));
    }
    if parts.is_empty() {
        "-".into()
    } else {
        parts.join(", ")
    }
}

/// How each figure was had: printed, worked out, or missing and why.
fn basis(r: &Report, o: &mut String) {
    let b = &r.basis;
    o.push_str("figures from\n");
    for (label, text) in b.rows() {
        words(o, &format!("  {}", display::pad(label, 12)), 14, text);
    }
}

/// The runs the file held before the one reported.
fn earlier_runs(r: &Report, o: &mut String) {
    if r.earlier_runs.is_empty() {
        return;
    }
    let n = r.earlier_runs.len() as u64 + r.earlier_runs_dropped;
    let _ = writeln!(
        o,
        "\nearlier runs in the same file ({n}; this report covers the last, from its step {})",
        r.steps.first.map_or("-".into(), |s| s.to_string())
    );
    for run in &r.earlier_runs {
        let steps = run.run.steps_words();
        let time = run.run.step_time_ms.map_or("-".into(), ms);
        let _ = writeln!(
            o,
            "  {}:{}-{}  {steps}, {} records, step {time}, last loss {}",
            short(&run.source),
            run.run.first_line,
            run.run.last_line,
            run.run.steps,
            run.run.loss_last.map_or("-".into(), num)
        );
        if let Some(changed) = run.run.then_changed_words() {
            words(o, "    then changed: ", 6, &changed);
        }
    }
}

fn loss(r: &Report) -> String {
    match (r.loss.first, r.loss.last, r.loss.min) {
        (Some(f), Some(l), Some(m)) => format!("first {}, last {}, min {}", num(f), num(l), num(m)),
        _ => "-".into(),
    }
}

fn hardware(r: &Report, o: &mut String) {
    let Some(h) = &r.hardware else {
        return;
    };
    let _ = writeln!(o, "\nhardware ({} samples)", h.samples);
    if let Some(from) = &h.gpu_source {
        crate::sink::probe_sample::words(o, &format!("{:<14}", "gpus from"), 14, from);
    }
    if let Some(e) = &h.gpu_error {
        crate::sink::probe_sample::words(o, &format!("{:<14}none: ", "gpus"), 14, e);
    }
    for g in &h.gpus {
        let mut parts = Vec::new();
        if let Some(u) = g.util_pct {
            parts.push(format!("util p50 {:.0}%", u.p50));
        }
        if let Some(p) = g.power_w {
            let limit = g
                .power_limit_w
                .map_or(String::new(), |l| format!(" of {l:.0} W"));
            parts.push(format!("power p50 {:.0} W{limit}", p.p50));
        }
        if let (Some(m), Some(total)) = (g.mem_used_bytes, g.mem_total_bytes) {
            parts.push(format!(
                "memory p50 {} of {}",
                crate::common::units::gib(m.p50 as u64),
                crate::common::units::gib(total)
            ));
        }
        if g.failed {
            parts.push("LOST at the end".into());
        }
        if parts.is_empty() {
            parts.push("no reading".into());
        }
        let label = display::pad(&format!("gpu {}", g.id), 14);
        words(o, &label, 14, &parts.join(", "));
    }
    if let Some(c) = h.host_cpu_pct {
        line(
            o,
            "host cpu",
            format!("p50 {:.0}%, p95 {:.0}%", c.p50, c.p95),
        );
    }
    if let Some(c) = h.trainer_cpu_pct {
        let busiest = h.busiest_thread_cpu_pct.map_or(String::new(), |b| {
            format!(", busiest thread p50 {:.0}%", b.p50)
        });
        line(o, "trainer cpu", format!("p50 {:.0}%{busiest}", c.p50));
    }
    if let Some(w) = h.workers {
        line(o, "workers", format!("{:.0} (p50)", w.p50));
    }
}

fn events(r: &Report, o: &mut String) {
    if r.event_counts.is_empty() {
        return;
    }
    let counts: Vec<String> = r
        .event_counts
        .iter()
        .map(|c| format!("{} {}", c.count, c.kind))
        .collect();
    line(o, "events", counts.join(", "));
    for e in r
        .events
        .iter()
        .filter(|e| e.kind != "checkpoint" && e.kind != "eval")
        .take(8)
    {
        let shown = display::shown(&e.text, Tabs::Space);
        let text = display::truncate(&shown, 56);
        let at = if e.line == 0 {
            short(&e.source).to_string()
        } else {
            format!("{}:{}", short(&e.source), e.line)
        };
        let _ = writeln!(o, "  {at}  {text}");
    }
}

fn short(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

fn line(o: &mut String, label: &str, value: String) {
    let _ = writeln!(o, "{}{value}", display::pad(label, 14));
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

fn bar(share: f64, width: usize) -> String {
    let n = (share.clamp(0.0, 1.0) * width as f64).round() as usize;
    "#".repeat(n)
}
/// What the unlogged time holds: the backward, optimizer and sync when no line times them,
/// else whatever no line times (launches, Python, waits between the timed parts).
pub(super) fn unlogged_words(parts: &[super::PartOut]) -> &'static str {
    if parts
        .iter()
        .any(|p| matches!(p.role, "backward" | "optimizer"))
    {
        "what no timer covers"
    } else {
        "backward, optimizer, sync"
    }
}
