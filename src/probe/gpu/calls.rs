//! The NVML calls whose form depends on the driver's age. nvml-wrapper calls only the newest
//! form of each (`nvmlDeviceGetMemoryInfo_v2`, `..._ComputeRunningProcesses_v3`), which drivers
//! before 510 do not have, and the deprecated forms of others (`..._ClocksThrottleReasons`,
//! `..._Temperature`), which drivers from 580 deprecate. Here each is tried newest first by
//! symbol, and an older form is used where the newer one is missing or refuses its argument's
//! version.

use std::os::raw::c_uint;
use std::time::{Duration, Instant};

use nvml_wrapper::enum_wrappers::device::TemperatureSensor;
use nvml_wrapper::error::{NvmlError, nvml_sym, nvml_try};
use nvml_wrapper::{Device, Nvml};
use nvml_wrapper_sys::bindings::{
    nvmlMemory_t, nvmlReturn_enum_NVML_ERROR_INSUFFICIENT_SIZE as INSUFFICIENT_SIZE,
    nvmlReturn_enum_NVML_SUCCESS as SUCCESS, nvmlReturn_t, nvmlTemperature_t,
    nvmlTemperatureSensors_enum_NVML_TEMPERATURE_GPU as TEMPERATURE_GPU,
};

use crate::probe::GpuProcess;

/// NVML_ERROR_ARGUMENT_VERSION_MISMATCH, which nvml-wrapper has no name for.
const ARGUMENT_VERSION_MISMATCH: nvmlReturn_t = 25;

/// Whether an error means "not this form of the call": the caller tries an older one.
fn older_form_may_work(e: &NvmlError) -> bool {
    matches!(
        e,
        NvmlError::FailedToLoadSymbol(_)
            | NvmlError::FunctionNotFound
            | NvmlError::NotSupported
            | NvmlError::UnexpectedVariant(ARGUMENT_VERSION_MISMATCH)
    )
}

/// Framebuffer memory as NVML's two forms can both give it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Memory {
    /// Used including the driver's reserved memory: what the first form calls used, so the
    /// figure means the same on every driver and `used / total` is the share taken.
    pub used: u64,
    /// The reserved part, where the driver says it (the second form).
    pub reserved: Option<u64>,
    pub total: u64,
}

pub fn memory(nvml: &Nvml, d: &Device) -> Result<Memory, NvmlError> {
    let lib = nvml.lib();
    if lib.nvmlDeviceGetMemoryInfo_v2.is_ok() {
        match d.memory_info() {
            // The second form leaves reserved memory out of `used` but not out of `total`.
            Ok(m) => {
                return Ok(Memory {
                    used: m.used.saturating_add(m.reserved),
                    reserved: Some(m.reserved),
                    total: m.total,
                });
            }
            Err(e) if !older_form_may_work(&e) => return Err(e),
            Err(_) => {}
        }
    }
    let sym = nvml_sym(lib.nvmlDeviceGetMemoryInfo.as_ref())?;
    let mut m = nvmlMemory_t {
        total: 0,
        free: 0,
        used: 0,
    };
    // SAFETY: the handle is a live device of this NVML session and `m` is the struct this form
    // fills.
    nvml_try(unsafe { sym(d.handle(), &mut m) })?;
    Ok(Memory {
        used: m.used,
        reserved: None,
        total: m.total,
    })
}

/// Bytes of the largest process entry any driver writes: the 535 drivers' first `_v3` layout
/// (pid, used memory, GPU and compute instance, confidential-computing memory).
const MAX_ENTRY: usize = 32;
/// The entry with pid, used memory, GPU and compute instance (`nvmlProcessInfo_v2_t`).
const ENTRY_V2: usize = 24;
/// The first entry, pid and used memory (`nvmlProcessInfo_v1_t`).
const ENTRY_V1: usize = 16;
/// NVML's "not available" for a process's memory (all bits set).
const NOT_AVAILABLE: u64 = u64::MAX;
/// Processes start between the call that counts them and the one that lists them: room for
/// this many more is asked for, and the listing is retried this often.
const SPARE_ENTRIES: c_uint = 4;
const LIST_TRIES: usize = 3;

/// How far apart a form's entries are.
#[derive(Clone, Copy)]
enum Stride {
    Fixed(usize),
    /// The `_v3` form: 24 bytes, except on early 535 drivers, which wrote 32-byte entries
    /// into arrays sized for 24 (a known NVML defect that pynvml and go-nvml users met as
    /// garbage pids). It is measured from where the driver stopped writing.
    Measured,
}

