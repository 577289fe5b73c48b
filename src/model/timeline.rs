//! The run's steps in time: the last steps with what came just before each (an eval, a
//! checkpoint, an epoch end), the pauses those boundaries add to the wall time, and when the
//! last step came by the hardware samples' clock (a stall is judged on that clock, which is
//! the same as the one it is compared with, whatever the log's own time zone).

use std::collections::VecDeque;

use super::window::{Ordered, RunStats};
use crate::parse::record::EventKind;

/// Steps kept for outlier detection: enough to see a spike that comes every 50 steps.
pub const MARKS_KEPT: usize = 200;
/// The marks' median and spread are refreshed every this many steps: a spike is judged
/// against a norm of the last few hundred steps, which a few steps more do not move.
const SPREAD_EVERY: u64 = 16;

/// One step (the first line that logged it, from any rank).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepMark {
    pub step: Option<u64>,
    pub ms: f64,
    /// The boundary logged since the step before, if any: this step's time may include it.
    pub after: Option<EventKind>,
    /// The run's first timed step: its time holds the start (compilation, the loader's
    /// first batches), not a step like the others.
    pub first: bool,
    /// The steps it stands for: those since the mark before (a log that prints every
    /// hundredth step shows one step of each hundred).
    pub covers: f64,
}

impl StepMark {
    /// Its time may hold a pause that is not training: the run's start, or an eval,
    /// checkpoint or epoch end logged before it.
    pub fn after_pause(&self) -> bool {
        self.first || self.after.is_some()
    }
}

/// What eval, checkpoint and epoch-end pauses cost: the wall time between the step line before
/// a boundary and the step line after it, less the usual time of the steps between them (a
/// log that prints every 100th iteration has 100 steps of training in that gap besides the
/// pause).
#[derive(Clone, Debug, Default)]
pub struct Pauses {
    /// Seconds per pause.
    pub seconds: RunStats,
    /// Steps at which the first and the last measured pause ended.
    pub first_step: Option<u64>,
    pub last_step: Option<u64>,
}

#[derive(Clone, Debug, Default)]
pub struct Timeline {
    /// The last steps, oldest first.
    pub marks: VecDeque<StepMark>,
    /// The marks' median step time and median absolute deviation, in ms.
    pub spread: Option<(f64, f64)>,
    /// The marks' step times in order, for `spread`.
    ordered: Ordered,
    /// Marks by decreasing step time, each after the larger ones pushed before it, with its
    /// number (`pushed` before it came): the front is the longest step kept. A rule asks at
    /// every step whether any mark is over its limit; this answers without a pass over them.
    peaks: VecDeque<(u64, f64)>,
    pushed: u64,
    /// The marks' step times each times the steps it stands for, and those steps: kept as
    /// marks come and go (a rule weighs spikes against them at every step), summed anew with
    /// the spread.
    covered: (f64, f64),
    pub pauses: Pauses,
    /// Log time of the first and the last step with a real time: the wall time they span.
    pub first_time: Option<f64>,
    pub last_time: Option<f64>,
    /// The step number of the last step with a real time.
    last_timed_step: Option<u64>,
    /// The boundary logged since the last step.
    pub pending: Option<EventKind>,
    /// This machine's clock (samples, ticks) when the last step came: Some(None) when it had
    /// not been read yet.
    pub step_clock: Option<Option<f64>>,
    /// Whether the last step arrived live, rather than in what its file held when steptop
    /// started (a run that hung before steptop started has no live step).
    pub step_live: bool,
    /// The samples' clock when the first step came after readings (the readings before it
    /// are the job's start: imports, loading, the first compile), or when steps came again
    /// after a gap of `GAP_S` or more.
    pub resumed_at: Option<f64>,
    /// The samples' clock when the first step came after readings.
    pub first_step_clock: Option<f64>,
}

/// Seconds without a step, by the samples' clock, after which steps that come again count as
/// a resumption (the readings before it describe the gap, not the run).
pub const GAP_S: f64 = 30.0;

impl Timeline {
    /// The timeline `default` makes, keeping the room its marks took, for the next run.
    pub fn clear(&mut self) {
        let (mut marks, mut peaks, mut ordered) = (
            std::mem::take(&mut self.marks),
            std::mem::take(&mut self.peaks),
            std::mem::take(&mut self.ordered),
        );
        marks.clear();
        peaks.clear();
        ordered.clear();
        *self = Timeline {
            marks,
            peaks,
            ordered,
            ..Timeline::default()
        };
    }

