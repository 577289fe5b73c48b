//! Whether a step number may follow the steps before it in one file: a restart, a resume or
//! a new epoch's counter explains a step that goes back; nothing else does.

use crate::parse::record::{Counter, StepRecord};

/// One rank's steps in one file, in order: tells a restart (or a new epoch's counter) from a
/// step number that cannot be.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Order {
    /// The first step this rank logged in the file: a new run starts there again.
    pub(super) first: Option<u64>,
    last: u64,
    epoch: Option<f64>,
    total: Option<u64>,
    /// The steps at the last checkpoints: a resumed run starts there again.
    checkpoints: [Option<u64>; 4],
    /// A step that went back with nothing to explain it: the next step decides whether a
    /// restart began there.
    doubt: Option<u64>,
}

impl Order {
    /// A checkpoint was saved at the current step.
    pub(super) fn checkpoint(&mut self) {
        self.checkpoints.rotate_right(1);
        self.checkpoints[0] = Some(self.last);
    }

    /// Whether `s` may follow the steps so far; remembers it when it may. A step may go back
    /// when a restart explains it: to one of the first ten steps or the file's first step (a
    /// new run), to a checkpoint (a resumed one), with a new epoch or a new total (a counter
    /// that restarts), or when the next step carries on from it.
    pub(super) fn admits(&mut self, s: &StepRecord) -> bool {
        let Some(step) = s.step else {
            return true;
        };
        // An engine's counter runs beside the run's own (the model decides which counts).
        if s.counter == Counter::Engine {
            return true;
        }
        let Some(first) = self.first else {
            self.first = Some(step);
            self.remember(step, s, false);
            return true;
        };
        // Several lines per step, and per-rank lines in one file without rank tags, go back a
        // little.
        let slack = (self.last / 100).max(2);
        let back = step.saturating_add(slack) < self.last;
        let near = |at: u64| step.abs_diff(at) <= slack;
        // A run starting afresh logs one of its first steps first. Asked only of a step that
        // goes back: nearly every step goes on.
        let restart = || {
            step <= 10
                || near(first)
                || self.checkpoints.iter().flatten().any(|&c| near(c))
                || s.epoch.is_some_and(|e| Some(e) != self.epoch)
                || s.total.is_some_and(|t| Some(t) != self.total)
                || self.doubt.is_some_and(|d| step >= d)
        };
        if back && !restart() {
            self.doubt = Some(step);
            return false;
        }
        self.remember(step, s, back);
        true
    }

    fn remember(&mut self, step: u64, s: &StepRecord, back: bool) {
        self.last = if back { step } else { self.last.max(step) };
        self.doubt = None;
        if s.epoch.is_some() {
            self.epoch = s.epoch;
        }
        if s.total.is_some() {
            self.total = s.total;
        }
    }
}
