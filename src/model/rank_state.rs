//! One rank's progress and step figures, and the derivations a log leaves to us: step time from
//! a rate or from timestamps, iter/s from samples/s and the batch size, and the reverse.

use super::keep_latest;
use super::window::{Rolling, RunStats, Series, Summary};
use crate::parse::record::StepRecord;

/// A figure tracked three ways: whole run (report), recent window (live), and chart history.
#[derive(Clone, Debug)]
pub struct Metric {
    pub run: RunStats,
    pub recent: Rolling,
    pub series: Series,
}

impl Metric {
    /// A figure of the merged view: whole-run statistics, the last `window` values, and a
    /// chart history when `chart`.
    pub fn new(window: usize, chart: bool) -> Self {
        Metric {
            run: RunStats::default(),
            recent: Rolling::new(window),
            series: if chart {
                Series::new(512, 512)
            } else {
                Series::off()
            },
        }
    }

    /// A figure of one rank of many: its whole-run statistics (with quantiles when asked) and
    /// its last `window` values, no chart history (only the merged view is drawn).
    fn lean(window: usize, quantiles: bool) -> Self {
        Metric {
            run: if quantiles {
                RunStats::default()
            } else {
                RunStats::without_quantiles()
            },
            recent: Rolling::new(window),
            series: Series::off(),
        }
    }

    /// Forgets every value, keeping the room they took and what is kept (`new` or `lean`).
    fn clear(&mut self) {
        let Metric {
            run,
            recent,
            series,
        } = self;
        run.clear();
        recent.clear();
        series.clear();
    }

    pub fn push(&mut self, t: f64, v: f64) {
        self.run.push(v);
        self.recent.push(t, v);
        self.series.push(t, v);
    }

    /// The recent window's summary over the last `n` values.
    pub fn recent(&self, n: usize) -> Option<Summary> {
        self.recent.last_n(n)
    }
}

/// What the run's setup says a step holds, for rates a line leaves out: samples (the global
/// batch), tokens, and the GPUs that share the work.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Sizes {
    pub batch: Option<f64>,
    /// Tokens per step as the log states them.
    pub tokens_per_step: Option<f64>,
    /// Tokens per sample: with the batch, the tokens of a step when none are stated.
    pub seq_len: Option<f64>,
    pub gpus: Option<f64>,
}

/// First, last and lowest loss.
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize)]
pub struct LossTrack {
    pub first: Option<f64>,
    pub last: Option<f64>,
    pub min: Option<f64>,
}

impl LossTrack {
    fn push(&mut self, v: f64) {
        self.first.get_or_insert(v);
        self.last = Some(v);
        self.min = Some(self.min.map_or(v, |m| m.min(v)));
    }
}

/// The last values a rank keeps of its step time: what straggler detection and the per-rank
/// figures read. Thousands of ranks each keep one.
const RANK_WINDOW: usize = 64;

/// Ranks' states of runs that ended, cleared, for the next runs' ranks: a log whose step
/// count starts over every few lines starts a run each time, and growing a rank's windows
/// afresh for each, then freeing them, was a tenth of the monitor's thread on the bench log.
/// No part of what the model knows: its `Debug` shows nothing of them.
#[derive(Clone, Default)]
// Boxed as in the ranks' map: a state goes between the two as a pointer, not two KiB.
#[allow(clippy::vec_box)]
pub struct SpareRanks(Vec<Box<RankState>>);

impl SpareRanks {
    /// States kept: a run of thousands of ranks does not keep them all for the next.
    const KEPT: usize = 64;

    /// A rank's state as `RankState::for_rank(window)` makes it, cleared from a spare one
    /// where there is one.
    pub fn take(&mut self, window: usize) -> Box<RankState> {
        self.0
            .pop()
            .unwrap_or_else(|| Box::new(RankState::for_rank(window)))
    }

    /// Keeps a rank's state of a run that ended (made by `take` with the same window).
    pub fn give(&mut self, mut state: Box<RankState>) {
        if self.0.len() < Self::KEPT {
            state.clear();
            self.0.push(state);
        }
    }
}

impl std::fmt::Debug for SpareRanks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SpareRanks")
    }
}

