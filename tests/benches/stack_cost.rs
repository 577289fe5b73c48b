//! `cargo bench --bench stack_cost`: what sampling the trainer's Python stacks costs, measured
//! side by side on a Python trainer with 4 workers and about 100 threads
//! (tests/fake/pytrainer.py): `steptop probe` with its stacks and with `--no-stacks`, in
//! alternating rounds of `STEPTOP_BENCH_SECONDS` (20) each. Printed per mode: steptop's CPU in
//! % of one core (from /proc/PID/stat), the trainer's steps per second, and their medians; the
//! difference is the stack sampler's cost and the trainer's slowdown. Default rates and budget.

#[path = "../support/mod.rs"]
mod support;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ROUNDS: usize = 3;

/// Steps the trainer has logged.
fn steps(log: &std::path::Path) -> usize {
    std::fs::read_to_string(log).map_or(0, |t| t.lines().count())
}

fn main() {
    let seconds: u64 = std::env::var("STEPTOP_BENCH_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    let t = support::PyTrainer::start(&[
        "--workers",
        "4",
        "--threads",
        "96",
        "--hot-ms",
        "40",
        "--wait-ms",
        "10",
        "--read-ms",
        "30",
        "--decode-ms",
        "30",
    ]);
    let threads = std::fs::read_dir(format!("/proc/{}/task", t.pid())).map_or(0, |d| d.count());
    println!(
        "stack_cost: trainer pid {} with {threads} threads and 4 workers, {seconds} s a round, \
         {ROUNDS} rounds per mode",
        t.pid()
    );
    let mut results: Vec<(&str, Vec<f64>, Vec<f64>)> = vec![
        ("--no-stacks", Vec::new(), Vec::new()),
        ("stacks", Vec::new(), Vec::new()),
    ];
    for round in 0..ROUNDS {
        for (mode, cpu, rate) in results.iter_mut() {
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_steptop"));
            cmd.args(["probe", "--format", "json", "--pid", &t.pid()])
                .env_remove("STEPTOP_CONFIG")
                .env("XDG_CONFIG_HOME", "/nonexistent/steptop-bench")
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            if *mode == "--no-stacks" {
                cmd.arg("--no-stacks");
            }
            let mut child = cmd.spawn().expect("steptop runs");
            // Past the start (the first reading, attaching to the processes).
            std::thread::sleep(Duration::from_secs(3));
            let (cpu0, steps0, at0) = (
                support::cpu_seconds(child.id()),
                steps(&t.log()),
                Instant::now(),
            );
            std::thread::sleep(Duration::from_secs(seconds));
            let wall = at0.elapsed().as_secs_f64();
            let used = support::cpu_seconds(child.id()) - cpu0;
            let stepped = (steps(&t.log()) - steps0) as f64;
            let _ = child.kill();
            let _ = child.wait();
            cpu.push(100.0 * used / wall);
            rate.push(stepped / wall);
            println!(
                "  round {}: {mode:<12} steptop {:.2}% of a core, trainer {:.2} steps/s",
                round + 1,
                100.0 * used / wall,
                stepped / wall
            );
        }
    }
    let (base_cpu, base_rate) = (
        support::median(results[0].1.clone()),
        support::median(results[0].2.clone()),
    );
    let (cpu, rate) = (
        support::median(results[1].1.clone()),
        support::median(results[1].2.clone()),
    );
    println!(
        "  median --no-stacks: steptop {base_cpu:.2}% of a core, trainer {base_rate:.2} steps/s"
    );
    println!("  median stacks:      steptop {cpu:.2}% of a core, trainer {rate:.2} steps/s");
    println!(
        "  the stack sampler: {:.2}% of a core; the trainer's rate {:+.1}%",
        cpu - base_cpu,
        100.0 * (rate / base_rate - 1.0)
    );
}
