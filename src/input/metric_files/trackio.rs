//! Trackio's project store (Hugging Face's local tracker: `~/.cache/huggingface/trackio/
//! <project>.db`, SQLite): a row per `trackio.log()` call in `metrics` (its step and a JSON
//! object of its figures), the run's config in `configs`, and the system monitor's readings in
//! `system_metrics` (JSON objects, GPU figures as `gpu/<i>/<figure>`). A row's `timestamp` is
//! when a batch of rows was stored, not when each was logged (150 rows of one run shared 14),
//! so the rows give no step time; the monitor's rows are timed by their reading.

use std::collections::BTreeMap;
use std::path::Path;

use super::gpu_figure::{GpuFigure, set};
use super::sqlite::{first_text, open};

const GIB: f64 = (1u64 << 30) as f64;
use super::{Entry, Read};
use crate::model::sample::{GpuReading, Sample, TRACKER_SOURCE};

/// The tables that make a SQLite file a Trackio store.
pub const TABLES: [&str; 3] = ["metrics", "configs", "system_metrics"];

/// The latest run of the store (the one that logged last), read whole.
pub fn read(path: &Path) -> Result<Read, String> {
    let c = open(path).map_err(|e| e.to_string())?;
    let mut out = Read::default();
    let run = first_text(&c, "SELECT run_id FROM metrics ORDER BY id DESC LIMIT 1")
        .map_err(|e| e.to_string())?;
    let Some(run) = run else {
        out.problems.push("the store holds no logged row".into());
        return Ok(out);
    };
    let config: Option<Vec<u8>> = c
        .query_row(
            "SELECT config FROM configs WHERE run_id = ?1",
            [&run],
            |r| Ok(r.get_ref(0)?.as_bytes().map(<[u8]>::to_vec).ok()),
        )
        .unwrap_or(None);
    if let Some(json) = config.and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok()) {
        let mut facts = Vec::new();
        if let Some(map) = json.as_object() {
            for (k, v) in map {
                super::wandb::collect_facts(k, v, &mut facts);
            }
        }
        if !facts.is_empty() {
            out.entries.push(Entry {
                config: facts,
                ..Entry::default()
            });
        }
    }
    // Each row with the time it was stored, to place the readings among them.
    let mut stored = Vec::new();
    let mut rows = c
        .prepare("SELECT step, timestamp, metrics FROM metrics WHERE run_id = ?1 ORDER BY id")
        .map_err(|e| e.to_string())?;
    let found = rows
        .query_map([&run], |r| {
            Ok((
                r.get::<_, Option<i64>>(0)?,
                r.get::<_, Option<String>>(1)?,
                r.get_ref(2)?
                    .as_bytes()
                    .map(<[u8]>::to_vec)
                    .unwrap_or_default(),
            ))
        })
        .map_err(|e| e.to_string())?;
    for row in found {
        let (step, at, json) = row.map_err(|e| e.to_string())?;
        let Ok(serde_json::Value::Object(map)) = serde_json::from_slice(&json) else {
            out.problems
                .push(format!("a row of run {run} is not a JSON object"));
            continue;
        };
        let values = map
            .iter()
            .filter_map(|(k, v)| Some((k.clone(), v.as_f64().filter(|v| v.is_finite())?)))
            .collect();
        stored.push(at.as_deref().and_then(iso_seconds));
        out.entries.push(Entry {
            step: step.and_then(|s| u64::try_from(s).ok()),
            values,
            ..Entry::default()
        });
    }
    let samples = readings(&c, &run).map_err(|e| e.to_string())?;
    // A reading goes after the rows stored before it.
    let first = out.entries.len() - stored.len();
    for s in samples {
        let at = first
            + stored
                .iter()
                .take_while(|t| t.is_some_and(|t| t <= s.time))
                .count();
        out.samples.push((at, s));
    }
    Ok(out)
}

/// The monitor's GPU readings of `run`, in time order.
fn readings(c: &rusqlite::Connection, run: &str) -> rusqlite::Result<Vec<Sample>> {
    let mut q =
        c.prepare("SELECT timestamp, metrics FROM system_metrics WHERE run_id = ?1 ORDER BY id")?;
    let rows = q.query_map([run], |r| {
        Ok((
            r.get::<_, Option<String>>(0)?,
            r.get_ref(1)?
                .as_bytes()
                .map(<[u8]>::to_vec)
                .unwrap_or_default(),
        ))
    })?;
    let mut out = Vec::new();
    for row in rows {
        let (at, json) = row?;
        let Some(time) = at.as_deref().and_then(iso_seconds) else {
            continue;
        };
        let Ok(serde_json::Value::Object(map)) = serde_json::from_slice(&json) else {
            continue;
        };
        let mut gpus: BTreeMap<u32, GpuReading> = BTreeMap::new();
        for (k, v) in &map {
            let Some(v) = v.as_f64().filter(|v| v.is_finite() && *v >= 0.0) else {
                continue;
            };
            let Some((index, figure)) = gpu_figure(k) else {
                continue;
            };
            let g = gpus.entry(index).or_insert_with(|| GpuReading {
                index,
                ..GpuReading::default()
            });
            // Trackio gives memory in GiB.
            let (figure, v) = match figure {
                "utilization" => (GpuFigure::Util, v),
                "memory_utilization" => (GpuFigure::MemUtil, v),
                "allocated_memory" => (GpuFigure::MemUsedBytes, v * GIB),
                "total_memory" => (GpuFigure::MemTotalBytes, v * GIB),
                "power" => (GpuFigure::PowerW, v),
                "power_limit" => (GpuFigure::PowerLimitW, v),
                "temp" => (GpuFigure::TempC, v),
                "sm_clock" => (GpuFigure::SmClockMhz, v),
                _ => continue,
            };
            set(g, figure, v);
        }
        if !gpus.is_empty() {
            out.push(Sample {
                time,
                gpus: gpus.into_values().collect(),
                gpu_notes: vec![format!("{TRACKER_SOURCE}Trackio's system monitor")],
                ..Sample::default()
            });
        }
    }
    Ok(out)
}

