//! `--metrics-addr`: the monitor's figures as Prometheus / OpenMetrics text, so that one
//! steptop per node and the user's own Prometheus, Alertmanager and Grafana cover a job of
//! many nodes. `exposition` is pure (a monitor in, text out, through the prometheus-client
//! crate); the loop that owns the monitor publishes it into an `Endpoint`, and `server`
//! hands the latest text to scrapers. Scrapers never touch the monitor.

pub mod server;

use std::borrow::Cow;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::{Registry, Unit};

use crate::diagnose::Severity;
use crate::diagnose::rules::RULES;
use crate::model::breakdown::Over;
use crate::model::job::NodeIdentity;
use crate::monitor::Monitor;

/// The latest exposition, shared between the loop that writes it and the scrapers.
#[derive(Clone, Debug)]
pub struct Endpoint {
    node: Arc<NodeIdentity>,
    text: Arc<Mutex<Arc<String>>>,
}

impl Endpoint {
    /// An endpoint whose series are labelled with the node's host and job (what is known);
    /// it serves the figures of an empty run until the first publish.
    pub fn new(node: NodeIdentity) -> Endpoint {
        let empty = exposition(&Monitor::new(Default::default(), Default::default()), &node);
        Endpoint {
            node: Arc::new(node),
            text: Arc::new(Mutex::new(Arc::new(empty))),
        }
    }

    /// Encodes the monitor as it stands now.
    pub fn publish(&self, mon: &Monitor) {
        let text = Arc::new(exposition(mon, &self.node));
        *self.text.lock().unwrap_or_else(|e| e.into_inner()) = text;
    }

