//! The C fakes under `tests/fake/` do what the other tests count on: the fake NVML serves
//! nvml-wrapper as its scenario says, and the fake trainer's processes and memory look as
//! described.

mod support;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Stdio};

use support::{FakeTrainer, fake_nvml, fake_nvml_driver};

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

#[test]
fn fake_nvml_builds_per_driver_generation() {
    let old = fake_nvml_driver(470);
    assert!(old.is_file(), "{} was not built", old.display());
    assert!(
        old.ends_with("fake-nvml-470/libnvidia-ml.so.1"),
        "{}",
        old.display()
    );
    assert_eq!(fake_nvml_driver(470), old);
    assert_ne!(old, fake_nvml());
    assert!(fake_nvml_driver(418).ends_with("fake-nvml-418/libnvidia-ml.so.1"));
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
    run_case_on(&fake_nvml(), case, scenario, init)
}

/// [`run_case`] against the fake library `lib` (a [`fake_nvml_driver`] build). The child's fake
/// logs its calls to the file named by its `FAKE_NVML_LOG` (see [`call_log`]).
fn run_case_on(lib: &Path, case: &str, scenario: Option<&str>, init: Option<&str>) -> String {
    let dir = tempfile::tempdir().unwrap();
    let mut child = case_command(lib, case, &dir.path().join("calls.log"));
    if let Some(text) = scenario {
        let path = dir.path().join("scenario.txt");
        std::fs::write(&path, text).unwrap();
        child.env("FAKE_NVML_SCENARIO", path);
    }
    if let Some(init) = init {
        child.env("FAKE_NVML_INIT", init);
    }
    case_output(case, child.output().unwrap())
}

/// The command that runs `nvml_case` with `case` in a child test process against `lib`, its
/// fake logging its calls to `log`; no scenario yet.
fn case_command(lib: &Path, case: &str, log: &Path) -> Command {
    let mut child = Command::new(std::env::current_exe().unwrap());
    child
        .args(["nvml_case", "--exact", "--ignored", "--nocapture"])
        .env("FAKES_NVML_CASE", case)
        .env("FAKES_NVML_LIB", lib)
        .env("FAKE_NVML_LOG", log)
        .env_remove("FAKE_NVML_SCENARIO")
        .env_remove("FAKE_NVML_INIT");
    child
}

