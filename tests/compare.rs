//! `steptop compare` over every case of fixtures/compare: each case's `expected.toml` names its
//! runs (files or directories in the case's folder, the baseline first), optional `labels`,
//! the findings it must give (`[[finding]]`: `id`, `severity`, `run`, and optionally `title`
//! and `evidence`, pieces of its text), findings it must `never` give, and figures of the JSON
//! (`[[expect]]`: `path`, then `equals`, `approx` with `tol`, or `contains`).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn cases() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/compare");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(root)
        .expect("fixtures/compare")
        .map(|e| e.expect("entry").path())
        .collect();
    dirs.sort();
    dirs
}

fn compare(dir: &Path, expected: &toml::Table, format: &str) -> String {
    let runs: Vec<PathBuf> = expected["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|r| dir.join(r.as_str().expect("a run path")))
        .collect();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_steptop"));
    cmd.env_remove("STEPTOP_CONFIG")
        .env("XDG_CONFIG_HOME", "/nonexistent/steptop-tests");
    cmd.args(["compare", "--format", format]);
    for label in expected
        .get("labels")
        .and_then(|l| l.as_array())
        .into_iter()
        .flatten()
    {
        cmd.args(["--label", label.as_str().expect("a label")]);
    }
    let out = cmd.args(&runs).output().expect("steptop runs");
    assert!(
        out.status.success(),
        "{}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

fn at<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    path.split('.')
        .try_fold(v, |v, key| match key.parse::<usize>() {
            Ok(i) => v.get(i),
            Err(_) => v.get(key),
        })
}

fn check_expect(got: &Value, want: &toml::Value) -> Option<String> {
    let path = want["path"].as_str().expect("path");
    let Some(v) = at(got, path) else {
        return Some(format!("{path}: missing"));
    };
    if let Some(part) = want.get("contains").and_then(|c| c.as_str()) {
        return (!v.as_str().is_some_and(|s| s.contains(part)))
            .then(|| format!("{path}: {v} does not contain {part:?}"));
    }
    if let Some(x) = want.get("approx").and_then(|a| a.as_float()) {
        let tol = want.get("tol").and_then(|t| t.as_float()).unwrap_or(1e-9);
        return (!v.as_f64().is_some_and(|g| (g - x).abs() <= tol))
            .then(|| format!("{path}: want {x} ± {tol}, got {v}"));
    }
    let equal = match want.get("equals").expect("equals, approx or contains") {
        toml::Value::Integer(i) => v.as_i64() == Some(*i),
        toml::Value::Float(f) => v.as_f64() == Some(*f),
        toml::Value::String(s) => v.as_str() == Some(s.as_str()),
        toml::Value::Boolean(b) => v.as_bool() == Some(*b),
        other => panic!("{path}: cannot compare with {other:?}"),
    };
    (!equal).then(|| format!("{path}: want {:?}, got {v}", want["equals"]))
}

fn finding_matches(f: &Value, want: &toml::Value) -> bool {
    let field = |k: &str| want.get(k).and_then(|v| v.as_str());
    field("id").is_none_or(|id| f["id"] == id)
        && field("severity").is_none_or(|s| f["severity"] == s)
        && field("run").is_none_or(|r| f["run"] == r)
        && field("title").is_none_or(|t| f["title"].as_str().is_some_and(|x| x.contains(t)))
        && field("evidence").is_none_or(|e| {
            f["evidence"]
                .as_array()
                .is_some_and(|l| l.iter().any(|x| x.as_str().is_some_and(|x| x.contains(e))))
        })
}

#[test]
fn every_comparison_gives_its_findings_and_figures() {
    let mut failures = Vec::new();
    let cases = cases();
    assert!(cases.len() >= 3, "{cases:?}");
    for dir in cases {
        let name = dir
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        let expected: toml::Table = toml::from_str(
            &std::fs::read_to_string(dir.join("expected.toml")).expect("expected.toml"),
        )
        .expect("toml");
        let got: Value = serde_json::from_str(&compare(&dir, &expected, "json")).expect("json");
        assert_eq!(got["schema_version"], 1);
        let findings = got["findings"].as_array().expect("findings");
        for want in expected
            .get("finding")
            .and_then(|f| f.as_array())
            .into_iter()
            .flatten()
        {
            if !findings.iter().any(|f| finding_matches(f, want)) {
                failures.push(format!(
                    "{name}: no finding like {want:?}; got {findings:#?}"
                ));
            }
        }
        for id in expected
            .get("never")
            .and_then(|n| n.as_array())
            .into_iter()
            .flatten()
        {
            if findings
                .iter()
                .any(|f| f["id"] == id.as_str().expect("an id"))
            {
                failures.push(format!("{name}: {id:?} should not be found"));
            }
        }
        for want in expected
            .get("expect")
            .and_then(|e| e.as_array())
            .into_iter()
            .flatten()
        {
            if let Some(why) = check_expect(&got, want) {
                failures.push(format!("{name}: {why}"));
            }
        }
        // The text and the markdown say every finding's title, in 80 columns for the text.
        let text = compare(&dir, &expected, "text");
        let markdown = compare(&dir, &expected, "markdown");
        // A title longer than its line is wrapped: read the words, not the line breaks.
        let words = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
        let (flat, flat_md) = (words(&text), words(&markdown));
        for f in findings {
            let title = f["title"].as_str().expect("title");
            if !flat.contains(&words(title)) || !flat_md.contains(&words(title)) {
                failures.push(format!(
                    "{name}: {title:?} missing from the text or markdown"
                ));
            }
        }
        if let Some(long) = text.lines().find(|l| l.chars().count() > 80) {
            failures.push(format!("{name}: a text line over 80 columns: {long}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_run_that_cannot_be_read_is_named() {
    let out = Command::new(env!("CARGO_BIN_EXE_steptop"))
        .env_remove("STEPTOP_CONFIG")
        .env("XDG_CONFIG_HOME", "/nonexistent/steptop-tests")
        .args(["compare", "no/such/run.log", "other.log"])
        .output()
        .expect("runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no/such/run.log"), "{err}");
}

/// `report` with two runs' files still reads them as one run, and says they look like two;
/// one run's rank files (each starting at step 1 too) are not taken for separate runs.
#[test]
fn report_points_separate_runs_to_compare() {
    let report = |files: &[PathBuf]| -> Value {
        let out = Command::new(env!("CARGO_BIN_EXE_steptop"))
            .env_remove("STEPTOP_CONFIG")
            .env("XDG_CONFIG_HOME", "/nonexistent/steptop-tests")
            .args(["report", "--format", "json"])
            .args(files)
            .output()
            .expect("runs");
        assert!(out.status.success());
        serde_json::from_slice(&out.stdout).expect("json")
    };
    let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/compare/workers_2_to_12");
    let r = report(&[case.join("workers2.log"), case.join("workers12.log")]);
    let note = r["separate_runs"].as_str().expect("a note");
    assert!(
        note.starts_with("these 2 files each start at step 19"),
        "{note}"
    );
    assert!(note.contains("steptop compare"), "{note}");
    let dir = tempfile::tempdir().expect("tempdir");
    let ranks: Vec<PathBuf> = (0..2)
        .map(|r| {
            let p = dir.path().join(format!("rank{r}.log"));
            let text: String = (1..=20)
                .map(|s| format!("step {s}/20 | loss=1.0 | time=100.0ms\n"))
                .collect();
            std::fs::write(&p, text).expect("log");
            p
        })
        .collect();
    assert_eq!(report(&ranks)["separate_runs"], Value::Null);
    assert_eq!(report(&ranks[..1])["separate_runs"], Value::Null);
}

/// `--baseline` outside the live view: headless status lines carry the ratio, and so does
/// `/metrics`, from the same monitor.
#[test]
fn a_baseline_ratio_reaches_status_lines_and_metrics() {
    use std::sync::Arc;
    use steptop::DiagnoseConfig;
    use steptop::ModelConfig;
    use steptop::Monitor;
    let case = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/compare/batch_4_to_8");
    let cfg = steptop::Config::default_checked();
    let mut m = Monitor::new(ModelConfig::default(), DiagnoseConfig::default());
    m.baseline = Some(
        steptop::testing::read_baseline("bs4".into(), &[case.join("bs4.log")], &cfg)
            .expect("baseline"),
    );
    let bs8 = case.join("bs8.log");
    steptop::replay_messages(&[bs8.as_path()], &Arc::default(), 0, &mut |msg, _| {
        m.apply(msg);
    })
    .expect("replay");
    let status = steptop::testing::Status::of(&m, 0.0);
    let r = status.vs_baseline.expect("a ratio");
    assert!((r - 29.12 / 29.81).abs() < 0.002, "{r}");
    assert!(steptop::testing::status_text(&status).contains("-2% vs baseline"));
    let text = steptop::exposition(&m, &steptop::NodeIdentity::default());
    let line = text
        .lines()
        .find(|l| l.starts_with("steptop_baseline_ratio{figure=\"samples_per_s\"}"))
        .unwrap_or_else(|| panic!("no samples/s ratio in:\n{text}"));
    let v: f64 = line
        .rsplit(' ')
        .next()
        .expect("value")
        .parse()
        .expect("a number");
    assert!((v - r).abs() < 1e-9, "{line}");
    assert!(text.contains("steptop_baseline_ratio{figure=\"iters_per_s\"}"));
}

/// One log that holds several runs (three detectron2 launches appended, each from iteration
/// 0) compares its runs; a log of one run is not enough to compare.
#[test]
fn one_file_with_several_runs_compares_its_runs() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let log = root.join("fixtures/wild/detectron2-voc-c4-6gpu-restarts/log.txt");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_steptop"))
        .args(["compare", "--format", "json"])
        .arg(&log)
        .env_remove("STEPTOP_CONFIG")
        .env("XDG_CONFIG_HOME", "/nonexistent/steptop-tests")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let c: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let runs = c["runs"].as_array().unwrap();
    let labels: Vec<&str> = runs.iter().map(|r| r["label"].as_str().unwrap()).collect();
    assert_eq!(
        labels,
        ["run 1 (line 443)", "run 2 (line 1057)", "run 3 (line 1752)"]
    );
    // Each run is its own: they end where the next starts.
    let last: Vec<u64> = runs
        .iter()
        .map(|r| r["steps"]["last"].as_u64().unwrap())
        .collect();
    assert_eq!(last, [3439, 5039, 10079]);
    let one = root.join("fixtures/wild/mmcv-mmseg-iter/20230120_015042.log");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_steptop"))
        .arg("compare")
        .arg(&one)
        .env_remove("STEPTOP_CONFIG")
        .env("XDG_CONFIG_HOME", "/nonexistent/steptop-tests")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("holds one run"));
}
