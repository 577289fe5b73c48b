//! The engine: when to evaluate which rules, and each rule's hysteresis. A rule is raised once
//! its symptom has held for `sustain` (scored steps or seconds), stays at least `dwell`, clears
//! only when even its relaxed exit condition fails, and is not raised again within `cooldown`
//! of clearing unless it comes back more severe.

use std::sync::Arc;

use super::params::{Basis, DiagnoseConfig};
use super::rules::RULES;
use super::view::View;
use super::{Alert, Change, ChangeKind, Finding, Severity};
use crate::model::Model;
use crate::parse::record::{EventKind, Record};

/// Alerts and changes kept in full; a run that raises more keeps its first ones.
const ALERTS_KEPT: usize = 500;
const CHANGES_KEPT: usize = 2000;
/// An active alert's evidence is rewritten at most this often (scored steps or seconds):
/// words cost more than checks.
const REFRESH_EVERY: f64 = 10.0;

/// What just reached the model, and so which rules to evaluate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Trigger {
    /// A step record (from any rank), with its step number.
    Step(Option<u64>),
    /// A timing-log record, which may have closed a block (a header, a total, or the first
    /// stage of the next block): evaluated as a step when it did.
    Block,
    /// A hardware sample, at its time.
    Sample(f64),
    /// A reading the log itself prints (its memory monitor): judged by the same rules as the
    /// samples.
    Reading,
    Event(EventKind),
}

impl Trigger {
    /// The trigger a record is, if any.
    pub fn of(rec: &Record) -> Option<Trigger> {
        match rec {
            Record::Step(s) => Some(Trigger::Step(s.step)),
            Record::StageTotal { .. } | Record::StageBlockStart { .. } | Record::Stage(_) => {
                Some(Trigger::Block)
            }
            Record::Event { kind, .. } => Some(Trigger::Event(*kind)),
            Record::HostMem(_) => Some(Trigger::Reading),
            _ => None,
        }
    }
}

/// One rule's hysteresis state. Progress is in the rule's basis: scored steps, or seconds.
#[derive(Clone, Debug, Default)]
struct RuleState {
    /// Since when the enter condition holds (while not active).
    entering: Option<f64>,
    /// Since when even the exit condition fails (while active).
    leaving: Option<f64>,
    /// The active alert (index in `alerts`) and when it was raised.
    active: Option<(usize, f64)>,
    /// When the last alert cleared, and at which severity.
    cleared: Option<(f64, Severity)>,
    /// When the active alert's words were last refreshed.
    refreshed: f64,
    /// The words of the strongest moment so far (largest gain): a cleared alert keeps them,
    /// while an active one shows the latest.
    peak: Option<Finding>,
}

/// The alerts of a run so far.
#[derive(Clone, Debug)]
pub struct Diagnosis {
    cfg: Arc<DiagnoseConfig>,
    states: Vec<RuleState>,
    pub alerts: Vec<Alert>,
    pub changes: Vec<Change>,
    /// Alerts raised beyond `ALERTS_KEPT`, counted only.
    pub alerts_dropped: u64,
    /// Timing blocks closed so far, as last seen.
    blocks: u64,
    /// Steps seen (distinct step numbers in arrival order) and scored.
    steps_seen: u64,
    scored: u64,
    last_step: Option<Option<u64>>,
    /// Steps left unscored after a boundary (eval, checkpoint, epoch end).
    unscored_left: u64,
    /// The ids of the rules with an active alert, as the rules see them.
    active_ids: Vec<&'static str>,
}

impl Diagnosis {
    pub fn new(cfg: DiagnoseConfig) -> Self {
        Diagnosis {
            states: vec![RuleState::default(); RULES.len()],
            cfg: Arc::new(cfg),
            alerts: Vec::new(),
            changes: Vec::new(),
            alerts_dropped: 0,
            blocks: 0,
            steps_seen: 0,
            scored: 0,
            last_step: None,
            unscored_left: 0,
            active_ids: Vec::new(),
        }
    }

