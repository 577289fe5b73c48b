//! Logs that real GPU runs wrote, taken byte for byte from public repositories
//! (`fixtures/wild/<case>/`, each with its source in `case.toml`), read by the real binary and
//! held to the figures the logs themselves print. Those figures come from
//! `tests/wild/truth.py`, which parses each log with regexes written by hand for it: none of
//! steptop's parsing is involved.
//!
//! Checks per case: the files are recognised (a file read by eye to hold no training line,
//! `step_lines = false`, owes no format but may give no step); the step reached; the mean step time and the
//! throughputs within 5%; the data share within 3 points; the last loss exactly; and, on a
//! run whose speed does not change, no `throughput_drift` or `step_spikes` alert at warn or
//! worse.
//!
//! The cases come in batches (`batch` in case.toml). The corpus the parser was built on has
//! none. Each fresh batch was collected by people who had not read steptop's parser and was
//! scored once by the binary of the commit before any change made for it: `first_contact` in
//! each case.toml is what that binary read (checks passed, checked), the honest measure of how
//! steptop meets logs it has never seen. Metric-file runs (`kind = "metric-files"`) are read
//! as a run folder, their truth written by `tests/wild/metric_truth.py`. The summary table is
//! kept in the README and the table of every case in docs/corpus.md (`STEPTOP_BLESS=1`
//! rewrites both). `STEPTOP_WILD_BIN=PATH` scores with another binary (a new batch's first
//! contact, with the binary of the commit before it).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value as Json;

/// The share of checks that must pass on the corpus.
const TARGET: f64 = 0.97;
/// The shares the fresh batches must keep: what steptop reads of them now, rounded down, so
/// that a change that reads them worse fails.
const BATCH_FLOORS: [(&str, f64); 5] = [
    ("first-contact-1", 0.69),
    ("first-contact-2", 0.66),
    ("first-contact-3", 0.64),
    ("metric-files", 0.88),
    ("trackers", 0.98),
];
/// Relative tolerance for times and rates.
const REL: f64 = 0.05;
/// Absolute tolerance for the data share.
const SHARE: f64 = 0.03;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

struct Case {
    name: String,
    framework: String,
    files: Vec<PathBuf>,
    truth: Json,
    /// The fresh batch it came in; None for the corpus.
    batch: Option<String>,
    /// What the binary before any change for its batch read: checks passed, checked.
    first_contact: Option<(usize, usize)>,
    /// A metric-file run: its folder is the input.
    folder: Option<PathBuf>,
    /// Files read by eye to hold no training line (`step_lines = false` in case.toml: a
    /// tracker run's console of warnings and a traceback): no format is owed for them, and no
    /// step may be read from them.
    without_steps: Vec<String>,
}

fn cases() -> Vec<Case> {
    let dir = root().join("fixtures/wild");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| dir.join(n).join("case.toml").exists())
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|name| {
            let case_dir = dir.join(&name);
            let text = std::fs::read_to_string(case_dir.join("case.toml")).unwrap();
            let case: toml::Value =
                toml::from_str(&text).unwrap_or_else(|e| panic!("{name}/case.toml: {e}"));
            let entries = case["files"]
                .as_array()
                .unwrap_or_else(|| panic!("{name}/case.toml: no [[files]]"));
            let files = entries
                .iter()
                .map(|f| case_dir.join(f["name"].as_str().unwrap()))
                .collect();
            let without_steps = entries
                .iter()
                .filter(|f| f.get("step_lines").and_then(toml::Value::as_bool) == Some(false))
                .map(|f| f["name"].as_str().unwrap().to_string())
                .collect();
            let truth = std::fs::read_to_string(case_dir.join("truth.json"))
                .unwrap_or_else(|e| panic!("{name}/truth.json: {e} (run tests/wild/truth.py)"));
            let first_contact = case.get("first_contact").and_then(|v| {
                let v = v.as_array()?;
                Some((
                    v.first()?.as_integer()? as usize,
                    v.get(1)?.as_integer()? as usize,
                ))
            });
            Case {
                framework: case["framework"].as_str().unwrap_or("?").to_string(),
                files,
                truth: serde_json::from_str(&truth).unwrap(),
                batch: case
                    .get("batch")
                    .and_then(|b| b.as_str())
                    .map(str::to_string),
                first_contact,
                folder: (case.get("kind").and_then(|k| k.as_str()) == Some("metric-files"))
                    .then(|| case_dir.clone()),
                without_steps,
                name,
            }
        })
        .collect()
}

