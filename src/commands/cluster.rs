//! `steptop cluster`: the Prometheus to read, its credentials and the selector, from the
//! arguments, the environment and the config file; then the table once, or the live view.

use std::time::Duration;

use super::cli::{ClusterArgs, OnceFormat};
use super::{load_config, write_stdout};
use crate::cluster::fetch::fetch;
use crate::cluster::queries::Selector;
use crate::cluster::table::{self, Limits};
use crate::common::error::Error;
use crate::input::prometheus::{Auth, Prometheus};
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
    let prom = Prometheus::new(&url, auth(c, &env)?, QUERY_TIMEOUT).map_err(Error::Usage)?;
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
            if fetched.figures.is_ok() {
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
        let table = table::build(&fetched, limits);
        let text = match args.format {
            OnceFormat::Text => cluster::text::render(prom.url(), &table),
            OnceFormat::Json => cluster::json(prom.url(), &table) + "\n",
        };
        return write_stdout(&text).map(|_| ());
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
