//! `cargo bench --bench metrics_cost`: what `--metrics-addr` costs the loop that owns the
//! monitor (one exposition a second at most), and what a scrape costs the server: encoding a
//! monitor that has read a recorded run with GPU, host and trainer samples, and serving it.

#[path = "../support/mod.rs"]
mod support;

use std::io::{Read, Write};
use std::path::Path;
use std::time::Instant;

fn main() {
    let recording =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/runs/worker_cache_blowup/run.jsonl");
    let mon = support::replayed(&recording);
    let mut micros = Vec::new();
    let mut bytes = 0;
    for _ in 0..500 {
        let t = Instant::now();
        let text = steptop::exposition(&mon, &node1());
        micros.push(t.elapsed().as_secs_f64() * 1e6);
        bytes = text.len();
    }
    micros.sort_by(f64::total_cmp);
    println!(
        "metrics_cost: exposition of {} (steps to {:?}, {} samples): {bytes} bytes",
        recording.display(),
        mon.model.merged.last_step,
        mon.model.hardware.samples
    );
    println!(
        "  encode: median {:.0} µs, p95 {:.0} µs (500 runs)",
        micros[250], micros[475]
    );

    let endpoint = steptop::Endpoint::new(node1());
    endpoint.publish(&mon);
    let addr =
        steptop::serve_metrics("127.0.0.1:0".parse().expect("addr"), endpoint).expect("listen");
    let mut scrape = Vec::new();
    for _ in 0..200 {
        let t = Instant::now();
        let mut s = std::net::TcpStream::connect(addr).expect("connect");
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            .expect("request");
        let mut answer = Vec::new();
        s.read_to_end(&mut answer).expect("answer");
        assert!(answer.starts_with(b"HTTP/1.1 200"));
        scrape.push(t.elapsed().as_secs_f64() * 1e6);
    }
    scrape.sort_by(f64::total_cmp);
    println!(
        "  scrape over loopback: median {:.0} µs, p95 {:.0} µs (200 runs)",
        scrape[100], scrape[190]
    );
}

fn node1() -> steptop::NodeIdentity {
    steptop::NodeIdentity {
        host: Some("node1".into()),
        ..Default::default()
    }
}
