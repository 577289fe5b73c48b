//! The C fakes under `tests/fake/` do what the other tests count on: the fake NVML serves
//! nvml-wrapper as its scenario says, and the fake trainer's processes and memory look as
//! described.

mod support;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

use support::{FakeTrainer, fake_nvml};

const MIB_KB: u64 = 1024;

#[test]
fn fake_nvml_builds() {
    let lib = fake_nvml();
    assert!(lib.is_file(), "{} was not built", lib.display());
    assert!(
        lib.ends_with("fake-nvml/libnvidia-ml.so.1"),
        "{}",
        lib.display()
    );
    // Once per process: the second call returns the same file without rebuilding.
    assert_eq!(fake_nvml(), lib);
}

// ---- The fake NVML through nvml-wrapper ----
//
// The fake reads its scenario from the environment at init. Setting the environment inside
// this multi-threaded test process is unsound, so each case reruns this test binary, limited to
// the ignored `nvml_case` test, with the scenario in the child's environment.

const TWO_GPUS: &str = "\
# two GPUs, the second one fails once, then falls off the bus
gpus 2
name 0 NVIDIA H100 80GB HBM3
name 1 NVIDIA H100 80GB HBM3   # trailing comment
row 0 0 35 10 40000 81559 100000 575000 54 1980 1980 0x0 3000 120000
row 0 1 90 60 70000 81559 500000 700000 71 1755 1980 0x4 2000 4000
row 2 0 99 80 80000 81559 650000 700000 80 1410 1980 0x20 0 1

fail 1 1 power
fail 1 0 pcie not_supported
lost 3 1
proc 0 4242 5000
proc 0 4243 1
";

/// Runs `nvml_case` with `case` in a child test process; returns its stdout and stderr.
fn run_case(case: &str, scenario: Option<&str>, init: Option<&str>) -> String {
    let dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(std::env::current_exe().unwrap());
    child
        .args(["nvml_case", "--exact", "--ignored", "--nocapture"])
        .env("FAKES_NVML_CASE", case)
        .env("FAKES_NVML_LIB", fake_nvml())
        .env_remove("FAKE_NVML_SCENARIO")
        .env_remove("FAKE_NVML_INIT");
    if let Some(text) = scenario {
        let path = dir.path().join("scenario.txt");
        std::fs::write(&path, text).unwrap();
        child.env("FAKE_NVML_SCENARIO", path);
    }
    if let Some(init) = init {
        child.env("FAKE_NVML_INIT", init);
    }
    let out = child.output().unwrap();
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "case {case} failed:\n{text}");
    assert!(
        text.contains("1 passed"),
        "case {case} did not run:\n{text}"
    );
    text
}

#[test]
fn fake_nvml_follows_its_scenario() {
    run_case("two_gpus", Some(TWO_GPUS), None);
}

#[test]
fn fake_nvml_with_no_gpu() {
    run_case("no_gpu", Some("gpus 0\n"), None);
}

#[test]
fn fake_nvml_init_failures() {
    for init in [
        "driver_not_loaded",
        "no_permission",
        "lib_rm_version_mismatch",
    ] {
        run_case(init, Some(TWO_GPUS), Some(init));
    }
    let out = run_case("broken", Some("gpus 1\nrow 0 0 1 2 3\n"), None);
    assert!(out.contains("line 2"), "{out}");
    let out = run_case("broken", Some("gpus 1\nrows 0 0\n"), None);
    assert!(out.contains("line 2: unknown directive 'rows'"), "{out}");
    let out = run_case("broken", None, None);
    assert!(out.contains("FAKE_NVML_SCENARIO is not set"), "{out}");
}

