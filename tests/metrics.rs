//! The metrics endpoint of the real binary, scraped over loopback by curl (a real HTTP
//! client) and checked by `promtool check metrics` (Debian's prometheus package; `.ci/run`
//! installs both) and by a parse of its own: every family has help and type, every sample
//! carries the host, every rule has its alert state, and the figures follow the log. Bad
//! requests and a client that never finishes its request get an answer or a timeout, and
//! the monitor keeps going meanwhile.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

mod support;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// A headless steptop following `log` with its metrics on a free loopback port; killed on
/// drop.
struct Served {
    child: Child,
    addr: String,
}

impl Served {
    fn start(log: &Path) -> Served {
        Served::start_with(log, &["--no-probe"], &[])
    }

    /// With more options, and these variables in its environment.
    fn start_with(log: &Path, args: &[&str], env: &[(&str, &str)]) -> Served {
        let mut cmd = support::steptop();
        for var in support::JOB_VARS {
            cmd.env_remove(var);
        }
        let mut child = cmd
            .envs(env.iter().copied())
            .args(["--headless", "--host", "node7"])
            .args(args)
            // A bare port: loopback, unless an address says otherwise.
            .args(["--metrics-addr", "0"])
            .arg(log)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let addr = support::metrics_addr(&mut child);
        assert!(
            addr.starts_with("127.0.0.1:"),
            "a bare port is loopback: {addr}"
        );
        Served { child, addr }
    }

    /// `curl -sS -i` of a path: the status line, the headers and the body.
    fn curl(&self, path: &str) -> (String, String) {
        let out = Command::new("curl")
            .args(["-sS", "-i", "--max-time", "10"])
            .arg(format!("http://{}{path}", self.addr))
            .output()
            .expect("curl runs; .ci/run installs it");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").expect("a head and a body");
        (head.to_string(), body.to_string())
    }

