//! Hardware samples folded into the model: the latest sample as it was read, whole-run
//! statistics per GPU and for the host and trainer (what a report of a recording shows), and
//! the moments a GPU fell off the bus or came back.

use std::collections::{BTreeMap, VecDeque};

use super::window::{RunStats, Series};
use crate::model::sample::Sample;

/// Samples kept for the diagnosis's time windows: the last ten minutes, at most this many.
const RECENT_SAMPLES: usize = 600;
const RECENT_SECONDS: f64 = 600.0;

/// What the samples said, kept bounded: statistics, and the last minutes of readings.
#[derive(Clone, Debug, Default)]
pub struct Hardware {
    /// The readings of the last minutes, oldest first.
    pub recent: VecDeque<Sample>,
    pub samples: u64,
    /// Time of the first sample.
    pub first_time: Option<f64>,
    /// By GPU and MIG device (`GpuReading::key`).
    pub gpus: BTreeMap<(u32, Option<u32>), GpuStats>,
    pub host_cpu_pct: RunStats,
    pub host_mem_used_bytes: RunStats,
    pub trainer_cpu_pct: RunStats,
    pub busiest_thread_cpu_pct: RunStats,
    pub workers: RunStats,
    /// The GPU notes said so far, each said once (at most `MAX_NOTES`).
    notes_said: Vec<String>,
    /// The node over the whole run, decimated: what the HTML report draws.
    pub curves: NodeCurves,
    /// The job the trainer's environment named last (kept after it exits).
    pub job: Option<crate::model::job::JobIdentity>,
}

/// The node's readings over the whole run: the GPUs' mean utilization, their summed power and
/// memory, and the host's used memory.
#[derive(Clone, Debug)]
pub struct NodeCurves {
    pub gpu_util_pct: Series,
    pub gpu_power_w: Series,
    pub gpu_mem_bytes: Series,
    pub host_mem_bytes: Series,
}

impl Default for NodeCurves {
    fn default() -> Self {
        let series = || Series::new(256, 256);
        NodeCurves {
            gpu_util_pct: series(),
            gpu_power_w: series(),
            gpu_mem_bytes: series(),
            host_mem_bytes: series(),
        }
    }
}

/// Distinct GPU notes remembered: one per GPU of a large node and a few more. Past it a note
/// is not said again as an event, but stays in every sample.
const MAX_NOTES: usize = 64;

/// One GPU over the run.
#[derive(Clone, Debug, Default)]
pub struct GpuStats {
    pub name: String,
    /// NVML's name for it: `1`, or `1:0` for a MIG device.
    pub id: String,
    pub util_pct: RunStats,
    pub power_w: RunStats,
    pub power_limit_w: Option<f64>,
    pub mem_used_bytes: RunStats,
    pub mem_total_bytes: Option<u64>,
    pub failed: bool,
}

/// A GPU that stopped answering, or answered again.
#[derive(Clone, Debug, PartialEq)]
pub enum GpuChange {
    Lost {
        gpu: u32,
        why: String,
    },
    Back {
        gpu: u32,
    },
    /// A note first seen.
    Note(String),
}