/// One rank's state; the merged view of all ranks is one of these too. A rank (`for_rank`)
/// keeps a few KiB whatever the run's length: its step time's whole-run quantiles and last
/// `RANK_WINDOW` values, and of its other figures count, sum, min, max and the latest value
/// (no quantiles, no chart history); the merged view (`new`) keeps everything.
#[derive(Clone, Debug)]
pub struct RankState {
    pub records: u64,
    pub first_step: Option<u64>,
    pub last_step: Option<u64>,
    pub total: Option<u64>,
    pub epoch: Option<f64>,
    pub step_time_ms: Metric,
    /// The run's median step time, refreshed every 64 steps.
    pub step_median_ms: Option<f64>,
    pub data_time_ms: Metric,
    /// Data and step time of the steps that logged both, each times the steps its line
    /// stands for (`paired_steps`): the data share is sum over sum. A log that prints every
    /// thousandth batch and each epoch's first (timm's, DINO's) has that slow first batch
    /// weigh one step, not as much as the thousand before it.
    pub paired_data_ms: Metric,
    pub paired_step_ms: Metric,
    pub paired_steps: Metric,
    pub samples_per_s: Metric,
    pub iters_per_s: Metric,
    pub tokens_per_s: Metric,
    pub tokens_per_gpu_s: Metric,
    pub loss: Metric,
    pub loss_track: LossTrack,
    pub lr: Option<f64>,
    pub grad_norm: Option<f64>,
    pub loss_scale: Option<f64>,
    pub mfu_pct: Option<f64>,
    pub memory_mb: Option<f64>,
    pub logged_eta_s: Option<f64>,
    pub batch_size: Option<f64>,
    /// Time of the last step record, when it came from the log: for step time from timestamps.
    last_stamp: Option<(f64, u64)>,
    /// The last step and running total of training time a line gave (`train_time:`).
    last_elapsed: Option<(u64, f64)>,
    /// The last step and running average step time a line gave (`step_avg:`).
    last_avg: Option<(u64, f64)>,
    /// The latest running average step time the log printed: the run's mean step time by
    /// the training script's own measure.
    pub logged_avg_step_ms: Option<f64>,
    /// The latest step time, for a data time logged on a line of its own.
    last_step_ms: Option<f64>,
    pub last_time: Option<f64>,
    /// The run's figures, each printed figure weighing the steps it stands for.
    pub coverage: super::coverage::Coverage,
    /// What this rank's printed step time means (`meaning`): each step's, an interval's or
    /// the time so far.
    meaning: super::meaning::TimeMeaning,
}

impl RankState {
    /// The merged view of all ranks, with chart histories when `charts`.
    pub fn new(window: usize, charts: bool) -> Self {
        RankState {
            // Read only as sums (the data share): no quantiles, no chart.
            paired_data_ms: Metric::lean(window, false),
            paired_step_ms: Metric::lean(window, false),
            paired_steps: Metric::lean(window, false),
            // Shown as figures, drawn in no chart.
            tokens_per_s: Metric::new(window, false),
            tokens_per_gpu_s: Metric::new(window, false),
            ..Self::with(Metric::new(window, charts), || Metric::new(window, charts))
        }
    }

    /// One rank of the run.
    pub fn for_rank(window: usize) -> Self {
        Self::with(Metric::lean(window.min(RANK_WINDOW), true), || {
            Metric::lean(1, false)
        })
    }

    /// Forgets the run, keeping the room its figures took: the state `new` or `for_rank`
    /// made, for the next run. Every field is named, so that a new one cannot be missed.
    pub fn clear(&mut self) {
        let RankState {
            records,
            first_step,
            last_step,
            total,
            epoch,
            step_time_ms,
            step_median_ms,
            data_time_ms,
            paired_data_ms,
            paired_step_ms,
            paired_steps,
            samples_per_s,
            iters_per_s,
            tokens_per_s,
            tokens_per_gpu_s,
            loss,
            loss_track,
            lr,
            grad_norm,
            loss_scale,
            mfu_pct,
            memory_mb,
            logged_eta_s,
            batch_size,
            last_stamp,
            last_elapsed,
            last_avg,
            logged_avg_step_ms,
            last_step_ms,
            last_time,
            coverage,
            meaning,
        } = self;
        *records = 0;
        for step in [first_step, last_step, total] {
            *step = None;
        }
        for figure in [
            step_time_ms,
            data_time_ms,
            paired_data_ms,
            paired_step_ms,
            paired_steps,
            samples_per_s,
            iters_per_s,
            tokens_per_s,
            tokens_per_gpu_s,
            loss,
        ] {
            figure.clear();
        }
        *loss_track = LossTrack::default();
        for value in [
            epoch,
            step_median_ms,
            lr,
            grad_norm,
            loss_scale,
            mfu_pct,
            memory_mb,
            logged_eta_s,
            batch_size,
            logged_avg_step_ms,
            last_step_ms,
            last_time,
        ] {
            *value = None;
        }
        *last_stamp = None;
        *last_elapsed = None;
        *last_avg = None;
        *coverage = super::coverage::Coverage::default();
        *meaning = super::meaning::TimeMeaning::default();
    }

