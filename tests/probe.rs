//! `steptop probe` end to end: the real binary, its NVML path loading the fake libnvidia-ml
//! (tests/fake/nvml.c) through nvml-wrapper, and its /proc path reading a fake trainer
//! (tests/fake/trainer.c) whose memory the test chose.

mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::Value;
use support::FakeTrainer;

const MIB: u64 = 1024 * 1024;

/// `steptop probe ARGS` with the fake NVML and `scenario`; its stdout lines, `lines` of them
/// (the process is killed after that).
fn probe(args: &[&str], scenario: &str, init: Option<&str>, lines: usize) -> Vec<Value> {
    let env: Vec<(&str, &str)> = init.map(|i| ("FAKE_NVML_INIT", i)).into_iter().collect();
    support::probe(&support::fake_nvml(), args, scenario, &env, lines).readings
}

const TWO_GPUS: &str = "gpus 2
name 0 NVIDIA H100 80GB HBM3
name 1 NVIDIA H100 80GB HBM3
# tick gpu util mem_util used total power limit temp sm sm_max throttle tx rx
row 0 0 35 10 40000 81559 100000 575000 54 1980 1980 0x0 3000 120000
row 0 1 90 40 70000 81559 560000 575000 71 1755 1980 0x4 1000 2000
row 3 0 36 11 40100 81559 101000 575000 55 1980 1980 0x0 3000 120000
fail 2 1 power
lost 4 1
proc 0 4242 5000
";

#[test]
fn gpu_readings_come_through_nvml_with_their_units() {
    let s = &probe(&["--once"], TWO_GPUS, None, 1)[0];
    assert_eq!(s["schema_version"], 1);
    assert_eq!(s["gpu_error"], Value::Null);
    let g0 = &s["gpus"][0];
    assert_eq!(g0["index"], 0);
    assert_eq!(g0["name"], "NVIDIA H100 80GB HBM3");
    assert_eq!(g0["util_pct"], 35);
    assert_eq!(g0["mem_util_pct"], 10);
    assert_eq!(g0["mem_used_bytes"], 40000 * MIB);
    assert_eq!(g0["mem_total_bytes"], 81559 * MIB);
    assert_eq!(g0["power_w"], 100.0);
    assert_eq!(g0["power_limit_w"], 575.0);
    assert_eq!(g0["temp_c"], 54);
    assert_eq!(g0["sm_clock_mhz"], 1980);
    assert_eq!(g0["sm_clock_max_mhz"], 1980);
    assert_eq!(g0["throttle"], serde_json::json!([]));
    assert_eq!(g0["pcie_rx_bytes_per_s"], 120000 * 1024);
    assert_eq!(g0["pcie_tx_bytes_per_s"], 3000 * 1024);
    assert_eq!(
        g0["processes"],
        serde_json::json!([{"pid": 4242, "used_bytes": 5000 * MIB}])
    );
    assert_eq!(g0["errors"], serde_json::json!([]));
    let g1 = &s["gpus"][1];
    assert_eq!(g1["util_pct"], 90);
    assert_eq!(g1["throttle"], serde_json::json!(["sw_power_cap"]));
    assert_eq!(g1["processes"], serde_json::json!([]));
}