    /// Whether a step line's time `ms` at `step`, logged at `time` after a boundary, holds
    /// the pause, `usual` being the run's step: the line's excess over the usual, over all
    /// the steps since the last timed line, comes to half the pause at least (the gap less
    /// those steps' usual time). A framework whose clock restarts after the evaluation
    /// (mmcv's) prints a line a little slow from the loader's restart, not the pause's; one
    /// whose clock runs through it (Megatron's interval mean, nanoGPT's dt) holds it all.
    /// Without the log's own times to tell, a line over `PAUSED` times the usual does.
    pub fn holds_pause(
        &self,
        step: Option<u64>,
        (t, real): (f64, bool),
        ms: f64,
        usual: f64,
    ) -> bool {
        let (Some(s), Some(p), Some(prev), true) =
            (step, self.last_timed_step, self.last_time, real)
        else {
            return true;
        };
        let steps = s.saturating_sub(p).max(1) as f64;
        let pause_ms = (t - prev) * 1000.0 - steps * usual;
        (ms - usual) * steps >= 0.5 * pause_ms
    }

    /// An eval, checkpoint or epoch end was logged.
    pub fn boundary(&mut self, kind: EventKind) {
        self.pending.get_or_insert(kind);
    }

    /// A step record: its number, log time, whether that time is real, its step time, the
    /// usual step time before it (asked only after a boundary), this machine's clock, and
    /// whether the record arrived live.
    pub fn step(
        &mut self,
        step: Option<u64>,
        time: (f64, bool),
        ms: Option<f64>,
        usual_ms: impl FnOnce() -> Option<f64>,
        (clock, live): (Option<f64>, bool),
    ) {
        // A record with neither a step nor a time (an engine's learning rate) marks nothing:
        // the boundary before it belongs to the step that comes.
        if step.is_none() && ms.is_none() {
            return;
        }
        match (self.step_clock, clock) {
            (None, Some(now)) => {
                self.resumed_at = Some(now);
                self.first_step_clock = Some(now);
            }
            (Some(Some(prev)), Some(now)) if now - prev >= GAP_S => self.resumed_at = Some(now),
            _ => {}
        }
        self.step_clock = Some(clock);
        self.step_live = live;
        // Every rank logs each step (and a report reads rank by rank): the first line of a
        // step is the one that counts. A step number that goes back is a new epoch counting
        // from its start only after an epoch end or from 0 or 1.
        let last = self.marks.back().and_then(|m| m.step);
        if let (Some(s), Some(last)) = (step, last)
            && (s == last || (s > 1 && s < last && self.pending != Some(EventKind::EpochEnd)))
        {
            return;
        }
        // A step line with no time and no timestamp leaves the boundary to the line that
        // times it (`iters: 100, epoch: 2 | loss` then `speed: 3.1s/iter` after a validation):
        // that time holds the pause.
        let after = if ms.is_some() || time.1 {
            self.pending.take()
        } else {
            self.pending
        };
        let (t, real) = time;
        if real {
            if let (Some(_), Some(prev), Some(usual)) = (after, self.last_time, usual_ms()) {
                let steps = match (step, self.last_timed_step) {
                    (Some(s), Some(p)) if s > p => (s - p) as f64,
                    _ => 1.0,
                };
                let pause = (t - prev) - steps * usual / 1000.0;
                if pause > 0.0 {
                    self.pauses.seconds.push(pause);
                    self.pauses.first_step = self.pauses.first_step.or(step);
                    self.pauses.last_step = step.or(self.pauses.last_step);
                }
            }
            self.first_time.get_or_insert(t);
            self.last_time = Some(t);
            self.last_timed_step = step.or(self.last_timed_step);
        }
        if let Some(ms) = ms.filter(|ms| ms.is_finite()) {
            let covers = super::coverage::steps_since(self.marks.back().and_then(|m| m.step), step);
            let mut replaced = None;
            if self.marks.len() == MARKS_KEPT
                && let Some(old) = self.marks.pop_front()
            {
                replaced = Some(old.ms);
                self.covered.0 -= old.ms * old.covers;
                self.covered.1 -= old.covers;
                let gone = self.pushed - MARKS_KEPT as u64;
                if self.peaks.front().is_some_and(|p| p.0 == gone) {
                    self.peaks.pop_front();
                }
            }
            while self.peaks.back().is_some_and(|p| p.1 <= ms) {
                self.peaks.pop_back();
            }
            self.peaks.push_back((self.pushed, ms));
            let first = self.pushed == 0;
            self.marks.push_back(StepMark {
                step,
                ms,
                after,
                first,
                covers,
            });
            self.covered.0 += ms * covers;
            self.covered.1 += covers;
            match replaced {
                Some(old) => self.ordered.replace(old, ms),
                None => self.ordered.insert(ms),
            }
            self.pushed += 1;
            if self.pushed < SPREAD_EVERY || self.pushed.is_multiple_of(SPREAD_EVERY) {
                self.spread = self.ordered.spread();
                self.covered = self
                    .marks
                    .iter()
                    .fold((0.0, 0.0), |(t, n), m| (t + m.ms * m.covers, n + m.covers));
            }
        }
    }

