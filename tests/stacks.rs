//! The trainer's Python stacks, end to end: the real binary samples a real Python program
//! (tests/fake/pytrainer.py: a hot function in its loop, workers that read and decode) with
//! no change to it, and must name what the program itself measured. Needs `python3` (CI
//! installs it).

mod support;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Runs `cmd` and returns its stdout lines until `done` says enough or `limit` passes.
fn lines_until(mut cmd: Command, limit: Duration, done: impl Fn(&str) -> bool) -> Vec<String> {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("steptop runs");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    let start = Instant::now();
    let mut out = Vec::new();
    while let Some(left) = limit.checked_sub(start.elapsed()) {
        match rx.recv_timeout(left) {
            Ok(line) => {
                let stop = done(&line);
                out.push(line);
                if stop {
                    break;
                }
            }
            Err(_) => break,
        }
    }
    let _ = child.kill();
    let output = child.wait_with_output().expect("wait");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !stderr.contains("py-spy") && !stderr.contains("Failed to"),
        "py-spy's own words reached stderr: {stderr}"
    );
    out
}

#[test]
fn probe_names_the_hot_function_and_the_workers_split() {
    let t = support::PyTrainer::start(&[
        "--workers",
        "2",
        "--hot-ms",
        "60",
        "--wait-ms",
        "15",
        "--read-ms",
        "70",
        "--decode-ms",
        "70",
    ]);
    let cfg = support::fast_stacks_config(t.dir.path());
    let mut cmd = support::steptop();
    cmd.args(["probe", "--format", "json", "--pid", &t.pid(), "--config"])
        .arg(&cfg);
    let lines = lines_until(cmd, Duration::from_secs(40), |l| {
        serde_json::from_str::<Value>(l)
            .is_ok_and(|v| v["stacks"]["workers"]["samples"].as_u64() >= Some(250))
    });
    let last: Value = serde_json::from_str(lines.last().expect("a reading")).expect("json");
    let truth = t.truth();
    let main = &last["stacks"]["main"];
    let running = |f: &Value| f["running"].as_u64().unwrap_or(0);
    let functions = main["functions"].as_array().expect("functions");
    let top = functions
        .iter()
        .max_by_key(|f| running(f))
        .expect("a function");
    assert_eq!(top["function"], "_generate_targets", "{main}");
    assert_eq!(top["file"], "pytrainer.py", "{main}");
    let share = running(top) as f64 / main["samples"].as_f64().expect("samples");
    let measured = truth["main_hot_share"].as_f64().expect("truth");
    eprintln!("main thread in _generate_targets: sampled {share:.3}, measured {measured:.3}");
    assert!(
        (share - measured).abs() < 0.15,
        "sampled {share:.3} against {measured:.3} measured"
    );
    // The workers: reading (waiting in the kernel) against decoding (running), out of the
    // samples in either.
    let places = last["stacks"]["workers"]["places"]
        .as_array()
        .expect("places");
    let place = |name: &str| {
        places
            .iter()
            .find(|p| p[0] == name)
            .and_then(|p| p[1].as_f64())
            .unwrap_or(0.0)
    };
    let (reading, computing) = (place("reading"), place("computing"));
    let sampled = reading / (reading + computing);
    let measured = truth["workers_reading_share"].as_f64().expect("truth");
    eprintln!("workers reading: sampled {sampled:.3}, measured {measured:.3}");
    assert!(
        (sampled - measured).abs() <= 0.10,
        "workers reading {sampled:.3} sampled against {measured:.3} measured"
    );
}

#[test]
fn headless_raises_python_hotspot_with_the_function_as_evidence() {
    let t = support::PyTrainer::start(&["--workers", "1", "--hot-ms", "80", "--wait-ms", "10"]);
    let cfg = support::fast_stacks_config(t.dir.path());
    let mut cmd = support::steptop();
    cmd.args([
        "--headless",
        "--format",
        "json",
        "--pid",
        &t.pid(),
        "--config",
    ])
    .arg(&cfg)
    .arg(t.log());
    let lines = lines_until(cmd, Duration::from_secs(60), |l| {
        l.contains("\"rule\":\"python_hotspot\"")
    });
    let alert: Value = lines
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["rule"] == "python_hotspot")
        .unwrap_or_else(|| panic!("no python_hotspot alert in {lines:#?}"));
    assert!(
        alert["title"]
            .as_str()
            .is_some_and(|t| t.contains("_generate_targets (pytrainer.py:")),
        "{alert}"
    );
    assert!(
        alert["evidence"][0]
            .as_str()
            .is_some_and(|e| e.contains("sampled stacks"))
    );
}