#[test]
fn a_failing_call_marks_its_field_and_a_lost_gpu_marks_its_reading() {
    // The first reading only starts the rates; printed reading k is the fake's tick k.
    let got = probe(&["--interval", "20ms"], TWO_GPUS, None, 5);
    let g1 = |k: usize| &got[k - 1]["gpus"][1];
    assert_eq!(g1(1)["power_w"], 560.0);
    assert_eq!(g1(2)["power_w"], Value::Null);
    let errors = g1(2)["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 1);
    assert!(errors[0].as_str().expect("text").starts_with("power: "));
    // Other fields of that reading are still there.
    assert_eq!(g1(2)["util_pct"], 90);
    assert_eq!(g1(3)["power_w"], 560.0);
    for k in [4, 5] {
        let failed = g1(k)["failed"].as_str().expect("failed");
        assert!(failed.contains("fallen off the bus"), "{failed}");
        assert_eq!(g1(k)["util_pct"], Value::Null);
    }
    // The other GPU goes on, with its tick-3 row.
    assert_eq!(got[2]["gpus"][0]["power_w"], 101.0);
    assert_eq!(got[4]["gpus"][0]["util_pct"], 36);
    assert_eq!(got[4]["gpus"][0]["failed"], Value::Null);
}

#[test]
fn gpm_on_a_gpu_without_it_says_so_and_keeps_the_other_readings() {
    let s = &probe(&["--once", "--gpm", "--gpus", "0"], TWO_GPUS, None, 1)[0];
    let g = &s["gpus"][0];
    assert_eq!(g["util_pct"], 35);
    assert_eq!(g["sm_active_pct"], Value::Null);
    assert_eq!(
        g["errors"],
        serde_json::json!(["GPM: not on this GPU (Hopper or newer has it)"])
    );
}

/// One Hopper-like GPU with GPM: activity changes at tick 1 and 3, and the sample call fails
/// at tick 2.
const GPM_GPU: &str = "gpus 1
row 0 0 97 60 70000 81559 640000 700000 66 1980 1980 0x0 1000 2000
gpm 0 0 10 5
gpm 1 0 62.5 40
gpm 3 0 88 71.25
fail 2 0 gpm
";

#[test]
fn gpm_gives_sm_and_tensor_activity_between_two_samples() {
    // The probe prints from its second reading (tick 1) on: the first only starts the rates
    // and GPM's interval. Readings are NVML's minimum GPM interval (100 ms) apart or more.
    let got = probe(&["--gpm", "--interval", "120ms"], GPM_GPU, None, 3);
    let g = |k: usize| &got[k]["gpus"][0];
    assert_eq!(g(0)["sm_active_pct"], 62.5);
    assert_eq!(g(0)["tensor_active_pct"], 40.0);
    assert_eq!(g(0)["errors"], serde_json::json!([]));
    // A failed sample call at tick 2 is noted; the other readings stay.
    assert_eq!(g(1)["sm_active_pct"], Value::Null);
    assert_eq!(g(1)["util_pct"], 97);
    let errors = g(1)["errors"].as_array().expect("errors");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(
        errors[0].as_str().expect("text").starts_with("GPM: "),
        "{errors:?}"
    );
    // Tick 3 compares with the last good sample, tick 1's.
    assert_eq!(g(2)["sm_active_pct"], 88.0);
    assert_eq!(g(2)["tensor_active_pct"], 71.25);
}

#[test]
fn gpus_selects_devices_and_a_wrong_index_says_how_many_there_are() {
    let s = &probe(&["--once", "--gpus", "1"], TWO_GPUS, None, 1)[0];
    let gpus = s["gpus"].as_array().expect("gpus");
    assert_eq!(gpus.len(), 1);
    assert_eq!(gpus[0]["index"], 1);
    let s = &probe(&["--once", "--gpus", "0,5"], TWO_GPUS, None, 1)[0];
    assert_eq!(s["gpus"], serde_json::json!([]));
    assert_eq!(
        s["gpu_error"],
        "there is no GPU 5: this machine has 2 (0 to 1)"
    );
}

#[test]
fn without_nvml_steptop_says_why_in_one_line_and_reads_the_rest() {
    let cases = [
        (
            Some("driver_not_loaded"),
            "gpus 1\nrow 0 0 1 1 1 2 1 2 1 1 1 0 1 1\n",
            "the NVIDIA driver is not loaded",
        ),
        (
            Some("no_permission"),
            "gpus 1\nrow 0 0 1 1 1 2 1 2 1 1 1 0 1 1\n",
            "no permission to talk to the NVIDIA driver",
        ),
        (
            Some("lib_rm_version_mismatch"),
            "gpus 1\nrow 0 0 1 1 1 2 1 2 1 1 1 0 1 1\n",
            "versions differ",
        ),
        (None, "gpus 0\n", "sees no NVIDIA GPU"),
    ];
    for (init, scenario, want) in cases {
        let s = &probe(&["--once"], scenario, init, 1)[0];
        let why = s["gpu_error"].as_str().expect("a reason");
        assert!(why.contains(want), "{init:?}: {why}");
        assert!(!why.contains('\n'));
        assert!(s["host"]["mem_total_bytes"].as_u64().is_some_and(|m| m > 0));
    }
    // No library at all.
    let out = Command::new(env!("CARGO_BIN_EXE_steptop"))
        .env_remove("STEPTOP_CONFIG")
        .env("XDG_CONFIG_HOME", "/nonexistent/steptop-tests")
        .args(["probe", "--once"])
        .env("STEPTOP_NVML_LIB", "/nonexistent/libnvidia-ml.so.1")
        .output()
        .expect("runs");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let gpu_line = text.lines().next().expect("a line");
    assert!(
        gpu_line.starts_with(
            "gpus     none: no NVIDIA driver here: /nonexistent/libnvidia-ml.so.1 cannot be"
        ),
        "{text}"
    );
}

/// The fake trainer's workers, as (pid, reading).
fn workers(t: &Value) -> Vec<(u64, &Value)> {
    let mut w: Vec<(u64, &Value)> = t["workers"]
        .as_array()
        .expect("workers")
        .iter()
        .map(|w| (w["pid"].as_u64().expect("pid"), w))
        .collect();
    w.sort_by_key(|x| x.0);
    w
}

fn check_trainer(t: &Value, fake: &FakeTrainer, shared_mib: u64, private_mib: u64) {
    assert_eq!(t["pid"], fake.pid);
    let got = workers(t);
    let mut want: Vec<u64> = fake.workers.iter().map(|p| u64::from(*p)).collect();
    want.sort_unstable();
    assert_eq!(got.iter().map(|w| w.0).collect::<Vec<_>>(), want);
    let n = want.len() as u64;
    let mut pss_sum = 0;
    for (pid, w) in &got {
        let private = w["private_bytes"].as_u64().expect("private");
        let pss = w["pss_bytes"].as_u64().expect("pss");
        // Its own block, plus a few pages of its stack and libc.
        assert!(private >= private_mib * MIB, "{pid}: private {private}");
        assert!(
            private < (private_mib + 4) * MIB,
            "{pid}: private {private}"
        );
        // Its own block and its share of the parent's block (shared by n + 1 processes).
        let share = shared_mib * MIB / (n + 1);
        assert!(pss >= private_mib * MIB + share, "{pid}: pss {pss}");
        assert!(pss < private_mib * MIB + 2 * share, "{pid}: pss {pss}");
        assert!(["S", "R"].contains(&w["state"].as_str().expect("state")));
        pss_sum += pss;
    }
    assert_eq!(t["workers_pss_bytes"], pss_sum);
    // The parent's own PSS holds its share of the block, not the whole.
    let parent_pss = t["pss_bytes"].as_u64().expect("parent pss");
    assert!(parent_pss < shared_mib * MIB, "parent pss {parent_pss}");
    assert!(t["usable_cores"].as_f64().is_some_and(|c| c >= 1.0));
    assert_eq!(t["unreadable"], serde_json::json!([]));
}

#[test]
fn the_trainer_is_found_as_the_writer_of_its_log_and_its_workers_memory_is_pss() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("train.log");
    let fake = FakeTrainer::spawn(48, 8, 3, Some(&log));
    let s = &probe(
        &["--once", log.to_str().expect("utf-8")],
        "gpus 0\n",
        None,
        1,
    )[0];
    let t = &s["trainer"];
    assert_eq!(
        t["found_by"],
        format!("holds {} open for writing", log.display())
    );
    check_trainer(t, &fake, 48, 8);
    // The text names how the trainer was found, in 80 columns.
    let out = Command::new(env!("CARGO_BIN_EXE_steptop"))
        .env_remove("STEPTOP_CONFIG")
        .env("XDG_CONFIG_HOME", "/nonexistent/steptop-tests")
        .args(["probe", "--once", "--interval", "50ms"])
        .arg(&log)
        .env("STEPTOP_NVML_LIB", "/nonexistent")
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!(
            "trainer  pid {}, holds {}",
            fake.pid,
            log.display()
        )),
        "{text}"
    );
    assert!(text.contains("3 workers, pss "), "{text}");
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
}

