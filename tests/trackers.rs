//! The runs trackers keep (W&B's `run-<id>.wandb`, MLflow's file and SQLite stores, SwanLab's
//! `run-<id>.swanlab`, ClearML's offline runs, Trackio's stores), read as
//! steptop reads them: every GPU series equal, value for value and time for time, to what the
//! independent reader gives (`tests/wild/metric_truth.py`: W&B's own protobufs, plain files
//! and sqlite3; its `gpu_series` in each tracker case's truth.json); a tracker's GPU figures
//! judged by the rules as NVML's are; a run file read as it is written.

mod support;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;
use std::sync::Arc;

use steptop::{Feed, Msg, Sample};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The tracker cases of the wild corpus: their folders.
fn tracker_cases() -> Vec<PathBuf> {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(root().join("fixtures/wild"))
        .expect("fixtures/wild")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            std::fs::read_to_string(p.join("case.toml"))
                .is_ok_and(|t| t.contains("batch = \"trackers\""))
        })
        .collect();
    cases.sort();
    cases
}

/// The run's file as steptop picks it from the case's folder: the latest W&B run file, or
/// the MLflow store or run.
fn run_file(case: &Path) -> PathBuf {
    let mut found = Vec::new();
    let mut stack = vec![case.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).expect("read a case folder") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| x == "wandb" || x == "db")
                || p.file_name().is_some_and(|n| n == "meta.yaml")
                    && p.with_file_name("metrics").is_dir()
            {
                found.push(p);
            }
        }
    }
    found.sort();
    let wandb: Vec<&PathBuf> = found
        .iter()
        .filter(|p| p.extension().is_some_and(|x| x == "wandb"))
        .collect();
    if let Some(latest) = wandb
        .iter()
        .max_by_key(|p| p.parent().map(Path::to_path_buf))
    {
        return (*latest).clone();
    }
    // MLflow: the file store's latest-started run, or the SQLite store.
    let start = |meta: &PathBuf| -> i64 {
        std::fs::read_to_string(meta)
            .ok()
            .and_then(|t| {
                t.lines()
                    .find_map(|l| l.strip_prefix("start_time:"))
                    .and_then(|v| v.trim().parse().ok())
            })
            .unwrap_or(0)
    };
    found
        .iter()
        .max_by_key(|p| (start(p), (*p).clone()))
        .cloned()
        .expect("a run file in the case")
}

/// The samples reading `path` sends, in order.
fn samples_of(path: &Path) -> Vec<Sample> {
    let mut feed = Feed::new(0, "run", Arc::default());
    let mut out = Vec::new();
    steptop::read_file(path, &mut feed, &mut |msg| {
        if let Msg::Sample(s) = msg {
            out.push(*s);
        }
    })
    .expect("read the run file");
    out
}

/// One series as the tracker names it, from the samples: (time, value) per sample that has it.
fn series(samples: &[Sample], tracker_name: &str) -> Option<Vec<(f64, f64)>> {
    let (gpu, figure) = name_parts(tracker_name)?;
    let mut out = Vec::new();
    for s in samples {
        let Some(g) = s.gpus.iter().find(|g| g.index == gpu) else {
            continue;
        };
        let v = match figure.as_str() {
            // W&B
            "gpu" => g.util_pct.map(f64::from),
            "memory" => g.mem_util_pct.map(f64::from),
            "memoryAllocatedBytes" => g.mem_used_bytes.map(|b| b as f64),
            "powerWatts" => g.power_w,
            "enforcedPowerLimitWatts" => g.power_limit_w,
            "temp" => g.temp_c.map(f64::from),
            "smClock" => g.sm_clock_mhz.map(f64::from),
            // MLflow
            "utilization_percentage" => g.util_pct.map(f64::from),
            "power_usage_watts" => g.power_w,
            "memory_usage_megabytes" => g.mem_used_bytes.map(|b| b as f64 / 1024.0 / 1024.0),
            _ => return None,
        };
        if let Some(v) = v {
            out.push((s.time, v));
        }
    }
    Some(out)
}

/// `gpu.0.powerWatts` or `system/gpu_0_power_usage_watts`: the GPU and the figure.
fn name_parts(name: &str) -> Option<(u32, String)> {
    if let Some(rest) = name.strip_prefix("gpu.") {
        let (i, f) = rest.split_once('.')?;
        return Some((i.parse().ok()?, f.to_string()));
    }
    let rest = name.rsplit('/').next()?.strip_prefix("gpu_")?;
    let (i, f) = rest.split_once('_')?;
    Some((i.parse().ok()?, f.to_string()))
}

