//! Dict lines: Hugging Face Trainer's `{'loss': 2.1, ...}` (floats or quoted strings), its final
//! `train_runtime` dict and `***** train metrics *****` block, and the JSON-lines logs of mmcv,
//! mmengine, detectron2 and fairseq.

use crate::parse::record::{EventKind, Format, Record, StepRecord, SummaryRecord};
use crate::parse::{eval, kv, num, push_event, push_step, vocabulary};

/// A `{...}` line: a step, an eval, a run summary or config, by its keys.
pub fn dict_line(p: &str, logger: Option<&str>, out: &mut Vec<Record>) -> Option<Format> {
    // fairseq's JSON log: `[train]` is an epoch's averages, `[valid]` an evaluation.
    match logger {
        Some("train") if p.contains("\"train_") => {
            push_event(EventKind::EpochEnd, p, out);
            return Some(Format::Fairseq);
        }
        Some("valid") => return eval(p, Format::Fairseq, out),
        _ => {}
    }
    let python = p.starts_with("{'");
    // The trainer's closing summary: a Python dict printed, or the same keys as JSON lines
    // (ms-swift's logging.jsonl) with its `train_runtime`.
    let closing = python || p.contains("\"train_runtime\"");
    let mut rec = StepRecord::default();
    let mut seen = kv::Collected::default();
    let mut summary = SummaryRecord::default();
    let (mut is_eval, mut is_summary, mut mode_train) = (false, false, true);
    let mut format = if python {
        Format::HfTrainer
    } else {
        Format::KeyValue
    };
    let mut facts = Vec::new();
    kv::pairs(p, &mut |key, value| {
        // LLaMA-Factory's trainer_log.jsonl names `eval_loss: null` on every training line:
        // an evaluation's key with no value says nothing ran.
        if (key.starts_with("eval_") || key.starts_with("test_"))
            && !matches!(value, "null" | "None")
        {
            is_eval = true;
        }
        match key {
            "train_runtime"
            | "train_samples_per_second"
            | "train_steps_per_second"
            | "train_loss"
                if closing =>
            {
                is_summary = true;
                summary_field(&mut summary, key, value);
                return;
            }
            "mode" => {
                format = Format::Mmcv;
                mode_train = value.trim_start_matches('"').starts_with("train");
            }
            "update" => format = Format::Fairseq,
            "iteration" => format = Format::Detectron2,
            _ => {}
        }
        let Some(field) = vocabulary::lookup(key) else {
            return;
        };
        if let Some(fact) = kv::config_fact(field, key, value) {
            facts.push(fact);
        }
        kv::apply(field, value, &mut rec, &mut seen);
    });
    if is_summary {
        out.push(Record::Summary(summary));
        return Some(Format::HfTrainer);
    }
    if is_eval || !mode_train {
        return eval(p, format, out);
    }
    if seen.fields == 0 && !seen.non_finite {
        if facts.is_empty() {
            return None;
        }
        out.extend(facts.into_iter().map(Record::Config));
        return Some(Format::KeyValue);
    }
    push_step(rec, &seen, p, out);
    Some(format)
}

/// One line of the `***** train metrics *****` block: `  train_runtime            = 1:42:12.36`.
pub fn metrics_line(p: &str, out: &mut Vec<Record>) -> Option<Format> {
    let (key, value) = p.split_once(" = ")?;
    let mut summary = SummaryRecord::default();
    summary_field(&mut summary, key.trim(), value.trim()).then_some(())?;
    out.push(Record::Summary(summary));
    Some(Format::HfTrainer)
}

fn summary_field(s: &mut SummaryRecord, key: &str, value: &str) -> bool {
    let v = if key == "train_runtime" {
        runtime(value)
    } else {
        num::number(value)
    };
    let slot = match key {
        "train_runtime" => &mut s.runtime_s,
        "train_samples_per_second" => &mut s.samples_per_s,
        "train_steps_per_second" => &mut s.steps_per_s,
        "train_loss" => &mut s.loss,
        _ => return false,
    };
    *slot = v;
    v.is_some()
}

/// Seconds in the dict (`27172.2581`, `'1575'`), `H:MM:SS.xx` in the metrics block.
fn runtime(value: &str) -> Option<f64> {
    let v = value.trim_matches(['\'', '"', ' ', ',', '}']);
    if v.contains(':') {
        num::duration_s(v)
    } else {
        num::number(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::frameworks::test_util::step;

    #[test]
    fn hf_dict_with_quoted_strings() {
        let mut out = Vec::new();
        let line = "{'loss': '0.8248', 'grad_norm': '0.9336', 'learning_rate': '0.0001929', 'epoch': '0.2286'}";
        assert_eq!(dict_line(line, None, &mut out), Some(Format::HfTrainer));
        let s = step(&out);
        assert_eq!(
            (s.loss, s.grad_norm, s.lr, s.epoch),
            (Some(0.8248), Some(0.9336), Some(0.0001929), Some(0.2286))
        );
    }

    #[test]
    fn hf_summary_and_eval() {
        let mut out = Vec::new();
        dict_line(
            "{'train_runtime': 0.4796, 'train_samples_per_second': 20852.484, 'train_steps_per_second': 646.427, 'train_loss': 53.3, 'epoch': 9.92}",
            None,
            &mut out,
        );
        assert_eq!(
            out,
            vec![Record::Summary(SummaryRecord {
                runtime_s: Some(0.4796),
                samples_per_s: Some(20852.484),
                steps_per_s: Some(646.427),
                loss: Some(53.3)
            })]
        );
        out.clear();
        dict_line(
            "{'eval_loss': 2.33, 'eval_runtime': 266.2, 'epoch': 1.0}",
            None,
            &mut out,
        );
        assert!(matches!(out[0], Record::Event { .. }));
    }

    #[test]
    fn metrics_block_runtime() {
        let mut out = Vec::new();
        metrics_line("train_runtime            = 1:42:12.36", &mut out);
        assert!(
            matches!(&out[0], Record::Summary(s) if (s.runtime_s.unwrap() - 6132.36).abs() < 1e-9)
        );
    }

    #[test]
    fn mmcv_json_line() {
        let mut out = Vec::new();
        let line = r#"{"mode": "train", "epoch": 1, "iter": 850, "lr": 0.00962, "memory": 6567, "data_time": 0.00983, "loss": 1.5689, "time": 1.4326}"#;
        assert_eq!(dict_line(line, None, &mut out), Some(Format::Mmcv));
        assert_eq!(step(&out).step, Some(850));
    }
}
