//! The metric files real writers wrote (fixtures/metrics: each run's script, what it wrote,
//! its stdout, and `truth.json`, what the script itself measured): `steptop report` on the
//! run directory gives the steps, the step time (from the event files' wall times, or the
//! figures the file holds) and the last loss the script logged. Writers that log a window's
//! mean (Hugging Face every 5 steps, mmengine every 10) are held to the mean step time; those
//! that log every step to the median as well. Then torn and corrupted event files.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `steptop report --format json` of `inputs`: the report and what it said on stderr.
fn report(inputs: &[&Path]) -> (Value, String) {
    let out = support::steptop()
        .args(["report", "--format", "json"])
        .args(inputs)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    (serde_json::from_slice(&out.stdout).expect("json"), err)
}

fn truth(run: &str) -> Value {
    let text =
        std::fs::read_to_string(root().join("fixtures/metrics").join(run).join("truth.json"));
    serde_json::from_str(&text.unwrap()).unwrap()
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn mean(v: &[f64]) -> f64 {
    v.iter().sum::<f64>() / v.len() as f64
}

/// `got` within `share` of `want`.
fn near(got: f64, want: f64, share: f64) -> bool {
    (got - want).abs() <= share * want.abs()
}

struct Case {
    run: &'static str,
    format: &'static str,
    /// Steps as the file numbers them: Lightning's CSV counts from 0.
    last_step: u64,
    /// The writer logs every step: its median step time is the script's too.
    every_step: bool,
}

#[test]
fn a_run_directory_gives_the_steps_step_time_and_loss_the_script_measured() {
    for c in [
        Case {
            run: "summarywriter",
            format: "tensorboard",
            last_step: 200,
            every_step: true,
        },
        Case {
            run: "tensorboardx",
            format: "tensorboard",
            last_step: 100,
            every_step: true,
        },
        Case {
            run: "hf_trainer",
            format: "tensorboard",
            last_step: 60,
            every_step: false,
        },
        Case {
            run: "mmengine",
            format: "metrics-json",
            last_step: 100,
            every_step: false,
        },
    ] {
        let t = truth(c.run);
        let dir = root().join("fixtures/metrics").join(c.run);
        let (r, err) = report(&[&dir]);
        let run = c.run;
        assert!(
            err.contains("reading") && err.contains("steps from the"),
            "{run}: {err}"
        );
        let logged = t["steps_logged"].as_array().unwrap().len() as u64;
        assert_eq!(r["steps"]["count"], logged, "{run}");
        assert_eq!(r["steps"]["last"], c.last_step, "{run}");
        let loss = r["loss"]["last"].as_f64().unwrap();
        // Scalars are stored as 32-bit floats.
        assert!(
            near(loss, t["final_loss"].as_f64().unwrap(), 1e-6),
            "{run}: {loss}"
        );
        let times = floats(&t["step_time_s"]);
        let ms = &r["step_time_ms"];
        let got_mean = ms["mean"].as_f64().unwrap() / 1000.0;
        assert!(
            near(got_mean, mean(&times), 0.05),
            "{run}: mean {got_mean} vs {}",
            mean(&times)
        );
        if c.every_step {
            let got = ms["p50"].as_f64().unwrap() / 1000.0;
            assert!(near(got, median(times.clone()), 0.05), "{run}: p50 {got}");
        }
        let formats: Vec<&str> = r["sources"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|s| s["format"].as_str())
            .collect();
        assert!(formats.contains(&c.format), "{run}: {formats:?}");
    }
}

#[test]
fn lightnings_rich_bar_leaves_the_steps_and_loss_to_metrics_csv() {
    let t = truth("lightning_csv");
    let dir = root().join("fixtures/metrics/lightning_csv");
    // Its stdout holds the bar's last frame only (`Epoch 37/-2 ... 4/4`): one step at most.
    let (alone, _) = report(&[&dir.join("stdout.log")]);
    assert!(
        alone["steps"]["count"].as_u64().unwrap() <= 1,
        "{}",
        alone["steps"]
    );
    let (r, err) = report(&[&dir]);
    assert!(err.contains("csv_logs/version_0/metrics.csv"), "{err}");
    assert!(
        err.contains("hparams.yaml (not a log or a metric file)"),
        "{err}"
    );
    assert_eq!(r["steps"]["count"], t["optimizer_steps"]);
    let steps = t["steps_logged"].as_array().unwrap();
    assert_eq!(r["steps"]["first"], steps[0]);
    assert_eq!(r["steps"]["last"], *steps.last().unwrap());
    let loss = r["loss"]["last"].as_f64().unwrap();
    assert!(
        near(loss, t["final_loss"].as_f64().unwrap(), 1e-6),
        "{loss}"
    );
    // The CSV has no times: no step time is claimed.
    assert!(r["step_time_ms"].is_null());
}

#[test]
fn a_torn_or_corrupted_event_file_names_the_record_and_reads_the_rest() {
    let dir = root().join("fixtures/metrics/damaged");
    let notes: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("NOTES.json")).unwrap()).unwrap();
    let source = truth("summarywriter");
    for (name, says) in [
        ("events.out.tfevents.1795652626.torn", "not whole"),
        (
            "events.out.tfevents.1795652626.badcrc",
            "fails its checksum",
        ),
    ] {
        let (r, _) = report(&[&dir.join(name)]);
        let src = &r["sources"][0];
        let offset = notes[name]
            .get("last_record_offset")
            .or_else(|| notes[name].get("record_offset"))
            .unwrap();
        let problem = src["problems"][0].as_str().unwrap();
        assert!(
            problem.starts_with(&format!("byte {offset}: ")),
            "{name}: {problem}"
        );
        assert!(problem.contains(says), "{name}: {problem}");
        // Only the lost record's value is missing: every step of the file is still read,
        // and the loss each logged is the script's.
        assert_eq!(r["steps"]["count"], 120, "{name}");
        let losses = floats(&source["losses"]);
        let last = r["loss"]["last"].as_f64().unwrap();
        assert!(near(last, losses[119], 1e-6), "{name}: {last}");
    }
}

