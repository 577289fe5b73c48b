//! The GPU figures the trackers' system metrics hold, each as it goes into a reading: shares
//! and temperatures and clocks as whole numbers (as NVML gives them), memory in bytes, power
//! in watts. Each tracker names them its own way (`wandb`, `trackio`); the units are theirs
//! to convert.

use crate::model::sample::GpuReading;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum GpuFigure {
    Util,
    /// NVML's memory utilization: the share of time the memory was busy.
    MemUtil,
    MemUsedBytes,
    MemTotalBytes,
    PowerW,
    PowerLimitW,
    TempC,
    SmClockMhz,
}

/// Puts one figure into a reading.
pub fn set(g: &mut GpuReading, figure: GpuFigure, v: f64) {
    let whole = || v.round().min(f64::from(u32::MAX)) as u32;
    match figure {
        GpuFigure::Util => g.util_pct = Some(whole()),
        GpuFigure::MemUtil => g.mem_util_pct = Some(whole()),
        GpuFigure::MemUsedBytes => g.mem_used_bytes = Some(v as u64),
        GpuFigure::MemTotalBytes => g.mem_total_bytes = Some(v as u64),
        GpuFigure::PowerW => g.power_w = Some(v),
        GpuFigure::PowerLimitW => g.power_limit_w = Some(v),
        GpuFigure::TempC => g.temp_c = Some(whole()),
        GpuFigure::SmClockMhz => g.sm_clock_mhz = Some(whole()),
    }
}
