//! Helpers shared by the integration tests and benches: they build the C fakes under
//! `tests/fake/` with the system C compiler (`cc`) and run them.
//!
//! Include with `mod support;` from a file in `tests/`, or with
//! `#[path = "../support/mod.rs"] mod support;` from one in `tests/benches/`.

pub mod tmux;

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

/// How long [`FakeTrainer::spawn`] waits for the trainer's `ready` line.
const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// Compiles `tests/fake/{source}` with `cc` into `CARGO_TARGET_TMPDIR/{dir}/{output}` and returns
/// that path. Builds under a name of its own first and renames it into place, so test processes
/// that build at the same time never see (or run, or load) a half-written file.
fn compile(source: &str, dir: &str, output: &str, extra_args: &[&str]) -> PathBuf {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fake")
        .join(source);
    let out_dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(dir);
    std::fs::create_dir_all(&out_dir)
        .unwrap_or_else(|e| panic!("cannot create {}: {e}", out_dir.display()));
    let out = out_dir.join(output);
    let partial = out_dir.join(format!(".{output}.{}.partial", std::process::id()));
    let result = Command::new("cc")
        .args(extra_args)
        .args(["-O1", "-Wall", "-Wextra", "-o"])
        .arg(&partial)
        .arg(&src)
        .output();
    let built = match result {
        Ok(built) => built,
        Err(e) => panic!(
            "cannot run `cc` to build {}: {e}; these tests need a C compiler (`cc`, e.g. gcc) \
             installed",
            src.display()
        ),
    };
    if !built.status.success() {
        let _ = std::fs::remove_file(&partial);
        panic!(
            "`cc` failed ({}) to build {}; these tests need a working C compiler (`cc`, e.g. \
             gcc) installed. Compiler output:\n{}{}",
            built.status,
            src.display(),
            String::from_utf8_lossy(&built.stdout),
            String::from_utf8_lossy(&built.stderr)
        );
    }
    std::fs::rename(&partial, &out).unwrap_or_else(|e| {
        panic!(
            "cannot move {} to {}: {e}",
            partial.display(),
            out.display()
        )
    });
    out
}

/// Path of the fake `libnvidia-ml.so.1` built from `tests/fake/nvml.c` (once per process); load
/// it with `nvml_wrapper::Nvml::builder().lib_path(..)`. Its behaviour comes from the scenario
/// file named by `FAKE_NVML_SCENARIO` (see the comment at the top of `nvml.c`).
// Not every test binary that includes this module probes GPUs.
#[allow(dead_code)]
pub fn fake_nvml() -> PathBuf {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| {
        compile(
            "nvml.c",
            "fake-nvml",
            "libnvidia-ml.so.1",
            &["-shared", "-fPIC"],
        )
    })
    .clone()
}

/// Path of a `libcuda.so.1` built from `tests/fake/cuda.c`: loaded by a test's trainer, it
/// stands for the NVIDIA driver's CUDA library in the process's maps.
// Not every test binary that includes this module samples stacks.
#[allow(dead_code)]
pub fn fake_cuda_driver() -> PathBuf {
    static LIB: OnceLock<PathBuf> = OnceLock::new();
    LIB.get_or_init(|| compile("cuda.c", "fake-cuda", "libcuda.so.1", &["-shared", "-fPIC"]))
        .clone()
}

/// Path of the fake `libnvidia-ml.so.1` built from `tests/fake/nvml.c` as a driver of branch
/// `major` would export it (`-DFAKE_DRIVER=major`: e.g. 470 lacks `nvmlDeviceGetMemoryInfo_v2`;
/// see the comment at the top of `nvml.c`), in `fake-nvml-{major}/`. Built once per process per
/// major; [`fake_nvml`] is the default build (a current driver).
// Not every test binary that includes this module probes GPUs.
#[allow(dead_code)]
pub fn fake_nvml_driver(major: u32) -> PathBuf {
    static LIBS: OnceLock<Mutex<HashMap<u32, Arc<OnceLock<PathBuf>>>>> = OnceLock::new();
    // The map's lock is held only to find the major's slot, so builds of different majors can
    // run at once while callers of one major wait for its single build.
    let slot = LIBS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .entry(major)
        .or_default()
        .clone();
    slot.get_or_init(|| {
        compile(
            "nvml.c",
            &format!("fake-nvml-{major}"),
            "libnvidia-ml.so.1",
            &["-shared", "-fPIC", &format!("-DFAKE_DRIVER={major}")],
        )
    })
    .clone()
}

/// Path of the fake training job built from `tests/fake/trainer.c` (once per process).
fn trainer() -> &'static Path {
    static TRAINER: OnceLock<PathBuf> = OnceLock::new();
    TRAINER.get_or_init(|| compile("trainer.c", "fake-trainer", "trainer", &[]))
}

