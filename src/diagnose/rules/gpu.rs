//! What the GPUs say: starved by the host, idle for no known reason, busy (the compute is the
//! limit), or held down by their clocks. Their memory has its own file.

use super::{Needs, Rule, View, grade, p, pct};
use crate::diagnose::params::{Basis, Knobs};
use crate::diagnose::{Finding, Severity};

pub const GPU_STARVED: Rule = Rule {
    id: "gpu_starved",
    basis: Basis::Seconds,
    summary: "not data bound, yet the GPU draws a small share of its power limit while the trainer's main thread is at 100%",
    params: &[
        p(
            "power-share",
            0.30,
            "power draw over the enforced limit under which the GPU counts as starved",
        ),
        p(
            "sm-active-pct",
            30.0,
            "GPM SM activity % under which the GPU counts as starved",
        ),
        p(
            "main-thread-pct",
            90.0,
            "busiest trainer thread CPU % that counts as a busy main thread",
        ),
        p(
            "data-share",
            0.10,
            "data_time share at or above which the step counts as data bound instead",
        ),
    ],
    detail: false,
    hidden_by: &["python_hotspot"],
    needs: Needs::NOTHING,
    check: gpu_starved,
};

fn gpu_starved(v: &View, k: &Knobs) -> Option<Finding> {
    if !v.stepping() {
        return None;
    }
    let power = v.gpu_power_share();
    let sm = v.gpu_mean(|g| g.sm_active_pct);
    let low = power.is_some_and(|p| p < k.get("power-share"))
        || sm.is_some_and(|s| s < k.get("sm-active-pct"));
    let thread = v.trainer_mean(|t| t.busiest_thread_cpu_pct)?;
    let data = v.data_share();
    if !low || thread < k.get("main-thread-pct") || data.is_some_and(|d| d >= k.get("data-share")) {
        return None;
    }
    let mut f = v.enter(
        Severity::Warn,
        || "the GPU waits on the training process's Python thread",
    );
    if let Some(pw) = power {
        let own = |f: fn(&crate::model::sample::GpuReading) -> Option<f64>| {
            v.gpu_mean(|g| g.power_is_its_own().then(|| f(g))?)
                .unwrap_or(0.0)
        };
        let watts = own(|g| g.power_w);
        let limit = own(|g| g.power_limit_w);
        f = f.why(|| {
            format!(
                "the GPU draws {watts:.0} W of its {limit:.0} W limit ({})",
                pct(pw)
            )
        });
    }
    if let Some(s) = sm {
        f = f.why(|| format!("SM activity {s:.0}%"));
    }
    f = f.why(|| format!("the trainer's busiest thread is at {thread:.0}% of a core"));
    if let Some(d) = data {
        f = f.why(|| format!("data loading takes only {:.1}% of each step", d * 100.0));
    }
    if let Some(util) = v.gpu_util() {
        f = f.gain(1.0 - util / 100.0);
    }
    Some(
        f.act(|| "find the host work in the step: .item(), .cpu() or print of tensors force a sync each step")
            .act(|| "replace Python loops over tensors with batched tensor operations")
            .act(|| "torch.compile (or CUDA graphs) for many tiny kernels; a larger batch per GPU")
            .act(|| "torch.backends.cudnn.benchmark=True for fixed input shapes"),
    )
}

pub const LOW_GPU_UTIL: Rule = Rule {
    id: "low_gpu_util",
    basis: Basis::Seconds,
    summary: "low or fluctuating GPU utilization that no specific rule explains",
    params: &[
        p(
            "warn",
            50.0,
            "mean GPU utilization % under which the rule warns",
        ),
        p(
            "exit",
            60.0,
            "mean GPU utilization % above which an active alert clears",
        ),
    ],
    detail: false,
    hidden_by: &[
        "data_loading_bound",
        "loader_workers_starved",
        "input_cpu_saturated",
        "gpu_starved",
        "python_hotspot",
        "h2d_copy_bound",
        "straggler",
        "stalled",
        "crash_event",
    ],
    needs: Needs::NOTHING,
    check: low_gpu_util,
};

