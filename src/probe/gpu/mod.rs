//! The GPUs through NVML. The NVIDIA library is opened at run time, so steptop runs on a
//! machine without it and says why there are no GPU readings. Device handles are opened once
//! and kept; a call that fails marks that field, a GPU that has fallen off the bus is a
//! reading marked failed, and a GPU that cannot be opened (hidden by a container or Slurm) is
//! a note: none of them is an error of the run while another GPU can be read.
//!
//! `calls` holds the calls whose form depends on the driver's age, `select` what `--gpus`
//! picks and how the GPUs are numbered.

pub mod calls;
pub mod select;

use std::ffi::OsStr;
use std::time::{Duration, Instant};

use nvml_wrapper::bitmasks::device::ThrottleReasons;
use nvml_wrapper::enum_wrappers::device::{Clock, PcieUtilCounter};
use nvml_wrapper::enums::gpm::GpmMetricId;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::{Device, GpmSample, Nvml};

use super::{GpuReading, Mig};
use calls::Costs;
use select::{CudaEnv, GpuSelect, Known};

/// The library names tried in order: the driver installs the versioned one; the bare name
/// exists only where the development package is installed.
const LIBRARIES: [&str; 2] = ["libnvidia-ml.so.1", "libnvidia-ml.so"];

/// Environment variable naming the NVIDIA library to load instead (tests point it at a fake).
pub const LIBRARY_ENV: &str = "STEPTOP_NVML_LIB";

/// Opens NVML, or says in one sentence why it cannot.
pub fn open() -> Result<Nvml, String> {
    if let Some(path) = std::env::var_os(LIBRARY_ENV) {
        return init(&path).map_err(|(_, e)| e);
    }
    let mut missing = None;
    for name in LIBRARIES {
        match init(OsStr::new(name)) {
            Ok(nvml) => return Ok(nvml),
            // A library that loads but fails says more than one that is not there.
            Err((true, e)) => missing = missing.or(Some(e)),
            Err((false, e)) => return Err(e),
        }
    }
    Err(missing.unwrap_or_default())
}

/// NVML from `lib`, or (whether the library itself was missing, why).
fn init(lib: &OsStr) -> Result<Nvml, (bool, String)> {
    Nvml::builder().lib_path(lib).init().map_err(|e| {
        let missing = matches!(e, NvmlError::LibloadingError(_));
        (missing, reason(lib, e))
    })
}

fn reason(lib: &OsStr, e: NvmlError) -> String {
    match e {
        NvmlError::LibloadingError(_) => format!(
            "no NVIDIA driver here: {} cannot be loaded (no NVIDIA driver on this machine, or \
             set {LIBRARY_ENV} to the library's path)",
            lib.to_string_lossy()
        ),
        NvmlError::DriverNotLoaded => {
            "the NVIDIA driver is not loaded (nvidia-smi fails too): load it or reboot".into()
        }
        NvmlError::NoPermission => {
            "no permission to talk to the NVIDIA driver: check access to /dev/nvidia*".into()
        }
        NvmlError::LibRmVersionMismatch => {
            "the NVIDIA library and driver versions differ (a driver update without a \
             reboot?): reboot, or reload the nvidia kernel modules"
                .into()
        }
        e => format!("NVML failed to start: {e}"),
    }
}

/// A call that takes longer than this on a fast reading moves to the slow tier: PCIe
/// throughput is a counter the driver samples over 20 ms, and eight GPUs read twice each
/// would hold every reading for a third of a second.
const SLOW_CALL: Duration = Duration::from_millis(5);

/// NVML refreshes GPM's counters about every 100 ms: two samples closer than that give
/// meaningless activity, so a sample is taken only this long after the previous one.
const GPM_MIN_INTERVAL: Duration = Duration::from_millis(100);

/// The selected GPUs of one NVML session.
pub struct GpuProbe<'n> {
    nvml: &'n Nvml,
    gpus: Vec<Gpu<'n>>,
    /// Sentences for the GPU pane: GPUs that cannot be opened and why, how they are numbered.
    notes: Vec<String>,
    costs: Costs,
}

