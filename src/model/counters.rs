//! A line's own count of steps made the run's global step, as the model takes it. Parsers say
//! how a line counts (`Counter`) and leave the number as printed; this turns an epoch's
//! position (`Epoch [8][700/750]`) into the iterations done so far (5,950), tells a run's
//! training bar from the evaluation bars drawn inside it (`1200/1200 [04:11<00:00, 4.77it/s]`
//! while `512/9000` is open), whose redraws are evaluation, not steps, and notices a new run in
//! the same file: a global step that goes back. It keeps a few numbers per file and rank,
//! whatever the run's length.

use crate::parse::record::{Counter, EventKind, Record, Smoothing, StepRecord};

/// Totals of evaluation bars remembered: a run has one or two evaluation loaders.
const EVAL_TOTALS: usize = 4;

/// One rank's counting state in one file.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Counters {
    /// The training bar: its total (None for `12it [..]`) and the last position drawn.
    bar: Option<(Option<u64>, u64)>,
    /// Totals of bars that ran inside the unfinished training bar: evaluations.
    evals: [Option<u64>; EVAL_TOTALS],
    /// The longest epoch seen, for positions in epochs whose length a line leaves out.
    epoch_len: Option<u64>,
    /// A plain count that went back to the start when its epoch went on counts within the
    /// epoch (`Epoch 2 | Step 300/4000`): the steps of the epochs before it, and the epoch
    /// they end with.
    local: Option<(u64, f64)>,
    /// The epoch's length as its lines print it (`iter: 880/883`): where the next epoch
    /// starts, unlogged last steps included.
    local_len: Option<u64>,
    /// The last global step and the epoch it came with.
    last: Option<(u64, Option<f64>)>,
    /// The planned total the last step came with.
    last_total: Option<u64>,
    /// The last step a smoothed rate came with, that rate as a step time, and the bar's own
    /// position then.
    smoothed: Option<(u64, f64, Option<u64>)>,
    /// One step's worth of what a `Consumed` counter counts.
    consumed_per: Option<u64>,
    /// A moving-average bar's own average of the steps each redraw advanced (tqdm averages
    /// the steps and the seconds between redraws apart, and prints their ratio).
    bar_steps: Option<f64>,
    /// The mean step of the last stretch a bar that shows its mean since it began was
    /// differenced over, and the last step such a bar drew.
    stretch_ms: Option<f64>,
    stretch_last: u64,
    /// Step lines of the run's own have come: an engine's counter is not the run's steps.
    own_steps: bool,
    /// The engine's latest step, whether or not it is the run's: its own timers time it.
    pub(crate) engine_step: Option<u64>,
    /// Lines of the run's own gave its step time or samples/s: an engine's throughput (an
    /// RLHF actor's training alone) is not the run's.
    own_rates: bool,
    /// Step lines that name their step (not a bar's) and time it have come: a progress bar
    /// beside them (verl's `Training Progress`) repeats their count with a rate of its own.
    /// Beside step lines with no time of their own, the bar's rate is the time.
    line_steps: bool,
}

/// tqdm's smoothing: each redraw's rate is `0.3 × this step + 0.7 × the rate before`.
const TQDM_SMOOTHING: f64 = 0.3;

/// What a step record turned out to be.
#[derive(Debug, PartialEq)]
pub(crate) enum Counted {
    /// A training step, its step now the global one.
    Step,
    /// A training step that starts a new run in its file: the count went back to an earlier
    /// step (an appended run, a restart, a resume from a checkpoint).
    NewRun,
    /// The redraw of an evaluation bar.
    Eval,
    /// A bar too short to be a run's training (`2/2 [00:00<00:00, 627.37it/s]` while a
    /// model loads): no step at all.
    Setup,
}

/// Bars of fewer steps than this are a setup's (files, shards, a warm-up), not a run.
const SETUP_BAR: u64 = 5;