/// The records of a TFRecord file, each with its framing, in order.
fn records(bytes: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut at = 0;
    while at + 12 <= bytes.len() {
        let len = u64::from_le_bytes(bytes[at..at + 8].try_into().unwrap()) as usize;
        let end = at + 12 + len + 4;
        out.push(&bytes[at..end]);
        at = end;
    }
    out
}

#[test]
fn a_summarywriter_still_writing_is_followed_and_a_half_written_record_waits() {
    use std::io::Write;
    use std::time::{Duration, Instant};
    let real = std::fs::read(
        root()
            .join("fixtures/metrics/summarywriter/runs/events.out.tfevents.1795652626.vm.25314.0"),
    )
    .unwrap();
    let recs = records(&real);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("events.out.tfevents.1795652626.vm.25314.0");
    // The first half of the run is there when steptop starts.
    let half = recs.len() / 2;
    std::fs::write(&path, recs[..half].concat()).unwrap();
    let steptop = support::HeadlessLines::follow(&path);
    let (_, first) = steptop.step_at_least(1);
    assert!(first <= 60, "only what was written: {first}");
    // The rest, a record at a time; one record written in two parts, 600 ms apart.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .unwrap();
    let torn = half + (recs.len() - half) / 2;
    for (i, r) in recs.iter().enumerate().skip(half) {
        if i == torn {
            f.write_all(&r[..r.len() / 2]).unwrap();
            f.flush().unwrap();
            std::thread::sleep(Duration::from_millis(600));
            f.write_all(&r[r.len() / 2..]).unwrap();
        } else {
            f.write_all(r).unwrap();
        }
        f.flush().unwrap();
        std::thread::sleep(Duration::from_millis(5));
    }
    let written = Instant::now();
    let (seen, last) = steptop.step_at_least(120);
    assert_eq!(last, 120);
    eprintln!(
        "the last step showed {} ms after it was written",
        seen.duration_since(written).as_millis()
    );
    // Every status step stays within what was written: no value from a half record.
    for v in steptop.rest() {
        if let Some(s) = v["step"].as_u64() {
            assert!(s <= 120, "{v}");
        }
    }
}

/// The summary line of a headless steptop following `dir` until a short-lived trainer exits,
/// and what it said on stderr.
fn followed_summary(dir: &Path) -> (Value, String) {
    let mut trainer = Command::new("sleep").arg("2").spawn().unwrap();
    let out = support::steptop()
        .args([
            "--headless",
            "--no-probe",
            "--format",
            "json",
            "--until-exit",
        ])
        .arg(trainer.id().to_string())
        .arg(dir)
        .output()
        .unwrap();
    trainer.wait().unwrap();
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    let summary = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|v| v["kind"] == "summary")
        .expect("a summary line");
    (summary, err)
}