/// The stdout and stderr of a finished case; panics unless it ran and passed.
fn case_output(case: &str, out: std::process::Output) -> String {
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

// ---- What the fake NVML does as real drivers do (tests/gpu_drivers.rs counts on it) ----

/// A row of GPU `gpu` at tick 0 that none of these tests looks at closely.
fn plain_row(gpu: u32) -> String {
    format!("row 0 {gpu} 10 1 1000 16384 70000 150000 40 1500 1980 0x0 10 20\n")
}

const PER_GPU_TICKS: &str = "\
# the power tells the tick: GPU G at tick T draws G * 100 + T W
gpus 3
row 0 0 10 1 1000 16384 0 300000 40 1500 1980 0x0 10 20
row 1 0 11 1 1000 16384 1000 300000 40 1500 1980 0x0 10 20
row 0 1 20 1 1000 16384 100000 300000 40 1500 1980 0x0 10 20
row 1 1 21 1 1000 16384 101000 300000 40 1500 1980 0x0 10 20
row 2 1 22 1 1000 16384 102000 300000 40 1500 1980 0x0 10 20
row 0 2 30 1 1000 16384 200000 300000 40 1500 1980 0x0 10 20
fail 1 2 power
";

#[test]
fn fake_nvml_ticks_are_per_gpu() {
    run_case("per_gpu_ticks", Some(PER_GPU_TICKS), None);
}

/// One GPU with 300 MiB reserved next to the row's 1000 MiB used, and two processes.
const OLD_DRIVER: &str = "\
gpus 1
row 0 0 50 5 1000 16384 70000 150000 45 1500 1980 0x4 10 20
reserved 0 300
proc 0 77 1000
proc 0 78 20
";

#[test]
fn fake_nvml_exports_what_its_driver_generation_has() {
    for driver in [418, 450, 470, 510, 520, 535, 555, 580] {
        let case = format!("symbols {driver}");
        run_case_on(&fake_nvml_driver(driver), &case, Some(OLD_DRIVER), None);
    }
    // The default build is a current driver.
    run_case("symbols 580", Some(OLD_DRIVER), None);
}

#[test]
fn fake_nvml_old_drivers_answer_through_their_older_calls() {
    run_case_on(
        &fake_nvml_driver(470),
        "old_driver 470",
        Some(OLD_DRIVER),
        None,
    );
    run_case_on(
        &fake_nvml_driver(418),
        "old_driver 418",
        Some(OLD_DRIVER),
        None,
    );
}

#[test]
fn fake_nvml_reserved_memory() {
    run_case("reserved", Some(OLD_DRIVER), None);
    // Used and reserved memory may not exceed the total in any row, wherever the lines are.
    let row = |tick: u32, used: u32| format!("row {tick} 0 1 1 {used} 16384 1 1 1 1 1 0 0 0\n");
    let scenario = format!("gpus 1\nreserved 0 400\n{}", row(0, 16000));
    let out = run_case("broken", Some(&scenario), None);
    assert!(
        out.contains(
            "line 3: row: mem_used_mib plus the 400 MiB reserved on gpu 0 (line 2) exceeds \
             mem_total_mib"
        ),
        "{out}"
    );
    let scenario = format!("gpus 1\n{}{}reserved 0 400\n", row(0, 15984), row(7, 15985));
    let out = run_case("broken", Some(&scenario), None);
    assert!(out.contains("line 3: row: mem_used_mib plus"), "{out}");
}

#[test]
fn fake_nvml_hidden_gpu() {
    // The hidden GPU needs no row.
    let scenario = format!("gpus 3\nhidden 1\n{}{}", plain_row(0), plain_row(2));
    run_case("hidden", Some(&scenario), None);
}

#[test]
fn fake_nvml_application_clocks() {
    let scenario = format!(
        "gpus 2\n{}{}appclock 0 1410\nfail 1 0 appclock no_permission\n",
        plain_row(0),
        plain_row(1)
    );
    run_case("appclock", Some(&scenario), None);
}

/// Two processes on one GPU.
fn two_procs() -> String {
    format!("gpus 1\n{}proc 0 4242 5000\nproc 0 4243 1\n", plain_row(0))
}

#[test]
fn fake_nvml_process_entry_strides() {
    run_case("procs 24", Some(&two_procs()), None);
    run_case("procs 24", Some(&(two_procs() + "procstride 24\n")), None);
    run_case("procs 32", Some(&(two_procs() + "procstride 32\n")), None);
    let out = run_case("broken", Some(&(two_procs() + "procstride 28\n")), None);
    assert!(
        out.contains("line 5: expected 'procstride 24' or 'procstride 32'"),
        "{out}"
    );
}

const MIG: &str = "\
gpus 3
name 0 NVIDIA A100-SXM4-80GB
row 0 0 40 10 30000 81920 250000 400000 50 1410 1410 0x4 100 200
row 1 0 40 10 30000 81920 260000 400000 51 1410 1410 0x4 100 200
appclock 0 1410
mig 0 5000 9856
mig 0 1200 19968   NVIDIA A100-SXM4-80GB MIG 2g.20gb   # name, then a comment
migproc 0 1 4242 1000
migproc 0 1 4243 200
migproc 0 0 5151 300
proc 0 999 1   # never listed: a parent in MIG mode answers no_permission
row 0 1 10 1 1000 16384 70000 150000 40 1500 1980 0x0 10 20
row 0 2 10 1 1000 16384 70000 150000 40 1500 1980 0x0 10 20
mig 2 0 9856
lost 2 2
";

#[test]
fn fake_nvml_mig_devices() {
    run_case("mig", Some(MIG), None);
}

#[test]
fn fake_nvml_delays_sleep_without_the_lock() {
    let scenario = format!(
        "gpus 2\n{}{}delay pcie 400000\ndelay procs 300000\n",
        plain_row(0),
        plain_row(1)
    );
    run_case("delay", Some(&scenario), None);
}

#[test]
fn fake_nvml_uuids() {
    let scenario = format!(
        "gpus 3\nuuid 1 GPU-6e3d2b0a-1c2f-4f5e-9a8b-0c1d2e3f4a5b\n{}{}{}mig 2 10 9856\n",
        plain_row(0),
        plain_row(1),
        plain_row(2)
    );
    run_case("uuid", Some(&scenario), None);
}

#[test]
fn fake_nvml_call_log() {
    let scenario = format!("gpus 2\n{}{}mig 1 100 9856\n", plain_row(0), plain_row(1));
    run_case("call_log", Some(&scenario), None);
}

#[test]
fn fake_nvml_call_log_lines_never_interleave() {
    // Two processes with four threads each append to one log at once.
    let dir = tempfile::tempdir().unwrap();
    let scenario = dir.path().join("scenario.txt");
    std::fs::write(&scenario, format!("gpus 1\n{}", plain_row(0))).unwrap();
    let log = dir.path().join("calls.log");
    let children: Vec<_> = (0..2)
        .map(|_| {
            case_command(&fake_nvml(), "log_flood", &log)
                .env("FAKE_NVML_SCENARIO", &scenario)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        case_output("log_flood", child.wait_with_output().unwrap());
    }
    let text = std::fs::read_to_string(&log).unwrap();
    let names = text.lines().filter(|l| *l == "nvmlDeviceGetName 0 0");
    assert_eq!(names.count(), 2 * LOG_FLOOD_CALLS);
    // Besides, each child's one handle call.
    let torn: Vec<_> = text
        .lines()
        .filter(|l| *l != "nvmlDeviceGetName 0 0" && *l != "nvmlDeviceGetHandleByIndex_v2 0 0")
        .take(5)
        .collect();
    assert!(torn.is_empty(), "{torn:?}");
    assert_eq!(text.lines().count(), 2 * LOG_FLOOD_CALLS + 2);
}

#[test]
fn fake_nvml_rejects_bad_new_directives() {
    let row = plain_row(0);
    let sevenfold = "mig 0 1 10\n".repeat(7);
    let mut cases: Vec<(u32, String, &str)> = vec![
        (
            580,
            format!("delay pcie 10\ngpus 1\n{row}"),
            "line 1: 'gpus N' must come before",
        ),
        (
            580,
            format!("gpus 1\n{row}hidden 1\n"),
            "line 3: expected 'hidden GPU'",
        ),
        (
            580,
            format!("gpus 1\n{row}appclock 0 0\n"),
            "line 3: expected 'appclock GPU MHZ'",
        ),
        (
            580,
            format!("gpus 1\n{row}appclock 0 1000\nappclock 0 1100\n"),
            "line 4: appclock: this gpu already has an appclock line",
        ),
        (
            580,
            format!("gpus 1\n{row}reserved 0 1\nreserved 0 2\n"),
            "line 4: reserved: this gpu already has a reserved line",
        ),
        (
            580,
            format!("gpus 1\n{row}delay pcie 10\ndelay procs 10\ndelay pcie 20\n"),
            "line 5: delay: this field already has a delay line",
        ),
        (
            580,
            format!("gpus 1\n{row}delay bus 10\n"),
            "line 3: expected 'delay FIELD USEC'",
        ),
        (
            580,
            format!("gpus 1\n{row}fail 0 0 appclocks\n"),
            "line 3: fail: field must be one of util mem power limit temp clock maxclock \
             throttle pcie procs gpm appclock",
        ),
        (
            580,
            format!("gpus 1\nprocstride 32\n{row}procstride 32\n"),
            "line 4: 'procstride' given twice",
        ),
        (
            580,
            format!("gpus 1\n{row}{sevenfold}mig 0 1 10\n"),
            "line 10: mig: this gpu already has 7 mig lines",
        ),
        (
            580,
            format!("gpus 1\n{row}mig 0 20000 10000\n"),
            "line 3: mig: mem_used_mib exceeds mem_total_mib",
        ),
        (
            580,
            format!("gpus 1\n{row}migproc 0 1 42 1\nmig 0 1 10\n"),
            "line 3: migproc: gpu 0 has no mig line for slice 1 (it has 1)",
        ),
        (
            580,
            format!("gpus 1\n{row}mig 0 1 10\nmigproc 0 7 42 1\n"),
            "line 4: expected 'migproc GPU SLICE PID MIB'",
        ),
        (
            580,
            format!("gpus 1\n{row}uuid 0 two words\n"),
            "line 3: expected 'uuid GPU TEXT'",
        ),
        (
            580,
            format!("gpus 2\nuuid 0 GPU-x\n{row}{}uuid 1 GPU-x\n", plain_row(1)),
            "line 5: uuid: gpus 0 and 1 share the uuid GPU-x",
        ),
        (
            418,
            format!("gpus 1\n{row}mig 0 1 10\n"),
            "line 3: mig: this fake is built with FAKE_DRIVER=418; MIG needs a driver of 450",
        ),
        (
            470,
            format!("gpus 1\n{row}gpm 0 0 1 1\n"),
            "line 3: gpm: this fake is built with FAKE_DRIVER=470; GPM needs a driver of 520",
        ),
    ];
    // The default build takes what the old ones refuse.
    cases.push((580, format!("gpus 1\n{row}mig 0 1 10\ngpm 0 0 1 1\n"), ""));
    for (driver, scenario, want) in cases {
        let lib = fake_nvml_driver(driver);
        let case = if want.is_empty() { "loads" } else { "broken" };
        let out = run_case_on(&lib, case, Some(&scenario), None);
        assert!(
            out.contains(want),
            "driver {driver}, scenario:\n{scenario}\n{out}"
        );
    }
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
            // The default build is a current driver.
            assert_eq!(nvml.sys_driver_version().unwrap(), "580.65.06");
            assert_eq!(nvml.sys_nvml_version().unwrap(), "12.580.65.06");
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
                    // GPU 1's tick 3 starts with its next utilization call (GPU 0's moves only
                    // GPU 0's tick); then GPU 1 is lost, even through a handle taken before.
                    let _ = d0.utilization_rates().unwrap();
                    assert_eq!(d1.name().unwrap(), "NVIDIA H100 80GB HBM3");
                    assert!(matches!(d1.utilization_rates(), Err(NvmlError::GpuLost)));
                    assert!(matches!(d1.name(), Err(NvmlError::GpuLost)));
                }
            }
        }
        "loads" => drop(init().unwrap()),
        "per_gpu_ticks" => case_per_gpu_ticks(&init().unwrap()),
        "reserved" => case_reserved(&init().unwrap()),
        "hidden" => case_hidden(&init().unwrap()),
        "appclock" => case_appclock(&init().unwrap()),
        "mig" => case_mig(&init().unwrap()),
        "delay" => case_delay(&init().unwrap()),
        "uuid" => case_uuid(&init().unwrap()),
        "call_log" => case_call_log(&init().unwrap()),
        "log_flood" => case_log_flood(&init().unwrap()),
        other => match other.split_once(' ') {
            Some(("symbols", driver)) => case_symbols(&init().unwrap(), driver.parse().unwrap()),
            Some(("old_driver", driver)) => {
                case_old_driver(&init().unwrap(), driver.parse().unwrap())
            }
            Some(("procs", stride)) => case_procs(&init().unwrap(), stride.parse().unwrap()),
            _ => panic!("unknown case {other}"),
        },
    }
}

