//! The meters of PyTorch's reference training loops and the many loops copied from them: the
//! ImageNet example's ProgressMeter (`Epoch: [2][ 300/5005]\tTime  0.412 ( 0.520)\tData
//! 0.011 ( 0.020)\tLoss 6.9e+00 (6.9e+00)`), the MetricLogger of DINO, DeiT and MAE
//! (`Epoch: [95/100]  [ 890/1562]  eta: 0:05:40  loss: 3.62 (3.66)  time: 0.50  data: 0.0002`),
//! and loops that print `Epoch:[1/1](10/39695), loss: 8.54, ...`. Each figure's first number
//! is the current one, the one in parentheses an average; the position counts within the
//! epoch.

use crate::parse::record::{Counter, Format, Record, StepRecord};
use crate::parse::{kv, num, push_step, read_pairs, vocabulary};

pub fn meters(p: &str, out: &mut Vec<Record>) -> Option<Format> {
    let rest = p.strip_prefix("Epoch:")?.trim_start();
    let (epoch_part, rest) = bracketed(rest, '[', ']')?;
    let rest = rest.trim_start();
    let (pos, rest) = match rest.as_bytes().first()? {
        b'[' => bracketed(rest, '[', ']')?,
        b'(' => bracketed(rest, '(', ')')?,
        _ => return None,
    };
    let (i, n) = pos.split_once('/')?;
    let (e, epochs) = match epoch_part.split_once('/') {
        Some((e, of)) => (num::number(e)?, num::number(of)),
        None => (num::number(epoch_part)?, None),
    };
    // Epochs count from 0 (`for epoch in range(...)`) unless the last one is printed as the
    // count (`Epoch:[1/1]`).
    let base = u8::from(epochs.is_some_and(|of| e >= of && e > 0.0));
    let mut rec = StepRecord {
        epoch: Some(e),
        step: Some(num::integer(i)?),
        total: num::integer(n),
        counter: Counter::InEpoch { base },
        ..StepRecord::default()
    };
    let mut seen = kv::Collected::default();
    if rest.contains('\t') {
        // ProgressMeter: `Time  0.412 ( 0.520)`, one meter a tab, its label and value apart.
        for meter in rest.split('\t') {
            if let Some((label, value)) = meter.trim().split_once(char::is_whitespace)
                && let Some(field) = vocabulary::lookup(label)
            {
                let value = value.trim_start();
                kv::apply(field, value, &mut rec, &mut seen);
                // `( 1.846)`: the meter's average since the epoch began (main.py makes its
                // AverageMeters anew each epoch), over batches 0 to this one.
                let average = || {
                    let (_, after) = value.split_once('(')?;
                    let (avg, _) = after.split_once(')')?;
                    num::number_unit(avg.trim()).map(|(v, unit, _)| (v, unit))
                };
                match field {
                    vocabulary::Field::StepTime(default) => {
                        rec.avg_step_ms =
                            average().and_then(|(v, unit)| num::to_ms(v, unit, default));
                    }
                    vocabulary::Field::DataTime(default) => {
                        rec.avg_data_ms =
                            average().and_then(|(v, unit)| num::to_ms(v, unit, default));
                    }
                    _ => {}
                }
            }
        }
        if rec.avg_step_ms.is_some() {
            rec.avg_in_epoch = true;
        }
    } else {
        read_pairs(rest.trim_start_matches(','), &mut rec, &mut seen);
    }
    if seen.fields == 0 && !seen.non_finite {
        return None;
    }
    push_step(rec, &seen, p, out);
    Some(Format::KeyValue)
}

/// A MetricLogger line with an empty header (`  [ 10/782]  eta: 0:05:46  time: 0.448  data:
/// 0.139`): a loop's progress like a bar's, told apart by the model from the run's steps.
pub fn headless_meter(p: &str, out: &mut Vec<Record>) -> Option<Format> {
    let (pos, rest) = bracketed(p, '[', ']')?;
    let rest = rest.trim_start();
    if !rest.starts_with("eta:") {
        return None;
    }
    let (i, n) = pos.split_once('/')?;
    let mut rec = StepRecord {
        step: Some(num::integer(i)?),
        total: num::integer(n),
        counter: Counter::Bar,
        ..StepRecord::default()
    };
    let mut seen = kv::Collected::default();
    read_pairs(rest, &mut rec, &mut seen);
    push_step(rec, &seen, p, out);
    Some(Format::KeyValue)
}

/// `[ 890/1562]rest` -> (` 890/1562`, `rest`).
fn bracketed(s: &str, open: char, close: char) -> Option<(&str, &str)> {
    let inner = s.strip_prefix(open)?;
    let end = inner.find(close)?;
    Some((inner[..end].trim(), &inner[end + 1..]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::frameworks::test_util::step;

    #[test]
    fn progress_meter() {
        let mut out = Vec::new();
        meters(
            "Epoch: [2][ 300/5005]\tTime  0.412 ( 0.520)\tData  0.011 ( 0.020)\tLoss 6.9077e+00 (6.9077e+00)\tAcc@1   0.00 (  0.00)",
            &mut out,
        );
        let s = step(&out);
        assert_eq!(
            (s.epoch, s.step, s.total, s.counter),
            (
                Some(2.0),
                Some(300),
                Some(5005),
                Counter::InEpoch { base: 0 }
            )
        );
        assert_eq!(
            (s.step_time_ms, s.data_time_ms, s.loss),
            (Some(412.0), Some(11.0), Some(6.9077))
        );
        // And the epoch's running averages, over batches 0 to 300.
        assert_eq!(
            (s.avg_step_ms, s.avg_data_ms, s.avg_in_epoch),
            (Some(520.0), Some(20.0), true)
        );
    }

    #[test]
    fn metric_logger_and_a_counted_epoch() {
        let mut out = Vec::new();
        meters(
            "Epoch: [95/100]  [ 890/1562]  eta: 0:05:40  loss: 3.616726 (3.664622)  lr: 0.000002 (0.000002)  time: 0.502007  data: 0.000160  max mem: 11664",
            &mut out,
        );
        let s = step(&out);
        assert_eq!(
            (s.epoch, s.step, s.total, s.counter),
            (
                Some(95.0),
                Some(890),
                Some(1562),
                Counter::InEpoch { base: 0 }
            )
        );
        assert_eq!((s.loss, s.step_time_ms), (Some(3.616726), Some(502.007)));
        out.clear();
        meters(
            "Epoch:[1/1](10/39695), loss: 8.5371, logits_loss: 8.5371, lr: 0.00050000, epoch_time: 130.0min",
            &mut out,
        );
        let s = step(&out);
        assert_eq!(
            (s.step, s.counter, s.loss),
            (Some(10), Counter::InEpoch { base: 1 }, Some(8.5371))
        );
    }
}
