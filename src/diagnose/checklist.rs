//! The users' own health checklist: each item passes, fails, or is unknown for lack of a
//! reading, with the measured value beside it.

use serde::Serialize;

use super::Diagnosis;
use super::signals::View;
use crate::model::Model;
use crate::parse::record::EventKind;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Pass,
    Fail,
    Unknown,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Item {
    /// Stable id: `gpu_util`, `data_time`, `cache_hit_rate`, `host_cpu`, `host_memory_stable`,
    /// `loss_finite`, `throughput_target`.
    pub id: &'static str,
    pub label: &'static str,
    pub status: Status,
    /// The measured value with its unit, when there is one.
    pub value: Option<String>,
}

/// A data wait under this share of the step passes whatever its milliseconds: the share under
/// which `compute_bound` says the input is not the limit.
const DATA_SHARE: f64 = 0.02;

/// Host memory counts as stable while its use grows by less than this (MiB per minute).
const STABLE_MIB_PER_MIN: f64 = 10.0;

/// The checklist as the model and the diagnosis's windows stand now.
pub fn evaluate(m: &Model, d: &Diagnosis) -> Vec<Item> {
    let v = View::new(m, d.config().windows(), d.active_set());
    let item = |id,
                label,
                value: Option<f64>,
                pass: &dyn Fn(f64) -> bool,
                show: &dyn Fn(f64) -> String| Item {
        id,
        label,
        status: match value {
            Some(x) if pass(x) => Status::Pass,
            Some(_) => Status::Fail,
            None => Status::Unknown,
        },
        value: value.map(show),
    };
    // The probe's readings, else the log's own memory monitor.
    let used_trend = v
        .slope(|s| Some(s.host.as_ref()?.mem_used_bytes as f64))
        .map(|b| b * 60.0 / f64::from(1 << 20))
        .or_else(|| {
            v.log_memory_slope(|r| r.system_used_mb)
                .map(|mib| mib * 60.0)
        });
    let losses = m.merged.loss.run.count()
        + m.event_counts
            .get(&EventKind::NonFinite)
            .copied()
            .unwrap_or(0);
    let nonfinite = (losses > 0).then(|| {
        m.event_counts
            .get(&EventKind::NonFinite)
            .copied()
            .unwrap_or(0) as f64
    });
    let target = d.config().target_samples_per_s;
    let samples = m
        .merged
        .samples_per_s
        .recent(d.config().window_steps)
        .map(|s| s.mean);
    vec![
        item(
            "gpu_util",
            "GPU utilization above 90%",
            v.gpu_util(),
            &|x| x > 90.0,
            &|x| format!("{x:.0}%"),
        ),
        // An absolute 10 ms is the users' own mark; a data wait that is a sliver of a long
        // step is no limit, as the verdict says of it.
        Item {
            id: "data_time",
            label: "data_time under 10 ms or 2% of step",
            status: match (v.data_ms(), v.data_share()) {
                (Some(ms), share) if ms < 10.0 || share.is_some_and(|s| s < DATA_SHARE) => {
                    Status::Pass
                }
                (Some(_), _) => Status::Fail,
                (None, _) => Status::Unknown,
            },
            value: v.data_ms().map(|ms| match v.data_share() {
                Some(s) => format!("{ms:.1} ms ({:.1}%)", s * 100.0),
                None => format!("{ms:.1} ms"),
            }),
        },
        item(
            "cache_hit_rate",
            "cache hit rate above 75%",
            v.cache_hit_rate(),
            &|x| x > 0.75,
            &|x| format!("{:.0}%", x * 100.0),
        ),
        item(
            "host_cpu",
            "CPU under 85%",
            v.host_mean(|h| h.cpu_pct),
            &|x| x < 85.0,
            &|x| format!("{x:.0}%"),
        ),
        item(
            "host_memory_stable",
            "host memory stable (no upward trend)",
            used_trend,
            &|x| x < STABLE_MIB_PER_MIN,
            &|x| format!("{x:+.0} MiB/min"),
        ),
        item(
            "loss_finite",
            "no NaN/Inf loss",
            nonfinite,
            &|x| x == 0.0,
            &|x| format!("{x:.0} NaN/Inf"),
        ),
        match target {
            Some(t) => item(
                "throughput_target",
                "throughput at its target",
                samples,
                &|x| x >= t,
                &|x| format!("{x:.1} samples/s of {t:.1}"),
            ),
            None => Item {
                id: "throughput_target",
                label: "throughput at its target",
                status: Status::Unknown,
                value: Some("no target set ([diagnose] target-samples-per-s)".into()),
            },
        },
    ]
}