// ---- Helpers of the fake NVML cases (in the child process) ----

/// The fake's call log so far: the lines of the file `run_case` named in `FAKE_NVML_LOG`.
fn call_log() -> Vec<String> {
    let path = std::env::var_os("FAKE_NVML_LOG").expect("run_case sets FAKE_NVML_LOG");
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The lines of `log` that start with `prefix`.
fn lines_of<'a>(log: &'a [String], prefix: &str) -> Vec<&'a str> {
    log.iter()
        .map(String::as_str)
        .filter(|l| l.starts_with(prefix))
        .collect()
}

#[track_caller]
fn not_supported<T: std::fmt::Debug>(result: Result<T, nvml_wrapper::error::NvmlError>) {
    use nvml_wrapper::error::NvmlError;
    assert!(matches!(result, Err(NvmlError::NotSupported)), "{result:?}");
}

fn used_bytes(p: &nvml_wrapper::struct_wrappers::device::ProcessInfo) -> u64 {
    use nvml_wrapper::enums::device::UsedGpuMemory;
    match p.used_gpu_memory {
        UsedGpuMemory::Used(bytes) => bytes,
        UsedGpuMemory::Unavailable => u64::MAX,
    }
}

/// `nvmlDeviceGetMemoryInfo` (v1) straight from the library: [total, free, used].
fn raw_memory_v1(
    nvml: &nvml_wrapper::Nvml,
    d: &nvml_wrapper::Device,
) -> Result<[u64; 3], nvml_wrapper::error::NvmlError> {
    let f = nvml.lib().nvmlDeviceGetMemoryInfo.as_ref().unwrap();
    let mut memory = [0u64; 3];
    nvml_wrapper::error::nvml_try(unsafe { f(d.handle(), memory.as_mut_ptr().cast()) })?;
    Ok(memory)
}

/// `nvmlTemperature_v1_t`'s version: its size with 1 in the top byte.
const TEMPERATURE_V1: u32 = 12 | 1 << 24;

/// `nvmlDeviceGetTemperatureV` straight from the library, with `version` in the struct.
fn raw_temperature_v(
    nvml: &nvml_wrapper::Nvml,
    d: &nvml_wrapper::Device,
    version: u32,
) -> Result<i32, nvml_wrapper::error::NvmlError> {
    let f = nvml.lib().nvmlDeviceGetTemperatureV.as_ref().unwrap();
    // version, sensorType (0: the GPU), temperature
    let mut temperature = [version, 0, u32::MAX];
    nvml_wrapper::error::nvml_try(unsafe { f(d.handle(), temperature.as_mut_ptr().cast()) })?;
    Ok(i32::from_ne_bytes(temperature[2].to_ne_bytes()))
}

/// `nvmlDeviceGetCurrentClocksEventReasons` straight from the library.
fn raw_event_reasons(
    nvml: &nvml_wrapper::Nvml,
    d: &nvml_wrapper::Device,
) -> Result<u64, nvml_wrapper::error::NvmlError> {
    let f = nvml
        .lib()
        .nvmlDeviceGetCurrentClocksEventReasons
        .as_ref()
        .unwrap();
    let mut reasons = 0;
    nvml_wrapper::error::nvml_try(unsafe { f(d.handle(), &mut reasons) })?;
    Ok(reasons)
}

/// What a buffer holds where a call did not write.
const FILL: u8 = 0xAA;

