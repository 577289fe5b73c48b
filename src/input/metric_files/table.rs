//! The metric files that are tables of numbers: Lightning's `metrics.csv` (a row per logged
//! step, rewritten whole when a new column appears), mmengine's `scalars.json` (a JSON object
//! a line) and Hugging Face's `trainer_state.json` (its `log_history`, rewritten at each
//! checkpoint). None of them holds a wall time. Pure.

use serde_json::{Map, Value};

use super::{Entry, Read};
use crate::parse::record::SummaryRecord;

/// Names that number the step rather than measure it.
const STEP_NAMES: [&str; 3] = ["step", "iter", "global_step"];

/// A row's step and its other numbers; rows of one step that follow each other are one
/// (Lightning writes a row per `log` call site when they log apart). A row without a step is
/// nobody's.
fn push(out: &mut Read, step: Option<u64>, values: Vec<(String, f64)>) {
    if step.is_none() || values.is_empty() {
        return;
    }
    match out.entries.last_mut() {
        Some(last) if last.step == step && last.summary.is_none() => {
            for (name, v) in values {
                if !last.values.iter().any(|(n, _)| *n == name) {
                    last.values.push((name, v));
                }
            }
        }
        _ => out.entries.push(Entry {
            step,
            values,
            ..Entry::default()
        }),
    }
}

/// Lightning's `metrics.csv`: a header, then a row per logged step, empty cells for the
/// figures not logged at it.
pub fn csv(text: &str) -> Read {
    let mut out = Read::default();
    let mut lines = text.lines();
    let Some(head) = lines.next() else {
        return out;
    };
    let names: Vec<&str> = head.split(',').map(str::trim).collect();
    for (i, line) in lines.enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let cells: Vec<&str> = line.split(',').map(str::trim).collect();
        if cells.len() != names.len() {
            out.problems.push(format!(
                "line {}: {} cells under {} names",
                i + 2,
                cells.len(),
                names.len()
            ));
            continue;
        }
        let mut step = None;
        let mut values = Vec::new();
        for (name, cell) in names.iter().zip(&cells) {
            let Ok(v) = cell.parse::<f64>() else { continue };
            if STEP_NAMES.contains(name) {
                step = (v >= 0.0 && v.fract() == 0.0).then_some(v as u64);
            } else {
                values.push((name.to_string(), v));
            }
        }
        push(&mut out, step, values);
    }
    out
}

/// The numbers of one JSON object, its step apart.
fn numbers(obj: &Map<String, Value>) -> (Option<u64>, Vec<(String, f64)>) {
    let step = STEP_NAMES.iter().find_map(|k| obj.get(*k)?.as_u64());
    let values = obj
        .iter()
        .filter(|(k, _)| !STEP_NAMES.contains(&k.as_str()))
        .filter_map(|(k, v)| Some((k.clone(), v.as_f64()?)))
        .collect();
    (step, values)
}

/// mmengine's `scalars.json`: one JSON object a line (`{"lr": ..., "loss": ..., "time": ...,
/// "step": 10}`), evaluation results among them.
pub fn json_lines(text: &str) -> Read {
    let mut out = Read::default();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(obj)) => {
                let (step, values) = numbers(&obj);
                push(&mut out, step, values);
            }
            Ok(_) => out
                .problems
                .push(format!("line {}: not a JSON object", i + 1)),
            Err(e) => out.problems.push(format!("line {}: {e}", i + 1)),
        }
    }
    out
}

