//! GPU readings as real drivers give them: GPUs a container hides, drivers before 510 and
//! their older calls, the 535 drivers' 32-byte process entries, reserved memory, MIG, process
//! ids of another PID namespace, CUDA's numbering, slow PCIe counters, GPM's minimum interval,
//! and a trainer's sibling ranks. Each runs the real binary against the fake NVML
//! (tests/fake/nvml.c) built as the driver generation the case needs.

mod support;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use support::FakeTrainer;

const MIB: u64 = 1024 * 1024;

/// `steptop probe --format json ARGS` against the fake library `lib` with `scenario` and
/// `env`; its first `lines` readings, and the fake's call log as (function, device).
fn probe(
    lib: &Path,
    args: &[&str],
    scenario: &str,
    env: &[(&str, &str)],
    lines: usize,
) -> (Vec<Value>, Vec<(String, String)>) {
    let run = support::probe(lib, args, scenario, env, lines);
    let calls = run
        .calls
        .lines()
        .filter_map(|l| {
            let mut w = l.split_whitespace();
            Some((w.next()?.to_string(), w.next()?.to_string()))
        })
        .collect();
    (run.readings, calls)
}

/// How often each function was called.
fn counts(calls: &[(String, String)]) -> BTreeMap<&str, usize> {
    let mut c = BTreeMap::new();
    for (f, _) in calls {
        *c.entry(f.as_str()).or_default() += 1;
    }
    c
}

/// A row: util 90, mem 30000 of 81559 MiB, 500 of 700 W, 60 C, SM 1755 of 1980 MHz.
fn row(tick: u32, gpu: u32) -> String {
    format!("row {tick} {gpu} 90 40 30000 81559 500000 700000 60 1755 1980 0x0 1000 2000\n")
}

fn gpus(count: u32) -> String {
    let mut s = format!("gpus {count}\n");
    for g in 0..count {
        s += &row(0, g);
    }
    s
}

fn indices(s: &Value) -> Vec<String> {
    s["gpus"]
        .as_array()
        .expect("gpus")
        .iter()
        .map(|g| match &g["mig"] {
            Value::Object(m) => format!("{}:{}", g["index"], m["slice"]),
            _ => g["index"].to_string(),
        })
        .collect()
}

/// Each reading's (NVML index, CUDA number), in the order read.
fn cuda_numbers(s: &Value) -> Vec<(u64, u64)> {
    s["gpus"]
        .as_array()
        .expect("gpus")
        .iter()
        .map(|g| {
            let n = |k: &str| g[k].as_u64().unwrap_or_else(|| panic!("{k} in {g}"));
            (n("index"), n("cuda_index"))
        })
        .collect()
}

#[test]
fn a_hidden_gpu_is_a_note_and_the_others_are_read() {
    let scenario = gpus(3) + "hidden 1\n";
    let (got, _) = probe(&support::fake_nvml(), &["--once"], &scenario, &[], 1);
    let s = &got[0];
    assert_eq!(s["gpu_error"], Value::Null, "{s}");
    assert_eq!(indices(s), ["0", "2"]);
    assert_eq!(s["gpus"][1]["util_pct"], 90);
    let notes = s["gpu_notes"].as_array().expect("notes");
    assert_eq!(notes.len(), 1, "{notes:?}");
    let note = notes[0].as_str().expect("text");
    assert!(
        note.starts_with("GPU 1 is hidden from this process"),
        "{note}"
    );
    // Named by index, it says why it cannot be read.
    let (got, _) = probe(
        &support::fake_nvml(),
        &["--once", "--gpus", "1"],
        &scenario,
        &[],
        1,
    );
    let e = got[0]["gpu_error"].as_str().expect("error");
    assert!(e.starts_with("GPU 1 is hidden from this process"), "{e}");
    // Only when no GPU can be opened is there no GPU reading at all.
    let scenario = gpus(2) + "hidden 0\nhidden 1\n";
    let (got, _) = probe(&support::fake_nvml(), &["--once"], &scenario, &[], 1);
    let e = got[0]["gpu_error"].as_str().expect("error");
    assert!(
        e.starts_with("NVML counts 2 GPUs but can open none: GPU 0 is hidden"),
        "{e}"
    );
}

/// Two processes on GPU 0, 800 MiB of reserved memory on GPU 1.
fn procs_and_reserved() -> String {
    gpus(2) + "proc 0 4242 5000\nproc 0 4243 700\nreserved 1 800\n"
}

