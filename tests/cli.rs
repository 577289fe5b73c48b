//! The real binary: exit codes, error messages that name the file or key, the three report
//! forms, and the config fixtures.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn steptop(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_steptop"))
        .args(args)
        .output()
        .unwrap()
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fixture(rel: &str) -> String {
    root().join(rel).display().to_string()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn a_missing_file_is_a_runtime_error_that_names_it() {
    let o = steptop(&["report", "/nonexistent/train.log"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("/nonexistent/train.log"),
        "{}",
        stderr(&o)
    );
    assert!(o.stdout.is_empty());
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(steptop(&["report"]).status.code(), Some(2));
    assert_eq!(
        steptop(&["report", "--format", "yaml", "x.log"])
            .status
            .code(),
        Some(2)
    );
    let o = steptop(&["report", "logs*/rank0.log"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("logs*/rank0.log"));
}

#[test]
fn every_invalid_config_names_its_file_and_problem() {
    let log = fixture("fixtures/configs/in-house.log");
    let dir = root().join("fixtures/configs/invalid");
    let mut n = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let want = text
            .lines()
            .next()
            .and_then(|l| l.strip_prefix("# expect: "))
            .unwrap();
        let o = steptop(&["report", "--config", &path.display().to_string(), &log]);
        assert_eq!(o.status.code(), Some(2), "{}", path.display());
        let err = stderr(&o);
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        assert!(err.contains(&name) && err.contains(want), "{name}: {err}");
        assert!(!err.contains("panicked"), "{err}");
        n += 1;
    }
    assert!(n >= 5);
}

#[test]
fn the_shipped_sample_config_is_the_defaults() {
    let path = root().join("fixtures/configs/valid/defaults.toml");
    let cfg = steptop::config::Config::load(&path).unwrap();
    let defaults = steptop::config::Config::default_checked();
    assert_eq!(cfg.model, defaults.model);
    assert_eq!(cfg.poll_ms, defaults.poll_ms);
    assert_eq!(cfg.diagnose, defaults.diagnose);
}

#[test]
fn user_patterns_read_an_in_house_format() {
    let cfg = fixture("fixtures/configs/valid/in-house-pattern.toml");
    let o = steptop(&[
        "report",
        "--format",
        "json",
        "--config",
        &cfg,
        &fixture("fixtures/configs/in-house.log"),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["steps"]["count"], 3);
    assert_eq!(
        r["step_time_ms"]["p50"]
            .as_f64()
            .map(|v| (v - 250.0).abs() < 3.0),
        Some(true)
    );
    assert_eq!(r["stages"][0]["name"], "encoder");
    assert_eq!(r["sources"][0]["format"], "user");
    // Without the config the same file is not understood.
    let o = steptop(&[
        "report",
        "--format",
        "json",
        &fixture("fixtures/configs/in-house.log"),
    ]);
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["steps"]["count"], 0);
}

#[test]
fn absent_facts_are_null_never_zero() {
    let o = steptop(&[
        "report",
        "--format",
        "json",
        &fixture("fixtures/logs/cache/train.log"),
    ]);
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["schema_version"], 1);
    assert!(r["step_time_ms"].is_null());
    assert!(r["data_share"].is_null());
    assert!(r["loss"]["first"].is_null());
    assert!(r["steps"]["first"].is_null());
    assert_eq!(r["steps"]["count"], 0);
    assert_eq!(r["alerts"], serde_json::json!([]));
    assert!(r["cache"]["hit_rate"].is_number());
}

#[test]
fn text_and_markdown_say_where_the_time_goes() {
    let dir = root().join("fixtures/runs/gpu_compute_not_data");
    let files: Vec<String> = ["rank0.log", "rank1.log", "rank2.log", "timing.log"]
        .iter()
        .map(|f| dir.join(f).display().to_string())
        .collect();
    let mut args = vec!["report"];
    args.extend(files.iter().map(String::as_str));
    let text = String::from_utf8(steptop(&args).stdout).unwrap();
    assert!(text.contains("where a step's time goes"));
    assert!(
        text.lines()
            .any(|l| l.trim_start().starts_with("unlogged") && l.contains("70.0%")),
        "{text}"
    );
    // Fits 80 columns, but for the file paths, which are as long as the user made them.
    assert!(
        text.lines()
            .filter(|l| !l.contains(".log"))
            .all(|l| l.chars().count() <= 80),
        "{text}"
    );
    assert!(!text.contains('\x1b'));
    let mut md_args = vec!["report", "--format", "markdown"];
    md_args.extend(files.iter().map(String::as_str));
    let md = String::from_utf8(steptop(&md_args).stdout).unwrap();
    assert!(
        md.contains("| unlogged (backward, optimizer, sync) |"),
        "{md}"
    );
}

#[test]
fn a_glob_reads_every_rank_in_order() {
    let pattern = format!(
        "{}/rank*.log",
        fixture("fixtures/runs/gpu_compute_not_data")
    );
    let o = steptop(&["report", "--format", "json", &pattern]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let ranks: Vec<_> = r["sources"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["rank"].clone())
        .collect();
    assert_eq!(ranks, vec![0, 1, 2]);
    let nothing = format!(
        "{}/*.nothing",
        Path::new(&pattern).parent().unwrap().display()
    );
    assert_eq!(steptop(&["report", &nothing]).status.code(), Some(1));
}
