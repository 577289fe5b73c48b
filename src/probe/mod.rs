//! Hardware readings: the GPUs through NVML (`gpu`), the host through /proc (`host`), and the
//! training process with its DataLoader workers (`process`, found by `trainer`, past the
//! `launcher` that started it). A `Sampler` reads them all at once into one owned, timestamped
//! `Sample`; `spawn` runs it on its own thread at the chosen interval and sends each sample
//! into the inbox, and tells the `stacks` thread which processes' Python stacks to sample.

pub mod environ;
pub mod gpu;
pub mod host;
mod launcher;
pub mod process;
pub mod sampler;
pub mod stacks;
pub mod trainer;

pub use crate::model::sample::{
    GpuProcess, GpuReading, HostReading, Mig, Sample, TrainerReading, WorkerReading,
};
pub use sampler::{Sampler, SamplerOptions, spawn};

/// The `Key:   1234 kB` lines of /proc files (meminfo, smaps_rollup), as (key, bytes).
fn kib_lines(text: &str) -> impl Iterator<Item = (&str, u64)> {
    text.lines().filter_map(|line| {
        let (key, value) = line.split_once(':')?;
        let kib: u64 = value.split_whitespace().next()?.parse().ok()?;
        Some((key, kib * 1024))
    })
}
