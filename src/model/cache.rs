//! Cache effectiveness from the cumulative counters a cache prints: the run's hit rate and the
//! recent one, from the change between the last two readings.

use super::window::Series;
use crate::parse::record::CacheRecord;

/// The latest cache readings and the hit-rate history.
#[derive(Clone, Debug)]
pub struct CacheState {
    pub hits: Option<u64>,
    pub misses: Option<u64>,
    /// The rate the log printed, 0..1, when it gives no counters.
    pub printed_rate: Option<f64>,
    pub recent_hit_rate: Option<f64>,
    pub items: Option<u64>,
    pub memory_used_mb: Option<f64>,
    pub memory_total_mb: Option<f64>,
    pub recent_series: Series,
    pub readings: u64,
}

impl Default for CacheState {
    fn default() -> Self {
        CacheState {
            hits: None,
            misses: None,
            printed_rate: None,
            recent_hit_rate: None,
            items: None,
            memory_used_mb: None,
            memory_total_mb: None,
            recent_series: Series::new(256, 256),
            readings: 0,
        }
    }
}

impl CacheState {
    pub fn apply(&mut self, c: &CacheRecord, t: f64) {
        if let (Some(h), Some(m)) = (c.hits, c.misses) {
            self.readings += 1;
            // Counters that went down were reset (a new cache, a restart): start afresh.
            if let (Some(h0), Some(m0)) = (self.hits, self.misses)
                && h >= h0
                && m >= m0
                && (h - h0) + (m - m0) > 0
            {
                let rate = (h - h0) as f64 / ((h - h0) + (m - m0)) as f64;
                self.recent_hit_rate = Some(rate);
                self.recent_series.push(t, rate);
            }
            self.hits = Some(h);
            self.misses = Some(m);
        }
        if let Some(p) = c.hit_rate_pct {
            self.printed_rate = Some(p / 100.0);
        }
        if c.items.is_some() {
            self.items = c.items;
        }
        if c.memory_used_mb.is_some() {
            self.memory_used_mb = c.memory_used_mb;
            self.memory_total_mb = c.memory_total_mb;
        }
    }

    /// Cumulative hit rate, 0..1: from the counters, else as printed.
    pub fn hit_rate(&self) -> Option<f64> {
        match (self.hits, self.misses) {
            (Some(h), Some(m)) if h + m > 0 => Some(h as f64 / (h + m) as f64),
            _ => self.printed_rate,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(hits: u64, misses: u64) -> CacheRecord {
        CacheRecord {
            hits: Some(hits),
            misses: Some(misses),
            ..CacheRecord::default()
        }
    }

    #[test]
    fn recent_rate_comes_from_deltas() {
        let mut c = CacheState::default();
        c.apply(&reading(40, 60), 0.0);
        assert_eq!(c.recent_hit_rate, None);
        c.apply(&reading(125, 75), 1.0);
        assert_eq!(c.recent_hit_rate, Some(0.85));
        assert_eq!(c.hit_rate(), Some(0.625));
    }

    #[test]
    fn a_reset_starts_afresh() {
        let mut c = CacheState::default();
        c.apply(&reading(500, 500), 0.0);
        c.apply(&reading(10, 90), 1.0);
        assert_eq!(c.recent_hit_rate, None);
        c.apply(&reading(20, 90), 2.0);
        assert_eq!(c.recent_hit_rate, Some(1.0));
    }
}