struct Gpu<'n> {
    index: u32,
    mig: Option<Mig>,
    cuda: Option<u32>,
    name: String,
    device: Device<'n>,
    /// With `--gpm`: whether this GPU has GPM, or why not.
    gpm: Option<Result<(), String>>,
    /// The previous GPM sample and when it was taken: GPM metrics are the difference of two.
    gpm_prev: Option<(GpmSample<'n>, Instant)>,
    /// The PCIe counters were slow to answer: read on the slow tier only.
    pcie_slow: bool,
    /// The SM clock the GPU is set to run at (its applications clock), read on the slow tier;
    /// None where the GPU has none (GeForce cards).
    app_clock: Option<u32>,
}

impl<'n> GpuProbe<'n> {
    /// Opens the GPUs `select` names (all when None). `gpm` turns on SM and tensor-core
    /// activity where the GPU supports it. Fails only when no GPU can be read at all.
    pub fn new(
        nvml: &'n Nvml,
        select: Option<&GpuSelect>,
        gpm: bool,
        env: &CudaEnv,
    ) -> Result<Self, String> {
        let count = nvml
            .device_count()
            .map_err(|e| format!("NVML cannot count the GPUs: {e}"))?;
        if count == 0 {
            return Err("NVML works but sees no NVIDIA GPU on this machine".into());
        }
        let mut known = Vec::new();
        let mut opened = Vec::new();
        let mut unopened = Vec::new();
        for index in 0..count {
            let device = match nvml.device_by_index(index) {
                Ok(d) => d,
                Err(e) => {
                    unopened.push((index, unopened_why(index, &e)));
                    continue;
                }
            };
            let name = device.name().unwrap_or_else(|_| format!("GPU {index}"));
            known.push(Known {
                index,
                slice: None,
                uuid: device.uuid().ok(),
                name: name.clone(),
            });
            let mig_on = device.mig_mode().is_ok_and(|m| m.current == 1);
            let slices = if mig_on {
                mig_devices(&device)
            } else {
                Vec::new()
            };
            opened.push((index, mig_on.then_some(Mig::Parent), name, device));
            for (slice, d) in slices {
                let name = d
                    .name()
                    .unwrap_or_else(|_| format!("GPU {index} MIG {slice}"));
                known.push(Known {
                    index,
                    slice: Some(slice),
                    uuid: d.uuid().ok(),
                    name: name.clone(),
                });
                opened.push((index, Some(Mig::Slice(slice)), name, d));
            }
        }
        if opened.is_empty() {
            let why: Vec<&str> = unopened.iter().map(|(_, w)| w.as_str()).collect();
            return Err(format!(
                "NVML counts {count} GPU{} but can open none: {}",
                if count == 1 { "" } else { "s" },
                why.join("; ")
            ));
        }
        let resolved = select::resolve(select, &known, count, &unopened, env)?;
        let mut notes: Vec<String> = unopened.into_iter().map(|(_, w)| w).collect();
        notes.extend(resolved.note);
        let slice_of = |mig: Option<Mig>| match mig {
            Some(Mig::Slice(s)) => Some(s),
            _ => None,
        };
        let mut opened: Vec<_> = opened.into_iter().map(Some).collect();
        // In the order `resolve` chose: CUDA's when CUDA numbers them.
        let gpus = resolved
            .chosen
            .iter()
            .filter_map(|c| {
                let at = opened.iter().position(|o| {
                    o.as_ref()
                        .is_some_and(|(i, mig, ..)| *i == c.index && slice_of(*mig) == c.slice)
                })?;
                let (index, mig, name, device) = opened[at].take()?;
                // GPM of a MIG instance needs its own calls; a MIG GPU is left without it.
                let gpm = (gpm && mig.is_none()).then(|| gpm_support(&device));
                Some(Gpu {
                    index,
                    mig,
                    cuda: c.cuda,
                    name,
                    device,
                    gpm,
                    gpm_prev: None,
                    pcie_slow: false,
                    app_clock: None,
                })
            })
            .collect();
        Ok(GpuProbe {
            nvml,
            gpus,
            notes,
            costs: Costs::default(),
        })
    }

    /// One reading per GPU and MIG device; `slow` also lists the compute processes.
    pub fn read(&mut self, slow: bool) -> Vec<GpuReading> {
        let nvml = self.nvml;
        let costs = &mut self.costs;
        self.gpus
            .iter_mut()
            .map(|g| read_one(nvml, g, slow, costs))
            .collect()
    }

