//! Host memory: pressure with its time to exhaustion, and DataLoader workers that each hold a
//! copy of what they should share.

use super::{Needs, Rule, View, gib, grade, p, pct};
use crate::common::units::count;
use crate::diagnose::params::{Basis, Knobs};
use crate::diagnose::{Finding, Severity};
use crate::model::LogMemory;
use crate::parse::record::EventKind;

pub const HOST_MEMORY_PRESSURE: Rule = Rule {
    id: "host_memory_pressure",
    basis: Basis::Seconds,
    summary: "host memory available low, swap-ins, or a memory warning in the log; with time to exhaustion",
    params: &[
        p(
            "warn",
            0.10,
            "available share of host memory under which the rule warns",
        ),
        p("crit", 0.05, "available share under which it is critical"),
        p(
            "exit",
            0.15,
            "available share above which an active alert clears",
        ),
        p("swap-in", 100.0, "swap-ins per second (pages) that warn"),
        p(
            "oom-minutes",
            30.0,
            "time to exhaustion (minutes) at the current trend that warns",
        ),
        p(
            "oom-used",
            0.5,
            "used share of host memory from which the time to exhaustion is judged",
        ),
    ],
    detail: false,
    hidden_by: &[],
    needs: Needs::NOTHING,
    check: host_memory_pressure,
};

/// Host memory as one reading: from the probe, else from the log's own memory monitor.
struct HostMemory<'a> {
    total: f64,
    avail: f64,
    /// Change of available memory, bytes per second (negative: falling).
    trend: Option<f64>,
    /// The log's reading the figures come from (None: the probe's), for the evidence.
    from_log: Option<&'a LogMemory>,
}

const MIB: f64 = (1 << 20) as f64;

fn host_memory<'a>(v: &View<'a>) -> Option<HostMemory<'a>> {
    if let Some(h) = v.host() {
        let total = h.mem_total_bytes as f64;
        return (total > 0.0).then(|| HostMemory {
            total,
            avail: h.mem_available_bytes as f64,
            trend: v.slope(|s| Some(s.host.as_ref()?.mem_available_bytes as f64)),
            from_log: None,
        });
    }
    let last = v.log_memory().last()?;
    let r = &last.reading;
    let total = r.system_total_mb.filter(|t| *t > 0.0)? * MIB;
    let used = r.system_used_mb? * MIB;
    Some(HostMemory {
        total,
        avail: (total - used).max(0.0),
        trend: v
            .log_memory_slope(|r| r.system_used_mb)
            .map(|mib| -mib * MIB),
        from_log: Some(last),
    })
}

fn host_memory_pressure(v: &View, k: &Knobs) -> Option<Finding> {
    let h = host_memory(v)?;
    let (total, avail) = (h.total, h.avail);
    let share = avail / total;
    // Lower is worse: graded on the used share.
    let level = grade(
        1.0 - share,
        1.0 - k.get("warn"),
        1.0 - k.get("crit"),
        1.0 - k.get("exit"),
    );
    let swap = v.host_mean(|h| h.swap_in_pages_per_s).unwrap_or(0.0);
    let trend = h.trend;
    let minutes = trend
        .filter(|t| *t < 0.0)
        .map(|t| avail / -t / 60.0)
        .filter(|m| m.is_finite());
    let logged =
        v.m.steps_since(&[EventKind::MemoryCritical])
            .is_some_and(|s| s == 0);
    let soon = minutes.is_some_and(|m| m <= k.get("oom-minutes"));
    // A falling trend counts once memory is well used: a run that loads its data at start
    // falls fast from an empty machine and levels off.
    let soon = soon && 1.0 - share >= k.get("oom-used");
    let other = swap >= k.get("swap-in") || logged || soon;
    let level = match (level, other) {
        (Some(Some(s)), _) => Some(s),
        (_, true) => Some(Severity::Warn),
        (Some(None), false) => None,
        (None, false) => return None,
    };
    let title = || match minutes {
        Some(m) => format!(
            "host memory {} used; at this rate it runs out in {m:.0} min",
            pct(1.0 - share)
        ),
        None => format!("host memory {} used", pct(1.0 - share)),
    };
    let mut f = v.graded(level, title).why(|| match h.from_log {
        Some(last) => {
            let at = match last.step {
                Some(step) => format!("step {step}"),
                None => format!("line {}", last.line),
            };
            format!(
                "{} used of {} (the log's memory monitor, {at})",
                gib(total - avail),
                gib(total)
            )
        }
        None => format!("{} available of {}", gib(avail), gib(total)),
    });
    if let Some(r) = h.from_log.map(|l| &l.reading)
        && let Some(p) = r.process_mb
    {
        f = f.why(|| match r.process_pct {
            Some(pct) => format!("the training process holds {} ({pct:.1}%)", gib(p * MIB)),
            None => format!("the training process holds {}", gib(p * MIB)),
        });
    }
    if let Some(t) = trend.filter(|t| *t < 0.0) {
        f = f.why(|| {
            format!(
                "available memory falls by {:.0} MiB per minute",
                -t * 60.0 / f64::from(1 << 20)
            )
        });
    }
    if swap > 0.0 {
        f = f.why(|| format!("{swap:.0} pages swapped in per second"));
    }
    if logged {
        f = f.why(|| "the log warns that memory is critical");
    }
    Some(
        f.act(||
            "find what grows: steptop probe shows the trainer's and each worker's private memory",
        )
        .act(|| "fewer DataLoader workers, or a cache shared between them"),
    )
}

