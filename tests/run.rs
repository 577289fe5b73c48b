//! `steptop run -- CMD...`: the real binary starts a real job, writes its output to the log
//! unchanged, watches it (its stacks too, as its parent) and ends with the job's exit code.
//! Needs `python3` and `sh`.

mod support;

use std::path::Path;

use serde_json::Value;

#[test]
fn a_job_run_through_steptop_is_watched_and_its_output_kept() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = support::fast_stacks_config(dir.path());
    // Raised after 2 s held rather than 10: the job is short, and CI machines are busy.
    let mut text = std::fs::read_to_string(&cfg).expect("config");
    text.push_str("[rules.python_hotspot]\nsustain = 2\n");
    std::fs::write(&cfg, text).expect("config");
    let log = dir.path().join("job.log");
    let truth = dir.path().join("truth.json");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake/pytrainer.py");
    let out = support::steptop()
        .args(["run", "--headless", "--format", "json", "--config"])
        .arg(&cfg)
        .arg("--log")
        .arg(&log)
        .args(["--", "python3", "-u"])
        .arg(&script)
        .args(["--log", "-", "--truth"])
        .arg(&truth)
        .args([
            "--seconds",
            "25",
            "--workers",
            "1",
            "--hot-ms",
            "80",
            "--wait-ms",
            "10",
        ])
        .output()
        .expect("steptop runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "exit {:?}: {stderr}", out.status);
    // The job's own output, unchanged, in the log (and on the terminal, headless).
    let text = std::fs::read_to_string(&log).expect("the log");
    assert!(
        text.starts_with("ready\n"),
        "{}",
        &text[..text.len().min(200)]
    );
    assert!(
        text.contains("step 1/100000 | loss="),
        "no step lines in the log"
    );
    assert!(
        stderr.contains("step 1/100000 | loss="),
        "not echoed: {stderr}"
    );
    let lines: Vec<Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    let alert = lines
        .iter()
        .find(|v| v["rule"] == "python_hotspot")
        .unwrap_or_else(|| panic!("no python_hotspot alert: {lines:#?}"));
    assert!(
        alert["title"]
            .as_str()
            .is_some_and(|t| t.contains("_generate_targets")),
        "{alert}"
    );
    // The summary that ends a headless run came after the job ended.
    assert!(
        lines.iter().any(|v| v["kind"] == "summary"),
        "no summary line: {lines:#?}"
    );
    assert!(truth.exists(), "the job ran to its end");
}

#[test]
fn the_jobs_exit_code_is_steptops() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("job.log");
    let out = support::steptop()
        .args(["run", "--headless", "--no-probe", "--log"])
        .arg(&log)
        .args([
            "--",
            "sh",
            "-c",
            "echo 'step 1/10 | loss=0.5'; echo oops >&2; exit 3",
        ])
        .output()
        .expect("steptop runs");
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("the job exited with code 3"), "{stderr}");
    let text = std::fs::read_to_string(&log).expect("the log");
    assert!(
        text.contains("step 1/10 | loss=0.5\n") && text.contains("oops\n"),
        "{text}"
    );
    let missing = support::steptop()
        .args(["run", "--headless", "--log"])
        .arg(&log)
        .args(["--", "/nonexistent/train"])
        .output()
        .expect("steptop runs");
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("cannot start `/nonexistent/train`"));
}
