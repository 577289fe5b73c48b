//! The rules, one table: ids are stable (JSON, config and docs use them). Each family of rules
//! has its file; a rule is its id, what its sustain counts, its knobs with defaults, the rules
//! whose alert hides it (a specific cause hides the generic symptom), and a pure check.
//! Specific rules come before the generic ones they hide, so they are raised first.

mod code;
mod events;
mod gpu;
mod gpu_memory;
mod input_pipeline;
mod memory;
mod pace;
mod stall;
mod step;

use super::needs::Needs;
use super::params::{Basis, Knobs, Param};
use super::signals::View;
use super::{Finding, Severity};
use crate::common::units::Fixed;

pub struct Rule {
    pub id: &'static str,
    pub basis: Basis,
    /// What it detects, in one line: docs/diagnosis.md's rule table says it (a test checks).
    pub summary: &'static str,
    pub params: &'static [Param],
    /// A detail of where the time goes (a hot stage, unlogged time, a config hint) rather
    /// than what limits the run: the verdict only while no limiting rule is active.
    pub detail: bool,
    pub hidden_by: &'static [&'static str],
    /// What the check cannot raise an alert without (any one of these): see needs.rs.
    pub needs: Needs,
    pub check: fn(&View, &Knobs) -> Option<Finding>,
}

pub static RULES: &[Rule] = &[
    events::CRASH_EVENT,
    events::NONFINITE_LOSS,
    events::LOSS_SCALE_UNSTABLE,
    stall::STALLED,
    input_pipeline::LOADER_WORKERS_STARVED,
    input_pipeline::INPUT_CPU_SATURATED,
    input_pipeline::DATA_LOADING_BOUND,
    input_pipeline::H2D_COPY_BOUND,
    input_pipeline::CACHE_INEFFECTIVE,
    code::PYTHON_HOTSPOT,
    gpu::GPU_STARVED,
    gpu::GPU_THROTTLING,
    pace::STRAGGLER,
    gpu::LOW_GPU_UTIL,
    gpu::COMPUTE_BOUND,
    gpu_memory::GPU_MEMORY_PRESSURE,
    gpu_memory::GPU_MEMORY_CREEP,
    gpu_memory::GPU_MEMORY_UNDERUSED,
    memory::HOST_MEMORY_PRESSURE,
    memory::WORKER_MEMORY_BLOWUP,
    pace::EVAL_OVERHEAD,
    step::UNLOGGED_TIME,
    step::STAGE_HOTSPOT,
    pace::STEP_SPIKES,
    step::BATCH_SCALING,
    step::THROUGHPUT_DRIFT,
    events::CONFIG_HINT,
    events::CONFIG_MISMATCH,
];

const fn p(key: &'static str, default: f64, doc: &'static str) -> Param {
    Param { key, default, doc }
}

/// Where `x` stands against thresholds where higher is worse: Some(Some(severity)) at or
/// above `warn` (`crit`), Some(None) between `exit` and `warn` (an active alert stays), None
/// under `exit`.
fn grade(x: f64, warn: f64, crit: f64, exit: f64) -> Option<Option<Severity>> {
    if x >= crit {
        Some(Some(Severity::Crit))
    } else if x >= warn {
        Some(Some(Severity::Warn))
    } else if x >= exit {
        Some(None)
    } else {
        None
    }
}

fn pct(share: f64) -> String {
    let mut out = String::with_capacity(8);
    push_pct(&mut out, share);
    out
}

/// `pct` at the end of `out`.
fn push_pct(out: &mut String, share: f64) {
    Fixed(share * 100.0, 0).push_to(out);
    out.push('%');
}

fn gib(bytes: f64) -> String {
    format!("{} GiB", Fixed(bytes / (1u64 << 30) as f64, 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_snake_case_and_hiders_exist() {
        // The engine keeps the active rules and each rule's hiders as bits of a u64.
        assert!(
            RULES.len() <= 64,
            "{} rules: the engine's masks hold 64",
            RULES.len()
        );
        for (i, r) in RULES.iter().enumerate() {
            assert!(
                r.id.starts_with(|c: char| c.is_ascii_lowercase())
                    && r.id
                        .chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                "{}",
                r.id
            );
            assert!(RULES[..i].iter().all(|o| o.id != r.id), "{} twice", r.id);
            for h in r.hidden_by {
                assert!(RULES.iter().any(|o| o.id == *h), "{} hidden by {h}", r.id);
            }
            for q in r.params {
                assert!(!q.doc.is_empty() && q.default >= 0.0, "{}.{}", r.id, q.key);
            }
        }
    }

    #[test]
    fn every_knob_a_rule_reads_is_declared() {
        // Each check's code names its knobs as k.get("key"): they must be in its params
        // (or the common timing knobs), else get() gives NaN and the rule never fires.
        let sources = [
            include_str!("code.rs"),
            include_str!("events.rs"),
            include_str!("gpu.rs"),
            include_str!("gpu_memory.rs"),
            include_str!("input_pipeline.rs"),
            include_str!("memory.rs"),
            include_str!("pace.rs"),
            include_str!("stall.rs"),
            include_str!("step.rs"),
        ];
        for src in sources {
            for piece in src.split("k.get(\"").skip(1) {
                let key = piece.split('"').next().unwrap_or_default();
                assert!(
                    RULES.iter().any(|r| r.params.iter().any(|q| q.key == key)),
                    "knob {key} is read but no rule declares it"
                );
            }
        }
    }

    #[test]
    fn the_readme_documents_every_rule_and_knob() {
        let readme = include_str!("../../../docs/diagnosis.md");
        for r in RULES {
            let row = readme
                .lines()
                .find(|l| l.starts_with(&format!("| `{}` |", r.id)))
                .unwrap_or_else(|| panic!("docs/diagnosis.md has no row for {}", r.id));
            assert!(
                row.contains(r.summary),
                "docs/diagnosis.md row of {} lacks its summary",
                r.id
            );
            for q in r.params {
                assert!(
                    row.contains(&format!("`{}` {:?}", q.key, q.default)),
                    "docs/diagnosis.md row of {} lacks `{}` {:?}",
                    r.id,
                    q.key,
                    q.default
                );
            }
        }
    }

    #[test]
    fn grades() {
        assert_eq!(grade(0.25, 0.1, 0.2, 0.07), Some(Some(Severity::Crit)));
        assert_eq!(grade(0.12, 0.1, 0.2, 0.07), Some(Some(Severity::Warn)));
        assert_eq!(grade(0.08, 0.1, 0.2, 0.07), Some(None));
        assert_eq!(grade(0.05, 0.1, 0.2, 0.07), None);
    }
}
