//! A line's own count of steps made the run's global step. Parsers say how a line counts
//! (`Counter`); this turns an epoch's position (`Epoch [8][700/750]`) into the iterations done
//! so far (5,950), and tells a run's training bar from the evaluation bars drawn inside it
//! (`1200/1200 [04:11<00:00, 4.77it/s]` while `512/9000` is open), whose redraws are
//! evaluation, not steps. It keeps a few numbers per rank, whatever the run's length.

use crate::parse::record::{Counter, EventKind, Record, StepRecord};

/// Totals of evaluation bars remembered: a run has one or two evaluation loaders.
const EVAL_TOTALS: usize = 4;

/// One rank's counting state in one file.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Counters {
    /// The training bar: its total (None for `12it [..]`) and the last position drawn.
    bar: Option<(Option<u64>, u64)>,
    /// Totals of bars that ran inside the unfinished training bar: evaluations.
    evals: [Option<u64>; EVAL_TOTALS],
    /// The longest epoch seen, for positions in epochs whose length a line leaves out.
    epoch_len: Option<u64>,
}

/// What a step record turned out to be.
pub(super) enum Counted {
    /// A training step, its step now the global one.
    Step,
    /// The redraw of an evaluation bar.
    Eval,
}

impl Counters {
    /// Makes `rec`'s step the global training step, or says that it is an evaluation's.
    pub(super) fn count(&mut self, rec: &mut StepRecord) -> Counted {
        match rec.counter {
            Counter::Global => Counted::Step,
            Counter::InEpoch { base } => {
                self.in_epoch(rec, base);
                Counted::Step
            }
            Counter::Bar => self.bar(rec),
        }
    }

    /// `epochs before this one × the epoch's length + the position`, with the epoch's length
    /// as printed (`[700/750]`), else the longest epoch seen so far.
    fn in_epoch(&mut self, rec: &mut StepRecord, base: u8) {
        let (Some(n), Some(epoch)) = (rec.step, rec.epoch) else {
            return;
        };
        let len = match rec.total {
            Some(len) => {
                self.epoch_len = Some(len);
                Some(len)
            }
            None => {
                self.epoch_len = Some(self.epoch_len.unwrap_or(0).max(n));
                None
            }
        };
        let done = (epoch - f64::from(base)).floor();
        if let Some(len) = len
            && done >= 0.0
        {
            rec.step = Some((done as u64).saturating_mul(len).saturating_add(n));
            // The line's total was the epoch's; the run's is not known from it.
            rec.total = None;
        }
    }

    fn bar(&mut self, rec: &mut StepRecord) -> Counted {
        let (n, total) = (rec.step.unwrap_or(0), rec.total);
        if total.is_some() && self.evals.contains(&total) {
            return Counted::Eval;
        }
        match self.bar {
            Some((t, _)) if t == total => {
                self.bar = Some((t, n));
                Counted::Step
            }
            // Another bar while the training bar is not done: an evaluation inside it.
            Some((Some(t), last)) if last < t => {
                if let Some(slot) = self.evals.iter_mut().find(|e| e.is_none()) {
                    *slot = total;
                }
                Counted::Eval
            }
            // The first bar, or a new one after the last finished: the training bar now.
            _ => {
                self.bar = Some((total, n));
                Counted::Step
            }
        }
    }
}

/// The event an evaluation bar's redraw becomes, its text the line's.
pub(super) fn eval_event(text: String) -> Record {
    Record::Event {
        kind: EventKind::Eval,
        text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn counted(
        c: &mut Counters,
        counter: Counter,
        epoch: Option<f64>,
        n: u64,
        total: Option<u64>,
    ) -> Option<u64> {
        let mut rec = StepRecord {
            step: Some(n),
            total,
            epoch,
            counter,
            ..StepRecord::default()
        };
        match c.count(&mut rec) {
            Counted::Step => rec.step,
            Counted::Eval => None,
        }
    }

    #[test]
    fn positions_in_an_epoch_become_iterations_done() {
        let mut c = Counters::default();
        let mm = Counter::InEpoch { base: 1 };
        assert_eq!(counted(&mut c, mm, Some(8.0), 700, Some(750)), Some(5950));
        assert_eq!(counted(&mut c, mm, Some(40.0), 5, Some(5)), Some(200));
        let timm = Counter::InEpoch { base: 0 };
        assert_eq!(counted(&mut c, timm, Some(0.0), 50, Some(1251)), Some(50));
        assert_eq!(counted(&mut c, timm, Some(2.0), 50, Some(1251)), Some(2552));
    }

    #[test]
    fn bars_inside_the_training_bar_are_evaluations() {
        let mut c = Counters::default();
        let bar = |c: &mut Counters, n, t| counted(c, Counter::Bar, None, n, Some(t));
        assert_eq!(bar(&mut c, 511, 9000), Some(511));
        assert_eq!(bar(&mut c, 512, 9000), Some(512));
        // The evaluation bar runs to its end while the training bar waits at 512.
        assert_eq!(bar(&mut c, 0, 1200), None);
        assert_eq!(bar(&mut c, 1200, 1200), None);
        assert_eq!(bar(&mut c, 513, 9000), Some(513));
        assert_eq!(bar(&mut c, 9000, 9000), Some(9000));
        // The final evaluation, after training ended, is still one.
        assert_eq!(bar(&mut c, 600, 1200), None);
        // A new bar of another total after training finished: a new training bar.
        assert_eq!(bar(&mut c, 3, 400), Some(3));
    }
}
