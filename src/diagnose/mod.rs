//! Diagnosis: rules that read the model (what the logs said and what the hardware samples
//! said) and name what limits the run, with the evidence, the estimated gain and the fix.
//! `engine` gives each rule its hysteresis; `rules/` holds one file per family of rules;
//! `signals` computes the signals they share; `checklist` is the users' own health list.
//! Nothing here reads a clock or a file: the same model gives the same alerts.

pub mod checklist;
mod config;
mod engine;
mod needs;
pub mod params;
pub mod rules;
pub mod signals;

use serde::Serialize;

pub use config::{DiagnoseConfig, DiagnoseSection};
pub use engine::{Diagnosis, Trigger};

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Info,
    Warn,
    Crit,
}

impl Severity {
    pub fn name(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warn => "warn",
            Severity::Crit => "crit",
        }
    }
}

/// What a rule sees now. `enter`: the symptom is there, at this severity. `stay`: the relaxed
/// exit condition still holds (an active alert stays); true whenever `enter` is.
///
/// The words (title, evidence, actions) cost more than the check itself and matter only when
/// an alert is raised or refreshed, so a rule is first asked for its level alone
/// (`described` false: the builders skip their closures) and asked again for the words when
/// they are needed. Build findings with `View::enter`, `View::stay` and `View::graded`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Finding {
    pub enter: Option<Severity>,
    pub stay: bool,
    pub title: String,
    /// The measured symptoms, with numbers and units.
    pub evidence: Vec<String>,
    /// The share of step time that fixing this would win (0.23: steps 23% faster), when it
    /// can be estimated.
    pub gain: Option<f64>,
    /// What to change, in the user's terms, most useful first.
    pub actions: Vec<String>,
    /// How strong the symptom is, in the rule's own measure (the gain when not set): an
    /// alert that clears keeps the words of its strongest moment.
    pub strength: Option<f64>,
    /// Whether the words are filled in.
    pub described: bool,
}

impl Finding {
    pub fn why<S: Into<String>>(mut self, evidence: impl FnOnce() -> S) -> Finding {
        if self.described {
            self.evidence.push(evidence().into());
        }
        self
    }

    pub fn gain(mut self, share: f64) -> Finding {
        self.gain = share.is_finite().then_some(share.clamp(0.0, 1.0));
        self
    }

    pub fn strength(mut self, x: f64) -> Finding {
        self.strength = x.is_finite().then_some(x);
        self
    }

    pub fn act<S: Into<String>>(mut self, action: impl FnOnce() -> S) -> Finding {
        if self.described {
            self.actions.push(action().into());
        }
        self
    }
}

/// An alert: one raise of a rule, until it clears.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Alert {
    pub rule: &'static str,
    pub severity: Severity,
    pub title: String,
    pub evidence: Vec<String>,
    pub gain: Option<f64>,
    pub actions: Vec<String>,
    pub first_step: Option<u64>,
    pub first_time: f64,
    /// The last step at which the symptom was seen.
    pub last_step: Option<u64>,
    pub cleared_step: Option<u64>,
    pub cleared_time: Option<f64>,
}

impl Alert {
    pub fn active(&self) -> bool {
        self.cleared_time.is_none()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    Raised,
    Escalated,
    Cleared,
}

impl ChangeKind {
    /// As JSON and `STEPTOP_CHANGE` say it.
    pub fn name(self) -> &'static str {
        match self {
            ChangeKind::Raised => "raised",
            ChangeKind::Escalated => "escalated",
            ChangeKind::Cleared => "cleared",
        }
    }
}

/// One change of an alert, as headless output prints it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Change {
    pub time: f64,
    pub step: Option<u64>,
    pub rule: &'static str,
    pub severity: Severity,
    pub change: ChangeKind,
    /// The alert's id (`Diagnosis::alert`): alerts are counted from 0 in the order raised.
    pub alert: u64,
}