/// Calls a processes entry point with a count of 8 and room for 8 entries of 32 bytes, every
/// byte FILL: its result, the count it gave back and the bytes.
fn raw_procs(
    call: impl FnOnce(*mut u32, *mut u64) -> u32,
) -> (Result<(), nvml_wrapper::error::NvmlError>, u32, Vec<u8>) {
    let mut buf = vec![u64::from_ne_bytes([FILL; 8]); 32];
    let mut count = 8;
    let rc = call(&mut count, buf.as_mut_ptr());
    let bytes = buf.iter().flat_map(|w| w.to_ne_bytes()).collect();
    (nvml_wrapper::error::nvml_try(rc), count, bytes)
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_ne_bytes(bytes[at..at + 4].try_into().unwrap())
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_ne_bytes(bytes[at..at + 8].try_into().unwrap())
}

/// A process entry as read back: pid, used bytes, and (gpuInstanceId, computeInstanceId) where
/// the entry has them.
type Entry = (u32, u64, Option<(u32, u32)>);

/// The first `n` entries of `stride` bytes; asserts nothing was written after them.
#[track_caller]
fn entries(bytes: &[u8], stride: usize, n: usize) -> Vec<Entry> {
    assert!(
        bytes[n * stride..].iter().all(|&b| b == FILL),
        "written past {n} entries of {stride} bytes: {bytes:?}"
    );
    (0..n)
        .map(|k| {
            let at = k * stride;
            let ids = (stride >= 24).then(|| (u32_at(bytes, at + 16), u32_at(bytes, at + 20)));
            (u32_at(bytes, at), u64_at(bytes, at + 8), ids)
        })
        .collect()
}

// ---- The fake NVML cases (in the child process) ----

const MIB: u64 = 1 << 20;
const NO_ID: u32 = u32::MAX;

fn case_per_gpu_ticks(nvml: &nvml_wrapper::Nvml) {
    use nvml_wrapper::error::NvmlError;
    let d: Vec<_> = (0..3).map(|i| nvml.device_by_index(i).unwrap()).collect();
    let util = |i: usize| d[i].utilization_rates().unwrap().gpu;
    let power = |i: usize| d[i].power_usage().unwrap();
    // Before its first utilization call a GPU is at tick 0.
    assert_eq!(power(1), 100000);
    // A caller that reads GPU 1 alone (`--gpus 1`) moves GPU 1's tick alone.
    assert_eq!([util(1), util(1), util(1), util(1)], [20, 21, 22, 22]);
    assert_eq!(power(1), 102000);
    assert_eq!(power(0), 0);
    assert_eq!(util(0), 10);
    assert_eq!(power(0), 0);
    assert_eq!(util(0), 11);
    assert_eq!(power(0), 1000);
    // GPU 2 fails at its own tick 1, however far GPU 1 has gone.
    assert_eq!(util(2), 30);
    assert_eq!(power(2), 200000);
    assert_eq!(util(2), 30);
    let failed = d[2].power_usage();
    assert!(matches!(failed, Err(NvmlError::Unknown)), "{failed:?}");
    assert_eq!(util(2), 30);
    assert_eq!(power(2), 200000);
    // The log shows each call's GPU and the tick it saw.
    let log = call_log();
    let utils = lines_of(&log, "nvmlDeviceGetUtilizationRates ");
    let ticks: Vec<&str> = utils
        .iter()
        .map(|l| l.strip_prefix("nvmlDeviceGetUtilizationRates ").unwrap())
        .collect();
    assert_eq!(
        ticks,
        [
            "1 0", "1 1", "1 2", "1 3", "0 0", "0 1", "2 0", "2 1", "2 2"
        ]
    );
    let powers = lines_of(&log, "nvmlDeviceGetPowerUsage ");
    assert_eq!(powers[0], "nvmlDeviceGetPowerUsage 1 0");
    assert_eq!(powers[1], "nvmlDeviceGetPowerUsage 1 3");
}

fn case_symbols(nvml: &nvml_wrapper::Nvml, driver: u32) {
    use nvml_wrapper::enum_wrappers::device::TemperatureSensor;
    use nvml_wrapper::error::NvmlError;
    let lib = nvml.lib();
    let symbols = [
        (
            "nvmlDeviceGetMemoryInfo",
            lib.nvmlDeviceGetMemoryInfo.is_ok(),
            true,
        ),
        (
            "nvmlDeviceGetComputeRunningProcesses",
            lib.nvmlDeviceGetComputeRunningProcesses.is_ok(),
            true,
        ),
        (
            "nvmlDeviceGetComputeRunningProcesses_v2",
            lib.nvmlDeviceGetComputeRunningProcesses_v2.is_ok(),
            driver >= 470,
        ),
        (
            "nvmlDeviceGetMemoryInfo_v2",
            lib.nvmlDeviceGetMemoryInfo_v2.is_ok(),
            driver >= 510,
        ),
        (
            "nvmlDeviceGetComputeRunningProcesses_v3",
            lib.nvmlDeviceGetComputeRunningProcesses_v3.is_ok(),
            driver >= 510,
        ),
        (
            "nvmlDeviceGetCurrentClocksEventReasons",
            lib.nvmlDeviceGetCurrentClocksEventReasons.is_ok(),
            driver >= 535,
        ),
        (
            "nvmlDeviceGetCurrentClocksThrottleReasons",
            lib.nvmlDeviceGetCurrentClocksThrottleReasons.is_ok(),
            true,
        ),
        (
            "nvmlDeviceGetTemperatureV",
            lib.nvmlDeviceGetTemperatureV.is_ok(),
            driver >= 555,
        ),
        (
            "nvmlDeviceGetTemperature",
            lib.nvmlDeviceGetTemperature.is_ok(),
            true,
        ),
        (
            "nvmlDeviceGetMigMode",
            lib.nvmlDeviceGetMigMode.is_ok(),
            driver >= 450,
        ),
        (
            "nvmlDeviceGetMigDeviceHandleByIndex",
            lib.nvmlDeviceGetMigDeviceHandleByIndex.is_ok(),
            driver >= 450,
        ),
        (
            "nvmlGpmSampleGet",
            lib.nvmlGpmSampleGet.is_ok(),
            driver >= 520,
        ),
        (
            "nvmlDeviceGetHandleByUUID",
            lib.nvmlDeviceGetHandleByUUID.is_ok(),
            true,
        ),
        (
            "nvmlDeviceGetApplicationsClock",
            lib.nvmlDeviceGetApplicationsClock.is_ok(),
            true,
        ),
    ];
    for (name, present, want) in symbols {
        assert_eq!(present, want, "{name} in the {driver} build");
    }
    assert_eq!(
        nvml.sys_driver_version().unwrap(),
        format!("{driver}.65.06")
    );
    let major = if driver < 450 {
        10
    } else if driver < 525 {
        11
    } else {
        12
    };
    assert_eq!(
        nvml.sys_nvml_version().unwrap(),
        format!("{major}.{driver}.65.06")
    );
    // nvml-wrapper finds no symbol the build lacks; the ones it has answer.
    let d = nvml.device_by_index(0).unwrap();
    let memory = d.memory_info();
    if driver >= 510 {
        assert_eq!(memory.unwrap().used, 1000 * MIB);
    } else {
        assert!(
            matches!(memory, Err(NvmlError::FailedToLoadSymbol(_))),
            "{memory:?}"
        );
    }
    assert_eq!(d.temperature(TemperatureSensor::Gpu).unwrap(), 45);
    assert_eq!(d.current_throttle_reasons().unwrap().bits(), 0x4);
    if driver >= 535 {
        assert_eq!(raw_event_reasons(nvml, &d).unwrap(), 0x4);
    }
    if driver >= 555 {
        assert_eq!(raw_temperature_v(nvml, &d, TEMPERATURE_V1).unwrap(), 45);
        let wrong = raw_temperature_v(nvml, &d, 12 | 2 << 24);
        assert!(
            matches!(wrong, Err(NvmlError::UnexpectedVariant(25))),
            "{wrong:?}"
        );
    }
}

