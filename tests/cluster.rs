//! `steptop cluster` against a real Prometheus (Debian's; `.ci/run` installs it) scraping four
//! headless steptops on loopback that follow logs written as the test runs: one data-bound
//! node, one healthy, one 1.6x slower, one whose log stops; and two real dcgm-exporter
//! captures (fixtures/cluster, byte for byte) served as static targets. The table must name
//! the data-bound node's rule, the slow node as straggler, the stopped node as stale (and as
//! down once its steptop is gone), and carry the DCGM GPU figures, which the test reads from
//! the captures' own bytes. Then the live view in tmux at 80x24.

mod support;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;
use support::tmux::Tmux;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn steptop() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_steptop"))
}

/// A child process killed on drop.
struct Proc(Child);

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A log written as the test runs: a step every `period` with these figures, up to `steps`.
fn write_log(path: PathBuf, period_ms: u64, data_ms: f64, steps: u64, stop: Arc<AtomicBool>) {
    std::thread::spawn(move || {
        for s in 1..=steps {
            if stop.load(Ordering::Relaxed) {
                return;
            }
            let line = format!(
                "step {s}/100000 | loss={:.4} | data_time={data_ms:.1}ms | time={period_ms}.0ms\n",
                3.0 - s as f64 * 1e-4
            );
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .unwrap();
            f.write_all(line.as_bytes()).unwrap();
            drop(f);
            std::thread::sleep(Duration::from_millis(period_ms));
        }
    });
}

/// A headless steptop following `log` as `host`, node `node` of Slurm job 4242, with its
/// metrics on a free loopback port and `extra` arguments; returns it and that address.
fn node(dir: &Path, host: &str, node: u32, log: &Path, extra: &[&str]) -> (Proc, String) {
    node_of_job(dir, "cluster-test", host, node, log, extra)
}

/// `node`, in a job of this name.
fn node_of_job(
    dir: &Path,
    job_name: &str,
    host: &str,
    node: u32,
    log: &Path,
    extra: &[&str],
) -> (Proc, String) {
    let mut cmd = support::steptop();
    for var in support::JOB_VARS {
        cmd.env_remove(var);
    }
    let mut child = cmd
        .env("SLURM_JOB_ID", "4242")
        .env("SLURM_JOB_NAME", job_name)
        .env("SLURM_NODEID", node.to_string())
        .current_dir(dir)
        .args(["--headless", "--no-stacks", "--interval", "250ms"])
        .args(["--host", host, "--metrics-addr", "0"])
        .args(extra)
        .arg(log)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let addr = support::metrics_addr(&mut child);
    (Proc(child), addr)
}

/// Serves `body` as /metrics on a free loopback port, from a thread; returns the address.
fn static_target(body: Vec<u8>) -> String {
    http_server(move |_| ("200 OK", "text/plain; version=0.0.4", body.clone()))
}

