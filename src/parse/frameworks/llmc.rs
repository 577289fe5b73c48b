//! The step lines of Karpathy's LLM trainers that are not nanoGPT's `iter` lines:
//! - build-nanogpt: `step  10 | loss: 9.1 | lr 6.0e-05 | norm: 2.3 | dt: 812.07ms | tok/sec: 645032.25`
//! - llm.c's console: `step 1/74 | loss 11.01 (+nanz)| norm 15.4 (+nanz)| lr 8.57e-07 |
//!   4621.47 ms | 29.2% bf16 MFU | 113446 tok/s` (older: `train loss` and `(1334.52 ms | 392 tok/s)`)
//! - llm.c's log file (`-o`): `s:7512 trl:3.4445 lr:0.000006 norm:0.27`, and `s:7500 tel:3.47`
//!   for the validation loss.
//!
//! A bare `812.07 ms` or `dt:` is the step's time only here: elsewhere a `dt` can be anything.

use crate::parse::num::{self, Unit};
use crate::parse::record::{Format, Record, StepRecord};
use crate::parse::{eval, kv, push_step, read_pairs, vocabulary};

/// `step N[/T] | ...` with the figures in `|`-separated fields.
pub fn llm_step(p: &str, out: &mut Vec<Record>) -> Option<Format> {
    // `step 950/8880 | loss=0.12 | ...` is the generic key=value family's.
    if p.contains('=') {
        return None;
    }
    let body = p.strip_prefix("step")?;
    let (head, rest) = body.split_once('|')?;
    let (n, total) = match head.trim().split_once('/') {
        Some((n, t)) => (num::integer(n)?, num::integer(t)),
        None => (num::integer(head)?, None),
    };
    let mut rec = StepRecord {
        step: Some(n),
        total,
        ..StepRecord::default()
    };
    let mut seen = kv::Collected::default();
    for field in rest.split(['|', '(', ')']) {
        let f = field.trim();
        if let Some(dt) = f.strip_prefix("dt:") {
            kv::apply(
                vocabulary::Field::StepTime(Unit::S),
                dt,
                &mut rec,
                &mut seen,
            );
        } else if let Some((v, unit)) = bare_time(f) {
            rec.step_time_ms = num::to_ms(v, unit, Unit::Ms);
            seen.fields += 1;
        } else if f.ends_with("MFU") {
            kv::apply(vocabulary::Field::Mfu, f, &mut rec, &mut seen);
        } else if let Some((key, value)) = f.split_once(' ')
            && let Some(field) = vocabulary::lookup(key)
        {
            // `loss     nan`: llm.c pads a value to its column; the padding is no separator.
            kv::apply(field, value.trim_start(), &mut rec, &mut seen);
        } else {
            read_pairs(f, &mut rec, &mut seen);
        }
    }
    (seen.fields > 0 || seen.non_finite).then_some(())?;
    push_step(rec, &seen, p, out);
    Some(Format::NanoGpt)
}

/// `4621.47 ms` (or `1.2 s`): a time and nothing else in its field.
fn bare_time(f: &str) -> Option<(f64, Unit)> {
    let (v, unit) = f.split_once(' ')?;
    let unit = match unit.trim() {
        "ms" => Unit::Ms,
        "s" => Unit::S,
        _ => return None,
    };
    Some((num::number(v)?, unit))
}

/// `s:7512 trl:3.4445 lr:0.000006 norm:0.27`, or a validation loss `s:7500 tel:3.47`.
pub fn llmc_file(p: &str, out: &mut Vec<Record>) -> Option<Format> {
    let body = p.strip_prefix("s:")?;
    let (n, rest) = body.split_once(' ')?;
    let step = num::integer(n)?;
    if rest.starts_with("tel:") {
        return eval(p, Format::NanoGpt, out);
    }
    let loss = rest.strip_prefix("trl:")?;
    let mut rec = StepRecord {
        step: Some(step),
        ..StepRecord::default()
    };
    let mut seen = kv::Collected::default();
    kv::apply(vocabulary::Field::Loss(4), loss, &mut rec, &mut seen);
    read_pairs(
        rest.split_once(' ').map_or("", |(_, r)| r),
        &mut rec,
        &mut seen,
    );
    push_step(rec, &seen, p, out);
    Some(Format::NanoGpt)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::frameworks::test_util::step;

    #[test]
    fn build_nanogpt_line() {
        let mut out = Vec::new();
        llm_step(
            "step     1 | loss: 10.902707 | lr 1.6783e-06 | norm: 14.8630 | dt: 410.25ms | tok/sec: 1277966.93",
            &mut out,
        );
        let s = step(&out);
        assert_eq!(
            (s.step, s.loss, s.lr, s.step_time_ms, s.tokens_per_s),
            (
                Some(1),
                Some(10.902707),
                Some(1.6783e-6),
                Some(410.25),
                Some(1277966.93)
            )
        );
    }

    #[test]
    fn llm_c_console_lines() {
        let mut out = Vec::new();
        llm_step(
            "step    2/19560 | loss 10.956968 (+nanz)| norm 15.2986 (+nanz)| lr 1.71e-06 | 4557.77 ms | 29.6% bf16 MFU | 115032 tok/s",
            &mut out,
        );
        let s = step(&out);
        assert_eq!(
            (
                s.step,
                s.total,
                s.loss,
                s.step_time_ms,
                s.mfu_pct,
                s.tokens_per_s
            ),
            (
                Some(2),
                Some(19560),
                Some(10.956968),
                Some(4557.77),
                Some(29.6),
                Some(115032.0)
            )
        );
        out.clear();
        llm_step(
            "step    1/74 | train loss 11.010029 | norm 15.4196 | lr 8.57e-07 | (1334.52 ms | 392 tok/s)",
            &mut out,
        );
        let s = step(&out);
        assert_eq!(
            (s.step, s.loss, s.step_time_ms, s.tokens_per_s),
            (Some(1), Some(11.010029), Some(1334.52), Some(392.0))
        );
    }

    #[test]
    fn llm_c_log_file() {
        let mut out = Vec::new();
        llmc_file("s:7512 trl:3.4445 lr:0.000006 norm:0.2712", &mut out);
        let s = step(&out);
        assert_eq!(
            (s.step, s.loss, s.lr),
            (Some(7512), Some(3.4445), Some(6e-6))
        );
        out.clear();
        llmc_file("s:7500 tel:3.4721", &mut out);
        assert!(matches!(out[0], Record::Event { .. }));
    }
}
