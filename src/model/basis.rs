//! Where the run's headline figures came from: printed, or worked out from what the log
//! printed (and from which sizes, with what assumed where the log is silent), or missing and
//! why. A figure shown without its basis reads as a fact; the report says which it is.

use serde::Serialize;

use super::Facts;
use super::coverage::Source;
use crate::common::units::pct;
use crate::parse::record::{Smoothing, StepRecord};

/// How each step's time was had.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StepTimeFrom {
    Printed,
    /// The printed time is itself a running average (detectron2's `time`).
    AverageShown,
    RunningAverage,
    RunningTotal,
    Rate,
    SmoothedRate,
    BarMean,
    SamplesAndBatch,
    Timestamps,
    /// The log prints no time: the gaps between the step lines' arrivals, read live.
    Arrivals,
}

const STEP_TIME_WAYS: usize = 10;

/// How the samples/s and tokens/s were had.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum RateFrom {
    Printed,
    /// Tokens: one GPU's printed rate times the GPUs.
    PerGpu,
    /// From the steps per second and a step's samples or tokens.
    Derived,
}

const RATE_WAYS: usize = 3;

/// Counts of the ways the step records' figures were had.
#[derive(Clone, Debug, Default)]
pub struct Basis {
    step_time: [u64; STEP_TIME_WAYS],
    samples: [u64; RATE_WAYS],
    tokens: [u64; RATE_WAYS],
    data: u64,
    timed_data: u64,
}

/// How a step record's figures would be had, read from it as the line logged it: the model
/// fills the record in place, and `Basis::note` then counts the ways of the figures it has.
#[derive(Clone, Copy, Debug)]
pub struct Ways {
    step_time: StepTimeFrom,
    samples: RateFrom,
    tokens: RateFrom,
}

impl Ways {
    /// `arrived`: the line's time is its arrival (see `Stamp::arrived`).
    pub fn of(logged: &StepRecord, arrived: bool) -> Ways {
        // In the order the model works a step time out (run.rs, `RankState::fill`).
        let step_time = if logged.smoothed == Smoothing::Moving {
            StepTimeFrom::SmoothedRate
        } else if logged.smoothed == Smoothing::SinceStart {
            StepTimeFrom::BarMean
        } else if logged.avg_step_ms.is_some() && logged.step_time_ms == logged.avg_step_ms {
            StepTimeFrom::AverageShown
        } else if logged.step_time_ms.is_some() {
            StepTimeFrom::Printed
        } else if logged.iters_per_s.is_some() {
            StepTimeFrom::Rate
        } else if logged.elapsed_s.is_some() {
            StepTimeFrom::RunningTotal
        } else if logged.avg_step_ms.is_some() {
            StepTimeFrom::RunningAverage
        } else if logged.samples_per_s.is_some() {
            StepTimeFrom::SamplesAndBatch
        } else if arrived {
            StepTimeFrom::Arrivals
        } else {
            StepTimeFrom::Timestamps
        };
        let samples = if logged.samples_per_s.is_some() {
            RateFrom::Printed
        } else {
            RateFrom::Derived
        };
        let tokens = if logged.tokens_per_s.is_some() && !logged.tokens_per_device {
            RateFrom::Printed
        } else if logged.tokens_per_gpu_s.is_some() || logged.tokens_per_device {
            RateFrom::PerGpu
        } else {
            RateFrom::Derived
        };
        Ways {
            step_time,
            samples,
            tokens,
        }
    }
}

impl Basis {
    /// Notes how the figures of `derived` came from a record logged as `ways` says.
    pub fn note(&mut self, ways: Ways, derived: &StepRecord) {
        if derived.step_time_ms.is_some() {
            self.step_time[ways.step_time as usize] += 1;
        }
        if derived.samples_per_s.is_some() {
            self.samples[ways.samples as usize] += 1;
        }
        if derived.tokens_per_s.is_some() {
            self.tokens[ways.tokens as usize] += 1;
        }
        if derived.data_time_ms.is_some() {
            self.data += 1;
        }
    }

    /// A data wait a framework's phase timers itemised for a step that logged none.
    pub fn note_timed_data(&mut self) {
        self.timed_data += 1;
    }

