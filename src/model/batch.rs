//! Throughput per batch size: when the batch grows (within a run, or between two runs read
//! together) the samples per second should grow with it; if only the iterations per second
//! fall, the larger batch bought nothing.

use super::window::RunStats;

/// Batch sizes tracked; later ones are not (a run does not try many).
const SEGMENTS_KEPT: usize = 8;

/// The steps run at one batch size.
#[derive(Clone, Debug)]
pub struct BatchRate {
    pub batch: f64,
    pub first_step: Option<u64>,
    pub iters_per_s: RunStats,
    pub samples_per_s: RunStats,
}

/// Batch sizes in the order they first appeared.
#[derive(Clone, Debug, Default)]
pub struct Batches {
    pub segments: Vec<BatchRate>,
}

impl Batches {
    /// One step at `batch` samples, with its rates (samples/s from iters/s when not logged).
    pub fn push(
        &mut self,
        batch: f64,
        step: Option<u64>,
        iters_per_s: Option<f64>,
        samples_per_s: Option<f64>,
    ) {
        let Some(it) = iters_per_s.filter(|v| v.is_finite() && *v > 0.0) else {
            return;
        };
        let i = match self.segments.iter().position(|s| s.batch == batch) {
            Some(i) => i,
            None if self.segments.len() < SEGMENTS_KEPT => {
                self.segments.push(BatchRate {
                    batch,
                    first_step: step,
                    iters_per_s: RunStats::default(),
                    samples_per_s: RunStats::default(),
                });
                self.segments.len() - 1
            }
            None => return,
        };
        let seg = &mut self.segments[i];
        seg.iters_per_s.push(it);
        seg.samples_per_s.push(samples_per_s.unwrap_or(it * batch));
    }
}