    /// What the GPU pane should say besides the readings.
    pub fn notes(&self) -> &[String] {
        &self.notes
    }

    /// What each kind of NVML call has cost so far.
    pub fn costs(&self) -> &Costs {
        &self.costs
    }
}

/// Why a GPU NVML counts cannot be opened, as a note.
fn unopened_why(index: u32, e: &NvmlError) -> String {
    match e {
        NvmlError::NoPermission => format!(
            "GPU {index} is hidden from this process (NVML: {e}): a container or Slurm's \
             device cgroup gives it to another job"
        ),
        NvmlError::GpuLost => lost(index),
        e => format!("GPU {index} cannot be opened (NVML: {e})"),
    }
}

/// The MIG devices of a GPU in MIG mode, by their index under it.
fn mig_devices<'n>(parent: &Device<'n>) -> Vec<(u32, Device<'n>)> {
    let max = parent.mig_device_count().unwrap_or(0);
    // Empty slots answer "not found"; the devices need not be numbered without gaps.
    (0..max)
        .filter_map(|i| Some((i, parent.mig_device_by_index(i).ok()?)))
        .collect()
}

fn gpm_support(device: &Device) -> Result<(), String> {
    match device.gpm_support() {
        Ok(true) => Ok(()),
        Ok(false) | Err(NvmlError::NotSupported) => {
            Err("GPM: not on this GPU (Hopper or newer has it)".to_string())
        }
        Err(e) => Err(format!("GPM: {e}")),
    }
}

fn read_one<'n>(nvml: &'n Nvml, g: &mut Gpu<'n>, slow: bool, costs: &mut Costs) -> GpuReading {
    let mut r = GpuReading {
        index: g.index,
        name: g.name.clone(),
        cuda_index: g.cuda,
        mig: g.mig,
        ..GpuReading::default()
    };
    let d = &g.device;
    if let Some(Mig::Slice(_)) = g.mig {
        // A MIG device answers for its memory and processes only: utilization, power,
        // clocks and temperature are not per instance.
        let (mem, _) = costs.time("memory", || calls::memory(nvml, d));
        if let Err(NvmlError::GpuLost) = mem {
            r.failed = Some(lost(g.index));
            return r;
        }
        set_memory(&mut r, mem);
        if slow {
            let (procs, _) = costs.time("processes", || calls::processes(nvml, d));
            r.processes = ok(&mut r.errors, "processes", procs);
        }
        return r;
    }
    // Utilization first: it is the call that tells whether the GPU is there at all.
    match costs.time("utilization", || d.utilization_rates()).0 {
        Ok(u) => {
            r.util_pct = Some(u.gpu);
            r.mem_util_pct = Some(u.memory);
        }
        Err(NvmlError::GpuLost) => {
            r.failed = Some(lost(g.index));
            return r;
        }
        // A GPU in MIG mode gives no utilization, by design.
        Err(NvmlError::NotSupported) if g.mig.is_some() => {}
        Err(e) => r.errors.push(format!("utilization: {e}")),
    }
    // A GPU in MIG mode keeps its memory and processes per MIG device (and the whole GPU's
    // need privileges): they are read there.
    if g.mig.is_none() {
        let (mem, _) = costs.time("memory", || calls::memory(nvml, d));
        set_memory(&mut r, mem);
    }
    let e = &mut r.errors;
    let power = ok(e, "power", costs.time("power", || d.power_usage()).0);
    let limit = ok(
        e,
        "power limit",
        costs.time("power limit", || d.enforced_power_limit()).0,
    );
    let temp = ok(
        e,
        "temperature",
        costs.time("temperature", || calls::temperature(nvml, d)).0,
    );
    let sm = ok(
        e,
        "SM clock",
        costs.time("SM clock", || d.clock_info(Clock::SM)).0,
    );
    let sm_max = ok(
        e,
        "SM clock max",
        costs.time("SM clock max", || d.max_clock_info(Clock::SM)).0,
    );
    let reasons = ok(
        e,
        "clocks-event reasons",
        costs
            .time("clocks-event reasons", || calls::clock_reasons(nvml, d))
            .0,
    );
    if slow {
        g.app_clock = costs.time("applications clock", || app_clock(d)).0;
    }
    if slow || !g.pcie_slow {
        let (rx, took_rx) = costs.time("PCIe", || d.pcie_throughput(PcieUtilCounter::Receive));
        let (tx, took_tx) = costs.time("PCIe", || d.pcie_throughput(PcieUtilCounter::Send));
        g.pcie_slow |= took_rx.max(took_tx) > SLOW_CALL;
        // NVML gives PCIe throughput in KB/s.
        r.pcie_rx_bytes_per_s = ok(e, "PCIe rx", rx).map(|k| u64::from(k) * 1024);
        r.pcie_tx_bytes_per_s = ok(e, "PCIe tx", tx).map(|k| u64::from(k) * 1024);
    }
    if slow && g.mig.is_none() {
        let (procs, _) = costs.time("processes", || calls::processes(nvml, d));
        r.processes = ok(e, "processes", procs);
    }
    r.power_w = power.map(|mw| f64::from(mw) / 1000.0);
    r.power_limit_w = limit.map(|mw| f64::from(mw) / 1000.0);
    r.temp_c = temp;
    r.sm_clock_mhz = sm;
    r.sm_clock_max_mhz = sm_max;
    r.sm_clock_app_mhz = g.app_clock;
    r.throttle = reasons.map(|bits| {
        ThrottleReasons::from_bits_truncate(bits)
            .iter_names()
            .filter(|(name, _)| *name != "NONE")
            .map(|(name, _)| name.to_ascii_lowercase())
            .collect()
    });
    match &g.gpm {
        Some(Ok(())) => read_gpm(nvml, g, &mut r),
        Some(Err(why)) => r.errors.push(why.clone()),
        None => {}
    }
    r
}

