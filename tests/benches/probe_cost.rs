//! `cargo bench --bench probe_cost`: the CPU time of one sample of the host and a fake trainer
//! with 50 DataLoader workers (tests/fake/trainer.c), on the fast tier (every second) and the
//! slow tier (memory from smaps_rollup, every fifth), and the sampler's share of one core at
//! 1 Hz; and the cost of one search for a log's writer (every process's descriptors), which
//! runs only while no trainer is known, backing off to once a minute. CPU time is this thread's own, from /proc/thread-self/schedstat (nanoseconds).
//! NVML's calls are not in it: they cost what the driver costs, measured on a real GPU.

#[path = "../support/mod.rs"]
mod support;

use steptop::probe::{Sampler, SamplerOptions};

const WORKERS: u32 = 50;
const SAMPLES: usize = 200;

fn main() {
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
            let found = steptop::probe::trainer::by_log_writer(root, &logs);
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