fn case_old_driver(nvml: &nvml_wrapper::Nvml, driver: u32) {
    use nvml_wrapper::error::{NvmlError, nvml_try};
    let d = nvml.device_by_index(0).unwrap();
    let h = unsafe { d.handle() };
    let lib = nvml.lib();
    let memory = d.memory_info();
    assert!(
        matches!(memory, Err(NvmlError::FailedToLoadSymbol(_))),
        "{memory:?}"
    );
    let procs = d.running_compute_processes();
    assert!(
        matches!(procs, Err(NvmlError::FailedToLoadSymbol(_))),
        "{procs:?}"
    );
    // The first memory call counts reserved memory as used.
    assert_eq!(
        raw_memory_v1(nvml, &d).unwrap(),
        [16384 * MIB, (16384 - 1300) * MIB, 1300 * MIB]
    );
    // The first processes call writes 16-byte entries {pid, 4 bytes padding, used}.
    let v1 = lib.nvmlDeviceGetComputeRunningProcesses.as_ref().unwrap();
    let mut count = 0;
    let sized = nvml_try(unsafe { v1(h, &mut count, std::ptr::null_mut()) });
    assert!(
        matches!(sized, Err(NvmlError::InsufficientSize(_))),
        "{sized:?}"
    );
    assert_eq!(count, 2);
    let (rc, count, bytes) = raw_procs(|count, buf| unsafe { v1(h, count, buf.cast()) });
    rc.unwrap();
    assert_eq!(count, 2);
    assert_eq!(
        entries(&bytes, 16, 2),
        [(77, 1000 * MIB, None), (78, 20 * MIB, None)]
    );
    assert_eq!(u32_at(&bytes, 4), 0, "padding");
    if driver >= 470 {
        // The second writes 24-byte entries with the instance ids (none: no MIG).
        let v2 = lib
            .nvmlDeviceGetComputeRunningProcesses_v2
            .as_ref()
            .unwrap();
        let (rc, count, bytes) = raw_procs(|count, buf| unsafe { v2(h, count, buf.cast()) });
        rc.unwrap();
        assert_eq!(count, 2);
        assert_eq!(
            entries(&bytes, 24, 2),
            [
                (77, 1000 * MIB, Some((NO_ID, NO_ID))),
                (78, 20 * MIB, Some((NO_ID, NO_ID)))
            ]
        );
    }
}

fn case_reserved(nvml: &nvml_wrapper::Nvml) {
    let d = nvml.device_by_index(0).unwrap();
    let m = d.memory_info().unwrap();
    assert_eq!(
        (m.total, m.reserved, m.used, m.free),
        (16384 * MIB, 300 * MIB, 1000 * MIB, (16384 - 1300) * MIB)
    );
    let [total, free, used] = raw_memory_v1(nvml, &d).unwrap();
    assert_eq!(
        (total, free, used),
        (16384 * MIB, (16384 - 1300) * MIB, 1300 * MIB)
    );
}

fn case_hidden(nvml: &nvml_wrapper::Nvml) {
    use nvml_wrapper::Device;
    use nvml_wrapper::error::NvmlError;
    assert_eq!(nvml.device_count().unwrap(), 3);
    let hidden = nvml.device_by_index(1);
    assert!(matches!(hidden, Err(NvmlError::NoPermission)), "{hidden:?}");
    let hidden = nvml.device_by_uuid("GPU-fake-0000-1");
    assert!(matches!(hidden, Err(NvmlError::NoPermission)), "{hidden:?}");
    let d2 = nvml.device_by_index(2).unwrap();
    assert_eq!(d2.index().unwrap(), 2);
    assert_eq!(d2.utilization_rates().unwrap().gpu, 10);
    assert_eq!(nvml.device_by_index(0).unwrap().index().unwrap(), 0);
    // Its handle, never given out, is no device's.
    let forged = unsafe { Device::new(std::ptr::without_provenance_mut(2), nvml) };
    let name = forged.name();
    assert!(matches!(name, Err(NvmlError::InvalidArg)), "{name:?}");
}

