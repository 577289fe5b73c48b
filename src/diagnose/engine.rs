//! The engine: when to evaluate which rules, and each rule's hysteresis. A rule is raised once
//! its symptom has held for `sustain` (scored steps or seconds), stays at least `dwell`, clears
//! only when even its relaxed exit condition fails, and is not raised again within `cooldown`
//! of clearing unless it comes back more severe.

use std::collections::VecDeque;
use std::sync::Arc;

use super::DiagnoseConfig;
use super::needs::Needs;
use super::params::Basis;
use super::rules::RULES;
use super::signals::View;
use super::{Alert, Change, ChangeKind, Finding, Severity};
use crate::model::Model;
use crate::parse::record::{EventKind, Record};

/// Alerts kept in full: every active one, the first `FIRST_KEPT` of the run, and the latest
/// others up to `ALERTS_KEPT` in all. An older cleared alert is retired: counted (per rule, by
/// severity), no longer listed. A run of weeks that raises thousands keeps alerting to the end.
const ALERTS_KEPT: usize = 500;
const FIRST_KEPT: usize = 50;
/// The latest changes kept for readers that come later (a report); headless, hooks and
/// metrics read each change as it is made, however long the run.
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
    /// The live loop read the clock, at this time: the rules that count seconds see time
    /// pass when no sample comes (probes off).
    Tick(f64),
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
    /// The active alert (its id) and when it was raised.
    active: Option<(u64, f64)>,
    /// Where the active alert was last found among the kept ones: it moves only when an
    /// older alert is retired, so the search is usually skipped.
    slot: usize,
    /// When the last alert cleared, and at which severity.
    cleared: Option<(f64, Severity)>,
    /// When the active alert's words were last refreshed.
    refreshed: f64,
    /// The words of the strongest moment so far (largest gain): a cleared alert keeps them,
    /// while an active one shows the latest. Boxed: every new run resets every rule's state.
    peak: Option<Box<Finding>>,
}

/// The alerts of a run so far.
#[derive(Clone, Debug)]
pub struct Diagnosis {
    cfg: Arc<DiagnoseConfig>,
    states: Vec<RuleState>,
    /// The alerts kept, in the order raised (see `ALERTS_KEPT`). A deque: the alert retired
    /// is usually the first past `FIRST_KEPT`, and removing it moves the few before it rather
    /// than the hundreds after.
    pub alerts: VecDeque<Alert>,
    /// The id of each kept alert, ascending: ids count every alert ever raised.
    alert_ids: VecDeque<u64>,
    /// The latest changes, oldest first, and how many were ever made.
    changes: VecDeque<Change>,
    changes_made: u64,
    /// Times an alert's words were rewritten: with the changes, what a view that shows the
    /// words must redraw for.
    rewords: u64,
    /// Old cleared alerts no longer kept.
    pub alerts_retired: u64,
    /// Alerts raised per rule (in `RULES` order), by the severity raised at, and by the
    /// severity they have now: counted for every alert, kept or retired.
    raised_by_rule: Vec<u64>,
    raised_at: [u64; 3],
    now_at: [u64; 3],
    /// Timing blocks closed so far, as last seen.
    blocks: u64,
    /// Steps seen (distinct step numbers in arrival order) and scored.
    steps_seen: u64,
    scored: u64,
    last_step: Option<Option<u64>>,
    /// Steps left unscored after a boundary (eval, checkpoint, epoch end).
    unscored_left: u64,
    /// The ids of the rules with an active alert, as the rules see them, and the same as
    /// bits of their places in `RULES`.
    active_ids: Vec<&'static str>,
    active_mask: u64,
    /// The rules with an alert active or a sustain under way (their states' `active` or
    /// `entering`), as bits: evaluated even when they could not raise.
    busy: u64,
    /// The rules of each basis, as bits: steps, seconds, events.
    of_basis: [u64; 3],
    /// The rules whose needs the facts last read meet, as bits, and those facts.
    met: (Needs, u64),
    /// Per rule, the bits of the rules that hide it (its `hidden_by`).
    hidden_by: Vec<u64>,
    /// The id the first alert of the current run has (or will have): alerts of earlier runs
    /// in the same file are history, not this run's.
    run_first_id: u64,
    /// Steps evaluated (every run counted): what the diagnosis's cost is counted per.
    steps_evaluated: u64,
    /// The step at which the current run's rules began to judge: the steps before it were
    /// its warm-up (a loader's first fetches, a compile). None until then.
    pub judged_from: Option<Option<u64>>,
    /// Whether the rules that count seconds count them on this machine's clock (samples,
    /// ticks) rather than the log's: times taken on one are not compared with the other.
    on_wall: bool,
}