    /// Evaluates what `trigger` concerns, after it reached `m`.
    pub fn after(&mut self, m: &Model, trigger: Trigger) {
        match trigger {
            // A block is a step once it is closed, with all its stages.
            Trigger::Block => {
                if m.stages.blocks != self.blocks {
                    self.blocks = m.stages.blocks;
                    self.after(m, Trigger::Step(m.stages.last_closed));
                }
            }
            Trigger::Step(step) => {
                // Every rank logs each step: one evaluation per step, not per line.
                if step.is_some() && self.last_step == Some(step) {
                    return;
                }
                self.last_step = Some(step);
                self.steps_seen += 1;
                let warm = self.steps_seen > self.cfg.warmup_steps;
                if warm && self.unscored_left == 0 {
                    self.scored += 1;
                    self.evaluate(m, &[Basis::Steps, Basis::Events], step, false);
                } else {
                    self.unscored_left = self.unscored_left.saturating_sub(1);
                    self.evaluate(m, &[Basis::Events], step, false);
                }
            }
            Trigger::Sample(_) | Trigger::Reading => {
                let step = m.merged.last_step;
                self.evaluate(m, &[Basis::Seconds], step, false);
            }
            Trigger::Event(kind) => {
                if matches!(
                    kind,
                    EventKind::Eval | EventKind::Checkpoint | EventKind::EpochEnd
                ) {
                    self.unscored_left = self.cfg.boundary_steps;
                }
                self.evaluate(m, &[Basis::Events], m.merged.last_step, true);
            }
        }
    }

    /// The one active alert to fix first: among the rules that name what limits the run
    /// (details only when none is active), the most severe, then the largest estimated gain,
    /// then the earliest raised.
    pub fn verdict(&self) -> Option<&Alert> {
        let detail = |a: &Alert| RULES.iter().any(|r| r.id == a.rule && r.detail);
        let limits = self.active().any(|a| !detail(a));
        self.active()
            .filter(|a| !limits || !detail(a))
            .max_by(|a, b| {
                let gain = |x: &Alert| x.gain.unwrap_or(0.0);
                a.severity
                    .cmp(&b.severity)
                    .then(gain(a).total_cmp(&gain(b)))
                    .then(b.first_time.total_cmp(&a.first_time))
            })
    }

    pub fn active(&self) -> impl Iterator<Item = &Alert> {
        self.states
            .iter()
            .filter_map(|s| s.active.map(|(i, _)| &self.alerts[i]))
    }

    pub fn config(&self) -> &DiagnoseConfig {
        &self.cfg
    }