fn case_appclock(nvml: &nvml_wrapper::Nvml) {
    use nvml_wrapper::enum_wrappers::device::Clock;
    use nvml_wrapper::error::NvmlError;
    let d0 = nvml.device_by_index(0).unwrap();
    let d1 = nvml.device_by_index(1).unwrap();
    assert_eq!(d0.applications_clock(Clock::SM).unwrap(), 1410);
    assert_eq!(d0.applications_clock(Clock::Graphics).unwrap(), 1410);
    assert_eq!(d0.applications_clock(Clock::Memory).unwrap(), 2619);
    not_supported(d0.applications_clock(Clock::Video));
    assert_eq!(d0.default_applications_clock(Clock::SM).unwrap(), 1410);
    assert_eq!(
        d0.default_applications_clock(Clock::Graphics).unwrap(),
        1410
    );
    // A GPU without the line: a GeForce card.
    not_supported(d1.applications_clock(Clock::SM));
    not_supported(d1.default_applications_clock(Clock::Graphics));
    // `fail T G appclock` fails both calls at that tick.
    d0.utilization_rates().unwrap();
    d0.utilization_rates().unwrap();
    let failed = d0.applications_clock(Clock::SM);
    assert!(matches!(failed, Err(NvmlError::NoPermission)), "{failed:?}");
    let failed = d0.default_applications_clock(Clock::SM);
    assert!(matches!(failed, Err(NvmlError::NoPermission)), "{failed:?}");
    d0.utilization_rates().unwrap();
    assert_eq!(d0.applications_clock(Clock::SM).unwrap(), 1410);
}

fn case_procs(nvml: &nvml_wrapper::Nvml, stride: usize) {
    let d = nvml.device_by_index(0).unwrap();
    let h = unsafe { d.handle() };
    let lib = nvml.lib();
    let want = [
        (4242, 5000 * MIB, Some((NO_ID, NO_ID))),
        (4243, MIB, Some((NO_ID, NO_ID))),
    ];
    let v3 = lib
        .nvmlDeviceGetComputeRunningProcesses_v3
        .as_ref()
        .unwrap();
    let (rc, count, bytes) = raw_procs(|count, buf| unsafe { v3(h, count, buf.cast()) });
    rc.unwrap();
    assert_eq!(count, 2);
    assert_eq!(entries(&bytes, stride, 2), want);
    if stride == 32 {
        // usedGpuCcProtectedMemory, and the padding after the pid
        assert_eq!((u64_at(&bytes, 24), u64_at(&bytes, 56)), (0, 0));
        assert_eq!((u32_at(&bytes, 4), u32_at(&bytes, 36)), (0, 0));
    } else {
        let procs: Vec<_> = d
            .running_compute_processes()
            .unwrap()
            .iter()
            .map(|p| (p.pid, used_bytes(p)))
            .collect();
        assert_eq!(procs, [(4242, 5000 * MIB), (4243, MIB)]);
    }
    // The older calls keep their own layouts.
    let v2 = lib
        .nvmlDeviceGetComputeRunningProcesses_v2
        .as_ref()
        .unwrap();
    let (rc, _, bytes) = raw_procs(|count, buf| unsafe { v2(h, count, buf.cast()) });
    rc.unwrap();
    assert_eq!(entries(&bytes, 24, 2), want);
    let v1 = lib.nvmlDeviceGetComputeRunningProcesses.as_ref().unwrap();
    let (rc, _, bytes) = raw_procs(|count, buf| unsafe { v1(h, count, buf.cast()) });
    rc.unwrap();
    assert_eq!(
        entries(&bytes, 16, 2),
        [(4242, 5000 * MIB, None), (4243, MIB, None)]
    );
}