impl Counters {
    /// Makes `rec`'s step the global training step, or says that it is an evaluation's.
    pub(crate) fn count(&mut self, rec: &mut StepRecord) -> Counted {
        if rec.counter == Counter::Engine && rec.step.is_some() {
            self.engine_step = rec.step;
        }
        // Where the bar itself stands, before its count becomes the run's.
        let position = rec.step;
        let counted = match rec.counter {
            // An engine's optimizer steps and its own throughput (an RLHF actor's training
            // alone), or a bar that repeats the step lines: not the run's. Their learning
            // rate and loss scale are.
            Counter::Engine if self.own_steps => {
                rec.step = None;
                rec.total = None;
                rec.epoch = None;
                if self.own_rates {
                    return figures_only(rec);
                }
                return Counted::Step;
            }
            Counter::Bar if self.line_steps => return figures_only(rec),
            Counter::Engine => self.advance(rec),
            Counter::Consumed => {
                if let Some(n) = rec.step {
                    if n > 0 && self.consumed_per.is_none() {
                        self.consumed_per = Some(n);
                    }
                    rec.step = Some(self.consumed_per.map_or(n, |per| n / per));
                }
                rec.counter = Counter::Global;
                self.plain(rec)
            }
            Counter::Global => self.plain(rec),
            Counter::InEpoch { base } => self.in_epoch(rec, base),
            Counter::Bar => self.bar(rec),
        };
        let own = rec.counter != Counter::Engine;
        self.own_steps |= own && rec.step.is_some();
        self.own_rates |= own && (rec.samples_per_s.is_some() || rec.step_time_ms.is_some());
        self.line_steps |= matches!(rec.counter, Counter::Global | Counter::InEpoch { .. })
            && rec.step.is_some()
            && (rec.step_time_ms.is_some() || rec.iters_per_s.is_some());
        if !rec.smoothed.is_off() && matches!(counted, Counted::Step | Counted::NewRun) {
            self.unsmooth(rec, position);
        }
        counted
    }

    /// A progress bar's rate is a moving average over its redraws: after an evaluation the
    /// bar shows 11.25, 8.43, 6.46... s/it for steps of 2 s, which would read as a slow
    /// phase. Each redraw's own time is recovered from two consecutive ones: tqdm averages the
    /// steps a redraw advanced and the seconds since the redraw before (`0.3 × now + 0.7 ×
    /// before`, each apart) and prints their ratio, so the seconds' average is the steps'
    /// average over the rate, and this redraw's seconds are `(average now − 0.7 × average
    /// before) / 0.3`: the 30 s the evaluation took shows on its own steps, one step a redraw
    /// or ten. A redraw of the same step adds no time.
    /// A bar that shows its mean since it began (`position` steps in) is differenced
    /// instead: the steps since an earlier redraw took `position × rate − position then × rate
    /// then`. The printed rate's rounding grows with the position, so the earlier redraw is at
    /// least a quarter of the bar back: the steps of a stretch take the previous stretch's
    /// mean, and the one that closes it gives its own (every step keeps a time, so the run's
    /// mean weighs the steps, not the stretches). A redraw of a step already timed gives none.
    /// The rate stays as printed.
    fn unsmooth(&mut self, rec: &mut StepRecord, position: Option<u64>) {
        let (Some(step), Some(printed)) = (
            rec.step,
            rec.step_time_ms
                .or_else(|| rec.iters_per_s.filter(|r| *r > 0.0).map(|r| 1000.0 / r)),
        ) else {
            return;
        };
        let own = match (self.smoothed, rec.smoothed, position) {
            (Some((before, rate, Some(was))), Smoothing::SinceStart, Some(p))
                if step >= before && p >= was =>
            {
                if p - was < (was / 4).max(1) {
                    // Within the stretch (the anchor stays), or a redraw of its step.
                    rec.iters_per_s = None;
                    rec.step_time_ms = self.stretch_ms.filter(|_| step > self.stretch_last);
                    self.stretch_last = self.stretch_last.max(step);
                    return;
                }
                let x = (p as f64 * printed - was as f64 * rate) / (p - was) as f64;
                Some(x.max(printed / 10.0))
            }
            (Some((before, ..)), ..) if before == step => None,
            (Some((before, rate, _)), Smoothing::Moving, _) if step > before => {
                // The bar's averages: of the steps a redraw advanced, and of the seconds between
                // redraws (the steps' average over the printed rate). This redraw's own seconds
                // come out of the second, its steps' time from them.
                let moved = (step - before) as f64;
                let steps_then = self.bar_steps.unwrap_or(moved);
                let steps_now = TQDM_SMOOTHING * moved + (1.0 - TQDM_SMOOTHING) * steps_then;
                self.bar_steps = Some(steps_now);
                let dt = (steps_now * printed - (1.0 - TQDM_SMOOTHING) * steps_then * rate)
                    / TQDM_SMOOTHING;
                // The printed rates are rounded: never less than a tenth of the rate.
                Some((dt / moved).max(printed / 10.0))
            }
            _ => Some(printed),
        };
        // The rate stays as printed (the bar's own figure, and a run's median of it is what
        // a user reads); the step's time is its own.
        rec.iters_per_s = Some(1000.0 / printed);
        rec.step_time_ms = own;
        if rec.smoothed == Smoothing::SinceStart {
            self.stretch_ms = own;
            self.stretch_last = step;
        }
        self.smoothed = Some((step, printed, position));
    }

