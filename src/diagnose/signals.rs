//! The signals rules share, read from the model over the diagnosis's windows: the last N
//! steps for what the logs say, the last T seconds of samples for what the hardware says.
//! Each is computed when a rule asks; None means nothing measured it.

use std::cell::OnceCell;

use super::params::Windows;
use super::{Finding, Severity};
use crate::model::breakdown::{Breakdown, Over};
use crate::model::sample::{GpuReading, HostReading, Sample, TrainerReading};
use crate::model::{LogMemory, Model};
use crate::parse::record::HostMemRecord;

/// The model as the rules see it, for one evaluation: the signals several rules read are
/// computed once.
pub struct View<'a> {
    pub m: &'a Model,
    pub windows: Windows,
    /// The ids of the rules with an active alert (a few at most, so a list is quickest).
    active: Vec<&'static str>,
    /// The same rules as bits of their place in `RULES`: what the engine asks at every rule.
    active_mask: u64,
    /// Whether findings get their words (see `Finding`).
    pub describe: bool,
    step_mean: OnceCell<Option<f64>>,
    data_ms: OnceCell<Option<f64>>,
    data_share: OnceCell<Option<f64>>,
    breakdown: OnceCell<Breakdown<'a>>,
    stage_shares: OnceCell<Vec<(&'a str, f64, f64)>>,
}

