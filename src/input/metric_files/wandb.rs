//! W&B's `run-<id>.wandb`: the transaction log a run writes while it goes (LevelDB's log
//! framing, `leveldb_log`), whose records are protobuf `Record`s. Read here: the history
//! rows (one entry each, at its `_timestamp`), the system metrics W&B sampled (GPU figures
//! become hardware samples on the run's own clock), the config (batch size, workers) and
//! the run's exit. The messages are derived in Rust for the few fields read (the field
//! numbers are W&B's `wandb_internal.proto`), so no protoc is needed and other records are
//! skipped unread.
//!
//! What real files hold, across W&B's versions: a history item's name is in `key` (older
//! writers) or in `nested_key` (newer ones, one part for a plain name); values are JSON text;
//! `_step` is W&B's row counter, not the training step, which is a history key of its own
//! where a framework logs one (`train/global_step`); one system sample may arrive as several
//! stats records a moment apart.

use std::collections::BTreeMap;

use prost::Message;

use super::gpu_figure::{GpuFigure, set};
use super::leveldb_log;
use super::{Entry, Read};
use crate::model::sample::{GpuReading, HostReading, Sample, TRACKER_SOURCE};
use crate::parse::record::ConfigFact;

#[derive(Clone, PartialEq, Message)]
pub struct Record {
    #[prost(message, optional, tag = "2")]
    pub history: Option<HistoryRecord>,
    #[prost(message, optional, tag = "5")]
    pub config: Option<ConfigRecord>,
    #[prost(message, optional, tag = "7")]
    pub stats: Option<StatsRecord>,
    #[prost(message, optional, tag = "17")]
    pub run: Option<RunRecord>,
    #[prost(message, optional, tag = "18")]
    pub exit: Option<ExitRecord>,
}

#[derive(Clone, PartialEq, Message)]
pub struct HistoryRecord {
    #[prost(message, repeated, tag = "1")]
    pub item: Vec<Item>,
}

/// A history, config or stats item: a name (in `key`, or in parts in `nested_key`) and its
/// value as JSON text.
#[derive(Clone, PartialEq, Message)]
pub struct Item {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(string, repeated, tag = "2")]
    pub nested_key: Vec<String>,
    #[prost(string, tag = "16")]
    pub value_json: String,
}

impl Item {
    fn name(&self) -> String {
        if self.key.is_empty() {
            self.nested_key.join(".")
        } else {
            self.key.clone()
        }
    }
}

#[derive(Clone, PartialEq, Message)]
pub struct ConfigRecord {
    #[prost(message, repeated, tag = "1")]
    pub update: Vec<Item>,
}

#[derive(Clone, PartialEq, Message)]
pub struct StatsRecord {
    #[prost(message, optional, tag = "2")]
    pub timestamp: Option<Timestamp>,
    #[prost(message, repeated, tag = "3")]
    pub item: Vec<Item>,
}

#[derive(Clone, Copy, PartialEq, Message)]
pub struct Timestamp {
    #[prost(int64, tag = "1")]
    pub seconds: i64,
    #[prost(int32, tag = "2")]
    pub nanos: i32,
}

#[derive(Clone, PartialEq, Message)]
pub struct RunRecord {
    #[prost(message, optional, tag = "4")]
    pub config: Option<ConfigRecord>,
}

#[derive(Clone, Copy, PartialEq, Message)]
pub struct ExitRecord {
    #[prost(int32, tag = "1")]
    pub exit_code: i32,
}

/// The ident a `.wandb` file begins with.
pub const IDENT: &[u8] = b":W&B";

/// Stats records this close to a sample's first are parts of it (W&B may write one reading in
/// several records a moment apart).
const SAME_SAMPLE_S: f64 = 1.0;

/// The GPUs as the run's folder describes them (`files/wandb-metadata.json`): names and
/// memory, which the stats records do not carry.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Machine {
    pub gpus: Vec<(String, Option<u64>)>,
    /// The host's CPUs (`cpu_count`), where its system metrics do not list each core.
    pub cpus: Option<u32>,
}