fn low_gpu_util(v: &View, k: &Knobs) -> Option<Finding> {
    let util = v.gpu_util()?;
    if !v.stepping() {
        return None;
    }
    let level = grade(-util, -k.get("warn"), f64::INFINITY, -k.get("exit"))?;
    let title = || format!("the GPUs are busy only {util:.0}% of the time");
    let mut f = v.graded(level, title).why(|| {
        format!(
            "mean GPU utilization {util:.0}% over the last {:.0} s",
            v.windows.seconds
        )
    });
    if let Some(swing) = v.gpu_util_swing() {
        f = f.why(|| format!("utilization ranges over {swing:.0} points"));
    }
    Some(
        f.gain(1.0 - util / 100.0)
            .act(|| "profile a few steps (torch.profiler) to see what the GPU waits for")
            .act(|| "log data_time per step so that steptop can tell input stalls from the rest"),
    )
}

pub const COMPUTE_BOUND: Rule = Rule {
    id: "compute_bound",
    basis: Basis::Steps,
    summary: "the compute is the limit: data loading takes almost nothing and the GPU, when read, is busy; without GPU readings, said as not data-bound",
    params: &[
        p(
            "data-share",
            0.02,
            "data_time share at or under which input is not the limit",
        ),
        p(
            "exit-data-share",
            0.04,
            "data_time share above which an active alert clears",
        ),
        p(
            "gpu-util",
            85.0,
            "mean GPU utilization % that counts as busy, when GPUs are read",
        ),
    ],
    detail: false,
    hidden_by: &["gpu_starved", "python_hotspot", "crash_event"],
    needs: Needs::NOTHING,
    check: compute_bound,
};

fn compute_bound(v: &View, k: &Knobs) -> Option<Finding> {
    let share = v.data_share()?;
    let step = v.step_mean()?;
    let util = v.gpu_util();
    if util.is_some_and(|u| u < k.get("gpu-util")) {
        return None;
    }
    // A GPU nobody read is not claimed busy: the log shows only that the input is not the
    // limit.
    let title = || match util {
        Some(_) => format!(
            "the GPU is the limit: data loading takes {:.1}% of each step",
            share * 100.0
        ),
        None => format!(
            "not data-bound: data loading takes {:.1}% of each step",
            share * 100.0
        ),
    };
    let mut f = if share <= k.get("data-share") {
        v.enter(Severity::Info, title)
    } else if share <= k.get("exit-data-share") {
        v.stay(title)
    } else {
        return None;
    };
    f = f.why(|| {
        format!(
            "data_time {:.2} ms of a {step:.0} ms step",
            v.data_ms().unwrap_or(0.0)
        )
    });
    f = match util {
        Some(u) => f.why(|| format!("GPU utilization {u:.0}%")),
        None if v
            .latest()
            .is_some_and(|s| s.gpus.iter().any(|g| g.mig.is_some())) =>
        {
            f.why(|| "NVML gives no GPU utilization here (MIG mode): judged from the log alone")
        }
        None if v.latest().is_some_and(|s| !s.gpus.is_empty()) => {
            f.why(|| "NVML gives no GPU utilization here: judged from the log alone")
        }
        None => f.why(|| "no GPU readings: judged from the log alone"),
    };
    if util.is_none() {
        return Some(
            f.act(|| "more data loader work will not help: the input is not the limit")
                .act(|| "see where the step's compute goes: torch.profiler over a few steps, or steptop on the machine that runs it (it reads the GPUs there)"),
        );
    }
    let facts = &v.m.facts;
    if facts.amp_dtype.is_none() {
        f = f.act(|| "bf16 autocast (torch.autocast(\"cuda\", dtype=torch.bfloat16))");
    }
    if facts.gradient_checkpointing == Some(true) {
        f = f.act(|| "checkpoint fewer layers: recomputation costs a forward pass per step");
    }
    Some(
        f.act(|| "TF32 matmuls: torch.backends.cuda.matmul.allow_tf32=True")
            .act(|| "torch.compile the model")
            .act(|| "more data loader work will not help: the input is not the limit"),
    )
}

pub const GPU_THROTTLING: Rule = Rule {
    id: "gpu_throttling",
    basis: Basis::Seconds,
    summary: "thermal, power-brake or hardware slowdown, or a busy GPU's SM clock well under its applications clock for a reason other than the power cap",
    params: &[
        p(
            "share",
            0.5,
            "share of readings with a slowdown reason that warns",
        ),
        p(
            "clock-share",
            0.8,
            "SM clock over the applications clock under which a busy GPU counts as held down",
        ),
        p(
            "busy-pct",
            50.0,
            "GPU utilization % from which the clock is judged",
        ),
    ],
    detail: false,
    hidden_by: &[],
    needs: Needs::NOTHING,
    check: gpu_throttling,
};

