//! Progress bars and counters: tqdm (plain, Hugging Face, fairseq), PyTorch Lightning (tqdm and
//! rich bars), Keras 2 and 3, and Ultralytics rows. Each `\r` redraw is its own record.

use super::record::{Counter, EventKind, Format, Record, Smoothing, StepRecord};
use super::trace::{self, Kind, Val};
use super::{
    Context, dispatch, events, kv, num, prefix, push_event, push_step, read_pairs, vocabulary,
};

/// Lines starting with `Epoch `: a Lightning bar, a Lightning rich bar, Keras's epoch header,
/// or a Lightning checkpoint message.
pub fn epoch_line(p: &str, ctx: &mut Context, out: &mut Vec<Record>) -> Option<Format> {
    let body = &p["Epoch ".len()..];
    let digits = body.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let epoch: f64 = body[..digits].parse().ok()?;
    trace::note(&body[..digits], Kind::Float, Some(Val::F(epoch)));
    let rest = &body[digits..];
    if rest.starts_with(':') {
        if rest.contains('|') {
            return bar(p, Some(epoch), Format::Lightning, ctx, out);
        }
        // Keras callbacks: `Epoch 3: val_loss improved from ...`.
        return Some(Format::Keras);
    }
    if rest.starts_with(", global step") {
        // ModelCheckpoint's message; the event comes from its "saving model to".
        return Some(Format::Lightning);
    }
    let after_slash = rest.strip_prefix('/')?;
    let total_digits = after_slash.bytes().take_while(u8::is_ascii_digit).count();
    let tail = after_slash[total_digits..].trim_start();
    if tail.is_empty() {
        ctx.keras_epoch = Some(epoch);
        return Some(Format::Keras);
    }
    if tail.starts_with('━') {
        return rich_bar(tail, epoch, out);
    }
    None
}

/// `Epoch 0/23 ━━━━ 98/98 0:00:22 • 0:00:00 4.44it/s v_num: 0 train/loss: 1.559`.
fn rich_bar(tail: &str, epoch: f64, out: &mut Vec<Record>) -> Option<Format> {
    let tail = tail.trim_start_matches(['━', '╸', '╺', '─', ' ']);
    let (pos, rest) = tail.split_once(' ')?;
    let (n, total) = pos.split_once('/')?;
    let mut rec = StepRecord {
        epoch: Some(epoch),
        // Lightning counts epochs from 0 and batches within the epoch.
        counter: Counter::InEpoch { base: 0 },
        ..StepRecord::default()
    };
    rec.step = Some(num::integer(n)?);
    rec.total = num::integer(total);
    if let Some((_, remaining)) = rest.split_once('•') {
        rec.eta_s = num::duration_s(remaining);
    }
    let mut seen = kv::Collected::default();
    let metrics = rest.find("it/s").map_or(rest, |at| &rest[..at + 4]);
    let rate_start = metrics.rfind(' ').map_or(0, |s| s + 1);
    rec.iters_per_s = num::number(&metrics[rate_start..]);
    read_pairs(&rest[metrics.len()..], &mut rec, &mut seen);
    push_step(rec, &seen, tail, out);
    Some(Format::Lightning)
}

/// Lines starting with a digit: a tqdm bar without a description, an Ultralytics row, or a
/// Keras counter.
pub fn counter_line(p: &str, ctx: &mut Context, out: &mut Vec<Record>) -> Option<Format> {
    let first_tok_end = p.find([' ', '%', ',']).unwrap_or(p.len());
    if p[first_tok_end..].starts_with("%|") || p[first_tok_end..].starts_with('%') {
        return tqdm(p, ctx, out);
    }
    let (n, total) = p[..first_tok_end].split_once('/')?;
    let rest = p[first_tok_end..].trim_start();
    if let Some(f) = ultralytics(n, total, rest, ctx, out) {
        return Some(f);
    }
    let keras_like = rest.starts_with('━')
        || rest.starts_with("[=")
        || rest.starts_with("[.")
        || rest.starts_with("[>")
        || rest.starts_with("- ");
    if !keras_like {
        return None;
    }
    let mut rec = StepRecord {
        epoch: ctx.keras_epoch,
        // Keras counts epochs from 1 (`Epoch 3/10`) and batches within the epoch.
        counter: Counter::InEpoch { base: 1 },
        ..StepRecord::default()
    };
    rec.step = Some(num::integer(n)?);
    rec.total = num::integer(total);
    let mut seen = kv::Collected::default();
    let metrics = match rest.find(']') {
        Some(end) if rest.starts_with('[') => &rest[end + 1..],
        _ => rest.trim_start_matches(['━', ' ']),
    };
    // Keras 3 shows the ETA while the epoch runs and the elapsed time once it is done.
    let running = rec.step < rec.total;
    trace::note(
        &p[..first_tok_end],
        Kind::Unfinished,
        running.then_some(Val::U(1)),
    );
    if rest.starts_with('━')
        && running
        && let Some(eta) = metrics.split_whitespace().next()
    {
        rec.eta_s = num::duration_s(eta);
    }
    read_pairs(metrics, &mut rec, &mut seen);
    push_step(rec, &seen, p, out);
    Some(Format::Keras)
}

