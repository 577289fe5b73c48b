//! The run's figures, each printed figure weighing the steps it stands for (docs/figures.md):
//! a per-step value, the steps since the previous training line; a running average,
//! differenced from the first line of its segment, the steps between that line and its own;
//! an elapsed total, the steps between two of its lines. The run's figure is the step-weighted
//! mean, from what covers the most steps: running averages, then elapsed totals, then per-step
//! values. The steps up to the run's first line, and up to the first line of an average's
//! segment (an epoch's first batch, a compile), are the start and are left out. A log that
//! prints one step in 390 (timm's `[0/781]` and `[780/781]`) is judged by the averages it
//! prints, not by its two sampled batches, the slow first one weighing as much as the other.
//! A slow step at a fixed period of the printed lines (pix2pix saving its visuals on every
//! fourth print) is one step, not its line's hundred; the other steps of its interval are the
//! run's usual step.

use crate::parse::record::StepRecord;

/// The steps a line at `step` stands for: those since the line before it at `before`, or one
/// where either is unknown or the count did not go forward.
pub fn steps_since(before: Option<u64>, step: Option<u64>) -> f64 {
    match (before, step) {
        (Some(before), Some(step)) if step > before => (step - before) as f64,
        _ => 1.0,
    }
}

/// Sums of values, each weighted by the steps it stands for.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Weighted {
    pub steps: f64,
    pub sum: f64,
}

impl Weighted {
    fn add(&mut self, value: f64, steps: f64) {
        self.steps += steps;
        self.sum += value * steps;
    }

    /// The step-weighted mean.
    pub fn mean(&self) -> Option<f64> {
        (self.steps > 0.0).then(|| self.sum / self.steps)
    }
}

/// A rate over the run: steps over the time they took, each printed rate standing for the
/// steps its line covers (a step-weighted harmonic mean).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Rate {
    steps: f64,
    /// Sum of steps / rate: the time the steps took, in the rate's own units.
    time: f64,
}

impl Rate {
    fn add(&mut self, rate: f64, steps: f64) {
        if rate > 0.0 && rate.is_finite() {
            self.steps += steps;
            self.time += steps / rate;
        }
    }

    pub fn value(&self) -> Option<f64> {
        (self.time > 0.0).then(|| self.steps / self.time)
    }
}

/// One line of a running average: the steps it covers and its figures.
#[derive(Clone, Copy, Debug, PartialEq)]
struct AvgLine {
    covered: f64,
    step_ms: f64,
    data_ms: Option<f64>,
    samples_per_s: Option<f64>,
}

/// A running average's segment: its first line and its latest.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Segment {
    first: AvgLine,
    last: AvgLine,
}

impl Segment {
    fn steps(&self) -> f64 {
        self.last.covered - self.first.covered
    }

    /// The mean of a figure over the steps between the first line and the last.
    fn between(&self, of: impl Fn(&AvgLine) -> Option<f64>) -> Option<f64> {
        let n = self.steps();
        (n > 0.0).then(|| {
            Some((of(&self.last)? * self.last.covered - of(&self.first)? * self.first.covered) / n)
        })?
    }

    /// The time the steps between the first line and the last took at the averaged rate.
    fn rate_time(&self) -> Option<f64> {
        let (a, b) = (self.first.samples_per_s?, self.last.samples_per_s?);
        (a > 0.0 && b > 0.0).then(|| self.last.covered / b - self.first.covered / a)
    }
}

