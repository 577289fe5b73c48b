//! MLPerf's compliance log: `:::MLLOG {"time_ms": ..., "key": "tracked_stats", "value":
//! {"throughput": 579.3}, "metadata": {"step_num": 100}}`. Each line is a JSON event whose `key`
//! says what it is, which no table of words can say: the run's settings (`global_batch_size`),
//! evaluations (`eval_start`), and the throughput the reference tracks at a step. The other
//! events (submission details, the optimizer's settings, run boundaries) are read and say
//! nothing of the steps.

use serde_json::Value;

use crate::parse::record::{ConfigFact, Counter, EventKind, Format, Record, StepRecord};
use crate::parse::{kv, push_event, push_step, vocabulary};

pub fn mllog(p: &str, out: &mut Vec<Record>) -> Option<Format> {
    let json = p.strip_prefix(":::MLLOG")?.trim();
    let Ok(event) = serde_json::from_str::<Value>(json) else {
        // A line cut short is still MLPerf's: nothing to read in it.
        return Some(Format::KeyValue);
    };
    let key = event.get("key").and_then(Value::as_str).unwrap_or("");
    let value = event.get("value");
    let int = || {
        value
            .and_then(Value::as_u64)
            .and_then(|v| u32::try_from(v).ok())
    };
    match key {
        "global_batch_size" => {
            out.extend(int().map(|b| Record::Config(ConfigFact::GlobalBatch(b))))
        }
        "gradient_accumulation_steps" => {
            out.extend(int().map(|g| Record::Config(ConfigFact::GradAccum(g))));
        }
        "max_sequence_length" => out.extend(int().map(|n| Record::Config(ConfigFact::SeqLen(n)))),
        "eval_start" => push_event(EventKind::Eval, p, out),
        "tracked_stats" => {
            // A step's figures, named as any line names them (`throughput`,
            // `train_step_time`, `reduced_train_loss`). The metadata names the step by number
            // (`step_num`), or by the samples or tokens consumed so far (NeMo's `step`); a
            // `step` that is a fraction of an epoch is a whole run's summary, no step's.
            let meta = event.get("metadata");
            let numbered = meta.and_then(|m| m.get("step_num")).and_then(Value::as_u64);
            let consumed = meta
                .and_then(|m| m.get("step"))
                .and_then(Value::as_f64)
                .filter(|s| *s >= 1.0 && s.fract() == 0.0);
            let Some(Value::Object(figures)) = value else {
                return Some(Format::KeyValue);
            };
            let mut rec = StepRecord::default();
            let mut seen = kv::Collected::default();
            for (name, v) in figures {
                let (Some(field), Some(x)) = (vocabulary::lookup(name), v.as_f64()) else {
                    continue;
                };
                kv::apply(field, &x.to_string(), &mut rec, &mut seen);
            }
            if seen.fields == 0 {
                return Some(Format::KeyValue);
            }
            match (numbered, consumed) {
                (Some(n), _) => rec.step = Some(n),
                // A throughput alone at a `step` is an epoch's (RetinaNet's `step: 3`); a
                // step's own time or loss makes the count a step's.
                (None, Some(c)) if rec.step_time_ms.is_some() || rec.loss.is_some() => {
                    rec.step = Some(c as u64);
                    rec.counter = Counter::Consumed;
                }
                _ => return Some(Format::KeyValue),
            }
            seen.fields += 1;
            push_step(rec, &seen, p, out);
        }
        _ => {}
    }
    Some(Format::KeyValue)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::frameworks::test_util::step;

    #[test]
    fn tracked_stats_at_a_step_the_batch_and_evaluations() {
        let mut out = Vec::new();
        mllog(
            r#":::MLLOG {"namespace": "", "time_ms": 1729336064429, "event_type": "POINT_IN_TIME", "key": "tracked_stats", "value": {"throughput": 579.33}, "metadata": {"file": "callbacks.py", "lineno": 471, "step_num": 100}}"#,
            &mut out,
        );
        let s = step(&out);
        assert_eq!((s.step, s.samples_per_s), (Some(100), Some(579.33)));
        let mut out = Vec::new();
        mllog(
            r#":::MLLOG {"key": "tracked_stats", "value": {"throughput": 6100812.07}, "metadata": {"step": 0.6999}}"#,
            &mut out,
        );
        assert!(out.is_empty(), "a run's summary is no step: {out:?}");
        mllog(
            r#":::MLLOG {"key": "global_batch_size", "value": 55296, "metadata": {}}"#,
            &mut out,
        );
        mllog(r#":::MLLOG {"key": "eval_start", "value": null}"#, &mut out);
        mllog(
            r#":::MLLOG {"key": "tracked_stats", "value": {"throughput": 295.4}, "metadata": {"step": 2}}"#,
            &mut out,
        );
        assert!(matches!(
            out.as_slice(),
            [
                Record::Config(ConfigFact::GlobalBatch(55296)),
                Record::Event {
                    kind: EventKind::Eval,
                    ..
                }
            ]
        ));
    }

    #[test]
    fn nemo_names_its_step_by_the_samples_consumed() {
        let mut out = Vec::new();
        mllog(
            r#" :::MLLOG {"key": "tracked_stats", "value": {"train_step_time": 4.069, "reduced_train_loss": 12.57}, "metadata": {"lineno": 312, "step": 128.0}}"#.trim(),
            &mut out,
        );
        let s = step(&out);
        assert_eq!(s.step, Some(128));
        assert_eq!(s.counter, Counter::Consumed);
        assert_eq!(s.loss, Some(12.57));
        assert!(s.step_time_ms.is_some_and(|ms| (ms - 4069.0).abs() < 1e-6));
    }
}
