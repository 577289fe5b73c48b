//! The real binary, headless: alert changes as text and JSON lines (snapshots of scenario
//! fixtures), replay at max speed against report, `--fail-on` exit codes, the `--exec` hook,
//! a closed pipe, SIGTERM and `--until-exit`. `STEPTOP_BLESS=1` rewrites the snapshots.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The binary, run from the repository root: fixtures are named relative to it, so the
/// paths in the output are the same on every checkout.
mod support;

fn steptop() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_steptop"));
    for var in support::JOB_VARS {
        c.env_remove(var);
    }
    c.env_remove("STEPTOP_CONFIG")
        .env("XDG_CONFIG_HOME", "/nonexistent/steptop-tests");
    c.current_dir(root());
    c
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The files of a scenario, in the order its expected.toml names them, relative to the root.
fn scenario(name: &str) -> Vec<String> {
    let dir = Path::new("fixtures/runs").join(name);
    let expected: toml::Value =
        toml::from_str(&std::fs::read_to_string(root().join(&dir).join("expected.toml")).unwrap())
            .unwrap();
    expected["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| dir.join(a.as_str().unwrap()).display().to_string())
        .collect()
}

fn scenarios() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root().join("fixtures/runs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

fn replay(files: &[String], extra: &[&str]) -> Output {
    steptop()
        .args(["replay", "--speed", "max", "--headless"])
        .args(extra)
        .args(files)
        .output()
        .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("headless output is UTF-8")
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Compares `got` with `tests/snapshots/headless/{name}`, or writes it with STEPTOP_BLESS=1.
fn snapshot(name: &str, got: &str) {
    let path = root().join("tests/snapshots/headless").join(name);
    if std::env::var_os("STEPTOP_BLESS").is_some() {
        std::fs::write(&path, got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}; run with STEPTOP_BLESS=1", path.display()));
    assert_eq!(got, want, "{name} differs; STEPTOP_BLESS=1 rewrites it");
}

#[test]
fn text_lines_of_scenarios_match_their_snapshots() {
    for name in [
        "data_loading_bound",
        "crash_oom",
        "gpu_throttling",
        "amp_nan",
    ] {
        let o = replay(&scenario(name), &["--status-every", "5m"]);
        assert_eq!(o.status.code(), Some(0), "{name}: {}", stderr(&o));
        snapshot(&format!("{name}.txt"), &stdout(&o));
    }
}

#[test]
fn json_lines_of_scenarios_match_their_snapshots_and_parse() {
    for name in ["data_loading_bound", "straggler_rank"] {
        let o = replay(
            &scenario(name),
            &["--format", "json", "--status-every", "5m"],
        );
        assert_eq!(o.status.code(), Some(0), "{name}: {}", stderr(&o));
        let out = stdout(&o);
        for line in out.lines() {
            let v: serde_json::Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{name}: not JSON ({e}): {line}"));
            assert_eq!(v["schema"], 1, "{line}");
            // Typed numbers, never strings with units.
            assert!(v["time"].is_f64() || v["time"].is_u64(), "{line}");
            if v["kind"] == "alert" {
                assert!(v["gain"].is_null() || v["gain"].is_f64(), "{line}");
                assert!(v["step"].is_null() || v["step"].is_u64(), "{line}");
            }
        }
        snapshot(&format!("{name}.jsonl"), &out);
    }
}

#[test]
fn a_replay_at_max_speed_gives_the_same_bytes_every_time() {
    let files = scenario("gpu_throttling");
    let args = ["--format", "json", "--status-every", "30s"];
    let a = replay(&files, &args);
    let b = replay(&files, &args);
    assert!(!a.stdout.is_empty());
    assert_eq!(a.stdout, b.stdout);
}

/// One alert as both sides tell it: rule, final severity, first step, cleared step.
type AlertKey = (String, String, Option<u64>, Option<u64>);

/// The alerts a headless JSON stream raised, rebuilt from its changes.
fn alerts_from_changes(out: &str) -> Vec<AlertKey> {
    let mut alerts: Vec<AlertKey> = Vec::new();
    for line in out.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if v["kind"] != "alert" {
            continue;
        }
        let rule = v["rule"].as_str().unwrap().to_string();
        let sev = v["severity"].as_str().unwrap().to_string();
        let step = v["step"].as_u64();
        match v["change"].as_str().unwrap() {
            "raised" => alerts.push((rule, sev, step, None)),
            change => {
                let open = alerts
                    .iter_mut()
                    .rev()
                    .find(|a| a.0 == rule && a.3.is_none())
                    .unwrap_or_else(|| panic!("{change} of {rule} with no raise: {line}"));
                open.1 = sev;
                if change == "cleared" {
                    // A clear with no step (a hardware-only run) still closes the alert.
                    open.3 = Some(step.unwrap_or(u64::MAX));
                }
            }
        }
    }
    alerts
}

#[test]
fn a_replay_at_max_speed_raises_what_report_raises_for_every_scenario() {
    for name in scenarios() {
        let files = scenario(&name);
        let h = replay(&files, &["--format", "json"]);
        assert_eq!(h.status.code(), Some(0), "{name}: {}", stderr(&h));
        let r = steptop()
            .args(["report", "--format", "json"])
            .args(&files)
            .output()
            .unwrap();
        let report: serde_json::Value = serde_json::from_slice(&r.stdout).unwrap();
        let want: Vec<AlertKey> = report["alerts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| {
                (
                    a["rule"].as_str().unwrap().to_string(),
                    a["severity"].as_str().unwrap().to_string(),
                    a["first_step"].as_u64(),
                    a["cleared_time"]
                        .as_f64()
                        .map(|_| a["cleared_step"].as_u64().unwrap_or(u64::MAX)),
                )
            })
            .collect();
        // The scenarios with nothing to say: a check that the comparison is not empty.
        let quiet = [
            "healthy_run",
            "progress_from_step_prefixes",
            "real_gpu_compute_bound",
        ];
        assert!(
            !want.is_empty() || quiet.contains(&name.as_str()),
            "{name} raised nothing"
        );
        assert_eq!(alerts_from_changes(&stdout(&h)), want, "{name}");
    }
}

#[test]
fn fail_on_sets_the_exit_code() {
    let crash = scenario("crash_oom");
    let healthy = scenario("healthy_run");
    let o = replay(&crash, &["--fail-on", "crit"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("crit crash_event at step 87") && stderr(&o).contains("--fail-on crit"),
        "{}",
        stderr(&o)
    );
    // The lines are all there: a failed check still reports everything.
    assert!(stdout(&o).contains("summary"));
    assert_eq!(
        replay(&crash, &["--fail-on", "warn"]).status.code(),
        Some(1)
    );
    assert_eq!(replay(&crash, &[]).status.code(), Some(0));
    let o = replay(&healthy, &["--fail-on", "warn"]);
    assert_eq!(o.status.code(), Some(0), "{}{}", stdout(&o), stderr(&o));
    // --fail-on without --headless is a usage error, before anything runs.
    let o = steptop()
        .args(["replay", "--fail-on", "warn"])
        .args(&crash)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
}

#[test]
fn the_exec_hook_gets_each_change_in_its_environment() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("hook.log");
    let cmd = format!(
        "printf '%s|%s|%s|%s|%s\\n' \"$STEPTOP_RULE\" \"$STEPTOP_SEVERITY\" \"$STEPTOP_CHANGE\" \
         \"$STEPTOP_TITLE\" \"$STEPTOP_JSON\" >> {}",
        log.display()
    );
    let o = replay(
        &scenario("data_loading_bound"),
        &["--format", "json", "--exec", &cmd],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let all: Vec<String> = stdout(&o)
        .lines()
        .filter(|l| l.contains("\"kind\":\"alert\""))
        .map(String::from)
        .collect();
    // By default an info change (what is fine, a detail) runs no hook.
    let changes: Vec<&String> = all
        .iter()
        .filter(|l| !l.contains("\"severity\":\"info\""))
        .collect();
    assert!(changes.len() < all.len(), "the scenario has an info change");
    let calls = std::fs::read_to_string(&log).unwrap();
    let calls: Vec<&str> = calls.lines().collect();
    assert_eq!(calls.len(), changes.len(), "one hook per change, in order");
    for (call, change) in calls.iter().zip(&changes) {
        let parts: Vec<&str> = call.splitn(5, '|').collect();
        let v: serde_json::Value = serde_json::from_str(change).unwrap();
        assert_eq!(parts[0], v["rule"]);
        assert_eq!(parts[1], v["severity"]);
        assert_eq!(parts[2], v["change"]);
        assert_eq!(parts[3], v["title"]);
        assert_eq!(parts[4], change.as_str(), "STEPTOP_JSON is the JSON line");
    }
    // Asked for, every change runs it.
    std::fs::remove_file(&log).unwrap();
    let o = replay(
        &scenario("data_loading_bound"),
        &["--exec", &cmd, "--exec-min-severity", "info"],
    );
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let calls = std::fs::read_to_string(&log).unwrap();
    assert_eq!(calls.lines().count(), all.len());
}

#[test]
fn a_hook_gets_the_json_line_when_the_lines_are_in_words() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("hook.log");
    let cmd = format!("printf '%s\\n' \"$STEPTOP_JSON\" >> {}", log.display());
    let files = scenario("data_loading_bound");
    let o = replay(&files, &["--exec", &cmd]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(!stdout(&o).contains("\"kind\":\"alert\""), "lines in words");
    let json = stdout(&replay(&files, &["--format", "json"]));
    let changes: Vec<&str> = json
        .lines()
        .filter(|l| l.contains("\"kind\":\"alert\"") && !l.contains("\"severity\":\"info\""))
        .collect();
    assert!(!changes.is_empty());
    let calls = std::fs::read_to_string(&log).unwrap();
    assert_eq!(calls.lines().collect::<Vec<_>>(), changes);
}

#[test]
fn a_failing_or_hanging_hook_is_reported_and_blocks_nothing() {
    let files = scenario("data_loading_bound");
    let plain = stdout(&replay(&files, &[]));
    let o = replay(&files, &["--exec", "echo hook-out; exit 3"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stdout(&o), plain, "hook output stays off stdout");
    let err = stderr(&o);
    assert!(err.contains("hook-out"), "{err}");
    assert!(
        err.contains("--exec hook for data_loading_bound raised: failed (exit status: 3)"),
        "{err}"
    );
    let o = replay(&files, &["--exec", "sleep 30", "--exec-timeout", "300ms"]);
    assert_eq!(o.status.code(), Some(0));
    assert_eq!(stdout(&o), plain);
    let err = stderr(&o);
    assert!(
        err.contains("still running after 0.3s (--exec-timeout); killed"),
        "{err}"
    );
}

#[test]
fn a_closed_pipe_ends_it_quietly() {
    // A long replay with ten status lines a second of run: far more than a pipe holds.
    let mut child = steptop()
        .args([
            "replay",
            "--speed",
            "max",
            "--headless",
            "--status-every",
            "100ms",
        ])
        .args(scenario("gpu_throttling"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    assert!(!first.is_empty());
    // The reader is gone: the next writes fail with EPIPE.
    let status = child.wait().unwrap();
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert_eq!(status.code(), Some(0), "{err}");
    assert!(err.is_empty(), "nothing on stderr: {err}");
}

/// A run that flaps between data-bound and healthy every three steps, with no sustain, dwell
/// or cool-down: thousands of alerts and changes, ten times past what the engine keeps.
#[test]
fn a_long_flapping_run_keeps_alerting_to_the_end_and_its_summary_is_the_last_state() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("train.log");
    // 60,003 steps: the last three are data-bound.
    let steps = 60_003;
    let text: String = (1..=steps)
        .map(|s| {
            let data = if ((s - 1) / 3) % 2 == 0 { 40.0 } else { 0.2 };
            format!("step {s}/{steps} | loss=1.0 | data_time={data}ms | time=100.0ms\n")
        })
        .collect();
    std::fs::write(&log, text).unwrap();
    let config = dir.path().join("flap.toml");
    std::fs::write(
        &config,
        "[diagnose]\nwindow-steps = 2\nwarmup-steps = 0\n\n\
         [rules.data_loading_bound]\nsustain = 1\ndwell = 1\ncooldown = 0\n",
    )
    .unwrap();
    let out = replay(
        &[log.to_str().unwrap().to_string()],
        &["--format", "json", "--config", config.to_str().unwrap()],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let lines: Vec<serde_json::Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON"))
        .collect();
    let changes: Vec<&serde_json::Value> = lines.iter().filter(|l| l["kind"] == "alert").collect();
    let raised = changes.iter().filter(|c| c["change"] == "raised").count();
    assert!(raised >= 10 * 500, "{raised} raised");
    assert!(changes.len() >= 10 * 2000, "{} changes", changes.len());
    // Changes come to the very end of the input.
    let last = changes.last().expect("changes");
    assert!(last["step"].as_u64().unwrap() >= steps - 3, "{last}");
    let summary = lines.last().expect("a summary");
    assert_eq!(summary["kind"], "summary");
    assert_eq!(summary["raised"], raised);
    // It ends data-bound: the summary says so, as the last change did.
    assert_eq!(last["change"], "raised");
    assert_eq!(summary["active"], serde_json::json!(["data_loading_bound"]));
    assert_eq!(summary["verdict"], "data_loading_bound");
}

/// A log with a step line a second, written by this test.
fn steps(from: u64, to: u64) -> String {
    (from..=to)
        .map(|s| {
            format!(
                "2026-01-05 10:00:{:02} | step {s}/100 | loss=1.0 | time=500.0ms\n",
                s % 60
            )
        })
        .collect()
}

fn wait_for(path: &Path, what: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let s = std::fs::read_to_string(path).unwrap_or_default();
        if s.contains(what) {
            return s;
        }
        assert!(Instant::now() < deadline, "no {what:?} in:\n{s}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn following_it_stops_cleanly_on_sigterm_and_when_the_trainer_exits() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("train.log");
    std::fs::write(&log, steps(1, 5)).unwrap();
    // SIGTERM: a last summary line, exit 0, no control sequences.
    let out = dir.path().join("out.txt");
    let mut child = steptop()
        .args(["--headless", "--no-probe", "--status-every", "200ms"])
        .arg(&log)
        .stdout(std::fs::File::create(&out).unwrap())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_for(&out, "status  step 5/100");
    Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0));
    let text = std::fs::read_to_string(&out).unwrap();
    assert!(
        text.contains("summary  stopped by SIGTERM: steps 1..5"),
        "{text}"
    );
    assert!(!text.contains('\x1b'), "no control sequences: {text:?}");

    // --until-exit: the trainer exits, its last lines are read, then the summary.
    let mut trainer = Command::new("sleep").arg("1").spawn().unwrap();
    let o = steptop()
        .args(["--headless", "--no-probe", "--until-exit"])
        .arg(trainer.id().to_string())
        .arg(&log)
        .output()
        .unwrap();
    trainer.wait().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let text = stdout(&o);
    assert!(
        text.contains(&format!(
            "summary  trainer {} exited: steps 1..5",
            trainer.id()
        )),
        "{text}"
    );
    let o = steptop()
        .args(["--headless", "--until-exit", "999999999"])
        .arg(&log)
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--until-exit 999999999: no such process"));
}

#[test]
fn log_text_with_escape_sequences_never_reaches_the_output_raw() {
    let dir = tempfile::tempdir().unwrap();
    let src = std::fs::read_to_string(root().join("fixtures/runs/crash_oom/train.log")).unwrap();
    let hostile = src.replace(
        "torch.OutOfMemoryError: CUDA",
        "torch.OutOfMemoryError: \x1b]52;c;ZXZpbA==\x07\x1b[2J\x1b]0;pwned\x07CUDA",
    );
    assert_ne!(src, hostile);
    let log = dir.path().join("train.log");
    std::fs::write(&log, hostile).unwrap();
    for format in ["text", "json"] {
        let o = replay(&[log.display().to_string()], &["--format", format]);
        let out = stdout(&o);
        assert!(out.contains("crash_event"), "{out}");
        assert!(
            !out.bytes().any(|b| b == 0x1b || b == 0x07),
            "{format}: {out:?}"
        );
    }
}

#[test]
fn yearless_timestamps_take_the_year_the_file_was_written() {
    // detectron2's `[MM/DD hh:mm:ss ...]` headers, then a NaN loss so that an alert carries a
    // time; the file was last written on 2025-06-01, so January's lines are 2025's.
    let dir = tempfile::tempdir().unwrap();
    let mut text =
        std::fs::read_to_string(root().join("fixtures/logs/detectron2/train.log")).unwrap();
    text.push_str("[01/07 07:05:40 d2.utils.events]:  iter: 129939  total_loss: nan  lr: 0.0025\n");
    let log = dir.path().join("train.log");
    std::fs::write(&log, text).unwrap();
    let written = std::time::UNIX_EPOCH + Duration::from_secs(1_748_736_000);
    std::fs::File::options()
        .write(true)
        .open(&log)
        .unwrap()
        .set_modified(written)
        .unwrap();
    let in_2025 = |t: f64| (1_735_689_600.0..1_767_225_600.0).contains(&t);

    let o = steptop()
        .args(["report", "--format", "json"])
        .arg(&log)
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let first = report["alerts"][0]["first_time"].as_f64().unwrap();
    assert!(in_2025(first), "{first}");

    let file = [log.display().to_string()];
    let out = stdout(&replay(&file, &[]));
    assert!(
        out.contains("2025-01-07 07:05:40  step 129939  RAISED"),
        "{out}"
    );
    for line in stdout(&replay(&file, &["--format", "json"])).lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let t = v["time"].as_f64().unwrap();
        assert!(in_2025(t), "{line}");
    }
}

#[test]
fn invisible_characters_in_a_stage_name_are_escaped_in_text_and_kept_in_json() {
    let dir = tempfile::tempdir().unwrap();
    let src =
        std::fs::read_to_string(root().join("fixtures/runs/stage8_third/timing.log")).unwrap();
    let log = dir.path().join("timing.log");
    std::fs::write(
        &log,
        src.replace("VRT Stage8", "VRT Stage\u{202e}8\u{200b}"),
    )
    .unwrap();
    let files = [log.display().to_string()];
    let text = stdout(&replay(&files, &[]));
    assert!(!text.contains(['\u{202e}', '\u{200b}']), "{text:?}");
    assert!(
        text.lines()
            .any(|l| l.contains("RAISED")
                && l.contains("stage_hotspot: VRT Stage\\u{202e}8\\u{200b}")),
        "{text}"
    );
    let json = stdout(&replay(&files, &["--format", "json"]));
    let raised: serde_json::Value = json
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|v| v["rule"] == "stage_hotspot")
        .expect("stage_hotspot raised");
    let title = raised["title"].as_str().unwrap();
    assert!(title.contains("VRT Stage\u{202e}8\u{200b}"), "{title:?}");
}

#[test]
fn inside_a_slurm_job_each_json_line_names_the_job_node_and_rank() {
    let mut trainer = Command::new("sleep").arg("1").spawn().unwrap();
    let o = steptop()
        .env("SLURM_JOB_ID", "99")
        .env("SLURM_JOB_NAME", "vit-l")
        .env("SLURM_NODEID", "2")
        .env("SLURM_PROCID", "2")
        .env("SLURM_NTASKS", "4")
        .args([
            "--headless",
            "--no-probe",
            "--format",
            "json",
            "--until-exit",
        ])
        .arg(trainer.id().to_string())
        .arg("fixtures/runs/data_bound_two_workers/train.log")
        .output()
        .unwrap();
    trainer.wait().unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let lines: Vec<serde_json::Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let alerts: Vec<&serde_json::Value> = lines.iter().filter(|l| l["kind"] == "alert").collect();
    assert!(!alerts.is_empty(), "{lines:?}");
    for a in alerts {
        assert_eq!(
            a["source"]["job"],
            serde_json::json!({"id": "99", "name": "vit-l", "node": 2, "rank": 2, "world_size": 4}),
            "{a}"
        );
    }
}

/// Stdout of a headless steptop, line by line as it prints them, and the process (killed on
/// drop).
struct Following {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
}

impl Following {
    fn start(args: &[&str]) -> Following {
        let mut child = steptop()
            .args(args)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { return };
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        Following { child, lines }
    }

    /// Headless JSON lines of `log` read with the probes off (a login node reading shared
    /// storage), with the stall's thresholds in seconds (`quick_stall_config` in `dir`).
    fn logs_only(dir: &Path, log: &str) -> Following {
        let config = quick_stall_config(dir);
        Following::start(&[
            "--headless",
            "--no-probe",
            "--format",
            "json",
            "--config",
            config.to_str().unwrap(),
            log,
        ])
    }

    /// The first JSON line for which `done` holds, within `secs` seconds.
    fn until(
        &self,
        secs: u64,
        what: &str,
        done: impl Fn(&serde_json::Value) -> bool,
    ) -> serde_json::Value {
        let deadline = Instant::now() + Duration::from_secs(secs);
        let mut seen = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    let v: serde_json::Value = serde_json::from_str(&line).expect("JSON lines");
                    if done(&v) {
                        return v;
                    }
                    seen.push(line);
                }
                Err(_) => panic!("never {what} in {secs} s; printed:\n{}", seen.join("\n")),
            }
        }
    }
}

