//! A run directory as an input: the logs and metric files in it and in the sub-folders
//! frameworks write to (`lightning_logs/`, `csv_logs/`, `runs/`, `work_dirs/<stamp>/`,
//! `output*/`, `checkpoint-*/`), which of them give the steps, and what is left out and why.

use std::path::{Path, PathBuf};

use super::metric_files::{self, Kind};

/// How deep sub-folders are searched: `work_dirs/<config>/<stamp>/vis_data/scalars.json` is
/// four folders down.
pub const MAX_DEPTH: usize = 5;
/// Entries looked at in all, so that a directory of a million checkpoints stays quick.
const MAX_ENTRIES: usize = 20_000;

/// What a run directory holds for steptop.
#[derive(Debug, Default, PartialEq)]
pub struct Found {
    /// The files to read, in order: the chosen metric files, then the logs.
    pub files: Vec<PathBuf>,
    /// The files left out, each with why.
    pub ignored: Vec<(PathBuf, &'static str)>,
    /// The kind of metric file that gives the steps, when there is one.
    pub steps_from: Option<Kind>,
}

/// A text log by its name: what frameworks and shells name their output.
fn is_log(path: &Path) -> bool {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_ascii_lowercase();
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default()
        .to_ascii_lowercase();
    matches!(ext.as_str(), "log" | "txt" | "out" | "err" | "jsonl")
        || name.starts_with("stdout")
        || name.starts_with("stderr")
        || name.starts_with("slurm-")
}

/// Extensions of what is not a log: code, config, data, weights, images.
const NOT_LOGS: [&str; 25] = [
    "py",
    "sh",
    "ipynb",
    "json",
    "yaml",
    "yml",
    "toml",
    "cfg",
    "ini",
    "md",
    "csv",
    "pt",
    "pth",
    "bin",
    "ckpt",
    "safetensors",
    "npy",
    "npz",
    "pkl",
    "png",
    "jpg",
    "svg",
    "html",
    "tar",
    "lock",
];

/// A file directly in the run directory is read unless its extension says it is not a log:
/// a log may be named anything (`output`, `train.o4242`).
fn maybe_log(path: &Path) -> bool {
    let ext = path
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or_default()
        .to_ascii_lowercase();
    is_log(path) || !NOT_LOGS.contains(&ext.as_str())
}

/// The number in a `checkpoint-N` folder the file is under, if any.
fn checkpoint(path: &Path) -> Option<u64> {
    path.components()
        .filter_map(|c| c.as_os_str().to_str()?.strip_prefix("checkpoint-"))
        .find_map(|n| n.parse().ok())
}

/// Looks through `dir`: files directly in it are read unless their extension says they are
/// not logs; in sub-folders only what is named as a log, and metric files.
pub fn discover(dir: &Path) -> std::io::Result<Found> {
    let mut top = Vec::new();
    let mut deeper = Vec::new();
    let mut seen = 0;
    let mut stack = vec![(dir.to_path_buf(), 0)];
    while let Some((d, depth)) = stack.pop() {
        let mut entries: Vec<PathBuf> =
            std::fs::read_dir(&d)?.flatten().map(|e| e.path()).collect();
        entries.sort();
        for p in entries {
            seen += 1;
            if seen > MAX_ENTRIES {
                break;
            }
            // A link to a folder (W&B's `latest-run`) names one that is read anyway.
            let linked = p
                .symlink_metadata()
                .is_ok_and(|m| m.file_type().is_symlink());
            if p.is_dir() {
                if depth + 1 < MAX_DEPTH && !linked {
                    stack.push((p, depth + 1));
                }
            } else if depth == 0 {
                top.push(p);
            } else {
                deeper.push(p);
            }
        }
    }
    let mut found = choose(top, deeper);
    // Several MLflow runs (an experiment's folder, or `mlruns/` whole): the latest started is
    // the run, as for W&B's.
    let runs: Vec<(PathBuf, i64)> = found
        .files
        .iter()
        .filter(|p| metric_files::mlflow::is_run_meta(p))
        .map(|p| (p.clone(), metric_files::mlflow::start_time(p).unwrap_or(0)))
        .collect();
    if let Some((latest, _)) = runs.iter().max_by_key(|(p, t)| (*t, p.clone())) {
        let latest = latest.clone();
        for (p, _) in runs.into_iter().filter(|(p, _)| *p != latest) {
            found.files.retain(|f| *f != p);
            found.ignored.push((
                p,
                "an earlier MLflow run in the same folder (give its folder to read it)",
            ));
        }
    }
    // What its name calls a log may be a tracker's binary file or its own diagnostics log.
    for p in std::mem::take(&mut found.files) {
        let why = metric_files::kind_of(&p)
            .is_none()
            .then(|| super::sniff::not_a_log(&p))
            .flatten();
        match why {
            Some(why) => found.ignored.push((p, why)),
            None => found.files.push(p),
        }
    }
    Ok(found)
}

/// The tracker's run folder `path` is in (W&B's `run-20240501_101500-abc123`,
/// `offline-run-...`; SwanLab names its runs the same), by the names they are given: the stamp
/// sorts them in time. `latest-run`, W&B's link to the newest, sorts after every stamp.
fn tracker_run(path: &Path) -> Option<&str> {
    path.ancestors().skip(1).find_map(|a| {
        let name = a.file_name()?.to_str()?;
        if name == "latest-run" {
            return Some(name);
        }
        let rest = name.strip_prefix("offline-").unwrap_or(name);
        let stamp = rest.strip_prefix("run-")?;
        let b = stamp.as_bytes();
        let stamped = b.len() > 16
            && b[..8].iter().all(u8::is_ascii_digit)
            && b[8] == b'_'
            && b[9..15].iter().all(u8::is_ascii_digit)
            && b[15] == b'-';
        stamped.then_some(stamp)
    })
}

/// Which of the files found to read, by their places and their kinds (telling a SQLite
/// store's kind opens it).
fn choose(top: Vec<PathBuf>, deeper: Vec<PathBuf>) -> Found {
    let mut found = Found::default();
    let all: Vec<(PathBuf, bool)> = top
        .into_iter()
        .map(|p| (p, true))
        .chain(deeper.into_iter().map(|p| (p, false)))
        .collect();
    // Several tracker runs in one folder (a project's `wandb/` or `swanlog/`): the latest is
    // the run, as W&B's own `latest-run` says; in it, the console (`files/output.log`) and the
    // run file are read, and the tracker's records of the environment are not logs.
    let latest = all.iter().filter_map(|(p, _)| tracker_run(p)).max();
    let latest = latest.map(str::to_string);
    let mut all_kept = Vec::with_capacity(all.len());
    for (p, top) in all {
        match tracker_run(&p) {
            Some(run) if Some(run) != latest.as_deref() => found.ignored.push((
                p,
                "an earlier run in the same folder (give its folder to read it)",
            )),
            Some(_)
                if p.parent().and_then(Path::file_name) == Some("files".as_ref())
                    && p.file_name() != Some("output.log".as_ref()) =>
            {
                found
                    .ignored
                    .push((p, "the tracker's record of the run (config, environment)"))
            }
            // Each file's kind, found once: telling a SQLite store's kind opens it.
            _ => {
                let kind = metric_files::kind_of(&p);
                all_kept.push((p, top, kind));
            }
        }
    }
    let all = all_kept;
    let best = all
        .iter()
        .filter_map(|(_, _, k)| *k)
        .min_by_key(|k| k.preference());
    found.steps_from = best;
    // Each checkpoint keeps a copy of the whole log history: the newest has them all. The
    // one outside any numbered checkpoint (the run's own, written when training ended, with
    // its closing summary; or `last-checkpoint/`'s) is the newest, the run's own first.
    let newest = all
        .iter()
        .filter(|(_, _, k)| *k == Some(Kind::TrainerState))
        .max_by_key(|(p, top, _)| (checkpoint(p).unwrap_or(u64::MAX), *top))
        .map(|(p, _, _)| p.clone());
    let mut logs = Vec::new();
    for (p, top, kind) in all {
        match kind {
            Some(k) if Some(k) != best => found
                .ignored
                .push((p, "the same steps as the run's preferred metric file")),
            Some(Kind::TrainerState) if newest.as_ref() != Some(&p) => found
                .ignored
                .push((p, "an older checkpoint's copy of the same history")),
            Some(_) => found.files.push(p),
            None if (top && maybe_log(&p)) || is_log(&p) => logs.push(p),
            None => found.ignored.push((p, "not a log or a metric file")),
        }
    }
    found.files.extend(logs);
    found
}

/// One line for stderr: what a run directory gave and what it left out.
pub fn summary(dir: &Path, f: &Found) -> String {
    let rel = |p: &Path| p.strip_prefix(dir).unwrap_or(p).display().to_string();
    let mut s = format!(
        "steptop: {}: reading {}",
        dir.display(),
        f.files
            .iter()
            .map(|p| rel(p))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if let Some(k) = f.steps_from {
        s.push_str(&format!(
            " (steps from the {} files; the logs give events and config)",
            k.format().name()
        ));
    }
    if !f.ignored.is_empty() {
        let shown: Vec<String> = f
            .ignored
            .iter()
            .take(8)
            .map(|(p, why)| format!("{} ({why})", rel(p)))
            .collect();
        s.push_str(&format!(
            "; left out {}: {}",
            f.ignored.len(),
            shown.join(", ")
        ));
        if f.ignored.len() > 8 {
            s.push_str(", ...");
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_checkpoints_history_and_the_event_files_give_the_steps() {
        let p = |s: &str| PathBuf::from(s);
        let f = choose(
            vec![p("run/stdout.log"), p("run/notes.md"), p("run/output")],
            vec![
                p("run/out/checkpoint-30/trainer_state.json"),
                p("run/out/checkpoint-60/trainer_state.json"),
                p("run/out/checkpoint-60/config.json"),
                p("run/out/runs/Nov26/events.out.tfevents.1.vm.1.0"),
                p("run/out/train.log"),
            ],
        );
        assert_eq!(f.steps_from, Some(Kind::Events));
        assert_eq!(
            f.files,
            vec![
                p("run/out/runs/Nov26/events.out.tfevents.1.vm.1.0"),
                p("run/stdout.log"),
                p("run/output"),
                p("run/out/train.log"),
            ]
        );
        assert_eq!(f.ignored.len(), 4);
        let g = choose(
            vec![],
            vec![
                p("o/checkpoint-30/trainer_state.json"),
                p("o/checkpoint-100/trainer_state.json"),
                p("o/checkpoint-60/trainer_state.json"),
            ],
        );
        assert_eq!(g.files, vec![p("o/checkpoint-100/trainer_state.json")]);
        // The run's own, written when training ended with its closing summary, beats every
        // checkpoint's copy.
        let g = choose(
            vec![p("o/trainer_state.json")],
            vec![
                p("o/checkpoint-3000/trainer_state.json"),
                p("o/checkpoint-1000/trainer_state.json"),
            ],
        );
        assert_eq!(g.files, vec![p("o/trainer_state.json")]);
    }

    #[test]
    fn a_projects_wandb_folder_is_its_latest_run() {
        let p = |s: &str| PathBuf::from(s);
        let f = choose(
            vec![],
            vec![
                p("wandb/run-20240101_100000-aaa/run-aaa.wandb"),
                p("wandb/run-20240101_100000-aaa/files/output.log"),
                p("wandb/offline-run-20240102_090000-bbb/run-bbb.wandb"),
                p("wandb/offline-run-20240102_090000-bbb/files/output.log"),
                p("wandb/offline-run-20240102_090000-bbb/files/requirements.txt"),
            ],
        );
        assert_eq!(f.steps_from, Some(Kind::Wandb));
        assert_eq!(
            f.files,
            vec![
                p("wandb/offline-run-20240102_090000-bbb/run-bbb.wandb"),
                p("wandb/offline-run-20240102_090000-bbb/files/output.log"),
            ]
        );
        let why: Vec<&str> = f.ignored.iter().map(|(_, why)| *why).collect();
        assert_eq!(why.len(), 3, "{why:?}");
        assert!(why[0].starts_with("an earlier run"), "{why:?}");
        assert!(
            why[2].starts_with("the tracker's record of the run"),
            "{why:?}"
        );
    }
}