fn case_mig(nvml: &nvml_wrapper::Nvml) {
    use nvml_wrapper::Device;
    use nvml_wrapper::enum_wrappers::device::{Clock, PcieUtilCounter, TemperatureSensor};
    use nvml_wrapper::error::{NvmlError, nvml_try};
    use nvml_wrapper::structs::device::MigMode;
    let d0 = nvml.device_by_index(0).unwrap();
    let d1 = nvml.device_by_index(1).unwrap();
    let d2 = nvml.device_by_index(2).unwrap();

    // Mode and slots.
    let on = MigMode {
        current: 1,
        pending: 1,
    };
    let off = MigMode {
        current: 0,
        pending: 0,
    };
    assert_eq!(d0.mig_mode().unwrap(), on);
    assert_eq!(d1.mig_mode().unwrap(), off);
    assert_eq!(d0.mig_device_count().unwrap(), 7);
    not_supported(d1.mig_device_count());
    let none = d1.mig_device_by_index(0);
    assert!(matches!(none, Err(NvmlError::InvalidArg)), "{none:?}");
    let m0 = d0.mig_device_by_index(0).unwrap();
    let m1 = d0.mig_device_by_index(1).unwrap();
    for i in 2..7 {
        let empty = d0.mig_device_by_index(i);
        assert!(matches!(empty, Err(NvmlError::NotFound)), "{i}: {empty:?}");
    }
    let beyond = d0.mig_device_by_index(7);
    assert!(matches!(beyond, Err(NvmlError::InvalidArg)), "{beyond:?}");
    let nested = m0.mig_device_by_index(0);
    assert!(matches!(nested, Err(NvmlError::InvalidArg)), "{nested:?}");

    // Who the MIG devices are.
    assert!(m0.mig_is_mig_device_handle().unwrap());
    assert!(!d0.mig_is_mig_device_handle().unwrap());
    assert_eq!(m1.mig_parent_device().unwrap().index().unwrap(), 0);
    let orphan = d0.mig_parent_device();
    assert!(matches!(orphan, Err(NvmlError::InvalidArg)), "{orphan:?}");
    assert_eq!(m0.name().unwrap(), "NVIDIA A100-SXM4-80GB MIG 1g.10gb");
    assert_eq!(m1.name().unwrap(), "NVIDIA A100-SXM4-80GB MIG 2g.20gb");
    assert_eq!(m0.uuid().unwrap(), "MIG-fake-0000-0-0");
    assert_eq!(m1.uuid().unwrap(), "MIG-fake-0000-0-1");
    let found = nvml.device_by_uuid("MIG-fake-0000-0-1").unwrap();
    assert_eq!(found.name().unwrap(), m1.name().unwrap());
    for wrong in [m0.index().map(|_| ()), m0.mig_mode().map(|_| ())] {
        assert!(matches!(wrong, Err(NvmlError::InvalidArg)), "{wrong:?}");
    }
    let lib = nvml.lib();
    let instance = |d: &Device, compute: bool| {
        let f = if compute {
            lib.nvmlDeviceGetComputeInstanceId.as_ref()
        } else {
            lib.nvmlDeviceGetGpuInstanceId.as_ref()
        };
        let f = f.unwrap();
        let mut id = NO_ID;
        nvml_try(unsafe { f(d.handle(), &mut id) }).map(|()| id)
    };
    assert_eq!(instance(&m0, false).unwrap(), 0);
    assert_eq!(instance(&m1, false).unwrap(), 1);
    assert_eq!(instance(&m1, true).unwrap(), 0);
    not_supported(instance(&d0, false));
    not_supported(instance(&d0, true));

    // Memory and processes are the MIG devices' own...
    let m = m1.memory_info().unwrap();
    assert_eq!(
        (m.total, m.reserved, m.used, m.free),
        (19968 * MIB, 0, 1200 * MIB, (19968 - 1200) * MIB)
    );
    assert_eq!(
        raw_memory_v1(nvml, &m0).unwrap(),
        [9856 * MIB, (9856 - 5000) * MIB, 5000 * MIB]
    );
    let procs = |d: &Device| -> Vec<(u32, u64, Option<u32>, Option<u32>)> {
        d.running_compute_processes()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p.pid,
                    used_bytes(p),
                    p.gpu_instance_id,
                    p.compute_instance_id,
                )
            })
            .collect()
    };
    assert_eq!(
        procs(&m1),
        [
            (4242, 1000 * MIB, Some(1), Some(0)),
            (4243, 200 * MIB, Some(1), Some(0))
        ]
    );
    assert_eq!(procs(&m0), [(5151, 300 * MIB, Some(0), Some(0))]);
    let h1 = unsafe { m1.handle() };
    let v2 = lib
        .nvmlDeviceGetComputeRunningProcesses_v2
        .as_ref()
        .unwrap();
    let (rc, _, bytes) = raw_procs(|count, buf| unsafe { v2(h1, count, buf.cast()) });
    rc.unwrap();
    assert_eq!(
        entries(&bytes, 24, 2),
        [
            (4242, 1000 * MIB, Some((1, 0))),
            (4243, 200 * MIB, Some((1, 0)))
        ]
    );
    let v1 = lib.nvmlDeviceGetComputeRunningProcesses.as_ref().unwrap();
    let (rc, _, bytes) = raw_procs(|count, buf| unsafe { v1(h1, count, buf.cast()) });
    rc.unwrap();
    assert_eq!(
        entries(&bytes, 16, 2),
        [(4242, 1000 * MIB, None), (4243, 200 * MIB, None)]
    );

    // ...and the parent's need privileges in MIG mode.
    let h0 = unsafe { d0.handle() };
    let denied = [
        d0.memory_info().map(|_| ()),
        raw_memory_v1(nvml, &d0).map(|_| ()),
        d0.running_compute_processes().map(|_| ()),
        raw_procs(|count, buf| unsafe { v1(h0, count, buf.cast()) }).0,
        raw_procs(|count, buf| unsafe { v2(h0, count, buf.cast()) }).0,
    ];
    for result in denied {
        assert!(matches!(result, Err(NvmlError::NoPermission)), "{result:?}");
    }

    // The whole GPU's sensors answer on the parent, not on its MIG devices.
    assert_eq!(d0.power_usage().unwrap(), 250000);
    assert_eq!(d0.enforced_power_limit().unwrap(), 400000);
    assert_eq!(d0.temperature(TemperatureSensor::Gpu).unwrap(), 50);
    assert_eq!(raw_temperature_v(nvml, &d0, TEMPERATURE_V1).unwrap(), 50);
    assert_eq!(d0.clock_info(Clock::SM).unwrap(), 1410);
    assert_eq!(d0.max_clock_info(Clock::SM).unwrap(), 1410);
    assert_eq!(d0.applications_clock(Clock::SM).unwrap(), 1410);
    assert_eq!(d0.current_throttle_reasons().unwrap().bits(), 0x4);
    assert_eq!(raw_event_reasons(nvml, &d0).unwrap(), 0x4);
    assert_eq!(d0.pcie_throughput(PcieUtilCounter::Send).unwrap(), 100);
    for m in [&m0, &m1] {
        not_supported(m.utilization_rates());
        not_supported(m.power_usage());
        not_supported(m.enforced_power_limit());
        not_supported(m.temperature(TemperatureSensor::Gpu));
        not_supported(raw_temperature_v(nvml, m, TEMPERATURE_V1));
        not_supported(m.clock_info(Clock::SM));
        not_supported(m.max_clock_info(Clock::SM));
        not_supported(m.applications_clock(Clock::SM));
        not_supported(m.default_applications_clock(Clock::SM));
        not_supported(m.current_throttle_reasons());
        not_supported(raw_event_reasons(nvml, m));
        not_supported(m.pcie_throughput(PcieUtilCounter::Receive));
        not_supported(m.gpm_support());
    }

    // MIG devices never move the tick; the parent's unsupported utilization still does.
    for _ in 0..3 {
        not_supported(m0.utilization_rates());
    }
    assert_eq!(d0.power_usage().unwrap(), 250000);
    not_supported(d0.utilization_rates());
    assert_eq!(d0.power_usage().unwrap(), 250000);
    not_supported(d0.utilization_rates());
    assert_eq!(d0.power_usage().unwrap(), 260000);
    assert_eq!(m1.memory_info().unwrap().used, 1200 * MIB);
    let log = call_log();
    let utils = lines_of(&log, "nvmlDeviceGetUtilizationRates 0");
    let mut want = vec![
        "nvmlDeviceGetUtilizationRates 0/0 0",
        "nvmlDeviceGetUtilizationRates 0/1 0",
    ];
    want.extend(["nvmlDeviceGetUtilizationRates 0/0 0"; 3]);
    want.extend([
        "nvmlDeviceGetUtilizationRates 0 0",
        "nvmlDeviceGetUtilizationRates 0 1",
    ]);
    assert_eq!(utils, want);
    assert_eq!(
        lines_of(&log, "nvmlDeviceGetMemoryInfo_v2 0/1").last(),
        Some(&"nvmlDeviceGetMemoryInfo_v2 0/1 1")
    );

    // A GPU not in MIG mode answers as any GPU.
    assert_eq!(d1.utilization_rates().unwrap().gpu, 10);
    assert_eq!(d1.memory_info().unwrap().used, 1000 * MIB);

    // A lost parent loses its MIG devices, even through handles taken before.
    let m2 = d2.mig_device_by_index(0).unwrap();
    assert_eq!(m2.name().unwrap(), "NVIDIA Fake GPU MIG 1g.10gb");
    assert_eq!(m2.memory_info().unwrap().total, 9856 * MIB);
    for tick in 0..3 {
        let util = d2.utilization_rates();
        assert_eq!(
            matches!(util, Err(NvmlError::GpuLost)),
            tick == 2,
            "{util:?}"
        );
    }
    for lost in [
        m2.name().map(|_| ()),
        m2.memory_info().map(|_| ()),
        m2.running_compute_processes().map(|_| ()),
        d2.mig_device_by_index(0).map(|_| ()),
    ] {
        assert!(matches!(lost, Err(NvmlError::GpuLost)), "{lost:?}");
    }
}