/// `gpu/<i>/<figure>`: the GPU and the figure (the totals, `gpu/total_power`, are not a GPU's).
fn gpu_figure(name: &str) -> Option<(u32, &str)> {
    let rest = name.strip_prefix("gpu/")?;
    let (index, figure) = rest.split_once('/')?;
    Some((index.parse().ok()?, figure))
}

/// An ISO 8601 time as Trackio writes it (`2026-11-29T15:21:49.798672+00:00`), in Unix seconds:
/// the date and clock as a log line's timestamp is read, less the zone's offset.
fn iso_seconds(text: &str) -> Option<f64> {
    let (time, zone) = crate::parse::prefix::timestamp(text)?;
    let offset_s = match zone {
        "" | "Z" => 0.0,
        z => {
            let sign = match z.as_bytes()[0] {
                b'+' => 1.0,
                b'-' => -1.0,
                _ => return None,
            };
            let (h, min) = z[1..].split_once(':')?;
            sign * (h.parse::<f64>().ok()? * 3600.0 + min.parse::<f64>().ok()? * 60.0)
        }
    };
    Some(time.secs - offset_s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trackios_times_are_read_with_their_zone() {
        assert_eq!(iso_seconds("1970-01-02T00:00:01.5+00:00"), Some(86_401.5));
        assert_eq!(iso_seconds("1970-01-02T01:00:00+01:00"), Some(86_400.0));
        assert_eq!(iso_seconds("1970-01-01T00:00:00Z"), Some(0.0));
    }

    /// A store as Trackio's schema holds one (rows written here: no GPU run of Trackio's was
    /// at hand), its GPU readings under the names Trackio's monitor gives them.
    #[test]
    fn a_stores_rows_config_and_gpu_readings_are_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("project.db");
        let c = rusqlite::Connection::open(&path).expect("create");
        c.execute_batch(
            "CREATE TABLE metrics (id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, timestamp TEXT NOT NULL, run_name TEXT NOT NULL, step INTEGER NOT NULL, metrics TEXT NOT NULL, log_id TEXT, space_id TEXT);
             CREATE TABLE configs (id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, run_name TEXT NOT NULL, config TEXT NOT NULL, created_at TEXT NOT NULL, UNIQUE(run_id));
             CREATE TABLE system_metrics (id INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL, timestamp TEXT NOT NULL, run_name TEXT NOT NULL, metrics TEXT NOT NULL, log_id TEXT, space_id TEXT);
             INSERT INTO configs (run_id, run_name, config, created_at) VALUES ('r1', 'a', CAST('{\"batch_size\": 32}' AS BLOB), '2026-01-01T00:00:00+00:00');
             INSERT INTO metrics (run_id, timestamp, run_name, step, metrics) VALUES ('r1', '2026-01-01T00:00:10+00:00', 'a', 1, CAST('{\"train/loss\": 2.5}' AS BLOB));
             INSERT INTO metrics (run_id, timestamp, run_name, step, metrics) VALUES ('r1', '2026-01-01T00:00:20+00:00', 'a', 2, CAST('{\"train/loss\": 2.0}' AS BLOB));
             INSERT INTO system_metrics (run_id, timestamp, run_name, metrics) VALUES ('r1', '2026-01-01T00:00:15+00:00', 'a', '{\"gpu/0/utilization\": 38.0, \"gpu/0/power\": 120.5, \"gpu/0/power_limit\": 400.0, \"gpu/total_power\": 120.5, \"cpu/utilization\": 50.0}');",
        )
        .expect("schema");
        drop(c);
        assert_eq!(
            super::super::kind_of(&path),
            Some(super::super::Kind::Trackio)
        );
        let r = read(&path).expect("read");
        assert_eq!(r.entries.len(), 3, "config and two rows");
        assert_eq!(r.entries[0].config.len(), 1);
        assert_eq!((r.entries[2].step, r.entries[2].time), (Some(2), None));
        assert_eq!(r.samples.len(), 1);
        let (at, s) = &r.samples[0];
        assert_eq!(*at, 2, "after the row stored before it");
        assert_eq!(s.gpus.len(), 1);
        assert_eq!(
            (
                s.gpus[0].util_pct,
                s.gpus[0].power_w,
                s.gpus[0].power_limit_w
            ),
            (Some(38), Some(120.5), Some(400.0))
        );
    }
}
