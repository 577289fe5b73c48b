//! MLPerf's compliance log: `:::MLLOG {"time_ms": ..., "key": "tracked_stats", "value":
//! {"throughput": 579.3}, "metadata": {"step_num": 100}}`. Each line is a JSON event whose `key`
//! says what it is, which no table of words can say: the run's settings (`global_batch_size`),
//! evaluations (`eval_start`), and the throughput the reference tracks at a step. The other
//! events (submission details, the optimizer's settings, run boundaries) are read and say
//! nothing of the steps.

use serde_json::Value;

use crate::parse::record::{ConfigFact, EventKind, Format, Record, StepRecord};
use crate::parse::{kv, push_event, push_step};

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
        "eval_start" => push_event(EventKind::Eval, p, out),
        "tracked_stats" => {
            // A step's throughput where the metadata names the step by number; a `step` that is
            // a fraction of an epoch is a whole run's summary, no step's.
            let step = event
                .get("metadata")
                .and_then(|m| m.get("step_num"))
                .and_then(Value::as_u64);
            let throughput = value
                .and_then(|v| v.get("throughput"))
                .and_then(Value::as_f64);
            if let (Some(step), Some(throughput)) = (step, throughput) {
                let rec = StepRecord {
                    step: Some(step),
                    samples_per_s: Some(throughput),
                    ..StepRecord::default()
                };
                let seen = kv::Collected {
                    fields: 2,
                    ..kv::Collected::default()
                };
                push_step(rec, &seen, p, out);
            }
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
}