#[test]
fn a_recording_keeps_the_stacks_for_the_report() {
    let t = support::PyTrainer::start(&["--workers", "1", "--hot-ms", "60", "--wait-ms", "10"]);
    let cfg = support::fast_stacks_config(t.dir.path());
    let rec = t.dir.path().join("run.jsonl");
    let mut cmd = support::steptop();
    cmd.args(["probe", "--format", "json", "--pid", &t.pid(), "--config"])
        .arg(&cfg)
        .arg("--record")
        .arg(&rec)
        .arg(t.log());
    lines_until(cmd, Duration::from_secs(30), |l| {
        serde_json::from_str::<Value>(l)
            .is_ok_and(|v| v["stacks"]["main"]["samples"].as_u64() >= Some(40))
    });
    let out = support::steptop()
        .args(["report", "--format", "json"])
        .arg(&rec)
        .output()
        .expect("report");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).expect("json");
    let functions = r["stacks"]["main"]["functions"]
        .as_array()
        .unwrap_or_else(|| panic!("no stacks in the report: {}", r["stacks"]));
    assert!(
        functions
            .iter()
            .any(|f| f["function"] == "_generate_targets"),
        "{functions:?}"
    );
    for format in ["text", "markdown", "html"] {
        let out = support::steptop()
            .args(["report", "--format", format])
            .arg(&rec)
            .output()
            .expect("report");
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("_generate_targets"), "{format}: {text}");
    }
    // compare puts a recorded run's top function beside another run's.
    let out = support::steptop()
        .args(["compare", "--format", "text"])
        .arg(&rec)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/runs/python_hotspot/run.jsonl"))
        .output()
        .expect("compare");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("python stacks")
            && text.matches("_generate_targets (pytrainer.py:").count() == 2,
        "{text}"
    );
}

#[test]
fn a_process_steptop_may_not_read_gets_a_sentence_not_py_spys_error() {
    let t = support::PyTrainer::start(&["--workers", "0"]);
    let is_root = std::fs::read_to_string("/proc/self/status")
        .is_ok_and(|s| s.lines().any(|l| l.starts_with("Uid:\t0\t")));
    // As root, steptop runs as nobody against root's trainer; else against pid 1 (root's).
    let (mut cmd, pid) = if is_root {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(env!("CARGO_BIN_EXE_steptop"))
            .env_remove("STEPTOP_CONFIG")
            .env("XDG_CONFIG_HOME", "/nonexistent/steptop-tests");
        (c, t.pid())
    } else {
        (support::steptop(), "1".to_string())
    };
    cmd.args(["probe", "--once", "--format", "json", "--pid", &pid]);
    let lines = lines_until(cmd, Duration::from_secs(30), |_| true);
    let v: Value = serde_json::from_str(lines.first().unwrap_or_else(|| {
        panic!("no output (as root, setpriv must run steptop as nobody: is target/ readable?)")
    }))
    .expect("json");
    let refused = v["stacks"]["refused"][0].as_str().unwrap_or_default();
    assert!(
        refused.contains("runs as uid 0 and steptop as uid") && refused.contains("cap_sys_ptrace"),
        "{}",
        v["stacks"]
    );
    let _ = std::io::stderr().flush();
}

