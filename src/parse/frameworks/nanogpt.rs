//! nanoGPT: `iter 10: loss 3.1462, time 13.86ms, mfu 26.88%`.

use crate::parse::record::{Format, Record, StepRecord};
use crate::parse::{kv, num, push_step, read_pairs};

/// `mfu -100.00%` is nanoGPT's "not measured yet" and is dropped by the field rules.
pub fn nanogpt(p: &str, out: &mut Vec<Record>) -> Option<Format> {
    let (head, rest) = p.strip_prefix("iter ")?.split_once(':')?;
    // `iter 0 || Loss: 19.48 ||` is another loop's: nanoGPT's number is all before the colon.
    if !head.trim().bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut rec = StepRecord {
        step: Some(num::integer(head)?),
        ..StepRecord::default()
    };
    let mut seen = kv::Collected::default();
    read_pairs(rest, &mut rec, &mut seen);
    push_step(rec, &seen, p, out);
    Some(Format::NanoGpt)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::frameworks::test_util::step;
    use crate::parse::record::EventKind;

    #[test]
    fn iter_line_and_sentinels() {
        let mut out = Vec::new();
        nanogpt(
            "iter 0: loss 4.2654, time 13500.54ms, mfu -100.00%",
            &mut out,
        );
        let s = step(&out);
        assert_eq!(
            (s.step, s.loss, s.step_time_ms, s.mfu_pct),
            (Some(0), Some(4.2654), Some(13500.54), None)
        );
        out.clear();
        nanogpt("iter 3010: loss nan, time 1019.95ms, mfu 14.12%", &mut out);
        // The step first, then its event: the NaN belongs to step 3010.
        assert!(matches!(out[0], Record::Step(_)));
        assert!(matches!(
            out[1],
            Record::Event {
                kind: EventKind::NonFinite,
                ..
            }
        ));
        assert_eq!((step(&out).loss, step(&out).mfu_pct), (None, Some(14.12)));
    }
}