    fn with(step_time_ms: Metric, other: impl Fn() -> Metric) -> Self {
        RankState {
            records: 0,
            first_step: None,
            last_step: None,
            total: None,
            epoch: None,
            step_time_ms,
            step_median_ms: None,
            data_time_ms: other(),
            paired_data_ms: other(),
            paired_step_ms: other(),
            paired_steps: other(),
            samples_per_s: other(),
            iters_per_s: other(),
            tokens_per_s: other(),
            tokens_per_gpu_s: other(),
            loss: other(),
            loss_track: LossTrack::default(),
            lr: None,
            grad_norm: None,
            loss_scale: None,
            mfu_pct: None,
            memory_mb: None,
            logged_eta_s: None,
            batch_size: None,
            last_stamp: None,
            last_elapsed: None,
            last_avg: None,
            logged_avg_step_ms: None,
            last_step_ms: None,
            last_time: None,
            coverage: super::coverage::Coverage::default(),
            meaning: super::meaning::TimeMeaning::default(),
        }
    }

    /// `fill` on a copy, for the tests that compare a record as logged with the same record
    /// as derived.
    #[cfg(test)]
    fn derive(&mut self, rec: &StepRecord, t: f64, real_time: bool, sizes: &Sizes) -> StepRecord {
        let mut d = rec.clone();
        self.fill(&mut d, t, real_time, sizes);
        d
    }

    /// Fills in what the record `d` leaves out, where it lies, as far as this rank's history
    /// allows (the model's steps, whose boxes go back to the parser once read, take no copy).
    /// `real_time` says `t` is the log's own timestamp (or a live arrival), not a synthetic one.
    pub fn fill(&mut self, d: &mut StepRecord, t: f64, real_time: bool, sizes: &Sizes) {
        self.meaning.read(d, t, real_time);
        let batch = d.batch_size.or(sizes.batch);
        if d.step_time_ms.is_none() {
            d.step_time_ms = d.iters_per_s.filter(|r| *r > 0.0).map(|r| 1000.0 / r);
        }
        if let (Some(step), Some(e)) = (d.step, d.elapsed_s) {
            // A running total of training time: the step time is its growth per step since
            // the last line. A total that goes back was restarted (a clock reset after
            // warm-up, a new run): it gives no step time until the next line.
            if d.step_time_ms.is_none()
                && let Some((s0, e0)) = self.last_elapsed
                && step > s0
                && e >= e0
            {
                d.step_time_ms = Some((e - e0) * 1000.0 / (step - s0) as f64);
            }
            self.last_elapsed = Some((step, e));
        }
        if let (Some(step), Some(a)) = (d.step, d.avg_step_ms) {
            // A running average since the start: the steps since the last line took
            // (n a - m a') / (n - m) each; the first line's average stands for its steps.
            if d.step_time_ms.is_none() {
                d.step_time_ms = match self.last_avg {
                    Some((s0, a0)) if step > s0 => {
                        let t = (step as f64 * a - s0 as f64 * a0) / (step - s0) as f64;
                        (t > 0.0).then_some(t)
                    }
                    Some(_) => None,
                    None => Some(a),
                };
            }
            self.last_avg = Some((step, a));
        }
        if d.step_time_ms.is_none()
            && real_time
            && let (Some(step), Some((t0, s0))) = (d.step, self.last_stamp)
            && step > s0
            && t > t0
            // Step 0 is logged when the engine starts: the time after it is the setup's.
            && s0 > 0
        {
            d.step_time_ms = Some((t - t0) * 1000.0 / (step - s0) as f64);
        }
        if d.step_time_ms.is_none()
            && let (Some(sps), Some(b)) = (d.samples_per_s, batch)
            && sps > 0.0
        {
            d.step_time_ms = Some(b * 1000.0 / sps);
        }
        if d.iters_per_s.is_none() {
            d.iters_per_s = d.step_time_ms.filter(|ms| *ms > 0.0).map(|ms| 1000.0 / ms);
        }
        if d.samples_per_s.is_none()
            && let (Some(ips), Some(b)) = (d.iters_per_s, batch)
        {
            d.samples_per_s = Some(ips * b);
        }
        if d.tokens_per_device {
            d.tokens_per_gpu_s = d.tokens_per_s.take();
        }
        if let Some(g) = sizes.gpus.filter(|g| *g > 0.0) {
            if d.tokens_per_s.is_none() {
                d.tokens_per_s = d.tokens_per_gpu_s.map(|t| t * g);
            }
            if d.tokens_per_gpu_s.is_none() {
                d.tokens_per_gpu_s = d.tokens_per_s.map(|t| t / g);
            }
        }
        let tokens_per_step = sizes
            .tokens_per_step
            .or_else(|| Some(batch? * sizes.seq_len?));
        if d.tokens_per_s.is_none()
            && let (Some(ips), Some(tokens)) = (d.iters_per_s, tokens_per_step)
        {
            d.tokens_per_s = Some(ips * tokens);
            d.tokens_per_gpu_s = sizes.gpus.filter(|g| *g > 0.0).map(|g| ips * tokens / g);
        }
        if real_time && let Some(step) = d.step {
            // A new epoch restarts in-epoch positions: the next delta would be negative.
            self.last_stamp = Some((t, step));
        }
    }