impl<'a> View<'a> {
    /// `active`: the ids of the rules with an active alert, and the same as bits of their
    /// place in `RULES`.
    pub fn new(m: &'a Model, windows: Windows, active: (Vec<&'static str>, u64)) -> Self {
        View {
            m,
            windows,
            active: active.0,
            active_mask: active.1,
            describe: true,
            step_mean: OnceCell::new(),
            data_ms: OnceCell::new(),
            data_share: OnceCell::new(),
            breakdown: OnceCell::new(),
            stage_shares: OnceCell::new(),
        }
    }

    /// A finding whose symptom is there at `severity`.
    pub fn enter<S: Into<String>>(&self, severity: Severity, title: impl FnOnce() -> S) -> Finding {
        Finding {
            enter: Some(severity),
            ..self.stay(title)
        }
    }

    /// A finding whose symptom is gone but whose relaxed exit condition holds: an active
    /// alert stays, a new one is not raised.
    pub fn stay<S: Into<String>>(&self, title: impl FnOnce() -> S) -> Finding {
        Finding {
            stay: true,
            described: self.describe,
            title: if self.describe {
                title().into()
            } else {
                String::new()
            },
            ..Finding::default()
        }
    }

    /// `enter` at `level`, or `stay` without one.
    pub fn graded<S: Into<String>>(
        &self,
        level: Option<Severity>,
        title: impl FnOnce() -> S,
    ) -> Finding {
        match level {
            Some(s) => self.enter(s, title),
            None => self.stay(title),
        }
    }

    /// Whether rule `id` has an active alert.
    pub fn is_active(&self, id: &str) -> bool {
        self.active.contains(&id)
    }

    /// The ids of the rules with an active alert.
    pub fn active_rules(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.active.iter().copied()
    }

    /// Whether any rule of `mask` (bits of places in `RULES`) has an active alert.
    pub fn any_active(&self, mask: u64) -> bool {
        self.active_mask & mask != 0
    }

    /// The active ids and their bits back, once the evaluation is over.
    pub fn into_active(self) -> (Vec<&'static str>, u64) {
        (self.active, self.active_mask)
    }

    /// Marks rule `id`, at place `place` in `RULES`, active or not, as the engine decides
    /// during an evaluation: an active one moves to the end of the list.
    pub fn set_active(&mut self, place: usize, id: &'static str, active: bool) {
        let bit = 1u64 << place;
        // Most calls change nothing: an active rule already last, an inactive one absent.
        if active && self.active.last() == Some(&id) || !active && self.active_mask & bit == 0 {
            return;
        }
        self.active.retain(|a| *a != id);
        self.active_mask &= !bit;
        if active {
            self.active.push(id);
            self.active_mask |= bit;
        }
    }

    fn steps(&self) -> usize {
        self.windows.steps
    }

    /// The window the log rules look back over.
    pub fn span(&self) -> Over {
        Over::Recent(self.steps())
    }

    /// Mean step time over the last window of steps.
    pub fn step_mean(&self) -> Option<f64> {
        *self.step_mean.get_or_init(|| self.m.step_ms(self.span()))
    }

    /// Mean data_time over the last window of steps that logged one, each line weighing the
    /// steps it stands for where it logged the step's time too.
    pub fn data_ms(&self) -> Option<f64> {
        *self.data_ms.get_or_init(|| {
            let m = &self.m.merged;
            m.recent_paired_ms(self.steps())
                .map(|(data, _)| data)
                .or_else(|| m.data_time_ms.recent.mean_last(self.steps()))
        })
    }

    /// The mean step time of the same lines as `data_ms`, weighed alike: the step the data
    /// wait is a share of.
    pub fn paired_step_ms(&self) -> Option<f64> {
        self.m
            .merged
            .recent_paired_ms(self.steps())
            .map(|(_, step)| step)
            .or_else(|| self.step_mean())
    }

    /// Data time over step time, summed over the recent steps that logged both.
    pub fn data_share(&self) -> Option<f64> {
        *self
            .data_share
            .get_or_init(|| self.m.data_share(self.span()))
    }

    /// Where the recent steps' time goes (Model::step_breakdown over the window).
    pub fn breakdown(&self) -> &Breakdown<'a> {
        self.breakdown
            .get_or_init(|| self.m.step_breakdown(self.span()))
    }

    /// The finest forward pieces with their recent mean and share of the forward, largest
    /// first.
    pub fn stage_shares(&self) -> &[(&'a str, f64, f64)] {
        self.stage_shares
            .get_or_init(|| self.breakdown().stage_shares())
    }

    /// The recent cache hit rate (0-1).
    pub fn cache_hit_rate(&self) -> Option<f64> {
        self.m.cache.recent_hit_rate.or(self.m.cache.hit_rate())
    }

    /// Samples of the last window of seconds, oldest first; only those since the first step,
    /// or since steps came again after a gap (the readings of the job's start or of the gap
    /// describe those, not the run).
    pub fn samples(&self) -> impl Iterator<Item = &'a Sample> + 'a {
        let since = self
            .m
            .hardware
            .latest()
            .map_or(f64::INFINITY, |s| s.time - self.windows.seconds);
        // The reading the first or resumed step came with was taken before it.
        let resumed = self.m.timeline.resumed_at.unwrap_or(f64::NEG_INFINITY);
        self.m
            .hardware
            .recent
            .iter()
            .filter(move |s| s.time >= since && s.time > resumed)
    }

    /// Whether steps are coming, by the samples' clock: the last one within half a window
    /// (true when no step was ever parsed: the readings are all there is). Rules about a
    /// working run's GPUs stay quiet while it is not stepping: that is `stalled`'s.
    pub fn stepping(&self) -> bool {
        match (self.m.timeline.step_clock.flatten(), self.latest()) {
            (Some(at), Some(now)) => now.time - at <= self.windows.seconds / 2.0,
            _ => true,
        }
    }

    /// Mean of `f` over the window's readings of working GPUs.
    pub fn gpu_mean(&self, f: impl Fn(&GpuReading) -> Option<f64>) -> Option<f64> {
        mean(
            self.samples()
                .flat_map(|s| s.gpus.iter())
                .filter(|g| g.failed.is_none())
                .filter_map(f),
        )
    }

    /// Mean GPU utilization (0-100).
    pub fn gpu_util(&self) -> Option<f64> {
        self.gpu_mean(|g| g.util_pct.map(f64::from))
    }

    /// Mean power draw as a share of the enforced limit (0-1), of GPUs whose power is their
    /// own (not a GPU in MIG mode, shared by its instances).
    pub fn gpu_power_share(&self) -> Option<f64> {
        self.gpu_mean(|g| {
            g.power_is_its_own()
                .then(|| Some(g.power_w? / g.power_limit_w.filter(|l| *l > 0.0)?))?
        })
    }

    /// Mean of the largest and the smallest utilization per GPU, over the window: a wide
    /// gap is the sawtooth of a GPU waiting for input.
    pub fn gpu_util_swing(&self) -> Option<f64> {
        let utils: Vec<f64> = self
            .samples()
            .flat_map(|s| s.gpus.iter())
            .filter_map(|g| g.util_pct.map(f64::from))
            .collect();
        let max = utils.iter().copied().reduce(f64::max)?;
        let min = utils.iter().copied().reduce(f64::min)?;
        Some(max - min)
    }

    /// Mean of `f` over the window's host readings.
    pub fn host_mean(&self, f: impl Fn(&HostReading) -> Option<f64>) -> Option<f64> {
        mean(self.samples().filter_map(|s| s.host.as_ref()).filter_map(f))
    }

    /// Mean of `f` over the window's trainer readings.
    pub fn trainer_mean(&self, f: impl Fn(&TrainerReading) -> Option<f64>) -> Option<f64> {
        mean(
            self.samples()
                .filter_map(|s| s.trainer.as_ref())
                .filter_map(f),
        )
    }

    pub fn latest(&self) -> Option<&'a Sample> {
        self.m.hardware.latest()
    }

    pub fn trainer(&self) -> Option<&'a TrainerReading> {
        self.latest()?.trainer.as_ref()
    }

    pub fn host(&self) -> Option<&'a HostReading> {
        self.latest()?.host.as_ref()
    }

    /// The memory monitor's latest readings in the log, oldest first: evidence for the
    /// memory rules when there are no probe readings.
    pub fn log_memory(&self) -> impl Iterator<Item = &'a LogMemory> + 'a {
        let skip = self.m.log_memory.len().saturating_sub(LOG_MEMORY_TREND);
        self.m.log_memory.iter().skip(skip)
    }

    /// Least-squares slope of `f` over the log's latest memory readings, per second of log
    /// time; None without a spread of times.
    pub fn log_memory_slope(&self, f: impl Fn(&HostMemRecord) -> Option<f64>) -> Option<f64> {
        let points: Vec<(f64, f64)> = self
            .log_memory()
            .filter_map(|r| Some((r.time, f(&r.reading)?)))
            .collect();
        slope(&points)
    }

    /// Least-squares slope of `f` over the window's samples, per second.
    pub fn slope(&self, f: impl Fn(&Sample) -> Option<f64>) -> Option<f64> {
        let points: Vec<(f64, f64)> = self
            .samples()
            .filter_map(|s| Some((s.time, f(s)?)))
            .collect();
        slope(&points)
    }
}

