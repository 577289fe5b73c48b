//! The header: which run, in what format, how far along, how fast, and whether the files are
//! being followed.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::View;
use crate::common::units::{duration, gib, ms, num};
use crate::input::FILES_FOLLOWED;
use crate::model::baseline::change;
use crate::monitor::msg::FileStatus;
use crate::settings::theme::Role;
use crate::sink::ui::state::ReplayUi;
use crate::sink::ui::widgets::{ago, fit};

/// Seconds without a step after which the header says how long ago the last one came.
pub const QUIET_S: f64 = 10.0;

pub fn render(f: &mut Frame, area: Rect, v: &View) {
    let [top, bottom] = Layout::vertical([Constraint::Length(1); 2]).areas(area);
    let m = &v.mon.model;
    let g = &m.merged;
    let total = g.total.or(m.facts.total_steps);
    let progress = match (g.last_step, total) {
        (Some(s), Some(t)) if t > 0 => {
            let share = (s as f64 / t as f64).clamp(0.0, 1.0);
            let filled = (share * 12.0).round() as usize;
            vec![
                v.span(format!("step {s}/{t} "), Role::Title),
                v.span("█".repeat(filled), Role::Chart),
                v.span("░".repeat(12 - filled), Role::Muted),
                v.span(format!(" {:.1}%", share * 100.0), Role::Text),
            ]
        }
        (Some(s), _) => vec![v.span(format!("step {s}"), Role::Title)],
        // A timing log has blocks, not step lines.
        (None, _) if m.stages.blocks > 0 => {
            vec![v.span(format!("{} timing blocks", m.stages.blocks), Role::Title)]
        }
        (None, _) => vec![v.span("no step yet", Role::Muted)],
    };
    let progress = Line::from(progress);
    let width = progress.width() as u16;
    let [left, right] =
        Layout::horizontal([Constraint::Min(0), Constraint::Length(width)]).areas(top);
    let run = Line::from(sources(v, left.width as usize));
    f.render_widget(Paragraph::new(run), left);
    f.render_widget(Paragraph::new(progress), right);
    f.render_widget(Paragraph::new(Line::from(figures(v))), bottom);
}

/// `steptop  train.log (hf) following`, and how many more files.
fn sources<'a>(v: &View, width: usize) -> Vec<Span<'a>> {
    let mut out = vec![v.span("steptop ", Role::Title)];
    let Some(first) = v.mon.sources.iter().find(|s| !s.path.is_empty()) else {
        out.push(v.span("waiting for the logs", Role::Muted));
        return out;
    };
    let format = first
        .stats
        .formats
        .primary()
        .map(|f| format!(" ({})", f.name()))
        .unwrap_or_default();
    let (state, role) = match (&v.mon.stopped, &first.status) {
        (Some(why), _) => (format!("stopped: {why}"), Role::Crit),
        (None, _) if v.ui.replay.is_some() => ("replay".into(), Role::Info),
        (None, Some(FileStatus::Waiting)) => ("waiting for the file".into(), Role::Warn),
        (None, Some(FileStatus::Truncated)) => ("truncated, read again".into(), Role::Info),
        (None, Some(FileStatus::Rotated)) => ("rotated, new file".into(), Role::Info),
        (None, Some(FileStatus::Deleted)) => ("deleted".into(), Role::Warn),
        (None, Some(FileStatus::Unreadable(why))) => (format!("unreadable: {why}"), Role::Crit),
        (None, Some(FileStatus::NotFollowed)) => ("not followed".into(), Role::Warn),
        (None, Some(FileStatus::Damaged(why))) => (format!("damaged: {why}"), Role::Warn),
        (None, _) if !v.mon.caught_up() => match v.mon.history_progress() {
            Some((read, total)) => (
                format!(
                    "reading history {:.0}% of {}",
                    read as f64 * 100.0 / total as f64,
                    gib(total)
                ),
                Role::Muted,
            ),
            None => ("reading history".into(), Role::Muted),
        },
        (None, _) => ("following".into(), Role::Ok),
    };
    let more = v.mon.sources.iter().filter(|s| !s.path.is_empty()).count() - 1;
    let left_out = v
        .mon
        .sources
        .iter()
        .any(|s| s.status == Some(FileStatus::NotFollowed));
    let more = match (more, left_out) {
        (_, true) => format!(" +{} more, the rest not followed", FILES_FOLLOWED - 1),
        (0, false) => String::new(),
        (n, false) => format!(" +{n} more"),
    };
    let room = width.saturating_sub(8 + format.len() + state.len() + more.len() + 2);
    let name = first.path.rsplit('/').next().unwrap_or(&first.path);
    out.push(v.span(fit(name, room.max(8)), Role::Text));
    out.push(v.span(format, Role::Muted));
    out.push(v.span(more, Role::Muted));
    out.push(Span::raw(" "));
    out.push(v.span(state, role));
    out
}

