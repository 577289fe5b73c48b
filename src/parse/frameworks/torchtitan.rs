//! torchtitan: `step: 14  loss:  3.24405  grad_norm:  0.8319  memory:  9.46GiB(64.99%)
//! tps: 7,282  tflops: 0.52  mfu: 0.17%` (older releases: `wps:` and no tflops), and the
//! device mesh it builds (`pp=2, dp_replicate=1, dp_shard=2, cp=1, tp=2, ...`): its GPUs.

use crate::parse::record::{ConfigFact, Format, Record};
use crate::parse::{num, pairs_step};

/// Every field is a plain pair; the memory unit and thousands separators are in the values.
/// `tps` (and `wps`) count one device's tokens per second.
pub fn torchtitan(p: &str, out: &mut Vec<Record>) -> Option<Format> {
    // The anchor: two-space separated `loss:` and a `memory:` figure; a plain `step: 5, loss: 1`
    // is a generic key-value line.
    if !(p.contains("  loss:") && p.contains("memory:")) {
        return None;
    }
    pairs_step(
        p,
        Format::Torchtitan,
        |rec| rec.tokens_per_device = true,
        out,
    )
}

/// `Building device mesh with parallelism: pp=2, dp_replicate=1, dp_shard=2, cp=1, tp=2,
/// ep=1, etp=1`: the GPUs are the product of the mesh's dimensions (the expert dimensions
/// split the others).
pub fn mesh(p: &str, out: &mut Vec<Record>) -> Option<Format> {
    let dims = p.strip_prefix("Building device mesh with parallelism:")?;
    let mut gpus: u32 = 1;
    for pair in dims.split(',') {
        let (k, v) = pair.split_once('=')?;
        if matches!(k.trim(), "pp" | "dp_replicate" | "dp_shard" | "cp" | "tp") {
            gpus = gpus.checked_mul(u32::try_from(num::integer(v)?).ok()?)?;
        }
    }
    out.push(Record::Config(ConfigFact::WorldSize(gpus)));
    Some(Format::Torchtitan)
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
        // torchtitan's tps is one device's.
        assert!(s.tokens_per_device);
    }

    #[test]
    fn the_mesh_gives_the_gpus() {
        let mut out = Vec::new();
        mesh(
            "Building device mesh with parallelism: pp=2, dp_replicate=1, dp_shard=2, cp=1, tp=2, ep=1, etp=1",
            &mut out,
        );
        assert_eq!(out, vec![Record::Config(ConfigFact::WorldSize(8))]);
    }
}
