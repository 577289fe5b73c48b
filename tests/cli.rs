//! The real binary: exit codes, error messages that name the file or key, the three report
//! forms, and the config fixtures.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The binary, with no config file of the user's in the way.
fn steptop(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_steptop"))
        .args(args)
        .env_remove("STEPTOP_CONFIG")
        .env("XDG_CONFIG_HOME", "/nonexistent/steptop-tests")
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

/// A newcomer's slips: a mistyped subcommand, a mistyped flag, no argument at all.
#[test]
fn the_command_line_forgives_a_newcomer() {
    let o = steptop(&["reprot", "run1.log"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("did you mean `steptop report`?"),
        "{}",
        stderr(&o)
    );
    let o = steptop(&["report", "--fromat", "json", "run1.log"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("a similar argument exists: '--format'"),
        "{}",
        stderr(&o)
    );
    let o = steptop(&[]);
    assert_eq!(o.status.code(), Some(2));
    let help = stderr(&o);
    for command in ["report", "compare", "replay", "run", "probe", "cluster"] {
        assert!(help.contains(&format!("  {command} ")), "{help}");
    }
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
    let cfg = steptop::Config::load(&path).unwrap();
    let defaults = steptop::Config::default_checked();
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

/// The binary with no config of the user's in the way: a config directory of its own.
fn steptop_in(config_home: &std::path::Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_steptop"))
        .args(args)
        .env_remove("STEPTOP_CONFIG")
        .env("XDG_CONFIG_HOME", config_home)
        .output()
        .unwrap()
}

#[test]
fn the_config_file_is_found_in_the_config_directory() {
    let dir = tempfile::tempdir().unwrap();
    let log = fixture("fixtures/configs/in-house.log");
    let out = steptop_in(dir.path(), &["config", "--path"]);
    let expected = dir.path().join("steptop/config.toml");
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        expected.display().to_string()
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("does not exist"));
    // Without a file there, the in-house format is not understood; with the pattern's config
    // copied there, it is, with no --config.
    let before = steptop_in(dir.path(), &["report", "--format", "json", &log]);
    std::fs::create_dir_all(expected.parent().unwrap()).unwrap();
    std::fs::copy(
        root().join("fixtures/configs/valid/in-house-pattern.toml"),
        &expected,
    )
    .unwrap();
    let after = steptop_in(dir.path(), &["report", "--format", "json", &log]);
    assert!(before.status.success() && after.status.success());
    let records = |o: &Output| {
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
        v["steps"]["count"].as_u64().unwrap_or(0)
    };
    assert_eq!((records(&before), records(&after)), (0, 3));
    // A broken one there is refused, naming the file.
    std::fs::write(&expected, "[model]\nwindow-stepz = 3\n").unwrap();
    let bad = steptop_in(dir.path(), &["report", &log]);
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        !bad.status.success() && err.contains("config.toml") && err.contains("window-stepz"),
        "{err}"
    );
}

#[test]
fn config_default_prints_the_shipped_defaults() {
    let dir = tempfile::tempdir().unwrap();
    let out = steptop_in(dir.path(), &["config", "--default"]);
    let shipped =
        std::fs::read_to_string(root().join("fixtures/configs/valid/defaults.toml")).unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), shipped);
}

#[test]
fn the_bash_completion_loads_and_the_man_page_renders() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("steptop.bash");
    let out = steptop_in(dir.path(), &["completions", "bash"]);
    std::fs::write(&script, &out.stdout).unwrap();
    let loaded = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "source '{}' && complete -p steptop",
            script.display()
        ))
        .output()
        .unwrap();
    assert!(
        loaded.status.success(),
        "{}",
        String::from_utf8_lossy(&loaded.stderr)
    );
    assert!(String::from_utf8_lossy(&loaded.stdout).contains("steptop"));
    for shell in ["zsh", "fish"] {
        let out = steptop_in(dir.path(), &["completions", shell]);
        assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).contains("report"));
    }
    let page = dir.path().join("steptop.1");
    std::fs::write(&page, steptop_in(dir.path(), &["man"]).stdout).unwrap();
    let shown = Command::new("man")
        .arg("-l")
        .arg(&page)
        .env("MANWIDTH", "80")
        .env("MANPAGER", "cat")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.status.success(),
        "{}",
        String::from_utf8_lossy(&shown.stderr)
    );
    assert!(
        text.contains("steptop") && text.contains("report") && text.contains("SYNOPSIS"),
        "{text}"
    );
}