impl Diagnosis {
    pub fn new(cfg: DiagnoseConfig) -> Self {
        Diagnosis {
            states: vec![RuleState::default(); RULES.len()],
            cfg: Arc::new(cfg),
            alerts: VecDeque::new(),
            alert_ids: VecDeque::new(),
            changes: VecDeque::new(),
            changes_made: 0,
            rewords: 0,
            alerts_retired: 0,
            raised_by_rule: vec![0; RULES.len()],
            raised_at: [0; 3],
            now_at: [0; 3],
            blocks: 0,
            steps_seen: 0,
            scored: 0,
            last_step: None,
            unscored_left: 0,
            active_ids: Vec::new(),
            active_mask: 0,
            busy: 0,
            of_basis: [Basis::Steps, Basis::Seconds, Basis::Events].map(|b| bits(|r| r.basis == b)),
            met: (Needs::ALL, bits(|_| true)),
            hidden_by: RULES.iter().map(|r| mask_of(r.hidden_by)).collect(),
            run_first_id: 0,
            steps_evaluated: 0,
            judged_from: None,
            on_wall: false,
        }
    }

    /// A new run began (its file's step count went back) at `step`, `time`: the alerts of the
    /// last run clear, and the rules start over as at the start of a log (warm-up, sustain).
    pub fn new_run(&mut self, step: Option<u64>, time: f64) {
        // A log that restarts often starts thousands of runs: only the rules with an alert
        // have one to clear.
        for i in 0..RULES.len() {
            if self.states[i].active.is_some() {
                self.clear(i, None, step, time);
            }
        }
        self.states.fill_with(RuleState::default);
        self.busy = 0;
        self.steps_seen = 0;
        self.scored = 0;
        self.last_step = None;
        self.unscored_left = 0;
        self.judged_from = None;
        self.run_first_id = self.raised();
    }

    /// The kept alerts raised in the current run.
    pub fn run_alerts(&self) -> impl Iterator<Item = &Alert> {
        let from = self.alert_ids.partition_point(|id| *id < self.run_first_id);
        self.alerts.range(from..)
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
                self.steps_evaluated += 1;
                let warm = self.steps_seen > self.cfg.warmup_steps;
                if warm && self.unscored_left == 0 {
                    self.judged_from.get_or_insert(step);
                    self.scored += 1;
                    self.evaluate(m, &[Basis::Steps, Basis::Events], step, false);
                } else {
                    self.unscored_left = self.unscored_left.saturating_sub(1);
                    self.evaluate(m, &[Basis::Events], step, false);
                }
            }
            Trigger::Sample(_) | Trigger::Tick(_) | Trigger::Reading => {
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
            .filter_map(|s| s.active.and_then(|(id, _)| self.alert(id)))
    }

    /// The alert with this id, while it is kept (active ones always are).
    pub fn alert(&self, id: u64) -> Option<&Alert> {
        let i = self.alert_ids.binary_search(&id).ok()?;
        self.alerts.get(i)
    }

    /// The changes from number `from` on (numbers count every change ever made), with their
    /// numbers; those no longer kept are skipped.
    pub fn changes_since(&self, from: u64) -> impl Iterator<Item = (u64, &Change)> {
        let first = self.changes_made - self.changes.len() as u64;
        // A range, not a skip: headless asks after every line, and skipping through the
        // kept changes one by one cost more than the line.
        let skip = (from.saturating_sub(first) as usize).min(self.changes.len());
        (first + skip as u64..).zip(self.changes.range(skip..))
    }

    /// Moves whenever an alert is raised, escalated, cleared or reworded: a view that shows
    /// alerts has something new to draw when it differs from the last it drew.
    pub fn revision(&self) -> u64 {
        self.changes_made + self.rewords
    }