/// Whole-number figures (utilization, temperature, clocks) are held as whole numbers: the
/// tracker's value rounded.
fn same(name: &str, got: f64, want: f64) -> bool {
    let whole = ["gpu", "memory", "temp", "smClock", "utilization_percentage"]
        .iter()
        .any(|f| name.ends_with(&format!(".{f}")) || name.ends_with(&format!("_{f}")));
    if whole {
        got == want.round()
    } else if name.ends_with("memoryAllocatedBytes") {
        got == want.trunc()
    } else {
        (got - want).abs() <= 1e-9 * want.abs().max(1.0)
    }
}

#[test]
fn every_gpu_series_is_the_independent_readers() {
    let mut compared = BTreeMap::new();
    for case in tracker_cases() {
        let truth: Value = serde_json::from_str(
            &std::fs::read_to_string(case.join("truth.json")).expect("truth.json"),
        )
        .expect("truth json");
        let Some(want_all) = truth["gpu_series"].as_object().filter(|s| !s.is_empty()) else {
            continue;
        };
        let samples = samples_of(&run_file(&case));
        let name = case
            .file_name()
            .expect("name")
            .to_string_lossy()
            .into_owned();
        for (key, want) in want_all {
            let want: Vec<(f64, f64)> = want
                .as_array()
                .expect("a series")
                .iter()
                .map(|p| (p[0].as_f64().expect("time"), p[1].as_f64().expect("value")))
                .collect();
            // A series steptop has no figure for (MLflow's memory share) is not compared.
            let Some(got) = series(&samples, key) else {
                continue;
            };
            assert_eq!(got.len(), want.len(), "{name}: {key}: points");
            for ((gt, gv), (wt, wv)) in got.iter().zip(&want) {
                assert!((gt - wt).abs() < 1e-6, "{name}: {key}: time {gt} vs {wt}");
                assert!(same(key, *gv, *wv), "{name}: {key} at {wt}: {gv} vs {wv}");
            }
            *compared.entry(name.clone()).or_insert(0) += want.len();
        }
    }
    // The cases with GPU series: a series left out by mistake would pass silently.
    assert!(compared.len() >= 8, "cases compared: {compared:?}");
}

/// `steptop report --format json` of `input`, and what it said on stderr.
fn report(input: &Path) -> (Value, String) {
    let out = support::steptop()
        .args(["report", "--format", "json"])
        .arg(input)
        .output()
        .expect("run steptop");
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{err}");
    (serde_json::from_slice(&out.stdout).expect("json"), err)
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Runs written here by the real libraries (fixtures/metrics: the script, what the library
/// wrote, and `truth.json`, what the script measured): the steps, the last loss exactly, and
/// the median step time within 5% (the tracker's own timestamps include its logging call,
/// which the script's timer leaves out).
#[test]
fn runs_the_trackers_wrote_here_give_what_their_scripts_measured() {
    // The run, its format, its last step, and whether the tracker holds the run's config.
    for (run, format, last_step, config) in [
        ("wandb_offline", "wandb", 150, true),
        ("swanlab", "swanlab", 150, true),
        ("mlflow_filestore", "mlflow", 19, true),
        ("mlflow_sqlite", "mlflow", 19, true),
        ("clearml_offline", "clearml", 150, false),
    ] {
        let dir = root().join("fixtures/metrics").join(run);
        let t: Value = serde_json::from_str(
            &std::fs::read_to_string(dir.join("truth.json")).expect("truth.json"),
        )
        .expect("truth");
        let (r, err) = report(&dir);
        assert!(
            err.contains(&format!("steps from the {format} files")),
            "{run}: {err}"
        );
        // A figure per step, or [step, figure] pairs.
        let figures = |key: &str| -> Vec<f64> {
            t[key]
                .as_array()
                .expect(key)
                .iter()
                .map(|v| v.as_f64().or_else(|| v[1].as_f64()).expect("a figure"))
                .collect()
        };
        let losses = figures("losses");
        assert_eq!(r["steps"]["count"], losses.len(), "{run}");
        assert_eq!(r["steps"]["last"], last_step, "{run}");
        assert_eq!(r["loss"]["last"], losses[losses.len() - 1], "{run}");
        let times = figures("step_time_s");
        let got = r["step_time_ms"]["p50"].as_f64().expect("p50") / 1000.0;
        let want = median(times);
        assert!(
            (got - want).abs() <= 0.05 * want,
            "{run}: p50 {got} vs {want}"
        );
        // The batch size the script gave the tracker's config.
        if config {
            assert_eq!(r["config"]["batch_size"], 32, "{run}: {}", r["config"]);
        }
    }
}

/// A W&B run killed mid-write: its file ends partway through a record (W&B writes whole
/// blocks). What W&B's own reader finds on disk is read, and the torn tail is said.
#[test]
fn a_killed_wandb_run_is_read_to_its_last_whole_record() {
    let dir = root().join("fixtures/metrics/wandb_unfinished");
    let reader: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.join("reader.json")).expect("reader.json"),
    )
    .expect("reader json");
    let (r, _) = report(&dir);
    assert_eq!(
        r["steps"]["count"], reader["history_rows"],
        "{}",
        r["steps"]
    );
    let problems: Vec<String> = r["sources"]
        .as_array()
        .expect("sources")
        .iter()
        .flat_map(|s| s["problems"].as_array().cloned().unwrap_or_default())
        .map(|p| p.as_str().unwrap_or_default().to_string())
        .collect();
    let torn = format!(
        "byte {}: the last record is not whole",
        reader["last_whole_record_end"]
    );
    assert!(
        problems.iter().any(|p| p.contains(&torn)),
        "{problems:?} should say {torn}"
    );
}