/// What `steptop probe --once LOG` says about the trainer.
fn trainer_of(log: &Path) -> Value {
    let s = &probe(
        &["--once", log.to_str().expect("utf-8")],
        "gpus 0\n",
        None,
        1,
    )[0];
    s["trainer"].clone()
}

#[test]
fn a_trainer_piped_into_tee_is_found_behind_tee() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("train.log");
    // `python train.py | tee train.log`: tee is the log's only writer.
    let fake = FakeTrainer::spawn_wrapped(r#""$1" 8 2 2 | tee "$2""#, 2, &log);
    let t = trainer_of(&log);
    assert_eq!(t["pid"], fake.pid, "{t}");
    let found_by = t["found_by"].as_str().expect("found_by");
    assert!(found_by.starts_with("writes into tee (pid "), "{found_by}");
    assert!(
        found_by.ends_with(&format!("which holds {} open for writing", log.display())),
        "{found_by}"
    );
    let workers: Vec<&Value> = t["workers"].as_array().expect("workers").iter().collect();
    assert_eq!(workers.len(), 2, "{t}");
}

#[test]
fn a_trainer_under_a_launcher_is_the_launchers_first_child() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("train.log");
    // `torchrun train.py > train.log`: the launcher holds the log and its child, the rank
    // process, inherits it. `exec -a` gives the launching shell torchrun's name.
    let script = r#"exec 3>>"$2"; exec -a torchrun bash -c '"$0" 8 2 3; exit' "$1""#;
    let fake = FakeTrainer::spawn_wrapped(script, 3, &log);
    let t = trainer_of(&log);
    assert_eq!(t["pid"], fake.pid, "{t}");
    let found_by = t["found_by"].as_str().expect("found_by");
    assert!(
        found_by.starts_with("first process under torchrun (pid "),
        "{found_by}"
    );
    let pids: Vec<u64> = t["workers"]
        .as_array()
        .expect("workers")
        .iter()
        .filter_map(|w| w["pid"].as_u64())
        .collect();
    let want: Vec<u64> = fake.workers.iter().map(|&w| u64::from(w)).collect();
    assert_eq!(pids, want);
}