#[test]
fn drivers_before_510_give_memory_and_processes_through_their_older_calls() {
    for (driver, processes_call) in [
        (470, "nvmlDeviceGetComputeRunningProcesses_v2"),
        (418, "nvmlDeviceGetComputeRunningProcesses"),
    ] {
        let lib = support::fake_nvml_driver(driver);
        let (got, calls) = probe(&lib, &["--once"], &procs_and_reserved(), &[], 1);
        let s = &got[0];
        for g in s["gpus"].as_array().expect("gpus") {
            assert_eq!(g["errors"], json!([]), "driver {driver}: {g}");
        }
        let g0 = &s["gpus"][0];
        assert_eq!(g0["mem_used_bytes"], 30000 * MIB);
        assert_eq!(
            g0["processes"],
            json!([{"pid": 4242, "used_bytes": 5000 * MIB}, {"pid": 4243, "used_bytes": 700 * MIB}]),
            "driver {driver}"
        );
        // The first memory call counts reserved memory as used and does not say how much.
        let g1 = &s["gpus"][1];
        assert_eq!(g1["mem_used_bytes"], 30800 * MIB, "driver {driver}");
        assert_eq!(g1["mem_reserved_bytes"], Value::Null, "driver {driver}");
        let c = counts(&calls);
        assert!(c.contains_key(processes_call), "driver {driver}: {c:?}");
        assert!(
            c.contains_key("nvmlDeviceGetMemoryInfo"),
            "driver {driver}: {c:?}"
        );
        assert!(
            c.contains_key("nvmlDeviceGetCurrentClocksThrottleReasons"),
            "driver {driver}: {c:?}"
        );
        assert!(
            c.contains_key("nvmlDeviceGetTemperature"),
            "driver {driver}: {c:?}"
        );
    }
}

#[test]
fn new_drivers_are_asked_through_their_current_calls_and_reserved_memory_counts_as_used() {
    let (got, calls) = probe(
        &support::fake_nvml(),
        &["--once"],
        &procs_and_reserved(),
        &[],
        1,
    );
    let g1 = &got[0]["gpus"][1];
    assert_eq!(g1["mem_used_bytes"], 30800 * MIB);
    assert_eq!(g1["mem_reserved_bytes"], 800 * MIB);
    assert_eq!(g1["errors"], json!([]));
    let c = counts(&calls);
    for call in [
        "nvmlDeviceGetMemoryInfo_v2",
        "nvmlDeviceGetComputeRunningProcesses_v3",
        "nvmlDeviceGetCurrentClocksEventReasons",
        "nvmlDeviceGetTemperatureV",
    ] {
        assert!(c.contains_key(call), "{call}: {c:?}");
    }
    for deprecated in [
        "nvmlDeviceGetCurrentClocksThrottleReasons",
        "nvmlDeviceGetTemperature",
    ] {
        assert!(!c.contains_key(deprecated), "{deprecated}: {c:?}");
    }
}

#[test]
fn thirty_two_byte_process_entries_of_early_535_drivers_are_read_at_their_stride() {
    let mut scenario = gpus(1) + "procstride 32\n";
    for (i, pid) in [4242, 4243, 4244, 4245, 4246].iter().enumerate() {
        scenario += &format!("proc 0 {pid} {}\n", 1000 * (i + 1));
    }
    let lib = support::fake_nvml_driver(535);
    let (got, _) = probe(&lib, &["--once"], &scenario, &[], 1);
    let procs: Vec<(u64, u64)> = got[0]["gpus"][0]["processes"]
        .as_array()
        .expect("processes")
        .iter()
        .map(|p| {
            (
                p["pid"].as_u64().unwrap(),
                p["used_bytes"].as_u64().unwrap(),
            )
        })
        .collect();
    let want: Vec<(u64, u64)> = (0..5).map(|i| (4242 + i, 1000 * (i + 1) * MIB)).collect();
    assert_eq!(procs, want);
}

#[test]
fn mig_devices_are_listed_under_their_gpu_and_no_rule_reads_the_parents_power() {
    let scenario = gpus(2)
        + "name 0 NVIDIA A100-SXM4-80GB\n\
           mig 0 9000 19968 NVIDIA A100-SXM4-80GB MIG 2g.20gb\n\
           mig 0 100 19968\n\
           migproc 0 0 4242 8900\n";
    let (got, calls) = probe(&support::fake_nvml(), &["--once"], &scenario, &[], 1);
    let s = &got[0];
    assert_eq!(indices(s), ["0", "0:0", "0:1", "1"]);
    let parent = &s["gpus"][0];
    assert_eq!(parent["mig"], "parent");
    // No utilization in MIG mode, and that is no error; memory is per MIG device.
    assert_eq!(parent["util_pct"], Value::Null);
    assert_eq!(parent["mem_used_bytes"], Value::Null);
    assert_eq!(parent["errors"], json!([]), "{parent}");
    assert_eq!(parent["power_w"], 500.0);
    let slice = &s["gpus"][1];
    assert_eq!(slice["name"], "NVIDIA A100-SXM4-80GB MIG 2g.20gb");
    assert_eq!(slice["mem_used_bytes"], 9000 * MIB);
    assert_eq!(slice["mem_total_bytes"], 19968 * MIB);
    assert_eq!(
        slice["processes"],
        json!([{"pid": 4242, "used_bytes": 8900 * MIB}])
    );
    assert_eq!(slice["power_w"], Value::Null);
    assert_eq!(slice["errors"], json!([]), "{slice}");
    assert_eq!(s["gpus"][2]["processes"], json!([]));
    // The parent's memory and processes, which need privileges in MIG mode, are not asked.
    assert!(
        !calls
            .iter()
            .any(|(f, d)| d == "0" && f.starts_with("nvmlDeviceGetMemoryInfo")),
        "{calls:?}"
    );
}

