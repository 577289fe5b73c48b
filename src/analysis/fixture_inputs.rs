//! Every input the fixtures hold, for the tests that run the whole pipeline over all of them.

use std::path::{Path, PathBuf};

/// Every input the fixtures hold, as `report` is given them: each scenario's and wild
/// case's files together (a metric-file case's folder as `report` expands it), every other
/// log alone.
pub fn all() -> Vec<Vec<PathBuf>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let dirs = |sub: &str| -> Vec<PathBuf> {
        let mut d: Vec<PathBuf> = std::fs::read_dir(root.join(sub))
            .expect("fixture folder")
            .map(|e| e.expect("entry").path())
            .filter(|p| p.is_dir())
            .collect();
        d.sort();
        d
    };
    let listed = |dir: &Path, file: &str, key: &str| -> Vec<PathBuf> {
        let text = std::fs::read_to_string(dir.join(file)).expect("case file");
        let table: toml::Table = toml::from_str(&text).expect("case toml");
        let names: Vec<String> = match key {
            "args" => table["args"]
                .as_array()
                .expect("args")
                .iter()
                .map(|a| a.as_str().expect("arg").to_string())
                .collect(),
            _ => table["files"]
                .as_array()
                .expect("files")
                .iter()
                .map(|f| f["name"].as_str().expect("name").to_string())
                .collect(),
        };
        names.iter().map(|n| dir.join(n)).collect()
    };
    let mut inputs = Vec::new();
    for dir in dirs("runs") {
        inputs.push(listed(&dir, "expected.toml", "args"));
    }
    for dir in dirs("wild") {
        let case = std::fs::read_to_string(dir.join("case.toml")).expect("case.toml");
        if case.contains("\nkind = \"metric-files\"") {
            let found = crate::input::run_dir::discover(&dir).expect("a metric-file case");
            inputs.push(found.files);
        } else {
            inputs.push(listed(&dir, "case.toml", "files"));
        }
    }
    // A comparison's sides are folders of their own.
    let mut folders: Vec<PathBuf> = dirs("logs");
    for dir in dirs("compare") {
        folders.extend(
            std::fs::read_dir(&dir)
                .expect("fixture folder")
                .map(|e| e.expect("entry").path())
                .filter(|p| p.is_dir()),
        );
        folders.push(dir);
    }
    for dir in folders {
        for f in std::fs::read_dir(&dir).expect("fixture folder") {
            let f = f.expect("entry").path();
            let text = f
                .extension()
                .is_none_or(|e| e == "log" || e == "jsonl" || e == "txt" || e == "out");
            if f.is_file() && text {
                inputs.push(vec![f]);
            }
        }
    }
    inputs
}