impl Hardware {
    /// Folds a sample in; returns the GPUs that were lost or came back with it.
    pub fn apply(&mut self, s: Sample) -> Vec<GpuChange> {
        self.samples += 1;
        self.first_time.get_or_insert(s.time);
        if let Some(job) = s.trainer.as_ref().and_then(|t| t.job.as_ref())
            && self.job.as_ref() != Some(job)
        {
            self.job = Some(job.clone());
        }
        let mut changes = Vec::new();
        for g in &s.gpus {
            // The id follows from the key: written once, when the device is first seen.
            let stats = self.gpus.entry(g.key()).or_insert_with(|| GpuStats {
                id: g.id(),
                ..GpuStats::default()
            });
            stats.name.clone_from(&g.name);
            // A lost GPU takes its MIG devices with it: one event, the GPU's.
            if g.key().1.is_none() {
                match (&g.failed, stats.failed) {
                    (Some(why), false) => changes.push(GpuChange::Lost {
                        gpu: g.index,
                        why: why.clone(),
                    }),
                    (None, true) => changes.push(GpuChange::Back { gpu: g.index }),
                    _ => {}
                }
            }
            stats.failed = g.failed.is_some();
            push(&mut stats.util_pct, g.util_pct.map(f64::from));
            push(&mut stats.power_w, g.power_w);
            push(
                &mut stats.mem_used_bytes,
                g.mem_used_bytes.map(|b| b as f64),
            );
            stats.power_limit_w = g.power_limit_w.or(stats.power_limit_w);
            stats.mem_total_bytes = g.mem_total_bytes.or(stats.mem_total_bytes);
        }
        self.node_curves(&s);
        for n in &s.gpu_notes {
            if !self.notes_said.contains(n) && self.notes_said.len() < MAX_NOTES {
                self.notes_said.push(n.clone());
                changes.push(GpuChange::Note(n.clone()));
            }
        }
        if let Some(h) = &s.host {
            push(&mut self.host_cpu_pct, h.cpu_pct);
            push(&mut self.host_mem_used_bytes, Some(h.mem_used_bytes as f64));
        }
        if let Some(t) = &s.trainer {
            push(&mut self.trainer_cpu_pct, t.cpu_pct);
            push(&mut self.busiest_thread_cpu_pct, t.busiest_thread_cpu_pct);
            push(&mut self.workers, Some(t.workers.len() as f64));
        }
        let now = s.time;
        while self.recent.len() >= RECENT_SAMPLES
            || self
                .recent
                .front()
                .is_some_and(|f| f.time < now - RECENT_SECONDS)
        {
            self.recent.pop_front();
        }
        self.recent.push_back(s);
        changes
    }

    /// The sample's node figures onto the run's curves, from the GPUs that answered: power
    /// once per physical GPU (a MIG device has none of its own; its GPU's reading carries
    /// it), memory wherever it was read (a GPU in MIG mode leaves it to its devices).
    fn node_curves(&mut self, s: &Sample) {
        let working: Vec<_> = s.gpus.iter().filter(|g| g.failed.is_none()).collect();
        let utils: Vec<f64> = working
            .iter()
            .filter_map(|g| g.util_pct.map(f64::from))
            .collect();
        if !utils.is_empty() {
            let mean = utils.iter().sum::<f64>() / utils.len() as f64;
            self.curves.gpu_util_pct.push(s.time, mean);
        }
        let sum = |v: Vec<f64>| (!v.is_empty()).then(|| v.iter().sum::<f64>());
        let power = working
            .iter()
            .filter(|g| g.key().1.is_none())
            .filter_map(|g| g.power_w)
            .collect();
        if let Some(w) = sum(power) {
            self.curves.gpu_power_w.push(s.time, w);
        }
        let mem = working
            .iter()
            .filter_map(|g| g.mem_used_bytes.map(|b| b as f64))
            .collect();
        if let Some(b) = sum(mem) {
            self.curves.gpu_mem_bytes.push(s.time, b);
        }
        if let Some(h) = &s.host {
            self.curves
                .host_mem_bytes
                .push(s.time, h.mem_used_bytes as f64);
        }
    }

    /// The latest reading.
    pub fn latest(&self) -> Option<&Sample> {
        self.recent.back()
    }

    /// Where the GPU figures came from: a tracker's run (and how often it read them), or
    /// steptop's own NVML readings. None before any GPU was read.
    pub fn gpu_source(&self) -> Option<String> {
        let tracker = self
            .notes_said
            .iter()
            .find_map(|n| n.strip_prefix(crate::model::sample::TRACKER_SOURCE));
        match tracker {
            Some(t) => Some(t.to_string()),
            None => (!self.gpus.is_empty()).then(|| "NVML (steptop's own readings)".to_string()),
        }
    }
}

