//! torchtitan: `step: 14  loss:  3.24405  grad_norm:  0.8319  memory:  9.46GiB(64.99%)
//! tps: 7,282  tflops: 0.52  mfu: 0.17%` (older releases: `wps:` and no tflops).

use crate::parse::pairs_step;
use crate::parse::record::{Format, Record};

/// Every field is a plain pair; the memory unit and thousands separators are in the values.
pub fn torchtitan(p: &str, out: &mut Vec<Record>) -> Option<Format> {
    // The anchor: two-space separated `loss:` and a `memory:` figure; a plain `step: 5, loss: 1`
    // is a generic key-value line.
    if !(p.contains("  loss:") && p.contains("memory:")) {
        return None;
    }
    pairs_step(p, Format::Torchtitan, out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::frameworks::test_util::step;

    #[test]
    fn step_line() {
        let mut out = Vec::new();
        torchtitan(
            "step: 15  loss:  3.10680  grad_norm:  0.8587  memory:  9.50GiB(64.99%)  tps: 7,334  tflops: 0.53  mfu: 0.18%",
            &mut out,
        );
        let s = step(&out);
        assert_eq!(
            (s.step, s.loss, s.grad_norm),
            (Some(15), Some(3.1068), Some(0.8587))
        );
        assert_eq!(
            (s.memory_mb, s.tokens_per_s, s.mfu_pct),
            (Some(9.5 * 1024.0), Some(7334.0), Some(0.18))
        );
    }
}