#[test]
fn the_clock_a_gpu_is_set_to_run_at_is_read_where_it_has_one() {
    // A data-centre GPU has an applications clock; a GeForce card answers "not supported",
    // which is no error.
    let scenario = gpus(2) + "appclock 0 1410\nname 1 NVIDIA GeForce RTX 5090\n";
    let (got, _) = probe(&support::fake_nvml(), &["--once"], &scenario, &[], 1);
    let s = &got[0];
    assert_eq!(s["gpus"][0]["sm_clock_app_mhz"], 1410);
    assert_eq!(s["gpus"][1]["sm_clock_app_mhz"], Value::Null);
    assert_eq!(s["gpus"][1]["errors"], json!([]));
}

#[test]
fn process_ids_of_another_pid_namespace_are_said_and_not_chased() {
    // pid_max is at most 2^22: no process here has this id, as inside a container no process
    // has the host's ids.
    let scenario = gpus(1) + "proc 0 4194999 5000\n";
    let (got, calls) = probe(
        &support::fake_nvml(),
        &["--interval", "20ms"],
        &scenario,
        &[],
        12,
    );
    for s in &got {
        assert_eq!(s["trainer"], Value::Null);
        let notes = s["gpu_notes"].as_array().expect("notes");
        assert!(
            notes.iter().any(|n| n
                .as_str()
                .unwrap()
                .starts_with("GPU processes are reported with the host's PIDs")),
            "{notes:?}"
        );
    }
    // Processes are listed on the slow tier only (every 5th reading), not chased each one: a
    // listing is two calls, one to count and one to fill.
    let c = counts(&calls);
    let listings = c["nvmlDeviceGetComputeRunningProcesses_v3"] / 2;
    assert!((2..=4).contains(&listings), "{c:?}");
}

#[test]
fn gpus_are_chosen_by_uuid_or_numbered_as_cuda_numbers_them() {
    let scenario = gpus(4) + "uuid 2 GPU-5a1f3e2c-0000-1111-2222-333344445555\n";
    let lib = support::fake_nvml();
    let (got, _) = probe(&lib, &["--once", "--gpus", "GPU-5a1f"], &scenario, &[], 1);
    assert_eq!(indices(&got[0]), ["2"]);
    let env = [("CUDA_VISIBLE_DEVICES", "3,GPU-5a1f3e2c")];
    let (got, _) = probe(&lib, &["--once", "--gpus", "cuda"], &scenario, &env, 1);
    let s = &got[0];
    let seen = cuda_numbers(s);
    // In CUDA's order.
    assert_eq!(seen, [(3, 0), (2, 1)]);
    let notes = s["gpu_notes"].as_array().expect("notes");
    assert!(
        notes[0].as_str().unwrap().starts_with(
            "GPUs numbered as CUDA numbers them (CUDA_VISIBLE_DEVICES=3,GPU-5a1f3e2c in \
             steptop's own environment)"
        ),
        "{notes:?}"
    );
}

#[test]
fn under_cuda_numbering_the_trainers_cuda_visible_devices_numbers_the_gpus() {
    let dir = tempfile::tempdir().expect("tempdir");
    let node = support::fake_gpu_node(dir.path());
    // The trainer runs with its own CUDA_VISIBLE_DEVICES; steptop's environment has none.
    let script = r#"exec 4<"$2"; CUDA_VISIBLE_DEVICES=3,1 exec "$1" 8 1 0"#;
    let fake = FakeTrainer::spawn_wrapped(script, 0, &node);
    let pid = fake.pid.to_string();
    let (got, _) = probe(
        &support::fake_nvml(),
        &["--once", "--gpus", "cuda", "--pid", &pid],
        &gpus(4),
        &[],
        1,
    );
    let s = &got[0];
    let seen = cuda_numbers(s);
    assert_eq!(seen, [(3, 0), (1, 1)]);
    let note = s["gpu_notes"][0].as_str().expect("note");
    let want = format!("(CUDA_VISIBLE_DEVICES=3,1 in the trainer's (pid {pid}) environment)");
    assert!(note.contains(&want), "{note}");
}

