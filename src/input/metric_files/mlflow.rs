//! MLflow's runs: in a file store (`mlruns/<experiment>/<run>/`, its `meta.yaml` standing for
//! the run: `metrics/<key>` files of `timestamp value step` lines, a key with `/` in it a
//! folder; `params/<key>` files of one value) or in a SQLite store (`mlflow.db`, read by
//! `mlflow_db`). Either gives the same points, which become entries (the training figures,
//! one entry per step, at the time the step's first figure was logged) and hardware samples
//! (the `system/gpu_<i>_...` figures of `log_system_metrics`, one sample per logging round,
//! at its time).

use std::collections::BTreeMap;
use std::path::Path;

use super::{Entry, Read};
use crate::model::sample::{GpuReading, HostReading, Sample, TRACKER_SOURCE};

/// One run as either store holds it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Run {
    /// Its params, values as written (`batch_size` = `32`).
    pub params: Vec<(String, String)>,
    /// Every point: its key, time (Unix ms), value and step.
    pub points: Vec<Point>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Point {
    pub key: String,
    pub time_ms: i64,
    pub value: f64,
    pub step: i64,
}

/// Whether `path` is a file-store run's `meta.yaml` (an experiment's has no `metrics/`; a
/// deleted run waits in `.trash/`).
pub fn is_run_meta(path: &Path) -> bool {
    path.file_name().is_some_and(|n| n == "meta.yaml")
        && !path.components().any(|c| c.as_os_str() == ".trash")
        && path.parent().is_some_and(|d| d.join("metrics").is_dir())
}

/// When a file-store run started (Unix ms), from its `meta.yaml`: the latest of several runs
/// is read by default.
pub fn start_time(meta: &Path) -> Option<i64> {
    let text = std::fs::read_to_string(meta).ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("start_time:"))
        .and_then(|v| v.trim().parse().ok())
}

/// A file-store run read whole from its folder (the one holding `meta.yaml`): every metric
/// file under `metrics/` and every param. A line that is not `timestamp value step` is named.
pub fn read_file_store(meta: &Path) -> std::io::Result<(Run, Vec<String>)> {
    let dir = meta.parent().unwrap_or(Path::new("."));
    let mut run = Run::default();
    let mut problems = Vec::new();
    let mut files = Vec::new();
    walk(&dir.join("metrics"), "", &mut files)?;
    for (key, path) in files {
        let text = String::from_utf8_lossy(&std::fs::read(&path)?).into_owned();
        for (n, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            match point(&key, line) {
                Some(p) => run.points.push(p),
                None => problems.push(format!(
                    "{} line {}: not `timestamp value step`",
                    path.display(),
                    n + 1
                )),
            }
        }
    }
    let mut params = Vec::new();
    if dir.join("params").is_dir() {
        walk(&dir.join("params"), "", &mut params)?;
    }
    for (key, path) in params {
        let value = std::fs::read_to_string(&path).unwrap_or_default();
        run.params.push((key, value.trim().to_string()));
    }
    Ok((run, problems))
}

/// The files under `dir`, each with its key (its path below `dir`, parts joined by `/`).
fn walk(
    dir: &Path,
    prefix: &str,
    out: &mut Vec<(String, std::path::PathBuf)>,
) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?
        .flatten()
        .map(|e| e.path())
        .collect();
    entries.sort();
    for p in entries {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let key = if prefix.is_empty() {
            name
        } else {
            format!("{prefix}/{name}")
        };
        if p.is_dir() {
            walk(&p, &key, out)?;
        } else {
            out.push((key, p));
        }
    }
    Ok(())
}

/// One `timestamp value step` line (older stores wrote no step: 0). MLflow writes NaN and
/// infinities as `nan` and `inf`; those are left out of the figures.
fn point(key: &str, line: &str) -> Option<Point> {
    let mut parts = line.split_whitespace();
    let time_ms = parts.next()?.parse().ok()?;
    let value: f64 = parts.next()?.parse().ok()?;
    let step = match parts.next() {
        Some(s) => s.parse().ok()?,
        None => 0,
    };
    Some(Point {
        key: key.to_string(),
        time_ms,
        value,
        step,
    })
}