    /// Whether most step times are the gaps between lines' arrivals: they hold when steptop
    /// read each line as much as when the job wrote it.
    pub fn times_from_arrivals(&self) -> bool {
        most(&self.step_time).is_some_and(|i| STEP_TIME_NAMES[i] == StepTimeFrom::Arrivals)
    }

    /// The figures' basis in words, with the sizes `facts` gives; `mean` says what the mean
    /// step time shown rests on; `run_means_data` when a profiler report gave the run's mean
    /// data wait.
    pub fn describe(&self, facts: &Facts, mean: MeanFrom, run_means_data: bool) -> BasisOut {
        let step_time = match most(&self.step_time) {
            None => "none: no step time, rate, running total or timestamps in the log".into(),
            Some(i) => match STEP_TIME_NAMES[i] {
                StepTimeFrom::Printed => "printed with each step",
                StepTimeFrom::AverageShown => "the printed time, which averages every step so far",
                StepTimeFrom::RunningAverage => {
                    "the log's own running average; each step's from its change"
                }
                StepTimeFrom::RunningTotal => "a running total of training time, differenced",
                StepTimeFrom::Rate => "the printed rate (it/s), inverted",
                StepTimeFrom::SmoothedRate => {
                    "a progress bar's rate; each step's own time recovered from its moving average"
                }
                StepTimeFrom::BarMean => {
                    "a progress bar's rate, its mean since the bar began; differenced between redraws"
                }
                StepTimeFrom::SamplesAndBatch => "the printed samples/s and the batch size",
                StepTimeFrom::Timestamps => "the log's timestamps between step lines",
                StepTimeFrom::Arrivals => {
                    "the gaps between the step lines' arrivals (the log prints no time): a line read late makes a long step and the next a short one"
                }
            }
            .to_string(),
        };
        let step_time = match mean.words() {
            Some(mean) => format!("{step_time}; {mean}"),
            None => step_time,
        };
        let batch = batch_words(facts);
        let samples_per_s = match most(&self.samples) {
            Some(0) => "printed".to_string(),
            Some(_) => format!("steps per second times the batch: {batch}"),
            None if self.step_time.iter().sum::<u64>() == 0 => {
                "none: no samples/s printed, and no step time to work it out from".to_string()
            }
            None => "none: no samples/s printed, and no batch size stated".to_string(),
        };
        let tokens_per_s = match most(&self.tokens) {
            Some(0) => "printed".to_string(),
            Some(1) => match facts.world_size.or(facts.implied_world()) {
                Some(g) => format!("one GPU's printed rate times {g} GPUs"),
                None => "one GPU's printed rate (the GPUs are not stated)".to_string(),
            },
            Some(_) => match facts.tokens_per_step.or_else(|| facts.step_tokens()) {
                Some(t) => format!("steps per second times {t} tokens a step, as the log states"),
                None => "steps per second times the tokens of a step".to_string(),
            },
            None => "none: no tokens/s printed, and neither tokens per step nor a sequence length stated"
                .to_string(),
        };
        let data_share = if self.data > 0 {
            "the printed data time over the step time, of the steps that logged both".to_string()
        } else if self.timed_data > 0 {
            "the data wait the framework's phase timers itemise, over the times of the steps they itemise"
                .to_string()
        } else if run_means_data {
            "the profiler report's mean data wait over the mean step time".to_string()
        } else {
            "none: the log prints no data-loading time".to_string()
        };
        BasisOut {
            step_time,
            samples_per_s,
            tokens_per_s,
            data_share,
            batch,
        }
    }
}

const STEP_TIME_NAMES: [StepTimeFrom; STEP_TIME_WAYS] = [
    StepTimeFrom::Printed,
    StepTimeFrom::AverageShown,
    StepTimeFrom::RunningAverage,
    StepTimeFrom::RunningTotal,
    StepTimeFrom::Rate,
    StepTimeFrom::SmoothedRate,
    StepTimeFrom::BarMean,
    StepTimeFrom::SamplesAndBatch,
    StepTimeFrom::Timestamps,
    StepTimeFrom::Arrivals,
];

/// The index of the largest nonzero count.
fn most(counts: &[u64]) -> Option<usize> {
    counts
        .iter()
        .enumerate()
        .filter(|(_, n)| **n > 0)
        .max_by_key(|(i, n)| (**n, std::cmp::Reverse(*i)))
        .map(|(i, _)| i)
}

