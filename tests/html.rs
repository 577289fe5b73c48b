//! `report --format html` in a real browser: headless chromium (`.ci/run` installs Debian's)
//! loads two fixtures' pages from disk with the network off, and the DOM it builds must hold
//! the charts at their sizes with their curves drawn, no script, and log text as text; it
//! logs no console error. A screenshot of one page is taken at the window's size: docs/report.md
//! shows it (`STEPTOP_BLESS=1 cargo test --test html` takes it again).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn fixture(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)
}

fn report_html(args: &[PathBuf], out: &Path) {
    let o = Command::new(env!("CARGO_BIN_EXE_steptop"))
        .env_remove("STEPTOP_CONFIG")
        .env("XDG_CONFIG_HOME", "/nonexistent/steptop-tests")
        .args(["report", "--format", "html"])
        .args(args)
        .output()
        .expect("steptop runs");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    std::fs::write(out, o.stdout).expect("write the page");
}

/// Headless chromium on a local file, with nothing it could fetch.
fn chromium(page: &Path, extra: &[&str], home: &Path) -> Output {
    let url = format!("file://{}", page.display());
    Command::new("chromium")
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--proxy-server=127.0.0.1:9",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .args(extra)
        .arg(url)
        // Its profile and crash dumps go to a temporary home, not the user's.
        .env("HOME", home)
        .output()
        .expect("chromium runs (.ci/run installs it: apt-get install chromium)")
}