/// An MLflow file store written as MLflow writes one: a step's time and data wait and its loss
/// every step (0.5 s apart), and the GPU's utilization as `log_system_metrics` logs it, every
/// 10 s.
fn mlflow_run(dir: &Path, data_share: f64, gpu_util: f64) -> PathBuf {
    let run = dir.join("mlruns/0/0123456789abcdef0123456789abcdef");
    std::fs::create_dir_all(run.join("metrics/train")).expect("metrics/");
    std::fs::create_dir_all(run.join("metrics/system")).expect("metrics/system/");
    std::fs::write(
        run.join("meta.yaml"),
        "run_id: 0123456789abcdef0123456789abcdef\nstart_time: 1700000000000\nstatus: 3\n",
    )
    .expect("meta.yaml");
    let start = 1_700_000_000_000i64;
    let (mut time, mut data, mut loss, mut util) =
        (String::new(), String::new(), String::new(), String::new());
    for step in 0..300i64 {
        let ts = start + step * 500;
        time.push_str(&format!("{ts} 0.5 {step}\n"));
        data.push_str(&format!("{ts} {} {step}\n", 0.5 * data_share));
        loss.push_str(&format!("{ts} {} {step}\n", 3.0 - step as f64 / 200.0));
    }
    for round in 0..15i64 {
        util.push_str(&format!(
            "{} {gpu_util} {round}\n",
            start + round * 10_000 + 250
        ));
    }
    std::fs::write(run.join("metrics/train/time"), time).expect("time");
    std::fs::write(run.join("metrics/train/data_time"), data).expect("data_time");
    std::fs::write(run.join("metrics/train/loss"), loss).expect("loss");
    std::fs::write(
        run.join("metrics/system/gpu_0_utilization_percentage"),
        util,
    )
    .expect("util");
    dir.join("mlruns")
}

fn alerts(r: &Value, rule: &str) -> Vec<String> {
    ["alerts", "alerts_retired"]
        .iter()
        .flat_map(|k| r[*k].as_array().cloned().unwrap_or_default())
        .filter(|a| a["rule"] == rule)
        .map(|a| a["title"].as_str().unwrap_or_default().to_string())
        .collect()
}

/// The GPU figures a tracker recorded are judged as NVML's are: a data-bound run's verdict
/// says how busy the GPU was, and a run whose GPU stays busy is not called data-bound however
/// long its logged data wait (the seeds' misdiagnosis: a timer that holds the GPU's work).
#[test]
fn a_trackers_gpu_figures_decide_whether_the_data_is_the_limit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data_bound = mlflow_run(&dir.path().join("data"), 0.45, 38.0);
    let (r, _) = report(&data_bound);
    assert_eq!(
        alerts(&r, "data_loading_bound"),
        vec!["data loading takes 45% of each step while the GPU is 38% busy"],
        "{}",
        r["alerts"]
    );
    assert_eq!(
        r["verdict"]["rule"], "data_loading_bound",
        "{}",
        r["verdict"]
    );

    let gpu_bound = mlflow_run(&dir.path().join("gpu"), 0.45, 99.0);
    let (r, _) = report(&gpu_bound);
    assert!(
        alerts(&r, "data_loading_bound").is_empty(),
        "{}",
        r["alerts"]
    );
    assert_ne!(
        r["verdict"]["rule"], "data_loading_bound",
        "{}",
        r["verdict"]
    );
}