    /// The latest exposition (a reference count, not a copy).
    pub fn current(&self) -> Arc<String> {
        self.text.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// The metrics are encoded again at most this often.
const PUBLISH_EVERY: Duration = Duration::from_secs(1);

/// The owner of the monitor's side of an endpoint: it encodes again only when the monitor
/// changed, at most every `PUBLISH_EVERY`, so a burst of lines costs one encoding.
#[derive(Debug)]
pub struct Publisher {
    endpoint: Endpoint,
    published: Option<Instant>,
    stale: bool,
}

impl Publisher {
    pub fn new(endpoint: Endpoint) -> Publisher {
        Publisher {
            endpoint,
            published: None,
            stale: true,
        }
    }

    /// The monitor changed since the last encoding.
    pub fn changed(&mut self) {
        self.stale = true;
    }

    /// Encodes the monitor if it changed and the last encoding is old enough.
    pub fn tick(&mut self, mon: &Monitor) {
        if self.stale && self.published.is_none_or(|t| t.elapsed() >= PUBLISH_EVERY) {
            self.flush(mon);
        }
    }

    /// Encodes the monitor now (its final state, at the end of a run).
    pub fn flush(&mut self, mon: &Monitor) {
        self.endpoint.publish(mon);
        self.published = Some(Instant::now());
        self.stale = false;
    }
}

type Labels = Vec<(&'static str, String)>;
type FloatGauge = Gauge<f64, AtomicU64>;

/// Builds the registry of one exposition: a figure the model does not have yet is left out
/// rather than shown as zero.
struct Out {
    reg: Registry,
}

impl Out {
    fn gauge(&mut self, name: &str, help: &str, unit: Option<Unit>, v: Option<f64>) {
        if let Some(v) = v.filter(|v| v.is_finite()) {
            let g = FloatGauge::default();
            g.set(v);
            self.register(name, help, unit, g);
        }
    }

    fn family(&mut self, name: &str, help: &str, unit: Option<Unit>, rows: Vec<(Labels, f64)>) {
        let rows: Vec<_> = rows.into_iter().filter(|(_, v)| v.is_finite()).collect();
        if rows.is_empty() {
            return;
        }
        let f = Family::<Labels, FloatGauge>::default();
        for (labels, v) in rows {
            f.get_or_create(&labels).set(v);
        }
        self.register(name, help, unit, f);
    }

    fn register(
        &mut self,
        name: &str,
        help: &str,
        unit: Option<Unit>,
        m: impl prometheus_client::registry::Metric,
    ) {
        match unit {
            Some(u) => self.reg.register_with_unit(name, help, u, m),
            None => self.reg.register(name, help, m),
        }
    }
}

fn ratio() -> Option<Unit> {
    Some(Unit::Other("ratio".into()))
}

/// The exposition of `mon`: run figures, stages, ranks, GPUs, host, trainer, and every rule's
/// alert state, each series labelled with the node's `host` and its job's `job_id`,
/// `job_name`, `node_rank`, `process_rank` and `local_rank`, those that are known.
pub fn exposition(mon: &Monitor, node: &NodeIdentity) -> String {
    let job = node.job(mon.model.hardware.job.as_ref());
    let host = node.host.iter().map(|h| ("host", h.clone()));
    let labels = host
        .chain(job.labels())
        .map(|(k, v)| (Cow::Borrowed(k), Cow::Owned(v)));
    let mut out = Out {
        reg: Registry::with_prefix_and_labels("steptop", labels),
    };
    out.gauge(
        "job_world_size",
        "Processes in the job, as its launcher or Slurm says",
        None,
        job.world_size.map(f64::from),
    );
    run_figures(&mut out, mon);
    hardware(&mut out, mon);
    alerts(&mut out, mon);
    baseline(&mut out, mon);
    let mut text = String::new();
    // Writing into a String cannot fail.
    let _ = encode(&mut text, &out.reg);
    text
}

fn run_figures(out: &mut Out, mon: &Monitor) {
    let m = &mon.model;
    let g = &m.merged;
    let w = m.cfg.window_steps;
    let secs = |ms: f64| ms / 1000.0;
    let step_time = g.step_time_ms.recent(w);
    out.gauge(
        "step",
        "Latest step logged",
        None,
        g.last_step.map(|s| s as f64),
    );
    out.gauge(
        "total_steps",
        "Steps the run will take, as logged",
        None,
        g.total.or(m.facts.total_steps).map(|s| s as f64),
    );
    out.gauge(
        "last_step_timestamp",
        "Log time of the latest step (the log's clock)",
        Some(Unit::Seconds),
        g.last_time,
    );
    out.gauge(
        "last_step_seen_timestamp",
        "When the latest step came, by this machine's clock (steptop's start for a step already in the log then): how fresh the log is",
        Some(Unit::Seconds),
        m.timeline.step_seen(&m.wall),
    );
    // Two gauges, not a `quantile` label: that label belongs to summaries, which these are
    // not (a rolling window, not a scrape-to-scrape aggregation).
    out.gauge(
        "step_time_p50",
        "Median step time over the recent window",
        Some(Unit::Seconds),
        step_time.map(|s| secs(s.p50)),
    );
    out.gauge(
        "step_time_p95",
        "95th percentile step time over the recent window",
        Some(Unit::Seconds),
        step_time.map(|s| secs(s.p95)),
    );
    out.gauge(
        "data_wait",
        "Share of step time spent waiting for data, recent window",
        ratio(),
        m.data_share(Over::Recent(w)),
    );
    let p50 = |x: &crate::model::rank_state::Metric| x.recent(w).map(|s| s.p50);
    out.gauge(
        "samples_per_second",
        "Samples per second, recent median",
        None,
        p50(&g.samples_per_s),
    );
    out.gauge(
        "iterations_per_second",
        "Iterations per second, recent median",
        None,
        p50(&g.iters_per_s),
    );
    out.gauge(
        "tokens_per_second",
        "Tokens per second, recent median",
        None,
        p50(&g.tokens_per_s),
    );
    out.gauge(
        "tokens_per_second_per_gpu",
        "Tokens per second of one GPU, recent median",
        None,
        p50(&g.tokens_per_gpu_s),
    );
    out.gauge(
        "mfu",
        "Model FLOPs utilization the log printed last",
        ratio(),
        g.mfu_pct.map(|p| p / 100.0),
    );
    out.gauge("loss", "Latest logged loss", None, g.loss.recent.last());
    out.gauge("learning_rate", "Latest logged learning rate", None, g.lr);
    out.gauge(
        "eta",
        "Time left: steps left times the recent median step time",
        Some(Unit::Seconds),
        g.eta_s(w).or(g.logged_eta_s),
    );
    out.gauge(
        "cache_hit",
        "Sample cache hit rate, recent",
        ratio(),
        m.cache.recent_hit_rate.or(m.cache.hit_rate()),
    );
    out.family(
        "stage_time",
        "Forward stage time, recent mean",
        Some(Unit::Seconds),
        m.stages
            .by_name
            .iter()
            .filter_map(|s| {
                let v = s.mean(Over::Recent(w))?;
                Some((vec![("stage", s.name.clone())], secs(v)))
            })
            .collect(),
    );
    let b = m.step_breakdown(Over::Recent(w));
    out.gauge(
        "forward_time",
        "Forward time as the timing log gives it, recent mean",
        Some(Unit::Seconds),
        b.forward_ms.map(secs),
    );
    out.gauge(
        "unlogged_time",
        "Step time no log line accounts for (backward, optimizer), recent mean",
        Some(Unit::Seconds),
        b.unlogged_ms.map(secs),
    );
    out.family(
        "rank_step",
        "Latest step logged by each rank",
        None,
        m.ranks
            .iter()
            .filter_map(|(r, s)| Some((vec![("rank", r.to_string())], s.last_step? as f64)))
            .collect(),
    );
    out.family(
        "rank_step_time",
        "Each rank's recent median step time",
        Some(Unit::Seconds),
        m.ranks
            .iter()
            .filter_map(|(r, s)| {
                let v = s.step_time_ms.recent(w)?.p50;
                Some((vec![("rank", r.to_string())], secs(v)))
            })
            .collect(),
    );
}

fn hardware(out: &mut Out, mon: &Monitor) {
    let Some(s) = mon.model.hardware.latest() else {
        return;
    };
    let gpu = |f: &dyn Fn(&crate::model::sample::GpuReading) -> Option<f64>| -> Vec<(Labels, f64)> {
        s.gpus
            .iter()
            .filter_map(|g| Some((vec![("gpu", g.id())], f(g)?)))
            .collect()
    };
    out.family(
        "gpu_info",
        "One series per GPU read, with its name",
        None,
        s.gpus
            .iter()
            .map(|g| (vec![("gpu", g.id()), ("name", g.name.clone())], 1.0))
            .collect(),
    );
    out.family(
        "gpu_utilization",
        "GPU utilization as NVML reports it (time a kernel ran)",
        ratio(),
        gpu(&|g| g.util_pct.map(|v| f64::from(v) / 100.0)),
    );
    out.family(
        "gpu_sm_active",
        "Share of SMs busy, from GPM",
        ratio(),
        gpu(&|g| g.sm_active_pct.map(|v| v / 100.0)),
    );
    out.family(
        "gpu_power",
        "GPU power draw",
        Some(Unit::Other("watts".into())),
        gpu(&|g| g.power_w),
    );
    out.family(
        "gpu_power_limit",
        "GPU power limit",
        Some(Unit::Other("watts".into())),
        gpu(&|g| g.power_limit_w),
    );
    out.family(
        "gpu_memory_used",
        "GPU memory used",
        Some(Unit::Bytes),
        gpu(&|g| g.mem_used_bytes.map(|v| v as f64)),
    );
    out.family(
        "gpu_memory_total",
        "GPU memory in all",
        Some(Unit::Bytes),
        gpu(&|g| g.mem_total_bytes.map(|v| v as f64)),
    );
    out.family(
        "gpu_temperature",
        "GPU temperature",
        Some(Unit::Celsius),
        gpu(&|g| g.temp_c.map(f64::from)),
    );
    out.family(
        "gpu_sm_clock",
        "GPU SM clock",
        Some(Unit::Other("hertz".into())),
        gpu(&|g| g.sm_clock_mhz.map(|v| f64::from(v) * 1e6)),
    );
    out.family(
        "gpu_throttled",
        "1 while the GPU reports a throttle reason other than idle",
        None,
        gpu(&|g| {
            g.throttle
                .as_ref()
                .map(|t| f64::from(u8::from(!t.is_empty())))
        }),
    );
    if let Some(h) = &s.host {
        out.gauge(
            "host_cpu",
            "Host CPU busy, all cores",
            ratio(),
            h.cpu_pct.map(|v| v / 100.0),
        );
        out.gauge(
            "host_iowait",
            "Host CPU time waiting for I/O",
            ratio(),
            h.iowait_pct.map(|v| v / 100.0),
        );
        out.gauge(
            "host_memory_used",
            "Host memory used",
            Some(Unit::Bytes),
            Some(h.mem_used_bytes as f64),
        );
        out.gauge(
            "host_memory_total",
            "Host memory in all",
            Some(Unit::Bytes),
            Some(h.mem_total_bytes as f64),
        );
        out.gauge(
            "host_swap_used",
            "Host swap used",
            Some(Unit::Bytes),
            Some(h.swap_used_bytes as f64),
        );
    }
    if let Some(t) = &s.trainer {
        out.gauge(
            "trainer_cpu_cores",
            "CPU the trainer's main process uses, in cores",
            None,
            t.cpu_pct.map(|v| v / 100.0),
        );
        out.gauge(
            "trainer_private_memory",
            "The trainer's private memory",
            Some(Unit::Bytes),
            t.private_bytes.map(|v| v as f64),
        );
        out.gauge(
            "dataloader_workers",
            "DataLoader worker processes of the trainer",
            None,
            Some(t.workers.len() as f64),
        );
        out.gauge(
            "dataloader_workers_private_memory",
            "Private memory of the DataLoader workers together",
            Some(Unit::Bytes),
            t.workers_private_bytes.map(|v| v as f64),
        );
    }
}

fn alerts(out: &mut Out, mon: &Monitor) {
    let d = &mon.diagnosis;
    let active: Vec<_> = d.active().map(|a| (a.rule, a.severity)).collect();
    let mut rows = Vec::new();
    for rule in RULES {
        for sev in [Severity::Info, Severity::Warn, Severity::Crit] {
            let on = active.contains(&(rule.id, sev));
            rows.push((
                vec![
                    ("rule", rule.id.to_string()),
                    ("severity", sev.name().to_string()),
                ],
                f64::from(u8::from(on)),
            ));
        }
    }
    out.family(
        "alert_active",
        "1 while the rule's alert is active at this severity",
        None,
        rows,
    );
    // The words of each active alert, for `steptop cluster`: they change when the alert is
    // raised, escalated or cleared, not at every evaluation, so the series churn little.
    let verdict = d.verdict().map(|v| v.rule);
    let lines = |l: &[String]| capped(l.join("\n"));
    out.family(
        "alert_info",
        "One series per active alert, its words in labels (lists one item a line)",
        None,
        d.active()
            .map(|a| {
                let labels = vec![
                    ("rule", a.rule.to_string()),
                    ("severity", a.severity.name().to_string()),
                    ("verdict", (verdict == Some(a.rule)).to_string()),
                    ("title", capped(a.title.clone())),
                    ("evidence", lines(&a.evidence)),
                    ("actions", lines(&a.actions)),
                ];
                (labels, 1.0)
            })
            .collect(),
    );
    // A gauge that only grows rather than a counter: OpenMetrics names a counter's family
    // without `_total` and its samples with it, which Prometheus-format checkers
    // (`promtool check metrics`) read as a sample without help.
    let raised = [Severity::Info, Severity::Warn, Severity::Crit]
        .into_iter()
        .map(|sev| {
            // Counted at their raise, so the count never goes down when one escalates.
            let n = d.raised_at(sev);
            (vec![("severity", sev.name().to_string())], n as f64)
        })
        .collect();
    out.family(
        "alerts_raised",
        "Alerts raised so far, by the severity they were raised at",
        None,
        raised,
    );
}

/// The longest label value the words of an alert take: a scrape config's
/// `label_value_length_limit` fails the whole scrape past it, so the words stay well under
/// the limits clusters set.
const MAX_LABEL: usize = 1000;

/// `text`, cut at a character boundary to at most `MAX_LABEL` bytes, the cut marked.
fn capped(mut text: String) -> String {
    if text.len() > MAX_LABEL {
        let mut end = MAX_LABEL - '…'.len_utf8();
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

/// With `--baseline`: each figure now over the baseline's.
fn baseline(out: &mut Out, mon: &Monitor) {
    let Some(b) = &mon.baseline else {
        return;
    };
    let m = &mon.model;
    let g = &m.merged;
    let w = m.cfg.window_steps;
    let now = |metric: &crate::model::rank_state::Metric| metric.recent(w).map(|s| s.p50);
    let rows: Vec<(Labels, f64)> = [
        ("samples_per_s", now(&g.samples_per_s), b.samples_per_s),
        ("iters_per_s", now(&g.iters_per_s), b.iters_per_s),
        ("tokens_per_s", now(&g.tokens_per_s), b.tokens_per_s),
        ("step_time_ms", now(&g.step_time_ms), b.step_time_ms),
        ("data_share", m.data_share(Over::Recent(w)), b.data_share),
        ("forward_ms", m.forward_ms(Over::Recent(w)), b.forward_ms),
    ]
    .into_iter()
    .filter_map(|(figure, now, then)| {
        Some((
            vec![("figure", figure.to_string())],
            crate::model::baseline::ratio(now, then)?,
        ))
    })
    .collect();
    out.family(
        "baseline_ratio",
        "A figure of this run over the same figure of the --baseline run",
        None,
        rows,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_alerts_words_are_capped_at_a_character_boundary() {
        assert_eq!(capped("short".into()), "short");
        let long = "é".repeat(800);
        let c = capped(long);
        assert!(c.len() <= MAX_LABEL && c.ends_with('…'), "{}", c.len());
        assert!(c.starts_with("éé"));
    }
}