fn lost(index: u32) -> String {
    format!(
        "GPU {index} has fallen off the bus (NVML: GPU is lost): check `nvidia-smi` and the \
         kernel log"
    )
}

fn set_memory(r: &mut GpuReading, mem: Result<calls::Memory, NvmlError>) {
    if let Some(m) = ok(&mut r.errors, "memory", mem) {
        r.mem_used_bytes = Some(m.used);
        r.mem_reserved_bytes = m.reserved;
        r.mem_total_bytes = Some(m.total);
    }
}

/// The SM clock the GPU is set to run at: its applications clock, else its default one.
/// GeForce cards have neither.
fn app_clock(d: &Device) -> Option<u32> {
    d.applications_clock(Clock::SM)
        .or_else(|_| d.default_applications_clock(Clock::SM))
        .ok()
        .filter(|mhz| *mhz > 0)
}

/// The value, or None with `"name: why"` noted in `errors`.
fn ok<T>(errors: &mut Vec<String>, name: &str, r: Result<T, NvmlError>) -> Option<T> {
    r.map_err(|e| errors.push(format!("{name}: {e}"))).ok()
}

/// SM and tensor-core activity since the previous GPM sample (none on the first reading, nor
/// when the previous sample is too recent to compare with).
fn read_gpm<'n>(nvml: &'n Nvml, g: &mut Gpu<'n>, r: &mut GpuReading) {
    if g.gpm_prev
        .as_ref()
        .is_some_and(|(_, at)| at.elapsed() < GPM_MIN_INTERVAL)
    {
        return;
    }
    let now = match g.device.gpm_sample() {
        Ok(s) => (s, Instant::now()),
        Err(e) => {
            r.errors.push(format!("GPM: {e}"));
            return;
        }
    };
    if let Some((prev, _)) = g.gpm_prev.take() {
        let ids = [GpmMetricId::SmUtil, GpmMetricId::AnyTensorUtil];
        match nvml_wrapper::gpm::gpm_metrics_get(nvml, &prev, &now.0, &ids) {
            Ok(results) => {
                let mut values = results.into_iter().map(|m| m.ok().map(|m| m.value));
                r.sm_active_pct = values.next().flatten();
                r.tensor_active_pct = values.next().flatten();
            }
            Err(e) => r.errors.push(format!("GPM: {e}")),
        }
    }
    g.gpm_prev = Some(now);
}