/// A running fake training job (`tests/fake/trainer.c`): a parent holding a shared block of
/// memory and worker children that each hold a private block and share the parent's
/// copy-on-write. Dropping it ends the parent and all its workers.
// Not every test binary that includes this module runs a trainer.
#[allow(dead_code)]
pub struct FakeTrainer {
    /// The parent process.
    pub pid: u32,
    /// The worker processes, children of `pid`, in the order they were started.
    pub workers: Vec<u32>,
    child: Child,
}

// Not every test binary that includes this module runs a trainer.
#[allow(dead_code)]
impl FakeTrainer {
    /// Starts `trainer SHARED_MIB PRIVATE_MIB WORKERS [LOG]` and returns once every worker has
    /// touched its memory. With `log`, the parent opens that file for appending and keeps it open
    /// (the workers inherit the descriptor). Panics if the job is not ready within 30 s.
    pub fn spawn(shared_mib: u32, private_mib: u32, workers: u32, log: Option<&Path>) -> Self {
        let mut command = Command::new(trainer());
        command
            .arg(shared_mib.to_string())
            .arg(private_mib.to_string())
            .arg(workers.to_string());
        if let Some(log) = log {
            command.arg(log);
        }
        Self::start(command, workers)
    }

    /// Starts the trainer the way `script` (bash) does, with `$1` the trainer's path and `$2`
    /// `log`: `"$1" 8 2 2 | tee "$2"`. The script must pass the trainer's `ready` line to its
    /// stdout and `workers` must match the count the script gives.
    pub fn spawn_wrapped(script: &str, workers: u32, log: &Path) -> Self {
        let mut command = Command::new("bash");
        command
            .args(["-c", script, "fake-trainer-wrapper"])
            .arg(trainer())
            .arg(log);
        Self::start(command, workers)
    }

    fn start(mut command: Command, workers: u32) -> Self {
        // A piped stdin: the trainer also ends when it reads end of file there, which happens
        // when this process dies without dropping the FakeTrainer.
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", trainer().display()));

        let stdout = child.stdout.take().expect("stdout is piped");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let read = BufReader::new(stdout).read_line(&mut line).map(|_| line);
            let _ = tx.send(read);
        });
        let line = match rx.recv_timeout(READY_TIMEOUT) {
            Ok(Ok(line)) => line,
            Ok(Err(e)) => Self::fail(child, &format!("reading its stdout failed: {e}")),
            Err(_) => Self::fail(
                child,
                &format!("no `ready` line within {} s", READY_TIMEOUT.as_secs()),
            ),
        };

        let mut words = line.split_whitespace();
        let pids: Option<Vec<u32>> = match words.next() {
            Some("ready") => words.map(|w| w.parse().ok()).collect(),
            _ => None,
        };
        match pids {
            Some(pids) if pids.len() == workers as usize + 1 => Self {
                pid: pids[0],
                workers: pids[1..].to_vec(),
                child,
            },
            _ => Self::fail(
                child,
                &format!("expected `ready PID` and {workers} worker pids, got {line:?}"),
            ),
        }
    }

    /// Kills a trainer that did not start right and panics with `why`.
    fn fail(mut child: Child, why: &str) -> ! {
        let _ = child.kill();
        let status = child.wait();
        panic!(
            "fake trainer ({}) did not start: {why}; it ended with {status:?}",
            trainer().display()
        );
    }
}

