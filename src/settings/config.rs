//! The config file: strict (unknown keys are errors), kebab-case keys, defaults in one place, and
//! messages that name the file, the key and the problem.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;

use crate::common::error::Error;
use crate::diagnose::{DiagnoseConfig, DiagnoseSection};
use crate::model::ModelConfig;
use crate::parse::user::UserPattern;

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

/// `[[pattern]]`: a user's own line format.
#[derive(Debug, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct PatternSection {
    pub name: String,
    /// A regex whose named groups (`(?P<step>\d+)`) name the fields.
    pub regex: String,
}

/// The checked configuration the program runs with.
#[derive(Debug)]
pub struct Config {
    pub model: ModelConfig,
    pub poll_ms: u64,
    pub patterns: Arc<Vec<UserPattern>>,
    pub diagnose: DiagnoseConfig,
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
            },
            poll_ms: FollowSection::default().poll_ms,
            patterns: Arc::default(),
            diagnose: DiagnoseConfig::default(),
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
            let compiled = UserPattern::compile(&p.name, &p.regex).map_err(|msg| {
                bad(
                    &format!("pattern[{i}].regex"),
                    format!("'{}': {msg}", p.regex),
                )
            })?;
            patterns.push(compiled);
        }
        let diagnose = DiagnoseConfig::check(file.diagnose, &file.rules)
            .map_err(|(key, msg)| bad(&key, msg))?;
        Ok(Config {
            model: ModelConfig {
                window_steps: file.model.window_steps,
            },
            poll_ms: file.follow.poll_ms,
            patterns: Arc::new(patterns),
            diagnose,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_file_gives_the_defaults() {
        let c = Config::parse("", "x.toml").unwrap();
        assert_eq!(c.model, ModelConfig::default());
        assert_eq!(c.poll_ms, 1000);
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
