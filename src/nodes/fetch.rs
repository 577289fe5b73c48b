//! One refresh's I/O: the figures first (they name the hosts whose GPUs to ask dcgm-exporter
//! about, and when they cannot be read nothing else is asked), then the rest at once, each on
//! its own thread. A query that fails leaves its part of the table empty and says why; the
//! others still count.

use std::time::Instant;

use super::queries::{self, Selector};
use crate::input::prometheus::{Answer, Failure, Prometheus};
use crate::monitor::msg::unix_now;

/// What one refresh read.
#[derive(Clone, Debug)]
pub struct Fetched {
    pub figures: Result<Answer, Failure>,
    pub scraped: Result<Answer, Failure>,
    pub up: Result<Answer, Failure>,
    pub history: Result<Answer, Failure>,
    /// None when no host was known to ask about.
    pub dcgm: Option<Result<Answer, Failure>>,
    /// Prometheus's own time of the instant queries (this machine's clock when none
    /// answered): what the figures' ages are measured from.
    pub now: f64,
    pub queries: u32,
    pub seconds: f64,
}

pub fn fetch(prom: &Prometheus, sel: &Selector) -> Fetched {
    let started = Instant::now();
    let end = unix_now();
    let figures = prom.instant(&queries::figures(sel));
    if figures.is_err() {
        // Prometheus is out of reach or refuses: the other queries would only wait as long.
        let none = || Ok(Answer::default());
        return Fetched {
            figures,
            scraped: none(),
            up: none(),
            history: none(),
            dcgm: None,
            now: end,
            queries: 1,
            seconds: started.elapsed().as_secs_f64(),
        };
    }
    let hosts = figures.as_ref().map(hosts).unwrap_or_default();
    let dcgm_query = queries::dcgm(&hosts.iter().map(String::as_str).collect::<Vec<_>>());
    let (scraped, up, history, dcgm) = std::thread::scope(|s| {
        let scraped = s.spawn(|| prom.instant(&queries::scraped(sel)));
        let up = s.spawn(|| prom.instant(&queries::up()));
        let history = s.spawn(|| {
            let span = queries::HISTORY_SECONDS;
            let step = span / queries::HISTORY_POINTS;
            prom.range(&queries::history(sel), end - span, end, step)
        });
        let dcgm = dcgm_query.as_deref().map(|q| prom.instant(q));
        let join = |h: std::thread::ScopedJoinHandle<'_, Result<Answer, Failure>>| {
            h.join().unwrap_or_else(|_| {
                Err(Failure {
                    message: "the query's thread failed".into(),
                    transient: true,
                })
            })
        };
        (join(scraped), join(up), join(history), dcgm)
    });
    let now = [&figures, &scraped, &up]
        .iter()
        .find_map(|a| {
            a.as_ref()
                .ok()?
                .series
                .first()?
                .points
                .last()
                .map(|p| p.time)
        })
        .unwrap_or(end);
    Fetched {
        queries: 4 + u32::from(dcgm.is_some()),
        figures,
        scraped,
        up,
        history,
        dcgm,
        now,
        seconds: started.elapsed().as_secs_f64(),
    }
}

/// The hosts the figures name: their `host` label, else their target's host.
fn hosts(a: &Answer) -> Vec<String> {
    let mut out: Vec<String> = a
        .series
        .iter()
        .filter_map(|s| {
            s.label("host")
                .or_else(|| s.label("instance").map(instance_host))
                .map(str::to_string)
        })
        .collect();
    out.sort();
    out.dedup();
    out
}

/// `node3:9464` -> `node3`, `[::1]:9464` -> `::1`.
pub fn instance_host(instance: &str) -> &str {
    if let Some(rest) = instance.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    instance.rsplit_once(':').map_or(instance, |(h, _)| h)
}