#[test]
fn the_trainer_named_by_pid_or_found_on_a_gpu() {
    // A CUDA process holds the NVIDIA device nodes open; a file named like one stands in.
    let dir = tempfile::tempdir().expect("tempdir");
    let node = support::fake_gpu_node(dir.path());
    let fake = FakeTrainer::spawn_wrapped(r#"exec 4<"$2"; exec "$1" 16 4 2"#, 2, &node);
    let pid = fake.pid.to_string();
    let s = &probe(&["--once", "--pid", &pid], "gpus 0\n", None, 1)[0];
    assert_eq!(s["trainer"]["found_by"], "--pid");
    check_trainer(&s["trainer"], &fake, 16, 4);
    // No log, no --pid: the GPU's compute process.
    let scenario = format!(
        "gpus 2\nrow 0 0 1 1 1 2 1 2 1 1 1 0 1 1\nrow 0 1 1 1 1 2 1 2 1 1 1 0 1 1\nproc 1 {pid} 300\n"
    );
    let s = &probe(&["--once"], &scenario, None, 1)[0];
    assert_eq!(s["trainer"]["pid"], fake.pid);
    assert_eq!(s["trainer"]["found_by"], "compute process on GPU 1");
    // Only the trainer's GPU is shown once the trainer is known.
    let gpus = s["gpus"].as_array().expect("gpus");
    assert_eq!(gpus.len(), 1);
    assert_eq!(gpus[0]["index"], 1);
}

#[test]
fn with_no_trainer_the_text_says_how_to_name_one() {
    let out = Command::new(env!("CARGO_BIN_EXE_steptop"))
        .env_remove("STEPTOP_CONFIG")
        .env("XDG_CONFIG_HOME", "/nonexistent/steptop-tests")
        .args(["probe", "--once", "--interval", "50ms"])
        .env("STEPTOP_NVML_LIB", Path::new("/nonexistent"))
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("trainer  not found: pass --pid PID"),
        "{text}"
    );
    for line in text.lines() {
        assert!(line.chars().count() <= 80, "{line}");
    }
}