/// A run as entries and samples: the config from its params first, then its steps in order
/// with the system metrics' samples among them by time.
pub fn entries(run: &Run, store: &str) -> Read {
    let mut out = Read::default();
    let config = config_entry(&run.params);
    if !config.config.is_empty() {
        out.entries.push(config);
    }
    let mut steps: BTreeMap<i64, Entry> = BTreeMap::new();
    // Each logging round of the system metrics: its time, each GPU's figures and the host's.
    let mut rounds: BTreeMap<i64, Round> = BTreeMap::new();
    for p in &run.points {
        if !p.value.is_finite() {
            continue;
        }
        let time = p.time_ms as f64 / 1000.0;
        if let Some(system) = p.key.strip_prefix("system/") {
            let round = rounds.entry(p.step).or_insert_with(|| Round {
                time,
                ..Round::default()
            });
            if let Some((index, figure)) = gpu_figure(system) {
                round.gpus.entry(index).or_default().set(figure, p.value);
            } else {
                round.host.set(system, p.value);
            }
            continue;
        }
        let e = steps.entry(p.step).or_insert_with(|| Entry {
            step: u64::try_from(p.step).ok(),
            time: Some(time),
            ..Entry::default()
        });
        e.time = Some(e.time.map_or(time, |t| t.min(time)));
        e.values.push((p.key.clone(), p.value));
    }
    let mut samples: Vec<Sample> = rounds
        .into_values()
        .map(|r| Sample {
            time: r.time,
            gpus: r.gpus.into_iter().map(|(i, raw)| raw.reading(i)).collect(),
            host: r.host.reading(),
            ..Sample::default()
        })
        .filter(|s| !s.gpus.is_empty() || s.host.is_some())
        .collect();
    samples.sort_by(|a, b| a.time.total_cmp(&b.time));
    let note = interval_note(store, &samples);
    for s in samples.iter_mut().filter(|s| !s.gpus.is_empty()) {
        s.gpu_notes = vec![note.clone()];
    }
    let first = out.entries.len();
    out.entries.extend(steps.into_values());
    let mut samples = samples.into_iter().peekable();
    for (i, e) in out.entries.iter().enumerate().skip(first) {
        let t = e.time.unwrap_or(f64::INFINITY);
        while let Some(s) = samples.next_if(|s| s.time <= t) {
            out.samples.push((i, s));
        }
    }
    let end = out.entries.len();
    out.samples.extend(samples.map(|s| (end, s)));
    out
}

/// The params steptop reads (batch size, workers, ...), by the names a log's config uses.
fn config_entry(params: &[(String, String)]) -> Entry {
    let config = params
        .iter()
        .filter_map(|(k, v)| {
            let name = k.rsplit(['/', '.']).next().unwrap_or(k);
            super::config_fact(name, v).map(|(_, fact)| (format!("{k}={v}"), fact))
        })
        .collect();
    Entry {
        config,
        ..Entry::default()
    }
}

fn interval_note(store: &str, samples: &[Sample]) -> String {
    let mut gaps: Vec<f64> = samples.windows(2).map(|w| w[1].time - w[0].time).collect();
    gaps.sort_by(f64::total_cmp);
    match gaps.get(gaps.len() / 2) {
        Some(gap) => {
            format!("{TRACKER_SOURCE}MLflow every {gap:.0} s ({store})")
        }
        None => format!("{TRACKER_SOURCE}MLflow ({store})"),
    }
}

/// One logging round of `log_system_metrics`.
#[derive(Debug, Default)]
struct Round {
    time: f64,
    gpus: BTreeMap<u32, Raw>,
    host: HostRaw,
}

/// The host's figures of one round: the CPUs' busy share, and the memory in use with its
/// share of the whole (`system_memory_usage_megabytes`, `..._percentage`), which give the
/// total. MLflow does not say how many CPUs there are.
#[derive(Debug, Default)]
struct HostRaw {
    cpu_pct: Option<f64>,
    mem_mb: Option<f64>,
    mem_pct: Option<f64>,
}

impl HostRaw {
    /// A `system/` figure of the host, by its name (a node's prefix, `node_<id>/`, left).
    fn set(&mut self, name: &str, v: f64) {
        let slot = match name.rsplit('/').next().unwrap_or(name) {
            "cpu_utilization_percentage" => &mut self.cpu_pct,
            "system_memory_usage_megabytes" => &mut self.mem_mb,
            "system_memory_usage_percentage" => &mut self.mem_pct,
            _ => return,
        };
        *slot = Some(v);
    }

    fn reading(&self) -> Option<HostReading> {
        let (used_mb, pct) = (self.mem_mb?, self.mem_pct.filter(|p| *p > 0.0)?);
        let used = used_mb * 1024.0 * 1024.0;
        let total = used * 100.0 / pct;
        Some(HostReading {
            cpu_pct: self.cpu_pct,
            mem_total_bytes: total as u64,
            mem_available_bytes: (total - used) as u64,
            mem_used_bytes: used as u64,
            ..HostReading::default()
        })
    }
}

/// One GPU's figures of one round as MLflow logs them: shares beside amounts, so that the
/// amounts' wholes (memory, the power limit) follow from both.
#[derive(Clone, Copy, Debug, Default)]
struct Raw {
    util_pct: Option<f64>,
    mem_pct: Option<f64>,
    mem_bytes: Option<f64>,
    power_w: Option<f64>,
    power_pct: Option<f64>,
}

impl Raw {
    fn set(&mut self, figure: GpuFigure, v: f64) {
        if v < 0.0 {
            return;
        }
        let slot = match figure {
            GpuFigure::Util => &mut self.util_pct,
            GpuFigure::MemPct => &mut self.mem_pct,
            GpuFigure::MemMegabytes => {
                self.mem_bytes = Some(v * 1024.0 * 1024.0);
                return;
            }
            GpuFigure::MemGigabytes => {
                self.mem_bytes = Some(v * 1024.0 * 1024.0 * 1024.0);
                return;
            }
            GpuFigure::PowerW => &mut self.power_w,
            GpuFigure::PowerPct => &mut self.power_pct,
        };
        *slot = Some(v);
    }

