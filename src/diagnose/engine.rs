//! The engine: when to evaluate which rules, and each rule's hysteresis. A rule is raised once
//! its symptom has held for `sustain` (scored steps or seconds), stays at least `dwell`, clears
//! only when even its relaxed exit condition fails, and is not raised again within `cooldown`
//! of clearing unless it comes back more severe.

use super::params::{Basis, DiagnoseConfig};
use super::rules::RULES;
use super::view::View;
use super::{Alert, Change, ChangeKind, Finding, Severity};
use crate::model::Model;
use crate::parse::record::{EventKind, Record};

/// Alerts and changes kept in full; a run that raises more keeps its first ones.
const ALERTS_KEPT: usize = 500;
const CHANGES_KEPT: usize = 2000;

/// What just reached the model, and so which rules to evaluate.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Trigger {
    /// A step record (from any rank), with its step number.
    Step(Option<u64>),
    /// A timing block closed, with the step it belongs to.
    Block(Option<u64>),
    /// A hardware sample, at its time.
    Sample(f64),
    Event(EventKind),
}

impl Trigger {
    /// The trigger a record is, if any.
    pub fn of(rec: &Record) -> Option<Trigger> {
        match rec {
            Record::Step(s) => Some(Trigger::Step(s.step)),
            Record::StageTotal { step, .. } | Record::StageBlockStart { step } => {
                Some(Trigger::Block(*step))
            }
            Record::Event { kind, .. } => Some(Trigger::Event(*kind)),
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
}

/// The alerts of a run so far.
#[derive(Clone, Debug)]
pub struct Diagnosis {
    cfg: DiagnoseConfig,
    states: Vec<RuleState>,
    pub alerts: Vec<Alert>,
    pub changes: Vec<Change>,
    /// Alerts raised beyond `ALERTS_KEPT`, counted only.
    pub alerts_dropped: u64,
    /// Steps seen (distinct step numbers in arrival order) and scored.
    steps_seen: u64,
    scored: u64,
    last_step: Option<Option<u64>>,
    /// Steps left unscored after a boundary (eval, checkpoint, epoch end).
    unscored_left: u64,
}

impl Diagnosis {
    pub fn new(cfg: DiagnoseConfig) -> Self {
        Diagnosis {
            states: vec![RuleState::default(); RULES.len()],
            cfg,
            alerts: Vec::new(),
            changes: Vec::new(),
            alerts_dropped: 0,
            steps_seen: 0,
            scored: 0,
            last_step: None,
            unscored_left: 0,
        }
    }

    /// Evaluates what `trigger` concerns, after it reached `m`.
    pub fn after(&mut self, m: &Model, trigger: Trigger) {
        match trigger {
            Trigger::Step(step) | Trigger::Block(step) => {
                // Every rank logs each step: one evaluation per step, not per line.
                if step.is_some() && self.last_step == Some(step) {
                    return;
                }
                self.last_step = Some(step);
                self.steps_seen += 1;
                let warm = self.steps_seen > self.cfg.warmup_steps;
                if warm && self.unscored_left == 0 {
                    self.scored += 1;
                    self.evaluate(m, &[Basis::Steps, Basis::Events], step);
                } else {
                    self.unscored_left = self.unscored_left.saturating_sub(1);
                    self.evaluate(m, &[Basis::Events], step);
                }
            }
            Trigger::Sample(_) => {
                let step = m.merged.last_step;
                self.evaluate(m, &[Basis::Seconds], step);
            }
            Trigger::Event(kind) => {
                if matches!(
                    kind,
                    EventKind::Eval | EventKind::Checkpoint | EventKind::EpochEnd
                ) {
                    self.unscored_left = self.cfg.boundary_steps;
                }
                self.evaluate(m, &[Basis::Events], m.merged.last_step);
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

    /// Whether rule `id` has an active alert.
    pub fn is_active(&self, id: &str) -> bool {
        RULES
            .iter()
            .zip(&self.states)
            .any(|(r, s)| r.id == id && s.active.is_some())
    }

    pub fn config(&self) -> &DiagnoseConfig {
        &self.cfg
    }

    fn evaluate(&mut self, m: &Model, bases: &[Basis], step: Option<u64>) {
        let time = m.last_time.unwrap_or(0.0);
        for (i, rule) in RULES.iter().enumerate() {
            if !bases.contains(&rule.basis) {
                continue;
            }
            let progress = match rule.basis {
                Basis::Steps => self.scored as f64,
                Basis::Events => self.steps_seen as f64,
                Basis::Seconds => m.hardware.latest.as_ref().map_or(time, |s| s.time),
            };
            let hidden = rule.hidden_by.iter().any(|id| self.is_active(id));
            let finding = if hidden {
                None
            } else {
                let view = View::new(m, &self.cfg, self);
                (rule.check)(&view, &self.cfg.rules[i])
            };
            let time = if rule.basis == Basis::Seconds {
                progress
            } else {
                time
            };
            self.update(i, finding, progress, step, time);
        }
    }

    /// One rule's state machine, given what it sees now.
    fn update(&mut self, i: usize, f: Option<Finding>, now: f64, step: Option<u64>, time: f64) {
        let knobs = &self.cfg.rules[i];
        let (sustain, dwell, cooldown) = (
            knobs.get("sustain"),
            knobs.get("dwell"),
            knobs.get("cooldown"),
        );
        // Steps count the evaluations that held (sustain 5: the fifth such step raises);
        // seconds count the time since the first that held.
        let held = |since: f64| match RULES[i].basis {
            Basis::Seconds => now - since >= sustain,
            Basis::Steps | Basis::Events => now - since + 1.0 >= sustain,
        };
        let rule = RULES[i].id;
        let state = &mut self.states[i];
        let f = f.unwrap_or_default();
        if let Some((a, raised_at)) = state.active {
            let alert = &mut self.alerts[a];
            if f.stay {
                state.leaving = None;
                alert.last_step = step.or(alert.last_step);
                if !f.evidence.is_empty() {
                    alert.evidence = f.evidence;
                    alert.title = f.title;
                    alert.gain = f.gain;
                    alert.actions = f.actions;
                }
                if let Some(sev) = f.enter.filter(|s| *s > alert.severity) {
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
                alert.cleared_step = step;
                alert.cleared_time = Some(time);
                state.cleared = Some((now, alert.severity));
                state.active = None;
                state.leaving = None;
                let sev = alert.severity;
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
