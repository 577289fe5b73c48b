//! `steptop cluster`: the Prometheus to read, its credentials and the selector, from the
//! arguments, the environment and the config file; then the table once, or the live view.

use std::io::IsTerminal;
use std::time::Duration;

use super::cli::{ClusterArgs, OnceFormat};
use super::{Output, load_config, write_stdout};
use crate::common::error::Error;
use crate::input::prometheus::{self, Auth, Prometheus};
use crate::nodes::fetch::fetch;
use crate::nodes::queries::Selector;
use crate::nodes::rows::{self, Limits};
use crate::settings::config::ClusterSection;
use crate::settings::theme;
use crate::sink::cluster::{self, view};

/// How long one query may take before the refresh reports it failed.
const QUERY_TIMEOUT: Duration = Duration::from_secs(10);
/// `--once` tries again this many times, after these pauses, when Prometheus cannot be read.
const ONCE_RETRIES: [Duration; 2] = [Duration::from_secs(1), Duration::from_secs(3)];

pub fn run(args: &ClusterArgs) -> Result<(), Error> {
    let config = load_config(args.config.as_deref())?;
    let c = &config.cluster;
    let url = args
        .prometheus
        .clone()
        .or_else(|| c.prometheus.clone())
        .ok_or_else(|| {
            Error::Usage(
                "steptop cluster needs --prometheus URL (or [cluster] prometheus in the config \
             file): the Prometheus that scrapes each node's `steptop --headless --metrics-addr`"
                    .into(),
            )
        })?;
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let ca_file = env("STEPTOP_PROMETHEUS_CA")
        .map(std::path::PathBuf::from)
        .or_else(|| c.ca_file.clone());
    let ca = match &ca_file {
        Some(path) => Some(
            std::fs::read(path)
                .map_err(|e| e.to_string())
                .and_then(|pem| prometheus::certificates(&pem))
                .map_err(|e| {
                    Error::Usage(format!(
                        "the CA file '{}' (STEPTOP_PROMETHEUS_CA or [cluster] ca-file): {e}",
                        path.display()
                    ))
                })?,
        ),
        None => None,
    };
    let prom = Prometheus::new(&url, auth(c, &env)?, ca, QUERY_TIMEOUT).map_err(Error::Usage)?;
    let selector = args.selector.as_deref().or(c.selector.as_deref());
    let sel = Selector::new(args.job.as_deref(), selector).map_err(Error::Usage)?;
    let limits = Limits {
        stale_after: args
            .stale_after
            .map_or(c.stale_after_s, |d| d.as_secs_f64()),
        ..Limits::default()
    };
    if args.once {
        let mut fetched = fetch(&prom, &sel);
        for pause in ONCE_RETRIES {
            if !fetched.figures.as_ref().is_err_and(|e| e.transient) {
                break;
            }
            std::thread::sleep(pause);
            fetched = fetch(&prom, &sel);
        }
        if let Err(e) = &fetched.figures {
            return Err(Error::Runtime(format!(
                "cannot read the nodes' figures from Prometheus: {e}"
            )));
        }
        let table = rows::build(&fetched, limits);
        let output = match args.format {
            OnceFormat::Text => Output::Text(cluster::text::render(prom.url(), &table)),
            OnceFormat::Json => Output::Json(cluster::json(prom.url(), &table) + "\n"),
        };
        return write_stdout(output).map(|_| ());
    }
    if !std::io::stdout().is_terminal() {
        return Err(Error::Usage(
            "the cluster view needs a terminal and stdout is not one; add --once for the \
             table as text, or --once --format json for scripts"
                .into(),
        ));
    }
    let no_color = std::env::var("NO_COLOR").ok();
    let first = theme::Theme::choose(args.theme.as_deref(), no_color.as_deref())?;
    view::run(view::Options {
        prom,
        sel,
        limits,
        interval: args.interval,
        themes: crate::sink::ui::theme_cycle(first)?,
    })
}

/// The credentials: a token or a user and password from the environment, else the config
/// file's files. A file that cannot be read is named.
fn auth(c: &ClusterSection, env: &dyn Fn(&str) -> Option<String>) -> Result<Auth, Error> {
    let read = |path: &std::path::Path, key: &str| {
        std::fs::read_to_string(path)
            .map(|s| s.trim().to_string())
            .map_err(|e| {
                Error::Usage(format!(
                    "config [cluster] {key} '{}': cannot read it ({e})",
                    path.display()
                ))
            })
    };
    if let Some(token) = env("STEPTOP_PROMETHEUS_TOKEN") {
        return Ok(Auth::Bearer(token));
    }
    if let (Some(user), Some(password)) = (
        env("STEPTOP_PROMETHEUS_USER"),
        env("STEPTOP_PROMETHEUS_PASSWORD"),
    ) {
        return Ok(Auth::Basic { user, password });
    }
    if let Some(path) = &c.bearer_token_file {
        return Ok(Auth::Bearer(read(path, "bearer-token-file")?));
    }
    match (&c.basic_auth_user, &c.basic_auth_password_file) {
        (Some(user), Some(path)) => Ok(Auth::Basic {
            user: user.clone(),
            password: read(path, "basic-auth-password-file")?,
        }),
        (Some(_), None) | (None, Some(_)) => Err(Error::Usage(
            "config [cluster]: basic auth needs both basic-auth-user and \
             basic-auth-password-file"
                .into(),
        )),
        (None, None) => Ok(Auth::None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_come_from_the_environment_first_then_the_config_files() {
        let dir = tempfile::tempdir().unwrap();
        let token = dir.path().join("token");
        std::fs::write(&token, "from-file\n").unwrap();
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                vars.iter()
                    .find(|(k, _)| *k == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        let config = ClusterSection {
            bearer_token_file: Some(token.clone()),
            ..ClusterSection::default()
        };
        let from_env = env(&[("STEPTOP_PROMETHEUS_TOKEN", "t0k")]);
        assert_eq!(
            auth(&config, &from_env).unwrap(),
            Auth::Bearer("t0k".into())
        );
        let basic = env(&[
            ("STEPTOP_PROMETHEUS_USER", "u"),
            ("STEPTOP_PROMETHEUS_PASSWORD", "p"),
        ]);
        assert_eq!(
            auth(&config, &basic).unwrap(),
            Auth::Basic {
                user: "u".into(),
                password: "p".into()
            }
        );
        let none = env(&[]);
        assert_eq!(
            auth(&config, &none).unwrap(),
            Auth::Bearer("from-file".into())
        );
        assert_eq!(auth(&ClusterSection::default(), &none).unwrap(), Auth::None);
        let half = ClusterSection {
            basic_auth_user: Some("u".into()),
            ..ClusterSection::default()
        };
        assert!(auth(&half, &none).unwrap_err().to_string().contains("both"));
        let missing = ClusterSection {
            bearer_token_file: Some(dir.path().join("nope")),
            ..ClusterSection::default()
        };
        let e = auth(&missing, &none).unwrap_err().to_string();
        assert!(e.contains("bearer-token-file") && e.contains("nope"), "{e}");
    }
}
