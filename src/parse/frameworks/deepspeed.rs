//! DeepSpeed: the engine's `step=40, skipped=2, lr=[5e-05]`, the ThroughputTimer's
//! `epoch=0/micro_step=34/global_step=34, ...` (and its older `0/40, SamplesPerSec=...`), and the
//! pipeline engine's `steps: 200 loss: 5.55 iter time (s): 0.936 samples/sec: 136.7`.

use crate::parse::record::{Counter, Format, Record, StepRecord};
use crate::parse::{kv, num, push_step, read_pairs};

/// Any of the three step-line shapes.
pub fn deepspeed(p: &str, out: &mut Vec<Record>) -> Option<Format> {
    let mut rec = StepRecord {
        counter: Counter::Engine,
        ..StepRecord::default()
    };
    let mut seen = kv::Collected::default();
    if p.starts_with("steps: ") {
        // The pipeline engine's line is the training loop's own.
        rec.counter = Counter::Global;
        read_pairs(p, &mut rec, &mut seen);
        rec.step?;
    } else if p.starts_with("step=") && p.contains(", skipped=") {
        read_pairs(p, &mut rec, &mut seen);
        rec.step?;
    } else if let Some(rest) = p.strip_prefix("epoch=") {
        let (epoch, rest) = rest.split_once('/')?;
        rec.epoch = Some(num::number(epoch)?);
        let at = rest.find("global_step=")?;
        rec.step = Some(num::integer(&rest[at + "global_step=".len()..])?);
        read_pairs(&rest[rest.find(',')?..], &mut rec, &mut seen);
    } else {
        let (head, rest) = p.split_once(", ")?;
        if !rest.contains("SamplesPerSec=") {
            return None;
        }
        let (epoch, step) = head.split_once('/')?;
        rec.epoch = Some(num::number(epoch)?);
        rec.step = Some(num::integer(step)?);
        read_pairs(rest, &mut rec, &mut seen);
    }
    push_step(rec, &seen, p, out);
    Some(Format::DeepSpeed)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::frameworks::test_util::step;

    #[test]
    fn the_three_shapes() {
        let mut out = Vec::new();
        deepspeed(
            "step=40, skipped=2, lr=[5e-05], mom=[[0.9, 0.999]]",
            &mut out,
        );
        assert_eq!((step(&out).step, step(&out).lr), (Some(40), Some(5e-5)));
        deepspeed(
            "epoch=0/micro_step=34/global_step=34, RunningAvgSamplesPerSec=7.8, CurrSamplesPerSec=8.5, MemAllocated=59.65GB, MaxMemAllocated=63.5GB",
            &mut out,
        );
        let s = step(&out);
        assert_eq!(
            (s.epoch, s.step, s.samples_per_s, s.memory_mb),
            (Some(0.0), Some(34), Some(8.5), Some(63.5 * 1024.0))
        );
        deepspeed("0/40, SamplesPerSec=83.25, MemAllocated=0.26GB", &mut out);
        assert_eq!(step(&out).samples_per_s, Some(83.25));
        deepspeed(
            "steps: 200 loss: 5.5508 lm loss: 5.5103 iter time (s): 0.936 samples/sec: 136.706",
            &mut out,
        );
        let s = step(&out);
        assert_eq!(
            (s.step, s.loss, s.step_time_ms, s.samples_per_s),
            (Some(200), Some(5.5508), Some(936.0), Some(136.706))
        );
    }
}