/// Clocks-event reasons that mean the GPU is slowed by heat or by its power delivery.
/// (The software power cap is left out: a busy GPU runs at its cap by design.)
const SLOWDOWNS: [&str; 4] = [
    "sw_thermal_slowdown",
    "hw_thermal_slowdown",
    "hw_power_brake_slowdown",
    "hw_slowdown",
];

/// Reasons that say nothing is wrong: an idle GPU lowers its clocks, and a busy one runs
/// against its power cap by design.
const BENIGN: [&str; 2] = ["gpu_idle", "sw_power_cap"];

/// Whether a reading's clocks are held by something other than the power cap or idleness.
fn held_for_a_reason(g: &crate::model::sample::GpuReading) -> bool {
    g.throttle
        .as_ref()
        .is_some_and(|t| t.iter().any(|r| !BENIGN.contains(&r.as_str())))
}

fn gpu_throttling(v: &View, k: &Knobs) -> Option<Finding> {
    let readings: Vec<&crate::model::sample::GpuReading> = v
        .samples()
        .flat_map(|s| s.gpus.iter())
        .filter(|g| g.failed.is_none())
        .collect();
    if readings.is_empty() {
        return None;
    }
    let has = |g: &crate::model::sample::GpuReading, r: &str| {
        g.throttle
            .as_ref()
            .is_some_and(|t| t.iter().any(|x| x == r))
    };
    let slowed: Vec<&str> = SLOWDOWNS
        .iter()
        .copied()
        .filter(|r| readings.iter().any(|g| has(g, r)))
        .collect();
    let share = readings
        .iter()
        .filter(|g| SLOWDOWNS.iter().any(|r| has(g, r)))
        .count() as f64
        / readings.len() as f64;
    // The clock is judged against the clock the GPU is set to run at, never its maximum: a
    // GeForce card's max boost (3090 MHz on an RTX 5090) is one it rarely holds under load,
    // and it has no applications clock, so there only the reasons speak. A low clock counts
    // only while something other than the power cap holds it.
    let busy: Vec<&&crate::model::sample::GpuReading> = readings
        .iter()
        .filter(|g| {
            g.util_pct
                .is_some_and(|u| f64::from(u) >= k.get("busy-pct"))
        })
        .filter(|g| g.sm_clock_app_mhz.is_some())
        .collect();
    let ratios: Vec<f64> = busy
        .iter()
        .filter_map(|g| Some(f64::from(g.sm_clock_mhz?) / f64::from(g.sm_clock_app_mhz?)))
        .collect();
    let clock = (!ratios.is_empty()).then(|| ratios.iter().sum::<f64>() / ratios.len() as f64);
    let reason = busy.iter().any(|g| held_for_a_reason(g));
    let held = reason && clock.is_some_and(|c| c < k.get("clock-share"));
    if share < k.get("share") && !held {
        return None;
    }
    let mut f = v.enter(Severity::Warn, || "the GPU clocks are held down");
    if !slowed.is_empty() {
        f = f.why(|| format!("{} in {} of readings", slowed.join(", "), pct(share)));
    }
    if let Some(c) = clock.filter(|_| held) {
        let reasons: Vec<&str> = readings
            .iter()
            .flat_map(|g| g.throttle.iter().flatten())
            .map(String::as_str)
            .filter(|r| !BENIGN.contains(r))
            .fold(Vec::new(), |mut all, r| {
                if !all.contains(&r) {
                    all.push(r);
                }
                all
            });
        f = f.why(|| {
            format!(
                "SM clock at {} of its applications clock while busy ({})",
                pct(c),
                reasons.join(", ")
            )
        });
    }
    if let Some(t) = v.gpu_mean(|g| g.temp_c.map(f64::from)) {
        f = f.why(|| format!("temperature {t:.0} C"));
    }
    Some(
        f.gain(clock.map_or(0.0, |c| (1.0 - c).max(0.0)))
            .act(|| "check cooling and airflow (fans, inlet temperature, dust)")
            .act(|| "check the power limit: nvidia-smi -q -d POWER,PERFORMANCE"),
    )
}
