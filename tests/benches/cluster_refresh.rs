//! `cargo bench --bench cluster_refresh`: one `steptop cluster` refresh of a 512-node job
//! against a local Prometheus (Debian's), its series backfilled with `promtool tsdb
//! create-blocks-from openmetrics`: each node's whole exposition (steptop's own encoder, over
//! a recorded run with GPU samples) every 60 s for 20 minutes, eight GPUs of dcgm-exporter
//! fields per node, and `up`. Prints the queries a refresh sends and its time, median of
//! several refreshes, with the series count it read.
//!
//! The samples run from 12 minutes ago to 8 minutes ahead, so that Prometheus's now falls
//! inside them however long the backfill takes (a few minutes on two cores).

#[path = "../support/mod.rs"]
mod support;

use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const NODES: usize = 512;
const GPUS: usize = 8;
const EVERY_S: f64 = 60.0;
const BEFORE_S: f64 = 12.0 * 60.0;
const AFTER_S: f64 = 8.0 * 60.0;
const REFRESHES: usize = 9;

fn main() {
    let dir = tempfile::tempdir().expect("tempdir");
    let input = dir.path().join("nodes.om");
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock")
        .as_secs_f64()
        .floor();
    let started = Instant::now();
    let (series, samples) = write_openmetrics(&input, now);
    let size = std::fs::metadata(&input).map(|m| m.len()).unwrap_or(0);
    println!(
        "cluster_refresh: {NODES} nodes, {series} series, {samples} samples ({} MB of OpenMetrics, written in {:.1} s)",
        size / 1_000_000,
        started.elapsed().as_secs_f64()
    );
    let data = dir.path().join("data");
    let t = Instant::now();
    let out = Command::new("promtool")
        .args(["tsdb", "create-blocks-from", "openmetrics"])
        .arg(&input)
        .arg(&data)
        .stdout(Stdio::null())
        .output()
        .expect("promtool runs (Debian's prometheus package)");
    assert!(
        out.status.success(),
        "promtool: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    println!(
        "  backfilled with promtool in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    std::fs::remove_file(&input).ok();

    std::fs::write(dir.path().join("prometheus.yml"), "global: {}\n").expect("config");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let mut prom = Command::new("prometheus")
        .arg(format!(
            "--config.file={}",
            dir.path().join("prometheus.yml").display()
        ))
        .arg(format!("--storage.tsdb.path={}", data.display()))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("prometheus runs");
    let url = format!("http://127.0.0.1:{port}");
    let steptop = env!("CARGO_BIN_EXE_steptop");
    let once = || {
        let t = Instant::now();
        let out = Command::new(steptop)
            .args([
                "cluster",
                "--once",
                "--format",
                "json",
                "--prometheus",
                &url,
            ])
            .output()
            .expect("steptop");
        (out, t.elapsed().as_secs_f64())
    };
    let deadline = Instant::now() + Duration::from_secs(120);
    let first = loop {
        let (out, _) = once();
        let v: Option<serde_json::Value> = serde_json::from_slice(&out.stdout).ok();
        let rows = v
            .as_ref()
            .and_then(|v| v["jobs"][0]["rows"].as_array().map(Vec::len))
            .unwrap_or(0);
        if rows == NODES {
            break v.expect("json");
        }
        assert!(
            Instant::now() < deadline,
            "Prometheus never served {NODES} nodes ({rows}): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    let dcgm = first["jobs"][0]["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .filter(|r| r["gpu"]["source"] == "dcgm")
        .count();
    let mut queries = 0;
    let mut refresh = Vec::new();
    let mut wall = Vec::new();
    for _ in 0..REFRESHES {
        let (out, secs) = once();
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        queries = v["queries"].as_u64().expect("queries");
        refresh.push(v["refresh_seconds"].as_f64().expect("refresh_seconds"));
        wall.push(secs);
    }
    let _ = prom.kill();
    let _ = prom.wait();
    println!(
        "  a refresh: {queries} queries, median {:.0} ms (min {:.0}, max {:.0}) over {REFRESHES}; \
         the whole `steptop cluster --once` process {:.0} ms; {dcgm} of {NODES} nodes with DCGM GPUs",
        median(&refresh) * 1e3,
        refresh.iter().copied().fold(f64::MAX, f64::min) * 1e3,
        refresh.iter().copied().fold(0.0, f64::max) * 1e3,
        median(&wall) * 1e3
    );
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    s[s.len() / 2]
}

/// One family of a node's exposition: its metadata lines and its samples, each sample as its
/// name and labels without the closing brace, and its value.
struct Family {
    meta: Vec<String>,
    samples: Vec<(String, f64)>,
}

/// The exposition of one node, parsed back into families: the template every node repeats.
fn template() -> Vec<Family> {
    let recording =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/runs/worker_cache_blowup/run.jsonl");
    let mon = support::replayed(&recording);
    let node = steptop::NodeIdentity {
        host: Some("HOST".into()),
        own_job: steptop::JobIdentity {
            id: Some("7001".into()),
            name: Some("llama-70b".into()),
            ..Default::default()
        },
    };
    let text = steptop::exposition(&mon, &node);
    let mut out: Vec<Family> = Vec::new();
    for line in text.lines() {
        if line.starts_with("# HELP") {
            out.push(Family {
                meta: vec![line.to_string()],
                samples: Vec::new(),
            });
        } else if line.starts_with("# EOF") {
        } else if line.starts_with('#') {
            if let Some(f) = out.last_mut() {
                f.meta.push(line.to_string());
            }
        } else if let (Some(f), Some((series, value))) = (out.last_mut(), line.rsplit_once(' ')) {
            let series = series.strip_suffix('}').unwrap_or(series).to_string();
            f.samples.push((series, value.parse().expect("a value")));
        }
    }
    out
}

/// Writes every node's series over the timeline; returns the series and samples written.
fn write_openmetrics(path: &Path, now: f64) -> (usize, usize) {
    let mut w = BufWriter::new(std::fs::File::create(path).expect("create"));
    let times: Vec<f64> = {
        let mut t = now - BEFORE_S;
        let mut v = Vec::new();
        while t <= now + AFTER_S {
            v.push(t);
            t += EVERY_S;
        }
        v
    };
    let (mut series, mut samples) = (0, 0);
    let host = |i: usize| format!("node-{i:04}");
    for f in template() {
        for m in &f.meta {
            writeln!(w, "{m}").expect("write");
        }
        for i in 0..NODES {
            // A spread of step times: node i is 0.1% slower than node i-1; the last node
            // 1.5x slower than the rest.
            let slower = if i == NODES - 1 {
                1.5
            } else {
                1.0 + i as f64 * 1e-5
            };
            for (s, value) in &f.samples {
                let labels = s.replace("host=\"HOST\"", &format!("host=\"{}\"", host(i)));
                series += 1;
                for (k, t) in times.iter().enumerate() {
                    let v = if s.starts_with("steptop_step{") {
                        value + k as f64 * 60.0 / slower
                    } else if s.starts_with("steptop_step_time_p") {
                        value * slower
                    } else if s.starts_with("steptop_last_step_seen") {
                        t - 1.0
                    } else {
                        *value
                    };
                    writeln!(
                        w,
                        "{labels},instance=\"{}:9464\",job=\"steptop\"}} {v} {t}",
                        host(i)
                    )
                    .expect("write");
                    samples += 1;
                }
            }
        }
    }
    let dcgm = [
        ("DCGM_FI_DEV_GPU_UTIL", 93.0),
        ("DCGM_FI_DEV_POWER_USAGE", 612.5),
        ("DCGM_FI_DEV_FB_USED", 61000.0),
        ("DCGM_FI_DEV_FB_FREE", 20559.0),
        ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", 0.81),
    ];
    for (name, value) in dcgm {
        writeln!(w, "# TYPE {name} gauge").expect("write");
        for i in 0..NODES {
            for g in 0..GPUS {
                series += 1;
                for t in &times {
                    writeln!(
                        w,
                        "{name}{{gpu=\"{g}\",UUID=\"GPU-{i:04}-{g}\",device=\"nvidia{g}\",\
                         modelName=\"NVIDIA H100 80GB HBM3\",Hostname=\"{}\",\
                         instance=\"{}:9400\",job=\"dcgm\"}} {value} {t}",
                        host(i),
                        host(i)
                    )
                    .expect("write");
                    samples += 1;
                }
            }
        }
    }
    writeln!(w, "# TYPE up gauge").expect("write");
    for i in 0..NODES {
        series += 1;
        for t in &times {
            writeln!(
                w,
                "up{{instance=\"{}:9464\",job=\"steptop\"}} 1 {t}",
                host(i)
            )
            .expect("write");
            samples += 1;
        }
    }
    writeln!(w, "# EOF").expect("write");
    w.flush().expect("flush");
    (series, samples)
}