#[test]
fn the_live_modes_take_a_run_directory_its_metric_files_giving_the_steps() {
    let (summary, err) = followed_summary(&root().join("fixtures/metrics/hf_trainer"));
    assert!(err.contains("steps from the tensorboard files"), "{err}");
    let t = truth("hf_trainer");
    let logged = t["steps_logged"].as_array().unwrap();
    assert_eq!(summary["first_step"], logged[0], "{summary}");
    assert_eq!(summary["step"], *logged.last().unwrap(), "{summary}");
    // A restart's second event file is read after the first, as one run.
    let (summary, _) = followed_summary(&root().join("fixtures/metrics/summarywriter"));
    let t = truth("summarywriter");
    assert_eq!(summary["first_step"], 1, "{summary}");
    assert_eq!(summary["step"], t["optimizer_steps"], "{summary}");
}

#[test]
fn the_configs_tags_name_what_a_column_is() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("metrics.csv"),
        "step,objective,secs\n1,3.5,0.2\n2,3.25,0.2\n",
    )
    .unwrap();
    let config = dir.path().join("steptop.toml");
    std::fs::write(
        &config,
        "[tags]\nobjective = \"loss\"\nsecs = \"step-time-s\"\n",
    )
    .unwrap();
    let out = support::steptop()
        .args(["report", "--format", "json", "--config"])
        .arg(&config)
        .arg(dir.path().join("metrics.csv"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(r["loss"]["last"], 3.25);
    assert_eq!(r["step_time_ms"]["p50"], 200.0);
    // Without them the columns mean nothing to steptop: the rows are still the steps the run
    // logged, with no loss and no time.
    let (plain, _) = report(&[&dir.path().join("metrics.csv")]);
    assert_eq!(plain["steps"]["count"], 2);
    assert_eq!(plain["loss"]["last"], Value::Null, "{}", plain["loss"]);
    assert_eq!(plain["step_time_ms"]["p50"], Value::Null);
}

#[test]
fn the_live_view_says_a_damaged_record_and_reads_on() {
    let dir = root().join("fixtures/metrics/damaged");
    let script = format!(
        "{} --no-probe {}; sleep 30",
        env!("CARGO_BIN_EXE_steptop"),
        dir.join("events.out.tfevents.1795652626.badcrc").display()
    );
    let t = support::tmux::Tmux::start("damaged", 120, 12, &dir, &script);
    let s = t.wait("the damaged record in the header", |s| {
        s.contains("damaged: byte 14793: a record whose data fails its checksum")
    });
    assert!(s.contains("step 120"), "the rest is read:\n{s}");
    t.keys(&["q"]);
}

/// A W&B run folder as W&B 0.31 wrote it offline (fixtures/metrics/wandb_offline, its
/// `latest-run` and `debug*.log` links kept): the run file gives the steps, the console is
/// read as a log, and W&B's own diagnostics logs and records are left out, each named with
/// why; a binary file steptop does not read, given by name, is refused naming it.
#[test]
fn a_trackers_binary_files_and_own_logs_are_never_read_as_logs() {
    let dir = root().join("fixtures/metrics/wandb_offline");
    let (r, err) = report(&[dir.as_path()]);
    assert_eq!(r["steps"]["last"], 150, "{err}");
    let sources: Vec<&str> = r["sources"]
        .as_array()
        .expect("sources")
        .iter()
        .map(|s| s["path"].as_str().expect("path"))
        .collect();
    assert_eq!(sources.len(), 3, "{sources:?}");
    assert!(sources[0].ends_with("run-tnmi5iwj.wandb"), "{sources:?}");
    assert!(
        sources.iter().any(|s| s.ends_with("files/output.log")),
        "{sources:?}"
    );
    assert!(
        err.contains("wandb/debug-internal.log (W&B's own diagnostics log)"),
        "{err}"
    );
    assert!(
        err.contains("files/requirements.txt (the tracker's record of the run"),
        "{err}"
    );
    // `latest-run` links to the run's folder: read once, not twice.
    assert!(!err.contains("latest-run"), "{err}");

    // A SQLite file that is not an MLflow store (Trackio's, say).
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = tmp.path().join("project.db");
    let mut bytes = b"SQLite format 3\0".to_vec();
    bytes.extend((0..4096u32).map(|i| (i % 7) as u8));
    std::fs::write(&store, &bytes).expect("write");
    let out = support::steptop()
        .args(["report"])
        .arg(&store)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("project.db' is a SQLite database"), "{err}");
}
