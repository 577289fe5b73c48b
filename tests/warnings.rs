//! Warnings that are not problems: a cache whose misses cost nothing (fixtures/runs
//! cache_hit_rate_low, in the scenarios), step times that are only the arrival times of a log's
//! lines (a line read late is not a slow step), and a setting that changes between separate
//! launches logged into one file (a change between runs, not a mismatch inside one).

mod support;

use steptop::{DiagnoseConfig, Feed, ModelConfig, Monitor, Msg, Severity};

/// A log without timestamps followed live: each line and when steptop read it.
fn followed(lines: &[(String, f64)]) -> Monitor {
    let mut feed = Feed::new(0, "train.log", Default::default());
    let mut m = Monitor::new(ModelConfig::default(), DiagnoseConfig::default());
    m.apply(Msg::CaughtUp { source: 0 });
    for (i, (text, arrival)) in lines.iter().enumerate() {
        m.apply(feed.message(i as u64 + 1, text.as_bytes(), Some(*arrival)));
    }
    m
}

fn step(s: u64) -> String {
    format!("step {s}/100000 | loss=2.5000")
}

/// The highest severity `rule` was raised at, if it was.
fn raised(m: &Monitor, rule: &str) -> Option<Severity> {
    m.diagnosis
        .alerts
        .iter()
        .filter(|a| a.rule == rule)
        .map(|a| a.severity)
        .max()
}

/// A step every 100 ms; every 25 steps steptop itself is held up for 0.8 s (a busy machine)
/// and reads the lines written meanwhile at once, a millisecond apart.
#[test]
fn lines_read_late_are_not_slow_steps() {
    let mut lines = Vec::new();
    let mut held_until = 0.0;
    for s in 1..=400u64 {
        let written = 1000.0 + s as f64 * 0.1;
        if s % 25 == 0 {
            held_until = written + 0.8;
        }
        let read = if written < held_until {
            held_until + (s % 25) as f64 * 0.001
        } else {
            written
        };
        lines.push((step(s), read));
    }
    let m = followed(&lines);
    assert_eq!(raised(&m, "step_spikes"), None, "{:#?}", m.diagnosis.alerts);
}

/// The same log, but every 25th step takes 0.9 s and the lines after it come on time: slow
/// steps, which the next line does not give back.
#[test]
fn steps_that_are_slow_are_still_spikes() {
    let mut lines = Vec::new();
    let mut t = 1000.0;
    for s in 1..=400u64 {
        t += if s % 25 == 0 { 0.9 } else { 0.1 };
        lines.push((step(s), t));
    }
    let m = followed(&lines);
    assert_eq!(raised(&m, "step_spikes"), Some(Severity::Warn));
    let a = m
        .diagnosis
        .alerts
        .iter()
        .find(|a| a.rule == "step_spikes")
        .unwrap();
    assert!(
        a.evidence
            .iter()
            .any(|e| e.contains("gaps between the lines' arrivals")),
        "{a:#?}"
    );
}

/// Steps that come 1.6 times slower by the lines' arrivals, with no reading of the machine's
/// load: the drift is said (info), with why it cannot be told from steptop reading late.
#[test]
fn a_drift_of_arrivals_alone_is_said_not_warned() {
    let mut lines = Vec::new();
    let mut t = 1000.0;
    for s in 1..=400u64 {
        t += if s > 250 { 0.16 } else { 0.1 };
        lines.push((step(s), t));
    }
    let m = followed(&lines);
    assert_eq!(raised(&m, "throughput_drift"), Some(Severity::Info));
    let a = m
        .diagnosis
        .alerts
        .iter()
        .find(|a| a.rule == "throughput_drift")
        .unwrap();
    assert!(
        a.evidence
            .iter()
            .any(|e| e.contains("no probe reads this machine's load")),
        "{a:#?}"
    );
    // The same run with its own timestamps is a drift of the job: a warning.
    let stamped: Vec<String> = lines
        .iter()
        .map(|(l, t)| {
            let ms = (t * 1000.0).round() as u64;
            format!(
                "2026-01-05 10:{:02}:{:02}.{:03} | {l}",
                ms / 60_000 % 60,
                ms / 1000 % 60,
                ms % 1000
            )
        })
        .collect();
    let mut feed = Feed::new(0, "train.log", Default::default());
    let mut m = Monitor::new(ModelConfig::default(), DiagnoseConfig::default());
    for (i, l) in stamped.iter().enumerate() {
        m.apply(feed.message(i as u64 + 1, l.as_bytes(), None));
    }
    assert_eq!(raised(&m, "throughput_drift"), Some(Severity::Warn));
}

/// One file, three launches of the same script with num_workers 4, then 64, then 8 (as a
/// PaddleClas log of 20 launches did): each launch is a run of its own, so the values are
/// changes between runs, said with the earlier runs, and no run disagrees with itself.
#[test]
fn a_setting_changed_between_launches_is_no_mismatch() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::new();
    for workers in [4, 64, 8] {
        text.push_str(&format!(
            "Namespace(batch_size=32, num_workers={workers}, lr=0.1)\n"
        ));
        for s in 1..=60 {
            text.push_str(&format!(
                "step {s}/60 | loss={:.4} | data_time=3.0ms | time=100.0ms\n",
                2.5 - f64::from(s) * 0.01
            ));
        }
    }
    let log = dir.path().join("three.log");
    std::fs::write(&log, text).unwrap();
    let out = support::steptop()
        .args(["report", "--format", "json"])
        .arg(&log)
        .output()
        .unwrap();
    assert!(out.status.success());
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rules: Vec<&str> = r["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|a| a["rule"].as_str())
        .collect();
    assert!(!rules.contains(&"config_mismatch"), "{rules:?}");
    let earlier = r["earlier_runs"].as_array().unwrap();
    assert_eq!(earlier.len(), 2, "{r:#}");
    let changed = |i: usize| {
        let c = &earlier[i]["then_changed"][0];
        (c["key"].clone(), c["was"].clone(), c["now"].clone())
    };
    assert_eq!(changed(0), ("num_workers".into(), "4".into(), "64".into()));
    assert_eq!(changed(1), ("num_workers".into(), "64".into(), "8".into()));
    // A value that changes inside one run is still a disagreement.
    let one = dir.path().join("one.log");
    let lines: Vec<String> = (1..=60)
        .map(|s| format!("step {s}/60 | loss=2.0 | data_time=3.0ms | time=100.0ms"))
        .collect();
    std::fs::write(
        &one,
        format!(
            "Namespace(num_workers=4)\n{}\nNamespace(num_workers=64)\n{}\n",
            lines[..30].join("\n"),
            lines[30..].join("\n")
        ),
    )
    .unwrap();
    let out = support::steptop()
        .args(["report", "--format", "json"])
        .arg(&one)
        .output()
        .unwrap();
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        r["alerts"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a["rule"] == "config_mismatch"),
        "{r:#}"
    );
}