/// The coverages of one run, as its step records come.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Coverage {
    /// The last training step seen: what the next line's steps are counted from.
    last_step: Option<u64>,
    /// Per-step values, each over the steps since the previous training line.
    pub per_step: Weighted,
    /// Data and step time of the lines that gave both, weighted alike: the data share.
    pub paired_data: Weighted,
    pub paired_step: Weighted,
    pub samples_per_s: Rate,
    pub iters_per_s: Rate,
    pub tokens_per_s: Rate,
    pub tokens_per_gpu_s: Rate,
    /// Running averages: the segments that ended, summed, and the one under way.
    averaged: Weighted,
    averaged_data: Weighted,
    averaged_data_step: Weighted,
    averaged_rate: Rate,
    segment: Option<Segment>,
    /// An elapsed total: the first line after its last restart, and the latest.
    elapsed: Option<((u64, f64), (u64, f64))>,
    /// Lines left out of the per-step figures as an evaluation's or a checkpoint's pause.
    pub paused_lines: u64,
    /// Whether a timed line that names no step came yet: the first is the run's start.
    stepless_timed: bool,
    /// Per-step lines seen, and the slow ones held (see `Slow`).
    lines: u64,
    slow: std::collections::VecDeque<Slow>,
}

/// What a step time after an eval or checkpoint must exceed, times the run's median, to be
/// the pause's rather than a step's.
pub const PAUSED: f64 = 1.5;
/// What a step time must exceed, times the run's median, to be a slow step that may come at a
/// fixed period.
const SLOW: f64 = 3.0;
/// Slow lines held for the period test; past it the oldest count as any line.
const SLOW_KEPT: usize = 4096;

/// A slow line, held until the run's figures are asked for: at a fixed period of the lines it
/// is one step, else it stands for its line's steps.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Slow {
    /// Its place among the per-step lines.
    at: u64,
    steps: f64,
    ms: f64,
    data_ms: Option<f64>,
    rates: [Option<f64>; 4],
}

impl Coverage {
    /// A training step's line, its figures derived (`RankState::fill`); `paused` when it came
    /// right after an eval or a checkpoint with a time that holds the pause; `median`, the
    /// run's median step time so far.
    pub fn line(&mut self, d: &StepRecord, paused: bool, median: Option<f64>) {
        let Some(step) = d.step else {
            // A time printed apart from its step (ssd.pytorch's `timer: 0.3520 sec.` before
            // `iter 10 || Loss: ...`): one step's, the first of them the run's start.
            if d.step_time_ms.is_some() && !paused && !d.evaluated {
                if self.stepless_timed {
                    let rates = [
                        d.samples_per_s,
                        d.iters_per_s,
                        d.tokens_per_s,
                        d.tokens_per_gpu_s,
                    ];
                    self.add_line(d.step_time_ms, d.data_time_ms, rates, 1.0);
                }
                self.stepless_timed = true;
            }
            return;
        };
        // A line that reports an evaluation is no training step (modded-nanogpt's
        // `step:0/3325 val_loss:10.8 train_time:0.000s`): never the run's start, and its time,
        // where it has one, the pause's.
        if d.evaluated {
            if self.last_step.is_some_and(|prev| step > prev) {
                self.last_step = Some(step);
                self.paused_lines += 1;
            }
            return;
        }
        let mut steps = match self.last_step {
            Some(prev) if step > prev => (step - prev) as f64,
            // The run's first line: its steps are the start.
            None => 0.0,
            Some(_) => return,
        };
        self.last_step = Some(step);
        // The first line of an average's segment is its start too (an epoch's first batch).
        if self.average(d) {
            steps = 0.0;
        }
        if let Some(e) = d.elapsed_s {
            self.elapsed = match self.elapsed {
                Some((first, (_, e0))) if e >= e0 => Some((first, (step, e))),
                // A total that goes back was restarted: counted from here.
                _ => Some(((step, e), (step, e))),
            };
        }
        if steps == 0.0 {
            return;
        }
        if paused {
            self.paused_lines += 1;
            return;
        }
        let rates = [
            d.samples_per_s,
            d.iters_per_s,
            d.tokens_per_s,
            d.tokens_per_gpu_s,
        ];
        if let Some(ms) = d.step_time_ms {
            self.lines += 1;
            if median.is_some_and(|m| ms > SLOW * m) && steps > 1.0 {
                if self.slow.len() == SLOW_KEPT
                    && let Some(old) = self.slow.pop_front()
                {
                    self.add(old.ms, old.data_ms, old.rates, old.steps);
                }
                self.slow.push_back(Slow {
                    at: self.lines,
                    steps,
                    ms,
                    data_ms: d.data_time_ms,
                    rates,
                });
                return;
            }
        }
        self.add_line(d.step_time_ms, d.data_time_ms, rates, steps);
    }