fn report(files: &[PathBuf]) -> Json {
    // A fresh batch's first contact is scored with the binary of the commit before any change
    // made for it, built aside and named here.
    let binary = std::env::var_os("STEPTOP_WILD_BIN").map_or_else(
        || PathBuf::from(env!("CARGO_BIN_EXE_steptop")),
        PathBuf::from,
    );
    let out = Command::new(binary)
        .args(["report", "--format", "json"])
        .args(files)
        .env_remove("STEPTOP_CONFIG")
        .env("XDG_CONFIG_HOME", "/nonexistent/steptop-tests")
        .output()
        .unwrap();
    if !out.status.success() {
        // Every check the case has then fails, saying why.
        let why = String::from_utf8_lossy(&out.stderr);
        return serde_json::json!({ "report_failed": why.trim() });
    }
    serde_json::from_slice(&out.stdout).unwrap()
}

/// One check's outcome: not checked (the log does not print the figure), passed, or failed
/// with what was read and what the log says.
enum Check {
    Skip,
    Pass,
    Fail(String),
}

fn num(v: &Json) -> Option<f64> {
    v.as_f64()
}

fn fmt(v: Option<f64>) -> String {
    match v {
        Some(v) if v.abs() >= 100.0 => format!("{v:.0}"),
        Some(v) => format!("{v:.3}"),
        None => "null".into(),
    }
}

fn within(got: Option<f64>, want: &Json, rel: f64) -> Check {
    let Some(want) = num(want) else {
        return Check::Skip;
    };
    match got {
        Some(g) if (g - want).abs() <= rel * want.abs() => Check::Pass,
        g => Check::Fail(format!("{} vs {}", fmt(g), fmt(Some(want)))),
    }
}

fn check_steps(got: Option<f64>, t: &Json) -> Check {
    let Some(want) = num(&t["steps_last"]) else {
        return Check::Skip;
    };
    let slack = if t["zero_based"].as_bool() == Some(true) {
        1.0
    } else {
        0.0
    };
    match got {
        Some(g) if g >= want && g <= want + slack => Check::Pass,
        g => Check::Fail(format!("{} vs {}", fmt(g), fmt(Some(want)))),
    }
}

fn check_share(got: Option<f64>, want: &Json) -> Check {
    let Some(want) = num(want) else {
        return Check::Skip;
    };
    match got {
        Some(g) if (g - want).abs() <= SHARE => Check::Pass,
        g => Check::Fail(format!("{} vs {}", fmt(g), fmt(Some(want)))),
    }
}

fn check_loss(r: &Json, want: &Json) -> Check {
    let got = num(&r["loss"]["last"]);
    if want.as_str() == Some("nan") {
        let nan_seen = r["event_counts"]
            .as_array()
            .is_some_and(|c| c.iter().any(|e| e["kind"] == "non-finite"));
        return if got.is_none() && nan_seen {
            Check::Pass
        } else {
            Check::Fail(format!("{} vs nan", fmt(got)))
        };
    }
    let Some(want) = num(want) else {
        return Check::Skip;
    };
    match got {
        Some(g) if (g - want).abs() <= 1e-9 * want.abs().max(1.0) => Check::Pass,
        g => Check::Fail(format!("{} vs {}", fmt(g), want)),
    }
}

