//! ClearML's offline run folder (`~/.clearml/cache/offline/offline-<task>/metrics.jsonl`): each
//! line a JSON array of events as ClearML would send them to its server. Read here: the
//! training scalars (`training_stats_scalar`, named `title/series` as ClearML shows them,
//! their `iter` the step and their `timestamp` in ms), consecutive scalars of one iteration
//! making one entry. ClearML's own machine and GPU monitor (`:monitor:*` titles) is left: its
//! `iter` counts seconds, and where it cannot read a GPU's utilization it writes a fixed 100%.

use super::{Entry, Read};

/// Whether `path` is an offline run's `metrics.jsonl`.
pub fn is_offline_metrics(path: &std::path::Path) -> bool {
    path.file_name().is_some_and(|n| n == "metrics.jsonl")
        && path
            .parent()
            .and_then(|d| d.file_name())
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("offline-"))
}

/// Reads a whole `metrics.jsonl`.
pub fn read(text: &str) -> Read {
    let mut out = Read::default();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let events = match serde_json::from_str::<Vec<serde_json::Value>>(line) {
            Ok(e) => e,
            Err(e) => {
                out.problems
                    .push(format!("line {}: not a JSON array of events ({e})", n + 1));
                continue;
            }
        };
        for e in &events {
            if e["type"] != "training_stats_scalar" {
                continue;
            }
            let (Some(title), Some(series), Some(value)) = (
                e["metric"].as_str(),
                e["variant"].as_str(),
                e["value"].as_f64(),
            ) else {
                continue;
            };
            if title.starts_with(":monitor:") || !value.is_finite() {
                continue;
            }
            let step = e["iter"].as_u64();
            let time = e["timestamp"].as_f64().map(|ms| ms / 1000.0);
            let name = format!("{title}/{series}");
            match out.entries.last_mut() {
                Some(last) if last.step == step => last.values.push((name, value)),
                _ => out.entries.push(Entry {
                    step,
                    time,
                    values: vec![(name, value)],
                    ..Entry::default()
                }),
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_iterations_scalars_are_one_entry_and_the_monitor_is_left() {
        let text = concat!(
            r#"[{"timestamp": 1000, "type": "training_stats_scalar", "iter": 1, "metric": "train", "variant": "loss", "value": 2.5}, "#,
            r#"{"timestamp": 1001, "type": "training_stats_scalar", "iter": 1, "metric": "train", "variant": "lr", "value": 0.1}]"#,
            "\n",
            r#"[{"timestamp": 1500, "type": "training_stats_scalar", "iter": 2, "metric": ":monitor:gpu", "variant": "gpu_0_utilization", "value": 100.0}, "#,
            r#"{"timestamp": 1600, "type": "training_stats_scalar", "iter": 2, "metric": "train", "variant": "loss", "value": 2.0}]"#,
            "\n",
        );
        let r = read(text);
        assert!(r.problems.is_empty(), "{:?}", r.problems);
        assert_eq!(r.entries.len(), 2);
        assert_eq!(r.entries[0].text(), "step 1 train/loss=2.5 train/lr=0.1");
        assert_eq!(r.entries[1].time, Some(1.6));
        assert_eq!(r.entries[1].text(), "step 2 train/loss=2");
    }
}
