//! detectron2's CommonMetricPrinter: ` eta: 5:56:07  iter: 339  total_loss: 0.95 ... time: 0.2416
//! last_time: 0.2381  data_time: 0.0091 ...  lr: 0.0067932  max_mem: 4212M`.

use crate::parse::pairs_step;
use crate::parse::record::{Format, Record};

/// `iter` is 0-based and kept as logged. `time` is the average over every iteration timed
/// so far (the printer's `global_avg`): the step time shown, and the running average whose
/// last value is the run's mean; `data_time` is the last 20 iterations' average.
pub fn detectron2(p: &str, out: &mut Vec<Record>) -> Option<Format> {
    pairs_step(
        p,
        Format::Detectron2,
        |rec| rec.avg_step_ms = rec.step_time_ms,
        out,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::frameworks::test_util::step;

    #[test]
    fn current_format_with_days_and_last_time() {
        let mut out = Vec::new();
        let line = "eta: 2 days, 1:00:00  iter: 359  total_loss: 5.25  loss_ce: 0.5    time: 0.7100  last_time: 0.7000  data_time: 0.0050  last_data_time: 0.0040   lr: 0.0001  max_mem: 13000M";
        detectron2(line, &mut out);
        let s = step(&out);
        assert_eq!(
            (s.step, s.loss, s.step_time_ms, s.data_time_ms),
            (Some(359), Some(5.25), Some(710.0), Some(5.0))
        );
        assert_eq!(s.avg_step_ms, Some(710.0));
        assert_eq!(
            (s.eta_s, s.memory_mb, s.lr),
            (Some(2.0 * 86_400.0 + 3600.0), Some(13000.0), Some(0.0001))
        );
    }
}