/// The GPUs of a run's `wandb-metadata.json`: a list of devices (`gpu_nvidia` in newer
/// versions, memory as a string of bytes; `gpu_devices` in older ones), or else a name and a
/// count (`gpu`, `gpu_count`).
pub fn machine(meta: &serde_json::Value) -> Machine {
    let cpus = ["cpu_count_logical", "cpu_count"]
        .iter()
        .find_map(|k| meta.get(*k).and_then(|c| c.as_u64()))
        .and_then(|c| u32::try_from(c).ok());
    let bytes = |v: &serde_json::Value| match v {
        serde_json::Value::String(s) => s.parse::<u64>().ok(),
        v => v.as_u64(),
    };
    let listed = ["gpu_nvidia", "gpu_devices"]
        .iter()
        .find_map(|k| meta.get(*k).and_then(|v| v.as_array()));
    if let Some(list) = listed {
        let gpus = list
            .iter()
            .map(|g| {
                let name = g.get("name").and_then(|n| n.as_str()).unwrap_or_default();
                let total = ["memoryTotal", "memory_total"]
                    .iter()
                    .find_map(|k| g.get(*k).and_then(bytes));
                (name.to_string(), total)
            })
            .collect();
        return Machine { gpus, cpus };
    }
    let name = meta.get("gpu").and_then(|n| n.as_str()).unwrap_or_default();
    let count = meta.get("gpu_count").and_then(|c| c.as_u64()).unwrap_or(0);
    Machine {
        gpus: (0..count.min(1024))
            .map(|_| (name.to_string(), None))
            .collect(),
        cpus,
    }
}

/// Reads a whole `.wandb` file: its history rows as entries, its GPU figures as samples, its
/// config as one entry before the first row.
pub fn read(bytes: &[u8], machine: &Machine, file: &str) -> Read {
    let mut out = Read::default();
    if leveldb_log::ident(bytes) != Some(IDENT) {
        out.problems
            .push("byte 0: not a W&B run file (it does not begin with `:W&B`)".into());
        return out;
    }
    let framed = leveldb_log::records(bytes, 0);
    let mut reader = Reader::new(machine.clone());
    for (offset, data) in &framed.records {
        reader.record(*offset, data, &mut out);
    }
    out.problems.extend(framed.problems);
    out.problems
        .extend(super::torn_tail(framed.consumed, bytes.len()));
    reader.finish(&mut out, file);
    out
}

/// Records into entries and samples, in file order; kept between passes over a file that
/// grows (a pending sample's parts may come in the next pass).
#[derive(Debug, Default)]
pub struct Reader {
    machine: Machine,
    /// The sample being gathered from its stats records.
    pending: Option<Pending>,
    /// The times of the samples made so far: their spacing is the sampling interval.
    sample_times: Vec<f64>,
}

/// A sample's parts read so far: how many entries came before its first part, the GPUs,
/// the host's figures, and the names read (a name read again is the next sample's).
#[derive(Debug, Default)]
struct Pending {
    at: usize,
    time: f64,
    /// The time of the part that held the GPUs: the sample's time once there is one.
    gpu_time: Option<f64>,
    gpus: BTreeMap<u32, GpuReading>,
    host: HostParts,
    names: Vec<String>,
}

/// The host's figures of one sample as W&B names them: each core's busy share
/// (`cpu.<i>.cpu_percent`), the share of memory in use (`memory_percent`, `memory` before
/// 0.18) and the memory available (`proc.memory.availableMB`). W&B's `cpu` alone is left: its
/// meaning changed between versions (the host's, then the process's).
#[derive(Debug, Default)]
struct HostParts {
    per_cpu: BTreeMap<u32, f64>,
    mem_pct: Option<f64>,
    available_mb: Option<f64>,
}

impl HostParts {
    fn read(&mut self, name: &str, v: f64) -> bool {
        if let Some(core) = name
            .strip_prefix("cpu.")
            .and_then(|r| r.strip_suffix(".cpu_percent"))
            .and_then(|i| i.parse().ok())
        {
            self.per_cpu.insert(core, v);
            return true;
        }
        match name {
            "memory_percent" | "memory" => self.mem_pct = Some(v),
            "proc.memory.availableMB" => self.available_mb = Some(v),
            _ => return false,
        }
        true
    }

