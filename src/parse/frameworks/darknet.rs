//! Darknet's training line: `6001: 5.444418, 5.444418 avg, 0.000100 rate, 10.471825 seconds,
//! 6001 images`. Its figures are named by position and by the word after each value, which no
//! key table can say: the iteration, that batch's loss, the loss's running average, the
//! learning rate, the batch's seconds and the images seen so far.

use crate::parse::record::{Format, Record, StepRecord};
use crate::parse::{kv, num, push_step, vocabulary::Field};

pub fn darknet(p: &str, out: &mut Vec<Record>) -> Option<Format> {
    let (step, rest) = p.split_once(": ")?;
    let step = num::integer(step).filter(|_| step.bytes().all(|b| b.is_ascii_digit()))?;
    let mut parts = rest.split(", ");
    let loss = parts.next()?;
    let avg = parts.next()?;
    if !avg.ends_with(" avg") && !avg.ends_with(" avg loss") {
        return None;
    }
    let mut rec = StepRecord {
        step: Some(step),
        ..StepRecord::default()
    };
    let mut seen = kv::Collected::default();
    kv::apply(Field::Loss(4), loss, &mut rec, &mut seen);
    for part in parts {
        let Some((value, word)) = part.trim().split_once(' ') else {
            continue;
        };
        match word {
            "rate" => kv::apply(Field::Lr, value, &mut rec, &mut seen),
            "seconds" => kv::apply(Field::StepTime(num::Unit::S), value, &mut rec, &mut seen),
            _ => false,
        };
    }
    push_step(rec, &seen, p, out);
    Some(Format::KeyValue)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::frameworks::test_util::step;

    #[test]
    fn the_iteration_loss_rate_and_seconds() {
        let mut out = Vec::new();
        darknet(
            "1: 4113.835938, 4113.835938 avg loss, 0.000000 rate, 6.307000 seconds, 64 images, -1.000000 hours left",
            &mut out,
        );
        let s = step(&out);
        assert_eq!((s.step, s.loss), (Some(1), Some(4113.835938)));
        assert_eq!((s.lr, s.step_time_ms), (Some(0.0), Some(6307.0)));
        let mut out = Vec::new();
        assert!(darknet("Region Avg IOU: 0.2, Class: 0.5, Obj: 0.5", &mut out).is_none());
    }
}