/// The job's end, once it came: `job exited (0)` under `steptop run`, or the trainer the
/// probes watched (`--pid`) gone.
fn job_ended(v: &View) -> Option<(String, Role)> {
    if let Some((_, code, signal)) = v.mon.job_ended {
        return Some(match (code, signal) {
            (Some(0), _) => ("job exited (0)".to_string(), Role::Ok),
            (Some(c), _) => (format!("job exited ({c})"), Role::Crit),
            (None, Some(s)) => (format!("job killed (signal {s})"), Role::Crit),
            (None, None) => ("job ended".to_string(), Role::Warn),
        });
    }
    let hw = &v.mon.model.hardware;
    let seen = hw.recent.iter().find_map(|s| s.trainer.as_ref())?;
    hw.latest()
        .is_some_and(|s| s.trainer.is_none())
        .then(|| (format!("trainer {} exited", seen.pid), Role::Warn))
}

/// Where a replay is: `replay 10x 37% +1:02:03`, paused, or finished.
fn replay(r: &ReplayUi) -> (String, Role) {
    let p = &r.position;
    let at = match (p.start, p.time) {
        (Some(a), Some(b)) => format!(" +{}", duration(b - a)),
        _ => String::new(),
    };
    let share = format!("{:.0}%", p.share() * 100.0);
    if p.finished {
        (format!("replay finished{at}"), Role::Muted)
    } else if r.paused {
        (format!("replay PAUSED (space) {share}{at}"), Role::Warn)
    } else {
        (
            format!("replay {} {share}{at}", r.speed.label()),
            Role::Info,
        )
    }
}

/// Epoch, elapsed, ETA, rates, and how long ago the last step came when it is a while.
fn figures<'a>(v: &View) -> Vec<Span<'a>> {
    let m = &v.mon.model;
    let g = &m.merged;
    let window = m.cfg.window_steps;
    let mut parts: Vec<(String, Role)> = Vec::new();
    if let Some(e) = g.epoch {
        parts.push((format!("epoch {}", num(e)), Role::Text));
    }
    if let Some(w) = m.timeline.wall_s() {
        parts.push((format!("elapsed {}", duration(w)), Role::Text));
    }
    if g.finished() {
        parts.push(("finished".to_string(), Role::Ok));
    } else if let Some(eta) = g.eta_s(window).or(g.logged_eta_s) {
        parts.push((format!("ETA {}", duration(eta)), Role::Text));
    }
    let base = v.mon.baseline.as_ref();
    // Against a baseline: `29.1 samples/s (baseline 29.8, -2%)`.
    let against = |now: f64, then: Option<f64>| match then {
        Some(t) if t != 0.0 => format!(" (baseline {}, {})", num(t), change(now / t)),
        _ => String::new(),
    };
    if let Some(s) = g.samples_per_s.recent(window) {
        let vs = against(s.p50, base.and_then(|b| b.samples_per_s));
        parts.push((format!("{} samples/s{vs}", num(s.p50)), Role::Info));
    }
    if let Some(s) = g.iters_per_s.recent(window) {
        let vs = against(s.p50, base.and_then(|b| b.iters_per_s));
        parts.push((format!("{} it/s{vs}", num(s.p50)), Role::Info));
    }
    // LLM runs count tokens: the job's, else one GPU's.
    if let Some(s) = g.tokens_per_s.recent(window) {
        let vs = against(s.p50, base.and_then(|b| b.tokens_per_s));
        parts.push((format!("{} tokens/s{vs}", num(s.p50)), Role::Info));
    } else if let Some(s) = g.tokens_per_gpu_s.recent(window) {
        parts.push((format!("{} tokens/s a GPU", num(s.p50)), Role::Info));
    }
    if let Some(m) = g.mfu_pct {
        parts.push((format!("MFU {m:.1}%"), Role::Text));
    }
    // Many ranks are a spread and the slowest, never a list.
    if let Some(s) = m.rank_spread(1)
        && let (Some(t), Some(slow)) = (s.step_time_ms, s.slowest.first())
    {
        let lag = s
            .lag_steps
            .filter(|l| l.max > 0.0)
            .map(|l| {
                format!(
                    " · behind p50 {:.0} p95 {:.0} max {:.0}",
                    l.p50, l.p95, l.max
                )
            })
            .unwrap_or_default();
        parts.push((
            format!(
                "{} ranks p50 {} p95 {} max {}{lag} · slowest {} {}",
                s.ranks,
                ms(t.p50),
                ms(t.p95),
                ms(t.max),
                slow.rank,
                ms(slow.step_time_ms)
            ),
            Role::Text,
        ));
    }
    if let Some(age) = v.step_age.filter(|a| *a >= QUIET_S) {
        parts.push((format!("last step {} ago", ago(age)), Role::Warn));
    }
    if let Some(ended) = job_ended(v) {
        parts.push(ended);
    }
    if v.ui.paused {
        parts.push(("PAUSED (p)".into(), Role::Warn));
    }
    if let Some(r) = &v.ui.replay {
        parts.push(replay(r));
    }
    let mut out = Vec::new();
    for (i, (text, role)) in parts.into_iter().enumerate() {
        if i > 0 {
            out.push(v.span(" · ", Role::Muted));
        }
        out.push(v.span(text, role));
    }
    out
}