    /// The ids of the rules with an active alert.
    pub fn active_ids(&self) -> Vec<&'static str> {
        self.active_ids.clone()
    }

    /// Gives every active alert the words of the model as it stands (a report calls this at
    /// the end of its input, so that the evidence is the final one).
    pub fn refresh(&mut self, m: &Model) {
        let cfg = Arc::clone(&self.cfg);
        let view = View::new(m, &cfg, self.active_ids());
        for (i, rule) in RULES.iter().enumerate() {
            let Some((a, _)) = self.states[i].active else {
                continue;
            };
            if let Some(f) = (rule.check)(&view, &cfg.rules[i]).filter(|f| f.stay) {
                reword(&mut self.alerts[a], f);
            }
        }
    }

    fn evaluate(&mut self, m: &Model, bases: &[Basis], step: Option<u64>, from_event: bool) {
        let cfg = Arc::clone(&self.cfg);
        // The active list moves into the view and back: no allocation per evaluation.
        let mut view = View::new(m, &cfg, std::mem::take(&mut self.active_ids));
        let log_time = m.last_time.unwrap_or(0.0);
        for (i, rule) in RULES.iter().enumerate() {
            if !bases.contains(&rule.basis) {
                continue;
            }
            // An event rule's symptom only begins with an event: between events it is
            // evaluated only while it is raised or being sustained.
            let state = &self.states[i];
            if rule.basis == Basis::Events
                && !from_event
                && state.active.is_none()
                && state.entering.is_none()
            {
                continue;
            }
            let (progress, time) = match rule.basis {
                Basis::Steps => (self.scored as f64, log_time),
                Basis::Events => (self.steps_seen as f64, log_time),
                Basis::Seconds => {
                    // Without samples, the log's own readings on the run's clock.
                    let t = m.hardware.latest().map_or_else(|| m.clock(), |s| s.time);
                    (t, t)
                }
            };
            let hidden = rule.hidden_by.iter().any(|id| view.is_active(id));
            view.describe = false;
            let level = if hidden {
                None
            } else {
                (rule.check)(&view, &cfg.rules[i])
            };
            let mut describe = || {
                view.describe = true;
                (rule.check)(&view, &cfg.rules[i])
            };
            self.update(i, level, &mut describe, progress, step, time);
            view.set_active(rule.id, self.states[i].active.is_some());
        }
        self.active_ids = view.into_active();
        self.clear_hidden(step, log_time);
    }

    /// Clears at once every alert that an active, more specific alert now explains, whatever
    /// its basis: the crash hides the low utilization that follows it.
    fn clear_hidden(&mut self, step: Option<u64>, time: f64) {
        for (i, rule) in RULES.iter().enumerate() {
            let hidden = rule.hidden_by.iter().any(|h| self.active_ids.contains(h));
            if self.states[i].active.is_none() || !hidden {
                continue;
            }
            // Not a cool-down: the symptom did not go, it was explained.
            self.clear(i, None, step, time);
        }
    }

    /// One rule's state machine, given its level now; `describe` gives the words when an
    /// alert is raised, escalated or due a refresh.
    fn update(
        &mut self,
        i: usize,
        level: Option<Finding>,
        describe: &mut dyn FnMut() -> Option<Finding>,
        now: f64,
        step: Option<u64>,
        time: f64,
    ) {
        let knobs = &self.cfg.rules[i];
        let (sustain, dwell, cooldown) = (knobs.sustain, knobs.dwell, knobs.cooldown);
        // Steps count the evaluations that held (sustain 5: the fifth such step raises);
        // seconds count the time since the first that held.
        let held = |since: f64| match RULES[i].basis {
            Basis::Seconds => now - since >= sustain,
            Basis::Steps | Basis::Events => now - since + 1.0 >= sustain,
        };
        let rule = RULES[i].id;
        let state = &mut self.states[i];
        let f = level.unwrap_or_default();
        if let Some((a, raised_at)) = state.active {
            let alert = &mut self.alerts[a];
            if f.stay {
                state.leaving = None;
                alert.last_step = step.or(alert.last_step);
                alert.gain = f.gain;
                let escalate = f.enter.filter(|s| *s > alert.severity);
                // Words are refreshed while the symptom is there at the alert's severity, so
                // that an alert never shows the evidence of its fading.
                let full = f.enter.is_some_and(|s| s >= alert.severity);
                if escalate.is_some() || (full && now - state.refreshed >= REFRESH_EVERY) {
                    state.refreshed = now;
                    if let Some(words) = describe().filter(|w| w.stay) {
                        let strength = |f: &Finding| f.strength.or(f.gain).unwrap_or(0.0);
                        if state
                            .peak
                            .as_ref()
                            .is_none_or(|p| strength(&words) >= strength(p))
                        {
                            state.peak = Some(words.clone());
                        }
                        reword(alert, words);
                    }
                }
                if let Some(sev) = escalate {
                    alert.severity = sev;
                    push_change(
                        &mut self.changes,
                        time,
                        step,
                        rule,
                        sev,
                        ChangeKind::Escalated,
                        a,
                    );
                }
                return;
            }
            let since = *state.leaving.get_or_insert(now);
            if held(since) && now - raised_at >= dwell {
                self.clear(i, Some(now), step, time);
            }
            return;
        }
        let Some(sev) = f.enter else {
            state.entering = None;
            return;
        };
        let since = *state.entering.get_or_insert(now);
        if !held(since) {
            return;
        }
        if let Some((at, was)) = state.cleared
            && now - at < cooldown
            && sev <= was
        {
            return;
        }
        state.entering = None;
        if self.alerts.len() >= ALERTS_KEPT {
            self.alerts_dropped += 1;
            return;
        }
        let f = describe().filter(|w| w.enter.is_some()).unwrap_or(f);
        state.peak = Some(f.clone());
        let a = self.alerts.len();
        self.alerts.push(Alert {
            rule,
            severity: sev,
            title: f.title,
            evidence: f.evidence,
            gain: f.gain,
            actions: f.actions,
            first_step: step,
            first_time: time,
            last_step: step,
            cleared_step: None,
            cleared_time: None,
        });
        state.active = Some((a, now));
        state.refreshed = now;
        push_change(
            &mut self.changes,
            time,
            step,
            rule,
            sev,
            ChangeKind::Raised,
            a,
        );
    }
}