/// One fake NVML case, run by `run_case` in a child process.
#[test]
#[ignore = "run by the fake_nvml_* tests in a child process with the scenario in its environment"]
fn nvml_case() {
    use nvml_wrapper::Nvml;
    use nvml_wrapper::enum_wrappers::device::{Clock, PcieUtilCounter, TemperatureSensor};
    use nvml_wrapper::enums::device::UsedGpuMemory;
    use nvml_wrapper::error::NvmlError;

    let (Ok(case), Some(lib)) = (
        std::env::var("FAKES_NVML_CASE"),
        std::env::var_os("FAKES_NVML_LIB"),
    ) else {
        return; // run directly (cargo test -- --ignored): nothing to check
    };
    let init = || Nvml::builder().lib_path(&lib).init();
    const MIB: u64 = 1 << 20;
    match case.as_str() {
        "driver_not_loaded" => assert!(matches!(init(), Err(NvmlError::DriverNotLoaded))),
        "no_permission" => assert!(matches!(init(), Err(NvmlError::NoPermission))),
        "lib_rm_version_mismatch" => {
            assert!(matches!(init(), Err(NvmlError::LibRmVersionMismatch)))
        }
        "broken" => assert!(matches!(init(), Err(NvmlError::Unknown))),
        "no_gpu" => {
            let nvml = init().unwrap();
            assert_eq!(nvml.device_count().unwrap(), 0);
            assert!(matches!(
                nvml.device_by_index(0),
                Err(NvmlError::InvalidArg)
            ));
        }
        "two_gpus" => {
            let nvml = init().unwrap();
            assert_eq!(nvml.sys_driver_version().unwrap(), "550.54.15");
            assert_eq!(nvml.device_count().unwrap(), 2);
            // A prober: every GPU's utilization first, then the other readings.
            for tick in 0..5u32 {
                let devices: Vec<_> = (0..2).map(|i| nvml.device_by_index(i)).collect();
                if tick >= 3 {
                    assert!(matches!(devices[1], Err(NvmlError::GpuLost)));
                }
                let utils: Vec<_> = (0..2)
                    .map(|i| match &devices[i] {
                        Ok(d) => d.utilization_rates(),
                        Err(_) => Err(NvmlError::GpuLost),
                    })
                    .collect();
                let d0 = devices[0].as_ref().unwrap();
                let late = tick >= 2;
                let util0 = utils[0].as_ref().unwrap();
                assert_eq!(util0.gpu, if late { 99 } else { 35 });
                assert_eq!(util0.memory, if late { 80 } else { 10 });
                assert_eq!(d0.name().unwrap(), "NVIDIA H100 80GB HBM3");
                assert_eq!(d0.uuid().unwrap(), "GPU-fake-0000-0");
                assert_eq!(d0.index().unwrap(), 0);
                let mem = d0.memory_info().unwrap();
                let used = if late { 80000 } else { 40000 };
                assert_eq!(mem.total, 81559 * MIB);
                assert_eq!(mem.used, used * MIB);
                assert_eq!(mem.free, (81559 - used) * MIB);
                let power = d0.power_usage().unwrap();
                assert_eq!(power, if late { 650000 } else { 100000 });
                assert_eq!(
                    d0.enforced_power_limit().unwrap(),
                    if late { 700000 } else { 575000 }
                );
                assert_eq!(
                    d0.temperature(TemperatureSensor::Gpu).unwrap(),
                    if late { 80 } else { 54 }
                );
                let sm = if late { 1410 } else { 1980 };
                assert_eq!(d0.clock_info(Clock::SM).unwrap(), sm);
                assert_eq!(d0.clock_info(Clock::Graphics).unwrap(), sm);
                assert_eq!(d0.clock_info(Clock::Memory).unwrap(), 2619);
                assert_eq!(d0.max_clock_info(Clock::SM).unwrap(), 1980);
                assert_eq!(
                    d0.current_throttle_reasons().unwrap().bits(),
                    if late { 0x20 } else { 0 }
                );
                let tx = d0.pcie_throughput(PcieUtilCounter::Send);
                if tick == 1 {
                    assert!(matches!(tx, Err(NvmlError::NotSupported)), "{tx:?}");
                } else {
                    assert_eq!(tx.unwrap(), if late { 0 } else { 3000 });
                    assert_eq!(
                        d0.pcie_throughput(PcieUtilCounter::Receive).unwrap(),
                        if late { 1 } else { 120000 }
                    );
                }
                let procs = d0.running_compute_processes().unwrap();
                let procs: Vec<_> = procs
                    .iter()
                    .map(|p| match p.used_gpu_memory {
                        UsedGpuMemory::Used(bytes) => (p.pid, bytes),
                        UsedGpuMemory::Unavailable => (p.pid, u64::MAX),
                    })
                    .collect();
                assert_eq!(procs, [(4242, 5000 * MIB), (4243, MIB)]);
                assert!(!d0.gpm_support().unwrap());

                if tick >= 3 {
                    assert!(matches!(utils[1], Err(NvmlError::GpuLost)));
                    continue;
                }
                let d1 = devices[1].as_ref().unwrap();
                assert_eq!(utils[1].as_ref().unwrap().gpu, 90);
                assert_eq!(utils[1].as_ref().unwrap().memory, 60);
                let power = d1.power_usage();
                if tick == 1 {
                    assert!(matches!(power, Err(NvmlError::Unknown)), "{power:?}");
                } else {
                    assert_eq!(power.unwrap(), 500000);
                }
                assert_eq!(d1.current_throttle_reasons().unwrap().bits(), 0x4);
                assert!(d1.running_compute_processes().unwrap().is_empty());
                assert_eq!(d1.uuid().unwrap(), "GPU-fake-0000-1");
                if tick == 2 {
                    // Tick 3 starts with the next utilization call; then GPU 1 is lost, even
                    // through a handle taken before.
                    let _ = d0.utilization_rates().unwrap();
                    assert!(matches!(d1.utilization_rates(), Err(NvmlError::GpuLost)));
                    assert!(matches!(d1.name(), Err(NvmlError::GpuLost)));
                }
            }
        }
        other => panic!("unknown case {other}"),
    }
}