/// Answers every request with what `answer` makes of its head, from a thread, on a free
/// loopback port; returns the address.
fn http_server(
    answer: impl Fn(&str) -> (&'static str, &'static str, Vec<u8>) + Send + 'static,
) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let mut conn = conn;
            let mut head = Vec::new();
            let mut buf = [0u8; 1024];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                match conn.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&buf[..n]),
                }
            }
            let (status, kind, body) = answer(&String::from_utf8_lossy(&head));
            let _ = write!(
                conn,
                "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\n\
                 Content-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = conn.write_all(&body);
        }
    });
    addr
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A Prometheus scraping `steptops` and `dcgm` every second; returns it and its URL once
/// it is ready.
fn prometheus(dir: &Path, steptops: &[String], dcgm: &[String]) -> (Proc, String) {
    let list = |t: &[String]| {
        t.iter()
            .map(|a| format!("'{a}'"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let config = format!(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n\
         - job_name: steptop\n  static_configs:\n  - targets: [{}]\n\
         - job_name: dcgm\n  static_configs:\n  - targets: [{}]\n",
        list(steptops),
        list(dcgm)
    );
    std::fs::write(dir.join("prometheus.yml"), config).unwrap();
    let port = free_port();
    let log = std::fs::File::create(dir.join("prometheus.log")).unwrap();
    let child = Command::new("prometheus")
        .arg(format!(
            "--config.file={}",
            dir.join("prometheus.yml").display()
        ))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("data").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .expect("prometheus runs; .ci/run installs Debian's prometheus package");
    let url = format!("http://127.0.0.1:{port}");
    let proc = Proc(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let ready = Command::new("curl")
            .args(["-sf", "--max-time", "2"])
            .arg(format!("{url}/-/ready"))
            .output()
            .is_ok_and(|o| o.status.success());
        if ready {
            return (proc, url);
        }
        assert!(
            Instant::now() < deadline,
            "Prometheus never got ready:\n{}",
            std::fs::read_to_string(dir.join("prometheus.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn cluster_once(url: &str, format: &str) -> (bool, String, String) {
    let out = support::steptop()
        .args([
            "cluster",
            "--once",
            "--stale-after",
            "4s",
            "--format",
            format,
        ])
        .args(["--prometheus", url])
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The table's row named `name`.
fn row<'a>(table: &'a Value, name: &str) -> Option<&'a Value> {
    table["jobs"]
        .as_array()?
        .iter()
        .flat_map(|j| j["rows"].as_array().into_iter().flatten())
        .find(|r| r["name"] == name)
}

/// Asks for the table until `done` holds; fails after 90 s with the last one.
fn table_until(url: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let (ok, out, err) = cluster_once(url, "json");
        if ok {
            let v: Value = serde_json::from_str(&out).expect("--format json is JSON");
            if done(&v) {
                return v;
            }
            assert!(Instant::now() < deadline, "never {what}:\n{out}");
        } else {
            assert!(
                Instant::now() < deadline,
                "never {what}; steptop says {err}"
            );
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

/// The values of one DCGM field in a capture, read from its bytes.
fn dcgm_values(capture: &str, field: &str) -> Vec<f64> {
    capture
        .lines()
        .filter(|l| l.starts_with(&format!("{field}{{")))
        .map(|l| l.rsplit(' ').next().unwrap().parse().unwrap())
        .collect()
}

/// The rules that say a node waits on its input: which one depends on the host, and the
/// test's host is busy (the tests beside it): with its CPUs saturated, `input_cpu_saturated`
/// names the data-bound node in place of `data_loading_bound`.
const DATA_RULES: [&str; 3] = [
    "data_loading_bound",
    "input_cpu_saturated",
    "loader_workers_starved",
];

/// Held by the tests that start four steptops and a Prometheus: on two cores, two such tests
/// at once saturate the CPUs, and the data-bound node is then named by
/// `input_cpu_saturated` rather than by what its log says.
static WHOLE_MACHINE: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn near(v: &Value, want: f64) -> bool {
    v.as_f64()
        .is_some_and(|x| (x - want).abs() <= 1e-6 * want.abs().max(1.0))
}

#[test]
fn the_cluster_table_names_the_data_bound_the_straggler_and_the_stopped_node() {
    let _machine = WHOLE_MACHINE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = tempfile::tempdir().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let rtx =
        std::fs::read_to_string(root().join("fixtures/cluster/dcgm-rtx4000ada.prom")).unwrap();
    let h100 =
        std::fs::read_to_string(root().join("fixtures/cluster/dcgm-h100x8-sampled.prom")).unwrap();
    // The data-bound node and the healthy one carry the captures' host names, so that the
    // captures join them as their hosts' GPUs.
    let nodes = [
        ("lke529760-766837-0a634ab30000", 100, 60.0, 100_000),
        ("gpu-node-1", 100, 2.0, 100_000),
        ("node-slow", 160, 2.0, 100_000),
        ("node-stopped", 100, 2.0, 40),
    ];
    let mut steptops = Vec::new();
    let mut addrs = Vec::new();
    for (i, (host, period, data, steps)) in nodes.iter().enumerate() {
        let log = dir.path().join(format!("{host}.log"));
        std::fs::write(&log, "").unwrap();
        write_log(log.clone(), *period, *data, *steps, stop.clone());
        let (p, addr) = node(dir.path(), host, i as u32, &log, &[]);
        steptops.push(Some(p));
        addrs.push(addr);
    }
    let dcgm = vec![
        static_target(rtx.clone().into_bytes()),
        static_target(h100.clone().into_bytes()),
    ];
    let (_prom, url) = prometheus(dir.path(), &addrs, &dcgm);

    let table = table_until(
        &url,
        "the data-bound, slow and stopped nodes told apart",
        |t| {
            let alerts = |name: &str| {
                row(t, name)
                    .and_then(|r| r["alerts"].as_array())
                    .map(|a| {
                        a.iter()
                            .filter_map(|a| a["rule"].as_str())
                            .collect::<Vec<_>>()
                    })
                    .unwrap_or_default()
            };
            alerts("lke529760-766837-0a634ab30000")
                .iter()
                .any(|r| DATA_RULES.contains(r))
                && row(t, "node-slow").is_some_and(|r| r["straggler"] == true)
                && row(t, "node-stopped").is_some_and(|r| r["state"] == "stale")
                && row(t, "gpu-node-1").is_some_and(|r| r["state"] == "up")
        },
    );
    let job = &table["jobs"][0];
    assert_eq!(job["job_id"], "4242", "{table:#}");
    assert_eq!(job["job_name"], "cluster-test");
    assert_eq!(job["summary"]["nodes"], 4);
    assert_eq!(job["summary"]["up"], 4, "a stale node is still scraped");
    assert_eq!(job["summary"]["slowest"], "node-slow");
    // Problems first: the stale node, then the straggler.
    let order: Vec<&str> = job["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(&order[..2], &["node-stopped", "node-slow"], "{order:?}");
    let slow = row(&table, "node-slow").unwrap();
    assert!(near(&slow["step_time_s"], 0.160), "{slow:#}");
    assert_eq!(row(&table, "gpu-node-1").unwrap()["straggler"], false);
    let bound = row(&table, "lke529760-766837-0a634ab30000").unwrap();
    let share = bound["data_share"].as_f64().unwrap();
    assert!((0.55..=0.65).contains(&share), "{bound:#}");
    assert_eq!(bound["node_rank"], 0);
    let alert = bound["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["rule"] == "data_loading_bound")
        .unwrap();
    assert!(
        !alert["evidence"].as_array().unwrap().is_empty(),
        "{alert:#}"
    );
    assert!(
        !alert["actions"].as_array().unwrap().is_empty(),
        "{alert:#}"
    );

    // The GPUs, from the captures' bytes.
    let g = &bound["gpu"];
    assert_eq!(g["source"], "dcgm", "{bound:#}");
    assert_eq!(g["count"], 1);
    assert!(
        near(
            &g["power_w"],
            dcgm_values(&rtx, "DCGM_FI_DEV_POWER_USAGE")[0]
        ),
        "{g}"
    );
    assert!(
        near(
            &g["util"],
            dcgm_values(&rtx, "DCGM_FI_DEV_GPU_UTIL")[0] / 100.0
        ),
        "{g}"
    );
    let mib = 1024.0 * 1024.0;
    let used = dcgm_values(&rtx, "DCGM_FI_DEV_FB_USED")[0];
    let free = dcgm_values(&rtx, "DCGM_FI_DEV_FB_FREE")[0];
    assert!(near(&g["memory_used_bytes"], used * mib), "{g}");
    assert!(near(&g["memory_total_bytes"], (used + free) * mib), "{g}");
    assert!(near(
        &g["engine_active"],
        dcgm_values(&rtx, "DCGM_FI_PROF_GR_ENGINE_ACTIVE")[0]
    ));
    let g8 = &row(&table, "gpu-node-1").unwrap()["gpu"];
    let power: Vec<f64> = dcgm_values(&h100, "DCGM_FI_DEV_POWER_USAGE");
    let util: Vec<f64> = dcgm_values(&h100, "DCGM_FI_DEV_GPU_UTIL");
    assert_eq!(power.len(), 8);
    assert_eq!(g8["count"], 8, "{g8}");
    assert!(near(&g8["power_w"], power.iter().sum()), "{g8}");
    assert!(
        near(&g8["util"], util.iter().sum::<f64>() / 8.0 / 100.0),
        "{g8}"
    );
    assert!(row(&table, "node-slow").unwrap()["gpu"].is_null());

    // The text form says the same for people.
    let (ok, text, _) = cluster_once(&url, "text");
    assert!(ok);
    assert!(
        text.contains("job 4242 (cluster-test) · 4 of 4 nodes up"),
        "{text}"
    );
    assert!(text.contains("(node-slow)"), "{text}");
    let line = |name: &str| {
        text.lines()
            .find(|l| l.starts_with(name))
            .unwrap_or_default()
    };
    assert!(line("node-stopped").contains("stale"), "{text}");
    assert!(line("node-slow").contains("slow"), "{text}");

    // A node whose steptop is gone: Prometheus cannot scrape it.
    steptops[3] = None;
    let table = table_until(&url, "the stopped node's steptop down", |t| {
        row(t, "node-stopped").is_some_and(|r| r["state"] == "down")
    });
    assert_eq!(table["jobs"][0]["summary"]["up"], 3);

    // The live view, at 80x24.
    let script = format!(
        "{} cluster --prometheus {url} --interval 1s --stale-after 4s; echo \"exit=$?\"; sleep 60",
        steptop().display()
    );
    let t = Tmux::start("cluster", 80, 24, dir.path(), &script);
    let screen = t.wait("the table", |s| {
        s.contains("3 of 4 nodes up") && s.contains("node-slow") && s.contains("gpu-node-1")
    });
    assert!(screen.contains("down"), "{screen}");
    assert!(screen.lines().all(|l| l.chars().count() <= 80));
    // The data-bound node's alerts: third from the top (down, slow, then it).
    t.keys(&["Down", "Down", "Enter"]);
    let details = t.wait("its alerts", |s| s.contains("node alerts"));
    assert!(
        details.contains("data_time 60.0 ms of a 100.0 ms step"),
        "{details}"
    );
    assert!(details.contains("1 GPU (dcgm-exporter)"), "{details}");
    if let Some(path) = std::env::var_os("STEPTOP_CLUSTER_SCREEN") {
        std::fs::write(path, format!("{screen}\n{details}")).unwrap();
    }
    // Escape and the next key sent at once would read as Alt and that key.
    t.keys(&["Escape"]);
    t.wait("the alerts closed", |s| !s.contains("node alerts"));
    t.keys(&["?"]);
    t.wait("the help", |s| s.contains("keys (Esc closes)"));
    t.keys(&["Escape"]);
    t.wait("the help closed", |s| !s.contains("keys (Esc closes)"));
    t.keys(&["q"]);
    t.wait("steptop's exit", |s| s.contains("exit=0"));
    stop.store(true, Ordering::Relaxed);
}

/// Four nodes whose steptops read logs only (`--no-probe`, as on a login node that reads
/// them from shared storage): three logs grow, and the fourth is a real Megatron run that
/// hung at iteration 344 (fixtures/wild), still there and never growing. Without probes no
/// sample moves the clock; the frozen node must still be told stale and stalled, with a
/// freshness the cluster can judge.
#[test]
fn a_node_whose_log_stopped_is_stale_when_steptop_reads_logs_only() {
    let _machine = WHOLE_MACHINE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let dir = tempfile::tempdir().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    // The stall's thresholds in seconds, not minutes: the clock is what is tested.
    let config = dir.path().join("stall.toml");
    std::fs::write(
        &config,
        "[rules.stalled]\nfactor = 2\nmin-seconds = 3\nsustain = 1\n",
    )
    .unwrap();
    let args = ["--no-probe", "--config", config.to_str().unwrap()];
    // A job name any user of a shared cluster may choose: a title change, a cleared screen,
    // text reversed.
    let job = "job\u{1b}]0;pwned\u{7}\u{1b}[2J\u{202e}evil";
    let mut addrs = Vec::new();
    let mut steptops = Vec::new();
    for (i, host) in ["node1", "node2", "node3"].iter().enumerate() {
        let log = dir.path().join(format!("{host}.log"));
        std::fs::write(&log, "").unwrap();
        write_log(log.clone(), 100, 2.0, 100_000, stop.clone());
        let (p, addr) = node_of_job(dir.path(), job, host, i as u32, &log, &args);
        steptops.push(p);
        addrs.push(addr);
    }
    let frozen = root().join("fixtures/wild/megatron-gh200-40rank-hang/stdout.log");
    let (p, addr) = node_of_job(dir.path(), job, "node4", 3, &frozen, &args);
    steptops.push(p);
    addrs.push(addr);
    let (_prom, url) = prometheus(dir.path(), &addrs, &[]);
    let table = table_until(&url, "the frozen node stale and stalled", |t| {
        row(t, "node4").is_some_and(|r| {
            r["state"] == "stale"
                && r["alerts"]
                    .as_array()
                    .is_some_and(|a| a.iter().any(|a| a["rule"] == "stalled"))
        }) && ["node1", "node2", "node3"]
            .iter()
            .all(|n| row(t, n).is_some_and(|r| r["state"] == "up"))
    });
    let frozen = row(&table, "node4").unwrap();
    assert_eq!(frozen["step"], 344.0, "{frozen:#}");
    assert!(
        frozen["step_age_s"].as_f64().is_some_and(|a| a > 0.0),
        "a freshness the cluster can judge: {frozen:#}"
    );
    assert!(
        frozen["why"]
            .as_str()
            .is_some_and(|w| w.starts_with("a run that ended long ago")),
        "{frozen:#}"
    );
    // JSON keeps the job's name exactly; the text shows it escaped, and no control character
    // or bidi override of it reaches the terminal.
    assert_eq!(table["jobs"][0]["job_name"], job, "{table:#}");
    let (ok, text, _) = cluster_once(&url, "text");
    assert!(ok);
    assert!(
        text.contains("(job\\u{1b}]0;pwned\\u{7}\\u{1b}[2J\\u{202e}evil)"),
        "{text}"
    );
    assert!(
        !text.contains(['\u{1b}', '\u{7}', '\u{202e}']),
        "raw control characters: {text:?}"
    );
    let (ok, json, _) = cluster_once(&url, "json");
    assert!(
        ok && !json.contains(['\u{1b}', '\u{7}', '\u{202e}']),
        "{json:?}"
    );
    stop.store(true, Ordering::Relaxed);
}

#[test]
fn prometheus_out_of_reach_is_a_clear_error_not_a_crash() {
    let port = free_port();
    let out = support::steptop()
        .args(["cluster", "--once", "--prometheus"])
        .arg(format!("http://127.0.0.1:{port}"))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("cannot read the nodes' figures from Prometheus"),
        "{err}"
    );
    assert!(err.contains(&format!("127.0.0.1:{port}")), "{err}");

    // The live view says so on its top line, keeps trying, and quits cleanly.
    let dir = tempfile::tempdir().unwrap();
    let script = format!(
        "{} cluster --prometheus http://127.0.0.1:{port} --interval 1s; echo \"exit=$?\"; sleep 60",
        steptop().display()
    );
    let t = Tmux::start("down", 80, 24, dir.path(), &script);
    let s = t.wait("the failure on the top line", |s| {
        s.contains("cannot read Prometheus")
    });
    assert!(s.contains("trying again"), "{s}");
    t.keys(&["q"]);
    t.wait("steptop's exit", |s| s.contains("exit=0"));

    // Without a terminal the view points to --once.
    let piped = Command::new(steptop())
        .args([
            "cluster",
            "--prometheus",
            &format!("http://127.0.0.1:{port}"),
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&piped.stderr);
    assert_eq!(piped.status.code(), Some(2), "{err}");
    assert!(err.contains("add --once"), "{err}");

    let bad = Command::new(steptop())
        .args(["cluster", "--once", "--prometheus", "prom:9090"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{err}");
    assert!(err.contains("not an http:// or https:// URL"), "{err}");
}

#[test]
fn credentials_reach_prometheus_and_a_refusal_says_which_variables_to_set() {
    // A Prometheus behind a proxy under a path prefix that wants a bearer token; it knows no
    // node.
    let addr = http_server(|head| {
        let routed = head.starts_with("POST /prom/api/v1/query");
        let token = head
            .lines()
            .any(|l| l.eq_ignore_ascii_case("authorization: Bearer s3cret"));
        if routed && token {
            let empty = r#"{"status":"success","data":{"resultType":"vector","result":[]}}"#;
            ("200 OK", "application/json", empty.as_bytes().to_vec())
        } else {
            ("401 Unauthorized", "text/plain", b"Unauthorized".to_vec())
        }
    });
    let run = |token: Option<&str>| {
        let mut cmd = support::steptop();
        cmd.env_remove("STEPTOP_PROMETHEUS_USER")
            .env_remove("STEPTOP_PROMETHEUS_PASSWORD")
            .args(["cluster", "--once", "--prometheus"])
            .arg(format!("http://{addr}/prom/"));
        match token {
            Some(t) => cmd.env("STEPTOP_PROMETHEUS_TOKEN", t),
            None => cmd.env_remove("STEPTOP_PROMETHEUS_TOKEN"),
        };
        cmd.output().unwrap()
    };
    let ok = run(Some("s3cret"));
    let text = String::from_utf8_lossy(&ok.stdout);
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(text.contains("no steptop node found"), "{text}");
    let refused = run(None);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{err}");
    assert!(err.contains("HTTP 401"), "{err}");
    assert!(err.contains("STEPTOP_PROMETHEUS_TOKEN"), "{err}");
}

/// An https server on a free loopback port with a certificate `ca.pem` (in `dir`) signed,
/// answering every query with an empty vector; returns it and its port.
fn https_prometheus(dir: &Path) -> (Proc, u16) {
    let openssl = |args: &[&str]| {
        let o = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("openssl runs; .ci/run installs it");
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=steptop test CA",
    ]);
    openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "srv.key",
        "-out",
        "srv.csr",
        "-subj",
        "/CN=127.0.0.1",
    ]);
    std::fs::write(dir.join("ext"), "subjectAltName=IP:127.0.0.1\n").unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        "srv.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "srv.pem",
        "-days",
        "2",
        "-extfile",
        "ext",
    ]);
    let server = r#"
import http.server, ssl, sys
class Api(http.server.BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        body = b'{"status":"success","data":{"resultType":"vector","result":[]}}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Api)
tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
tls.load_cert_chain("srv.pem", "srv.key")
s.socket = tls.wrap_socket(s.socket, server_side=True)
print(s.server_address[1], flush=True)
s.serve_forever()
"#;
    let mut child = Command::new("python3")
        .args(["-c", server])
        .current_dir(dir)
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    let mut port = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut port,
    )
    .unwrap();
    (Proc(child), port.trim().parse().expect("a port"))
}

#[test]
fn an_https_prometheus_signed_by_the_clusters_own_ca_is_read_with_that_ca() {
    let dir = tempfile::tempdir().unwrap();
    let (_server, port) = https_prometheus(dir.path());
    let run = |ca: Option<&Path>| {
        let mut cmd = support::steptop();
        cmd.env_remove("STEPTOP_PROMETHEUS_TOKEN")
            .args(["cluster", "--once", "--prometheus"])
            .arg(format!("https://127.0.0.1:{port}"));
        match ca {
            Some(ca) => cmd.env("STEPTOP_PROMETHEUS_CA", ca),
            None => cmd.env_remove("STEPTOP_PROMETHEUS_CA"),
        };
        let t = Instant::now();
        (cmd.output().unwrap(), t.elapsed())
    };
    let (ok, _) = run(Some(&dir.path().join("ca.pem")));
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    assert!(String::from_utf8_lossy(&ok.stdout).contains("no steptop node found"));
    // Without it the certificate does not verify: said at once, not tried again (the tries
    // would add 4 s of pauses; the margin is for a slow machine).
    let (refused, took) = run(None);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(1), "{err}");
    assert!(err.to_lowercase().contains("certificate"), "{err}");
    assert!(took < Duration::from_secs(3), "{took:?}: {err}");
    assert!(err.contains("STEPTOP_PROMETHEUS_CA"), "{err}");
    // A CA file that holds no certificate is named.
    let (bad, _) = run(Some(&dir.path().join("ext")));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert_eq!(bad.status.code(), Some(2), "{err}");
    assert!(
        err.contains("ext") && err.contains("no certificate"),
        "{err}"
    );
}
