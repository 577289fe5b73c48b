//! MLflow's SQLite store (`mlflow.db`, the default since MLflow 3; older projects name it as
//! they like): the same runs a file store holds, in tables `runs`, `metrics` and `params`,
//! whose columns have not changed from MLflow 1.x to 3.x. Opened read-only and immutable, so
//! that reading takes no lock and writes no journal beside the user's file while MLflow may
//! be writing it.

use std::path::Path;

use super::mlflow::{Point, Run};
use super::sqlite::{first_text, open};

/// The tables that make a SQLite file an MLflow store (Trackio's and others' stores are
/// SQLite too).
pub const TABLES: [&str; 3] = ["runs", "metrics", "params"];

/// The run read by default: the latest started of the store's active runs (a deleted run is
/// in the trash). Its id and every point and param; None when the store has no run.
pub fn read_latest(path: &Path) -> Result<Option<(String, Run)>, String> {
    let c = open(path).map_err(|e| e.to_string())?;
    let id = first_text(
        &c,
        "SELECT run_uuid FROM runs WHERE lifecycle_stage = 'active' \
         ORDER BY start_time DESC, run_uuid DESC LIMIT 1",
    )
    .map_err(|e| e.to_string())?;
    let Some(id) = id else { return Ok(None) };
    let mut run = Run::default();
    let mut points = c
        .prepare(
            "SELECT key, timestamp, value, step, is_nan FROM metrics WHERE run_uuid = ?1 \
             ORDER BY timestamp, step, key",
        )
        .map_err(|e| e.to_string())?;
    let rows = points
        .query_map([&id], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, i64>(1)?,
                r.get::<_, f64>(2)?,
                r.get::<_, Option<i64>>(3)?,
                r.get::<_, Option<bool>>(4)?,
            ))
        })
        .map_err(|e| e.to_string())?;
    for row in rows {
        let (key, time_ms, value, step, nan) = row.map_err(|e| e.to_string())?;
        // A NaN is stored as 0 with `is_nan` set.
        let value = if nan == Some(true) { f64::NAN } else { value };
        run.points.push(Point {
            key,
            time_ms,
            value,
            step: step.unwrap_or(0),
        });
    }
    let mut params = c
        .prepare("SELECT key, value FROM params WHERE run_uuid = ?1 ORDER BY key")
        .map_err(|e| e.to_string())?;
    let rows = params
        .query_map([&id], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
        })
        .map_err(|e| e.to_string())?;
    for row in rows {
        run.params.push(row.map_err(|e| e.to_string())?);
    }
    Ok(Some((id, run)))
}
