//! `cargo bench --bench report_throughput`: `steptop report`'s pipeline (read, split, parse,
//! model) over a large mixed log built from every fixture in fixtures/logs (our users' styles,
//! mmengine, HF dicts and tqdm bars, timing blocks, noise). Prints MB/s per run, the median, and
//! the process's peak RSS. Size: STEPTOP_BENCH_MB (default 1024). STEPTOP_BENCH_KEEP=PATH writes
//! the log there and leaves it, to profile `steptop report` on the same input.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Instant;

fn main() {
    let mb: u64 = std::env::var("STEPTOP_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1024);
    let dir = tempfile::tempdir().expect("temp dir");
    let path = std::env::var_os("STEPTOP_BENCH_KEEP")
        .map_or_else(|| dir.path().join("mixed.log"), PathBuf::from);
    let bytes = build_log(&path, mb * 1024 * 1024);
    println!(
        "report_throughput: {:.0} MiB mixed log from the format fixtures",
        bytes as f64 / 1048576.0
    );
    let cfg = steptop::config::Config::default_checked();
    let mut rates = Vec::new();
    for run in 1..=3 {
        let t = Instant::now();
        let a = steptop::report::analyze(std::slice::from_ref(&path), &cfg).expect("analyze");
        let secs = t.elapsed().as_secs_f64();
        let rate = bytes as f64 / 1e6 / secs;
        println!(
            "  run {run}: {secs:.2} s, {rate:.0} MB/s, {} step records, {} records",
            a.model.merged.records, a.feeds[0].stats.records
        );
        rates.push(rate);
    }
    rates.sort_by(f64::total_cmp);
    println!("  median: {:.0} MB/s", rates[1]);
    println!(
        "  peak RSS of this process: {:.1} MiB",
        peak_rss_kib() as f64 / 1024.0
    );
}

/// Concatenates the fixture logs (not the garbage one) until the file reaches `target` bytes.
fn build_log(path: &Path, target: u64) -> u64 {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/logs");
    let mut chunk = Vec::new();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("fixtures")
        .map(|e| e.expect("entry").path())
        .collect();
    dirs.sort();
    for d in dirs.iter().filter(|d| !d.ends_with("garbage")) {
        for f in std::fs::read_dir(d).expect("fixture dir") {
            let f = f.expect("entry").path();
            if f.extension().is_none_or(|e| e != "toml") {
                chunk.extend(std::fs::read(&f).expect("fixture"));
                if chunk.last() != Some(&b'\n') {
                    chunk.push(b'\n');
                }
            }
        }
    }
    // Repeated lines carry new numbers, as a real log's do: each copy of the fixtures gets
    // other fraction digits (losses, times, rates), in the same layout.
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let variants: Vec<Vec<u8>> = (0..16).map(|_| new_fractions(&chunk, &mut seed)).collect();
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("create"));
    let mut written = 0;
    for variant in variants.iter().cycle() {
        if written >= target {
            break;
        }
        out.write_all(variant).expect("write");
        written += variant.len() as u64;
    }
    out.flush().expect("flush");
    written
}

/// `text` with every digit after a decimal point replaced by a pseudo-random one.
fn new_fractions(text: &[u8], seed: &mut u64) -> Vec<u8> {
    let mut fraction = false;
    text.iter()
        .map(|&b| {
            let digit = b.is_ascii_digit();
            let out = if digit && fraction {
                *seed ^= *seed << 13;
                *seed ^= *seed >> 7;
                *seed ^= *seed << 17;
                b'0' + (*seed % 10) as u8
            } else {
                b
            };
            fraction = (b == b'.' && !fraction) || (digit && fraction);
            out
        })
        .collect()
}

fn peak_rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}