    /// A line's figures, each over `steps` steps.
    fn add_line(
        &mut self,
        ms: Option<f64>,
        data: Option<f64>,
        rates: [Option<f64>; 4],
        steps: f64,
    ) {
        if let Some(ms) = ms {
            self.per_step.add(ms, steps);
            if let Some(data) = data {
                self.paired_data.add(data, steps);
                self.paired_step.add(ms, steps);
            }
        }
        let into = [
            &mut self.samples_per_s,
            &mut self.iters_per_s,
            &mut self.tokens_per_s,
            &mut self.tokens_per_gpu_s,
        ];
        for (rate, v) in into.into_iter().zip(rates) {
            if let Some(v) = v {
                rate.add(v, steps);
            }
        }
    }

    fn add(&mut self, ms: f64, data: Option<f64>, rates: [Option<f64>; 4], steps: f64) {
        self.add_line(Some(ms), data, rates, steps);
    }

    /// The per-step figures with the slow lines held: at a fixed period of the lines (three or
    /// more, the same number of lines apart), each is one step and the rest of its interval
    /// the usual step (`median`, and the usual rates); else each stands for its steps.
    fn settled(&self, median: Option<f64>, usual_rates: [Option<f64>; 4]) -> Coverage {
        let mut c = self.clone();
        let slow: Vec<Slow> = c.slow.drain(..).collect();
        let gaps: std::collections::BTreeSet<u64> =
            slow.windows(2).map(|w| w[1].at - w[0].at).collect();
        let periodic = slow.len() >= 3 && gaps.len() == 1 && gaps.first().is_some_and(|g| *g > 1);
        for s in slow {
            match median.filter(|_| periodic) {
                Some(m) => {
                    c.add(s.ms, s.data_ms, s.rates, 1.0);
                    c.add_line(Some(m), None, usual_rates, s.steps - 1.0);
                }
                None => c.add(s.ms, s.data_ms, s.rates, s.steps),
            }
        }
        c
    }

    /// A running average's line: its segment goes on, or a new one starts where the steps it
    /// covers went back (an epoch's average restarted). True for a segment's first line.
    fn average(&mut self, d: &StepRecord) -> bool {
        let (Some(avg), Some(covered)) = (d.avg_step_ms, d.avg_steps.or(d.step)) else {
            return false;
        };
        let line = AvgLine {
            covered: covered as f64,
            step_ms: avg,
            data_ms: d.avg_data_ms,
            samples_per_s: d.avg_samples_per_s,
        };
        match &mut self.segment {
            Some(s) if line.covered > s.last.covered => s.last = line,
            Some(s) if line.covered == s.last.covered => {}
            _ => {
                self.close();
                self.segment = Some(Segment {
                    first: line,
                    last: line,
                });
                return true;
            }
        }
        false
    }

    /// Sums the segment under way into the ended ones.
    fn close(&mut self) {
        let Some(s) = self.segment.take() else {
            return;
        };
        let n = s.steps();
        if let Some(ms) = s.between(|l| Some(l.step_ms)) {
            self.averaged.add(ms, n);
            if let Some(data) = s.between(|l| l.data_ms) {
                self.averaged_data.add(data, n);
                self.averaged_data_step.add(ms, n);
            }
        }
        if let Some(t) = s.rate_time().filter(|t| *t > 0.0) {
            self.averaged_rate.add(n / t, n);
        }
    }

    /// The running averages' sums with the segment under way.
    fn averages(&self) -> (Weighted, Weighted, Weighted, Rate) {
        let mut c = self.clone();
        c.close();
        (
            c.averaged,
            c.averaged_data,
            c.averaged_data_step,
            c.averaged_rate,
        )
    }

