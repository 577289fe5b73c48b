//! What a printed time means, told from the numbers when the words cannot tell it: `time: 3.79`
//! may be one step's time, the time of the hundred steps since the last print (Knover's, with
//! `speed: 26.4 steps/s` beside it), or the time since training began (`Time: 6.99 sec` that
//! grows line after line). The log's timestamps, a printed step rate and the figure's own growth
//! decide, over a rank's first lines; once decided, each line's figure is made what the model
//! reads: a step's time, or a time so far. Pure: no I/O, the same lines give the same verdict.

use crate::parse::record::StepRecord;

/// Lines of one kind of evidence that decide: two for an interval (its first lines, read as
/// each step's meanwhile, would weigh a hundred steps each), three otherwise.
const VOTES: u8 = 3;
const INTERVAL_VOTES: u8 = 2;
/// Lines judged before a rank's printed time is taken as each step's without more evidence.
const JUDGED: u8 = 12;

#[derive(Clone, Copy, Debug, Default, PartialEq)]
enum Verdict {
    /// Not decided yet: the figure is read as each step's meanwhile.
    #[default]
    Open,
    /// Each step's own time, or a mean over the steps since the last print.
    PerStep,
    /// The time of all the steps since the last printed line.
    Interval,
    /// The time since training began.
    Elapsed,
}

/// A rank's printed time and what it has been found to mean.
#[derive(Clone, Copy, Debug, Default)]
pub struct TimeMeaning {
    verdict: Verdict,
    /// The last line judged: its step, its time (and whether that is a real timestamp) and
    /// its printed time in ms.
    last: Option<(u64, f64, bool, f64)>,
    /// The first printed time, for growth.
    first_ms: Option<f64>,
    /// Lines in a row whose printed time grew.
    growing: u8,
    interval: u8,
    per_step: u8,
    elapsed: u8,
    judged: u8,
}

impl TimeMeaning {
    /// Reads `d`'s printed step time (and data wait) as what it means, judging from the line
    /// logged at `time` (`real`: a timestamp or an arrival, not steptop's synthetic clock).
    pub fn read(&mut self, d: &mut StepRecord, time: f64, real: bool) {
        let (Some(step), Some(ms)) = (d.step, d.step_time_ms) else {
            return;
        };
        let since = self.last.filter(|l| step > l.0);
        if self.verdict == Verdict::Open {
            if let Some(last) = since {
                self.judge(step - last.0, ms, d.iters_per_s, (time, real), last);
            }
            self.first_ms.get_or_insert(ms);
        }
        self.last = Some((step, time, real, ms));
        match self.verdict {
            Verdict::Interval => {
                // The first line of a run stands for itself: it has no line before it.
                if let Some(last) = since {
                    let steps = (step - last.0) as f64;
                    d.step_time_ms = Some(ms / steps);
                    d.data_time_ms = d.data_time_ms.map(|data| data / steps);
                }
            }
            Verdict::Elapsed => {
                d.elapsed_s = d.elapsed_s.or(Some(ms / 1000.0));
                d.step_time_ms = None;
            }
            Verdict::Open | Verdict::PerStep => {}
        }
    }

