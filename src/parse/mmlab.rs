//! OpenMMLab: mmengine (`Epoch(train)  [1][ 50/663]  lr: ...`, two-space separated) and the old
//! mmcv runner (`Epoch [1][2400/7517]\tlr: ..., eta: ...`, comma separated).

use super::record::{Counter, Format, Record, StepRecord};
use super::{eval, kv, num, push_step, read_pairs};

/// `Epoch(mode) [e][i/N]  ...` or `Iter(mode) [i/N]  ...`; modes other than train are evals.
pub fn mmengine(p: &str, out: &mut Vec<Record>) -> Option<Format> {
    let open = p.find('(')?;
    let close = p[open..].find(')')? + open;
    let mode = &p[open + 1..close];
    if mode != "train" {
        return eval(p, Format::Mmengine, out);
    }
    position(
        &p[close + 1..],
        p.starts_with("Epoch"),
        Format::Mmengine,
        out,
    )
}

/// `Epoch [e][i/N]\t...` or `Iter [i/N]\t...`.
pub fn mmcv(p: &str, out: &mut Vec<Record>) -> Option<Format> {
    position(
        &p[p.find(' ')?..],
        p.starts_with("Epoch"),
        Format::Mmcv,
        out,
    )
}

/// Reads `[e][i/N]` (or `[i/N]`) and the pairs after it into a step record.
fn position(s: &str, by_epoch: bool, format: Format, out: &mut Vec<Record>) -> Option<Format> {
    let mut rec = StepRecord::default();
    let mut rest = s.trim_start();
    let mut groups = Vec::with_capacity(2);
    while let Some(r) = rest.strip_prefix('[') {
        let end = r.find(']')?;
        groups.push(&r[..end]);
        rest = &r[end + 1..];
    }
    let pos = match (by_epoch, groups.as_slice()) {
        (true, [epoch, pos]) => {
            rec.epoch = Some(num::number(epoch)?);
            // Epochs from 1, iterations within the epoch.
            rec.counter = Counter::InEpoch { base: 1 };
            pos
        }
        (false, [pos]) => pos,
        _ => return None,
    };
    let (i, n) = pos.split_once('/')?;
    rec.step = Some(num::integer(i)?);
    rec.total = num::integer(n);
    let mut seen = kv::Collected::default();
    read_pairs(rest, &mut rec, &mut seen);
    push_step(rec, &seen, s, out);
    Some(format)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(out: &[Record]) -> &StepRecord {
        match out.last() {
            Some(Record::Step(s)) => s,
            other => panic!("no step: {other:?}"),
        }
    }

    #[test]
    fn mmengine_epoch_line() {
        let mut out = Vec::new();
        let line = "Epoch(train)  [3][ 40/500]  base_lr: 2.0000e-03 lr: 1.2500e-03  eta: 1 day, 2:00:00  time: 0.5120  data_time: 0.0110  memory: 9000  grad_norm: 3.5000  loss: 0.6100  loss_cls: 0.3000";
        assert_eq!(mmengine(line, &mut out), Some(Format::Mmengine));
        let s = step(&out);
        assert_eq!((s.epoch, s.step, s.total), (Some(3.0), Some(40), Some(500)));
        assert_eq!(
            (s.lr, s.loss, s.grad_norm),
            (Some(1.25e-3), Some(0.61), Some(3.5))
        );
        assert_eq!(s.eta_s, Some(93_600.0));
        assert_eq!(s.memory_mb, Some(9000.0));
        assert!((s.step_time_ms.unwrap() - 512.0).abs() < 1e-9);
    }

    #[test]
    fn mmcv_iter_line() {
        let mut out = Vec::new();
        let line = "Iter [300/16000]\tlr: 9.000e-03, eta: 0:40:00, time: 0.150, data_time: 0.010, memory: 2100, decode.loss_ce: 0.9, loss: 1.2000";
        assert_eq!(mmcv(line, &mut out), Some(Format::Mmcv));
        let s = step(&out);
        assert_eq!((s.step, s.total, s.epoch), (Some(300), Some(16000), None));
        assert_eq!((s.loss, s.eta_s), (Some(1.2), Some(2400.0)));
    }

    #[test]
    fn val_lines_are_evals() {
        let mut out = Vec::new();
        mmengine(
            "Epoch(val) [10][4000/4809]    eta: 0:06:54  time: 0.5256",
            &mut out,
        );
        assert!(matches!(out[0], Record::Event { .. }));
    }
}
