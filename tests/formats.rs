//! Every fixtures/logs/<format>/ folder through the parser, checked against its expected.toml:
//! the detected format, the number of step records, and the fields of chosen records. Adding a
//! case means adding a folder.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value as Json;
use steptop::Feed;
use steptop::Record;
use toml::Value;

/// Records of one physical line: (variant, fields as JSON, rank).
type LineRecords = Vec<(String, Json, u32)>;

struct Parsed {
    format: Option<&'static str>,
    steps: usize,
    by_line: BTreeMap<u64, LineRecords>,
}

fn parse_fixture(dir: &Path) -> Parsed {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().is_some_and(|n| n != "expected.toml"))
        .collect();
    logs.sort();
    assert_eq!(
        logs.len(),
        1,
        "{}: one log file per fixture folder",
        dir.display()
    );
    let mut feed = Feed::new(0, &logs[0].display().to_string(), Arc::default());
    let mut by_line: BTreeMap<u64, LineRecords> = BTreeMap::new();
    let mut steps = 0;
    steptop::read_lines(&logs[0], &mut |line_no, raw| {
        feed.line(line_no, raw, None, &mut |stamp, rec| {
            if matches!(rec, Record::Step(_)) {
                steps += 1;
            }
            let json = serde_json::to_value(&rec).unwrap();
            let (variant, fields) = match json {
                Json::Object(m) => m.into_iter().next().unwrap(),
                other => panic!("unexpected record shape {other}"),
            };
            by_line
                .entry(line_no)
                .or_default()
                .push((variant, fields, stamp.rank));
        });
    })
    .unwrap();
    Parsed {
        format: feed.format().map(|f| f.name()),
        steps,
        by_line,
    }
}

const TABLES: [(&str, &str); 8] = [
    ("step", "Step"),
    ("stage", "Stage"),
    ("stage_total", "StageTotal"),
    ("cache", "Cache"),
    ("host_mem", "HostMem"),
    ("event", "Event"),
    ("config", "Config"),
    ("summary", "Summary"),
];

fn same(expected: &Value, got: &Json) -> bool {
    match (expected, got) {
        (Value::Float(e), Json::Number(g)) => close(*e, g.as_f64().unwrap_or(f64::NAN)),
        (Value::Integer(e), Json::Number(g)) => close(*e as f64, g.as_f64().unwrap_or(f64::NAN)),
        (Value::String(e), Json::String(g)) => e == g,
        (Value::Boolean(e), Json::Bool(g)) => e == g,
        _ => false,
    }
}

fn close(e: f64, g: f64) -> bool {
    (e - g).abs() <= 1e-6 * e.abs().max(g.abs()).max(1e-12)
}

/// Why one expectation does not hold, or None when it does.
fn check(table: &str, variant: &str, want: &toml::Table, parsed: &Parsed) -> Option<String> {
    let line = want.get("line")?.as_integer()? as u64;
    let on_line: Vec<&(String, Json, u32)> = parsed
        .by_line
        .get(&line)
        .map(|v| v.iter().filter(|r| r.0 == variant).collect())
        .unwrap_or_default();
    let matches_all = |rec: &(String, Json, u32)| -> Vec<String> {
        let mut bad = Vec::new();
        for (k, v) in want {
            match k.as_str() {
                "line" | "seg" => {}
                "rank" => {
                    if !same(v, &Json::from(rec.2)) {
                        bad.push(format!("rank: want {v:?}, got {}", rec.2));
                    }
                }
                "absent" => {
                    for f in v.as_array().into_iter().flatten().filter_map(Value::as_str) {
                        if !rec.1.get(f).is_none_or(Json::is_null) {
                            bad.push(format!("{f}: want absent, got {}", rec.1[f]));
                        }
                    }
                }
                key => {
                    let got = rec.1.get(key).unwrap_or(&Json::Null);
                    if !same(v, got) {
                        bad.push(format!("{key}: want {v:?}, got {got}"));
                    }
                }
            }
        }
        bad
    };
    // Events and config facts are found by content; the rest by their index on the line.
    if table == "event" || table == "config" {
        if on_line.iter().any(|r| matches_all(r).is_empty()) {
            return None;
        }
        return Some(format!(
            "[[{table}]] line {line}: none of {:?} matches {want:?}",
            on_line.iter().map(|r| &r.1).collect::<Vec<_>>()
        ));
    }
    let seg = want.get("seg").and_then(Value::as_integer).unwrap_or(0) as usize;
    let Some(rec) = on_line.get(seg) else {
        return Some(format!(
            "[[{table}]] line {line} seg {seg}: no such record (the line has {})",
            on_line.len()
        ));
    };
    let bad = matches_all(rec);
    (!bad.is_empty()).then(|| format!("[[{table}]] line {line} seg {seg}: {}", bad.join("; ")))
}

#[test]
fn every_format_fixture_parses_as_expected() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/logs");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(
        dirs.len() >= 20,
        "expected a fixture per format, found {}",
        dirs.len()
    );
    let mut failures = Vec::new();
    let mut checks = 0;
    for dir in &dirs {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        let text = std::fs::read_to_string(dir.join("expected.toml")).unwrap();
        let expected: toml::Table =
            toml::from_str(&text).unwrap_or_else(|e| panic!("{name}/expected.toml: {e}"));
        let parsed = parse_fixture(dir);
        let mut bad = Vec::new();
        if let Some(f) = expected.get("format").and_then(Value::as_str)
            && parsed.format != Some(f)
        {
            bad.push(format!("format: want {f}, got {:?}", parsed.format));
        }
        if let Some(n) = expected.get("steps").and_then(Value::as_integer)
            && parsed.steps as i64 != n
        {
            bad.push(format!("steps: want {n}, got {}", parsed.steps));
        }
        for (table, variant) in TABLES {
            for want in expected
                .get(table)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                checks += 1;
                if let Some(why) = want
                    .as_table()
                    .and_then(|w| check(table, variant, w, &parsed))
                {
                    bad.push(why);
                }
            }
        }
        if !bad.is_empty() {
            failures.push(format!("{name}:\n    {}", bad.join("\n    ")));
        }
    }
    assert!(
        checks > 100,
        "only {checks} record checks: the fixtures lost their expectations"
    );
    assert!(
        failures.is_empty(),
        "{} of {} fixtures fail:\n  {}",
        failures.len(),
        dirs.len(),
        failures.join("\n  ")
    );
}