    /// Records an already derived step.
    pub fn push(&mut self, d: &StepRecord, t: f64) {
        self.records += 1;
        self.last_time = Some(t);
        // The steps this line stands for: those since the rank's line before.
        let covers = super::coverage::steps_since(self.last_step, d.step);
        if let Some(step) = d.step {
            self.first_step.get_or_insert(step);
            self.last_step = Some(step);
        }
        keep_latest(&mut self.total, d.total);
        keep_latest(&mut self.epoch, d.epoch);
        let push = |m: &mut Metric, v: Option<f64>| {
            if let Some(v) = v {
                m.push(t, v);
            }
        };
        push(&mut self.step_time_ms, d.step_time_ms);
        if d.step_time_ms.is_some() {
            // The median walks a histogram: refreshed every so often, it is the run's norm.
            let n = self.step_time_ms.run.count();
            if n < 64 || n.is_multiple_of(64) {
                self.step_median_ms = self.step_time_ms.run.quantile(0.5);
            }
        }
        push(&mut self.data_time_ms, d.data_time_ms);
        // A data time on a line without the step's time (a print beside a progress bar)
        // pairs with the latest step time.
        if let (Some(data), Some(step)) = (d.data_time_ms, d.step_time_ms.or(self.last_step_ms)) {
            self.paired_data_ms.push(t, data * covers);
            self.paired_step_ms.push(t, step * covers);
            self.paired_steps.push(t, covers);
        }
        if d.step_time_ms.is_some() {
            self.last_step_ms = d.step_time_ms;
        }
        push(&mut self.samples_per_s, d.samples_per_s);
        push(&mut self.iters_per_s, d.iters_per_s);
        push(&mut self.tokens_per_s, d.tokens_per_s);
        push(&mut self.tokens_per_gpu_s, d.tokens_per_gpu_s);
        push(&mut self.loss, d.loss);
        if let Some(l) = d.loss {
            self.loss_track.push(l);
        }
        keep_latest(&mut self.lr, d.lr);
        keep_latest(&mut self.grad_norm, d.grad_norm);
        keep_latest(&mut self.loss_scale, d.loss_scale);
        keep_latest(&mut self.mfu_pct, d.mfu_pct);
        keep_latest(&mut self.memory_mb, d.memory_mb);
        keep_latest(&mut self.logged_eta_s, d.eta_s);
        keep_latest(&mut self.logged_avg_step_ms, d.avg_step_ms);
        keep_latest(&mut self.batch_size, d.batch_size);
    }

    /// Forgets how far the rank got and how many steps it logged, keeping what was measured:
    /// progress marks stood in for step lines that turned up after all.
    pub fn forget_progress(&mut self) {
        self.records = 0;
        self.first_step = None;
        self.last_step = None;
        self.last_stamp = None;
        self.last_elapsed = None;
        self.last_avg = None;
    }

    /// A step time (and data wait) a timing block's whole-step total gave, for a log whose
    /// step lines give none: no step record of its own, its figures only.
    pub fn push_times(&mut self, t: f64, step_ms: f64, data_ms: Option<f64>) {
        self.last_time = Some(t);
        self.step_time_ms.push(t, step_ms);
        let n = self.step_time_ms.run.count();
        if n < 64 || n.is_multiple_of(64) {
            self.step_median_ms = self.step_time_ms.run.quantile(0.5);
        }
        if step_ms > 0.0 {
            self.iters_per_s.push(t, 1000.0 / step_ms);
        }
        if let Some(data) = data_ms {
            self.data_time_ms.push(t, data);
            self.paired_data_ms.push(t, data);
            self.paired_step_ms.push(t, step_ms);
            self.paired_steps.push(t, 1.0);
        }
    }