    /// Alerts ever raised.
    pub fn raised(&self) -> u64 {
        self.raised_at.iter().sum()
    }

    /// Alerts ever raised at `sev` (an escalation does not move them).
    pub fn raised_at(&self, sev: Severity) -> u64 {
        self.raised_at[sev as usize]
    }

    /// Alerts ever raised whose severity is now `sev` (escalations counted where they ended).
    pub fn now_at(&self, sev: Severity) -> u64 {
        self.now_at[sev as usize]
    }

    /// Alerts ever raised, per rule that raised any.
    pub fn raised_by_rule(&self) -> impl Iterator<Item = (&'static str, u64)> {
        RULES
            .iter()
            .zip(&self.raised_by_rule)
            .filter(|(_, n)| **n > 0)
            .map(|(r, n)| (r.id, *n))
    }

    /// Steps evaluated so far, every run of the input counted.
    pub fn steps_evaluated(&self) -> u64 {
        self.steps_evaluated
    }

    pub fn config(&self) -> &DiagnoseConfig {
        &self.cfg
    }

    /// The rules with an active alert as a view takes them: their ids and their bits.
    pub fn active_set(&self) -> (Vec<&'static str>, u64) {
        (self.active_ids.clone(), self.active_mask)
    }

    /// Gives every active alert the words of the model as it stands (a report calls this at
    /// the end of its input, so that the evidence is the final one).
    pub fn refresh(&mut self, m: &Model) {
        let cfg = Arc::clone(&self.cfg);
        let view = View::new(m, cfg.windows().settled(self.scored), self.active_set());
        for (i, rule) in RULES.iter().enumerate() {
            let Some((id, _)) = self.states[i].active else {
                continue;
            };
            if let Some(f) = (rule.check)(&view, &cfg.rules[i]).filter(|f| f.stay)
                && let Ok(a) = self.alert_ids.binary_search(&id)
            {
                reword(&mut self.alerts[a], f);
                self.rewords += 1;
            }
        }
    }

    fn evaluate(&mut self, m: &Model, bases: &[Basis], step: Option<u64>, from_event: bool) {
        let cfg = Arc::clone(&self.cfg);
        // The active list moves into the view and back: no allocation per evaluation.
        let active = (
            std::mem::take(&mut self.active_ids),
            std::mem::take(&mut self.active_mask),
        );
        let mut view = View::new(m, cfg.windows().settled(self.scored), active);
        let log_time = m.last_time.unwrap_or(0.0);
        // An event rule's symptom only begins with an event: between events it is
        // evaluated only while it is raised or being sustained. A rule without what it needs
        // has no symptom: passed over unless it has an alert to clear or a sustain to break.
        // What is passed over changes no state, so the rules to visit are known up front,
        // and visited in `RULES` order.
        let has = if cfg.every_rule {
            Needs::ALL
        } else {
            Needs::of(m)
        };
        if self.met.0 != has {
            self.met = (has, bits(|r| r.needs.met_by(has)));
        }
        let of = |b: Basis| match b {
            Basis::Steps => self.of_basis[0],
            Basis::Seconds => self.of_basis[1],
            Basis::Events => self.of_basis[2],
        };
        let in_bases = bases.iter().fold(0, |all, b| all | of(*b));
        let quiet = if from_event { 0 } else { of(Basis::Events) };
        if in_bases & self.of_basis[1] != 0 && m.wall.now.is_some() != self.on_wall {
            self.on_wall = m.wall.now.is_some();
            self.restart_seconds(m.wall.now.unwrap_or_else(|| m.rule_clock()));
        }
        let mut visit = in_bases & (!(quiet | !self.met.1) | self.busy);
        while visit != 0 {
            let i = visit.trailing_zeros() as usize;
            visit &= visit - 1;
            let rule = &RULES[i];
            let (progress, time) = match rule.basis {
                Basis::Steps => (self.scored as f64, log_time),
                Basis::Events => (self.steps_seen as f64, log_time),
                Basis::Seconds => {
                    // This machine's clock (samples, ticks); without it, the log's own
                    // readings on the run's clock.
                    let t = m.wall.now.unwrap_or_else(|| m.rule_clock());
                    (t, t)
                }
            };
            // An alert raised on the readings of the job's start is explained once steps
            // come (the rules read only the readings since): it clears at once, with no
            // cool-down. On a real H200 an idle start of 10 s raised low_gpu_util, and its
            // dwell kept it, words of 0%, past the end of a short run at 98%.
            if rule.basis == Basis::Seconds
                && let (Some((_, raised)), Some(first)) =
                    (self.states[i].active, m.timeline.first_step_clock)
                && raised < first
            {
                self.clear(i, None, step, time);
            }
            let hidden = view.any_active(self.hidden_by[i]);
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
            self.note_busy(i);
            view.set_active(i, rule.id, self.states[i].active.is_some());
        }
        (self.active_ids, self.active_mask) = view.into_active();
        self.clear_hidden(step, log_time);
        debug_assert!(
            self.states.iter().enumerate().all(|(i, s)| {
                (self.busy >> i & 1 == 1) == (s.active.is_some() || s.entering.is_some())
            }),
            "the busy bits are out of step with the rule states"
        );
    }