/// A W&B run file written as a run writes it, followed live: what is there at the start is
/// read, the rest shows as it is written, a record whose fragments are not all written waits
/// for them, and the last step shows once written (the time it took is printed).
#[test]
fn a_wandb_run_file_being_written_is_followed() {
    use std::io::Write;
    use std::time::{Duration, Instant};
    let src = root().join(
        "fixtures/metrics/wandb_offline/wandb/offline-run-20261129_151919-tnmi5iwj/run-tnmi5iwj.wandb",
    );
    let bytes = std::fs::read(&src).expect("the run file");
    let dir = tempfile::tempdir().expect("tempdir");
    let run = dir
        .path()
        .join("wandb/offline-run-20261129_151919-tnmi5iwj");
    std::fs::create_dir_all(&run).expect("run folder");
    let path = run.join("run-tnmi5iwj.wandb");
    // A third is there when steptop starts, cut inside a record.
    let start = bytes.len() / 3;
    std::fs::write(&path, &bytes[..start]).expect("write");
    let steptop = support::HeadlessLines::follow(&path);
    let (_, first) = steptop.step_at_least(1);
    assert!(first < 150, "only what was written: {first}");
    // The rest in pieces that cut records and fragments anywhere.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&path)
        .expect("append");
    for piece in bytes[start..].chunks(700) {
        f.write_all(piece).expect("write");
        f.flush().expect("flush");
        std::thread::sleep(Duration::from_millis(5));
    }
    let written = Instant::now();
    let (seen, last) = steptop.step_at_least(150);
    assert_eq!(last, 150);
    eprintln!(
        "the last step showed {} ms after it was written",
        seen.duration_since(written).as_millis()
    );
}

/// Trackio stores a batch of rows at once and times them by the batch: its rows give the
/// steps, the loss and the config, and no step time (none is invented from the batches).
#[test]
fn a_trackio_store_gives_its_steps_and_loss_and_no_step_time() {
    let dir = root().join("fixtures/metrics/trackio");
    let t: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("truth.json")).expect("truth.json"))
            .expect("truth");
    let (r, err) = report(&dir);
    assert!(err.contains("steps from the trackio files"), "{err}");
    assert_eq!(r["steps"]["count"], t["steps"]);
    assert_eq!(r["steps"]["last"], t["steps"]);
    assert_eq!(r["loss"]["last"], t["final_loss"]);
    assert_eq!(r["config"]["batch_size"], 32, "{}", r["config"]);
    assert_eq!(
        r["step_time_ms"]["p50"],
        Value::Null,
        "{}",
        r["step_time_ms"]
    );
}

/// W&B's host memory becomes the host's readings: the report's peak of used memory is the one
/// the independent reader's series give (the total follows from the share in use and what
/// is available: used = available / (1 - share) - available), on every W&B case that has both.
#[test]
fn wandbs_host_memory_is_the_hosts() {
    let mut compared = 0;
    for case in tracker_cases() {
        let truth: Value = serde_json::from_str(
            &std::fs::read_to_string(case.join("truth.json")).expect("truth.json"),
        )
        .expect("truth json");
        let host = &truth["host_series"];
        let share = host
            .get("memory_percent")
            .or_else(|| host.get("memory"))
            .and_then(Value::as_array);
        let (Some(share), Some(available)) = (share, host["proc.memory.availableMB"].as_array())
        else {
            continue;
        };
        let peak = share
            .iter()
            .zip(available)
            .map(|(s, a)| {
                let (s, a) = (s[1].as_f64().expect("share"), a[1].as_f64().expect("MB"));
                let a = a * 1024.0 * 1024.0;
                (a / (1.0 - s / 100.0) - a).trunc()
            })
            .fold(f64::MIN, f64::max);
        let (r, _) = report(&case);
        let got = r["hardware"]["host_mem_peak_bytes"]
            .as_f64()
            .unwrap_or_else(|| panic!("{case:?}: {}", r["hardware"]));
        assert!((got - peak).abs() <= 1.0, "{case:?}: {got} vs {peak}");
        compared += 1;
    }
    assert!(compared >= 8, "W&B cases with host memory: {compared}");
}
