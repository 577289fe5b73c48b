//! Where steptop looks for the user's own files when the command line names none: the config
//! file and themes, in the places terminal tools use (the XDG base directories). The lookup
//! is a pure function of the environment's values; `from_env` reads them, at the edge.

use std::ffi::OsString;
use std::path::PathBuf;

use crate::common::error::Error;
use crate::settings::config::Config;

/// The environment values the lookup depends on.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Env {
    pub steptop_config: Option<OsString>,
    pub xdg_config_home: Option<OsString>,
    pub home: Option<OsString>,
}

impl Env {
    pub fn from_env() -> Env {
        Env {
            steptop_config: std::env::var_os("STEPTOP_CONFIG"),
            xdg_config_home: std::env::var_os("XDG_CONFIG_HOME"),
            home: std::env::var_os("HOME"),
        }
    }

    /// steptop's directory: `$XDG_CONFIG_HOME/steptop`, else `~/.config/steptop`. An empty or
    /// relative XDG_CONFIG_HOME is ignored, as the XDG spec says.
    pub fn dir(&self) -> Option<PathBuf> {
        self.dir_named().map(|(dir, _)| dir)
    }

    /// `dir`, and the variable it comes from.
    fn dir_named(&self) -> Option<(PathBuf, &'static str)> {
        let set = |v: &Option<OsString>| v.clone().filter(|v| !v.is_empty()).map(PathBuf::from);
        match set(&self.xdg_config_home).filter(|p| p.is_absolute()) {
            Some(xdg) => Some((xdg.join("steptop"), "$XDG_CONFIG_HOME")),
            None => set(&self.home).map(|h| (h.join(".config").join("steptop"), "$HOME")),
        }
    }

    /// The config file to read without `--config`, and why that one.
    pub fn config_file(&self) -> Option<Lookup> {
        if let Some(p) = self.steptop_config.clone().filter(|v| !v.is_empty()) {
            return Some(Lookup {
                path: PathBuf::from(p),
                named_by: "$STEPTOP_CONFIG",
                required: true,
            });
        }
        let (dir, named_by) = self.dir_named()?;
        Some(Lookup {
            path: dir.join("config.toml"),
            named_by,
            required: false,
        })
    }

    /// Where a theme named `name` is looked for after the built-in ones.
    pub fn theme_file(&self, name: &str) -> Option<PathBuf> {
        Some(self.dir()?.join("themes").join(format!("{name}.toml")))
    }
}

/// A config file steptop looks for.
#[derive(Clone, Debug, PartialEq)]
pub struct Lookup {
    pub path: PathBuf,
    /// The variable the path comes from.
    pub named_by: &'static str,
    /// Named explicitly ($STEPTOP_CONFIG): it must exist. The usual place may be empty.
    pub required: bool,
}

/// The config: `--config FILE`, else the file the environment names, else the defaults.
pub fn load_config(given: Option<&std::path::Path>, env: &Env) -> Result<Config, Error> {
    if let Some(path) = given {
        return Config::load(path);
    }
    match env.config_file() {
        Some(l) if l.required || l.path.exists() => Config::load(&l.path).map_err(|e| {
            let why = if l.required {
                "$STEPTOP_CONFIG names this file: fix it, or unset the variable".to_string()
            } else {
                format!(
                    "read as steptop's config file from {}: fix it, or pass --config FILE",
                    l.named_by
                )
            };
            Error::Usage(format!("{e} ({why})"))
        }),
        _ => Ok(Config::default_checked()),
    }
}