/// Hugging Face's `trainer_state.json`: its `log_history`, the training entries as steps,
/// evaluation entries left out, and the closing entry (`train_runtime`) as the run's summary.
pub fn trainer_state(text: &str) -> Read {
    let mut out = Read::default();
    let state: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            out.problems.push(format!("not JSON: {e}"));
            return out;
        }
    };
    let Some(history) = state.get("log_history").and_then(Value::as_array) else {
        out.problems.push("no log_history in it".into());
        return out;
    };
    for item in history {
        let Some(obj) = item.as_object() else {
            continue;
        };
        if obj
            .keys()
            .any(|k| k.starts_with("eval_") || k.starts_with("test_"))
        {
            continue;
        }
        let f = |k: &str| obj.get(k).and_then(Value::as_f64);
        if obj.contains_key("train_runtime") {
            let (step, values) = numbers(obj);
            out.entries.push(Entry {
                step,
                values,
                time: None,
                summary: Some(SummaryRecord {
                    runtime_s: f("train_runtime"),
                    samples_per_s: f("train_samples_per_second"),
                    steps_per_s: f("train_steps_per_second"),
                    loss: f("train_loss"),
                }),
                config: Vec::new(),
            });
            continue;
        }
        let (step, values) = numbers(obj);
        push(&mut out, step, values);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::metric_files::UserTags;
    use crate::parse::record::{Record, StepRecord};

    fn steps(r: &Read) -> Vec<StepRecord> {
        r.entries
            .iter()
            .flat_map(|e| e.records(&UserTags::new()))
            .filter_map(|r| match r {
                Record::Step(s) => Some(*s),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_csv_row_per_step_with_empty_cells_and_rows_of_one_step_merged() {
        let r = csv("epoch,lr-AdamW,step,train_loss_step,val_loss\n\
                     0,,9,2.31,\n0,0.001,9,,\n0,,19,2.05,\n0,,19,,2.2\nbad,row\n");
        let s = steps(&r);
        assert_eq!(s.len(), 2);
        assert_eq!(
            (s[0].step, s[0].loss, s[0].lr),
            (Some(9), Some(2.31), Some(0.001))
        );
        assert_eq!(
            (s[1].step, s[1].loss, s[1].lr),
            (Some(19), Some(2.05), None)
        );
        assert_eq!(
            r.problems,
            vec!["line 6: 2 cells under 5 names".to_string()]
        );
    }

    #[test]
    fn mmengine_scalars_give_times_in_seconds() {
        let r = json_lines(
            "{\"lr\": 0.01, \"data_time\": 0.012, \"loss\": 1.5, \"time\": 0.25, \"epoch\": 1, \"iter\": 10, \"memory\": 512, \"step\": 10}\n\
             {\"accuracy/top1\": 55.0, \"step\": 1}\nnot json\n",
        );
        let s = steps(&r);
        assert_eq!(s.len(), 1);
        assert_eq!(s[0].step, Some(10));
        assert_eq!(
            (s[0].step_time_ms, s[0].data_time_ms),
            (Some(250.0), Some(12.0))
        );
        assert_eq!(s[0].memory_mb, Some(512.0));
        assert_eq!(r.problems.len(), 1);
    }

    #[test]
    fn trainer_state_steps_and_its_closing_summary() {
        let r = trainer_state(
            r#"{"global_step": 10, "log_history": [
              {"epoch": 0.5, "grad_norm": 1.2, "learning_rate": 4e-05, "loss": 2.0, "step": 5},
              {"epoch": 0.5, "eval_loss": 2.1, "eval_runtime": 0.3, "step": 5},
              {"epoch": 1.0, "grad_norm": 1.1, "learning_rate": 2e-05, "loss": 1.8, "step": 10},
              {"epoch": 1.0, "step": 10, "total_flos": 1.0, "train_loss": 1.9,
               "train_runtime": 12.5, "train_samples_per_second": 6.4, "train_steps_per_second": 0.8}
            ]}"#,
        );
        let s = steps(&r);
        assert_eq!(s.len(), 2);
        assert_eq!(
            (s[1].step, s[1].loss, s[1].grad_norm),
            (Some(10), Some(1.8), Some(1.1))
        );
        let last = r.entries.last().unwrap().records(&UserTags::new());
        let Some(Record::Summary(sum)) = last.first() else {
            panic!("a summary")
        };
        assert_eq!((sum.runtime_s, sum.loss), (Some(12.5), Some(1.9)));
    }
}