    /// The run's figures: `median` is its median step time, `usual` its median rates
    /// (samples/s, it/s, tokens/s, tokens/s a GPU), for the slow lines at a fixed period.
    pub fn figures(&self, median: Option<f64>, usual: [Option<f64>; 4]) -> Figures {
        let c = self.settled(median, usual);
        let (averaged, data, data_step, averaged_rate) = c.averages();
        let elapsed = c.elapsed.and_then(|((s0, e0), (s1, e1))| {
            (s1 > s0).then(|| {
                let mut w = Weighted::default();
                w.add((e1 - e0) * 1000.0 / (s1 - s0) as f64, (s1 - s0) as f64);
                w
            })
        });
        let step = [
            (Some(averaged), Source::Averages),
            (elapsed, Source::Elapsed),
            (Some(c.per_step), Source::PerStep),
        ]
        .into_iter()
        .filter_map(|(w, source)| Some((w?.mean()?, w?.steps, source)))
        // The most steps; the earlier source on a tie.
        .fold(None, |best: Option<(f64, f64, Source)>, x| match best {
            Some(b) if b.1 >= x.1 => Some(b),
            _ => Some(x),
        });
        let data_share = match step {
            Some((_, _, Source::Averages)) if data.steps > 0.0 => {
                Some(data.sum / data_step.sum).filter(|s| s.is_finite())
            }
            _ => (c.paired_step.sum > 0.0).then(|| c.paired_data.sum / c.paired_step.sum),
        };
        Figures {
            step_ms: step.map(|(ms, _, source)| (ms, source)),
            steps: step.map_or(0.0, |(_, n, _)| n),
            data_share,
            samples_per_s: averaged_rate.value().or(c.samples_per_s.value()),
            iters_per_s: c.iters_per_s.value(),
            tokens_per_s: c.tokens_per_s.value(),
            tokens_per_gpu_s: c.tokens_per_gpu_s.value(),
        }
    }
}

/// The run's figures, each from what covers the most steps.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Figures {
    /// The mean step time and where it came from.
    pub step_ms: Option<(f64, Source)>,
    /// The steps the step time rests on.
    pub steps: f64,
    pub data_share: Option<f64>,
    pub samples_per_s: Option<f64>,
    pub iters_per_s: Option<f64>,
    pub tokens_per_s: Option<f64>,
    pub tokens_per_gpu_s: Option<f64>,
}