pub const WORKER_MEMORY_BLOWUP: Rule = Rule {
    id: "worker_memory_blowup",
    basis: Basis::Seconds,
    summary: "DataLoader workers each hold a large, similar amount of private memory (a copy each), or it grows",
    params: &[
        p(
            "private-gib",
            1.0,
            "mean private memory per worker (GiB) that counts as large",
        ),
        p(
            "spread",
            1.5,
            "largest over smallest worker private memory under which they count as equal copies",
        ),
        p(
            "growth-mib-per-min",
            100.0,
            "growth of the workers' total private memory (MiB/min) that warns",
        ),
    ],
    detail: false,
    hidden_by: &[],
    needs: Needs::NOTHING,
    check: worker_memory_blowup,
};

fn worker_memory_blowup(v: &View, k: &Knobs) -> Option<Finding> {
    let Some(t) = v.trainer() else {
        return outside_growth(v, k);
    };
    let private: Vec<f64> = t
        .workers
        .iter()
        .filter_map(|w| w.private_bytes.map(|b| b as f64))
        .collect();
    if private.len() < 2 {
        return None;
    }
    let total: f64 = private.iter().sum();
    let mean = total / private.len() as f64;
    let max = private.iter().copied().fold(0.0, f64::max);
    let min = private.iter().copied().fold(f64::INFINITY, f64::min);
    let copies = mean >= k.get("private-gib") * f64::from(1 << 30)
        && min > 0.0
        && max / min <= k.get("spread");
    let growth = v
        .slope(|s| Some(s.trainer.as_ref()?.workers_private_bytes? as f64))
        .map(|b| b * 60.0 / f64::from(1 << 20));
    let growing = growth.is_some_and(|g| g >= k.get("growth-mib-per-min"));
    if !copies && !growing {
        return None;
    }
    let n = private.len();
    let title = || {
        if copies {
            format!(
                "each of {} holds its own {} copy",
                count(n as f64, "DataLoader worker"),
                gib(mean)
            )
        } else {
            format!(
                "the memory of {} keeps growing",
                count(n as f64, "DataLoader worker")
            )
        }
    };
    let mut f = v.enter(Severity::Warn, title).why(|| {
        format!(
            "{} {} {} private memory each ({} together)",
            count(n as f64, "worker"),
            if n == 1 { "holds" } else { "hold" },
            gib(mean),
            gib(total)
        )
    });
    if let Some(g) = growth.filter(|g| *g > 0.0) {
        f = f.why(|| format!("their private memory grows by {g:.0} MiB per minute"));
    }
    if let Some(h) = v.host() {
        f = f.why(|| {
            format!(
                "host memory {} used",
                pct(1.0 - h.mem_available_bytes as f64 / h.mem_total_bytes.max(1) as f64)
            )
        });
    }
    Some(
        f.act(|| "keep the cache in shared memory (numpy memmap, torch tensors in shared memory, LMDB) instead of a Python object per worker")
            .act(|| "build read-only data before the workers fork, as numpy arrays: Python lists of objects get copied by refcount writes")
            .act(|| "fewer workers, or persistent_workers=True so that caches are not rebuilt each epoch"),
    )
}

/// Without the probe, the log's memory monitor: when the machine's memory grows much faster
/// than the training process's own figure, the growth is in other processes, its DataLoader
/// workers most likely (each with its copy of a cache).
fn outside_growth(v: &View, k: &Knobs) -> Option<Finding> {
    if v.m.facts.num_workers == Some(0) {
        return None;
    }
    let mut readings = v
        .log_memory()
        .filter(|r| r.reading.system_used_mb.is_some() && r.reading.process_mb.is_some());
    let first = readings.next()?;
    let last = readings.last()?;
    let minutes = (last.time - first.time) / 60.0;
    if minutes <= 0.0 {
        return None;
    }
    let delta = |f: fn(&crate::parse::record::HostMemRecord) -> Option<f64>| {
        Some(f(&last.reading)? - f(&first.reading)?)
    };
    let system = delta(|r| r.system_used_mb)?;
    let process = delta(|r| r.process_mb)?;
    let outside = system - process.max(0.0);
    let rate = outside / minutes;
    if rate < k.get("growth-mib-per-min") || outside < 3.0 * process.max(0.0) {
        return None;
    }
    Some(
        v.enter(Severity::Warn, || {
            format!("memory outside the training process grows {rate:.0} MiB/min: DataLoader workers' copies?")
        })
        .why(|| {
            let steps = match (first.step, last.step) {
                (Some(a), Some(b)) => format!("steps {a}..{b}"),
                _ => format!("lines {}..{}", first.line, last.line),
            };
            format!(
                "the log's memory monitor, {steps}: the machine uses {} more, the training process {} more",
                gib(system * MIB),
                gib(process * MIB)
            )
        })
        .why(|| match v.m.facts.num_workers {
            Some(n) => format!(
                "{} per process, each a copy-on-write fork",
                count(f64::from(n), "DataLoader worker")
            ),
            None => "DataLoader workers are forks: what each one writes it copies".to_string(),
        })
        .act(|| "run steptop next to the job (or steptop probe) to read each worker's private memory")
        .act(|| "keep the cache in shared memory (numpy memmap, torch tensors in shared memory, LMDB) instead of a Python object per worker")
        .act(|| "fewer workers, or a cache size per worker that fits them all"),
    )
}