    /// A count that goes back is a new run, unless the epoch went on: then the count is the
    /// epoch's own, and the epochs before add their steps.
    fn plain(&mut self, rec: &mut StepRecord) -> Counted {
        let Some(n) = rec.step else {
            return Counted::Step;
        };
        // The length an epoch's lines print, not the run's: `n` of it.
        let printed = rec.total.filter(|t| *t >= n);
        if let (Some((offset, epoch)), Some(e)) = (self.local, rec.epoch)
            && e >= epoch
        {
            // The epoch that ended took its printed length (the steps after its last line
            // included), else as far as its lines went.
            let ended = match self.local_len {
                Some(len) => offset + len,
                None => self.last.map_or(0, |(l, _)| l),
            };
            let offset = if e > epoch { ended } else { offset };
            self.local = Some((offset, e));
            self.local_len = printed;
            rec.step = Some(offset + n);
            rec.total = None;
            return self.advance(rec);
        }
        if let (Some((last, Some(was))), Some(e)) = (self.last, rec.epoch)
            && e > was
            && n < last
        {
            // The count started again with the epoch: it counts within epochs, the first
            // epoch as long as its lines said.
            let ended = self.last_total.filter(|t| *t >= last).unwrap_or(last);
            self.local = Some((ended, e));
            self.local_len = printed;
            rec.step = Some(ended + n);
            rec.total = None;
            return self.advance(rec);
        }
        self.local_len = None;
        self.local = None;
        self.advance(rec)
    }

    /// `epochs before this one × the epoch's length + the position`, with the epoch's length
    /// as printed (`[700/750]`), else the longest epoch seen so far.
    fn in_epoch(&mut self, rec: &mut StepRecord, base: u8) -> Counted {
        let (Some(n), Some(epoch)) = (rec.step, rec.epoch) else {
            return Counted::Step;
        };
        if rec.avg_in_epoch {
            // Batch n of the epoch, counted from 0: its averages cover n + 1 batches.
            rec.avg_steps = Some(n + 1);
        }
        let len = match rec.total {
            Some(len) => Some(len),
            None => self.epoch_len,
        };
        self.epoch_len = Some(self.epoch_len.unwrap_or(0).max(rec.total.unwrap_or(n)));
        let done = (epoch - f64::from(base)).floor();
        if let Some(len) = len
            && done >= 0.0
        {
            rec.step = Some((done as u64).saturating_mul(len).saturating_add(n));
            // The line's total was the epoch's; the run's is not known from it.
            rec.total = None;
        }
        self.advance(rec)
    }

