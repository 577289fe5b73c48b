//! No byte of a control sequence from a label, a file name or a log line reaches the terminal,
//! in any text output: report and compare in every format, headless lines, `probe`, errors.
//! Each output is fed the same hostile text (C0 and C1 controls, OSC, CSI and DCS sequences,
//! bidi overrides, invisible characters) through the places it can come from, and the bytes
//! written are checked: the text must be there, escaped so a person sees it (`\u{1b}`), and
//! JSON must keep every value exact. The cluster's text is checked in tests/cluster.rs, against
//! a real Prometheus.

mod support;

use std::path::Path;
use std::process::{Command, Output};

/// What a hostile label holds: a window title change (OSC ... BEL), a cleared screen (CSI),
/// an 8-bit CSI, a DCS query ended by ST, a right-to-left override, a zero-width space, a
/// carriage return and a backspace.
const HOSTILE: &str =
    "x\u{1b}]0;pwned\u{7}\u{1b}[2J\u{9b}31m\u{1b}P1$r\u{1b}\\\u{202e}evil\u{200b}\r\u{8}y";

/// The characters of `HOSTILE` that must never be written raw.
fn dangerous(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn assert_safe(bytes: &[u8], what: &str) {
    let text = String::from_utf8_lossy(bytes);
    if let Some((i, c)) = text.char_indices().find(|(_, c)| dangerous(*c)) {
        let from = text[..i].char_indices().rev().nth(40).map_or(0, |(j, _)| j);
        panic!("{what} writes {c:?} raw, after: {:?}", &text[from..i]);
    }
}

fn steptop(dir: &Path) -> Command {
    let mut c = support::steptop();
    for var in support::JOB_VARS {
        c.env_remove(var);
    }
    c.current_dir(dir);
    c
}

fn run(cmd: &mut Command, what: &str) -> Output {
    let out = cmd.output().unwrap();
    assert_safe(&out.stdout, &format!("{what} (stdout)"));
    assert_safe(&out.stderr, &format!("{what} (stderr)"));
    out
}

/// A timing log whose stage names carry the hostile text, and a real crash log
/// (fixtures/runs/crash_oom) whose error line does, each under a file name that carries it
/// too, and a copy of the first to compare it with.
fn hostile_logs(dir: &Path) -> [String; 3] {
    let mut timing = String::new();
    for step in 1..=40 {
        timing.push_str(&format!("[Step {step}]\n"));
        timing.push_str(&format!(
            "VRT Stage1 : {:.2}ms (40.0%)\n",
            40.0 + f64::from(step % 3)
        ));
        timing.push_str(&format!("VRT {HOSTILE} : 60.00ms (60.0%)\n"));
        timing.push_str("Total : 100.00ms\n");
    }
    let crash = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/runs/crash_oom/train.log"),
    )
    .unwrap()
    .replace(
        "torch.OutOfMemoryError:",
        &format!("torch.OutOfMemoryError: {HOSTILE}"),
    );
    let names = [
        format!("timing-{HOSTILE}.log"),
        format!("crash-{HOSTILE}.log"),
        format!("again-{HOSTILE}.log"),
    ];
    std::fs::write(dir.join(&names[0]), &timing).unwrap();
    std::fs::write(dir.join(&names[1]), crash).unwrap();
    std::fs::write(dir.join(&names[2]), &timing).unwrap();
    names
}

#[test]
fn report_and_compare_in_every_format_escape_what_they_quote() {
    let dir = tempfile::tempdir().unwrap();
    let [timing, crash, again] = hostile_logs(dir.path());
    for format in ["text", "markdown", "html", "json"] {
        for log in [&timing, &crash] {
            let out = run(
                steptop(dir.path()).args(["report", "--format", format, log]),
                &format!("report --format {format}"),
            );
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let text = String::from_utf8_lossy(&out.stdout);
            if format == "json" {
                // The exact values, escaped by JSON.
                let v: serde_json::Value = serde_json::from_str(&text).expect("JSON");
                let path = v["sources"][0]["path"].as_str().unwrap();
                assert!(path.ends_with(log.as_str()), "the value is kept: {path:?}");
                assert!(text.contains("\\u202e"), "{text}");
            } else {
                assert!(text.contains("\\u{1b}]0;pwned\\u{7}"), "{format}:\n{text}");
                assert!(text.contains("\\u{202e}evil"), "{format}:\n{text}");
            }
        }
        let out = run(
            steptop(dir.path()).args(["compare", "--format", format, &timing, &again]),
            &format!("compare --format {format}"),
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        if format != "json" {
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(text.contains("\\u{202e}evil"), "{format}:\n{text}");
        }
    }
}

#[test]
fn headless_lines_escape_the_host_the_job_and_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let [_, crash, _] = hostile_logs(dir.path());
    for format in ["text", "json"] {
        let out = run(
            steptop(dir.path())
                .env("SLURM_JOB_ID", HOSTILE)
                .env("SLURM_JOB_NAME", HOSTILE)
                .args(["replay", "--speed", "max", "--headless", "--format", format])
                .args(["--host", HOSTILE, &crash]),
            &format!("headless --format {format}"),
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout);
        let crashed = text
            .lines()
            .find(|l| l.contains("crash_event"))
            .expect("the crash is said");
        match format {
            "json" => {
                let v: serde_json::Value = serde_json::from_str(crashed).expect("JSON lines");
                assert_eq!(v["source"]["host"], HOSTILE, "{crashed}");
                assert!(
                    v["source"]["file"]
                        .as_str()
                        .unwrap()
                        .ends_with(crash.as_str())
                );
            }
            _ => {
                assert!(crashed.contains("pwned"), "{crashed}");
                assert!(crashed.contains("\\u{202e}evil"), "{crashed}");
            }
        }
    }
}

#[test]
fn probe_escapes_the_trainers_command_line() {
    let dir = tempfile::tempdir().unwrap();
    // A process whose command line holds the hostile text, as any user's may.
    let mut child = Command::new("bash")
        .args(["-c", "exec -a \"$0\" sleep 30", HOSTILE])
        .spawn()
        .unwrap();
    let pid = child.id().to_string();
    for format in ["text", "json"] {
        let out = run(
            steptop(dir.path())
                .env("STEPTOP_NVML_LIB", "/nonexistent/libnvidia-ml.so.1")
                .args(["probe", "--once", "--no-stacks", "--interval", "200ms"])
                .args(["--format", format, "--pid", &pid]),
            &format!("probe --format {format}"),
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            String::from_utf8_lossy(&out.stdout).contains("pwned"),
            "the command line is shown: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn an_error_that_quotes_a_file_name_escapes_it() {
    let dir = tempfile::tempdir().unwrap();
    let missing = format!("missing-{HOSTILE}.log");
    let out = run(
        steptop(dir.path()).args(["report", &missing]),
        "report of a missing file",
    );
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("\\u{1b}]0;pwned"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