/// The compute processes on a GPU, newest form first: `_v3`, `_v2`, then the first form.
pub fn processes(nvml: &Nvml, d: &Device) -> Result<Vec<GpuProcess>, NvmlError> {
    let lib = nvml.lib();
    // SAFETY (all three): the handle is a live device of this session; `list` passes a count
    // and a buffer with room for that many entries of the largest layout.
    let h = unsafe { d.handle() };
    if let Ok(f) = lib.nvmlDeviceGetComputeRunningProcesses_v3.as_ref() {
        match list(|n, buf| unsafe { f(h, n, buf.cast()) }, Stride::Measured) {
            Err(e) if older_form_may_work(&e) => {}
            r => return r,
        }
    }
    if let Ok(f) = lib.nvmlDeviceGetComputeRunningProcesses_v2.as_ref() {
        match list(
            |n, buf| unsafe { f(h, n, buf.cast()) },
            Stride::Fixed(ENTRY_V2),
        ) {
            Err(e) if older_form_may_work(&e) => {}
            r => return r,
        }
    }
    let f = nvml_sym(lib.nvmlDeviceGetComputeRunningProcesses.as_ref())?;
    list(
        |n, buf| unsafe { f(h, n, buf.cast()) },
        Stride::Fixed(ENTRY_V1),
    )
}

/// Counts, then lists, into a buffer filled with a marker so that the entries' stride can be
/// read from where the driver stopped writing.
fn list(
    call: impl Fn(&mut c_uint, *mut u64) -> nvmlReturn_t,
    stride: Stride,
) -> Result<Vec<GpuProcess>, NvmlError> {
    let mut count: c_uint = 0;
    let rc = call(&mut count, std::ptr::null_mut());
    if rc == SUCCESS {
        return Ok(Vec::new());
    }
    if rc != INSUFFICIENT_SIZE {
        nvml_try(rc)?;
    }
    for _ in 0..LIST_TRIES {
        let room = count.saturating_add(SPARE_ENTRIES);
        // u64 words keep the buffer aligned for the entries' 8-byte fields.
        let mut words = vec![u64::MAX; room as usize * MAX_ENTRY / 8];
        let mut n = room;
        let rc = call(&mut n, words.as_mut_ptr());
        if rc == INSUFFICIENT_SIZE {
            count = n;
            continue;
        }
        nvml_try(rc)?;
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_ne_bytes()).collect();
        let n = (n as usize).min(room as usize);
        let stride = match stride {
            Stride::Fixed(s) => s,
            Stride::Measured => measured_stride(&bytes, n),
        };
        return Ok((0..n).map(|i| entry(&bytes[i * stride..])).collect());
    }
    Err(NvmlError::InsufficientSize(Some(count as usize)))
}

/// 32 when the driver wrote past `n` 24-byte entries (the marker is gone there), else 24.
fn measured_stride(bytes: &[u8], n: usize) -> usize {
    let past = &bytes[n * ENTRY_V2..n * MAX_ENTRY];
    if past.iter().all(|b| *b == 0xFF) {
        ENTRY_V2
    } else {
        MAX_ENTRY
    }
}

/// Every layout starts with the pid (4 bytes, then 4 of padding) and the used memory.
fn entry(bytes: &[u8]) -> GpuProcess {
    let word = |at: usize, len: usize| {
        let mut b = [0u8; 8];
        b[..len].copy_from_slice(&bytes[at..at + len]);
        u64::from_ne_bytes(b)
    };
    let used = word(8, 8);
    GpuProcess {
        pid: word(0, 4) as u32,
        used_bytes: (used != NOT_AVAILABLE).then_some(used),
    }
}

/// Why the clocks are held down, as NVML's bitmask: the clocks-event form (CUDA 12.2 drivers
/// and later), else the throttle-reasons form it replaced.
pub fn clock_reasons(nvml: &Nvml, d: &Device) -> Result<u64, NvmlError> {
    let lib = nvml.lib();
    // SAFETY (both): a live handle and a u64 to fill.
    let h = unsafe { d.handle() };
    if let Ok(f) = lib.nvmlDeviceGetCurrentClocksEventReasons.as_ref() {
        let mut reasons = 0;
        match nvml_try(unsafe { f(h, &mut reasons) }) {
            Ok(()) => return Ok(reasons),
            Err(e) if !older_form_may_work(&e) => return Err(e),
            Err(_) => {}
        }
    }
    let f = nvml_sym(lib.nvmlDeviceGetCurrentClocksThrottleReasons.as_ref())?;
    let mut reasons = 0;
    nvml_try(unsafe { f(h, &mut reasons) })?;
    Ok(reasons)
}