/// `  1/100      2.09G     0.8904      3.502      1.383          8        640: 100% ━━━ 200/200
/// 8.5it/s 23.4s` (or a classic tqdm bar after the colon). The loss is the sum of the loss
/// columns: every number between the memory and the last two columns (instances, image size).
fn ultralytics(
    epoch: &str,
    _epochs: &str,
    rest: &str,
    ctx: &mut Context,
    out: &mut Vec<Record>,
) -> Option<Format> {
    let (cols, bar_part) = rest.split_once(':')?;
    let mut cols = cols.split_whitespace();
    let mem = cols.next()?;
    let (mem_v, unit, _) = num::number_unit(mem)?;
    if unit != num::Unit::GiB {
        return None;
    }
    let values: Vec<f64> = cols.map(num::number).collect::<Option<_>>()?;
    if values.len() < 3 {
        return None;
    }
    let losses = &values[..values.len() - 2];
    let bar_part = bar_part.trim_start();
    let mut rec = if bar_part.contains('|') {
        let mut sub = Vec::new();
        bar(bar_part, None, Format::Tqdm, ctx, &mut sub)?;
        match sub.pop() {
            Some(Record::Step(rec)) => *rec,
            _ => return None,
        }
    } else {
        new_tqdm(bar_part)?
    };
    rec.epoch = Some(num::number(epoch)?);
    // Epochs from 1 (`1/100`), batches within the epoch.
    rec.counter = Counter::InEpoch { base: 1 };
    rec.memory_mb = Some(mem_v * 1024.0);
    rec.loss = Some(losses.iter().sum());
    push_step(rec, &kv::Collected::default(), rest, out);
    Some(Format::Ultralytics)
}

/// Ultralytics' own bar: `100% ━━━━━━━━━━━━ 200/200 8.5it/s 23.4s`.
fn new_tqdm(s: &str) -> Option<StepRecord> {
    let mut rec = StepRecord::default();
    let pos = s
        .split_whitespace()
        .find(|t| t.contains('/') && t.as_bytes()[0].is_ascii_digit())?;
    let (n, total) = pos.split_once('/')?;
    rec.step = Some(num::integer(n)?);
    rec.total = num::integer(total);
    let after = &s[s.find(pos)? + pos.len()..];
    if let Some(rate) = after.split_whitespace().next() {
        rate_into(rate, &mut rec);
    }
    Some(rec)
}

/// Any tqdm-style bar: `desc: 45%|███▌    | 450/1000 [01:23<02:10, 3.45it/s, loss=0.5]`, or
/// with an unknown total `desc: 12it [00:03, 3.9it/s]`.
pub fn tqdm(p: &str, ctx: &mut Context, out: &mut Vec<Record>) -> Option<Format> {
    if !(p.contains("it/s") || p.contains("s/it") || p.contains("%|")) {
        return None;
    }
    bar(p, None, Format::Tqdm, ctx, out)
}

/// Descriptions of bars that count something other than training steps.
const NOT_TRAINING: &[&str] = &[
    "Validation",
    "Validating",
    "Sanity Checking",
    "Testing",
    "Predicting",
    "Loading",
    "Scanning",
    "Downloading",
    "Map",
    "Filter",
    "Tokeniz",
    "Generating",
    "Evaluating",
    "eval",
];