/// A steady run raises no speed alarm at warn or worse.
fn check_alarms(r: &Json, t: &Json) -> Check {
    if t["steady"].as_bool() != Some(true) {
        return Check::Skip;
    }
    let false_alarms: Vec<String> = r["alerts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|a| {
            matches!(a["rule"].as_str(), Some("throughput_drift" | "step_spikes"))
                && matches!(a["severity"].as_str(), Some("warn" | "crit"))
        })
        .map(|a| format!("{} {}", a["rule"].as_str().unwrap_or(""), a["severity"]))
        .collect();
    if false_alarms.is_empty() {
        Check::Pass
    } else {
        Check::Fail(false_alarms.join(", "))
    }
}

fn recognised(r: &Json, t: &Json, without_steps: &[String]) -> Check {
    if let Some(why) = r["report_failed"].as_str() {
        return Check::Fail(format!("report failed: {why}"));
    }
    let sources = r["sources"].as_array().into_iter().flatten();
    let stepless = |s: &&Json| {
        s["path"]
            .as_str()
            .is_some_and(|p| without_steps.iter().any(|f| p.ends_with(f.as_str())))
    };
    if let Some(s) = sources
        .clone()
        .filter(stepless)
        .find(|s| !s["first_step"].is_null())
    {
        return Check::Fail(format!(
            "steps from {}, which holds no training line",
            s["path"].as_str().unwrap_or("?")
        ));
    }
    let unknown: Vec<&str> = sources
        .filter(|s| !stepless(s))
        .filter(|s| s["format"].is_null())
        .filter_map(|s| s["path"].as_str())
        .collect();
    let steps = num(&r["steps"]["count"]).unwrap_or(0.0);
    // A tracker's run that logged no row holds no step: none may be read from it.
    if t["no_steps"].as_bool() == Some(true) {
        return match (unknown.is_empty(), steps) {
            (true, 0.0) => Check::Pass,
            (_, 0.0) => Check::Fail(format!("no format: {}", unknown.join(", "))),
            _ => Check::Fail(format!("{steps} steps from a run that logged none")),
        };
    }
    if unknown.is_empty() && steps > 0.0 {
        Check::Pass
    } else if steps == 0.0 {
        Check::Fail("no steps".into())
    } else {
        Check::Fail(format!("no format: {}", unknown.join(", ")))
    }
}

const COLUMNS: [&str; 10] = [
    "recognised",
    "steps",
    "step time",
    "data share",
    "samples/s",
    "tokens/s",
    "tokens/s/GPU",
    "it/s",
    "loss",
    "no false alarm",
];

fn checks(r: &Json, case: &Case) -> [Check; 10] {
    let t = &case.truth;
    [
        recognised(r, t, &case.without_steps),
        check_steps(num(&r["steps"]["last"]), t),
        within(num(&r["step_time_ms"]["mean"]), &t["step_time_ms"], REL),
        check_share(num(&r["data_share"]), &t["data_share"]),
        within(num(&r["samples_per_s"]), &t["samples_per_s"], REL),
        within(num(&r["tokens_per_s"]), &t["tokens_per_s"], REL),
        within(num(&r["tokens_per_gpu_s"]), &t["tokens_per_gpu_s"], REL),
        within(num(&r["iters_per_s"]), &t["iters_per_s"], REL),
        check_loss(r, &t["loss_last"]),
        check_alarms(r, t),
    ]
}

/// The score table in markdown, and the failures in words.
struct Score {
    table: String,
    failures: Vec<String>,
    passed: usize,
    checked: usize,
    unrecognised: Vec<String>,
    false_alarms: Vec<String>,
}