    fn judge(
        &mut self,
        steps: u64,
        ms: f64,
        its: Option<f64>,
        (time, real): (f64, bool),
        last: (u64, f64, bool, f64),
    ) {
        let (_, last_time, last_real, last_ms) = last;
        let steps_f = steps as f64;
        self.judged += 1;
        self.growing = if ms > last_ms { self.growing + 1 } else { 0 };
        // The timestamps: a step's time times the steps between two lines is the time
        // between them; an interval's is that time itself; a time so far is many times it.
        let wall_ms = (time - last_time) * 1000.0;
        if real && last_real && wall_ms > 0.0 {
            let q = ms / wall_ms;
            if steps >= 2 && (0.7..=1.5).contains(&q) {
                self.interval += 1;
            } else if (0.5..=1.5).contains(&(q * steps_f)) {
                self.per_step += 1;
            } else if q > 2.5 && ms > last_ms {
                self.elapsed += 1;
            }
        } else if let Some(its) = its.filter(|r| *r > 0.0) {
            // A printed step rate: a step's time is its inverse; an interval's, the steps
            // between the lines over it.
            let x = ms / 1000.0 * its;
            if steps >= 2 && (0.7 * steps_f..=1.5 * steps_f).contains(&x) {
                self.interval += 1;
            } else if (0.7..=1.5).contains(&x) {
                self.per_step += 1;
            }
        }
        // Without a clock to compare with: a time that grows at every line, to several times
        // where it began, is a time so far (a step's time does not triple steadily).
        if self.growing >= 5 && self.first_ms.is_some_and(|f| ms >= 3.0 * f) {
            self.elapsed = VOTES;
        }
        self.verdict = if self.elapsed >= VOTES {
            Verdict::Elapsed
        } else if self.interval >= INTERVAL_VOTES {
            Verdict::Interval
        } else if self.per_step >= VOTES || self.judged >= JUDGED {
            Verdict::PerStep
        } else {
            Verdict::Open
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(step: u64, ms: f64) -> StepRecord {
        StepRecord {
            step: Some(step),
            step_time_ms: Some(ms),
            ..StepRecord::default()
        }
    }

    /// Reads lines of (step, printed ms, timestamp s) and gives the step times read.
    fn read(
        lines: &[(u64, f64, Option<f64>)],
        its: Option<f64>,
    ) -> Vec<(Option<f64>, Option<f64>)> {
        let mut m = TimeMeaning::default();
        let mut synthetic = 0.0;
        lines
            .iter()
            .map(|&(step, ms, stamp)| {
                let mut d = line(step, ms);
                d.iters_per_s = its;
                synthetic += ms / 1000.0;
                m.read(&mut d, stamp.unwrap_or(synthetic), stamp.is_some());
                (d.step_time_ms, d.elapsed_s)
            })
            .collect()
    }

    /// Knover's `time: 3.79` every hundred steps, 3.8 s apart by the timestamps: the time of
    /// the hundred steps, 37.9 ms each.
    #[test]
    fn a_time_as_long_as_the_gap_between_lines_is_the_intervals() {
        let lines: Vec<_> = (1..=8)
            .map(|i| (i * 100, 3791.0, Some(1000.0 + 3.8 * i as f64)))
            .collect();
        let got = read(&lines, None);
        let (ms, _) = got[7];
        assert!((ms.unwrap() - 37.91).abs() < 1e-9, "{got:?}");
    }

    /// The same interval told by a printed rate instead of timestamps: `speed: 26.378
    /// steps/s` beside `time: 3.791` for a hundred steps.
    #[test]
    fn a_time_that_a_printed_rate_says_is_many_steps_is_the_intervals() {
        let lines: Vec<_> = (1..=8).map(|i| (i * 100, 3791.0, None)).collect();
        let got = read(&lines, Some(26.378));
        assert!((got[7].0.unwrap() - 37.91).abs() < 1e-9, "{got:?}");
    }

    /// A step's time on lines a hundred steps apart, 100 times it apart by the timestamps:
    /// each step's, as printed.
    #[test]
    fn a_steps_time_stays_a_steps_time() {
        let lines: Vec<_> = (1..=20)
            .map(|i| {
                (
                    i * 100,
                    350.0 + (i % 3) as f64,
                    Some(1000.0 + 35.0 * i as f64),
                )
            })
            .collect();
        let got = read(&lines, None);
        assert!(
            got.iter().all(|(ms, e)| ms.is_some() && e.is_none()),
            "{got:?}"
        );
        assert_eq!(got[19].0, Some(352.0));
    }

    /// Fast-SCNN's `Time: 6.996 sec` grows by 3.5 s every ten steps without timestamps: a time
    /// since training began, not a step's.
    #[test]
    fn a_time_that_grows_at_every_line_is_the_time_so_far() {
        let lines: Vec<_> = (1..=12)
            .map(|i| (i * 10, 3500.0 * i as f64 + (i % 2) as f64, None))
            .collect();
        let got = read(&lines, None);
        let (ms, elapsed) = got[11];
        assert_eq!(ms, None);
        assert_eq!(elapsed, Some(42.0));
    }
}
