//! Megatron-LM and its forks: ` iteration       43/     100 | consumed samples: ... |`.

use crate::parse::record::{Format, Record, StepRecord};
use crate::parse::{kv, num, push_step, read_pairs};

/// A training-log line; the position is read by hand because its padding would split it.
pub fn megatron(p: &str, out: &mut Vec<Record>) -> Option<Format> {
    let at = p.find("iteration")?;
    let after = p[at + "iteration".len()..].trim_start_matches([' ', '=']);
    let (i, rest) = after.split_once('/')?;
    let mut rec = StepRecord {
        step: Some(num::integer(i)?),
        ..StepRecord::default()
    };
    let rest = rest.trim_start();
    rec.total = num::integer(rest);
    let rest = rest.find('|').map_or("", |bar| &rest[bar..]);
    let mut seen = kv::Collected::default();
    read_pairs(&p[..at], &mut rec, &mut seen);
    read_pairs(rest, &mut rec, &mut seen);
    push_step(rec, &seen, p, out);
    Some(Format::Megatron)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::frameworks::test_util::step;

    #[test]
    fn current_line() {
        let mut out = Vec::new();
        let line = "iteration       43/     100 | consumed samples:         5504 | elapsed time per iteration (ms): 5444.9 | learning rate: 8.600000E-06 | global batch size:   128 | lm loss: 1.825991E+00 | loss scale: 1.0 | grad norm: 1.426 | number of skipped iterations:   0 |";
        megatron(line, &mut out);
        let s = step(&out);
        assert_eq!(
            (s.step, s.total, s.step_time_ms),
            (Some(43), Some(100), Some(5444.9))
        );
        assert_eq!(
            (s.lr, s.batch_size, s.loss),
            (Some(8.6e-6), Some(128.0), Some(1.825991))
        );
        assert_eq!((s.loss_scale, s.grad_norm), (Some(1.0), Some(1.426)));
    }

    #[test]
    fn alcf_key_equals_value() {
        let mut out = Vec::new();
        let line = "iteration=       1/  635782 | consumed_samples=         768 | elapsed_time_per_iteration_ms=29570.0 | learning_rate=9.4372e-09 | lm loss=11.167250 | samples_per_second=25.972 |";
        megatron(line, &mut out);
        let s = step(&out);
        assert_eq!(
            (s.step, s.total, s.step_time_ms, s.loss),
            (Some(1), Some(635782), Some(29570.0), Some(11.16725))
        );
        assert_eq!(s.samples_per_s, Some(25.972));
    }
}
