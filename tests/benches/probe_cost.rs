//! `cargo bench --bench probe_cost`: the CPU time of one sample of the host and a fake trainer
//! with 50 DataLoader workers (tests/fake/trainer.c), on the fast tier (every second) and the
//! slow tier (memory from smaps_rollup, every fifth), and the sampler's share of one core at
//! 1 Hz; and the cost of one search for a log's writer (every process's descriptors), which
//! runs only while no trainer is known, backing off to once a minute. CPU time is this thread's own, from /proc/thread-self/schedstat (nanoseconds).
//! NVML's calls are then timed through the fake NVML library (tests/fake/nvml.c) with 8 GPUs:
//! what steptop's own side of each call costs, and what a real driver's 20 ms PCIe counter
//! would cost a reading before and after it moves to the slow tier. A real driver costs what
//! it costs: run the same reading on a GPU machine to know it.

#[path = "../support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use steptop::testing::CudaEnv;
use steptop::testing::GpuProbe;
use steptop::{Sampler, SamplerOptions};

const GPUS: u32 = 8;

const WORKERS: u32 = 50;
const SAMPLES: usize = 200;

fn main() {
    // The fake NVML reads its scenario from the environment when NVML starts; this is set
    // while the process has one thread.
    let dir = tempfile::tempdir().expect("tempdir");
    let plain = dir.path().join("plain.txt");
    let slow_pcie = dir.path().join("slow-pcie.txt");
    std::fs::write(&plain, scenario("")).expect("scenario");
    std::fs::write(&slow_pcie, scenario("delay pcie 20000\n")).expect("scenario");
    // SAFETY: no other thread runs yet.
    unsafe {
        std::env::set_var("STEPTOP_NVML_LIB", support::fake_nvml());
        std::env::set_var("FAKE_NVML_SCENARIO", &plain);
    }
    nvml_calls();
    // SAFETY: as above; the previous NVML session has ended.
    unsafe { std::env::set_var("FAKE_NVML_SCENARIO", &slow_pcie) };
    slow_counters();
    let trainer = support::FakeTrainer::spawn(64, 4, WORKERS, None);
    let nvml = Err("no GPU in this benchmark".to_string());
    let fast = cpu_per_sample(&nvml, trainer.pid, u32::MAX);
    let slow = cpu_per_sample(&nvml, trainer.pid, 1);
    println!("probe_cost: host + fake trainer with {WORKERS} workers, {SAMPLES} samples per tier");
    println!(
        "  fast tier: median {:.0} us CPU per sample (p90 {:.0} us)",
        fast.0, fast.1
    );
    println!(
        "  slow tier: median {:.0} us CPU per sample (p90 {:.0} us)",
        slow.0, slow.1
    );
    // At 1 Hz, four fast samples and one slow one every five seconds.
    let share = (4.0 * fast.0 + slow.0) / 5.0 / 1e6 * 100.0;
    println!("  sampler at 1 Hz (slow tier every 5 s): {share:.3}% of one core");
    let (scan, processes) = discovery_scan(&trainer);
    println!(
        "  search for a log's writer: median {:.0} us CPU over {processes} processes \
         ({:.4}% of one core at its slowest pace, once a minute)",
        scan,
        scan / 60.0 / 1e6 * 100.0
    );
}

/// 8 GPUs, each with one compute process, and `more` directives.
fn scenario(more: &str) -> String {
    let mut s = format!("gpus {GPUS}\n");
    for g in 0..GPUS {
        s += &format!(
            "row 0 {g} 90 40 30000 81559 500000 700000 60 1755 1980 0x0 1000 2000\nproc {g} {} 3000\n",
            10_000 + g
        );
    }
    s + more
}