fn score(cases: &[&Case]) -> Score {
    let mut s = Score {
        table: String::new(),
        failures: Vec::new(),
        passed: 0,
        checked: 0,
        unrecognised: Vec::new(),
        false_alarms: Vec::new(),
    };
    let mut rows = String::new();
    for case in cases {
        let inputs = match &case.folder {
            Some(folder) => vec![folder.clone()],
            None => case.files.clone(),
        };
        let r = report(&inputs);
        let results = checks(&r, case);
        let mut cells = Vec::new();
        for (i, c) in results.iter().enumerate() {
            cells.push(match c {
                Check::Skip => "",
                Check::Pass => "ok",
                Check::Fail(_) => "**x**",
            });
            match c {
                Check::Skip => {}
                Check::Pass => {
                    s.passed += 1;
                    s.checked += 1;
                }
                Check::Fail(why) => {
                    s.checked += 1;
                    s.failures
                        .push(format!("{}: {}: {why}", case.name, COLUMNS[i]));
                    if i == 0 {
                        s.unrecognised.push(case.name.clone());
                    }
                    if i == COLUMNS.len() - 1 {
                        s.false_alarms.push(case.name.clone());
                    }
                }
            }
        }
        let _ = writeln!(
            rows,
            "| {} | {} | {} |",
            case.name,
            case.framework,
            cells.join(" | ")
        );
    }
    let _ = writeln!(s.table, "| case | framework | {} |", COLUMNS.join(" | "));
    let _ = writeln!(s.table, "|---|---|{}", "---|".repeat(COLUMNS.len()));
    s.table.push_str(&rows);
    let _ = writeln!(
        s.table,
        "\n{} of {} checks pass ({:.1}%) on {} cases.",
        s.passed,
        s.checked,
        pct(s.passed, s.checked),
        cases.len()
    );
    s
}

fn pct(passed: usize, checked: usize) -> f64 {
    100.0 * passed as f64 / checked.max(1) as f64
}

/// The batches in the order they came: the corpus first.
const GROUPS: [(Option<&str>, &str); 6] = [
    (None, "The corpus (logs read while the parser was built)"),
    (
        Some("first-contact-1"),
        "First fresh batch: logs from ecosystems the corpus did not hold",
    ),
    (
        Some("metric-files"),
        "Metric-file runs (event files, trainer_state.json, metrics.csv, scalars.json)",
    ),
    (
        Some("first-contact-2"),
        "Second fresh batch: collected after the first was read",
    ),
    (
        Some("first-contact-3"),
        "Third fresh batch: collected after the second was read",
    ),
    (
        Some("trackers"),
        "Tracker runs (W&B run files, MLflow file and SQLite stores)",
    ),
];

const BEGIN: &str = "<!-- wild table: written by STEPTOP_BLESS=1 cargo test --test wild -->\n";
const END: &str = "<!-- end of wild table -->\n";

/// `path` holds `table` between the markers as this test prints it; with STEPTOP_BLESS set it
/// is written there. Returns what is there when it differs.
fn kept_table(path: &Path, table: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let start = text.find(BEGIN)? + BEGIN.len();
    let end = start + text[start..].find(END)?;
    if std::env::var_os("STEPTOP_BLESS").is_some() {
        let new = format!("{}{table}{}", &text[..start], &text[end..]);
        std::fs::write(path, new).unwrap();
        return None;
    }
    (text[start..end] != *table).then(|| text[start..end].to_string())
}