    /// Scrapes until `done` holds for the body; fails after 20 s with the last body.
    fn scrape_until(&self, what: &str, done: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let (_, body) = self.curl("/metrics");
            if done(&body) {
                return body;
            }
            assert!(Instant::now() < deadline, "never {what}:\n{body}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// A raw request's status line.
    fn raw(&self, request: &[u8]) -> String {
        let mut s = TcpStream::connect(&self.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(request).unwrap();
        let mut answer = String::new();
        let _ = s.read_to_string(&mut answer);
        answer.lines().next().unwrap_or_default().to_string()
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The value of the one sample whose line starts with `series`.
fn value(body: &str, series: &str) -> Option<f64> {
    body.lines()
        .find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
}

fn fixture_log() -> String {
    std::fs::read_to_string(root().join("fixtures/runs/data_bound_two_workers/train.log")).unwrap()
}

#[test]
fn a_real_client_scrapes_an_exposition_promtool_accepts() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("train.log");
    let text = fixture_log();
    let lines: Vec<&str> = text.lines().collect();
    std::fs::write(&log, lines[..100].join("\n") + "\n").unwrap();
    let s = Served::start(&log);
    let body = s.scrape_until("step 99", |b| {
        value(b, "steptop_step{host=\"node7\"}") == Some(99.0)
    });
    let (head, _) = s.curl("/metrics");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(
        head.contains("Content-Type: application/openmetrics-text; version=1.0.0"),
        "{head}"
    );

    // promtool's own lint and parse.
    let mut promtool = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("promtool runs; .ci/run installs Debian's prometheus package");
    promtool
        .stdin
        .take()
        .unwrap()
        .write_all(body.as_bytes())
        .unwrap();
    let checked = promtool.wait_with_output().unwrap();
    assert!(
        checked.status.success(),
        "promtool: {}{}",
        String::from_utf8_lossy(&checked.stdout),
        String::from_utf8_lossy(&checked.stderr)
    );

    // Every sample belongs to a family with help and type, and carries the host.
    let mut helped = Vec::new();
    let mut typed = Vec::new();
    for line in body.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            helped.push(rest.split(' ').next().unwrap().to_string());
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            typed.push(rest.split(' ').next().unwrap().to_string());
        } else if line.starts_with('#') {
            continue;
        } else {
            let name = line.split(['{', ' ']).next().unwrap();
            assert!(helped.iter().any(|h| h == name), "{name} has no HELP");
            assert!(typed.iter().any(|t| t == name), "{name} has no TYPE");
            assert!(line.contains("{host=\"node7\""), "no host label: {line}");
            let v = line.rsplit(' ').next().unwrap();
            assert!(v.parse::<f64>().is_ok(), "not a number: {line}");
        }
    }
    assert!(body.ends_with("# EOF\n"));

    // Each rule has its state at each severity; the report's active alerts are the ones at 1.
    let report = support::steptop()
        .args(["report", "--format", "json"])
        .arg(&log)
        .output()
        .unwrap();
    let report: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    let active: Vec<(String, String)> = report["alerts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["cleared_time"].is_null())
        .map(|a| {
            (
                a["rule"].as_str().unwrap().to_string(),
                a["severity"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert!(!active.is_empty());
    let states: Vec<&str> = body
        .lines()
        .filter(|l| l.starts_with("steptop_alert_active{"))
        .collect();
    assert_eq!(states.len() % 3, 0);
    assert!(states.len() >= 20 * 3, "every rule, three severities");
    for line in states {
        let on = active.iter().any(|(rule, sev)| {
            line.contains(&format!("rule=\"{rule}\""))
                && line.contains(&format!("severity=\"{sev}\""))
        });
        assert_eq!(line.ends_with(" 1.0"), on, "{line}");
    }
    let p50 = value(&body, "steptop_step_time_p50_seconds{host=\"node7\"}").unwrap();
    assert!(
        p50 > 0.1 && p50 < 0.3,
        "the fixture's steps are 170-250 ms: {p50}"
    );
}

#[test]
fn the_jobs_scheduler_and_launcher_variables_label_every_series() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("train.log");
    let text = fixture_log();
    let lines: Vec<&str> = text.lines().collect();
    std::fs::write(&log, lines[..100].join("\n") + "\n").unwrap();
    // steptop's own environment: `srun steptop ...` inside the job, one task a node.
    let slurm = [
        ("SLURM_JOB_ID", "4180321"),
        ("SLURM_JOB_NAME", "llama-8b"),
        ("SLURM_NODEID", "3"),
        ("SLURM_PROCID", "3"),
        ("SLURM_NTASKS", "16"),
    ];
    let s = Served::start_with(&log, &["--no-probe"], &slurm);
    let labels =
        r#"host="node7",job_id="4180321",job_name="llama-8b",node_rank="3",process_rank="3""#;
    let body = s.scrape_until("step 99 with the job's labels", |b| {
        value(b, &format!("steptop_step{{{labels}}}")) == Some(99.0)
    });
    assert_eq!(
        value(&body, &format!("steptop_job_world_size{{{labels}}}")),
        Some(16.0)
    );

    // The trainer's environment, read from /proc: torchrun's variables, steptop outside the
    // job; its environment comes before steptop's own.
    let trainer = support::PyTrainer::start_with_env(
        &["--seconds", "60"],
        &[
            ("TORCHELASTIC_RUN_ID", "exp42"),
            ("GROUP_RANK", "1"),
            ("RANK", "9"),
            ("LOCAL_RANK", "1"),
            ("WORLD_SIZE", "16"),
        ],
    );
    let pid = trainer.pid();
    let s = Served::start_with(
        &trainer.log(),
        &["--pid", &pid, "--no-stacks", "--interval", "200ms"],
        &[("SLURM_JOB_NAME", "outer")],
    );
    let labels = r#"host="node7",job_id="exp42",job_name="outer",node_rank="1",process_rank="9",local_rank="1""#;
    s.scrape_until("the trainer's job labels", |b| {
        value(b, &format!("steptop_job_world_size{{{labels}}}")) == Some(16.0)
    });
}

#[test]
fn bad_requests_and_slow_clients_get_answers_and_stall_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("train.log");
    let text = fixture_log();
    let lines: Vec<&str> = text.lines().collect();
    std::fs::write(&log, lines[..40].join("\n") + "\n").unwrap();
    let s = Served::start(&log);
    s.scrape_until("step 39", |b| {
        value(b, "steptop_step{host=\"node7\"}") == Some(39.0)
    });
    assert!(s.raw(b"garbage\r\n\r\n").starts_with("HTTP/1.1 400"));
    assert!(
        s.raw(b"POST /metrics HTTP/1.1\r\n\r\n")
            .starts_with("HTTP/1.1 405")
    );
    assert!(s.raw(b"GET / HTTP/1.1\r\n\r\n").starts_with("HTTP/1.1 404"));
    let huge = format!("GET /metrics HTTP/1.1\r\nX: {}\r\n", "a".repeat(10_000));
    assert!(s.raw(huge.as_bytes()).starts_with("HTTP/1.1 431"));
    let (head, _) = s.curl("/nothing");
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");

    // A client that starts a request and never finishes it: scrapes still work, and the
    // monitor still reads the log.
    let mut slow = TcpStream::connect(&s.addr).unwrap();
    slow.write_all(b"GET /metr").unwrap();
    let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    f.write_all((lines[40..80].join("\n") + "\n").as_bytes())
        .unwrap();
    s.scrape_until("step 79 while a client hangs", |b| {
        value(b, "steptop_step{host=\"node7\"}") == Some(79.0)
    });
    // The slow client is timed out with an answer, not left open.
    slow.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut answer = String::new();
    let _ = slow.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer:?}");
}

#[test]
fn a_bad_address_is_a_usage_error_naming_it() {
    let o = support::steptop()
        .args(["replay", "--headless", "--metrics-addr", "not-an-address"])
        .arg(root().join("fixtures/runs/crash_oom/train.log"))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("not-an-address"));
}

/// The fenced block of docs/metrics.md that starts with `first`.
fn readme_block(first: &str) -> String {
    let readme = std::fs::read_to_string(root().join("docs/metrics.md")).unwrap();
    let start = readme
        .find(&format!("```yaml\n{first}"))
        .unwrap_or_else(|| panic!("docs/metrics.md has no yaml block starting {first:?}"));
    let body = &readme[start + "```yaml\n".len()..];
    body[..body.find("```").unwrap()].to_string()
}

#[test]
fn the_readme_scrape_config_and_alert_rules_pass_promtool() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("prometheus.yml"),
        readme_block("# prometheus.yml"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("steptop-rules.yml"),
        readme_block("# steptop-rules.yml"),
    )
    .unwrap();
    // `check config` also checks the rule file it names.
    let o = Command::new("promtool")
        .args(["check", "config", "prometheus.yml"])
        .current_dir(dir.path())
        .output()
        .expect("promtool runs; .ci/run installs Debian's prometheus package");
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("4 rules found"));
}
