//! The ranks as a distribution: a job of thousands of ranks is read as its spread (p50, p95
//! and max of each rank's recent step time, and of how many steps each trails the furthest)
//! and its slowest ranks by number, never as a list of thousands. The report and the live
//! view both show this.

use super::Model;

/// p50, p95 and max over the ranks.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Spread {
    pub p50: f64,
    pub p95: f64,
    pub max: f64,
}

impl Spread {
    fn of(mut values: Vec<f64>) -> Option<Spread> {
        if values.is_empty() {
            return None;
        }
        values.sort_by(f64::total_cmp);
        let at =
            |q: f64| values[((q * values.len() as f64).ceil() as usize).clamp(1, values.len()) - 1];
        Some(Spread {
            p50: at(0.5),
            p95: at(0.95),
            max: values[values.len() - 1],
        })
    }
}

/// How the ranks of a run compare.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct RankSpread {
    pub ranks: usize,
    /// Each rank's mean step time over its last steps (ms).
    pub step_time_ms: Option<Spread>,
    /// Steps each rank trails the furthest rank.
    pub lag_steps: Option<Spread>,
    /// The slowest ranks by that step time, slowest first: rank and ms.
    pub slowest: Vec<SlowRank>,
}

#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct SlowRank {
    pub rank: u32,
    pub step_time_ms: f64,
}

impl Model {
    /// The ranks' spread and the `slowest` slowest ranks; None with fewer than two ranks.
    pub fn rank_spread(&self, slowest: usize) -> Option<RankSpread> {
        if self.ranks.len() < 2 {
            return None;
        }
        let times: Vec<(u32, f64)> = self
            .ranks
            .iter()
            .filter_map(|(r, s)| Some((*r, s.step_time_ms.recent.mean_last(usize::MAX)?)))
            .collect();
        let furthest = self.ranks.values().filter_map(|s| s.last_step).max();
        let lags: Vec<f64> = self
            .ranks
            .values()
            .filter_map(|s| Some((furthest? - s.last_step?) as f64))
            .collect();
        let mut slow = times.clone();
        slow.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        slow.truncate(slowest);
        Some(RankSpread {
            ranks: self.ranks.len(),
            step_time_ms: Spread::of(times.iter().map(|t| t.1).collect()),
            lag_steps: Spread::of(lags),
            slowest: slow
                .into_iter()
                .map(|(rank, step_time_ms)| SlowRank { rank, step_time_ms })
                .collect(),
        })
    }
}
