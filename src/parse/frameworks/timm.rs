//! timm's train.py: `Train: 0 [  50/6672 (  1%)]  Loss: 6.96 (6.96)  Time: 0.734s,  261.42/s
//! (0.742s,  258.85/s)  LR: 1.000e-04  Data: 0.010 (0.024)`. The first value of each pair is the
//! current one, the bracketed one timm's running average since the epoch began (its meters
//! restart each epoch): both are taken, the averages covering the epoch's batches so far.

use crate::parse::record::{Counter, Format, Record, StepRecord};
use crate::parse::{kv, num, push_step, vocabulary};

/// The fields are found by their labels: the generic scanner would mix current and average.
pub fn timm(p: &str, out: &mut Vec<Record>) -> Option<Format> {
    let body = p.strip_prefix("Train: ")?;
    let (epoch, rest) = body.split_once(" [")?;
    let (pos, rest) = rest.split_once(" (")?;
    let (i, n) = pos.split_once('/')?;
    let mut rec = StepRecord {
        epoch: Some(num::number(epoch)?),
        step: Some(num::integer(i)?),
        total: num::integer(n),
        // timm counts epochs from 0 and batches within the epoch.
        counter: Counter::InEpoch { base: 0 },
        ..StepRecord::default()
    };
    let mut seen = kv::Collected::default();
    let after = |label: &str| {
        rest.find(label)
            .map(|at| rest[at + label.len()..].trim_start())
    };
    if let Some(v) = after("Loss:") {
        kv::apply(vocabulary::Field::Loss(4), v, &mut rec, &mut seen);
    }
    if let Some(v) = after("Time:") {
        kv::apply(
            vocabulary::Field::StepTime(num::Unit::S),
            v,
            &mut rec,
            &mut seen,
        );
        if let Some((_, rate)) = v.split_once(',') {
            rec.samples_per_s = num::number(rate);
        }
        // `(0.742s,  258.85/s)`: the epoch's averages.
        if let Some((time, rate)) = bracketed(v).and_then(|b| b.split_once(',')) {
            rec.avg_step_ms = num::number(time.trim().trim_end_matches('s')).map(|s| s * 1000.0);
            rec.avg_samples_per_s = num::number(rate.trim().trim_end_matches("/s"));
        }
    }
    if let Some(v) = after("LR:") {
        kv::apply(vocabulary::Field::Lr, v, &mut rec, &mut seen);
    }
    if let Some(v) = after("Data:") {
        kv::apply(
            vocabulary::Field::DataTime(num::Unit::S),
            v,
            &mut rec,
            &mut seen,
        );
        rec.avg_data_ms = bracketed(v).and_then(num::number).map(|s| s * 1000.0);
    }
    if rec.avg_step_ms.is_some() {
        // The epoch's averages: the model counts the batches they cover from its position.
        rec.avg_in_epoch = true;
    }
    push_step(rec, &seen, p, out);
    Some(Format::Timm)
}

/// The text inside the first parentheses of `v`, before the next label.
fn bracketed(v: &str) -> Option<&str> {
    let open = v.find('(')?;
    let close = open + v[open..].find(')')?;
    Some(v[open + 1..close].trim())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::frameworks::test_util::step;

    #[test]
    fn current_values_not_averages() {
        let mut out = Vec::new();
        timm(
            "Train: 2 [ 100/500 ( 20%)]  Loss: 3.25 (3.5)  Time: 0.500s,  256.00/s  (0.550s,  232.73/s)  LR: 2.000e-04  Data: 0.020 (0.030)",
            &mut out,
        );
        let s = step(&out);
        assert_eq!(
            (s.epoch, s.step, s.total, s.loss),
            (Some(2.0), Some(100), Some(500), Some(3.25))
        );
        assert_eq!(
            (s.step_time_ms, s.samples_per_s, s.lr, s.data_time_ms),
            (Some(500.0), Some(256.0), Some(2e-4), Some(20.0))
        );
        // And the epoch's running averages, over batches 0 to 100.
        assert_eq!(
            (
                s.avg_step_ms,
                s.avg_samples_per_s,
                s.avg_data_ms,
                s.avg_in_epoch
            ),
            (Some(550.0), Some(232.73), Some(30.0), true)
        );
    }
}