    /// The host's reading, when its memory is known (both its share in use and what is
    /// available: the total follows from them).
    fn reading(&self, cpus: Option<u32>) -> Option<HostReading> {
        let (pct, available_mb) = (self.mem_pct?, self.available_mb?);
        if !(0.0..100.0).contains(&pct) {
            return None;
        }
        let available = available_mb * 1024.0 * 1024.0;
        let total = available / (1.0 - pct / 100.0);
        let per_cpu_pct: Vec<f64> = self.per_cpu.values().copied().collect();
        let cpu_pct = (!per_cpu_pct.is_empty())
            .then(|| per_cpu_pct.iter().sum::<f64>() / per_cpu_pct.len() as f64);
        Some(HostReading {
            cpus: u32::try_from(per_cpu_pct.len())
                .ok()
                .filter(|n| *n > 0)
                .or(cpus)
                .unwrap_or(0),
            cpu_pct,
            per_cpu_pct,
            mem_total_bytes: total as u64,
            mem_available_bytes: available as u64,
            mem_used_bytes: (total - available) as u64,
            ..HostReading::default()
        })
    }
}

impl Reader {
    pub fn new(machine: Machine) -> Reader {
        Reader {
            machine,
            ..Reader::default()
        }
    }

    /// One record into `out`: a history row as an entry, a config as config facts, a stats
    /// record into the sample it is part of.
    pub fn record(&mut self, offset: u64, data: &[u8], out: &mut Read) {
        let record = match Record::decode(data) {
            Ok(r) => r,
            Err(e) => {
                out.problems
                    .push(format!("byte {offset}: not a W&B record ({e})"));
                return;
            }
        };
        if let Some(h) = record.history {
            out.entries.push(history_entry(&h));
        }
        let config = record.config.or_else(|| record.run.and_then(|r| r.config));
        if let Some(c) = config {
            let facts = config_facts(&c);
            if !facts.is_empty() {
                out.entries.push(Entry {
                    config: facts,
                    ..Entry::default()
                });
            }
        }
        if let Some(s) = record.stats {
            self.stats(&s, out);
        }
    }

    /// A stats record: the GPU and host figures it holds, into the sample gathered at its
    /// time.
    fn stats(&mut self, s: &StatsRecord, out: &mut Read) {
        let Some(ts) = s.timestamp else { return };
        let time = ts.seconds as f64 + f64::from(ts.nanos) / 1e9;
        let mut gpus: BTreeMap<u32, GpuReading> = BTreeMap::new();
        let mut host = HostParts::default();
        let mut names = Vec::new();
        for item in &s.item {
            let name = item.name();
            let Ok(v) = item.value_json.trim().parse::<f64>() else {
                continue;
            };
            if !v.is_finite() || v < 0.0 {
                continue;
            }
            if let Some((index, figure)) = gpu_figure(&name) {
                let g = gpus.entry(index).or_insert_with(|| self.gpu(index));
                set(g, figure, v);
            } else if !host.read(&name, v) {
                continue;
            }
            names.push(name);
        }
        if names.is_empty() {
            return;
        }
        let part_of_pending = self.pending.as_ref().is_some_and(|p| {
            (time - p.time).abs() < SAME_SAMPLE_S && names.iter().all(|n| !p.names.contains(n))
        });
        if !part_of_pending {
            self.flush(out);
            self.pending = Some(Pending {
                at: out.entries.len(),
                time,
                ..Pending::default()
            });
        }
        if let Some(p) = &mut self.pending {
            if !gpus.is_empty() {
                p.gpu_time = Some(time);
            }
            p.gpus.extend(gpus);
            p.host.per_cpu.extend(host.per_cpu);
            p.host.mem_pct = host.mem_pct.or(p.host.mem_pct);
            p.host.available_mb = host.available_mb.or(p.host.available_mb);
            p.names.extend(names);
        }
    }

    /// A GPU as the machine describes it, with no figures yet.
    fn gpu(&self, index: u32) -> GpuReading {
        let (name, total) = self
            .machine
            .gpus
            .get(index as usize)
            .cloned()
            .unwrap_or_default();
        GpuReading {
            index,
            name,
            mem_total_bytes: total,
            ..GpuReading::default()
        }
    }

    fn flush(&mut self, out: &mut Read) {
        if let Some(p) = self.pending.take() {
            let sample = Sample {
                time: p.gpu_time.unwrap_or(p.time),
                gpus: p.gpus.into_values().collect(),
                host: p.host.reading(self.machine.cpus),
                ..Sample::default()
            };
            if sample.gpus.is_empty() && sample.host.is_none() {
                return;
            }
            self.sample_times.push(sample.time);
            out.samples.push((p.at, sample));
        }
    }