#[test]
fn a_recording_holds_the_logs_lines_history_untimed_and_live_ones_timed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("train.log");
    let rec = dir.path().join("run.jsonl");
    let step = |n: u32| format!("step {n}/100 | loss=0.5 | 6.0 s/it | data_time=0.1ms\n");
    std::fs::write(&log, step(1) + &step(2)).expect("log");
    let mut child = Command::new(env!("CARGO_BIN_EXE_steptop"))
        .env_remove("STEPTOP_CONFIG")
        .env("XDG_CONFIG_HOME", "/nonexistent/steptop-tests")
        .args([
            "probe",
            "--format",
            "json",
            "--interval",
            "20ms",
            "--record",
        ])
        .arg(&rec)
        .arg(&log)
        .env("STEPTOP_NVML_LIB", "/nonexistent")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("steptop runs");
    let mut out = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let mut readings = || out.next().expect("a reading").expect("line");
    readings();
    // Lines written while steptop runs are live: they carry their arrival time.
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(&log)
        .expect("append");
    std::io::Write::write_all(&mut f, (step(3) + &step(4)).as_bytes()).expect("write");
    let lines_of = |text: &str| -> Vec<Value> {
        text.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|e| e["kind"] == "line")
            .collect()
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    let recorded = loop {
        readings();
        let lines = lines_of(&std::fs::read_to_string(&rec).expect("recording"));
        if lines.len() == 4 || std::time::Instant::now() > deadline {
            break lines;
        }
    };
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(recorded.len(), 4, "{recorded:?}");
    for (i, e) in recorded.iter().enumerate() {
        assert_eq!(e["file"], log.display().to_string());
        assert_eq!(e["text"], step(i as u32 + 1).trim_end());
        assert_eq!(e["t"].is_null(), i < 2, "{e}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_steptop"))
        .env_remove("STEPTOP_CONFIG")
        .env("XDG_CONFIG_HOME", "/nonexistent/steptop-tests")
        .args(["report", "--format", "json"])
        .arg(&rec)
        .output()
        .expect("runs");
    let r: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(r["steps"]["count"], 4);
    assert!(r["hardware"]["samples"].as_u64().is_some_and(|n| n >= 2));
}