#[test]
fn slow_pcie_counters_move_to_the_slow_tier() {
    // 30 ms per PCIe call, as a real driver's 20 ms counter may take.
    let scenario = gpus(1) + "delay pcie 30000\n";
    let (got, calls) = probe(
        &support::fake_nvml(),
        &["--interval", "100ms"],
        &scenario,
        &[],
        10,
    );
    // Printed reading k is sample k; samples 0, 5, 10... are slow.
    let has = |k: usize| got[k - 1]["gpus"][0]["pcie_rx_bytes_per_s"] != Value::Null;
    let read: Vec<usize> = (1..=10).filter(|k| has(*k)).collect();
    assert_eq!(read, [5, 10], "{got:?}");
    assert_eq!(got[4]["gpus"][0]["pcie_rx_bytes_per_s"], 2000 * 1024);
    // Every other field is still read every time.
    assert!(got.iter().all(|s| s["gpus"][0]["util_pct"] == 90));
    let c = counts(&calls);
    // Two counters per read, on samples 0, 5 and 10 (the last may not have been read yet).
    assert!((4..=6).contains(&c["nvmlDeviceGetPcieThroughput"]), "{c:?}");
}

#[test]
fn gpm_samples_are_never_taken_closer_than_nvmls_minimum_interval() {
    let scenario = gpus(1) + "gpm 0 0 50 25\n";
    let start = Instant::now();
    let (got, calls) = probe(
        &support::fake_nvml(),
        &["--gpm", "--interval", "20ms"],
        &scenario,
        &[],
        15,
    );
    let elapsed = start.elapsed();
    let samples = counts(&calls)["nvmlGpmSampleGet"];
    let most = (elapsed.as_millis() / 100) as usize + 1;
    assert!(samples <= most, "{samples} GPM samples in {elapsed:?}");
    // Activity still comes, on the readings that compare two samples.
    assert!(got.iter().any(|s| s["gpus"][0]["sm_active_pct"] == 50.0));
}

#[test]
fn the_trainers_gpus_are_every_rank_its_launcher_started() {
    let dir = tempfile::tempdir().expect("tempdir");
    let node = support::fake_gpu_node(dir.path());
    // `torchrun --nproc_per_node 3 train.py`: three rank processes under one launcher, each
    // holding the GPU device open. Only the first says `ready` (the test reads one line).
    let script = r#"exec 4<"$2"; exec -a torchrun bash -c '"$0" 8 1 0 & "$0" 8 1 0 >/dev/null & "$0" 8 1 0 >/dev/null & wait' "$1""#;
    let fake = FakeTrainer::spawn_wrapped(script, 0, &node);
    let ranks = siblings(fake.pid, 3);
    let mut scenario = gpus(4);
    for (gpu, pid) in ranks.iter().enumerate() {
        scenario += &format!("proc {gpu} {pid} 3000\n");
    }
    let (got, _) = probe(&support::fake_nvml(), &["--once"], &scenario, &[], 1);
    let s = &got[0];
    let t = &s["trainer"];
    assert_eq!(t["pid"], ranks[0], "{t}");
    let mut seen: Vec<u64> = t["ranks"]
        .as_array()
        .expect("ranks")
        .iter()
        .map(|r| r.as_u64().unwrap())
        .collect();
    seen.sort_unstable();
    let want: Vec<u64> = ranks.iter().map(|&r| u64::from(r)).collect();
    assert_eq!(seen, want);
    // GPU 3 runs none of them.
    assert_eq!(indices(s), ["0", "1", "2"]);
}

/// The `count` children of `pid`'s parent, once they have all started, lowest first.
fn siblings(pid: u32, count: usize) -> Vec<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("stat");
    let after = &stat[stat.rfind(')').expect("comm") + 2..];
    let ppid: u32 = after.split_whitespace().nth(1).unwrap().parse().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = std::fs::read_to_string(format!("/proc/{ppid}/task/{ppid}/children"))
            .unwrap_or_default();
        let mut kids: Vec<u32> = text
            .split_whitespace()
            .filter_map(|k| k.parse().ok())
            .collect();
        kids.sort_unstable();
        // A rank is ready once it has started its own process image (it is not bash).
        let ready = kids.iter().all(|k| {
            std::fs::read_to_string(format!("/proc/{k}/comm")).is_ok_and(|c| c.trim() != "bash")
        });
        if kids.len() == count && ready {
            return kids;
        }
        assert!(Instant::now() < deadline, "ranks did not start: {kids:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}