    /// The rules that count seconds start counting again at `now`, on a clock that just
    /// changed (the log's history was read before the first sample or tick): a sustain begun
    /// at a log time is not held by the difference between the two clocks.
    fn restart_seconds(&mut self, now: f64) {
        for (i, rule) in RULES.iter().enumerate() {
            if rule.basis != Basis::Seconds {
                continue;
            }
            let s = &mut self.states[i];
            s.entering = None;
            s.leaving = None;
            s.cleared = None;
            if let Some((_, raised)) = &mut s.active {
                *raised = now;
                s.refreshed = now;
            }
            self.note_busy(i);
        }
    }

    /// Keeps rule `i`'s bit in `busy` as its state is, after the state changed.
    fn note_busy(&mut self, i: usize) {
        let s = &self.states[i];
        if s.active.is_some() || s.entering.is_some() {
            self.busy |= 1 << i;
        } else {
            self.busy &= !(1 << i);
        }
    }

    /// Clears at once every alert that an active, more specific alert now explains, whatever
    /// its basis: the crash hides the low utilization that follows it.
    fn clear_hidden(&mut self, step: Option<u64>, time: f64) {
        // Only an active alert can be cleared, and the active rules are the mask's bits (set
        // and unset with their states): most evaluations have none, and look at no state.
        let mut active = self.active_mask;
        while active != 0 {
            let i = active.trailing_zeros() as usize;
            active &= active - 1;
            if self.states[i].active.is_none() || self.active_mask & self.hidden_by[i] == 0 {
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
        // Most levels are none: what the machine reads of one, without building a default.
        let (stay, enter, gain) = level
            .as_ref()
            .map_or((false, None, None), |f| (f.stay, f.enter, f.gain));
        if let Some((id, raised_at)) = state.active {
            // An active alert is always kept.
            let a = if self.alert_ids.get(state.slot) == Some(&id) {
                state.slot
            } else {
                let Ok(a) = self.alert_ids.binary_search(&id) else {
                    return;
                };
                a
            };
            state.slot = a;
            let alert = &mut self.alerts[a];
            if stay {
                state.leaving = None;
                alert.last_step = step.or(alert.last_step);
                alert.gain = gain;
                let escalate = enter.filter(|s| *s > alert.severity);
                // Words are refreshed while the symptom is there at the alert's severity, so
                // that an alert never shows the evidence of its fading.
                let full = enter.is_some_and(|s| s >= alert.severity);
                if escalate.is_some() || (full && now - state.refreshed >= REFRESH_EVERY) {
                    state.refreshed = now;
                    if let Some(words) = describe().filter(|w| w.stay) {
                        let strength = |f: &Finding| f.strength.or(f.gain).unwrap_or(0.0);
                        if state
                            .peak
                            .as_ref()
                            .is_none_or(|p| strength(&words) >= strength(p))
                        {
                            state.peak = Some(Box::new(words.clone()));
                        }
                        reword(alert, words);
                        self.rewords += 1;
                    }
                }
                if let Some(sev) = escalate {
                    self.now_at[alert.severity as usize] -= 1;
                    self.now_at[sev as usize] += 1;
                    alert.severity = sev;
                    self.push_change(time, step, rule, sev, ChangeKind::Escalated, id);
                }
                return;
            }
            let since = *state.leaving.get_or_insert(now);
            if held(since) && now - raised_at >= dwell {
                self.clear(i, Some(now), step, time);
            }
            return;
        }
        let Some(sev) = enter else {
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
        let f = describe()
            .filter(|w| w.enter.is_some())
            .unwrap_or_else(|| level.unwrap_or_default());
        state.peak = Some(Box::new(f.clone()));
        let id = self.raised_at.iter().sum();
        self.alert_ids.push_back(id);
        self.alerts.push_back(Alert {
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
        state.active = Some((id, now));
        state.slot = self.alerts.len() - 1;
        state.refreshed = now;
        self.raised_by_rule[i] += 1;
        self.raised_at[sev as usize] += 1;
        self.now_at[sev as usize] += 1;
        self.push_change(time, step, rule, sev, ChangeKind::Raised, id);
        self.retire();
    }

    /// Retires the oldest cleared alerts past the first `FIRST_KEPT` while more than
    /// `ALERTS_KEPT` are kept.
    fn retire(&mut self) {
        while self.alerts.len() > ALERTS_KEPT {
            let Some(at) = self
                .alerts
                .iter()
                .skip(FIRST_KEPT)
                .position(|a| !a.active())
                .map(|p| p + FIRST_KEPT)
            else {
                return;
            };
            self.alerts.remove(at);
            self.alert_ids.remove(at);
            self.alerts_retired += 1;
        }
    }

    fn push_change(
        &mut self,
        time: f64,
        step: Option<u64>,
        rule: &'static str,
        severity: Severity,
        change: ChangeKind,
        alert: u64,
    ) {
        if self.changes.len() == CHANGES_KEPT {
            self.changes.pop_front();
        }
        self.changes.push_back(Change {
            time,
            step,
            rule,
            severity,
            change,
            alert,
        });
        self.changes_made += 1;
    }
}

impl Diagnosis {
    /// Clears rule `i`'s active alert; `cooldown_from` starts its cool-down (None when it was
    /// explained by another alert rather than gone).
    fn clear(&mut self, i: usize, cooldown_from: Option<f64>, step: Option<u64>, time: f64) {
        let Some((id, _)) = self.states[i].active else {
            return;
        };
        let Ok(a) = self.alert_ids.binary_search(&id) else {
            return;
        };
        let alert = &mut self.alerts[a];
        if let Some(peak) = self.states[i].peak.take() {
            reword(alert, *peak);
        }
        alert.cleared_step = step;
        alert.cleared_time = Some(time);
        let sev = alert.severity;
        self.states[i] = RuleState {
            cleared: cooldown_from.map(|now| (now, sev)),
            ..RuleState::default()
        };
        self.note_busy(i);
        let rule = RULES[i].id;
        self.active_ids.retain(|r| *r != rule);
        self.active_mask &= !(1u64 << i);
        self.push_change(time, step, rule, sev, ChangeKind::Cleared, id);
    }
}

/// The bits of the rules that `f` holds for, by their places in `RULES`.
fn bits(f: impl Fn(&super::rules::Rule) -> bool) -> u64 {
    RULES
        .iter()
        .enumerate()
        .filter(|(_, r)| f(r))
        .fold(0, |all, (i, _)| all | 1 << i)
}

/// The bits of the rules named, by their places in `RULES` (at most 64 rules: see the test).
fn mask_of(ids: &[&str]) -> u64 {
    RULES
        .iter()
        .enumerate()
        .filter(|(_, r)| ids.contains(&r.id))
        .fold(0, |m, (i, _)| m | 1u64 << i)
}

/// An active alert's words (and gain) from a described finding.
fn reword(alert: &mut Alert, f: Finding) {
    alert.title = f.title;
    alert.evidence = f.evidence;
    alert.gain = f.gain;
    alert.actions = f.actions;
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
            let rec = Record::Step(Box::new(StepRecord {
                step: Some(self.step),
                step_time_ms: Some(100.0),
                data_time_ms: Some(data_ms),
                ..StepRecord::default()
            }));
            let stamp = Stamp {
                time: self.step as f64 * 0.1,
                real_time: true,
                ..Stamp::default()
            };
            let t = Trigger::of(&rec).expect("a step triggers");
            self.m.apply(&stamp, rec);
            self.d.after(&self.m, t);
        }

        fn steps(&mut self, n: usize, data_ms: f64) {
            for _ in 0..n {
                self.step(data_ms);
            }
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
    fn a_run_that_flaps_for_weeks_keeps_alerting_and_keeps_bounded_memory() {
        // data_loading_bound with no sustain, dwell or cool-down over a 2-step window: it is
        // raised and cleared every few steps, ten times past every bound.
        let mut cfg = DiagnoseConfig {
            window_steps: 2,
            warmup_steps: 0,
            ..DiagnoseConfig::default()
        };
        let i = RULES
            .iter()
            .position(|r| r.id == "data_loading_bound")
            .expect("rule");
        cfg.rules[i].sustain = 1.0;
        cfg.rules[i].dwell = 1.0;
        cfg.rules[i].cooldown = 0.0;
        let mut r = Run::new();
        r.d = Diagnosis::new(cfg);
        // A reader that takes each change as it is made, as headless does.
        let mut cursor = 0;
        let mut read: Vec<Change> = Vec::new();
        let mut step = 0;
        while r.d.raised() < 10 * ALERTS_KEPT as u64 || r.d.changes_made < 10 * CHANGES_KEPT as u64
        {
            let bad = (step / 3) % 2 == 0;
            r.step(if bad { 40.0 } else { 0.2 });
            step += 1;
            for (n, c) in r.d.changes_since(cursor) {
                assert_eq!(n, cursor, "no change is missed");
                assert!(r.d.alert(c.alert).is_some(), "a new change's alert is kept");
                cursor = n + 1;
                read.push(c.clone());
            }
        }
        let raised = read
            .iter()
            .filter(|c| c.change == ChangeKind::Raised)
            .count() as u64;
        assert_eq!(raised, r.d.raised());
        assert_eq!(read.len() as u64, r.d.changes_made);
        assert!(read.len() >= 10 * CHANGES_KEPT, "{} changes", read.len());
        // Bounded: the kept alerts, the kept changes.
        assert_eq!(r.d.alerts.len(), ALERTS_KEPT);
        assert_eq!(r.d.changes.len(), CHANGES_KEPT);
        assert_eq!(
            r.d.alerts_retired + ALERTS_KEPT as u64,
            r.d.raised(),
            "every alert is kept or counted as retired"
        );
        // The first alerts of the run stay, then the latest.
        let first: Vec<u64> = (0..FIRST_KEPT as u64).collect();
        assert!(r.d.alert_ids.range(..FIRST_KEPT).eq(first.iter()));
        assert_eq!(r.d.alert_ids.back(), Some(&(r.d.raised() - 1)));
        assert_eq!(
            r.d.raised_by_rule().collect::<Vec<_>>(),
            [("data_loading_bound", r.d.raised())]
        );
        // The state now is the last change's: active after a raise, clear after a clear.
        let last = read.last().expect("changes");
        let active = r.d.active().any(|a| a.rule == "data_loading_bound");
        assert_eq!(active, last.change != ChangeKind::Cleared);
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
    fn a_new_run_clears_the_last_runs_active_alerts_and_no_other() {
        let mut r = Run::new();
        // One alert raised and cleared, then another raised and still active.
        r.steps(40, 30.0);
        r.steps(60, 0.5);
        r.event(EventKind::CudaOom);
        let active: Vec<&str> = r.d.active().map(|a| a.rule).collect();
        assert_eq!(active, ["crash_event"]);
        let changes = r.d.changes.len();
        r.d.new_run(Some(1), 99.0);
        assert_eq!(r.d.active().count(), 0);
        let crash = r.alerts("crash_event");
        assert_eq!(crash[0].cleared_step, Some(1));
        assert_eq!(crash[0].cleared_time, Some(99.0));
        // One change: the crash cleared; the alert already cleared is left as it was.
        let since: Vec<(&str, ChangeKind)> =
            r.d.changes
                .iter()
                .skip(changes)
                .map(|c| (c.rule, c.change))
                .collect();
        assert_eq!(since, [("crash_event", ChangeKind::Cleared)]);
        let data = r.alerts("data_loading_bound");
        assert!(data[0].cleared_step.is_some_and(|s| s < 100));
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
