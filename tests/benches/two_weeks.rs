//! `cargo bench --bench two_weeks`: memory over a two-week run. Writes a recording of one
//! (1,000,000 timestamped steps of 1.21 s and 1,209,600 hardware samples at 1 Hz, interleaved
//! as a live monitor receives them; every 3,000 steps the input stalls for 300 steps, so
//! data_loading_bound and low GPU utilization are raised and cleared about 330 times), then
//! replays it at max speed, headless and in the live view (in tmux, 160x48), and prints the
//! child's RSS when it has read 10%, 50% and 100% of the input (from /proc/PID/io and
//! /proc/PID/status, every 20 ms). STEPTOP_BENCH_SCALE=0.1 writes a tenth of the run.

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const STEPS: u64 = 1_000_000;
const SECONDS: u64 = 14 * 24 * 3600;
/// 2026-01-05 00:00:00 UTC.
const START: u64 = 1_767_571_200;

fn main() {
    let scale: f64 = std::env::var("STEPTOP_BENCH_SCALE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1.0);
    let dir = tempfile::tempdir().expect("temp dir");
    let rec = std::env::var_os("STEPTOP_BENCH_KEEP").map_or_else(
        || dir.path().join("two-weeks.jsonl"),
        std::path::PathBuf::from,
    );
    let t = Instant::now();
    let (steps, samples) = write_recording(&rec, scale);
    let bytes = std::fs::metadata(&rec).expect("recording").len();
    println!(
        "two_weeks: {steps} steps, {samples} samples, {:.0} MB recording (written in {:.0} s)",
        bytes as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );
    let bin = env!("CARGO_BIN_EXE_steptop");
    let headless = Command::new(bin)
        .args(["replay", "--speed", "max", "--headless"])
        .arg(&rec)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("steptop runs");
    report("replay --speed max --headless", headless, bytes);
    if Command::new("tmux").arg("-V").output().is_err() {
        println!("  live view: tmux is not installed, not measured");
        return;
    }
    let session = format!("steptop-two-weeks-{}", std::process::id());
    let status = Command::new("tmux")
        .args(["new-session", "-d", "-s", &session, "-x", "160", "-y", "48"])
        .arg(format!("{bin} replay --speed max {}", rec.display()))
        .status()
        .expect("tmux");
    assert!(status.success(), "tmux starts");
    let pid = wait_for_pid(&session);
    report_pid(
        "live view (replay --speed max, tmux 160x48)",
        pid,
        bytes,
        || {
            // The live view stays open at the end of the input: done once it has read it all.
            read_bytes(pid).is_some_and(|r| r >= bytes)
        },
    );
    let _ = Command::new("tmux")
        .args(["kill-session", "-t", &session])
        .status();
}

/// Writes the run; returns (steps, samples).
fn write_recording(path: &Path, scale: f64) -> (u64, u64) {
    let steps = (STEPS as f64 * scale) as u64;
    let seconds = (SECONDS as f64 * scale) as u64;
    let step_s = SECONDS as f64 / STEPS as f64;
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("recording"));
    writeln!(out, r#"{{"kind": "header", "steptop_recording": 1}}"#).expect("write");
    let stalled = |step: u64| step % 3000 >= 2700;
    let (mut step, mut second) = (1u64, 0u64);
    while step <= steps || second < seconds {
        let step_t = step as f64 * step_s;
        if step <= steps && (second >= seconds || step_t <= second as f64) {
            let (data, time) = if stalled(step) {
                (480.0, 1690.0)
            } else {
                (2.0 + (step % 5) as f64 * 0.1, 1209.6)
            };
            let t = START as f64 + step_t;
            writeln!(
                out,
                r#"{{"kind": "line", "t": {t:.3}, "file": "train.log", "text": "{} | step {step}/{STEPS} | loss={:.4} | data_time={data:.1}ms | time={time:.1}ms"}}"#,
                clock(t),
                2.0 / (1.0 + step as f64 * 1e-5),
            )
            .expect("write");
            step += 1;
        } else {
            let t = START as f64 + second as f64 + 0.5;
            let util = if stalled((second as f64 / step_s) as u64) {
                28
            } else {
                97
            };
            writeln!(
                out,
                r#"{{"kind": "sample", "sample": {{"time": {t:.1}, "gpus": [{{"index": 0, "name": "NVIDIA H100 80GB HBM3", "util_pct": {util}, "mem_used_bytes": 64424509440, "mem_total_bytes": 85520809984, "power_w": {}.0, "power_limit_w": 700.0, "temp_c": 61, "sm_clock_mhz": 1980, "sm_clock_max_mhz": 1980, "throttle": [], "errors": []}}], "gpu_error": null, "host": {{"cpus": 64, "cpu_pct": 22.0, "per_cpu_pct": [], "mem_total_bytes": 540092137472, "mem_available_bytes": 400000000000, "mem_used_bytes": 140092137472, "swap_total_bytes": 0, "swap_used_bytes": 0, "load_avg": [9.0, 9.0, 9.0]}}, "trainer": null}}}}"#,
                if util > 50 { 610 } else { 190 }
            )
            .expect("write");
            second += 1;
        }
    }
    out.flush().expect("flush");
    (steps, seconds)
}

/// `2026-01-05 10:00:01,209` for Unix time `t` (January 2026: no month boundary in two
/// weeks from the 5th).
fn clock(t: f64) -> String {
    let s = t as u64 - START;
    let ms = ((t - t.floor()) * 1000.0) as u64;
    format!(
        "2026-01-{:02} {:02}:{:02}:{:02},{ms:03}",
        5 + s / 86_400,
        s / 3600 % 24,
        s / 60 % 60,
        s % 60
    )
}

fn report(what: &str, mut child: Child, bytes: u64) {
    let pid = child.id();
    report_pid(what, pid, bytes, || {
        child.try_wait().ok().flatten().is_some()
    });
}

/// Prints the RSS of `pid` as it reads 10%, 50% and 100% of `bytes`, until `done`.
fn report_pid(what: &str, pid: u32, bytes: u64, mut done: impl FnMut() -> bool) {
    let start = Instant::now();
    let marks = [0.1, 0.5, 1.0];
    let mut at = Vec::new();
    let mut last_rss = 0;
    loop {
        let read = read_bytes(pid);
        if let Some(rss) = rss_kib(pid) {
            last_rss = rss;
        }
        if let Some(r) = read {
            while at.len() < marks.len() - 1 && r as f64 >= marks[at.len()] * bytes as f64 {
                at.push(last_rss);
            }
        }
        if done() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    at.push(last_rss);
    let secs = start.elapsed().as_secs_f64();
    println!(
        "  {what}: {secs:.0} s ({:.0} MB/s)",
        bytes as f64 / 1e6 / secs
    );
    for (m, rss) in marks.iter().zip(&at) {
        println!(
            "    RSS at {:>3.0}% of the input: {:>6.1} MiB",
            m * 100.0,
            *rss as f64 / 1024.0
        );
    }
    if let (Some(first), Some(last)) = (at.first(), at.last()) {
        println!(
            "    growth from 10% to 100%: {:+.1}%",
            (*last as f64 / *first as f64 - 1.0) * 100.0
        );
    }
}

/// The steptop process tmux started in `session` (the pane's process, or its child when the
/// pane runs a shell).
fn wait_for_pid(session: &str) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(10);
    let is_steptop = |p: &u32| {
        std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == "steptop")
    };
    loop {
        let out = Command::new("tmux")
            .args(["list-panes", "-t", session, "-F", "#{pane_pid}"])
            .output()
            .expect("tmux");
        if let Ok(pane) = String::from_utf8_lossy(&out.stdout).trim().parse::<u32>() {
            let children = std::fs::read_to_string(format!("/proc/{pane}/task/{pane}/children"))
                .unwrap_or_default();
            let found = std::iter::once(pane)
                .chain(children.split_whitespace().filter_map(|c| c.parse().ok()))
                .find(is_steptop);
            if let Some(pid) = found {
                return pid;
            }
        }
        assert!(Instant::now() < deadline, "steptop did not start in tmux");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Bytes the process has read (`rchar` of /proc/PID/io).
fn read_bytes(pid: u32) -> Option<u64> {
    field(&format!("/proc/{pid}/io"), "rchar:")
}

fn rss_kib(pid: u32) -> Option<u64> {
    field(&format!("/proc/{pid}/status"), "VmRSS:")
}

fn field(path: &str, key: &str) -> Option<u64> {
    std::fs::read_to_string(path)
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix(key))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}