#[test]
fn a_recording_of_readings_and_lines_is_reported_with_its_hardware() {
    let dir = tempfile::tempdir().expect("tempdir");
    let rec = dir.path().join("run.jsonl");
    let rec_arg = rec.to_str().expect("utf-8");
    // Six readings: the unprinted first (tick 0) and five printed (ticks 1 to 5).
    probe(
        &["--interval", "20ms", "--record", rec_arg],
        TWO_GPUS,
        None,
        5,
    );
    // Log lines recorded beside the samples, as a live run records them.
    let mut text = std::fs::read_to_string(&rec).expect("recording");
    let samples = text.lines().count() - 1;
    assert!(samples >= 6, "{samples} samples recorded");
    for step in 1..=4 {
        text.push_str(&format!(
            "{{\"kind\":\"line\",\"t\":{}.0,\"file\":\"train.log\",\"text\":\"step {step}/100 | loss=0.5 | 6.0 s/it | data_time=0.1ms\"}}\n",
            1000 + 6 * step
        ));
    }
    std::fs::write(&rec, text).expect("write");
    let out = Command::new(env!("CARGO_BIN_EXE_steptop"))
        .env_remove("STEPTOP_CONFIG")
        .env("XDG_CONFIG_HOME", "/nonexistent/steptop-tests")
        .args(["report", "--format", "json", rec_arg])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: Value = serde_json::from_slice(&out.stdout).expect("json");
    let h = &r["hardware"];
    assert_eq!(h["samples"], samples as u64);
    assert_eq!(h["gpus"][0]["name"], "NVIDIA H100 80GB HBM3");
    assert_eq!(h["gpus"][0]["power_limit_w"], 575.0);
    // GPU 0 read 35% on ticks 0 to 2, then 36%; how many readings the recording holds
    // depends on when the probe was stopped, so the mean is checked against that count.
    let n = samples as f64;
    let mean = h["gpus"][0]["util_pct"]["mean"].as_f64().expect("mean");
    assert!(
        (mean - (3.0 * 35.0 + (n - 3.0) * 36.0) / n).abs() < 1e-9,
        "{mean}"
    );
    assert_eq!(h["gpus"][1]["failed"], true);
    // GPU 1 answered on ticks 0 to 3 only.
    assert_eq!(h["gpus"][1]["util_pct"]["mean"], 90.0);
    let lost: Vec<&Value> = r["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["kind"] == "gpu-lost")
        .collect();
    assert_eq!(lost.len(), 1, "{}", r["events"]);
    assert_eq!(r["sources"][0]["path"], "train.log");
    assert_eq!(r["steps"]["count"], 4);
    assert_eq!(r["step_time_ms"]["p50"], 6000.0);
    // The text report shows the hardware too, in 80 columns.
    let out = Command::new(env!("CARGO_BIN_EXE_steptop"))
        .env_remove("STEPTOP_CONFIG")
        .env("XDG_CONFIG_HOME", "/nonexistent/steptop-tests")
        .args(["report", rec_arg])
        .output()
        .expect("runs");
    let text = String::from_utf8_lossy(&out.stdout);
    let gpu0 = text
        .lines()
        .find(|l| l.starts_with("gpu 0 "))
        .expect("a gpu 0 line");
    assert!(gpu0.contains(" W of 575 W, memory p50 "), "{text}");
    assert!(
        text.contains("  hardware  GPU 1 has fallen off the bus"),
        "{text}"
    );
    assert!(text.lines().all(|l| l.chars().count() <= 80), "{text}");
    assert!(
        text.contains("gpu 1") && text.contains("LOST at the end"),
        "{text}"
    );
}

#[test]
fn another_users_trainer_is_read_as_far_as_it_can_be_and_the_rest_is_named() {
    use std::os::unix::fs::MetadataExt;
    use std::os::unix::process::CommandExt;
    // steptop runs as nobody when the tests run as root, else as the tests' own user; the
    // trainer is any process of another user.
    let me = std::fs::metadata("/proc/self").expect("/proc/self").uid();
    let runs_as = if me == 0 { 65534 } else { me };
    let other = std::fs::read_dir("/proc")
        .expect("/proc")
        .flatten()
        .filter_map(|e| {
            let pid: u32 = e.file_name().to_str()?.parse().ok()?;
            let owner = e.metadata().ok()?.uid();
            (owner != runs_as && std::fs::read_to_string(e.path().join("stat")).is_ok())
                .then_some(pid)
        })
        .next()
        .expect("a process of a user other than the one steptop runs as");
    // The built binary may lie under a directory the user nobody cannot enter (a clone in
    // root's home or in a `mktemp -d` directory), so steptop runs as a copy in, and from, a
    // directory every user can enter.
    let (dir, steptop) = steptop_every_user_can_run();
    let mut cmd = Command::new(&steptop);
    cmd.args(["probe", "--once", "--format", "json", "--interval", "50ms"])
        .args(["--pid", &other.to_string()])
        .env("STEPTOP_NVML_LIB", "/nonexistent")
        .current_dir(dir.path());
    if me == 0 {
        cmd.uid(runs_as).gid(runs_as);
    }
    let out = output_of_fresh_binary(&mut cmd).unwrap_or_else(|e| {
        panic!(
            "cannot run {} as uid {runs_as}: {e} (every directory above it must be open to \
             that user)",
            steptop.display()
        )
    });
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s: Value = serde_json::from_slice(&out.stdout).expect("json");
    let t = &s["trainer"];
    // What /proc shows every user is there; its memory is not, and that is said.
    assert_eq!(t["pid"], other);
    assert!(t["threads"].as_u64().is_some_and(|n| n >= 1), "{t}");
    assert_eq!(t["pss_bytes"], Value::Null);
    assert_eq!(
        t["unreadable"][0],
        format!(
            "the memory of process {other} cannot be read (another user's process): run \
             steptop as the user who runs the training"
        ),
        "{t}"
    );
}

/// A fresh directory (mode 0755, under the system's temporary directory) holding a copy of the
/// steptop binary (mode 0755), for a test that runs steptop as another user: that user may not
/// be able to reach the built binary where it lies. The directory goes when the guard drops.
fn steptop_every_user_can_run() -> (tempfile::TempDir, std::path::PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::Builder::new()
        .prefix("steptop-probe-")
        .tempdir_in(std::env::temp_dir())
        .expect("tempdir");
    // tempfile makes the directory 0700, only for its owner.
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))
        .expect("chmod directory");
    let copy = dir.path().join("steptop");
    std::fs::copy(env!("CARGO_BIN_EXE_steptop"), &copy).expect("copy steptop");
    std::fs::set_permissions(&copy, std::fs::Permissions::from_mode(0o755)).expect("chmod steptop");
    (dir, copy)
}

/// `cmd.output()` for a binary this process has just written. A process another test thread
/// forks while the copy is open for writing holds that descriptor until it execs, and running
/// the copy meanwhile fails with ETXTBSY; that passes within moments, so it is tried again.
fn output_of_fresh_binary(cmd: &mut Command) -> std::io::Result<std::process::Output> {
    let mut tries = 0;
    loop {
        match cmd.output() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 100 => {
                tries += 1;
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            result => return result,
        }
    }
}
