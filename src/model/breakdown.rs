//! Where a step's time goes, computed once for everyone: the report, the live view, the rules
//! and the metrics all call these methods, over the whole run or the recent steps, so that no
//! two of them can disagree about a figure.

use super::Model;
use super::window::{Rolling, RunStats};
use crate::parse::labels::Role;

/// Which steps a figure is computed over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Over {
    /// The whole run (the report).
    Run,
    /// The last N steps (and timing blocks): the live view, the rules, the metrics.
    Recent(usize),
}

impl Over {
    /// The mean of a figure kept both ways (over the run, and its latest values) over this span.
    pub fn mean(self, run: &RunStats, recent: &Rolling) -> Option<f64> {
        match self {
            Over::Run => run.mean(),
            Over::Recent(n) => recent.mean_last(n),
        }
    }
}

/// One logged part of the step; its name borrowed from the model (no copy per evaluation).
#[derive(Clone, Debug, PartialEq)]
pub struct Piece<'a> {
    pub name: &'a str,
    pub ms: f64,
    pub role: Role,
}

/// A step split into what the logs say it holds. Absent figures are None, never 0.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Breakdown<'a> {
    /// Mean step time.
    pub step_ms: Option<f64>,
    /// Data time over step time, over the steps that logged both.
    pub data_share: Option<f64>,
    /// The data wait: the share of the mean step when known, else the mean data time.
    pub data_ms: Option<f64>,
    /// The forward as the timing blocks give it.
    pub forward_ms: Option<f64>,
    /// The finest pieces of the forward, in the order the log prints them.
    pub pieces: Vec<Piece<'a>>,
    /// Logged parts outside the forward besides the data wait (loss, backward, optimizer).
    pub parts: Vec<Piece<'a>>,
    /// The time no log line covers (backward and optimizer when they are not itemised).
    pub unlogged_ms: Option<f64>,
}

impl Model {
    /// Mean step time over `span`.
    pub fn step_ms(&self, span: Over) -> Option<f64> {
        match span {
            // Each printed figure over the steps it stands for, as the run's header says.
            Over::Run => self.merged.mean_step_ms(),
            Over::Recent(n) => self.merged.step_time_ms.recent.mean_last(n),
        }
    }

    /// Data time over step time, summed over the steps of `span` that logged both; else the
    /// mean data wait of a run's profiler report over the mean step.
    pub fn data_share(&self, span: Over) -> Option<f64> {
        // A wait for data longer than the steps it is part of is figures read for others (a
        // pattern's wrong group): no share at all, and a note where the lines are counted.
        let logged = match span {
            Over::Run => self.merged.data_share(),
            Over::Recent(n) => self.merged.recent_data_share(n),
        }
        .filter(|s| *s <= 1.0 + 1e-9);
        logged.or_else(|| {
            let data = self.stages.run_data_ms?;
            let step = self.step_ms(Over::Run)?;
            (step > 0.0).then(|| (data / step).min(1.0))
        })
    }

    /// The forward time of the timing blocks of `span`.
    pub fn forward_ms(&self, span: Over) -> Option<f64> {
        span.mean(&self.stages.forward_ms, &self.stages.recent_forward)
    }

    /// Where the step's time goes over `span`.
    pub fn step_breakdown(&self, span: Over) -> Breakdown<'_> {
        let step_ms = self.step_ms(span);
        let data_share = self.data_share(span);
        let data = &self.merged.data_time_ms;
        let data_mean = span.mean(&data.run, &data.recent);
        let data_ms = match (data_share, step_ms) {
            (Some(share), Some(step)) => Some(share * step),
            _ => data_mean,
        };
        let forward_ms = self.forward_ms(span);
        // Sized up front: the rules build a breakdown every step.
        let mut pieces = Vec::with_capacity(self.stages.by_name.len());
        pieces.extend(
            self.stages
                .by_name
                .iter()
                .filter(|s| s.leaf)
                .filter_map(|s| {
                    Some(Piece {
                        name: &s.name,
                        ms: s.mean(span)?,
                        role: if s.copies { Role::Copy } else { Role::Stage },
                    })
                }),
        );
        let mut parts = Vec::with_capacity(self.stages.parts.len());
        parts.extend(
            self.stages
                .parts
                .iter()
                .filter(|p| p.role != Role::Data)
                .filter_map(|p| {
                    Some(Piece {
                        name: &p.name,
                        ms: p.mean(span)?,
                        role: p.role,
                    })
                }),
        );
        let matched = span.mean(&self.stages.unlogged_ms, &self.stages.recent_unlogged);
        let other = span
            .mean(&self.stages.other_ms, &self.stages.recent_other)
            .unwrap_or(0.0);
        let unlogged = matched.or_else(|| {
            let rest = step_ms? - data_ms.unwrap_or(0.0) - forward_ms? - other;
            Some(rest.max(0.0))
        });
        Breakdown {
            step_ms,
            data_share,
            data_ms,
            forward_ms,
            pieces,
            parts,
            unlogged_ms: unlogged,
        }
    }

    /// The finest forward pieces with their time and share of the forward over `span`,
    /// largest first: what a hotspot is judged on.
    pub fn stage_shares(&self, span: Over) -> Vec<(&str, f64, f64)> {
        self.step_breakdown(span).stage_shares()
    }
}

impl<'a> Breakdown<'a> {
    /// The forward's pieces with their time and share of the forward, largest first.
    pub fn stage_shares(&self) -> Vec<(&'a str, f64, f64)> {
        let sum: f64 = self.pieces.iter().map(|p| p.ms).sum();
        let forward = self.forward_ms.filter(|f| *f >= sum * 0.999).unwrap_or(sum);
        if forward <= 0.0 {
            return Vec::new();
        }
        let mut shares: Vec<(&str, f64, f64)> = self
            .pieces
            .iter()
            .map(|p| (p.name, p.ms, p.ms / forward))
            .collect();
        shares.sort_by(|a, b| b.2.total_cmp(&a.2));
        shares
    }
}
