//! Every fixtures/runs/<scenario>/ through the real `steptop report --format json`, checked
//! against its expected.toml: `args` are the files in order, each `[[expect]]` a dotted path into
//! the report with `equals` or `approx` + `tol`. Adding a scenario means adding a folder.

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
    let equal = match (want.get("equals")?, got) {
        (Value::String(e), Json::String(g)) => e == g,
        (Value::Integer(e), Json::Number(g)) => g.as_i64() == Some(*e),
        (Value::Float(e), Json::Number(g)) => g.as_f64() == Some(*e),
        (Value::Boolean(e), Json::Bool(g)) => e == g,
        _ => false,
    };
    (!equal).then(|| format!("{path}: want {:?}, got {got}", want.get("equals")))
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
        dirs.len() >= 2,
        "the two scenarios from the users' write-ups are missing"
    );
    let mut failures = Vec::new();
    for dir in &dirs {
        let expected: toml::Table =
            toml::from_str(&std::fs::read_to_string(dir.join("expected.toml")).unwrap()).unwrap();
        let args: Vec<PathBuf> = expected["args"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| dir.join(a.as_str().unwrap()))
            .collect();
        let out = Command::new(env!("CARGO_BIN_EXE_steptop"))
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
        let expects = expected["expect"].as_array().unwrap();
        assert!(!expects.is_empty());
        for want in expects {
            if let Some(why) = check(&report, want.as_table().unwrap()) {
                failures.push(format!(
                    "{}: {why}",
                    dir.file_name().unwrap().to_string_lossy()
                ));
            }
        }
    }
    assert!(failures.is_empty(), "\n  {}", failures.join("\n  "));
}