#[test]
fn real_logs_give_the_figures_they_print() {
    let cases = cases();
    assert!(!cases.is_empty(), "no case under fixtures/wild");
    let mut summary = String::from("| batch | cases | first contact | now |\n|---|---|---|---|\n");
    let mut all = String::new();
    let mut problems = Vec::new();
    for (batch, title) in GROUPS {
        let group: Vec<&Case> = cases
            .iter()
            .filter(|c| c.batch.as_deref() == batch)
            .collect();
        assert!(!group.is_empty(), "no case in {batch:?}");
        let s = score(&group);
        println!("{title}\n{}", s.table);
        for f in &s.failures {
            println!("  {f}");
        }
        let share = s.passed as f64 / s.checked.max(1) as f64;
        let first = match batch {
            None => "-".to_string(),
            Some(_) => {
                let (p, c) = group
                    .iter()
                    .map(|c| {
                        c.first_contact
                            .unwrap_or_else(|| panic!("{}: no first_contact", c.name))
                    })
                    .fold((0, 0), |(p, c), (a, b)| (p + a, c + b));
                format!("{p} of {c} ({:.1}%)", pct(p, c))
            }
        };
        let _ = writeln!(
            summary,
            "| {title} | {} | {first} | {} of {} ({:.1}%) |",
            group.len(),
            s.passed,
            s.checked,
            pct(s.passed, s.checked)
        );
        let _ = write!(all, "### {title}\n\n{}\n", s.table);
        match batch {
            None => {
                if !s.unrecognised.is_empty() {
                    problems.push(format!("corpus cases not recognised: {:?}", s.unrecognised));
                }
                if !s.false_alarms.is_empty() {
                    problems.push(format!(
                        "false speed alarms on steady corpus runs: {:?}",
                        s.false_alarms
                    ));
                }
                if share < TARGET {
                    problems.push(format!(
                        "the corpus: {:.1}%, under {:.0}%",
                        100.0 * share,
                        100.0 * TARGET
                    ));
                }
            }
            Some(b) => {
                let floor = BATCH_FLOORS
                    .iter()
                    .find(|(name, _)| *name == b)
                    .map_or(1.0, |(_, f)| *f);
                if share < floor {
                    problems.push(format!(
                        "{b}: {:.1}%, under the {:.0}% it held",
                        100.0 * share,
                        100.0 * floor
                    ));
                }
            }
        }
    }
    println!("{summary}");
    assert!(problems.is_empty(), "{problems:#?}");
    for (path, table) in [
        (root().join("README.md"), &summary),
        (root().join("docs/corpus.md"), &all),
    ] {
        if let Some(old) = kept_table(&path, table) {
            panic!(
                "{}'s wild table is not what this test prints; run STEPTOP_BLESS=1 cargo \
                 test --test wild. It has:\n{old}",
                path.display()
            );
        }
    }
}

/// The committed truth is what the script writes from the logs as they are.
#[test]
fn the_truth_files_are_what_the_script_writes() {
    for script in ["tests/wild/truth.py", "tests/wild/metric_truth.py"] {
        let script = root().join(script);
        let out = Command::new("python3")
            .arg(&script)
            .arg("--check")
            .output()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot run python3 {}: {e}; install Python 3.11 or newer",
                    script.display()
                )
            });
        assert!(
            out.status.success(),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// Every log's source is recorded: repository, path and commit (a tracker's store as one
/// folder).
#[test]
fn every_log_names_where_it_came_from() {
    let dir = root().join("fixtures/wild");
    for case in cases() {
        let text = std::fs::read_to_string(dir.join(&case.name).join("case.toml")).unwrap();
        let v: toml::Value = toml::from_str(&text).unwrap();
        for f in v["files"].as_array().unwrap() {
            for key in ["name", "repo", "path", "commit"] {
                assert!(
                    f.get(key)
                        .and_then(|k| k.as_str())
                        .is_some_and(|k| !k.is_empty()),
                    "{}/case.toml: a [[files]] entry without {key}",
                    case.name
                );
            }
            let commit = f["commit"].as_str().unwrap();
            assert!(
                commit.len() == 40 && commit.bytes().all(|b| b.is_ascii_hexdigit()),
                "{}/case.toml: commit '{commit}' is not 40 hex digits",
                case.name
            );
        }
        let listed: Vec<&Path> = case.files.iter().map(|p| p.as_path()).collect();
        let case_dir = dir.join(&case.name);
        let mut folders = vec![case_dir.clone()];
        while let Some(folder) = folders.pop() {
            for entry in std::fs::read_dir(&folder).unwrap() {
                let p = entry.unwrap().path();
                if p.is_dir() {
                    folders.push(p);
                    continue;
                }
                let name = p.strip_prefix(&case_dir).unwrap().to_string_lossy();
                // A listed folder (a tracker's store) covers every file under it, each as the
                // repository holds it at that commit.
                if name != "case.toml" && name != "truth.json" {
                    assert!(
                        listed.iter().any(|l| p.starts_with(l)),
                        "{}: {name} is not listed in case.toml",
                        case.name
                    );
                }
            }
        }
    }
}
