//! Every fixtures/runs/<scenario>/ through the real `steptop report --format json`, checked
//! against its expected.toml: `args` are the files in order, each `[[expect]]` a dotted path into
//! the report with `equals`, `approx` + `tol`, or `contains` (a piece of a text). The
//! diagnosis: `verdict` (a rule id, or
//! "none"), `only` (every rule raised is one of these), `never` (rules that must not be
//! raised), and each `[[alert]]` an alert that must be raised: `rule`, and optionally
//! `severity`, `first_step` (± `first_step_tol`), `cleared` (true/false), `title` and
//! `evidence` (text that its title, or one of its evidence lines, contains). Adding a scenario
//! means adding a folder. Every rule must be proven by some scenario in full: an `[[alert]]`
//! with its severity, first step, evidence and whether it clears.

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value as Json;
use toml::Value;

fn lookup<'a>(report: &'a Json, path: &str) -> Option<&'a Json> {
    path.split('.')
        .try_fold(report, |v, key| match key.parse::<usize>() {
            Ok(i) => v.get(i),
            Err(_) => v.get(key),
        })
}

fn check(report: &Json, want: &toml::Table) -> Option<String> {
    let path = want.get("path")?.as_str()?;
    let got = lookup(report, path).unwrap_or(&Json::Null);
    if let Some(approx) = want.get("approx") {
        let approx = approx
            .as_float()
            .or_else(|| approx.as_integer().map(|i| i as f64))?;
        let tol = want
            .get("tol")
            .and_then(|t| t.as_float().or_else(|| t.as_integer().map(|i| i as f64)))?;
        return match got.as_f64() {
            Some(g) if (g - approx).abs() <= tol => None,
            _ => Some(format!("{path}: want {approx} ± {tol}, got {got}")),
        };
    }
    if let Some(part) = want.get("contains").and_then(Value::as_str) {
        return match got.as_str() {
            Some(g) if g.contains(part) => None,
            _ => Some(format!("{path}: want text containing {part:?}, got {got}")),
        };
    }
    let equal = match (want.get("equals")?, got) {
        (Value::String(e), Json::String(g)) => e == g,
        (Value::Integer(e), Json::Number(g)) => g.as_i64() == Some(*e),
        (Value::Float(e), Json::Number(g)) => g.as_f64() == Some(*e),
        (Value::Boolean(e), Json::Bool(g)) => e == g,
        _ => false,
    };
    (!equal).then(|| format!("{path}: want {:?}, got {got}", want.get("equals")))
}

fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(|v| v.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether one raised alert matches an `[[alert]]` table; None when it does, else why not.
fn alert_mismatch(a: &Json, want: &toml::Table) -> Option<String> {
    if let Some(sev) = want.get("severity").and_then(Value::as_str)
        && a["severity"] != sev
    {
        return Some(format!("severity {}", a["severity"]));
    }
    if let Some(step) = want.get("first_step").and_then(Value::as_integer) {
        let tol = want
            .get("first_step_tol")
            .and_then(Value::as_integer)
            .unwrap_or(0);
        let got = a["first_step"].as_i64();
        if got.is_none_or(|g| (g - step).abs() > tol) {
            return Some(format!("first_step {}", a["first_step"]));
        }
    }
    if let Some(cleared) = want.get("cleared").and_then(Value::as_bool)
        && a["cleared_step"].is_null() == cleared
    {
        return Some(format!("cleared_step {}", a["cleared_step"]));
    }
    if let Some(t) = want.get("title").and_then(Value::as_str)
        && !a["title"].as_str().is_some_and(|x| x.contains(t))
    {
        return Some(format!("title {}", a["title"]));
    }
    if let Some(e) = want.get("evidence").and_then(Value::as_str) {
        let lines = a["evidence"].as_array().cloned().unwrap_or_default();
        if !lines
            .iter()
            .any(|l| l.as_str().is_some_and(|x| x.contains(e)))
        {
            return Some(format!("evidence {}", a["evidence"]));
        }
    }
    None
}

fn check_diagnosis(report: &Json, expected: &toml::Table) -> Vec<String> {
    let mut failures = Vec::new();
    let alerts = report["alerts"].as_array().cloned().unwrap_or_default();
    let raised: Vec<&str> = alerts.iter().filter_map(|a| a["rule"].as_str()).collect();
    if let Some(v) = expected.get("verdict").and_then(Value::as_str) {
        let got = report["verdict"]["rule"].as_str().unwrap_or("none");
        if got != v {
            failures.push(format!("verdict: want {v}, got {got}"));
        }
    }
    // Evidence measures the symptom: an item that only repeats the title tells nothing.
    for a in &alerts {
        let title = a["title"].as_str().unwrap_or_default();
        let repeats = a["evidence"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Json::as_str)
            .any(|e| title.contains(e) || e == title);
        if repeats {
            failures.push(format!(
                "{}: evidence repeats the title '{title}'",
                a["rule"]
            ));
        }
    }
    let only = strings(expected.get("only"));
    if expected.contains_key("only") {
        for r in raised.iter().filter(|r| !only.iter().any(|o| o == *r)) {
            failures.push(format!("{r} raised, but only {only:?} may be"));
        }
    }
    for r in strings(expected.get("never")) {
        if raised.contains(&r.as_str()) {
            failures.push(format!("{r} raised, but never should be"));
        }
    }
    for want in expected
        .get("alert")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_table)
    {
        let rule = want.get("rule").and_then(Value::as_str).unwrap_or_default();
        let of_rule: Vec<&Json> = alerts.iter().filter(|a| a["rule"] == rule).collect();
        if of_rule.is_empty() {
            failures.push(format!("{rule}: not raised (raised: {raised:?})"));
            continue;
        }
        let whys: Vec<String> = of_rule
            .iter()
            .filter_map(|a| alert_mismatch(a, want))
            .collect();
        if whys.len() == of_rule.len() {
            failures.push(format!("{rule}: no alert matches: {}", whys.join("; ")));
        }
    }
    failures
}

#[test]
fn every_scenario_reports_as_expected() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/runs");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    dirs.sort();
    assert!(
        dirs.len() >= 7,
        "scenarios from the users' write-ups are missing"
    );
    let mut failures = Vec::new();
    let mut covered: Vec<String> = Vec::new();
    for dir in &dirs {
        let expected: toml::Table =
            toml::from_str(&std::fs::read_to_string(dir.join("expected.toml")).unwrap()).unwrap();
        covered.extend(fully_expected(&expected));
        let args: Vec<PathBuf> = expected["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| dir.join(a.as_str().unwrap()))
            .collect();
        let out = Command::new(env!("CARGO_BIN_EXE_steptop"))
            .env_remove("STEPTOP_CONFIG")
            .env("XDG_CONFIG_HOME", "/nonexistent/steptop-tests")
            .args(["report", "--format", "json"])
            .args(&args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}: {}",
            dir.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let report: Json = serde_json::from_slice(&out.stdout).unwrap();
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        failures.extend(
            check_diagnosis(&report, &expected)
                .into_iter()
                .map(|why| format!("{name}: {why}")),
        );
        let expects = expected
            .get("expect")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        for want in &expects {
            if let Some(why) = check(&report, want.as_table().unwrap()) {
                failures.push(format!(
                    "{}: {why}",
                    dir.file_name().unwrap().to_string_lossy()
                ));
            }
        }
    }
    for rule in steptop::testing::RULES {
        if !covered.iter().any(|c| c == rule.id) {
            failures.push(format!(
                "{}: no scenario expects it with its severity, first step, evidence and whether it clears",
                rule.id
            ));
        }
    }
    assert!(failures.is_empty(), "\n  {}", failures.join("\n  "));
}

/// The rules a scenario proves in full: an `[[alert]]` that names the severity, the first
/// step, a piece of evidence and whether it clears.
fn fully_expected(expected: &toml::Table) -> Vec<String> {
    expected
        .get("alert")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_table)
        .filter(|a| {
            ["severity", "first_step", "evidence", "cleared"]
                .iter()
                .all(|k| a.contains_key(*k))
        })
        .filter_map(|a| Some(a.get("rule")?.as_str()?.to_string()))
        .collect()
}