    /// A data wait a timing block itemised for a step whose line timed the step alone.
    pub fn push_data(&mut self, t: f64, step_ms: f64, data_ms: f64) {
        self.data_time_ms.push(t, data_ms);
        self.paired_data_ms.push(t, data_ms);
        self.paired_step_ms.push(t, step_ms);
        self.paired_steps.push(t, 1.0);
    }

    /// Share of step time spent waiting for data, over the whole run.
    pub fn data_share(&self) -> Option<f64> {
        let step = self.paired_step_ms.run.sum();
        self.run_figures().data_share.or_else(|| {
            (self.paired_step_ms.run.count() > 0 && step > 0.0)
                .then(|| self.paired_data_ms.run.sum() / step)
        })
    }

    /// The data wait and the step time over the last `n` lines that logged both, each line
    /// weighing the steps it stands for.
    pub fn recent_paired_ms(&self, n: usize) -> Option<(f64, f64)> {
        let steps = self.paired_steps.recent.sum_last(n);
        (steps > 0.0).then(|| {
            (
                self.paired_data_ms.recent.sum_last(n) / steps,
                self.paired_step_ms.recent.sum_last(n) / steps,
            )
        })
    }

    /// Share of step time spent waiting for data over the last `n` steps that logged both.
    pub fn recent_data_share(&self, n: usize) -> Option<f64> {
        let step = self.paired_step_ms.recent.sum_last(n);
        (step > 0.0).then(|| self.paired_data_ms.recent.sum_last(n) / step)
    }

    /// The run's figures, each printed figure weighing the steps it stands for (`coverage`).
    pub fn run_figures(&self) -> super::coverage::Figures {
        let median = |m: &Metric| m.run.quantile(0.5);
        self.coverage.figures(
            self.step_median_ms,
            [
                median(&self.samples_per_s),
                median(&self.iters_per_s),
                median(&self.tokens_per_s),
                median(&self.tokens_per_gpu_s),
            ],
        )
    }

    /// The run's mean step time: each printed figure over the steps it stands for, from what
    /// covers the most steps (`coverage`); else the training script's own running average,
    /// else the mean of the step times.
    pub fn mean_step_ms(&self) -> Option<f64> {
        self.run_figures()
            .step_ms
            .map(|(ms, _)| ms)
            .or(self.logged_avg_step_ms)
            .or_else(|| self.step_time_ms.run.mean())
    }

    /// Whether the run reached its planned last step.
    pub fn finished(&self) -> bool {
        self.total.zip(self.last_step).is_some_and(|(t, l)| l >= t)
    }