#[test]
fn each_ranks_main_thread_is_told_apart_under_a_launcher() {
    // A launcher by name (`torchrun`, run as a Python script) starts two ranks: one spends
    // most of its step in the hot function, the other little.
    let dir = tempfile::tempdir().expect("tempdir");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake/pytrainer.py");
    let launcher = dir.path().join("torchrun");
    std::fs::write(
        &launcher,
        "import subprocess, sys, time\n\
         script, d = sys.argv[1], sys.argv[2]\n\
         ranks = [subprocess.Popen([sys.executable, script, '--log', f'{d}/r{i}.log', \
         '--truth', f'{d}/t{i}.json', '--workers', '1', '--hot-ms', hot, '--wait-ms', '40']) \
         for i, hot in enumerate(['80', '5'])]\n\
         print(*[r.pid for r in ranks], flush=True)\n\
         time.sleep(60)\n",
    )
    .expect("launcher");
    let mut child = Command::new("python3")
        .process_group(0)
        .arg(&launcher)
        .arg(&script)
        .arg(dir.path())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3");
    // Kept open to the end: the ranks print on it too.
    let mut out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut pids = String::new();
    out.read_line(&mut pids).expect("pids");
    let pids: Vec<u64> = pids
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect();
    assert_eq!(pids.len(), 2, "{pids:?}");
    let cfg = support::fast_stacks_config(dir.path());
    let mut cmd = support::steptop();
    cmd.args([
        "probe",
        "--format",
        "json",
        "--pid",
        &pids[0].to_string(),
        "--config",
    ])
    .arg(&cfg);
    let lines = lines_until(cmd, Duration::from_secs(40), |l| {
        serde_json::from_str::<Value>(l).is_ok_and(|v| {
            v["stacks"]["ranks"].as_array().is_some_and(|r| {
                r.len() == 2 && r.iter().all(|x| x["samples"].as_u64() >= Some(40))
            })
        })
    });
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .status();
    let _ = child.wait();
    let last: Value = serde_json::from_str(lines.last().expect("a reading")).expect("json");
    let ranks = last["stacks"]["ranks"].as_array().expect("ranks");
    let hot = |pid: u64| {
        let r = ranks.iter().find(|r| r["pid"] == pid).expect("the rank");
        let n = r["samples"].as_f64().expect("samples");
        r["functions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|f| f["function"] == "_generate_targets")
            .and_then(|f| f["running"].as_f64())
            .unwrap_or(0.0)
            / n
    };
    let (busy, light) = (hot(pids[0]), hot(pids[1]));
    eprintln!("rank 0 in _generate_targets {busy:.3}, rank 1 {light:.3}");
    assert!(
        busy > 0.5 && light < 0.3,
        "rank 0 {busy:.3}, rank 1 {light:.3}"
    );
}

/// The main thread's shares of places in a probe's reading, once 60 samples are taken, of
/// a trainer started with `args`.
fn main_places(args: &[&str]) -> Vec<(String, f64)> {
    let t = support::PyTrainer::start(args);
    let cfg = support::fast_stacks_config(t.dir.path());
    let mut cmd = support::steptop();
    cmd.args(["probe", "--format", "json", "--pid", &t.pid(), "--config"])
        .arg(&cfg);
    let lines = lines_until(cmd, Duration::from_secs(30), |l| {
        serde_json::from_str::<Value>(l)
            .is_ok_and(|v| v["stacks"]["main"]["samples"].as_u64() >= Some(60))
    });
    let last: Value = serde_json::from_str(lines.last().expect("a reading")).expect("json");
    last["stacks"]["main"]["places"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| (p[0].as_str().unwrap().to_string(), p[1].as_f64().unwrap()))
        .collect()
}

fn share(places: &[(String, f64)], place: &str) -> f64 {
    places.iter().find(|p| p.0 == place).map_or(0.0, |p| p.1)
}

#[test]
fn a_wait_at_a_line_that_syncs_is_the_gpu() {
    let driver = support::fake_cuda_driver();
    let places = main_places(&[
        "--workers",
        "1",
        "--hot-ms",
        "20",
        "--wait-ms",
        "1",
        "--sync-ms",
        "60",
        "--cuda-driver",
        driver.to_str().unwrap(),
    ]);
    // About 60 ms of each 81 ms step waits at `loss.item()`.
    let sync = share(&places, "gpu_sync");
    assert!(sync > 0.4, "gpu_sync {sync}: {places:?}");
}

/// A process with no GPU driver loaded waits on no GPU, whatever its line reads: the wait at
/// `loss.item()` is a wait in a call, and `heatmaps.tolist()` is its CPU converting numbers
/// (as in a CPU trainer whose pure-Python target builder ends in `.tolist()`).
#[test]
fn without_a_gpu_driver_no_line_is_a_gpu_sync() {
    let places = main_places(&[
        "--workers",
        "1",
        "--hot-ms",
        "10",
        "--wait-ms",
        "1",
        "--sync-ms",
        "30",
        "--tolist",
        "1000000",
    ]);
    assert_eq!(share(&places, "gpu_sync"), 0.0, "{places:?}");
    assert!(share(&places, "blocked") > 0.15, "{places:?}");
    assert!(share(&places, "user_code") > 0.3, "{places:?}");
}