    fn bar(&mut self, rec: &mut StepRecord) -> Counted {
        let (n, total) = (rec.step.unwrap_or(0), rec.total);
        if total.is_some_and(|t| t < SETUP_BAR) {
            return Counted::Setup;
        }
        if total.is_some() && self.evals.contains(&total) {
            return Counted::Eval;
        }
        match self.bar {
            Some((t, _)) if t == total => {
                self.bar = Some((t, n));
                self.advance(rec)
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
                self.advance(rec)
            }
        }
    }

    /// Remembers a global step; one that goes back (by more than the few steps lines of one
    /// step, or ranks without tags, may go back, or at all with a new planned total) starts a
    /// new run.
    fn advance(&mut self, rec: &StepRecord) -> Counted {
        let Some(step) = rec.step else {
            return Counted::Step;
        };
        let new_total =
            rec.total.is_some() && self.last_total.is_some() && rec.total != self.last_total;
        let back = self.last.is_some_and(|(last, _)| {
            let slack = (last / 100).max(2);
            step.saturating_add(slack) < last || (step < last && new_total)
        });
        self.last = Some((step, rec.epoch));
        if rec.total.is_some() {
            self.last_total = rec.total;
        }
        if back {
            // The new run counts afresh; what the old one learned of bars and epochs is its own.
            let (last, last_total) = (self.last, self.last_total);
            *self = Counters {
                last,
                last_total,
                ..Counters::default()
            };
            Counted::NewRun
        } else {
            Counted::Step
        }
    }
}

/// A record of no step and no time of its own: its other figures stand.
fn figures_only(rec: &mut StepRecord) -> Counted {
    rec.step = None;
    rec.total = None;
    rec.epoch = None;
    rec.samples_per_s = None;
    rec.step_time_ms = None;
    rec.iters_per_s = None;
    rec.eta_s = None;
    Counted::Step
}

