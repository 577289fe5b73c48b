//! What the probes read, as owned values: one `Sample` per reading of the GPUs, the host and
//! the trainer's process tree. The probes (`probe/`) make them, the monitor and every sink
//! read them; this module depends on nothing of either.

use serde::{Deserialize, Serialize};

/// How a note on a sample that came from a tracker's run begins (`GPU figures from W&B every
/// 15 s (run-abc.wandb)`): the rest says where its GPU figures came from. Samples without one
/// are steptop's own NVML readings.
pub const TRACKER_SOURCE: &str = "GPU figures from ";

/// Everything read at one moment. `time` is Unix seconds from the sampler's clock, so a
/// recording replays with the same times.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub time: f64,
    /// One reading per selected GPU, in index order.
    pub gpus: Vec<GpuReading>,
    /// Why there are no GPU readings, as a sentence a user can act on; None while at least
    /// one GPU can be read.
    pub gpu_error: Option<String>,
    /// What the GPU readings need said beside them: GPUs that cannot be read and why, which
    /// numbering the indices are in, that NVML's process ids are another PID namespace's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpu_notes: Vec<String>,
    pub host: Option<HostReading>,
    pub trainer: Option<TrainerReading>,
}

/// One GPU (or one MIG device of it) at one moment. A field NVML could not give is None, and
/// says why in `errors`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct GpuReading {
    /// NVML's index (PCI bus order); a MIG device has its GPU's.
    pub index: u32,
    /// With `--gpus cuda`: the number CUDA gives it after CUDA_VISIBLE_DEVICES.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda_index: Option<u32>,
    /// Set for a GPU in MIG mode and for each of its MIG devices.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mig: Option<Mig>,
    pub name: String,
    /// Set when the GPU could not be read at all (fallen off the bus): every field is None.
    pub failed: Option<String>,
    pub util_pct: Option<u32>,
    pub mem_util_pct: Option<u32>,
    /// Used including the driver's reserved memory, on every driver.
    pub mem_used_bytes: Option<u64>,
    /// The reserved part of `mem_used_bytes`, where the driver says it (510 and later).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_reserved_bytes: Option<u64>,
    pub mem_total_bytes: Option<u64>,
    pub power_w: Option<f64>,
    pub power_limit_w: Option<f64>,
    pub temp_c: Option<u32>,
    pub sm_clock_mhz: Option<u32>,
    pub sm_clock_max_mhz: Option<u32>,
    /// The SM clock the GPU is set to run at (its applications clock, or the default one):
    /// the clock a busy GPU should hold. None on GPUs without one (GeForce).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_clock_app_mhz: Option<u32>,
    /// Why the clocks are held down right now (NVML's clocks-event reasons), by name; empty
    /// when nothing holds them.
    pub throttle: Option<Vec<String>>,
    pub pcie_rx_bytes_per_s: Option<u64>,
    pub pcie_tx_bytes_per_s: Option<u64>,
    /// Compute processes and their GPU memory; read on the slow tier, so None in between.
    pub processes: Option<Vec<GpuProcess>>,
    /// GPM (Hopper and newer, opt-in): share of time the SMs were busy, and tensor cores.
    pub sm_active_pct: Option<f64>,
    pub tensor_active_pct: Option<f64>,
    /// One entry per reading that failed: `"power: Unknown Error"`.
    pub errors: Vec<String>,
}

impl GpuReading {
    /// How the GPU is named on screen: `1`, or `1:0` for MIG device 0 of GPU 1 (as
    /// `nvidia-smi -i` takes it), with CUDA's number first when it is shown.
    pub fn label(&self) -> String {
        match self.cuda_index {
            Some(c) => format!("cuda{c}={}", self.id()),
            None => self.id(),
        }
    }

    /// NVML's name for it: `1`, or `1:0` for MIG device 0 of GPU 1.
    pub fn id(&self) -> String {
        match self.mig {
            Some(Mig::Slice(s)) => format!("{}:{s}", self.index),
            _ => self.index.to_string(),
        }
    }

    /// What tells this device from the others of a sample: the GPU, and the MIG device.
    pub fn key(&self) -> (u32, Option<u32>) {
        match self.mig {
            Some(Mig::Slice(s)) => (self.index, Some(s)),
            _ => (self.index, None),
        }
    }

    /// Whether its power and utilization say how busy the trainer keeps it. A GPU in MIG mode
    /// draws power for every instance on it, and a MIG device has no power of its own.
    pub fn power_is_its_own(&self) -> bool {
        self.mig.is_none()
    }
}

/// Multi-Instance GPU: a GPU split into instances, each a device of its own to CUDA.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mig {
    /// A GPU in MIG mode: its power, clocks and temperature are shared by its MIG devices,
    /// and NVML gives no utilization for it.
    Parent,
    /// MIG device N of its GPU.
    Slice(u32),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct GpuProcess {
    pub pid: u32,
    pub used_bytes: Option<u64>,
}

/// The machine. Rates and percentages need two readings, so the first sample has None there.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct HostReading {
    /// 0 where the source does not say (an MLflow run's system metrics).
    pub cpus: u32,
    /// Busy share of all CPUs, 0-100.
    pub cpu_pct: Option<f64>,
    pub per_cpu_pct: Vec<f64>,
    pub iowait_pct: Option<f64>,
    pub mem_total_bytes: u64,
    pub mem_available_bytes: u64,
    pub mem_used_bytes: u64,
    pub swap_total_bytes: u64,
    pub swap_used_bytes: u64,
    /// Pages swapped in per second.
    pub swap_in_pages_per_s: Option<f64>,
    /// The 1, 5 and 15 minute load averages; None where the source has none (a tracker's run).
    #[serde(default)]
    pub load_avg: Option<[f64; 3]>,
    pub disk_read_bytes_per_s: Option<f64>,
    pub disk_write_bytes_per_s: Option<f64>,
}

/// The training process and its DataLoader workers.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct TrainerReading {
    pub pid: u32,
    /// How steptop knows this is the trainer: `--pid`, the log it writes, or a GPU.
    pub found_by: String,
    /// Under a launcher (torchrun, deepspeed, accelerate): every rank process it started,
    /// this one included, by pid. Empty otherwise.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ranks: Vec<u32>,
    /// The job, node and rank its environment names (Slurm's and the launcher's variables);
    /// node-level (no process rank) when it is one of several ranks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<crate::model::job::JobIdentity>,
    pub command: String,
    pub state: Option<String>,
    /// CPU of the process itself (all its threads), in % of one core.
    pub cpu_pct: Option<f64>,
    /// The busiest thread, in % of one core: a Python main thread near 100% means the step
    /// waits on the host.
    pub busiest_thread_cpu_pct: Option<f64>,
    pub threads: u32,
    pub rss_bytes: Option<u64>,
    pub pss_bytes: Option<u64>,
    pub private_bytes: Option<u64>,
    /// CPUs it may run on: its affinity, capped by its cgroup's CPU quota.
    pub usable_cores: Option<f64>,
    pub workers: Vec<WorkerReading>,
    pub workers_pss_bytes: Option<u64>,
    pub workers_private_bytes: Option<u64>,
    /// What could not be read, as sentences (another user's process hides its memory map).
    pub unreadable: Vec<String>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct WorkerReading {
    pub pid: u32,
    /// The kernel's one-letter state: R running, S sleeping, D waiting on I/O, Z zombie.
    pub state: String,
    pub cpu_pct: Option<f64>,
    pub pss_bytes: Option<u64>,
    pub private_bytes: Option<u64>,
}
