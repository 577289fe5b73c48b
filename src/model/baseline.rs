//! A finished run's figures shown beside a live one (`--baseline RUN`): built by `compare`
//! from that run's report before the monitor starts, read by the sinks, never changed.

/// The baseline's figures, under the names the live figures have.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Baseline {
    pub label: String,
    pub samples_per_s: Option<f64>,
    pub iters_per_s: Option<f64>,
    pub tokens_per_s: Option<f64>,
    pub step_time_ms: Option<f64>,
    pub data_share: Option<f64>,
    pub forward_ms: Option<f64>,
    /// Each stage's mean over the run, by name.
    pub stages: Vec<(String, f64)>,
    /// The step breakdown's parts over the run, in step order: role (`data`, `forward`,
    /// `unlogged`, ...) and milliseconds; and the mean step they are parts of.
    pub parts: Vec<(&'static str, f64)>,
    pub mean_step_ms: Option<f64>,
}

impl Baseline {
    /// The baseline's mean of stage `name`.
    pub fn stage(&self, name: &str) -> Option<f64> {
        self.stages
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, ms)| *ms)
    }
}

/// `now` over `then`, when both are there and `then` is not zero.
pub fn ratio(now: Option<f64>, then: Option<f64>) -> Option<f64> {
    let then = then.filter(|t| *t != 0.0)?;
    Some(now? / then)
}

/// A ratio as a signed change: `-2%`, `+46%`.
pub fn change(ratio: f64) -> String {
    format!("{:+.0}%", (ratio - 1.0) * 100.0)
}
