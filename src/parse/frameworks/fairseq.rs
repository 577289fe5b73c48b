//! fairseq's simple progress bar (`epoch 001:    100 / 2952087 loss=16.348, ...`), its epoch
//! summaries (`epoch 050 | loss 3.942 | ...`), and accelerate's per-epoch eval prints
//! (`epoch 0: {'accuracy': ...}`).

use crate::parse::record::{EventKind, Format, Record, StepRecord};
use crate::parse::trace::{self, Kind, Val};
use crate::parse::{eval, kv, num, push_event, push_step, read_pairs};

/// Step lines carry the position in the epoch; `num_updates` is not taken for the step.
pub fn fairseq(p: &str, logger: Option<&str>, out: &mut Vec<Record>) -> Option<Format> {
    let body = p.trim_start_matches(['|', ' ']).strip_prefix("epoch ")?;
    let digits = body.bytes().take_while(u8::is_ascii_digit).count();
    if digits != 3 {
        return None;
    }
    let epoch: f64 = body[..digits].parse().ok()?;
    trace::note(&body[..digits], Kind::Float, Some(Val::F(epoch)));
    let rest = &body[digits..];
    if let Some(rest) = rest.strip_prefix(':') {
        let (i, rest) = rest.split_once('/')?;
        let mut rec = StepRecord::default();
        let step = num::integer(i)?;
        let rest = rest.trim_start();
        let total_len = rest.bytes().take_while(u8::is_ascii_digit).count();
        let mut seen = kv::Collected::default();
        read_pairs(&rest[total_len..], &mut rec, &mut seen);
        // `num_updates=3880` (read as a step): the run's global step; the line's own is the
        // position in the epoch.
        rec.updates = rec.step;
        rec.epoch = Some(epoch);
        rec.step = Some(step);
        rec.total = num::integer(rest);
        push_step(rec, &seen, p, out);
        return Some(Format::Fairseq);
    }
    if rest.starts_with(" |") {
        if logger == Some("valid") || rest.contains("valid") {
            return eval(p, Format::Fairseq, out);
        }
        push_event(EventKind::EpochEnd, p, out);
        return Some(Format::Fairseq);
    }
    None
}

/// accelerate examples print eval metrics per epoch: an eval event.
pub fn accelerate(p: &str, out: &mut Vec<Record>) -> Option<Format> {
    let body = p.strip_prefix("epoch ")?;
    let (n, rest) = body.split_once(": ")?;
    n.parse::<u32>().ok()?;
    if rest.starts_with('{') || rest.starts_with("perplexity") || rest.starts_with("eval") {
        return eval(p, Format::Accelerate, out);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::frameworks::test_util::step;

    #[test]
    fn train_inner_line() {
        let mut out = Vec::new();
        let line = "epoch 002:    300 / 5000 loss=9.5, ppl=700.1, wps=5000.5, ups=1.25, wpb=1800, bsz=16, num_updates=5300, lr=2e-05, gnorm=3.5, loss_scale=64, train_wall=30, wall=900";
        assert_eq!(
            fairseq(line, Some("train_inner"), &mut out),
            Some(Format::Fairseq)
        );
        let s = step(&out);
        assert_eq!(
            (s.epoch, s.step, s.total),
            (Some(2.0), Some(300), Some(5000))
        );
        assert_eq!(
            (s.tokens_per_s, s.iters_per_s, s.batch_size),
            (Some(5000.5), Some(1.25), Some(16.0))
        );
        assert_eq!(
            (s.grad_norm, s.loss_scale, s.lr),
            (Some(3.5), Some(64.0), Some(2e-5))
        );
    }

    #[test]
    fn summaries_are_not_steps() {
        let mut out = Vec::new();
        fairseq(
            "epoch 050 | loss 3.9 | nll_loss 2.5 | wps 34000",
            Some("train"),
            &mut out,
        );
        assert!(matches!(
            out[0],
            Record::Event {
                kind: EventKind::EpochEnd,
                ..
            }
        ));
    }
}