/// Memory monitor readings a trend is fitted over: a log prints one every few dozen steps.
const LOG_MEMORY_TREND: usize = 8;

fn mean(values: impl Iterator<Item = f64>) -> Option<f64> {
    let (sum, n) = values
        .filter(|v| v.is_finite())
        .fold((0.0, 0usize), |(s, n), v| (s + v, n + 1));
    (n > 0).then(|| sum / n as f64)
}

/// A straight line through points: its slope and how well it fits (r², 1 = every point on it).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Fit {
    pub slope: f64,
    pub r2: f64,
}

/// Least-squares slope of y over x; None for fewer than 3 points or no spread in x.
pub fn slope(points: &[(f64, f64)]) -> Option<f64> {
    fit(points).map(|f| f.slope)
}

/// Least-squares line through the points; None for fewer than 3 points or no spread in x.
pub fn fit(points: &[(f64, f64)]) -> Option<Fit> {
    if points.len() < 3 {
        return None;
    }
    let n = points.len() as f64;
    let mx = points.iter().map(|p| p.0).sum::<f64>() / n;
    let my = points.iter().map(|p| p.1).sum::<f64>() / n;
    let sxx: f64 = points.iter().map(|p| (p.0 - mx).powi(2)).sum();
    let syy: f64 = points.iter().map(|p| (p.1 - my).powi(2)).sum();
    let sxy: f64 = points.iter().map(|p| (p.0 - mx) * (p.1 - my)).sum();
    if sxx <= 0.0 {
        return None;
    }
    // A flat line fits flat points perfectly.
    let r2 = if syy > 0.0 {
        sxy * sxy / (sxx * syy)
    } else {
        1.0
    };
    Some(Fit {
        slope: sxy / sxx,
        r2,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_has_its_slope() {
        let pts: Vec<(f64, f64)> = (0..10)
            .map(|i| (f64::from(i), 5.0 - 2.0 * f64::from(i)))
            .collect();
        assert!((slope(&pts).expect("slope") + 2.0).abs() < 1e-12);
        assert!((fit(&pts).expect("fit").r2 - 1.0).abs() < 1e-12);
        assert_eq!(slope(&pts[..2]), None);
        // A sawtooth has no trend to speak of.
        let saw: Vec<(f64, f64)> = (0..40).map(|i| (f64::from(i), f64::from(i % 4))).collect();
        assert!(fit(&saw).expect("fit").r2 < 0.1);
    }
}