fn case_delay(nvml: &nvml_wrapper::Nvml) {
    use nvml_wrapper::enum_wrappers::device::PcieUtilCounter;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::{Duration, Instant};
    let d0 = nvml.device_by_index(0).unwrap();
    let d1 = nvml.device_by_index(1).unwrap();
    let start = Instant::now();
    assert_eq!(d0.pcie_throughput(PcieUtilCounter::Send).unwrap(), 10);
    let took = start.elapsed();
    assert!(took >= Duration::from_millis(400), "PCIe took {took:?}");
    // One delay line per field: processes sleep their own time.
    let start = Instant::now();
    let sized = d1.running_compute_processes_count().unwrap();
    assert_eq!(sized, 0);
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(300),
        "processes took {took:?}"
    );
    // While one thread sleeps in a PCIe call, the others' calls are answered: the fake's lock
    // is not held while it sleeps.
    let pcie_done = AtomicBool::new(false);
    std::thread::scope(|s| {
        s.spawn(|| {
            assert_eq!(d0.pcie_throughput(PcieUtilCounter::Receive).unwrap(), 20);
            pcie_done.store(true, Ordering::SeqCst);
        });
        std::thread::sleep(Duration::from_millis(50));
        let start = Instant::now();
        assert_eq!(d1.utilization_rates().unwrap().gpu, 10);
        assert_eq!(d0.power_usage().unwrap(), 70000);
        assert_eq!(d0.name().unwrap(), "NVIDIA Fake GPU");
        assert!(
            !pcie_done.load(Ordering::SeqCst),
            "these calls waited for the sleeping PCIe call ({:?})",
            start.elapsed()
        );
    });
    assert!(pcie_done.load(Ordering::SeqCst));
}

fn case_uuid(nvml: &nvml_wrapper::Nvml) {
    use nvml_wrapper::error::NvmlError;
    const UUID: &str = "GPU-6e3d2b0a-1c2f-4f5e-9a8b-0c1d2e3f4a5b";
    let d1 = nvml.device_by_index(1).unwrap();
    assert_eq!(d1.uuid().unwrap(), UUID);
    assert_eq!(nvml.device_by_uuid(UUID).unwrap().index().unwrap(), 1);
    let d0 = nvml.device_by_uuid("GPU-fake-0000-0").unwrap();
    assert_eq!(d0.index().unwrap(), 0);
    // Exact matches only; GPU 1's default UUID is gone.
    for absent in ["GPU-fake-0000-1", "GPU-6e3d2b0a", "gpu-fake-0000-0", ""] {
        let found = nvml.device_by_uuid(absent);
        assert!(
            matches!(found, Err(NvmlError::NotFound)),
            "{absent}: {found:?}"
        );
    }
    // MIG devices are found by theirs.
    let m = nvml.device_by_uuid("MIG-fake-0000-2-0").unwrap();
    assert!(m.mig_is_mig_device_handle().unwrap());
    assert_eq!(m.mig_parent_device().unwrap().index().unwrap(), 2);
}

fn case_call_log(nvml: &nvml_wrapper::Nvml) {
    use nvml_wrapper::error::NvmlError;
    assert_eq!(nvml.device_count().unwrap(), 2);
    let d0 = nvml.device_by_index(0).unwrap();
    d0.utilization_rates().unwrap();
    d0.utilization_rates().unwrap();
    d0.memory_info().unwrap();
    let d1 = nvml.device_by_index(1).unwrap();
    not_supported(d1.utilization_rates());
    let m = d1.mig_device_by_index(0).unwrap();
    m.memory_info().unwrap();
    not_supported(m.utilization_rates());
    not_supported(d1.utilization_rates());
    m.name().unwrap();
    assert!(matches!(
        nvml.device_by_index(5),
        Err(NvmlError::InvalidArg)
    ));
    assert!(matches!(
        nvml.device_by_uuid("nope"),
        Err(NvmlError::NotFound)
    ));
    nvml.device_by_uuid("MIG-fake-0000-1-0").unwrap();
    d0.current_throttle_reasons().unwrap();
    assert_eq!(
        call_log(),
        [
            "nvmlDeviceGetCount_v2 - -",
            "nvmlDeviceGetHandleByIndex_v2 0 0",
            "nvmlDeviceGetUtilizationRates 0 0",
            "nvmlDeviceGetUtilizationRates 0 1",
            "nvmlDeviceGetMemoryInfo_v2 0 1",
            "nvmlDeviceGetHandleByIndex_v2 1 0",
            "nvmlDeviceGetUtilizationRates 1 0",
            "nvmlDeviceGetMigDeviceHandleByIndex 1 0",
            "nvmlDeviceGetMemoryInfo_v2 1/0 0",
            "nvmlDeviceGetUtilizationRates 1/0 0",
            "nvmlDeviceGetUtilizationRates 1 1",
            "nvmlDeviceGetName 1/0 1",
            "nvmlDeviceGetHandleByIndex_v2 - -",
            "nvmlDeviceGetHandleByUUID - -",
            "nvmlDeviceGetHandleByUUID 1/0 1",
            "nvmlDeviceGetCurrentClocksThrottleReasons 0 1",
        ]
    );
    // Calls from several threads at once: one whole line each.
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..250 {
                    d0.name().unwrap();
                }
            });
        }
    });
    let log = call_log();
    assert_eq!(log.len(), 16 + 1000);
    assert!(log[16..].iter().all(|l| l == "nvmlDeviceGetName 0 1"));
}

/// Calls of `nvmlDeviceGetName` that `case_log_flood` makes, from four threads.
const LOG_FLOOD_CALLS: usize = 4 * 2000;

fn case_log_flood(nvml: &nvml_wrapper::Nvml) {
    let d0 = nvml.device_by_index(0).unwrap();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..LOG_FLOOD_CALLS / 4 {
                    d0.name().unwrap();
                }
            });
        }
    });
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