/// Bars whose redraws are evaluation progress: each is an eval event.
const EVALUATING: &[&str] = &["Validation", "Validating", "Testing", "Evaluating"];

fn bar(
    p: &str,
    epoch: Option<f64>,
    format: Format,
    ctx: &mut Context,
    out: &mut Vec<Record>,
) -> Option<Format> {
    // The bracket holds `elapsed<remaining, rate, postfix`; the position is just before it.
    let open = p.find(" [")?;
    let close = p[open..].find(']').map(|c| c + open);
    let inner = &p[open + 2..close.unwrap_or(p.len())];
    if !(inner.contains("it/s") || inner.contains("s/it") || inner.contains('<')) {
        return None;
    }
    let before = p[..open].trim_end();
    let pos = before.rsplit([' ', '|']).next()?;
    let desc = before.split('|').next().unwrap_or("");
    let format = if format == Format::Tqdm && desc.starts_with("Epoch ") {
        Format::Lightning
    } else {
        format
    };
    let desc_t = desc.trim_start();
    let training = !NOT_TRAINING.iter().any(|w| desc_t.starts_with(w));
    if EVALUATING.iter().any(|w| desc_t.starts_with(w)) {
        push_event(EventKind::Eval, p, out);
    }
    if training {
        let mut rec = StepRecord {
            epoch,
            // A Lightning bar counts the batches of its epoch (from 0); a plain bar is the
            // run's training bar or an evaluation's, which the feed tells apart.
            counter: match epoch {
                Some(_) => Counter::InEpoch { base: 0 },
                None => Counter::Bar,
            },
            ..StepRecord::default()
        };
        let (n, total) = pos
            .split_once('/')
            .unwrap_or((pos.trim_end_matches(char::is_alphabetic), ""));
        rec.step = Some(num::integer(n)?);
        rec.total = num::integer(total);
        let mut parts = inner.splitn(3, ", ");
        let times = parts.next().unwrap_or("");
        if let Some((_, remaining)) = times.split_once('<') {
            rec.eta_s = num::duration_s(remaining);
        }
        let mut seen = kv::Collected::default();
        if let Some(rate) = parts.next() {
            rate_into(rate.trim(), &mut rec);
            let rated = rec.step_time_ms.is_some() || rec.iters_per_s.is_some();
            rec.smoothed = match (rated, format) {
                (false, _) => Smoothing::Off,
                // Lightning's training bar is tqdm with `smoothing=0`.
                (true, Format::Lightning) => Smoothing::SinceStart,
                (true, _) => Smoothing::Moving,
            };
            if !rated {
                // A bar formatted without its rate: the postfix starts here
                // (`[01:02<01:20, samples/s=78.4, data_time=0.1]`).
                read_pairs(rate, &mut rec, &mut seen);
            }
        }
        if let Some(postfix) = parts.next() {
            read_pairs(postfix, &mut rec, &mut seen);
        }
        push_step(rec, &seen, p, out);
    }
    // Another write glued onto the bar with no newline: parse it as its own line.
    if let Some(close) = close {
        let glued = &p[close + 1..];
        if glued.trim().len() > 3 {
            let (_, payload) = prefix::strip(glued);
            ctx.glued_format = dispatch(payload, None, ctx, out);
            events::detect(payload, out);
        }
    }
    Some(format)
}