impl Drop for Following {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A stall a few seconds long, so that the tests do not wait a minute for one: the rule's
/// clock is what they test, not its default thresholds.
fn quick_stall_config(dir: &Path) -> PathBuf {
    let config = dir.join("stall.toml");
    std::fs::write(
        &config,
        "[rules.stalled]\nfactor = 2\nmin-seconds = 3\nsustain = 1\ndwell = 0\ncooldown = 0\n",
    )
    .unwrap();
    config
}

fn stalled_change(v: &serde_json::Value, change: &str) -> bool {
    v["kind"] == "alert" && v["rule"] == "stalled" && v["change"] == change
}

/// Reading logs only (`--no-probe`, a login node reading shared storage), a log that stops is
/// still a stall: time passes by the live loop's ticks, not only the probes' samples. The run
/// here hung before steptop started; then one step comes live and the log stops again.
#[test]
fn with_the_probes_off_a_log_that_stops_raises_stalled() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("train.log");
    let step = |s: u64| format!("step {s}/1000 | loss=2.5 | time=200.0ms\n");
    std::fs::write(&log, (1..=60).map(step).collect::<String>()).unwrap();
    let run = Following::logs_only(dir.path(), log.to_str().unwrap());
    let raised = run.until(30, "a stall raised", |v| stalled_change(v, "raised"));
    assert_eq!(raised["step"], 60, "{raised}");
    let title = raised["title"].as_str().unwrap();
    assert!(
        title.starts_with("no new step since steptop started"),
        "{raised}"
    );
    let evidence = raised["evidence"].to_string();
    assert!(
        evidence.contains("the last step, 60, was in the log when steptop started"),
        "{raised}"
    );
    assert!(
        evidence.contains("whether the trainer is alive is not known"),
        "{raised}"
    );