fn push(stats: &mut RunStats, v: Option<f64>) {
    if let Some(v) = v.filter(|v| v.is_finite()) {
        stats.push(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::sample::GpuReading;

    fn sample(util: u32, failed: bool) -> Sample {
        Sample {
            gpus: vec![GpuReading {
                index: 0,
                name: "H100".into(),
                util_pct: (!failed).then_some(util),
                power_w: (!failed).then_some(100.0),
                failed: failed.then(|| "lost".to_string()),
                ..GpuReading::default()
            }],
            ..Sample::default()
        }
    }

    #[test]
    fn a_lost_gpu_is_one_change_until_it_comes_back() {
        let mut h = Hardware::default();
        assert!(h.apply(sample(30, false)).is_empty());
        assert_eq!(
            h.apply(sample(0, true)),
            vec![GpuChange::Lost {
                gpu: 0,
                why: "lost".into()
            }]
        );
        assert!(h.apply(sample(0, true)).is_empty());
        assert_eq!(h.apply(sample(50, false)), vec![GpuChange::Back { gpu: 0 }]);
        // Failed readings add nothing to the statistics.
        assert_eq!(h.gpus[&(0, None)].util_pct.mean(), Some(40.0));
        assert_eq!(h.samples, 4);
    }

    #[test]
    fn the_node_curves_count_each_physical_gpu_once() {
        use crate::model::sample::Mig;
        let mut h = Hardware::default();
        let gpu = |index, mig, util, power, mem| GpuReading {
            index,
            mig,
            util_pct: util,
            power_w: power,
            mem_used_bytes: mem,
            ..GpuReading::default()
        };
        h.apply(Sample {
            time: 5.0,
            gpus: vec![
                gpu(0, None, Some(80), Some(300.0), Some(10 << 30)),
                // A GPU in MIG mode: its power, no utilization, memory by device.
                gpu(1, Some(Mig::Parent), None, Some(120.0), None),
                gpu(1, Some(Mig::Slice(0)), Some(40), None, Some(2 << 30)),
                gpu(2, None, None, None, None),
            ],
            ..Sample::default()
        });
        let last = |s: &Series| s.points().last().map(|p| (p.t0, p.mean));
        let c = &h.curves;
        assert_eq!(last(&c.gpu_util_pct), Some((5.0, 60.0)));
        assert_eq!(last(&c.gpu_power_w), Some((5.0, 420.0)));
        assert_eq!(last(&c.gpu_mem_bytes), Some((5.0, (12u64 << 30) as f64)));
        assert!(c.host_mem_bytes.is_empty());
        // A lost GPU draws nothing.
        h.apply(sample(0, true));
        assert_eq!(h.curves.gpu_util_pct.len(), 1);
    }

    #[test]
    fn each_gpu_note_is_said_once_and_the_notes_remembered_are_bounded() {
        let mut h = Hardware::default();
        let with = |notes: &[String]| Sample {
            gpu_notes: notes.to_vec(),
            ..sample(30, false)
        };
        let hidden = "GPU 1 is hidden from this process".to_string();
        assert_eq!(
            h.apply(with(std::slice::from_ref(&hidden))),
            vec![GpuChange::Note(hidden.clone())]
        );
        assert!(h.apply(with(std::slice::from_ref(&hidden))).is_empty());
        // Ten times the bound of distinct notes: only the first MAX_NOTES are said.
        let many: Vec<String> = (0..10 * MAX_NOTES).map(|i| format!("note {i}")).collect();
        let said = h.apply(with(&many)).len();
        assert_eq!(said, MAX_NOTES - 1);
        assert_eq!(h.notes_said.len(), MAX_NOTES);
        assert!(h.apply(with(&many)).is_empty());
    }
}
