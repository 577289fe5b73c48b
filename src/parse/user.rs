//! The user's own line patterns, from the config file: a regex whose named capture groups are
//! the fields, for in-house formats no built-in parser knows.

use regex::Regex;

use super::kv;
use super::num::Unit;
use super::record::{CacheRecord, Record, StageRecord, StepRecord};
use super::vocabulary::Field;

/// A compiled pattern and what each of its groups fills.
#[derive(Debug)]
pub struct UserPattern {
    pub name: String,
    /// The config file it came from, for the notes that name it.
    pub origin: String,
    regex: Regex,
    groups: Vec<(usize, Target)>,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Target {
    Step(Field),
    StageName,
    StageMs,
    Hits,
    Misses,
}

/// The group names a pattern may use, with the figure each fills.
pub const GROUP_NAMES: &[&str] = &[
    "step",
    "total",
    "epoch",
    "loss",
    "lr",
    "grad_norm",
    "loss_scale",
    "step_time_ms",
    "step_time_s",
    "data_time_ms",
    "data_time_s",
    "samples_per_s",
    "iters_per_s",
    "tokens_per_s",
    "batch_size",
    "mfu_pct",
    "memory_mb",
    "memory_gb",
    "eta",
    "stage",
    "stage_ms",
    "hits",
    "misses",
];

fn target(name: &str) -> Option<Target> {
    Some(Target::Step(match name {
        "step" => Field::Step,
        "total" => Field::Total,
        "epoch" => Field::Epoch,
        "loss" => Field::Loss(4),
        "lr" => Field::Lr,
        "grad_norm" => Field::GradNorm,
        "loss_scale" => Field::LossScale,
        "step_time_ms" => Field::StepTime(Unit::Ms),
        "step_time_s" => Field::StepTime(Unit::S),
        "data_time_ms" => Field::DataTime(Unit::Ms),
        "data_time_s" => Field::DataTime(Unit::S),
        "samples_per_s" => Field::SamplesPerS,
        "iters_per_s" => Field::ItersPerS,
        "tokens_per_s" => Field::TokensPerS,
        "batch_size" => Field::BatchSize,
        "mfu_pct" => Field::Mfu,
        "memory_mb" => Field::Memory(Unit::MiB),
        "memory_gb" => Field::Memory(Unit::GiB),
        "eta" => Field::Eta,
        "stage" => return Some(Target::StageName),
        "stage_ms" => return Some(Target::StageMs),
        "hits" => return Some(Target::Hits),
        "misses" => return Some(Target::Misses),
        _ => return None,
    }))
}

impl UserPattern {
    /// Compiles a pattern; the error says what is wrong in the user's terms.
    pub fn compile(name: &str, pattern: &str) -> Result<UserPattern, String> {
        let regex = Regex::new(pattern).map_err(|e| format!("the regex does not compile: {e}"))?;
        let mut groups = Vec::new();
        for (i, group) in regex.capture_names().enumerate() {
            let Some(group) = group else { continue };
            let t = target(group).ok_or_else(|| {
                format!(
                    "unknown group name '{group}'; use one of: {}",
                    GROUP_NAMES.join(", ")
                )
            })?;
            groups.push((i, t));
        }
        if groups.is_empty() {
            return Err(
                "the regex has no named group, so it cannot fill any field: name groups \
                        like (?P<step>\\d+)"
                    .into(),
            );
        }
        let has = |t: Target| groups.iter().any(|(_, g)| *g == t);
        if has(Target::StageName) != has(Target::StageMs) {
            return Err("a stage needs both groups 'stage' and 'stage_ms'".into());
        }
        Ok(UserPattern {
            name: name.to_string(),
            origin: String::new(),
            regex,
            groups,
        })
    }
}

/// Tries the patterns in order; the first that matches makes the line's records. Returns its
/// place in the list.
pub fn parse(patterns: &[UserPattern], p: &str, out: &mut Vec<Record>) -> Option<usize> {
    for (i, pat) in patterns.iter().enumerate() {
        let Some(caps) = pat.regex.captures(p) else {
            continue;
        };
        let mut rec = StepRecord::default();
        let mut seen = kv::Collected::default();
        let mut cache = CacheRecord::default();
        let (mut stage, mut stage_ms) = (None, None);
        for (i, target) in &pat.groups {
            let Some(m) = caps.get(*i) else { continue };
            let v = m.as_str();
            match target {
                Target::Step(field) => {
                    kv::apply(*field, v, &mut rec, &mut seen);
                }
                Target::StageName => stage = Some(v.trim().to_string()),
                Target::StageMs => stage_ms = super::num::number(v),
                Target::Hits => cache.hits = super::num::integer(v),
                Target::Misses => cache.misses = super::num::integer(v),
            }
        }
        if let (Some(name), Some(ms)) = (stage, stage_ms) {
            out.push(Record::Stage(StageRecord {
                role: super::labels::role(&name),
                name,
                ms,
                share_pct: None,
                depth: 0,
                step: rec.step,
                inside: None,
            }));
        }
        if cache.hits.is_some() || cache.misses.is_some() {
            out.push(Record::Cache(cache));
        }
        if seen.fields > 0 {
            super::push_step(rec, &seen, p, out);
        }
        return Some(i);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pattern_fills_its_fields() {
        let pat = UserPattern::compile(
            "mine",
            r"it (?P<step>\d+) took (?P<step_time_s>[\d.]+)s, L=(?P<loss>\S+)",
        )
        .unwrap();
        let mut out = Vec::new();
        assert_eq!(parse(&[pat], "it 12 took 0.25s, L=1.5", &mut out), Some(0));
        assert!(
            matches!(&out[0], Record::Step(s) if s.step == Some(12) && s.step_time_ms == Some(250.0) && s.loss == Some(1.5))
        );
    }

    #[test]
    fn errors_name_the_problem() {
        assert!(
            UserPattern::compile("x", r"(?P<stepp>\d+)")
                .unwrap_err()
                .contains("'stepp'")
        );
        assert!(
            UserPattern::compile("x", r"(")
                .unwrap_err()
                .contains("does not compile")
        );
        assert!(
            UserPattern::compile("x", r"\d+")
                .unwrap_err()
                .contains("no named group")
        );
    }
}