    // One step live: the stall is over; then none again: a stall of a live run.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&log)
        .unwrap()
        .write_all(step(61).as_bytes())
        .unwrap();
    run.until(20, "the stall cleared", |v| stalled_change(v, "cleared"));
    let again = run.until(30, "a stall raised again", |v| stalled_change(v, "raised"));
    assert_eq!(again["step"], 61, "{again}");
    assert!(
        again["title"]
            .as_str()
            .unwrap()
            .starts_with("no new step for"),
        "{again}"
    );
}

/// A real Megatron run that hung at iteration 344 on 40 ranks (fixtures/wild), watched months
/// later: not a live run pretending to be hung, but one that ended long before steptop started.
#[test]
fn a_log_that_ended_long_ago_is_said_to_be_one() {
    let dir = tempfile::tempdir().unwrap();
    let run = Following::logs_only(
        dir.path(),
        "fixtures/wild/megatron-gh200-40rank-hang/stdout.log",
    );
    let raised = run.until(30, "the stall raised", |v| stalled_change(v, "raised"));
    assert_eq!(raised["severity"], "info", "{raised}");
    assert_eq!(raised["step"], 344, "{raised}");
    let title = raised["title"].as_str().unwrap();
    assert!(title.starts_with("a run that ended long ago"), "{raised}");
    assert!(
        raised["evidence"]
            .to_string()
            .contains("the log's last step was at 2026-04-15 11:31:50"),
        "{raised}"
    );
}