/// Where the run's mean step time came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The running averages the log prints.
    Averages,
    /// An elapsed total, differenced over the run.
    Elapsed,
    /// The step time of each line, over the steps each stands for.
    PerStep,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(step: u64) -> StepRecord {
        StepRecord {
            step: Some(step),
            ..StepRecord::default()
        }
    }

    /// timm's CIFAR log: each epoch of 781 batches prints batch 0 (slow: the loader restarts)
    /// and batch 780, with the epoch's running averages beside each.
    #[test]
    fn an_epochs_running_averages_beat_its_two_sampled_batches() {
        let mut c = Coverage::default();
        for epoch in 0..3u64 {
            let base = epoch * 781;
            c.line(
                &StepRecord {
                    step_time_ms: Some(260.0),
                    data_time_ms: Some(105.0),
                    avg_step_ms: Some(260.0),
                    avg_data_ms: Some(105.0),
                    avg_samples_per_s: Some(247.0),
                    avg_steps: Some(1),
                    ..line(base)
                },
                false,
                None,
            );
            c.line(
                &StepRecord {
                    step_time_ms: Some(152.0),
                    data_time_ms: Some(0.0),
                    // Over 781 batches, the first one's 260 ms among 780 of 158 ms.
                    avg_step_ms: Some((260.0 + 780.0 * 158.0) / 781.0),
                    avg_data_ms: Some((105.0 + 780.0 * 3.0) / 781.0),
                    avg_samples_per_s: Some(781.0 / (1.0 / 247.0 + 780.0 / 405.0)),
                    avg_steps: Some(781),
                    ..line(base + 780)
                },
                false,
                None,
            );
        }
        let f = c.figures(None, [None; 4]);
        let (ms, source) = f.step_ms.unwrap();
        assert_eq!(source, Source::Averages);
        assert!((ms - 158.0).abs() < 1e-6, "{ms}");
        assert!((f.data_share.unwrap() - 3.0 / 158.0).abs() < 1e-9);
        assert!((f.samples_per_s.unwrap() - 405.0).abs() < 1e-6);
    }

    /// modded-nanogpt: step 1 carries the compile (178.6 s) in the running average since the
    /// start and in the elapsed total; both say 150.3 ms once the start is left out: 499.633 s
    /// over the 3,324 steps after step 1.
    #[test]
    fn the_start_is_left_out() {
        let mut c = Coverage::default();
        let at = |step: u64, elapsed_s: f64| StepRecord {
            elapsed_s: Some(elapsed_s),
            avg_step_ms: Some(elapsed_s * 1000.0 / step as f64),
            avg_steps: Some(step),
            ..line(step)
        };
        c.line(&at(1, 178.564), false, None);
        c.line(&at(2, 178.714), false, None);
        c.line(&at(3325, 678.197), false, None);
        let (ms, source) = c.figures(None, [None; 4]).step_ms.unwrap();
        assert_eq!(source, Source::Averages);
        assert!((ms - 499_633.0 / 3324.0).abs() < 1e-6, "{ms}");
    }

    /// Per-step values weigh the steps since the previous line; a slow line right after an
    /// evaluation is the pause's.
    #[test]
    fn a_line_weighs_its_steps_and_a_pause_is_no_step() {
        let mut c = Coverage::default();
        let timed = |step: u64, ms: f64| StepRecord {
            step_time_ms: Some(ms),
            iters_per_s: Some(1000.0 / ms),
            ..line(step)
        };
        c.line(&timed(0, 25_000.0), false, None);
        c.line(&timed(10, 100.0), false, Some(150.0));
        c.line(&timed(20, 200.0), false, Some(150.0));
        c.line(&timed(21, 9_000.0), true, Some(150.0));
        let f = c.figures(Some(150.0), [None; 4]);
        let (ms, source) = f.step_ms.unwrap();
        assert_eq!(source, Source::PerStep);
        assert!((ms - 150.0).abs() < 1e-9, "{ms}");
        assert_eq!(c.paused_lines, 1);
        assert!((f.iters_per_s.unwrap() - 20.0 / 3.0).abs() < 1e-9);
    }

    /// pix2pix prints every 100 steps and saves its visuals every 400, in the printed step:
    /// every fourth line is slow. Each is one slow step; the rest of its interval, the usual.
    #[test]
    fn a_slow_step_at_a_fixed_period_is_one_step() {
        let mut c = Coverage::default();
        let timed = |step: u64, ms: f64| StepRecord {
            step_time_ms: Some(ms),
            ..line(step)
        };
        c.line(&timed(0, 100.0), false, None);
        for k in 1..=40u64 {
            let ms = if k % 4 == 0 { 8400.0 } else { 116.0 };
            c.line(&timed(k * 100, ms), false, Some(116.0));
        }
        let (ms, _) = c.figures(Some(116.0), [None; 4]).step_ms.unwrap();
        // 10 slow steps of 8.4 s among 4,000 of 116 ms.
        let want = (3990.0 * 116.0 + 10.0 * 8400.0) / 4000.0;
        assert!((ms - want).abs() < 1e-9, "{ms} against {want}");
        // Slow at no fixed period: each stands for its line's steps.
        let mut c = Coverage::default();
        c.line(&timed(0, 100.0), false, None);
        for k in 1..=40u64 {
            let ms = if [3, 5, 11, 12, 30].contains(&k) {
                8400.0
            } else {
                116.0
            };
            c.line(&timed(k * 100, ms), false, Some(116.0));
        }
        let (ms, _) = c.figures(Some(116.0), [None; 4]).step_ms.unwrap();
        let want = (35.0 * 116.0 + 5.0 * 8400.0) / 40.0;
        assert!((ms - want).abs() < 1e-9, "{ms} against {want}");
    }
}