    /// Our own ETA: steps left times the recent median step time.
    pub fn eta_s(&self, window: usize) -> Option<f64> {
        let left = self.total?.checked_sub(self.last_step?)?;
        Some(left as f64 * self.step_time_ms.recent(window)?.p50 / 1000.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch(b: f64) -> Sizes {
        Sizes {
            batch: Some(b),
            ..Sizes::default()
        }
    }

    fn rec(step: u64) -> StepRecord {
        StepRecord {
            step: Some(step),
            ..StepRecord::default()
        }
    }

    /// Steps `from..to` with every figure, through derive and push as the model does.
    fn feed(r: &mut RankState, from: u64, to: u64) {
        for i in from..to {
            let x = (i % 13) as f64;
            let s = StepRecord {
                total: Some(10_000),
                epoch: Some(i as f64 / 300.0),
                elapsed_s: (i % 5 == 0).then_some(i as f64 * 0.1),
                avg_step_ms: (i % 7 == 0).then_some(95.0 + x),
                step_time_ms: (i % 11 != 0).then_some(90.0 + x * x),
                data_time_ms: Some(3.0 + x),
                samples_per_s: Some(640.0 - x),
                tokens_per_s: Some(1e5 + x),
                tokens_per_gpu_s: Some(1e4 + x),
                loss: Some(3.0 / (1.0 + i as f64)),
                lr: Some(1e-4),
                grad_norm: Some(x),
                loss_scale: Some(65536.0),
                mfu_pct: Some(40.0 + x),
                memory_mb: Some(2e4 + x),
                eta_s: Some(1e4 - i as f64),
                ..rec(i + 1)
            };
            let t = i as f64 * 0.1;
            let d = r.derive(&s, t, i % 3 != 0, &batch(64.0));
            r.push(&d, t);
            r.push_data(t, 100.0 + x, 2.0 + x);
        }
    }

    #[test]
    fn a_cleared_state_is_a_new_one_and_goes_on_as_one() {
        let kinds: [fn() -> RankState; 2] =
            [|| RankState::new(10, true), || RankState::for_rank(100)];
        for make in kinds {
            // Past the histograms' first values, the windows' caps and the charts' merging.
            let mut used = make();
            feed(&mut used, 0, 3000);
            assert!(used.step_time_ms.run.quantile(0.5).is_some());
            used.clear();
            let mut fresh = make();
            assert_eq!(format!("{used:?}"), format!("{fresh:?}"));
            feed(&mut used, 0, 40);
            feed(&mut fresh, 0, 40);
            assert_eq!(format!("{used:?}"), format!("{fresh:?}"));
        }
        let mut spare = SpareRanks::default();
        let mut used = spare.take(100);
        feed(&mut used, 0, 500);
        spare.give(used);
        assert_eq!(
            format!("{:?}", spare.take(100)),
            format!("{:?}", RankState::for_rank(100))
        );
    }

    #[test]
    fn step_time_from_timestamps_then_rates() {
        let mut r = RankState::new(10, true);
        let d = r.derive(&rec(10), 100.0, true, &batch(3.0));
        assert_eq!(d.step_time_ms, None);
        r.push(&d, 100.0);
        let d = r.derive(&rec(12), 112.0, true, &batch(3.0));
        assert_eq!(d.step_time_ms, Some(6000.0));
        assert_eq!(d.samples_per_s, Some(0.5));
        let d = r.derive(
            &StepRecord {
                iters_per_s: Some(4.0),
                ..rec(13)
            },
            0.0,
            false,
            &Sizes::default(),
        );
        assert_eq!(d.step_time_ms, Some(250.0));
    }

    #[test]
    fn synthetic_times_never_make_step_times() {
        let mut r = RankState::new(10, true);
        r.derive(&rec(1), 1.0, false, &Sizes::default());
        assert_eq!(
            r.derive(&rec(2), 9.0, false, &Sizes::default())
                .step_time_ms,
            None
        );
    }

    #[test]
    fn a_rank_keeps_the_same_few_figures_however_long_it_runs() {
        let mut r = RankState::for_rank(100);
        for i in 0..10 * RANK_WINDOW as u64 {
            let d = StepRecord {
                step_time_ms: Some(100.0 + (i % 7) as f64),
                data_time_ms: Some(0.01 * (i % 300) as f64),
                samples_per_s: Some(64.0),
                loss: Some(2.0 - i as f64 * 1e-3),
                ..rec(i + 1)
            };
            let d = r.derive(&d, i as f64, true, &Sizes::default());
            r.push(&d, i as f64);
        }
        // Step time: the last RANK_WINDOW values and the run's quantiles.
        assert_eq!(r.step_time_ms.recent.len(), RANK_WINDOW);
        assert_eq!(r.step_time_ms.run.count(), 10 * RANK_WINDOW as u64);
        assert!(r.step_time_ms.run.quantile(0.5).is_some());
        // No chart history, and the other figures keep their sums and latest value only.
        assert_eq!(r.step_time_ms.series.points().count(), 0);
        assert_eq!(r.loss.series.points().count(), 0);
        assert_eq!(r.data_time_ms.recent.len(), 1);
        assert_eq!(r.data_time_ms.run.quantile(0.5), None);
        assert!(r.data_share().is_some());
        // The merged view keeps everything.
        let mut all = RankState::new(100, true);
        let d = all.derive(&rec(1), 0.0, true, &Sizes::default());
        all.push(
            &StepRecord {
                step_time_ms: Some(100.0),
                ..d
            },
            0.0,
        );
        assert_eq!(all.step_time_ms.series.points().count(), 1);
    }

    #[test]
    fn data_share_is_a_ratio_of_sums() {
        let mut r = RankState::new(10, true);
        for (data, step) in [(10.0, 100.0), (30.0, 100.0)] {
            let d = StepRecord {
                data_time_ms: Some(data),
                step_time_ms: Some(step),
                ..rec(1)
            };
            r.push(&d, 0.0);
        }
        assert_eq!(r.data_share(), Some(0.2));
        assert_eq!(r.recent_data_share(1), Some(0.3));
    }
}