#[test]
fn the_version_names_the_commit() {
    let dir = tempfile::tempdir().unwrap();
    let out = steptop_in(dir.path(), &["--version"]);
    let v = String::from_utf8_lossy(&out.stdout);
    assert!(
        v.starts_with(&format!("steptop {} (commit ", env!("CARGO_PKG_VERSION"))),
        "{v}"
    );
}

/// A run that reached its last planned step says it finished rather than an ETA of 0:00:00.
#[test]
fn a_finished_run_says_so_instead_of_an_eta() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("train.log");
    let lines: String = (1..=20)
        .map(|i| format!("step {i}/20 | loss=0.5 | time=0.5s | data_time=1ms\n"))
        .collect();
    std::fs::write(&log, &lines).unwrap();
    let path = log.display().to_string();
    let text = String::from_utf8(steptop(&["report", &path]).stdout).unwrap();
    let eta = text
        .lines()
        .find(|l| l.starts_with("eta"))
        .unwrap_or_default();
    assert!(eta.contains("finished (steps 1..20 of 20)"), "{text}");
    assert!(!text.contains("0:00:00"), "{text}");
    let json: serde_json::Value =
        serde_json::from_slice(&steptop(&["report", "--format", "json", &path]).stdout).unwrap();
    assert_eq!(json["progress"]["finished"], true);
    // Not finished halfway.
    std::fs::write(&log, &lines[..lines.len() / 2]).unwrap();
    let json: serde_json::Value =
        serde_json::from_slice(&steptop(&["report", "--format", "json", &path]).stdout).unwrap();
    assert_eq!(json["progress"]["finished"], false);
    assert!(json["progress"]["eta_s"].as_f64().is_some_and(|e| e > 0.0));
}

/// What steptop skipped is listed by shape, most frequent first, with an example each, in
/// every report form.
#[test]
fn the_report_lists_the_shapes_it_did_not_understand() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("train.log");
    let mut text = String::new();
    for i in 1..=30 {
        text.push_str(&format!("step {i}/30 | loss=0.5 | time=0.5s\n"));
        if i % 10 == 0 {
            text.push_str(&format!("Saving weights to ckpt_{i}.safetensors\n"));
        }
        text.push_str(&format!("grad hist bucket {i} -> {}\n", i * 3));
    }
    text.push_str("Done!\n");
    std::fs::write(&log, &text).unwrap();
    let path = log.display().to_string();
    let json: serde_json::Value =
        serde_json::from_slice(&steptop(&["report", "--format", "json", &path]).stdout).unwrap();
    let shapes = json["unparsed_shapes"].as_array().unwrap();
    assert_eq!(shapes[0]["shape"], "grad hist bucket N -> N");
    assert_eq!(shapes[0]["count"], 30);
    assert_eq!(shapes[0]["line"], 2);
    assert_eq!(shapes[0]["example"], "grad hist bucket 1 -> 3");
    assert_eq!(shapes[1]["shape"], "Saving weights to ckpt_N.safetensors");
    assert_eq!(shapes[1]["count"], 3);
    assert_eq!(shapes[2]["shape"], "Done!");
    for format in ["text", "markdown", "html"] {
        let out =
            String::from_utf8(steptop(&["report", "--format", format, &path]).stdout).unwrap();
        assert!(
            out.contains("grad hist bucket N -&gt; N") || out.contains("grad hist bucket N -> N"),
            "{format}: {out}"
        );
        assert!(out.contains("ckpt_N.safetensors"), "{format}");
    }
}
