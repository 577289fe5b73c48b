//! Step records printed over several lines: a header that names the step, then one indented
//! `key=value` line per figure (OLMo's trainer):
//!
//! ```text
//! 2025-12-26 19:18:25.111 host:0 olmo.train:990 INFO [step=20/1000,epoch=0]
//!     train/CrossEntropyLoss=8.581
//!     throughput/device/tokens_per_second=56,505
//! ```
//!
//! (the header's fields are separated by tabs).
//!
//! The header is a step record of its own; each indented line while the record is open is
//! a step record of the same step with the figure it names.

use crate::parse::record::{Format, Record, StepRecord};
use crate::parse::{Context, kv, num, push_step, read_pairs};

/// `[step=20/1000,epoch=0]`: opens the step's record.
pub fn header(p: &str, ctx: &mut Context, out: &mut Vec<Record>) -> Option<Format> {
    let inner = p.strip_prefix("[step=")?.strip_suffix(']')?;
    let (pos, rest) = inner.split_once(',').unwrap_or((inner, ""));
    let (n, total) = match pos.split_once('/') {
        Some((n, t)) => (num::integer(n)?, num::integer(t)),
        None => (num::integer(pos)?, None),
    };
    let mut rec = StepRecord {
        step: Some(n),
        total,
        ..StepRecord::default()
    };
    if let Some(e) = rest.strip_prefix("epoch=") {
        rec.epoch = num::number(e);
    }
    ctx.entry_step = Some(n);
    push_step(rec, &kv::Collected::default(), p, out);
    Some(Format::KeyValue)
}

/// An indented `key=value` or `key: value` line of the open record: a figure of its step.
/// A line that names a step of its own is not one.
pub fn figure(p: &str, ctx: &Context, out: &mut Vec<Record>) -> Option<Format> {
    let step = ctx.entry_step?;
    if !p.contains(['=', ':']) {
        return None;
    }
    let mut rec = StepRecord::default();
    let mut seen = kv::Collected::default();
    read_pairs(p, &mut rec, &mut seen);
    (rec.step.is_none() && (seen.fields > 0 || seen.non_finite)).then_some(())?;
    rec.step = Some(step);
    push_step(rec, &seen, p, out);
    Some(Format::KeyValue)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::dispatch;
    use crate::parse::frameworks::test_util::step;

    #[test]
    fn a_header_then_its_figures() {
        let mut ctx = Context::default();
        let mut out = Vec::new();
        dispatch("[step=20/1000,epoch=0]", None, &mut ctx, &mut out);
        assert_eq!((step(&out).step, step(&out).total), (Some(20), Some(1000)));
        out.clear();
        dispatch("    train/CrossEntropyLoss=8.581", None, &mut ctx, &mut out);
        assert_eq!((step(&out).step, step(&out).loss), (Some(20), Some(8.581)));
        out.clear();
        dispatch(
            "    throughput/device/tokens_per_second=56,505",
            None,
            &mut ctx,
            &mut out,
        );
        assert_eq!(step(&out).tokens_per_gpu_s, Some(56505.0));
        out.clear();
        // A line that is not indented closes the record.
        dispatch("Saving checkpoint", None, &mut ctx, &mut out);
        dispatch("    x=1", None, &mut ctx, &mut out);
        assert!(!out.iter().any(|r| matches!(r, Record::Step(_))));
    }
}