/// The GPU's temperature in °C: the versioned form where the driver has it, else the first.
pub fn temperature(nvml: &Nvml, d: &Device) -> Result<u32, NvmlError> {
    let lib = nvml.lib();
    if let Ok(f) = lib.nvmlDeviceGetTemperatureV.as_ref() {
        let mut t = nvmlTemperature_t {
            // NVML_STRUCT_VERSION(Temperature, 1): the size, and the version in the top byte.
            version: (std::mem::size_of::<nvmlTemperature_t>() | (1 << 24)) as c_uint,
            sensorType: TEMPERATURE_GPU,
            temperature: 0,
        };
        // SAFETY: a live handle and the versioned struct this form fills.
        match nvml_try(unsafe { f(d.handle(), &mut t) }) {
            Ok(()) => return Ok(t.temperature.max(0) as u32),
            Err(e) if !older_form_may_work(&e) => return Err(e),
            Err(_) => {}
        }
    }
    d.temperature(TemperatureSensor::Gpu)
}

/// What each kind of call has cost, for the slow-tier decisions and `probe_cost`.
#[derive(Clone, Debug, Default)]
pub struct Costs {
    calls: Vec<CallCost>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CallCost {
    pub call: &'static str,
    pub count: u64,
    pub total: Duration,
    pub max: Duration,
}

impl Costs {
    /// Runs `f`, counting its time under `call`; returns its result and its time.
    pub fn time<T>(&mut self, call: &'static str, f: impl FnOnce() -> T) -> (T, Duration) {
        let start = Instant::now();
        let out = f();
        let took = start.elapsed();
        let at = match self.calls.iter().position(|c| c.call == call) {
            Some(i) => i,
            None => {
                self.calls.push(CallCost {
                    call,
                    count: 0,
                    total: Duration::ZERO,
                    max: Duration::ZERO,
                });
                self.calls.len() - 1
            }
        };
        let c = &mut self.calls[at];
        c.count += 1;
        c.total += took;
        c.max = c.max.max(took);
        (out, took)
    }

    /// Per kind of call, in the order first made.
    pub fn calls(&self) -> &[CallCost] {
        &self.calls
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A buffer as `list` fills it: the marker, then `n` entries written `stride` apart.
    fn written(entries: &[(u32, u64)], stride: usize, room: usize) -> Vec<u8> {
        let mut bytes = vec![0xFF; room * MAX_ENTRY];
        for (i, (pid, used)) in entries.iter().enumerate() {
            let at = i * stride;
            bytes[at..at + stride].fill(0);
            bytes[at..at + 4].copy_from_slice(&pid.to_ne_bytes());
            bytes[at + 8..at + 16].copy_from_slice(&used.to_ne_bytes());
        }
        bytes
    }

    #[test]
    fn the_stride_is_read_from_where_the_driver_stopped_writing() {
        let procs = [(4242, 5 << 30), (4243, 1 << 20), (4244, NOT_AVAILABLE)];
        for stride in [ENTRY_V2, MAX_ENTRY] {
            let bytes = written(&procs, stride, 7);
            assert_eq!(measured_stride(&bytes, 3), stride);
            let got: Vec<GpuProcess> = (0..3).map(|i| entry(&bytes[i * stride..])).collect();
            assert_eq!(
                got,
                [
                    GpuProcess {
                        pid: 4242,
                        used_bytes: Some(5 << 30)
                    },
                    GpuProcess {
                        pid: 4243,
                        used_bytes: Some(1 << 20)
                    },
                    GpuProcess {
                        pid: 4244,
                        used_bytes: None
                    },
                ]
            );
        }
    }

    #[test]
    fn costs_are_counted_per_call() {
        let mut c = Costs::default();
        let (v, _) = c.time("power", || 7);
        assert_eq!(v, 7);
        c.time("power", || ());
        c.time("pcie", || ());
        let calls: Vec<(&str, u64)> = c.calls().iter().map(|c| (c.call, c.count)).collect();
        assert_eq!(calls, [("power", 2), ("pcie", 1)]);
    }
}