// ---- The fake trainer ----

/// `Key:  N kB` values of /proc/PID/smaps_rollup, in kB.
fn smaps_rollup(pid: u32) -> std::collections::BTreeMap<String, u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup")).unwrap();
    text.lines()
        .filter_map(|line| {
            let (key, rest) = line.split_once(':')?;
            let kb = rest.trim().strip_suffix("kB")?.trim().parse().ok()?;
            Some((key.to_string(), kb))
        })
        .collect()
}

/// The parent pid, field 4 of /proc/PID/stat.
fn ppid(pid: u32) -> u32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after_name = &stat[stat.rfind(')').unwrap() + 1..];
    after_name
        .split_whitespace()
        .nth(1)
        .unwrap()
        .parse()
        .unwrap()
}

/// Whether any of the descriptors of `pid` points at `path`.
fn has_open(pid: u32, path: &Path) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .any(|target| target == path)
}

#[test]
fn fake_trainer_processes_and_memory() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().canonicalize().unwrap().join("train.log");
    let trainer = FakeTrainer::spawn(64, 16, 3, Some(&log));
    let pid = trainer.pid;
    let workers = trainer.workers.clone();
    assert_eq!(workers.len(), 3);

    let children = std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children")).unwrap();
    let children: BTreeSet<u32> = children
        .split_whitespace()
        .map(|p| p.parse().unwrap())
        .collect();
    assert_eq!(children, workers.iter().copied().collect::<BTreeSet<_>>());
    assert!(log.is_file());
    assert!(
        has_open(pid, &log),
        "the trainer keeps {} open",
        log.display()
    );

    for &worker in &workers {
        assert_eq!(ppid(worker), pid);
        assert!(has_open(worker, &log), "worker {worker} inherits the log");
        let smaps = smaps_rollup(worker);
        let private = smaps["Private_Dirty"] + smaps["Private_Clean"];
        assert!(private >= 16 * MIB_KB, "worker {worker}: {smaps:?}");
        // The 64 MiB block is shared by the parent and three workers: a quarter in each PSS.
        let pss = smaps["Pss"];
        assert!(pss >= (16 + 64 / 4) * MIB_KB, "worker {worker}: {smaps:?}");
        assert!(pss < (16 + 64 / 2) * MIB_KB, "worker {worker}: {smaps:?}");
    }
    let parent = smaps_rollup(pid);
    assert!(parent["Rss"] >= 64 * MIB_KB, "{parent:?}");

    drop(trainer);
    for p in std::iter::once(pid).chain(workers) {
        assert!(
            !Path::new(&format!("/proc/{p}")).exists(),
            "process {p} is still there after the drop"
        );
    }
}

#[test]
fn fake_trainer_without_workers_or_log() {
    let trainer = FakeTrainer::spawn(1, 0, 0, None);
    assert!(trainer.workers.is_empty());
    let pid = trainer.pid;
    assert!(Path::new(&format!("/proc/{pid}")).exists());
    drop(trainer);
    assert!(!Path::new(&format!("/proc/{pid}")).exists());
}