/// The global batch and how it was had: stated, or one device's batch times the processes
/// and the accumulation, saying what was assumed.
fn batch_words(f: &Facts) -> String {
    if let (Some(g), false) = (f.global_batch, f.global_batch_in_tokens()) {
        return format!("{g} samples a step, as the log states");
    }
    let Some(b) = f.device_batch_size() else {
        return "not stated".to_string();
    };
    let mut assumed = Vec::new();
    let gpus = match f.world_size.or(f.implied_world()) {
        Some(g) => g,
        None => {
            assumed.push("the GPUs");
            1
        }
    };
    let accum = match f.grad_accum {
        Some(a) => a,
        None => {
            assumed.push("gradient accumulation");
            1
        }
    };
    let total = u64::from(b) * u64::from(gpus) * u64::from(accum);
    let mut s = format!("{total} samples a step: {b} a device × {gpus} GPUs × {accum} accumulated");
    if !assumed.is_empty() {
        s.push_str(&format!(
            " ({} not stated: 1 assumed)",
            assumed.join(" and ")
        ));
    }
    s
}

/// What the run's mean step time rests on: where it came from (`coverage::Figures`), the
/// steps that covers, the lines that timed a step and the run's steps so far.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct MeanFrom {
    pub source: Option<Source>,
    pub covered: f64,
    pub timed: u64,
    pub steps: Option<u64>,
    /// No figure covers a step, and the log's running average, as last printed, is the mean.
    pub last_average: bool,
}

impl MeanFrom {
    fn words(&self) -> Option<String> {
        let of = |n: f64| match self.steps.filter(|s| *s as f64 >= n && *s > 0) {
            Some(all) => format!(
                "{} of the run's {all} steps ({})",
                n.round(),
                pct(n / all as f64)
            ),
            None => format!("{} steps", n.round()),
        };
        match self.source {
            Some(Source::Averages) => Some(format!(
                "the mean is the log's running averages, over {}",
                of(self.covered)
            )),
            Some(Source::Elapsed) => Some(format!(
                "the mean is the log's elapsed time, over {}",
                of(self.covered)
            )),
            // A log that times one line in many steps: say so. Whether a line's time is its
            // step's own or its interval's mean (Megatron's, mmcv's), the log does not say.
            Some(Source::PerStep) => match self.steps {
                Some(all) if all >= 2 * self.timed.max(1) => Some(format!(
                    "the mean weighs each of the {} lines that time a step by the steps since the line before: a line every {} steps",
                    self.timed,
                    (all as f64 / self.timed.max(1) as f64).round()
                )),
                _ => None,
            },
            _ => self
                .last_average
                .then(|| "the mean is the log's own running average, as last printed".to_string()),
        }
    }
}

/// The basis of each headline figure, in words.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct BasisOut {
    pub step_time: String,
    pub samples_per_s: String,
    pub tokens_per_s: String,
    pub data_share: String,
    /// The global batch used for derived rates.
    pub batch: String,
}

impl BasisOut {
    /// Each figure's name beside its basis, in the order every format prints them.
    pub fn rows(&self) -> [(&'static str, &str); 4] {
        [
            ("step time", &self.step_time),
            ("samples/s", &self.samples_per_s),
            ("tokens/s", &self.tokens_per_s),
            ("data share", &self.data_share),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Model, ModelConfig, Stamp};
    use crate::parse::record::Record;

    #[test]
    fn the_ways_are_those_of_the_record_as_logged_not_as_the_model_filled_it() {
        // A rate alone: the model works out the step time, the samples/s (from the batch
        // each line states) and nothing else; the basis must say so, though the record the
        // model keeps has all of them by then.
        let mut m = Model::new(ModelConfig::default());
        for step in 1..=5 {
            let rec = StepRecord {
                step: Some(step),
                iters_per_s: Some(4.0),
                batch_size: Some(32.0),
                ..StepRecord::default()
            };
            let stamp = Stamp {
                time: step as f64,
                real_time: true,
                ..Stamp::default()
            };
            m.apply(&stamp, Record::Step(Box::new(rec)));
        }
        let out = m.basis.describe(&m.facts, MeanFrom::default(), false);
        assert_eq!(out.step_time, "the printed rate (it/s), inverted");
        assert!(
            out.samples_per_s
                .starts_with("steps per second times the batch"),
            "{}",
            out.samples_per_s
        );
    }
}