/// `3.45it/s` -> iters/s, `2.83s/it` -> step time, `?it/s` -> nothing.
fn rate_into(rate: &str, rec: &mut StepRecord) {
    let mut seen = kv::Collected::default();
    if let Some((_, _, suffix)) = num::number_unit(rate)
        && let Some(field) = vocabulary::field_of(suffix.trim_start_matches(['k', 'K', 'M']))
    {
        kv::apply(field, rate, rec, &mut seen);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::frameworks::test_util::step;

    fn run(line: &str) -> Vec<Record> {
        let mut out = Vec::new();
        let mut ctx = Context::default();
        dispatch(line, None, &mut ctx, &mut out);
        out
    }

    #[test]
    fn hf_bar_with_seconds_per_iteration() {
        let out = run("  1%|          | 10/1752 [00:29<1:22:01,  2.83s/it]");
        let s = step(&out);
        assert_eq!(
            (s.step, s.total, s.step_time_ms, s.eta_s),
            (Some(10), Some(1752), Some(2830.0), Some(4921.0))
        );
    }

    #[test]
    fn lightning_bar_with_postfix_and_unknown_total() {
        let out = run(
            "Epoch 0:   6%|█▍     | 86/1563 [00:06<01:44, 14.19it/s, v_num=0, train_loss=1.800]",
        );
        let s = step(&out);
        assert_eq!(
            (s.epoch, s.step, s.total, s.iters_per_s, s.loss),
            (Some(0.0), Some(86), Some(1563), Some(14.19), Some(1.8))
        );
        let out =
            run("Epoch 0: |          | 2/? [00:36<00:00,  0.06it/s, v_num=0, train_loss=13.90]");
        assert_eq!((step(&out).step, step(&out).total), (Some(2), None));
    }

    #[test]
    fn a_bar_without_its_rate_reads_its_postfix() {
        let out = run(
            "Epoch 0:  45%|████▌     | 36/80 [01:02<01:20, samples/s=78.4, data_time=0.083, loss=1.640]",
        );
        let s = step(&out);
        assert_eq!(
            (s.samples_per_s, s.data_time_ms, s.loss, s.smoothed),
            (Some(78.4), Some(83.0), Some(1.64), Smoothing::Off)
        );
    }

    #[test]
    fn validation_bars_are_not_steps() {
        let out = run("Validation DataLoader 0:  46%|████▌     | 73/157 [00:02<00:02, 37.48it/s]");
        assert!(!out.iter().any(|r| matches!(r, Record::Step(_))));
        assert!(matches!(
            out[0],
            Record::Event {
                kind: EventKind::Eval,
                ..
            }
        ));
    }

    #[test]
    fn glued_deepspeed_line_is_parsed_too() {
        let out = run(
            "  8%|██        | 1999/24128 [1:52:09<20:27:23,  3.33s/it][2021-11-26 03:07:16,494] [INFO] [logging.py:69:log_dist] [Rank 0] step=2000, skipped=1995, lr=[0.001, 0.001]",
        );
        let steps: Vec<_> = out
            .iter()
            .filter_map(|r| {
                if let Record::Step(s) = r {
                    s.step
                } else {
                    None
                }
            })
            .collect();
        assert_eq!(steps, vec![1999, 2000]);
    }

    #[test]
    fn keras_3_and_2() {
        let out =
            run("750/750 ━━━━━━━━━━━━━━━━━━━━ 10s 11ms/step - accuracy: 0.8112 - loss: 0.5913");
        let s = step(&out);
        assert_eq!(
            (s.step, s.total, s.step_time_ms, s.loss),
            (Some(750), Some(750), Some(11.0), Some(0.5913))
        );
        let out = run(
            "29696/57000 [==============>...............] - ETA: 1:05 - loss: 0.0372 - acc: 0.9886",
        );
        assert_eq!(
            (step(&out).eta_s, step(&out).loss),
            (Some(65.0), Some(0.0372))
        );
    }

    #[test]
    fn ultralytics_rows() {
        let out = run(
            "1/100      2.09G     0.8904      3.502      1.383          8        640: 100% ━━━━━━━━━━━━ 200/200 8.5it/s 23.4s",
        );
        let s = step(&out);
        assert_eq!(
            (s.epoch, s.step, s.iters_per_s),
            (Some(1.0), Some(200), Some(8.5))
        );
        assert!((s.loss.unwrap() - (0.8904 + 3.502 + 1.383)).abs() < 1e-9);
        let out = run(
            "151/200      10.4G     0.4635     0.2344      0.805       1578        640: 100%|██████████| 99/99 [01:52<00:00,  1.14s/it]",
        );
        assert_eq!(
            (step(&out).step_time_ms, step(&out).memory_mb),
            (Some(1140.0), Some(10.4 * 1024.0))
        );
    }

    #[test]
    fn rich_bar() {
        let out = run(
            "Epoch 0/23 ━━━━━━━━━━━━━━━━━━━━ 98/98 0:00:22 • 0:00:00 4.44it/s v_num: 0 train/loss: 1.559",
        );
        let s = step(&out);
        assert_eq!(
            (s.epoch, s.step, s.iters_per_s, s.loss),
            (Some(0.0), Some(98), Some(4.44), Some(1.559))
        );
    }
}