/// steptop's side of each NVML call, through the fake library: mean and worst per call.
fn nvml_calls() {
    let nvml = steptop::testing::open_nvml().expect("the fake NVML opens");
    let mut probe = GpuProbe::new(&nvml, None, false, &CudaEnv::default()).expect("GPUs");
    let mut wall: Vec<Duration> = (0..SAMPLES)
        .map(|i| {
            let start = Instant::now();
            std::hint::black_box(probe.read(i % 5 == 0));
            start.elapsed()
        })
        .collect();
    wall.sort();
    println!(
        "probe_cost: NVML through the fake library, {GPUS} GPUs, {SAMPLES} readings (slow tier every 5th)"
    );
    println!(
        "  one reading of all {GPUS} GPUs: median {:.0} us wall (p90 {:.0} us)",
        micros(wall[wall.len() / 2]),
        micros(wall[wall.len() * 9 / 10])
    );
    for c in probe.costs().calls() {
        println!(
            "  {:<22} {:>7} calls, mean {:>5.0} ns, worst {:>6.0} ns",
            c.call,
            c.count,
            micros(c.total) * 1e3 / c.count as f64,
            micros(c.max) * 1e3
        );
    }
}

/// A reading's wall time when the PCIe counters take 20 ms, as a real driver's may: the first
/// reading pays for them, later fast ones do not.
fn slow_counters() {
    let nvml = steptop::testing::open_nvml().expect("the fake NVML opens");
    let mut probe = GpuProbe::new(&nvml, None, false, &CudaEnv::default()).expect("GPUs");
    let wall: Vec<Duration> = (0..10)
        .map(|i| {
            let start = Instant::now();
            std::hint::black_box(probe.read(i % 5 == 0));
            start.elapsed()
        })
        .collect();
    let first = wall[0];
    let slow_again = wall[5];
    let mut fast: Vec<Duration> = (1..10).filter(|i| i % 5 != 0).map(|i| wall[i]).collect();
    fast.sort();
    println!("  with 20 ms PCIe counters on {GPUS} GPUs:");
    println!(
        "    first reading {:.0} ms (every counter read once, found slow)",
        first.as_secs_f64() * 1e3
    );
    println!(
        "    fast readings after it: median {:.2} ms (PCIe left to the slow tier)",
        fast[fast.len() / 2].as_secs_f64() * 1e3
    );
    println!(
        "    slow-tier reading: {:.0} ms (every 5th, in the sampler's own thread)",
        slow_again.as_secs_f64() * 1e3
    );
}

fn micros(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

/// Median CPU microseconds of one search for the writer of a log nobody writes, and the
/// number of processes it looked at.
fn discovery_scan(trainer: &support::FakeTrainer) -> (f64, usize) {
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("train.log");
    std::fs::write(&log, "").expect("log");
    let logs = [log];
    let root = std::path::Path::new("/proc");
    let mut us: Vec<f64> = (0..20)
        .map(|_| {
            let before = thread_cpu_ns();
            let found = steptop::testing::by_log_writer(root, &logs);
            assert!(found.is_none(), "nobody writes this log");
            (thread_cpu_ns() - before) as f64 / 1000.0
        })
        .collect();
    us.sort_by(f64::total_cmp);
    let processes = std::fs::read_dir(root)
        .expect("/proc")
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.parse::<u32>().is_ok())
        })
        .count();
    assert!(
        processes > trainer.workers.len(),
        "the fake trainer's tree is in /proc"
    );
    (us[us.len() / 2], processes)
}

/// Median and p90 CPU microseconds of one sample, slow tier every `slow_every`.
fn cpu_per_sample(
    nvml: &Result<nvml_wrapper::Nvml, String>,
    pid: u32,
    slow_every: u32,
) -> (f64, f64) {
    let opts = SamplerOptions {
        pid: Some(pid),
        slow_every,
        ..SamplerOptions::default()
    };
    let mut sampler = Sampler::new(nvml, opts);
    // The first sample reads everything once (the slow tier always runs first).
    let s = sampler.sample(0.0);
    let workers = s.trainer.as_ref().map_or(0, |t| t.workers.len());
    assert_eq!(workers, WORKERS as usize, "the sampler sees every worker");
    let mut us: Vec<f64> = (1..=SAMPLES)
        .map(|i| {
            let before = thread_cpu_ns();
            let s = sampler.sample(i as f64);
            std::hint::black_box(s);
            (thread_cpu_ns() - before) as f64 / 1000.0
        })
        .collect();
    us.sort_by(f64::total_cmp);
    (us[us.len() / 2], us[us.len() * 9 / 10])
}

fn thread_cpu_ns() -> u64 {
    // The kernel brings a running thread's runtime up to date when it enters the scheduler.
    std::thread::yield_now();
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|t| t.split_whitespace().next()?.parse().ok())
        .expect("/proc/thread-self/schedstat")
}