    /// When this machine's clock saw the last step come: for a step that was already in its
    /// file, or came before the clock was read, when the clock was first read (about when
    /// steptop started). None before any step or any reading.
    pub fn step_seen(&self, wall: &super::clock::WallClock) -> Option<f64> {
        let at = self.step_clock?;
        at.filter(|_| self.step_live).or(wall.first)
    }

    /// The longest step time among the marks, in ms.
    pub fn longest_ms(&self) -> Option<f64> {
        self.peaks.front().map(|p| p.1)
    }

    /// The marks' time, each weighing the steps it stands for, and those steps.
    pub fn covered(&self) -> (f64, f64) {
        self.covered
    }

    /// Wall time spanned by the steps with a real time, in seconds.
    pub fn wall_s(&self) -> Option<f64> {
        Some(self.last_time? - self.first_time?).filter(|s| *s > 0.0)
    }
}

/// Median and median absolute deviation, by selection over all the values: what
/// `Ordered::spread` must give.
#[cfg(test)]
fn spread(values: impl Iterator<Item = f64>) -> Option<(f64, f64)> {
    use super::window::median;
    let mut v: Vec<f64> = values.collect();
    let mid = median(&mut v)?;
    for x in &mut v {
        *x = (*x - mid).abs();
    }
    Some((mid, median(&mut v)?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_longest_step_is_the_largest_mark_kept() {
        let mut t = Timeline::default();
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        for i in 0..(3 * MARKS_KEPT as u64) {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            // Long stretches that only fall, so the largest leaves the window by age.
            let ms = match i / 100 % 3 {
                0 => 1000.0 - i as f64,
                _ => (seed % 500) as f64,
            };
            let ms = if seed.is_multiple_of(11) {
                f64::NAN
            } else {
                ms
            };
            t.step(Some(i), (i as f64, true), Some(ms), || None, (None, true));
            let max = t
                .marks
                .iter()
                .map(|m| m.ms)
                .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))));
            assert_eq!(t.longest_ms(), max, "step {i}");
        }
    }

    #[test]
    fn a_cleared_timeline_is_a_new_one() {
        let mut t = Timeline::default();
        for i in 0..(2 * MARKS_KEPT as u64) {
            if i % 50 == 0 {
                t.boundary(EventKind::Eval);
            }
            let ms = 100.0 + (i % 17) as f64;
            t.step(
                Some(i),
                (i as f64, true),
                Some(ms),
                || Some(100.0),
                (Some(i as f64), true),
            );
        }
        assert!(t.pauses.seconds.count() > 0 && t.spread.is_some());
        t.clear();
        assert_eq!(format!("{t:?}"), format!("{:?}", Timeline::default()));
    }

    #[test]
    fn a_pause_is_the_gap_around_a_boundary_less_a_usual_step() {
        let mut t = Timeline::default();
        for (i, s) in (1..=4).enumerate() {
            t.step(
                Some(s),
                (i as f64, true),
                Some(1000.0),
                || None,
                (None, true),
            );
        }
        t.boundary(EventKind::Eval);
        t.boundary(EventKind::Checkpoint);
        // Step 5 comes 31 s after step 4 (a 1 s step): a pause of 30 s.
        t.step(
            Some(5),
            (34.0, true),
            Some(1000.0),
            || Some(1000.0),
            (Some(7.0), true),
        );
        // Rank 1's line of step 5 changes nothing.
        t.step(
            Some(5),
            (34.5, true),
            Some(1000.0),
            || Some(1000.0),
            (Some(7.0), true),
        );
        assert_eq!(t.pauses.seconds.count(), 1);
        assert_eq!(t.pauses.seconds.mean(), Some(30.0));
        assert_eq!(t.pauses.last_step, Some(5));
        assert_eq!(t.marks.len(), 5);
        assert_eq!(t.marks[4].after, Some(EventKind::Eval));
        assert_eq!(t.wall_s(), Some(34.0));
        assert_eq!(t.step_clock, Some(Some(7.0)));
    }

    /// PatchTST's loop prints `iters: 100, epoch: 2 | loss: 0.35` (no time) and then, on a line
    /// of its own, `speed: 3.12s/iter` (no step): after a validation, that time is the one
    /// that holds the pause, so the boundary waits for it.
    #[test]
    fn a_boundary_goes_to_the_line_that_times_the_step() {
        let mut t = Timeline::default();
        t.boundary(EventKind::Eval);
        t.step(Some(100), (1.0, false), None, || None, (None, true));
        t.step(None, (2.0, false), Some(3120.0), || None, (None, true));
        assert_eq!(t.marks.back().map(|m| m.after), Some(Some(EventKind::Eval)));
    }

    /// The marks' time weighed by the steps each stands for is kept as marks come and go:
    /// what a sum over the marks kept gives, a line every ten steps standing for ten.
    #[test]
    fn the_covered_time_is_the_marks_weighed_by_their_steps() {
        let mut t = Timeline::default();
        for i in 0..(3 * MARKS_KEPT as u64 + 7) {
            let ms = 100.0 + (i % 23) as f64 * 0.25;
            t.step(
                Some(i * 10),
                (i as f64, true),
                Some(ms),
                || None,
                (None, true),
            );
            let (sum, steps) = t
                .marks
                .iter()
                .fold((0.0, 0.0), |(s, n), m| (s + m.ms * m.covers, n + m.covers));
            let (kept_sum, kept_steps) = t.covered();
            assert!((kept_sum - sum).abs() < 1e-6 * sum, "step {i}");
            assert_eq!(kept_steps, steps, "step {i}");
        }
        assert_eq!(t.covered().1, 10.0 * MARKS_KEPT as f64);
    }

    #[test]
    fn the_spread_is_the_median_and_its_absolute_deviation() {
        assert_eq!(
            spread([5.0, 1.0, 3.0, 100.0, 2.0].into_iter()),
            Some((3.0, 2.0))
        );
        assert_eq!(spread(std::iter::empty()), None);
    }

    proptest! {
        // A failing case is printed, not saved beside the sources.
        #![proptest_config(ProptestConfig {
            failure_persistence: None,
            cases: 256,
            ..ProptestConfig::default()
        })]
        /// Kept in order as the marks come and go, the spread is, bit for bit, what a
        /// selection over the marks gives, whenever it is refreshed: ties, zeros of both
        /// signs and any finite time.
        #[test]
        fn the_spread_kept_in_order_is_the_one_selected_from_the_marks(
            times in proptest::collection::vec(
                prop_oneof![
                    (0u8..6).prop_map(|k| f64::from(k) * 0.5),
                    Just(-0.0),
                    proptest::num::f64::NORMAL | proptest::num::f64::ZERO,
                ],
                1..3 * MARKS_KEPT,
            )
        ) {
            let bits = |s: Option<(f64, f64)>| s.map(|(a, b)| (a.to_bits(), b.to_bits()));
            let mut t = Timeline::default();
            for (i, ms) in times.iter().enumerate() {
                t.step(Some(i as u64 + 1), (0.0, false), Some(*ms), || None, (None, true));
                if t.pushed < SPREAD_EVERY || t.pushed.is_multiple_of(SPREAD_EVERY) {
                    let selected = spread(t.marks.iter().map(|m| m.ms));
                    prop_assert_eq!(bits(t.spread), bits(selected), "after {} steps", i + 1);
                }
            }
        }
    }

    #[test]
    fn the_readings_before_the_first_step_are_the_start_not_the_run() {
        let mut t = Timeline::default();
        t.step(
            Some(0),
            (0.0, false),
            Some(1300.0),
            || None,
            (Some(8.0), true),
        );
        assert_eq!(t.resumed_at, Some(8.0));
        assert_eq!(t.first_step_clock, Some(8.0));
        t.step(
            Some(1),
            (0.0, false),
            Some(50.0),
            || None,
            (Some(9.0), true),
        );
        assert_eq!(t.resumed_at, Some(8.0));
    }

    #[test]
    fn steps_after_a_gap_by_the_samples_clock_are_a_resumption() {
        let mut t = Timeline::default();
        t.step(Some(1), (0.0, false), Some(500.0), || None, (None, true));
        // No sample yet, then steps every few seconds of sample time: no gap.
        t.step(
            Some(2),
            (0.0, false),
            Some(500.0),
            || None,
            (Some(100.0), true),
        );
        t.step(
            Some(3),
            (0.0, false),
            Some(500.0),
            || None,
            (Some(110.0), true),
        );
        assert_eq!(t.resumed_at, None);
        t.step(
            Some(4),
            (0.0, false),
            Some(500.0),
            || None,
            (Some(110.0 + GAP_S), true),
        );
        assert_eq!(t.resumed_at, Some(110.0 + GAP_S));
        assert_eq!(t.step_clock, Some(Some(110.0 + GAP_S)));
        // A step number that goes back without an epoch end is another rank's, not a step.
        t.step(
            Some(2),
            (0.0, false),
            Some(500.0),
            || None,
            (Some(150.0), true),
        );
        assert_eq!(t.marks.back().map(|m| m.step), Some(Some(4)));
        t.boundary(EventKind::EpochEnd);
        t.step(
            Some(2),
            (0.0, false),
            Some(500.0),
            || None,
            (Some(151.0), true),
        );
        assert_eq!(t.marks.back().map(|m| m.step), Some(Some(2)));
    }
}
