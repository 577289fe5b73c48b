//! The diagnosis's settings: a few global windows, and per rule its thresholds and its timing
//! (sustain, dwell, cool-down), each with a documented default. A config file overrides them as
//! `[diagnose]` and `[rules.<id>]` tables; an unknown rule or key is an error that names it.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::params::{Knobs, Windows};
use super::rules::RULES;

/// `[diagnose]` as written.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct DiagnoseSection {
    /// Steps the log-side rules look back over. Default 20.
    pub window_steps: usize,
    /// Seconds the hardware-side rules look back over. Default 60.
    pub window_seconds: f64,
    /// First steps of a run that are not scored (compilation, cache warm-up). Default 10.
    pub warmup_steps: u64,
    /// Steps after an eval, checkpoint or epoch boundary that are not scored. Default 3.
    pub boundary_steps: u64,
    /// The samples/s this run should reach, for the health checklist. Default: none.
    pub target_samples_per_s: Option<f64>,
}

impl Default for DiagnoseSection {
    fn default() -> Self {
        DiagnoseSection {
            window_steps: 20,
            window_seconds: 60.0,
            warmup_steps: 10,
            boundary_steps: 3,
            target_samples_per_s: None,
        }
    }
}

/// The checked knobs the engine runs with.
#[derive(Clone, Debug, PartialEq)]
pub struct DiagnoseConfig {
    pub window_steps: usize,
    pub window_seconds: f64,
    pub warmup_steps: u64,
    pub boundary_steps: u64,
    pub target_samples_per_s: Option<f64>,
    /// Per rule, in `RULES` order: its knobs, defaults overridden by the file.
    pub rules: Vec<Knobs>,
    /// Checks every rule at every step, even one whose needs the model does not hold
    /// (needs.rs): the reference the passing-over is tested against. Not a setting.
    pub every_rule: bool,
}

impl Default for DiagnoseConfig {
    fn default() -> Self {
        DiagnoseConfig::check(DiagnoseSection::default(), &BTreeMap::new())
            .unwrap_or_else(|_| unreachable!("the defaults are valid"))
    }
}

impl DiagnoseConfig {
    /// The windows the rules' signals are read over.
    pub fn windows(&self) -> Windows {
        Windows {
            steps: self.window_steps,
            seconds: self.window_seconds,
        }
    }

    /// Checks the `[diagnose]` section and the `[rules.*]` overrides; the error names the key
    /// (`rules.data_loading_bound.warn`) and what is wrong with it.
    pub fn check(
        section: DiagnoseSection,
        overrides: &BTreeMap<String, BTreeMap<String, f64>>,
    ) -> Result<DiagnoseConfig, (String, String)> {
        if !(2..=10_000).contains(&section.window_steps) {
            return Err((
                "diagnose.window-steps".into(),
                format!("'{}' is out of range: use 2 to 10000", section.window_steps),
            ));
        }
        if !(section.window_seconds >= 1.0 && section.window_seconds <= 3600.0) {
            return Err((
                "diagnose.window-seconds".into(),
                format!(
                    "'{}' is out of range: use 1 to 3600",
                    section.window_seconds
                ),
            ));
        }
        if let Some(t) = section.target_samples_per_s
            && !(t.is_finite() && t > 0.0)
        {
            return Err((
                "diagnose.target-samples-per-s".into(),
                format!("'{t}' must be a positive number"),
            ));
        }
        let mut rules: Vec<Knobs> = RULES
            .iter()
            .map(|r| Knobs::defaults(r.basis, r.params))
            .collect();
        for (id, keys) in overrides {
            let Some(i) = RULES.iter().position(|r| r.id == id) else {
                let known: Vec<&str> = RULES.iter().map(|r| r.id).collect();
                return Err((
                    format!("rules.{id}"),
                    format!("no such rule; the rules are {}", known.join(", ")),
                ));
            };
            for (key, v) in keys {
                let name = format!("rules.{id}.{key}");
                if !v.is_finite() || *v < 0.0 {
                    return Err((name, format!("'{v}' must be a number, 0 or more")));
                }
                if !rules[i].set(key, *v) {
                    let known: Vec<&str> = rules[i].keys().collect();
                    return Err((name, format!("no such key; {id} has {}", known.join(", "))));
                }
            }
        }
        Ok(DiagnoseConfig {
            window_steps: section.window_steps,
            window_seconds: section.window_seconds,
            warmup_steps: section.warmup_steps,
            boundary_steps: section.boundary_steps,
            target_samples_per_s: section.target_samples_per_s,
            rules,
            every_rule: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn overrides_set_a_rules_knob_and_bad_ones_are_named() {
        let mut o = BTreeMap::new();
        o.insert(
            "data_loading_bound".to_string(),
            BTreeMap::from([("warn".to_string(), 0.2), ("sustain".to_string(), 2.0)]),
        );
        let c = DiagnoseConfig::check(DiagnoseSection::default(), &o).expect("valid");
        let i = RULES
            .iter()
            .position(|r| r.id == "data_loading_bound")
            .expect("rule");
        assert_eq!(c.rules[i].get("warn"), 0.2);
        assert_eq!(c.rules[i].get("sustain"), 2.0);
        assert_eq!(c.rules[i].get("crit"), 0.20);

        o.insert("no_such_rule".into(), BTreeMap::new());
        let e = DiagnoseConfig::check(DiagnoseSection::default(), &o).expect_err("bad rule");
        assert_eq!(e.0, "rules.no_such_rule");
        o.remove("no_such_rule");
        o.insert(
            "stage_hotspot".into(),
            BTreeMap::from([("wran".to_string(), 1.0)]),
        );
        let e = DiagnoseConfig::check(DiagnoseSection::default(), &o).expect_err("bad key");
        assert_eq!(e.0, "rules.stage_hotspot.wran");
        assert!(e.1.contains("share"), "{}", e.1);
    }
}