impl Drop for FakeTrainer {
    fn drop(&mut self) {
        // SIGTERM: the trainer kills and reaps its workers, then exits. Without a `kill` program,
        // closing its stdin has the same effect.
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.pid.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

/// A file that stands in for an NVIDIA device node (`DIR/dev/nvidia0`): steptop takes a
/// process for a GPU user only when it holds such a node open, as every CUDA process does.
#[allow(dead_code)]
pub fn fake_gpu_node(dir: &Path) -> PathBuf {
    let dev = dir.join("dev");
    std::fs::create_dir_all(&dev).expect("dev dir");
    let node = dev.join("nvidia0");
    std::fs::write(&node, "").expect("node");
    node
}

/// What `steptop probe --format json` printed against the fake NVML, and the fake's call log.
#[allow(dead_code)]
pub struct ProbeRun {
    /// The readings, one JSON object a line.
    pub readings: Vec<serde_json::Value>,
    /// `FUNCTION GPU TICK` lines, one per NVML call.
    pub calls: String,
}

/// Runs `steptop probe --format json ARGS` against the fake library `lib` (a driver
/// generation) with `scenario` and `env`, until it has printed `lines` readings; then kills it.
#[allow(dead_code)]
pub fn probe(
    lib: &Path,
    args: &[&str],
    scenario: &str,
    env: &[(&str, &str)],
    lines: usize,
) -> ProbeRun {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("scenario.txt");
    let log = dir.path().join("calls.log");
    std::fs::write(&path, scenario).expect("scenario");
    let mut child = Command::new(env!("CARGO_BIN_EXE_steptop"))
        .env_remove("STEPTOP_CONFIG")
        .env("XDG_CONFIG_HOME", "/nonexistent/steptop-tests")
        .arg("probe")
        .args(["--format", "json"])
        .args(args)
        .env("STEPTOP_NVML_LIB", lib)
        .env("FAKE_NVML_SCENARIO", &path)
        .env("FAKE_NVML_LOG", &log)
        .env_remove("FAKE_NVML_INIT")
        .env_remove("CUDA_VISIBLE_DEVICES")
        .env_remove("CUDA_DEVICE_ORDER")
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("steptop runs");
    let out = BufReader::new(child.stdout.take().expect("stdout"));
    let mut readings = Vec::new();
    for line in out.lines().take(lines) {
        let line = line.expect("line");
        readings.push(serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}")));
    }
    let _ = child.kill();
    let status = child.wait().expect("wait");
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = std::io::Read::read_to_string(&mut e, &mut err);
    }
    assert_eq!(
        readings.len(),
        lines,
        "steptop ended early ({status}): {err}"
    );
    ProbeRun {
        readings,
        calls: std::fs::read_to_string(&log).unwrap_or_default(),
    }
}

/// tests/fake/pytrainer.py, a Python program shaped like a trainer, running (with its
/// workers, in a process group of its own) until dropped; its truth file is written when it
/// stops.
#[allow(dead_code)]
pub struct PyTrainer {
    child: Child,
    pub dir: tempfile::TempDir,
}

#[allow(dead_code)]
impl PyTrainer {
    pub fn start(args: &[&str]) -> PyTrainer {
        PyTrainer::start_with_env(args, &[])
    }

    /// Started with these variables added to its environment (a scheduler's, a launcher's).
    pub fn start_with_env(args: &[&str], env: &[(&str, &str)]) -> PyTrainer {
        let dir = tempfile::tempdir().expect("tempdir");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fake/pytrainer.py");
        // Its own process group: the workers go with it, whatever ends the test.
        let mut child = Command::new("python3")
            .process_group(0)
            .arg(&script)
            .arg("--log")
            .arg(dir.path().join("train.log"))
            .arg("--truth")
            .arg(dir.path().join("truth.json"))
            .args(args)
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("python3 runs (the stack tests need it; .ci/run installs it)");
        let mut ready = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut ready)
            .expect("read");
        assert_eq!(ready.trim(), "ready", "the trainer did not start");
        PyTrainer { child, dir }
    }

    pub fn pid(&self) -> String {
        self.child.id().to_string()
    }

    pub fn log(&self) -> PathBuf {
        self.dir.path().join("train.log")
    }

    /// Stops it (SIGTERM: it writes what it measured) and returns that.
    pub fn truth(mut self) -> serde_json::Value {
        Command::new("kill")
            .args(["-TERM", &self.pid()])
            .status()
            .expect("kill");
        self.child.wait().expect("wait");
        let text = std::fs::read_to_string(self.dir.path().join("truth.json")).expect("truth");
        serde_json::from_str(&text).expect("truth json")
    }
}

impl Drop for PyTrainer {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .args(["-KILL", "--", &format!("-{}", self.child.id())])
            .status();
        let _ = self.child.wait();
    }
}

/// A config that samples fast, so that a test has enough samples in seconds.
#[allow(dead_code)]
pub fn fast_stacks_config(dir: &Path) -> PathBuf {
    let path = dir.join("stacks.toml");
    std::fs::write(
        &path,
        "[stacks]\nmain-every-ms = 50\nworker-every-ms = 50\nbudget-pct = 50\n",
    )
    .expect("config");
    path
}

/// The steptop binary with no user config: `$STEPTOP_CONFIG` unset and a config directory
/// that does not exist, so a test sees the defaults whoever runs it.
#[allow(dead_code)]
pub fn steptop() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_steptop"));
    c.env_remove("STEPTOP_CONFIG")
        .env("XDG_CONFIG_HOME", "/nonexistent/steptop-tests");
    c
}

/// `steptop report --format json` over `args` (inputs and flags), asserting that it
/// succeeds: the report as JSON.
#[allow(dead_code)]
pub fn report_json<S: AsRef<std::ffi::OsStr>>(args: &[S]) -> serde_json::Value {
    let out = steptop()
        .args(["report", "--format", "json"])
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("steptop runs");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    serde_json::from_slice(&out.stdout).expect("a JSON report")
}

