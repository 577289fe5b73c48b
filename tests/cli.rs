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

/// A timing log as our users' scripts print it: Chinese labels padded with spaces by
/// characters, a child stage indented under its parent.
fn cjk_timing_log() -> String {
    let mut log = String::new();
    for step in 1..=20 {
        let jitter = f64::from(step % 5) * 0.37;
        let attn = 1201.50 + jitter;
        let mlp = 598.49;
        let vrt = attn + mlp;
        let fwd = 1805.28 + jitter;
        log.push_str(&format!(
            "[Step {step}]\n\
             前向传播总耗时    : {fwd:.2}ms (50.0%)\n\
             VRT处理          : {vrt:.2}ms (49.9%)\n\
             \x20 注意力模块      : {attn:.2}ms (33.3%)\n\
             \x20 MLP           : {mlp:.2}ms (16.6%)\n\
             Total           : {:.2}ms\n",
            fwd + vrt + 5.26
        ));
    }
    log
}

/// The rows of the text report's stage table, without its header.
fn stage_rows(text: &str) -> Vec<&str> {
    text.lines()
        .skip_while(|l| !l.starts_with("forward stages, hottest first"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .collect()
}

/// The terminal cells each row takes.
fn cells(rows: &[&str]) -> Vec<usize> {
    rows.iter()
        .map(|r| unicode_width::UnicodeWidthStr::width(*r))
        .collect()
}

#[test]
fn stage_columns_line_up_by_cells_with_chinese_names() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("timing.log");
    std::fs::write(&log, cjk_timing_log()).unwrap();
    let o = steptop(&["report", log.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = String::from_utf8(o.stdout).unwrap();
    let rows = stage_rows(&text);
    assert!(
        rows.iter().any(|l| l.contains("VRT处理")) && rows.iter().any(|l| l.contains("注意力模块")),
        "{text}"
    );
    assert!(rows.iter().any(|l| l.contains("MLP")), "{text}");
    // The share is the last column, so every row ends in the same cell. Padding by chars
    // would end a row one cell further for each CJK character in its name.
    assert!(rows.iter().all(|r| r.ends_with('%')), "{text}");
    assert!(cells(&rows).iter().all(|c| *c == cells(&rows)[0]), "{text}");
}

/// The users' timing log with a stage label carrying a right-to-left override and a zero
/// width space, in a file whose name carries one too.
fn timing_log_with_a_hidden_label(dir: &Path) -> PathBuf {
    let src = std::fs::read_to_string(fixture("fixtures/runs/stage8_third/timing.log")).unwrap();
    let hostile = src.replace("VRT Stage8", "VRT Stage\u{202e}8\u{200b}");
    assert_ne!(src, hostile);
    let path = dir.join("run\u{202e}gol.txt");
    std::fs::write(&path, hostile).unwrap();
    path
}

#[test]
fn invisible_characters_are_escaped_in_text_and_markdown_and_kept_in_json() {
    let dir = tempfile::tempdir().unwrap();
    let log = timing_log_with_a_hidden_label(dir.path());
    let log = log.to_str().unwrap();
    for format in ["text", "markdown"] {
        let o = steptop(&["report", "--format", format, log]);
        assert!(o.status.success(), "{}", stderr(&o));
        let out = String::from_utf8(o.stdout).unwrap();
        assert!(
            !out.contains(['\u{202e}', '\u{200b}']),
            "{format} lets an invisible character through:\n{out}"
        );
        // The stage table, the verdict that quotes the stage, and the file's name.
        let escaped = "VRT Stage\\u{202e}8\\u{200b}";
        assert!(out.matches(escaped).count() >= 2, "{format}:\n{out}");
        assert!(out.contains("run\\u{202e}gol.txt"), "{format}:\n{out}");
        if format == "text" {
            let rows = stage_rows(&out);
            assert!(rows[0].contains(escaped), "{out}");
            assert!(cells(&rows).iter().all(|c| *c == cells(&rows)[0]), "{out}");
        }
    }
    let o = steptop(&["report", "--format", "json", log]);
    let r: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let hidden = "VRT Stage\u{202e}8\u{200b}";
    assert!(
        r["stages"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s["name"] == hidden),
        "{r}"
    );
    // stage_hotspot names the stage that takes a third of the forward.
    assert!(
        r["verdict"]["title"]
            .as_str()
            .is_some_and(|t| t.contains(hidden)),
        "{r}"
    );
    assert!(
        r["sources"][0]["path"]
            .as_str()
            .unwrap()
            .ends_with("run\u{202e}gol.txt")
    );
}