/// The event an evaluation bar's redraw becomes.
pub(crate) fn eval_event(rec: &StepRecord) -> Record {
    let at = match (rec.step, rec.total) {
        (Some(n), Some(t)) => format!(" at {n}/{t}"),
        (Some(n), None) => format!(" at {n}"),
        _ => String::new(),
    };
    Record::Event {
        kind: EventKind::Eval,
        text: format!("an evaluation bar{at}"),
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
    ) -> (Option<u64>, Counted) {
        let mut rec = StepRecord {
            step: Some(n),
            total,
            epoch,
            counter,
            ..StepRecord::default()
        };
        let how = c.count(&mut rec);
        (rec.step, how)
    }

    fn step(
        c: &mut Counters,
        counter: Counter,
        epoch: Option<f64>,
        n: u64,
        total: Option<u64>,
    ) -> Option<u64> {
        match counted(c, counter, epoch, n, total) {
            (s, Counted::Step | Counted::NewRun) => s,
            (_, Counted::Eval | Counted::Setup) => None,
        }
    }

    #[test]
    fn a_count_of_what_was_consumed_becomes_steps() {
        // NeMo's tracked_stats: 4,194,304 tokens a step.
        let mut c = Counters::default();
        let per = 4_194_304;
        for n in 1..=3 {
            assert_eq!(
                step(&mut c, Counter::Consumed, None, n * per, None),
                Some(n)
            );
        }
    }

    #[test]
    fn positions_in_an_epoch_become_iterations_done() {
        let mut c = Counters::default();
        let mm = Counter::InEpoch { base: 1 };
        assert_eq!(step(&mut c, mm, Some(8.0), 700, Some(750)), Some(5950));
        assert_eq!(step(&mut c, mm, Some(40.0), 5, Some(5)), Some(200));
        let mut c = Counters::default();
        let timm = Counter::InEpoch { base: 0 };
        assert_eq!(step(&mut c, timm, Some(0.0), 50, Some(1251)), Some(50));
        assert_eq!(step(&mut c, timm, Some(2.0), 50, Some(1251)), Some(2552));
    }

    #[test]
    fn a_plain_count_that_restarts_with_each_epoch_counts_within_it() {
        let mut c = Counters::default();
        let g = Counter::Global;
        assert_eq!(step(&mut c, g, Some(1.0), 100, None), Some(100));
        assert_eq!(step(&mut c, g, Some(1.0), 400, None), Some(400));
        assert_eq!(step(&mut c, g, Some(2.0), 100, None), Some(500));
        assert_eq!(step(&mut c, g, Some(2.0), 400, None), Some(800));
        assert_eq!(step(&mut c, g, Some(3.0), 100, None), Some(900));
        // YOLOX prints every tenth of 883 iterations: each epoch is as long as its lines
        // say, the three after its last printed line included.
        let mut c = Counters::default();
        assert_eq!(step(&mut c, g, Some(1.0), 10, Some(883)), Some(10));
        assert_eq!(step(&mut c, g, Some(1.0), 880, Some(883)), Some(880));
        assert_eq!(step(&mut c, g, Some(2.0), 10, Some(883)), Some(893));
        assert_eq!(step(&mut c, g, Some(2.0), 880, Some(883)), Some(1763));
        assert_eq!(step(&mut c, g, Some(3.0), 10, Some(883)), Some(1776));
    }

    #[test]
    fn a_count_that_goes_back_starts_a_new_run() {
        let mut c = Counters::default();
        let g = Counter::Global;
        assert_eq!(counted(&mut c, g, None, 10, None).1, Counted::Step);
        assert_eq!(counted(&mut c, g, None, 900, None).1, Counted::Step);
        assert_eq!(counted(&mut c, g, None, 899, None).1, Counted::Step);
        assert_eq!(counted(&mut c, g, None, 1, None).1, Counted::NewRun);
        assert_eq!(counted(&mut c, g, None, 2, None).1, Counted::Step);
    }

    #[test]
    fn bars_inside_the_training_bar_are_evaluations() {
        let mut c = Counters::default();
        let bar = |c: &mut Counters, n, t| step(c, Counter::Bar, None, n, Some(t));
        assert_eq!(bar(&mut c, 511, 9000), Some(511));
        assert_eq!(bar(&mut c, 512, 9000), Some(512));
        // The evaluation bar runs to its end while the training bar waits at 512.
        assert_eq!(bar(&mut c, 0, 1200), None);
        assert_eq!(bar(&mut c, 1200, 1200), None);
        assert_eq!(bar(&mut c, 513, 9000), Some(513));
        assert_eq!(bar(&mut c, 9000, 9000), Some(9000));
        // The final evaluation, after training ended, is still one.
        assert_eq!(bar(&mut c, 600, 1200), None);
    }

    #[test]
    fn a_bar_that_shows_its_mean_since_it_began_is_differenced() {
        // Lightning's bar (smoothing=0): the first step took 500 ms, every other 100 ms. The
        // printed rate is the mean since the bar began, rounded to two decimals of it/s.
        let mut c = Counters::default();
        let mut times = Vec::new();
        for n in 1..=40u64 {
            let elapsed_s = (500.0 + 100.0 * (n - 1) as f64) / 1000.0;
            let rate = (n as f64 / elapsed_s * 100.0).round() / 100.0;
            let mut rec = StepRecord {
                step: Some(n),
                epoch: Some(0.0),
                counter: Counter::InEpoch { base: 0 },
                iters_per_s: Some(rate),
                smoothed: Smoothing::SinceStart,
                ..StepRecord::default()
            };
            c.count(&mut rec);
            times.push(rec.step_time_ms);
            // Its redraw with a new postfix times no step again.
            let mut again = StepRecord {
                iters_per_s: Some(rate * 0.99),
                ..rec.clone()
            };
            again.step_time_ms = None;
            c.count(&mut again);
            assert_eq!(again.step_time_ms, None);
        }
        // Every step keeps a time: its own, or its stretch's, never the mean since the start.
        assert!(times.iter().all(Option::is_some));
        assert!((times[0].unwrap() - 500.0).abs() < 1.0);
        for t in &times[1..] {
            assert!((t.unwrap() - 100.0).abs() < 10.0, "{times:?}");
        }
    }
}
