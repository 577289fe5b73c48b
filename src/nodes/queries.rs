//! The PromQL of one refresh: a few aggregate queries whatever the number of nodes, each
//! narrowed by the user's selector. Pure.

/// The steptop figures the table reads, in one instant query (by metric name).
pub const FIGURES: [&str; 18] = [
    "step",
    "total_steps",
    "last_step_seen_timestamp_seconds",
    "step_time_p50_seconds",
    "step_time_p95_seconds",
    "data_wait_ratio",
    "samples_per_second",
    "tokens_per_second",
    "iterations_per_second",
    "job_world_size",
    "rank_step",
    "rank_step_time_seconds",
    "alert_info",
    "gpu_utilization_ratio",
    "gpu_power_watts",
    "gpu_power_limit_watts",
    "gpu_memory_used_bytes",
    "gpu_memory_total_bytes",
];

/// dcgm-exporter's fields the table reads, when the cluster runs it.
pub const DCGM: [&str; 6] = [
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_POWER_MGMT_LIMIT",
    "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_DEV_FB_FREE",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
];

/// dcgm-exporter names the node `Hostname`; releases since mid-2026 name it `hostname`.
pub const DCGM_HOST_LABELS: [&str; 2] = ["Hostname", "hostname"];

/// How far back the history (sparklines, trends, nodes gone quiet) reaches, and its points.
pub const HISTORY_SECONDS: f64 = 15.0 * 60.0;
pub const HISTORY_POINTS: f64 = 60.0;

/// The label matchers every steptop query carries: `--job` and `--selector` together,
/// without braces (`job_id="4180321",cluster="a"`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Selector(String);

impl Selector {
    /// From `--job ID` and `--selector '{...}'`; a selector that is not one set of braces
    /// is refused with what it should look like.
    pub fn new(job: Option<&str>, selector: Option<&str>) -> Result<Selector, String> {
        let mut parts = Vec::new();
        if let Some(job) = job {
            parts.push(format!("job_id=\"{}\"", string(job)));
        }
        if let Some(s) = selector.map(str::trim).filter(|s| !s.is_empty()) {
            let inner = s
                .strip_prefix('{')
                .and_then(|s| s.strip_suffix('}'))
                .ok_or_else(|| {
                    format!(
                        "--selector {s}: give label matchers in braces, as PromQL writes them: \
                         '{{cluster=\"a\",job_name=~\"llama.*\"}}'"
                    )
                })?;
            let inner = inner.trim().trim_end_matches(',');
            if !inner.is_empty() {
                parts.push(inner.to_string());
            }
        }
        Ok(Selector(parts.join(",")))
    }

    /// The matchers after a metric's own: `,job_id="7"`, or nothing.
    fn and(&self) -> String {
        if self.0.is_empty() {
            String::new()
        } else {
            format!(",{}", self.0)
        }
    }

    /// One metric's selector: `steptop_step{job_id="7"}`.
    fn metric(&self, name: &str) -> String {
        format!("{name}{{{}}}", self.0)
    }
}

/// The node figures, every family in one answer.
pub fn figures(sel: &Selector) -> String {
    format!(
        "{{__name__=~\"steptop_({})\"{}}}",
        FIGURES.join("|"),
        sel.and()
    )
}

/// When each node was last scraped: its step sample's own timestamp.
pub fn scraped(sel: &Selector) -> String {
    format!("timestamp({})", sel.metric("steptop_step"))
}

/// Whether each target's last scrape worked. Not narrowed: `up` carries the target's labels,
/// not the job's; the table joins it by `instance`.
pub fn up() -> String {
    "up".into()
}

/// Steps and step times over the history: sparklines, trends, and the nodes that stopped
/// answering (their series end).
pub fn history(sel: &Selector) -> String {
    format!(
        "{{__name__=~\"steptop_(step|step_time_p50_seconds)\"{}}}",
        sel.and()
    )
}

/// dcgm-exporter's GPU figures of these hosts, under either name of its host label.
pub fn dcgm(hosts: &[&str]) -> Option<String> {
    if hosts.is_empty() {
        return None;
    }
    let names = DCGM.join("|");
    let hosts = hosts
        .iter()
        .map(|h| string(&regex_literal(h)))
        .collect::<Vec<_>>()
        .join("|");
    let one = |label: &str| format!("{{__name__=~\"{names}\",{label}=~\"{hosts}\"}}");
    Some(
        DCGM_HOST_LABELS
            .iter()
            .map(|l| one(l))
            .collect::<Vec<_>>()
            .join(" or "),
    )
}

/// Text inside a PromQL double-quoted string.
fn string(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

/// A host name matched as itself by Prometheus's regular expressions (RE2).
fn regex_literal(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_selector_narrows_every_steptop_query() {
        let sel = Selector::new(Some("41\"80"), Some(" {cluster=\"a\", } ")).unwrap();
        assert_eq!(
            scraped(&sel),
            r#"timestamp(steptop_step{job_id="41\"80",cluster="a"})"#
        );
        assert!(figures(&sel).ends_with(r#")",job_id="41\"80",cluster="a"}"#));
        assert!(figures(&sel).starts_with(r#"{__name__=~"steptop_(step|total_steps|"#));
        let none = Selector::new(None, None).unwrap();
        assert_eq!(scraped(&none), "timestamp(steptop_step{})");
        assert_eq!(
            history(&none),
            r#"{__name__=~"steptop_(step|step_time_p50_seconds)"}"#
        );
        let bad = Selector::new(None, Some("cluster=\"a\"")).unwrap_err();
        assert!(bad.contains("in braces"), "{bad}");
    }

    #[test]
    fn dcgm_hosts_are_matched_literally_under_both_label_names() {
        let q = dcgm(&["gpu-01.cluster", "n2"]).unwrap();
        assert!(q.contains(r#"Hostname=~"gpu-01\\.cluster|n2"}"#), "{q}");
        assert!(q.contains(" or {__name__=~\"DCGM_FI_DEV_GPU_UTIL|"), "{q}");
        assert!(q.contains(r#"hostname=~"gpu-01\\.cluster|n2"}"#), "{q}");
        assert_eq!(dcgm(&[]), None);
    }
}