#[test]
fn two_fixture_pages_load_in_chromium_with_their_charts() {
    let dir = tempfile::tempdir().expect("tempdir");
    let runs: [(&str, Vec<PathBuf>); 2] = [
        (
            "seed000",
            ["rank0.log", "rank1.log", "rank2.log", "timing.log"]
                .iter()
                .map(|f| fixture(&format!("fixtures/runs/seed000_nested_total/{f}")))
                .collect(),
        ),
        (
            "data_loading_bound",
            vec![fixture("fixtures/runs/data_loading_bound/run.jsonl")],
        ),
    ];
    for (name, args) in &runs {
        let page = dir.path().join(format!("{name}.html"));
        report_html(args, &page);
        let source = std::fs::read_to_string(&page).expect("page");
        assert!(
            !source.contains("<script"),
            "{name}: the page runs no script"
        );
        assert!(
            !source.contains("http"),
            "{name}: the page names nothing to fetch"
        );
        let out = chromium(&page, &["--dump-dom"], dir.path());
        let dom = String::from_utf8_lossy(&out.stdout);
        let log = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{name}: {log}");
        assert!(dom.contains("<h1>steptop report</h1>"), "{name}: {dom}");
        // A recording's hardware readings are drawn over the run too.
        if *name == "data_loading_bound" {
            for caption in ["GPU utilization", "GPU power", "Memory"] {
                assert!(
                    dom.contains(&format!("<figcaption>{caption} ")),
                    "{name}: {caption}"
                );
            }
        }
        // The step time chart at its size, with a drawn curve.
        let chart = dom
            .split("<svg class=\"chart\" width=\"720\" height=\"180\"")
            .nth(1)
            .unwrap_or_else(|| panic!("{name}: no chart of 720x180 in the DOM"));
        let points = chart
            .split("<polyline class=\"line-step\" points=\"")
            .nth(1)
            .and_then(|p| p.split('"').next())
            .unwrap_or_else(|| panic!("{name}: no step time curve"));
        let pairs: Vec<(f64, f64)> = points
            .split_whitespace()
            .map(|xy| {
                let (x, y) = xy.split_once(',').expect("x,y");
                (x.parse().expect("x"), y.parse().expect("y"))
            })
            .collect();
        assert!(pairs.len() >= 2, "{name}: {points}");
        assert!(
            pairs
                .iter()
                .all(|(x, y)| (0.0..=720.0).contains(x) && (0.0..=180.0).contains(y)),
            "{name}: a point outside the chart: {points}"
        );
        assert!(
            !log.contains("CONSOLE") && !log.contains("Uncaught"),
            "{name}: console messages: {log}"
        );
    }
    // Each page renders to pixels, a screenshot at the window's size.
    for (name, _) in &runs {
        let shot = dir.path().join(format!("{name}.png"));
        let out = chromium(
            &dir.path().join(format!("{name}.html")),
            &[
                "--hide-scrollbars",
                "--window-size=820,1800",
                &format!("--screenshot={}", shot.display()),
            ],
            dir.path(),
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let png = std::fs::read(&shot).expect("screenshot");
        assert_eq!(&png[1..4], b"PNG");
        // IHDR: width and height, big-endian, at bytes 16..24.
        let be = |b: &[u8]| u32::from_be_bytes([b[0], b[1], b[2], b[3]]);
        assert_eq!((be(&png[16..20]), be(&png[20..24])), (820, 1800));
        assert!(
            png.len() > 20_000,
            "{name}: a page with charts is not a blank image"
        );
    }
    // docs/report.md shows the first; STEPTOP_BLESS=1 takes it again.
    if std::env::var_os("STEPTOP_BLESS").is_some() {
        let kept = fixture("tests/snapshots/html/seed000.png");
        std::fs::create_dir_all(kept.parent().expect("dir")).expect("mkdir");
        std::fs::copy(dir.path().join("seed000.png"), kept).expect("keep the screenshot");
    }
}

#[test]
fn log_text_in_the_page_is_text() {
    // A stage named like markup, in a timing block the report reads.
    let dir = tempfile::tempdir().expect("tempdir");
    let log = dir.path().join("timing.log");
    let mut text = String::new();
    for step in 1..=12 {
        text += &format!(
            "[Step {step}] Forward timing:\n  <script>alert(1)</script> : 30.00ms (30.0%)\n  Decoder : 70.00ms (70.0%)\nTotal : 100.00ms\n"
        );
    }
    std::fs::write(&log, text).expect("log");
    let page = dir.path().join("r.html");
    report_html(std::slice::from_ref(&log), &page);
    let source = std::fs::read_to_string(&page).expect("page");
    assert!(
        source.contains("&lt;script&gt;alert(1)&lt;/script&gt;"),
        "{source}"
    );
    assert!(!source.contains("<script"));
}

#[test]
fn a_comparison_page_overlays_the_runs_in_chromium() {
    let dir = tempfile::tempdir().expect("tempdir");
    let runs = [
        fixture("fixtures/compare/batch_4_to_8/bs4.log"),
        fixture("fixtures/compare/batch_4_to_8/bs8.log"),
    ];
    let out = Command::new(env!("CARGO_BIN_EXE_steptop"))
        .env_remove("STEPTOP_CONFIG")
        .env("XDG_CONFIG_HOME", "/nonexistent/steptop-tests")
        .args(["compare", "--format", "html"])
        .args(&runs)
        .output()
        .expect("steptop runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = dir.path().join("compare.html");
    std::fs::write(&page, &out.stdout).expect("write");
    let json = Command::new(env!("CARGO_BIN_EXE_steptop"))
        .env_remove("STEPTOP_CONFIG")
        .env("XDG_CONFIG_HOME", "/nonexistent/steptop-tests")
        .args(["compare", "--format", "json"])
        .args(&runs)
        .output()
        .expect("steptop runs");
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    let shown = chromium(&page, &["--dump-dom"], dir.path());
    let dom = String::from_utf8_lossy(&shown.stdout);
    assert!(
        shown.status.success(),
        "{}",
        String::from_utf8_lossy(&shown.stderr)
    );
    // The findings on top, in the JSON's words (the arrow stays an arrow).
    let findings = json["findings"].as_array().expect("findings");
    assert!(!findings.is_empty());
    for f in findings {
        let title = f["title"].as_str().expect("title");
        assert!(dom.contains(title), "{title}");
    }
    assert!(dom.find("What changed") < dom.find("Figures"));
    // One curve per run on each chart, and a breakdown bar per run.
    for run in ["run0", "run1"] {
        let curves = dom
            .matches(&format!("<polyline class=\"line-{run}\""))
            .count();
        assert_eq!(curves, 2, "{run}");
    }
    assert_eq!(dom.matches("<svg class=\"bar\"").count(), 2);
}