impl Diagnosis {
    /// Clears rule `i`'s active alert; `cooldown_from` starts its cool-down (None when it was
    /// explained by another alert rather than gone).
    fn clear(&mut self, i: usize, cooldown_from: Option<f64>, step: Option<u64>, time: f64) {
        let Some((a, _)) = self.states[i].active else {
            return;
        };
        let alert = &mut self.alerts[a];
        if let Some(peak) = self.states[i].peak.take() {
            reword(alert, peak);
        }
        alert.cleared_step = step;
        alert.cleared_time = Some(time);
        let sev = alert.severity;
        self.states[i] = RuleState {
            cleared: cooldown_from.map(|now| (now, sev)),
            ..RuleState::default()
        };
        let rule = RULES[i].id;
        self.active_ids.retain(|id| *id != rule);
        push_change(
            &mut self.changes,
            time,
            step,
            rule,
            sev,
            ChangeKind::Cleared,
            a,
        );
    }
}

/// An active alert's words (and gain) from a described finding.
fn reword(alert: &mut Alert, f: Finding) {
    alert.title = f.title;
    alert.evidence = f.evidence;
    alert.gain = f.gain;
    alert.actions = f.actions;
}

fn push_change(
    changes: &mut Vec<Change>,
    time: f64,
    step: Option<u64>,
    rule: &'static str,
    severity: Severity,
    change: ChangeKind,
    alert: usize,
) {
    if changes.len() < CHANGES_KEPT {
        changes.push(Change {
            time,
            step,
            rule,
            severity,
            change,
            alert,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{ModelConfig, Stamp};
    use crate::parse::record::StepRecord;

    /// A model and its diagnosis fed steps of 100 ms with the given data times.
    struct Run {
        m: Model,
        d: Diagnosis,
        step: u64,
    }

    impl Run {
        fn new() -> Run {
            Run {
                m: Model::new(ModelConfig::default()),
                d: Diagnosis::new(DiagnoseConfig::default()),
                step: 0,
            }
        }

        fn step(&mut self, data_ms: f64) {
            self.step += 1;
            let rec = Record::Step(StepRecord {
                step: Some(self.step),
                step_time_ms: Some(100.0),
                data_time_ms: Some(data_ms),
                ..StepRecord::default()
            });
            let stamp = Stamp {
                time: self.step as f64 * 0.1,
                real_time: true,
                ..Stamp::default()
            };
            let t = Trigger::of(&rec).expect("a step triggers");
            self.m.apply(&stamp, rec);
            self.d.after(&self.m, t);
        }

        fn event(&mut self, kind: EventKind) {
            let rec = Record::Event {
                kind,
                text: String::new(),
            };
            let t = Trigger::of(&rec).expect("an event triggers");
            self.m.apply(&Stamp::default(), rec);
            self.d.after(&self.m, t);
        }

        fn alerts(&self, rule: &str) -> Vec<&Alert> {
            self.d.alerts.iter().filter(|a| a.rule == rule).collect()
        }
    }

    #[test]
    fn raised_after_warm_up_and_sustain_with_evidence_then_cleared() {
        let mut r = Run::new();
        // 30 ms of every 100 ms step: crit (20%) from the first scored step on.
        for _ in 0..40 {
            r.step(30.0);
        }
        let a = r.alerts("data_loading_bound");
        assert_eq!(a.len(), 1);
        // Warm-up is steps 1-10; the fifth scored step with the symptom raises.
        assert_eq!(a[0].first_step, Some(15));
        assert_eq!(a[0].severity, Severity::Crit);
        assert_eq!(a[0].gain, Some(0.3));
        assert!(
            a[0].evidence[0].starts_with("data_time 30.0 ms of a 100.0 ms step (30%)"),
            "{:?}",
            a[0].evidence
        );
        assert!(a[0].actions[0].contains("num_workers"));
        assert_eq!(r.d.verdict().map(|v| v.rule), Some("data_loading_bound"));
        // The symptom goes: it clears once the window has forgotten it and the exit held.
        for _ in 0..60 {
            r.step(0.5);
        }
        let a = r.alerts("data_loading_bound");
        assert_eq!(a.len(), 1);
        let cleared = a[0].cleared_step.expect("cleared");
        assert!((55..=70).contains(&cleared), "cleared at {cleared}");
        assert!(r.d.verdict().is_none_or(|v| v.rule != "data_loading_bound"));
        let kinds: Vec<ChangeKind> =
            r.d.changes
                .iter()
                .filter(|c| c.rule == "data_loading_bound")
                .map(|c| c.change)
                .collect();
        assert_eq!(kinds, [ChangeKind::Raised, ChangeKind::Cleared]);
    }

    #[test]
    fn a_signal_hovering_at_the_threshold_raises_once() {
        let mut r = Run::new();
        // The share swings around 10% (warn), never under the 7% exit once raised.
        for i in 0..400 {
            r.step(if i % 2 == 0 { 11.5 } else { 8.5 });
        }
        assert_eq!(r.alerts("data_loading_bound").len(), 1);
        // Now it flaps across the exit as well: at most one raise per cool-down (50 steps).
        let mut r = Run::new();
        for i in 0..600 {
            let phase = (i / 30) % 2 == 0;
            r.step(if phase { 15.0 } else { 1.0 });
        }
        let raised = r.alerts("data_loading_bound").len();
        let scored = 600 - 10;
        assert!(
            raised <= scored / 50 + 1,
            "{raised} raises in {scored} scored steps"
        );
        assert!(
            raised >= 2,
            "it does raise again after the cool-down: {raised}"
        );
    }

    #[test]
    fn an_active_alert_shows_the_latest_words_and_a_cleared_one_its_strongest() {
        let mut r = Run::new();
        for _ in 0..40 {
            r.step(40.0);
        }
        for _ in 0..40 {
            r.step(25.0);
        }
        let a = r.alerts("data_loading_bound");
        assert!(a[0].active());
        assert!(
            a[0].evidence[0].starts_with("data_time 25.0 ms"),
            "{:?}",
            a[0].evidence
        );
        for _ in 0..60 {
            r.step(0.5);
        }
        let a = r.alerts("data_loading_bound");
        assert!(!a[0].active());
        assert!(
            a[0].evidence[0].starts_with("data_time 40.0 ms"),
            "{:?}",
            a[0].evidence
        );
        assert_eq!(a[0].gain, Some(0.4));
    }

    #[test]
    fn warn_escalates_to_crit_in_place() {
        let mut r = Run::new();
        for _ in 0..30 {
            r.step(12.0);
        }
        for _ in 0..30 {
            r.step(40.0);
        }
        let a = r.alerts("data_loading_bound");
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].severity, Severity::Crit);
        let kinds: Vec<ChangeKind> = r.d.changes.iter().map(|c| c.change).collect();
        assert_eq!(kinds, [ChangeKind::Raised, ChangeKind::Escalated]);
    }

    #[test]
    fn steps_after_an_eval_are_not_scored() {
        let mut r = Run::new();
        for _ in 0..20 {
            r.step(0.1);
        }
        // From step 21 on each step only waits for data: the window's share passes 10% at
        // step 22. The three steps after the eval are not scored, so the symptom is first
        // scored at step 24 and the fifth scored step is 28 (without the eval: 26).
        r.event(EventKind::Eval);
        for _ in 0..20 {
            r.step(100.0);
        }
        let a = r.alerts("data_loading_bound");
        assert_eq!(a.first().and_then(|a| a.first_step), Some(28));
    }

    #[test]
    fn a_crash_is_critical_at_once_and_a_specific_rule_hides_the_generic_one() {
        let mut r = Run::new();
        for _ in 0..20 {
            r.step(0.1);
        }
        r.event(EventKind::CudaOom);
        let a = r.alerts("crash_event");
        assert_eq!(a.len(), 1);
        assert_eq!(a[0].severity, Severity::Crit);
        assert_eq!(r.d.verdict().map(|v| v.rule), Some("crash_event"));
        // compute_bound was active before the crash; the crash hides it.
        assert!(!r.d.active().any(|a| a.rule == "compute_bound"));
    }
}