/// CPU seconds (user + system) process `pid` has used, from /proc/PID/stat.
#[allow(dead_code)]
pub fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command name, which is in parentheses and may hold spaces.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, r)| r.split_whitespace().collect())
        .unwrap_or_default();
    let ticks: f64 = fields
        .get(11..13)
        .map(|f| f.iter().filter_map(|x| x.parse::<f64>().ok()).sum())
        .unwrap_or(0.0);
    // utime and stime; USER_HZ is 100 on every Linux this runs on.
    ticks / 100.0
}

/// Writes the interleaved log the benchmarks read (`tests/benches/mklog.py`: several
/// libraries' lines in one stdout) of about `bytes` at `path`; false when python3 cannot.
#[allow(dead_code)]
pub fn interleaved_log(path: &Path, bytes: u64) -> bool {
    Command::new("python3")
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/benches/mklog.py"))
        .arg(path)
        .arg(bytes.to_string())
        .status()
        .is_ok_and(|s| s.success())
}

/// Values as a bench prints a series of windows: `4.80 5.00 5.60`.
#[allow(dead_code)]
pub fn listed(values: &[f64]) -> String {
    values
        .iter()
        .map(|v| format!("{v:.2}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The middle value (the upper one of an even count).
#[allow(dead_code)]
pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The variables of a job's scheduler and launcher, which label a steptop's series: none of
/// the test's own (it may run inside a Slurm job) reach a steptop unless a test sets them.
#[allow(dead_code)]
pub const JOB_VARS: [&str; 11] = [
    "SLURM_JOB_ID",
    "SLURM_JOB_NAME",
    "SLURM_NODEID",
    "SLURM_PROCID",
    "SLURM_LOCALID",
    "SLURM_NTASKS",
    "RANK",
    "LOCAL_RANK",
    "GROUP_RANK",
    "WORLD_SIZE",
    "TORCHELASTIC_RUN_ID",
];

/// The address a steptop started with `--metrics-addr` and a piped stderr serves on: the
/// first line it writes there.
#[allow(dead_code)]
pub fn metrics_addr(child: &mut Child) -> String {
    let mut line = String::new();
    BufReader::new(child.stderr.take().expect("a piped stderr"))
        .read_line(&mut line)
        .expect("read stderr");
    line.trim()
        .strip_prefix("steptop: metrics on http://")
        .and_then(|s| s.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("no metrics address on stderr: {line:?}"))
        .to_string()
}

/// A monitor that has read a recorded run (a fixture's run.jsonl) through the replay path.
#[allow(dead_code)]
pub fn replayed(recording: &Path) -> steptop::Monitor {
    let mut mon = steptop::Monitor::new(Default::default(), Default::default());
    steptop::replay_messages(&[recording], &Default::default(), 0, &mut |m, _| {
        mon.apply(m);
    })
    .expect("the recording");
    mon
}

/// A headless steptop following one file, its status lines every 100 ms: its JSON lines as
/// they come, each with when it came. Killed when dropped.
#[allow(dead_code)]
pub struct HeadlessLines {
    child: Child,
    lines: mpsc::Receiver<(std::time::Instant, serde_json::Value)>,
}

#[allow(dead_code)]
impl HeadlessLines {
    pub fn follow(path: &Path) -> HeadlessLines {
        let mut child = steptop()
            .args([
                "--headless",
                "--no-probe",
                "--format",
                "json",
                "--status-every",
                "100ms",
            ])
            .arg(path)
            .stdout(Stdio::piped())
            .spawn()
            .expect("start steptop");
        let (tx, lines) = mpsc::channel();
        let stdout = child.stdout.take().expect("its stdout");
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { return };
                let v = serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line}"));
                if tx.send((std::time::Instant::now(), v)).is_err() {
                    return;
                }
            }
        });
        HeadlessLines { child, lines }
    }

    /// The first status line whose step is at least `want` (within 20 s): when it came, and
    /// its step.
    pub fn step_at_least(&self, want: u64) -> (std::time::Instant, u64) {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let (at, v) = self
                .lines
                .recv_timeout(deadline.saturating_duration_since(std::time::Instant::now()))
                .expect("a status line in time");
            if v["kind"] == "status" && v["step"].as_u64().is_some_and(|s| s >= want) {
                return (at, v["step"].as_u64().unwrap_or_default());
            }
        }
    }

    /// The lines that came and were not read yet.
    pub fn rest(&self) -> Vec<serde_json::Value> {
        self.lines.try_iter().map(|(_, v)| v).collect()
    }
}

impl Drop for HeadlessLines {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
