//! `cargo bench --bench many_ranks`: a job of 16,384 ranks printing `[rankN]:` lines into one
//! log, against one rank printing the same number of lines, through the real binary:
//! `steptop report --format json` and `steptop replay --speed max --headless`. Prints MB/s
//! (median of three runs), the ratio to one rank, and each run's peak RSS (VmHWM of the child,
//! read every 10 ms until it exits). Size of each log: STEPTOP_BENCH_MB (default 64).

use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const RANKS: u32 = 16_384;

fn main() {
    let mb: u64 = std::env::var("STEPTOP_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64);
    let dir = tempfile::tempdir().expect("temp dir");
    let one = dir.path().join("one.log");
    let many = dir.path().join("many.log");
    let lines = write_log(&many, RANKS, mb * 1024 * 1024, None);
    write_log(&one, 1, u64::MAX, Some(lines));
    let size = |p: &Path| std::fs::metadata(p).expect("log").len() as f64 / 1e6;
    println!(
        "many_ranks: {lines} lines; 1 rank {:.0} MB, {RANKS} ranks {:.0} MB",
        size(&one),
        size(&many)
    );
    for (what, args) in [
        ("report --format json", &["report", "--format", "json"][..]),
        (
            "replay --speed max --headless",
            &["replay", "--speed", "max", "--headless"][..],
        ),
    ] {
        let (rate_one, rss_one) = measure(args, &one);
        let (rate_many, rss_many) = measure(args, &many);
        println!("  {what}:");
        println!("    1 rank:      {rate_one:>5.0} MB/s, peak RSS {rss_one:>6.1} MiB");
        println!(
            "    {RANKS} ranks: {rate_many:>5.0} MB/s, peak RSS {rss_many:>6.1} MiB \
             ({:.2}x one rank's MB/s)",
            rate_many / rate_one
        );
    }
}

/// Writes step lines (100-105 ms, one rank 40% slower) round-robin over `ranks` until the file
/// holds `target` bytes or `lines` lines; returns the lines written.
fn write_log(path: &Path, ranks: u32, target: u64, lines: Option<u64>) -> u64 {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("log"));
    let (mut bytes, mut n) = (0u64, 0u64);
    let mut step = 0u64;
    while bytes < target && lines.is_none_or(|l| n < l) {
        step += 1;
        for rank in 0..ranks {
            if bytes >= target || lines.is_some_and(|l| n >= l) {
                break;
            }
            let jitter = ((step * 7 + u64::from(rank) * 13) % 50) as f64 / 10.0;
            let ms = if rank == ranks.saturating_sub(7) && ranks > 1 {
                140.0 + jitter
            } else {
                100.0 + jitter
            };
            let prefix = if ranks > 1 {
                format!("[rank{rank}]:")
            } else {
                String::new()
            };
            let line = format!(
                "{prefix}step {step}/100000 | loss={:.4} | data_time={:.2}ms | time={ms:.1}ms\n",
                2.0 - step as f64 * 1e-4,
                jitter / 3.0
            );
            out.write_all(line.as_bytes()).expect("write");
            bytes += line.len() as u64;
            n += 1;
        }
    }
    out.flush().expect("flush");
    n
}

/// Median MB/s over three runs of `steptop ARGS LOG`, and the largest peak RSS (MiB).
fn measure(args: &[&str], log: &Path) -> (f64, f64) {
    let mb = std::fs::metadata(log).expect("log").len() as f64 / 1e6;
    let mut rates = Vec::new();
    let mut peak: f64 = 0.0;
    for _ in 0..3 {
        let start = Instant::now();
        let mut child = Command::new(env!("CARGO_BIN_EXE_steptop"))
            .args(args)
            .arg(log)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("steptop runs");
        let status_file = format!("/proc/{}/status", child.id());
        let mut hwm = 0u64;
        loop {
            if let Some(kib) = vm_hwm_kib(&status_file) {
                hwm = hwm.max(kib);
            }
            if child.try_wait().expect("wait").is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        rates.push(mb / start.elapsed().as_secs_f64());
        peak = peak.max(hwm as f64 / 1024.0);
    }
    rates.sort_by(f64::total_cmp);
    (rates[1], peak)
}

fn vm_hwm_kib(status: &str) -> Option<u64> {
    std::fs::read_to_string(status)
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}
