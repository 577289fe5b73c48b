//! The GPUs through NVML. The NVIDIA library is opened at run time, so steptop runs on a
//! machine without it and says why there are no GPU readings. Device handles are opened once
//! and kept; a call that fails marks that field, and a GPU that has fallen off the bus is a
//! reading marked failed, never an error of the run.

use std::ffi::OsStr;

use nvml_wrapper::enum_wrappers::device::{Clock, PcieUtilCounter, TemperatureSensor};
use nvml_wrapper::enums::device::UsedGpuMemory;
use nvml_wrapper::enums::gpm::GpmMetricId;
use nvml_wrapper::error::NvmlError;
use nvml_wrapper::{Device, GpmSample, Nvml};

use super::{GpuProcess, GpuReading};

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
            "no NVIDIA library ({} cannot be loaded): no NVIDIA driver on this machine, or \
             set {LIBRARY_ENV} to the library's path",
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

/// The selected GPUs of one NVML session.
pub struct GpuProbe<'n> {
    nvml: &'n Nvml,
    gpus: Vec<Gpu<'n>>,
}

struct Gpu<'n> {
    index: u32,
    name: String,
    device: Device<'n>,
    /// With `--gpm`: whether this GPU has GPM, or why not.
    gpm: Option<Result<(), String>>,
    /// The previous GPM sample: GPM metrics are the difference of two.
    gpm_prev: Option<GpmSample<'n>>,
}

impl<'n> GpuProbe<'n> {
    /// Opens the GPUs in `select` (all when None). `gpm` turns on SM and tensor-core activity
    /// where the GPU supports it.
    pub fn new(nvml: &'n Nvml, select: Option<&[u32]>, gpm: bool) -> Result<Self, String> {
        let count = nvml
            .device_count()
            .map_err(|e| format!("NVML cannot count the GPUs: {e}"))?;
        if count == 0 {
            return Err("NVML works but sees no NVIDIA GPU on this machine".into());
        }
        if let Some(bad) = select.into_iter().flatten().find(|i| **i >= count) {
            return Err(format!(
                "there is no GPU {bad}: this machine has {count} (0 to {})",
                count - 1
            ));
        }
        let mut gpus = Vec::new();
        for index in 0..count {
            if select.is_some_and(|s| !s.contains(&index)) {
                continue;
            }
            let device = nvml
                .device_by_index(index)
                .map_err(|e| format!("NVML cannot open GPU {index}: {e}"))?;
            let gpm = gpm.then(|| match device.gpm_support() {
                Ok(true) => Ok(()),
                Ok(false) | Err(NvmlError::NotSupported) => {
                    Err("GPM: not on this GPU (Hopper or newer has it)".to_string())
                }
                Err(e) => Err(format!("GPM: {e}")),
            });
            gpus.push(Gpu {
                index,
                name: device.name().unwrap_or_else(|_| format!("GPU {index}")),
                device,
                gpm,
                gpm_prev: None,
            });
        }
        Ok(GpuProbe { nvml, gpus })
    }

    /// One reading per GPU; `slow` also lists the compute processes.
    pub fn read(&mut self, slow: bool) -> Vec<GpuReading> {
        let nvml = self.nvml;
        self.gpus
            .iter_mut()
            .map(|g| read_one(nvml, g, slow))
            .collect()
    }
}

fn read_one<'n>(nvml: &'n Nvml, g: &mut Gpu<'n>, slow: bool) -> GpuReading {
    let mut r = GpuReading {
        index: g.index,
        name: g.name.clone(),
        ..GpuReading::default()
    };
    let d = &g.device;
    // Utilization first: it is the call that tells whether the GPU is there at all.
    match d.utilization_rates() {
        Ok(u) => {
            r.util_pct = Some(u.gpu);
            r.mem_util_pct = Some(u.memory);
        }
        Err(NvmlError::GpuLost) => {
            r.failed = Some(format!(
                "GPU {} has fallen off the bus (NVML: GPU is lost): check `nvidia-smi` and \
                 the kernel log",
                g.index
            ));
            return r;
        }
        Err(e) => r.errors.push(format!("utilization: {e}")),
    }
    let e = &mut r.errors;
    let mem = ok(e, "memory", d.memory_info());
    let power = ok(e, "power", d.power_usage());
    let limit = ok(e, "power limit", d.enforced_power_limit());
    let temp = ok(e, "temperature", d.temperature(TemperatureSensor::Gpu));
    let sm = ok(e, "SM clock", d.clock_info(Clock::SM));
    let sm_max = ok(e, "SM clock max", d.max_clock_info(Clock::SM));
    let throttle = ok(e, "clocks-event reasons", d.current_throttle_reasons());
    let rx = ok(e, "PCIe rx", d.pcie_throughput(PcieUtilCounter::Receive));
    let tx = ok(e, "PCIe tx", d.pcie_throughput(PcieUtilCounter::Send));
    let processes = slow
        .then(|| ok(e, "processes", d.running_compute_processes()))
        .flatten();
    r.mem_used_bytes = mem.as_ref().map(|m| m.used);
    r.mem_total_bytes = mem.as_ref().map(|m| m.total);
    r.power_w = power.map(|mw| f64::from(mw) / 1000.0);
    r.power_limit_w = limit.map(|mw| f64::from(mw) / 1000.0);
    r.temp_c = temp;
    r.sm_clock_mhz = sm;
    r.sm_clock_max_mhz = sm_max;
    r.throttle = throttle.map(|t| {
        t.iter_names()
            .filter(|(name, _)| *name != "NONE")
            .map(|(name, _)| name.to_ascii_lowercase())
            .collect()
    });
    // NVML gives PCIe throughput in KB/s.
    r.pcie_rx_bytes_per_s = rx.map(|k| u64::from(k) * 1024);
    r.pcie_tx_bytes_per_s = tx.map(|k| u64::from(k) * 1024);
    r.processes = processes.map(|ps| {
        ps.into_iter()
            .map(|p| GpuProcess {
                pid: p.pid,
                used_bytes: match p.used_gpu_memory {
                    UsedGpuMemory::Used(b) => Some(b),
                    UsedGpuMemory::Unavailable => None,
                },
            })
            .collect()
    });
    match &g.gpm {
        Some(Ok(())) => read_gpm(nvml, g, &mut r),
        Some(Err(why)) => r.errors.push(why.clone()),
        None => {}
    }
    r
}

/// The value, or None with `"name: why"` noted in `errors`.
fn ok<T>(errors: &mut Vec<String>, name: &str, r: Result<T, NvmlError>) -> Option<T> {
    r.map_err(|e| errors.push(format!("{name}: {e}"))).ok()
}

/// SM and tensor-core activity since the previous GPM sample (none on the first reading).
fn read_gpm<'n>(nvml: &'n Nvml, g: &mut Gpu<'n>, r: &mut GpuReading) {
    let now = match g.device.gpm_sample() {
        Ok(s) => s,
        Err(e) => {
            r.errors.push(format!("GPM: {e}"));
            return;
        }
    };
    if let Some(prev) = g.gpm_prev.take() {
        let ids = [GpmMetricId::SmUtil, GpmMetricId::AnyTensorUtil];
        match nvml_wrapper::gpm::gpm_metrics_get(nvml, &prev, &now, &ids) {
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
