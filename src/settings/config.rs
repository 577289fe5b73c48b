//! The config file: strict (unknown keys are errors), kebab-case keys, defaults in one place, and
//! messages that name the file, the key and the problem.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;

use crate::common::error::Error;
use crate::diagnose::{DiagnoseConfig, DiagnoseSection};
use crate::input::metric_files::UserTags;
use crate::input::metric_files::tags::Figure;
use crate::model::ModelConfig;
use crate::parse::user::UserPattern;
use crate::probe::stacks::StackOptions;

/// The config file as written.
#[derive(Debug, Default, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ConfigFile {
    #[serde(default)]
    pub model: ModelSection,
    #[serde(default)]
    pub follow: FollowSection,
    #[serde(default)]
    pub pattern: Vec<PatternSection>,
    #[serde(default)]
    pub diagnose: DiagnoseSection,
    #[serde(default)]
    pub stacks: StacksSection,
    #[serde(default)]
    pub cluster: ClusterSection,
    /// `[tags]`: metric names (TensorBoard tags, CSV and JSON columns) and what each is.
    #[serde(default)]
    pub tags: BTreeMap<String, String>,
    /// `[rules.<id>]`: a rule's thresholds and timing, by key.
    #[serde(default)]
    pub rules: BTreeMap<String, BTreeMap<String, f64>>,
}

/// `[model]`: the recent window.
#[derive(Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct ModelSection {
    /// Steps in the recent window (p50/p95, data share, ETA). Default 100.
    pub window_steps: usize,
}

impl Default for ModelSection {
    fn default() -> Self {
        ModelSection {
            window_steps: ModelConfig::default().window_steps,
        }
    }
}

/// `[follow]`: how files are followed.
#[derive(Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct FollowSection {
    /// Milliseconds between stat polls; the safety net for NFS/Lustre, where inotify sees
    /// nothing written from other machines. Default 1000.
    pub poll_ms: u64,
}

impl Default for FollowSection {
    fn default() -> Self {
        FollowSection { poll_ms: 1000 }
    }
}

/// `[stacks]`: sampling the trainer's Python stacks.
#[derive(Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct StacksSection {
    /// Sample them at all (`--no-stacks` also turns it off). Default true.
    pub enabled: bool,
    /// Milliseconds between samples of each rank's main thread. Default 250.
    pub main_every_ms: u64,
    /// Milliseconds between samples of each DataLoader worker. Default 1000.
    pub worker_every_ms: u64,
    /// The share of one core, in %, that sampling may take: it samples less often rather
    /// than more. Default 0.8.
    pub budget_pct: f64,
}

impl Default for StacksSection {
    fn default() -> Self {
        let o = StackOptions::default();
        StacksSection {
            enabled: true,
            main_every_ms: o.main_every.as_millis() as u64,
            worker_every_ms: o.worker_every.as_millis() as u64,
            budget_pct: o.budget * 100.0,
        }
    }
}

/// `[cluster]`: where `steptop cluster` reads the nodes' figures, and how.
#[derive(Clone, Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case", default)]
pub struct ClusterSection {
    /// The Prometheus to read; `--prometheus` comes first. Unset by default.
    pub prometheus: Option<String>,
    /// Label matchers every query carries; `--selector` comes first.
    pub selector: Option<String>,
    /// A file holding a bearer token; STEPTOP_PROMETHEUS_TOKEN comes first.
    pub bearer_token_file: Option<PathBuf>,
    /// Basic auth: the user, and a file holding the password; STEPTOP_PROMETHEUS_USER and
    /// STEPTOP_PROMETHEUS_PASSWORD come first.
    pub basic_auth_user: Option<String>,
    pub basic_auth_password_file: Option<PathBuf>,
    /// A PEM file of the CA certificates an https Prometheus's certificate chains to (a
    /// cluster's own CA); STEPTOP_PROMETHEUS_CA comes first. Default: the public roots.
    pub ca_file: Option<PathBuf>,
    /// Seconds without a new step after which a node counts as stale (and ten of its step
    /// times at least); `--stale-after` comes first. Default 60.
    pub stale_after_s: f64,
}