/// What `steptop config --path` prints: the file's path on stdout (for `$EDITOR "$(steptop
/// config --path)"`), and on stderr where it came from and whether it is there.
pub fn describe_lookup(env: &Env) -> (String, String) {
    match env.config_file() {
        Some(l) => {
            let state = if l.path.exists() {
                "it is read when no --config is given"
            } else if l.required {
                "it does not exist: steptop refuses to start until it does or the variable is unset"
            } else {
                "it does not exist: the defaults are used (`steptop config --default` prints them)"
            };
            let themes = env
                .theme_file("NAME")
                .map(|t| format!("\nthemes: --theme NAME also looks for {}", t.display()))
                .unwrap_or_default();
            (
                format!("{}\n", l.path.display()),
                format!("from {}; {state}{themes}\n", l.named_by),
            )
        }
        None => (
            String::new(),
            "no config file is looked for: neither STEPTOP_CONFIG, XDG_CONFIG_HOME nor HOME is set\n"
                .to_string(),
        ),
    }
}

/// The documented default config, every key at its default (a test keeps them equal).
pub const DEFAULT_CONFIG: &str = include_str!("../../fixtures/configs/valid/defaults.toml");

#[cfg(test)]
mod tests {
    use super::*;

    fn env(sc: Option<&str>, xdg: Option<&str>, home: Option<&str>) -> Env {
        Env {
            steptop_config: sc.map(OsString::from),
            xdg_config_home: xdg.map(OsString::from),
            home: home.map(OsString::from),
        }
    }

    #[test]
    fn the_config_file_is_looked_for_in_order() {
        let l = env(Some("/etc/st.toml"), Some("/x"), Some("/h")).config_file();
        assert_eq!(
            l,
            Some(Lookup {
                path: "/etc/st.toml".into(),
                named_by: "$STEPTOP_CONFIG",
                required: true
            })
        );
        let l = env(None, Some("/x"), Some("/h")).config_file().unwrap();
        assert_eq!(
            (l.path, l.named_by),
            ("/x/steptop/config.toml".into(), "$XDG_CONFIG_HOME")
        );
        // Empty values count as unset; a relative XDG_CONFIG_HOME is ignored.
        for xdg in [None, Some(""), Some("rel/dir")] {
            let l = env(Some(""), xdg, Some("/h")).config_file().unwrap();
            assert_eq!(
                (l.path, l.named_by, l.required),
                ("/h/.config/steptop/config.toml".into(), "$HOME", false)
            );
        }
        assert_eq!(env(None, None, None).config_file(), None);
        assert_eq!(
            env(None, None, Some("/h")).theme_file("dusk"),
            Some("/h/.config/steptop/themes/dusk.toml".into())
        );
    }

    #[test]
    fn a_missing_usual_file_gives_the_defaults_a_missing_named_one_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let home = dir.path().to_str().expect("utf-8");
        let none = env(None, None, Some(home));
        assert!(load_config(None, &none).is_ok());
        let named = env(Some(&format!("{home}/nope.toml")), None, Some(home));
        let e = load_config(None, &named).unwrap_err().to_string();
        assert!(
            e.contains("nope.toml") && e.contains("$STEPTOP_CONFIG"),
            "{e}"
        );
        // The usual place, when it holds a file, is read and checked like --config.
        let cfg_dir = dir.path().join(".config/steptop");
        std::fs::create_dir_all(&cfg_dir).expect("mkdir");
        std::fs::write(cfg_dir.join("config.toml"), "[model]\nwindow-steps = 7\n").expect("write");
        assert_eq!(
            load_config(None, &none).expect("config").model.window_steps,
            7
        );
        std::fs::write(cfg_dir.join("config.toml"), "[model]\nwindow-stepz = 7\n").expect("write");
        let e = load_config(None, &none).unwrap_err().to_string();
        assert!(e.contains("window-stepz") && e.contains("$HOME"), "{e}");
    }

    #[test]
    fn the_default_config_is_the_defaults() {
        let parsed = Config::parse(DEFAULT_CONFIG, "default").expect("parses");
        let defaults = Config::default_checked();
        assert_eq!(
            (
                parsed.model,
                parsed.poll_ms,
                parsed.diagnose,
                parsed.stacks,
                parsed.cluster
            ),
            (
                defaults.model,
                defaults.poll_ms,
                defaults.diagnose,
                defaults.stacks,
                defaults.cluster
            )
        );
    }
}