    /// The last sample out, and a note on each that has GPUs saying where they came from.
    pub fn finish(&mut self, out: &mut Read, file: &str) {
        self.flush(out);
        let note = source_note(file, &self.sample_times);
        for (_, s) in &mut out.samples {
            if !s.gpus.is_empty() {
                s.gpu_notes = vec![note.clone()];
            }
        }
    }
}

/// Where a run's GPU figures came from, and how often they were read.
fn source_note(file: &str, times: &[f64]) -> String {
    let mut gaps: Vec<f64> = times.windows(2).map(|w| w[1] - w[0]).collect();
    gaps.sort_by(f64::total_cmp);
    match gaps.get(gaps.len() / 2) {
        Some(gap) => {
            format!("{TRACKER_SOURCE}W&B every {gap:.0} s ({file})")
        }
        None => format!("{TRACKER_SOURCE}W&B ({file})"),
    }
}

/// One history row: W&B's own `_step`, `_runtime` and `_timestamp` give its place and time;
/// the rest are the run's figures. A training step logged as a figure of its own
/// (`train/global_step`) is the step; else W&B's row counter is.
fn history_entry(h: &HistoryRecord) -> Entry {
    let mut e = Entry::default();
    let mut row = None;
    // The surest step name of the row, with its value.
    let mut step: Option<(u8, u64)> = None;
    for item in &h.item {
        let name = item.name();
        let Ok(v) = item.value_json.trim().parse::<f64>() else {
            continue;
        };
        let whole = (v >= 0.0 && v.fract() == 0.0).then_some(v as u64);
        match (name.as_str(), super::tags::step_rank(&name), whole) {
            ("_timestamp", ..) => e.time = Some(v),
            ("_step", ..) => row = whole,
            ("_runtime", ..) => {}
            (_, Some(rank), Some(n)) => {
                if step.is_none_or(|(surest, _)| rank < surest) {
                    step = Some((rank, n));
                }
            }
            _ => e.values.push((name, v)),
        }
    }
    e.step = step.map(|(_, n)| n).or(row);
    e
}

/// The config's facts steptop reads (batch size, workers, ...): W&B stores each value as
/// `{"value": 32}` (with a description) or plainly.
fn config_facts(c: &ConfigRecord) -> Vec<(String, ConfigFact)> {
    let mut facts = Vec::new();
    for item in &c.update {
        let name = item.name();
        let Ok(json) = serde_json::from_str::<serde_json::Value>(&item.value_json) else {
            continue;
        };
        let value = json.get("value").unwrap_or(&json);
        collect_facts(&name, value, &mut facts);
    }
    facts
}

/// Facts from one config value, and from the values nested in it (`{"data": {"batch_size":
/// 32}}`), each by its own name.
pub(super) fn collect_facts(
    name: &str,
    value: &serde_json::Value,
    out: &mut Vec<(String, ConfigFact)>,
) {
    match value {
        serde_json::Value::Object(map) => {
            for (k, v) in map {
                collect_facts(k, v, out);
            }
        }
        serde_json::Value::Number(_)
        | serde_json::Value::Bool(_)
        | serde_json::Value::String(_) => {
            let text = match value {
                serde_json::Value::String(s) => s.clone(),
                v => v.to_string(),
            };
            out.extend(super::config_fact(name, &text));
        }
        _ => {}
    }
}

/// The GPU figures W&B's system metrics name `gpu.<i>.<figure>` (its per-process view,
/// `gpu.process.<i>.*`, repeats them and is left).
fn gpu_figure(name: &str) -> Option<(u32, GpuFigure)> {
    let rest = name.strip_prefix("gpu.")?;
    let (index, figure) = rest.split_once('.')?;
    let index: u32 = index.parse().ok()?;
    let figure = match figure {
        "gpu" => GpuFigure::Util,
        "memory" => GpuFigure::MemUtil,
        "memoryAllocatedBytes" => GpuFigure::MemUsedBytes,
        "powerWatts" => GpuFigure::PowerW,
        "enforcedPowerLimitWatts" => GpuFigure::PowerLimitW,
        "temp" => GpuFigure::TempC,
        "smClock" => GpuFigure::SmClockMhz,
        _ => return None,
    };
    Some((index, figure))
}