    /// The reading: MLflow's memory percentage is the share of memory in use (not NVML's
    /// memory utilization, the share of time it was busy), so it gives the total.
    fn reading(self, index: u32) -> GpuReading {
        let whole = |amount: Option<f64>, pct: Option<f64>| match (amount, pct) {
            (Some(a), Some(p)) if p > 0.0 => Some(a * 100.0 / p),
            _ => None,
        };
        GpuReading {
            index,
            util_pct: self.util_pct.map(|u| u.round() as u32),
            mem_used_bytes: self.mem_bytes.map(|b| b as u64),
            mem_total_bytes: whole(self.mem_bytes, self.mem_pct).map(|b| b as u64),
            power_w: self.power_w,
            power_limit_w: whole(self.power_w, self.power_pct),
            ..GpuReading::default()
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum GpuFigure {
    Util,
    MemPct,
    MemMegabytes,
    MemGigabytes,
    PowerW,
    PowerPct,
}

/// `gpu_<i>_<figure>` (a node's own prefix, `node_<id>/`, comes before it on a multi-node
/// run and is left: one node's run is read).
fn gpu_figure(name: &str) -> Option<(u32, GpuFigure)> {
    let name = name.rsplit('/').next()?;
    let rest = name.strip_prefix("gpu_")?;
    let (index, figure) = rest.split_once('_')?;
    let index = index.parse().ok()?;
    let figure = match figure {
        "utilization_percentage" => GpuFigure::Util,
        "memory_usage_percentage" => GpuFigure::MemPct,
        "memory_usage_megabytes" => GpuFigure::MemMegabytes,
        "memory_usage_gigabytes" => GpuFigure::MemGigabytes,
        "power_usage_watts" => GpuFigure::PowerW,
        "power_usage_percentage" => GpuFigure::PowerPct,
        _ => return None,
    };
    Some((index, figure))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(key: &str, time_ms: i64, value: f64, step: i64) -> Point {
        Point {
            key: key.into(),
            time_ms,
            value,
            step,
        }
    }

    #[test]
    fn a_rounds_gpu_figures_are_one_sample_their_wholes_from_the_shares() {
        let run = Run {
            params: vec![("batch_size".into(), "32".into())],
            points: vec![
                point("loss", 1_000, 2.0, 0),
                point("loss", 2_000, 1.5, 1),
                point("system/gpu_0_utilization_percentage", 1_500, 38.4, 0),
                point("system/gpu_0_power_usage_watts", 1_500, 100.0, 0),
                point("system/gpu_0_power_usage_percentage", 1_500, 25.0, 0),
                point("system/gpu_0_memory_usage_megabytes", 1_500, 1024.0, 0),
                point("system/gpu_0_memory_usage_percentage", 1_500, 50.0, 0),
                point("system/cpu_utilization_percentage", 1_500, 80.0, 0),
                point("system/system_memory_usage_megabytes", 1_500, 4096.0, 0),
                point("system/system_memory_usage_percentage", 1_500, 25.0, 0),
            ],
        };
        let r = entries(&run, "run x");
        assert_eq!(r.entries.len(), 3, "config and two steps");
        assert_eq!(r.samples.len(), 1);
        let (at, s) = &r.samples[0];
        assert_eq!(*at, 2, "after the step logged before it");
        assert_eq!(s.time, 1.5);
        let g = &s.gpus[0];
        assert_eq!(g.util_pct, Some(38));
        assert_eq!(g.power_limit_w, Some(400.0));
        assert_eq!(g.mem_used_bytes, Some(1 << 30));
        assert_eq!(g.mem_total_bytes, Some(2 << 30));
        assert!(s.gpu_notes[0].ends_with("(run x)"), "{:?}", s.gpu_notes);
        let h = s.host.as_ref().expect("the host's reading");
        assert_eq!(h.cpu_pct, Some(80.0));
        assert_eq!(
            (h.mem_used_bytes, h.mem_total_bytes, h.mem_available_bytes),
            (4 << 30, 16 << 30, 12 << 30)
        );
    }

    #[test]
    fn a_deleted_run_in_the_trash_is_no_run() {
        let dir = tempfile::tempdir().expect("tempdir");
        for run in ["0/a", ".trash/b"] {
            std::fs::create_dir_all(dir.path().join(run).join("metrics")).expect("metrics/");
            std::fs::write(dir.path().join(run).join("meta.yaml"), "start_time: 1\n")
                .expect("meta.yaml");
        }
        assert!(is_run_meta(&dir.path().join("0/a/meta.yaml")));
        assert!(!is_run_meta(&dir.path().join(".trash/b/meta.yaml")));
        assert!(!is_run_meta(&dir.path().join("0/meta.yaml")));
    }
}