impl Default for ClusterSection {
    fn default() -> Self {
        ClusterSection {
            prometheus: None,
            selector: None,
            bearer_token_file: None,
            basic_auth_user: None,
            basic_auth_password_file: None,
            ca_file: None,
            stale_after_s: 60.0,
        }
    }
}

/// `[[pattern]]`: a user's own line format.
#[derive(Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct PatternSection {
    pub name: String,
    /// A regex whose named groups (`(?P<step>\d+)`) name the fields.
    pub regex: String,
}

/// The checked configuration the program runs with.
#[derive(Clone, Debug)]
pub struct Config {
    pub model: ModelConfig,
    pub poll_ms: u64,
    pub patterns: Arc<Vec<UserPattern>>,
    pub diagnose: DiagnoseConfig,
    /// How to sample the trainer's Python stacks; None: not at all.
    pub stacks: Option<StackOptions>,
    pub cluster: ClusterSection,
    /// The user's own metric names, from `[tags]`.
    pub tags: Arc<UserTags>,
}

impl Config {
    /// Reads and checks a config file.
    pub fn load(path: &Path) -> Result<Config, Error> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::Usage(format!("cannot read config file '{}': {e}", path.display()))
        })?;
        Config::parse(&text, &path.display().to_string())
    }

    /// The defaults, as a file with no keys would give them.
    pub fn default_checked() -> Config {
        Config {
            model: ModelConfig {
                window_steps: ModelSection::default().window_steps,
                ..ModelConfig::default()
            },
            poll_ms: FollowSection::default().poll_ms,
            patterns: Arc::default(),
            diagnose: DiagnoseConfig::default(),
            stacks: Some(StackOptions::default()),
            cluster: ClusterSection::default(),
            tags: Arc::default(),
        }
    }

    /// Parses config text; `name` is the file named in errors.
    pub fn parse(text: &str, name: &str) -> Result<Config, Error> {
        let file: ConfigFile = toml::from_str(text).map_err(|e| {
            Error::Usage(format!(
                "config file '{name}': {}",
                e.to_string().trim_end()
            ))
        })?;
        Config::check(file, name)
    }

    fn check(file: ConfigFile, name: &str) -> Result<Config, Error> {
        let bad = |key: &str, msg: String| {
            Error::Usage(format!("config file '{name}': key '{key}': {msg}"))
        };
        if !(2..=100_000).contains(&file.model.window_steps) {
            return Err(bad(
                "model.window-steps",
                format!(
                    "'{}' is out of range: use 2 to 100000",
                    file.model.window_steps
                ),
            ));
        }
        if !(10..=60_000).contains(&file.follow.poll_ms) {
            return Err(bad(
                "follow.poll-ms",
                format!("'{}' is out of range: use 10 to 60000", file.follow.poll_ms),
            ));
        }
        let mut patterns = Vec::new();
        for (i, p) in file.pattern.iter().enumerate() {
            let mut compiled = UserPattern::compile(&p.name, &p.regex).map_err(|msg| {
                bad(
                    &format!("pattern[{i}].regex"),
                    format!("'{}': {msg}", p.regex),
                )
            })?;
            compiled.origin = name.to_string();
            patterns.push(compiled);
        }
        let diagnose = DiagnoseConfig::check(file.diagnose, &file.rules)
            .map_err(|(key, msg)| bad(&key, msg))?;
        let s = &file.stacks;
        for (key, ms) in [
            ("stacks.main-every-ms", s.main_every_ms),
            ("stacks.worker-every-ms", s.worker_every_ms),
        ] {
            if !(10..=600_000).contains(&ms) {
                return Err(bad(
                    key,
                    format!("'{ms}' is out of range: use 10 to 600000"),
                ));
            }
        }
        if !(s.budget_pct > 0.0 && s.budget_pct <= 100.0) {
            return Err(bad(
                "stacks.budget-pct",
                format!(
                    "'{}' is out of range: use more than 0, up to 100",
                    s.budget_pct
                ),
            ));
        }
        let stale = file.cluster.stale_after_s;
        if !(stale > 0.0 && stale <= 86_400.0) {
            return Err(bad(
                "cluster.stale-after-s",
                format!("'{stale}' is out of range: use more than 0, up to 86400"),
            ));
        }
        let mut tags = UserTags::new();
        for (name, what) in &file.tags {
            let figure = Figure::parse(what).ok_or_else(|| {
                let known: Vec<&str> = Figure::NAMES.iter().map(|(n, _)| *n).collect();
                bad(
                    &format!("tags.\"{name}\""),
                    format!("'{what}' is not a figure: use one of {}", known.join(", ")),
                )
            })?;
            tags.push((name.clone(), figure));
        }
        let stacks = s.enabled.then(|| StackOptions {
            main_every: Duration::from_millis(s.main_every_ms),
            worker_every: Duration::from_millis(s.worker_every_ms),
            budget: s.budget_pct / 100.0,
            ..StackOptions::default()
        });
        Ok(Config {
            model: ModelConfig {
                window_steps: file.model.window_steps,
                ..ModelConfig::default()
            },
            poll_ms: file.follow.poll_ms,
            patterns: Arc::new(patterns),
            diagnose,
            stacks,
            cluster: file.cluster,
            tags: Arc::new(tags),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_name_a_figure_or_are_refused_with_the_names_there_are() {
        let c = Config::parse(
            "[tags]\n\"objective/total\" = \"loss\"\nlr = \"ignore\"\n",
            "t.toml",
        )
        .unwrap();
        let mut tags = c.tags.to_vec();
        tags.sort_by(|a, b| a.0.cmp(&b.0));
        assert_eq!(
            tags,
            vec![
                ("lr".to_string(), None),
                ("objective/total".to_string(), Some(Figure::Loss))
            ]
        );
        let e = Config::parse("[tags]\nx = \"speed\"\n", "t.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("tags.\"x\"") && e.contains("step-time-s"), "{e}");
    }

    #[test]
    fn an_empty_file_gives_the_defaults() {
        let c = Config::parse("", "x.toml").unwrap();
        assert_eq!(c.model, ModelConfig::default());
        assert_eq!(c.poll_ms, 1000);
        assert_eq!(
            c.stacks.map(|s| (s.main_every, s.worker_every, s.budget)),
            Some((Duration::from_millis(250), Duration::from_secs(1), 0.008))
        );
        let off = Config::parse("[stacks]\nenabled = false\n", "x.toml").unwrap();
        assert!(off.stacks.is_none());
        let e = Config::parse("[stacks]\nbudget-pct = 0\n", "s.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("stacks.budget-pct"), "{e}");
    }

    #[test]
    fn errors_name_the_file_and_the_key() {
        let e = Config::parse("[model]\nwindow-step = 5\n", "my.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("my.toml") && e.contains("window-step"), "{e}");
        let e = Config::parse(
            "[[pattern]]\nname = \"x\"\nregex = \"(?P<nope>1)\"\n",
            "p.toml",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("pattern[0].regex") && e.contains("'nope'"),
            "{e}"
        );
        let e = Config::parse("[model]\nwindow-steps = 1\n", "p.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("model.window-steps") && e.contains("'1'"), "{e}");
        let e = Config::parse("[rules.data_loading_bound]\nwarn = -1\n", "r.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("r.toml") && e.contains("rules.data_loading_bound.warn"),
            "{e}"
        );
    }

    #[test]
    fn rule_knobs_come_from_the_file() {
        let c = Config::parse(
            "[diagnose]\nwindow-steps = 50\n[rules.stage_hotspot]\nshare = 0.4\nsustain = 2\n",
            "r.toml",
        )
        .unwrap();
        assert_eq!(c.diagnose.window_steps, 50);
        let i = crate::diagnose::rules::RULES
            .iter()
            .position(|r| r.id == "stage_hotspot")
            .unwrap();
        assert_eq!(c.diagnose.rules[i].get("share"), 0.4);
        assert_eq!(c.diagnose.rules[i].get("sustain"), 2.0);
    }
}
