//! The metrics model: every record, stamped with its time, folded into bounded state. No I/O and
//! no clock of its own, so the same records always give the same model. Besides the records
//! (`parse`) it holds what the monitor brings it: the probes' readings (`sample`), the log
//! pane's lines (`log_lines`) and what was read of each source (`source_stats`, with the
//! `unparsed` lines by shape).

pub mod baseline;
pub mod basis;
pub mod batch;
pub mod breakdown;
pub mod cache;
pub mod clock;
pub mod counters;
pub mod coverage;
pub mod hardware;
pub mod job;
pub mod log_lines;
pub mod meaning;
pub mod rank_state;
pub mod ranks;
pub mod runs;
pub mod sample;
pub mod source_stats;
pub mod stacks;
pub mod stages;
pub mod step_map;
pub mod timeline;
pub mod timing;
pub mod unparsed;
pub mod window;

use std::collections::{BTreeMap, HashMap, VecDeque};

use crate::common::int_hash::IntHash;
use crate::model::log_lines::{LineKind, LogLines};
use crate::parse::record::{
    ConfigFact, Counter, EventKind, HostMemRecord, PhaseTimers, Record, StepRecord, SummaryRecord,
};
use basis::{Basis, Ways};
use batch::Batches;
use cache::CacheState;
use counters::{Counted, Counters};
use hardware::{GpuChange, Hardware};
use rank_state::RankState;
use runs::{RUNS_KEPT, RunSummary};
use stages::{Stages, StepFacts};
use timeline::Timeline;

/// Where and when a record was written.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Stamp {
    /// Seconds since the Unix epoch (or a synthetic timeline; see `real_time`).
    pub time: f64,
    /// True when `time` is the log's own timestamp or a live arrival time; false for a timeline
    /// made up from logged step times, which must not be read back as step times.
    pub real_time: bool,
    /// True when `time` is the line's arrival, the log having printed no time of its own: then
    /// the gap between two lines is as much when steptop read them as when they were written.
    pub arrived: bool,
    pub source: usize,
    pub line: u64,
    pub rank: u32,
}

/// The source index of events the hardware samples raised: they have no file and no line.
pub const HARDWARE_SOURCE: usize = usize::MAX;

/// Replaces a value only with a known one: a line that omits a figure does not erase it.
pub(crate) fn keep_latest<T>(slot: &mut Option<T>, v: Option<T>) {
    if v.is_some() {
        *slot = v;
    }
}

/// Sizes of the model's windows, and whether it keeps what only a chart or the log pane reads.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ModelConfig {
    /// Steps in the recent window (p50/p95/mean, data share, ETA).
    pub window_steps: usize,
    /// Whether the run's figures keep their chart series: the live view and the HTML pages
    /// draw them; a report or comparison in text, markdown or JSON reads none (on a long run
    /// they were a tenth of the monitor thread's time).
    pub charts: bool,
    /// Whether the log pane's last lines are kept: only the live view shows them; elsewhere
    /// the model keeps the few a rule quotes.
    pub pane: bool,
}

impl ModelConfig {
    /// As a report or comparison reads a run: chart series only for a `page` (HTML), and no
    /// log pane, which none of them shows.
    pub fn summary(self, page: bool) -> ModelConfig {
        ModelConfig {
            charts: page,
            pane: false,
            ..self
        }
    }
}

impl Default for ModelConfig {
    fn default() -> Self {
        ModelConfig {
            window_steps: 100,
            charts: true,
            pane: true,
        }
    }
}

/// An event as the report lists it.
#[derive(Clone, Debug, PartialEq)]
pub struct EventEntry {
    pub kind: EventKind,
    pub source: usize,
    pub line: u64,
    pub time: f64,
    pub text: String,
}

/// One memory monitor reading of the log, with where it came from.
#[derive(Clone, Debug, PartialEq)]
pub struct LogMemory {
    pub time: f64,
    pub step: Option<u64>,
    pub line: u64,
    pub reading: HostMemRecord,
}

/// Memory monitor readings kept: a trend needs a few dozen.
const LOG_MEMORY_KEPT: usize = 128;

/// Events kept in full; later ones are only counted, so memory stays bounded.
const EVENTS_KEPT: usize = 200;
/// The latest events kept with the step they came at, for rules that count recent ones.
const RECENT_EVENTS: usize = 64;

/// Everything steptop knows about the run.
#[derive(Clone, Debug)]
pub struct Model {
    pub cfg: ModelConfig,
    /// Boxed: a rank's state is two KiB, and a map's node holds eleven values.
    pub ranks: BTreeMap<u32, Box<RankState>>,
    /// Earlier runs' rank states, cleared, for this run's ranks.
    spare_ranks: rank_state::SpareRanks,
    /// Every rank's steps together.
    pub merged: RankState,
    pub stages: Stages,
    pub cache: CacheState,
    pub host_mem: Option<HostMemRecord>,
    pub events: Vec<EventEntry>,
    /// Events, each counted once: an evaluation, a checkpoint or an epoch end that a log
    /// prints over many lines (260 `Iter(val)` lines, 1,540 redraws of an eval bar) is one,
    /// from its first line to the next training step.
    pub event_counts: BTreeMap<EventKind, u64>,
    /// The boundaries (eval, checkpoint, epoch end) under way: seen since the last step.
    open_boundaries: Vec<EventKind>,
    /// The latest events, oldest first, each with the last step seen when it came.
    pub recent_events: VecDeque<(EventKind, Option<u64>)>,
    pub batches: Batches,
    pub facts: Facts,
    pub summary: SummaryRecord,
    /// The memory monitor's readings (`[Step N] Memory - Process: ..., System: ...`), oldest
    /// first, bounded: evidence for the memory rules when there are no probe readings.
    pub log_memory: VecDeque<LogMemory>,
    /// Memory monitor readings ever taken.
    log_memory_readings: u64,
    /// Step records from step lines, and progress marks (`[Step N]` prefixes) taken as steps
    /// while there were none.
    line_steps: u64,
    marks: u64,
    /// Whether a step line gave a step time, or a data time: then timing blocks' whole-step
    /// totals are not taken as step times too.
    line_step_times: bool,
    line_data_times: bool,
    /// Whether a step line named its step and timed it: then a timed line that names none is
    /// another loop's (a feature extraction's `[ 10/79]  time: 0.18  data: 0.09`), no step.
    stepped_times: bool,
    /// Whether any record carried a real time (the log's own or an arrival).
    real_time: bool,
    /// The step times derived so far, added up once per step: a clock for logs that have
    /// neither timestamps nor logged step times (only rates).
    step_clock_s: f64,
    pub last_time: Option<f64>,
    /// This machine's clock, as the samples and the live loop's ticks read it.
    pub wall: clock::WallClock,
    /// Whether the records being applied arrived live (a followed file's new lines), rather
    /// than being in a file when steptop read it: set by the monitor for each line.
    pub arriving: bool,
    pub hardware: Hardware,
    /// The trainer's Python stacks, sampled.
    pub stacks: stacks::Stacks,
    pub timeline: Timeline,
    /// The last lines of the logs as delivered in messages (live runs and recordings),
    /// cleaned: the log pane shows them, and a crashed run's alert quotes what it said last.
    pub log: LogLines,
    /// How each file's ranks count their steps, to make them the run's global steps.
    counters: HashMap<(usize, u32), Counters, IntHash>,
    /// How the run's step times and rates were had.
    pub basis: Basis,
    /// Runs that ended before this one in the same file, oldest first (at most `RUNS_KEPT`).
    pub runs: Vec<RunSummary>,
    /// Earlier runs past `RUNS_KEPT`, only counted.
    pub runs_dropped: u64,
    /// The file and the first and last line of this run's step records.
    pub run_lines: Option<(usize, u64, u64)>,
}

/// The training setup as the logs state it.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct Facts {
    pub num_workers: Option<u32>,
    /// The batch size the log states: one process's where it says so, else the global one.
    pub batch_size: Option<u32>,
    /// Samples per optimizer step of the whole job, as the log states it.
    pub global_batch: Option<u32>,
    pub grad_accum: Option<u32>,
    pub seq_len: Option<u32>,
    /// Tokens per optimizer step of the whole job, as the log states it.
    pub tokens_per_step: Option<u64>,
    pub world_size: Option<u32>,
    /// One process's batch, where the log states one as such (not a global batch shown as
    /// `batch_size`).
    #[serde(skip)]
    device_batch: Option<u32>,
    #[serde(skip)]
    nodes: Option<u32>,
    #[serde(skip)]
    gpus_per_node: Option<u32>,
    pub pin_memory: Option<bool>,
    pub amp_dtype: Option<String>,
    pub gradient_checkpointing: Option<bool>,
    pub cudnn_benchmark: Option<bool>,
    pub total_steps: Option<u64>,
    /// Settings the run's log stated twice with different values, oldest first.
    #[serde(skip)]
    pub changed: Vec<SettingChange>,
}

/// A setting the log stated twice with different values.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct SettingChange {
    pub key: &'static str,
    pub was: String,
    pub now: String,
    /// Step records of the run when the later value was logged: after the run's last step,
    /// it is the next launch's setting (a change between runs, not inside one).
    #[serde(skip)]
    pub after_records: u64,
}

/// Setting changes kept in `Facts::changed`.
const CHANGES_KEPT: usize = 8;

impl Facts {
    /// A setting the log stated, with the run's step records so far.
    fn apply(&mut self, f: ConfigFact, records: u64) {
        // A setting a run should not change midway (the batch size and the step count may).
        let before = match &f {
            ConfigFact::NumWorkers(v) => show("num_workers", self.num_workers, v),
            ConfigFact::PinMemory(v) => show("pin_memory", self.pin_memory, v),
            ConfigFact::CudnnBenchmark(v) => show("cudnn_benchmark", self.cudnn_benchmark, v),
            ConfigFact::AmpDtype(v) => show("amp_dtype", self.amp_dtype.clone(), v),
            ConfigFact::GradientCheckpointing(v) => {
                show("gradient_checkpointing", self.gradient_checkpointing, v)
            }
            _ => None,
        };
        if let Some((key, was, now)) = before
            && self.changed.len() < CHANGES_KEPT
            && !self
                .changed
                .iter()
                .any(|c| (c.key, &c.was, &c.now) == (key, &was, &now))
        {
            self.changed.push(SettingChange {
                key,
                was,
                now,
                after_records: records,
            });
        }
        match f {
            ConfigFact::NumWorkers(v) => self.num_workers = Some(v),
            ConfigFact::BatchSize(v) => {
                self.batch_size = Some(v);
                self.device_batch = Some(v);
            }
            ConfigFact::Nodes(v) => self.nodes = Some(v),
            ConfigFact::GpusPerNode(v) => self.gpus_per_node = Some(v),
            ConfigFact::GlobalBatch(v) => {
                self.global_batch = Some(v);
                // The batch size the log states, where it states no other.
                self.batch_size.get_or_insert(v);
            }
            ConfigFact::GradAccum(v) => self.grad_accum = Some(v),
            ConfigFact::SeqLen(v) => self.seq_len = Some(v),
            ConfigFact::TokensPerStep(v) => self.tokens_per_step = Some(v),
            ConfigFact::WorldSize(v) => self.world_size = Some(v),
            ConfigFact::PinMemory(v) => self.pin_memory = Some(v),
            ConfigFact::AmpDtype(v) => self.amp_dtype = Some(v),
            ConfigFact::GradientCheckpointing(v) => self.gradient_checkpointing = Some(v),
            ConfigFact::CudnnBenchmark(v) => self.cudnn_benchmark = Some(v),
            ConfigFact::TotalSteps(v) => self.total_steps = Some(v),
        }
    }

    /// A run of `records` step records ended: its changes are over. Returns those logged
    /// after its last step, the next launch's settings (a change between runs); what changed
    /// inside the ended run was its own.
    fn take_changes(&mut self, records: u64) -> Vec<SettingChange> {
        let mut changes = std::mem::take(&mut self.changed);
        changes.retain(|c| c.after_records >= records);
        changes
    }

    /// Samples per optimizer step across all ranks, when the logs say enough to know it: the
    /// global batch as stated, else one process's batch times the processes and the
    /// gradient accumulation (one each when not stated).
    pub fn step_samples(&self) -> Option<f64> {
        let per_step = || {
            Some(
                f64::from(self.device_batch?)
                    * f64::from(self.world_size.unwrap_or(1))
                    * f64::from(self.grad_accum.unwrap_or(1)),
            )
        };
        match self.global_batch {
            Some(_) if self.global_batch_in_tokens() => per_step(),
            Some(g) => Some(f64::from(g)),
            None => per_step(),
        }
    }

    /// A "total batch size" that is one process's batch times the processes, the gradient
    /// accumulation and the sequence length counts tokens, not samples (llm.c's
    /// `total_batch_size=524288` for 32 sequences of 1024 tokens, 16 times).
    pub(crate) fn global_batch_in_tokens(&self) -> bool {
        let (Some(g), Some(b), Some(t)) = (self.global_batch, self.device_batch, self.seq_len)
        else {
            return false;
        };
        let samples = u64::from(b)
            * u64::from(self.world_size.unwrap_or(1))
            * u64::from(self.grad_accum.unwrap_or(1));
        u64::from(g) == samples * u64::from(t) && t > 1
    }

    /// The processes a global batch stated beside one process's batch implies: 512 samples a
    /// step at 64 a device (and its gradient accumulation) is 8 GPUs; or nodes times GPUs on
    /// each.
    pub(crate) fn implied_world(&self) -> Option<u32> {
        if let (Some(n), Some(g)) = (self.nodes, self.gpus_per_node) {
            return n.checked_mul(g);
        }
        let (g, b) = (self.global_batch?, self.device_batch?);
        let per_process = b.checked_mul(self.grad_accum.unwrap_or(1))?;
        (per_process > 0 && g % per_process == 0 && !self.global_batch_in_tokens())
            .then(|| g / per_process)
    }

    /// One process's batch, where the log states one as such.
    pub(crate) fn device_batch_size(&self) -> Option<u32> {
        self.device_batch
    }

    /// A step's tokens from its samples and the sequence length.
    pub(crate) fn step_tokens(&self) -> Option<u64> {
        Some(self.step_samples()? as u64 * u64::from(self.seq_len?))
    }

    /// What a step holds, for the rates a line leaves out.
    pub fn sizes(&self) -> rank_state::Sizes {
        let batch = self.step_samples();
        let stated_tokens = self.tokens_per_step.or_else(|| {
            self.global_batch_in_tokens()
                .then(|| self.global_batch.map(u64::from))?
        });
        rank_state::Sizes {
            batch,
            tokens_per_step: stated_tokens.map(|t| t as f64),
            seq_len: self.seq_len.map(f64::from),
            gpus: self
                .world_size
                .or_else(|| self.implied_world())
                .map(f64::from),
        }
    }
}

/// (key, old, new) when a setting is stated again with another value.
fn show<T: PartialEq + std::fmt::Display>(
    key: &'static str,
    old: Option<T>,
    new: &T,
) -> Option<(&'static str, String, String)> {
    old.filter(|o| o != new)
        .map(|o| (key, o.to_string(), new.to_string()))
}

impl Model {
    pub fn new(cfg: ModelConfig) -> Self {
        Model {
            cfg,
            ranks: BTreeMap::new(),
            spare_ranks: rank_state::SpareRanks::default(),
            merged: RankState::new(cfg.window_steps, cfg.charts),
            stages: Stages::new(cfg.window_steps),
            cache: CacheState::default(),
            host_mem: None,
            events: Vec::new(),
            event_counts: BTreeMap::new(),
            open_boundaries: Vec::new(),
            recent_events: VecDeque::new(),
            batches: Batches::default(),
            facts: Facts::default(),
            summary: SummaryRecord::default(),
            log_memory: VecDeque::new(),
            log_memory_readings: 0,
            line_steps: 0,
            marks: 0,
            line_step_times: false,
            line_data_times: false,
            stepped_times: false,
            real_time: false,
            step_clock_s: 0.0,
            last_time: None,
            wall: clock::WallClock::default(),
            arriving: false,
            hardware: Hardware::default(),
            stacks: stacks::Stacks::default(),
            timeline: Timeline::default(),
            log: LogLines::for_pane(cfg.pane),
            counters: HashMap::default(),
            basis: Basis::default(),
            runs: Vec::new(),
            runs_dropped: 0,
            run_lines: None,
        }
    }

    /// A step record with its step made the run's global step (a position in an epoch
    /// becomes the iterations done), or the evaluation event an evaluation bar's redraw is;
    /// other records as they are; nothing for a setup's bar. True with a step that starts a
    /// new run in its file: call `new_run` before applying it. Call before `apply`, which
    /// takes global steps.
    pub fn count(&mut self, stamp: &Stamp, rec: Record) -> (Option<Record>, bool) {
        let Record::Step(mut s) = rec else {
            return (Some(rec), false);
        };
        if s.updates.is_some() {
            s.step = s.updates;
            s.total = None;
            s.counter = Counter::Global;
        }
        let counters = self.counters.entry((stamp.source, stamp.rank)).or_default();
        match counters.count(&mut s) {
            Counted::Step => (Some(Record::Step(s)), false),
            Counted::NewRun => (Some(Record::Step(s)), true),
            Counted::Eval => (Some(counters::eval_event(&s)), false),
            Counted::Setup => (None, false),
        }
    }

    /// The run in progress ended where a new one starts in the same file: its figures are
    /// kept in `runs` (with the `alerts` it raised) and the model starts afresh, keeping what
    /// is not the run's own: the setup the logs stated, the events, the hardware readings,
    /// the log lines, the step counters and the clock. In place, each field named: what was
    /// the run's own becomes what `new` makes, and its windows keep the room they took (a log
    /// whose count starts over every few lines starts a run each time; building the whole
    /// model afresh and moving it in was 9% of the monitor's thread on the bench log).
    pub fn new_run(&mut self, alerts: u64) {
        let mut ended = RunSummary::of(&self.merged, self.run_lines.unwrap_or_default(), alerts);
        ended.then_changed = self.facts.take_changes(self.merged.records);
        let Model {
            cfg,
            ranks,
            spare_ranks,
            merged,
            stages,
            cache,
            host_mem,
            events: _,
            event_counts: _,
            open_boundaries,
            recent_events,
            batches,
            facts: _,
            summary,
            log_memory,
            log_memory_readings,
            line_steps,
            marks,
            line_step_times,
            line_data_times,
            stepped_times,
            real_time: _,
            step_clock_s: _,
            last_time: _,
            wall: _,
            arriving: _,
            hardware: _,
            stacks,
            timeline,
            log: _,
            counters: _,
            basis,
            runs,
            runs_dropped,
            run_lines,
        } = self;
        for (_, state) in std::mem::take(ranks) {
            spare_ranks.give(state);
        }
        merged.clear();
        *stages = Stages::new(cfg.window_steps);
        *cache = CacheState::default();
        *host_mem = None;
        recent_events.clear();
        open_boundaries.clear();
        *batches = Batches::default();
        *summary = SummaryRecord::default();
        log_memory.clear();
        *log_memory_readings = 0;
        (*line_steps, *marks) = (0, 0);
        (*line_step_times, *line_data_times, *stepped_times) = (false, false, false);
        *stacks = stacks::Stacks::default();
        timeline.clear();
        *basis = Basis::default();
        *run_lines = None;
        if runs.len() < RUNS_KEPT {
            runs.push(ended);
        } else {
            *runs_dropped += 1;
        }
    }

    /// Folds one record into the model.
    pub fn apply(&mut self, stamp: &Stamp, rec: Record) {
        self.apply_keeping(stamp, rec);
    }

    /// `apply`, giving back the box of a step record, read, for the parser to fill again
    /// (`StepBoxes`).
    pub fn apply_keeping(&mut self, stamp: &Stamp, rec: Record) -> Option<Box<StepRecord>> {
        let mut read = None;
        let t = stamp.time;
        self.last_time = Some(self.last_time.map_or(t, |l| l.max(t)));
        self.real_time |= stamp.real_time;
        match rec {
            Record::Step(mut s) => {
                if self.line_steps == 0 && self.marks > 0 {
                    // Step lines after all: the marks were only standing in for them. What
                    // was measured (step times of whole-step totals) stays.
                    for r in self.ranks.values_mut() {
                        r.forget_progress();
                    }
                    self.merged.forget_progress();
                }
                self.line_steps += 1;
                self.line_step_times |= s.step_time_ms.is_some() || s.iters_per_s.is_some();
                self.line_data_times |= s.data_time_ms.is_some();
                self.step(stamp, &mut s);
                read = Some(s);
            }
            Record::Stage(s) => {
                if let Some(step) = s.step {
                    self.mark(stamp, step);
                }
                self.stages.stage(s, stamp);
            }
            Record::StageTotal {
                name,
                role,
                ms,
                step,
            } => {
                self.stages.total(name, role, ms, step, stamp);
            }
            Record::StageBlockStart {
                step,
                timers: Some(timers),
            } => {
                // A framework's timers time the step its file logged last; DeepSpeed's, the
                // step its engine logged last, which the run's own step lines may not name.
                let logged = self.ranks.get(&stamp.rank).and_then(|r| r.last_step);
                let engine = match timers {
                    PhaseTimers::SinceLastBlock => self
                        .counters
                        .get(&(stamp.source, stamp.rank))
                        .and_then(|c| c.engine_step),
                    PhaseTimers::PerStep | PhaseTimers::RunMeans => None,
                };
                let step = step.or(engine).or(logged).or(self.merged.last_step);
                self.stages.timer_block(step, timers, stamp);
            }
            Record::StageBlockStart { step, timers: None } => {
                if let Some(step) = step {
                    self.mark(stamp, step);
                }
                self.stages.block_start(step, stamp);
            }
            Record::StepMark { step } => self.mark(stamp, step),
            Record::Cache(c) => self.cache.apply(&c, t),
            Record::HostMem(m) => {
                if let Some(step) = m.step {
                    self.mark(stamp, step);
                }
                if m.system_used_mb.is_some() || m.process_mb.is_some() {
                    if self.log_memory.len() == LOG_MEMORY_KEPT {
                        self.log_memory.pop_front();
                    }
                    let time = self.clock();
                    self.log_memory_readings += 1;
                    self.log_memory.push_back(LogMemory {
                        time,
                        step: m.step.or(self.merged.last_step),
                        line: stamp.line,
                        reading: m.clone(),
                    });
                }
                self.host_mem = Some(m);
            }
            // Lines with impossible figures never reach the model (feed.rs): nothing to do.
            Record::Rejected { .. } => {}
            Record::Event { kind, text } => {
                let boundary = matches!(
                    kind,
                    EventKind::Eval | EventKind::Checkpoint | EventKind::EpochEnd
                );
                if boundary {
                    self.timeline.boundary(kind);
                }
                // The next line of a boundary under way is the same event.
                let again = boundary && self.open_boundaries.contains(&kind);
                if boundary && !again {
                    self.open_boundaries.push(kind);
                }
                if !again {
                    self.event(stamp, kind, text);
                }
            }
            Record::Config(f) => self.facts.apply(f, self.merged.records),
            Record::Summary(s) => {
                keep_latest(&mut self.summary.runtime_s, s.runtime_s);
                keep_latest(&mut self.summary.samples_per_s, s.samples_per_s);
                keep_latest(&mut self.summary.steps_per_s, s.steps_per_s);
                keep_latest(&mut self.summary.loss, s.loss);
            }
        }
        if !self.stages.closed.is_empty() || !self.stages.matched_data.is_empty() {
            self.block_steps();
        }
        read
    }

    /// One event, counted and kept among the recent ones and the first `EVENTS_KEPT`.
    fn event(&mut self, stamp: &Stamp, kind: EventKind, text: String) {
        *self.event_counts.entry(kind).or_default() += 1;
        if self.recent_events.len() == RECENT_EVENTS {
            self.recent_events.pop_front();
        }
        self.recent_events.push_back((kind, self.merged.last_step));
        if self.events.len() < EVENTS_KEPT {
            self.events.push(EventEntry {
                kind,
                source: stamp.source,
                line: stamp.line,
                time: stamp.time,
                text,
            });
        }
    }

    /// The run's time in seconds: the logs' own times (or arrivals) when they have them, else
    /// the derived step times added up. Log readings are placed on it.
    pub fn clock(&self) -> f64 {
        if self.real_time {
            self.last_time.unwrap_or(0.0)
        } else {
            self.step_clock_s
        }
    }

    /// What the rules that count seconds count on: the run's clock, or for a log with no time
    /// at all (no timestamps, no step times), one second a reading of its memory monitor. A
    /// level needs no clock, only a trend does: the trends still read `clock`, which stands
    /// still, so a log without time makes no claim of minutes to exhaustion.
    pub fn rule_clock(&self) -> f64 {
        if self.real_time || self.step_clock_s > 0.0 {
            self.clock()
        } else {
            self.log_memory_readings as f64
        }
    }

    /// A line that names its step (`[Step N]`) is progress while no step line tells it: a
    /// log of memory monitor and timing lines alone still moves.
    fn mark(&mut self, stamp: &Stamp, step: u64) {
        if self.line_steps > 0 || self.merged.last_step.is_some_and(|l| l == step) {
            return;
        }
        self.marks += 1;
        let mut rec = StepRecord {
            step: Some(step),
            ..StepRecord::default()
        };
        self.step(stamp, &mut rec);
    }

    /// Whole-step totals of the blocks just closed, as step times (and their itemised data
    /// waits as data times) while no step line gives them.
    fn block_steps(&mut self) {
        for b in std::mem::take(&mut self.stages.closed) {
            if self.line_step_times {
                continue;
            }
            let data = b.data_ms.filter(|_| !self.line_data_times);
            self.rank_state(b.rank).push_times(b.time, b.step_ms, data);
            self.merged.push_times(b.time, b.step_ms, data);
        }
        // A data wait the timing blocks itemise for step lines that time the step alone.
        for b in std::mem::take(&mut self.stages.matched_data) {
            let Some(data) = b.data_ms.filter(|_| !self.line_data_times) else {
                continue;
            };
            self.basis.note_timed_data();
            self.rank_state(b.rank).push_data(b.time, b.step_ms, data);
            self.merged.push_data(b.time, b.step_ms, data);
        }
    }

    /// Rank `rank`'s state, made when its first figure comes.
    fn rank_state(&mut self, rank: u32) -> &mut RankState {
        let window = self.cfg.window_steps;
        self.ranks
            .entry(rank)
            .or_insert_with(|| self.spare_ranks.take(window))
    }

    /// The live loop read this machine's clock: time passes with no sample and no line.
    pub fn tick(&mut self, now: f64) {
        self.wall.read(now);
    }

    /// Folds one hardware sample into the model; a GPU lost or back is an event.
    pub fn apply_sample(&mut self, sample: crate::model::sample::Sample) {
        let time = sample.time;
        self.wall.read(time);
        for change in self.hardware.apply(sample) {
            let (kind, text) = match change {
                GpuChange::Lost { why, .. } => (EventKind::GpuLost, why),
                GpuChange::Back { gpu } => (EventKind::GpuBack, format!("GPU {gpu} answers again")),
                GpuChange::Note(text) => (EventKind::GpuNote, text),
            };
            let stamp = Stamp {
                time,
                real_time: true,
                source: HARDWARE_SOURCE,
                ..Stamp::default()
            };
            self.apply(&stamp, Record::Event { kind, text });
        }
    }

    /// A step record into the rank's and the merged figures; the record is filled in
    /// where it lies with what its rank's history gives (`RankState::fill`).
    fn step(&mut self, stamp: &Stamp, d: &mut StepRecord) {
        if d.step.is_some() {
            self.run_lines = Some(match self.run_lines {
                Some((source, first, _)) if source == stamp.source => (source, first, stamp.line),
                _ => (stamp.source, stamp.line, stamp.line),
            });
        }
        let window = self.cfg.window_steps;
        let sizes = self.facts.sizes();
        let rank = self
            .ranks
            .entry(stamp.rank)
            .or_insert_with(|| self.spare_ranks.take(window));
        let ways = Ways::of(d, stamp.arrived);
        rank.fill(d, stamp.time, stamp.real_time, &sizes);
        self.basis.note(ways, d);
        if d.total.is_none() && d.step.is_some() {
            d.total = self.facts.total_steps;
        }
        // Each step once, whichever rank logged it first.
        let new_step = match (d.step, self.merged.last_step) {
            (Some(step), Some(last)) => step > last,
            _ => true,
        };
        // A printed step time is each step's: a line every hundred steps moves the clock by a
        // hundred of them.
        if new_step && let Some(ms) = d.step_time_ms {
            let covers = coverage::steps_since(self.merged.last_step, d.step);
            self.step_clock_s += ms * covers / 1000.0;
        }
        if new_step {
            self.open_boundaries.clear();
        }
        // A line right after an eval or a checkpoint whose time holds the pause is the
        // pause's, not a step's: out of the run's figures (coverage.rs) and of the rules'
        // windows, though still a step of the timeline. So is the first batch of an epoch
        // whose running averages start over (the loader's restart, timm's `[0/781]`): a log
        // that prints it beside one other batch an epoch would have it weigh as much as the
        // epoch's hundreds of steps. So is a line of another loop (`stray`).
        let median = self.merged.step_median_ms;
        let paused = new_step
            && matches!(
                self.timeline.pending,
                Some(EventKind::Eval | EventKind::Checkpoint)
            )
            && d.step_time_ms.zip(median).is_some_and(|(ms, m)| {
                ms > coverage::PAUSED * m
                    && self
                        .timeline
                        .holds_pause(d.step, (stamp.time, stamp.real_time), ms, m)
            });
        let restart = d.avg_steps == Some(1) && self.merged.records > 0;
        // Another loop's line: a bar the feed told from the training's (DINO's feature
        // extraction, `[10/79]  time: 0.18  data: 0.09` after `Epoch: [27] [781/782]`), or a
        // timed line that names no step in a run whose step lines do.
        let stray = d.step.is_none()
            && (d.counter == Counter::Bar || d.step_time_ms.is_some() && self.stepped_times);
        self.stepped_times |= d.step.is_some() && d.step_time_ms.is_some();
        if new_step && !stray {
            self.merged.coverage.line(d, paused, median);
        }
        let recent = &self.merged.step_time_ms.recent;
        self.timeline.step(
            d.step,
            (stamp.time, stamp.real_time),
            d.step_time_ms,
            || recent.median_last(20),
            (self.wall.now, self.arriving),
        );
        let held =
            (paused || restart || stray).then(|| (d.step_time_ms.take(), d.data_time_ms.take()));
        rank.push(d, stamp.time);
        self.merged.push(d, stamp.time);
        if let Some((step_ms, data_ms)) = held {
            (d.step_time_ms, d.data_time_ms) = (step_ms, data_ms);
        }
        if let Some(b) = d.batch_size.or(self.facts.batch_size.map(f64::from)) {
            let it = d
                .iters_per_s
                .or(d.step_time_ms.filter(|ms| *ms > 0.0).map(|ms| 1000.0 / ms));
            self.batches.push(b, d.step, it, d.samples_per_s);
        }
        if let Some(step_ms) = d.step_time_ms {
            let facts = StepFacts {
                time: stamp.time,
                step_ms,
                data_ms: d.data_time_ms,
            };
            self.stages.step(d.step, facts);
        }
    }

    /// A log line as delivered (live or from a recording), with the records it gave, kept
    /// among the last ones; `text` is what `log_lines::shown` gave.
    pub fn line(&mut self, source: usize, line: u64, text: String, kind: LineKind) {
        self.log.keep(source, line, text, kind);
    }

    /// Call at the end of input: closes the timing blocks that had no total line.
    pub fn finish(&mut self) {
        self.stages.finish();
        self.block_steps();
    }

    /// Steps since the latest event of one of `kinds`, and that event's step; None if there
    /// was none among the recent events.
    pub fn steps_since(&self, kinds: &[EventKind]) -> Option<u64> {
        let (_, at) = self
            .recent_events
            .iter()
            .rev()
            .find(|(k, _)| kinds.contains(k))?;
        Some(
            self.merged
                .last_step
                .zip(*at)
                .map_or(0, |(now, at)| now.saturating_sub(at)),
        )
    }

    /// Events of `kind` within the last `steps` steps (among the recent events).
    pub fn recent_count(&self, kind: EventKind, steps: u64) -> usize {
        let now = self.merged.last_step.unwrap_or(0);
        self.recent_events
            .iter()
            .filter(|(k, at)| *k == kind && at.is_none_or(|a| now.saturating_sub(a) <= steps))
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `new_run` did before it worked in place: a fresh model with what is kept moved in.
    /// The reference the in-place one is held to.
    fn new_run_afresh(m: &mut Model, alerts: u64) {
        let mut ended = RunSummary::of(&m.merged, m.run_lines.unwrap_or_default(), alerts);
        ended.then_changed = m.facts.take_changes(m.merged.records);
        let mut fresh = Model::new(m.cfg);
        fresh.facts = std::mem::take(&mut m.facts);
        fresh.events = std::mem::take(&mut m.events);
        fresh.event_counts = std::mem::take(&mut m.event_counts);
        fresh.hardware = std::mem::take(&mut m.hardware);
        fresh.wall = m.wall;
        fresh.arriving = m.arriving;
        fresh.log = std::mem::take(&mut m.log);
        fresh.runs = std::mem::take(&mut m.runs);
        fresh.runs_dropped = m.runs_dropped;
        fresh.real_time = m.real_time;
        fresh.last_time = m.last_time;
        fresh.step_clock_s = m.step_clock_s;
        fresh.counters = std::mem::take(&mut m.counters);
        if fresh.runs.len() < RUNS_KEPT {
            fresh.runs.push(ended);
        } else {
            fresh.runs_dropped += 1;
        }
        *m = fresh;
    }

    #[test]
    fn a_new_run_in_place_is_the_model_made_afresh() {
        // Steps, timing blocks, cache and memory readings, events; each log read three times
        // as a file of its own, so that its steps start over.
        let logs = [
            include_str!("../../fixtures/logs/cache/train.log"),
            include_str!("../../fixtures/logs/timing/timing.log"),
            include_str!("../../fixtures/logs/memory-monitor/train.log"),
            include_str!("../../fixtures/logs/events/train.log"),
            include_str!("../../fixtures/logs/mixed/train.log"),
        ];
        let mut parser = crate::parse::Parser::default();
        let mut m = Model::new(ModelConfig::default());
        let mut runs = 0;
        let (mut blocks, mut caches) = (0, 0);
        let lines = (0..3).flat_map(|_| logs.iter().enumerate());
        let lines = lines.flat_map(|(source, l)| l.lines().map(move |l| (source, l)));
        for (i, (source, line)) in lines.enumerate() {
            let mut records = Vec::new();
            parser.parse(line.as_bytes(), &mut records);
            let stamp = Stamp {
                source,
                line: i as u64 + 1,
                time: i as f64,
                ..Stamp::default()
            };
            for rec in records {
                let (rec, new_run) = m.count(&stamp, rec);
                if new_run {
                    blocks += m.stages.blocks;
                    caches += m.cache.readings;
                    let mut afresh = m.clone();
                    new_run_afresh(&mut afresh, 2);
                    m.new_run(2);
                    assert_eq!(format!("{m:?}"), format!("{afresh:?}"), "line {i}");
                    runs += 1;
                }
                if let Some(rec) = rec {
                    m.apply(&stamp, rec);
                }
            }
        }
        // Runs that ended with timing blocks and cache readings among them.
        assert!(
            runs >= 4 && blocks > 0 && caches > 0,
            "{runs} {blocks} {caches}"
        );
    }

    #[test]
    fn ranks_are_kept_apart_and_merged() {
        let mut m = Model::new(ModelConfig::default());
        for (rank, ms) in [(0, 100.0), (1, 300.0)] {
            let s = StepRecord {
                step: Some(1),
                step_time_ms: Some(ms),
                ..StepRecord::default()
            };
            m.apply(
                &Stamp {
                    rank,
                    ..Stamp::default()
                },
                Record::Step(Box::new(s)),
            );
        }
        assert_eq!(m.ranks.len(), 2);
        assert_eq!(m.ranks[&1].step_time_ms.run.mean(), Some(300.0));
        assert_eq!(m.merged.step_time_ms.run.mean(), Some(200.0));
    }

    #[test]
    fn events_are_bounded_but_counted() {
        let mut m = Model::new(ModelConfig::default());
        for i in 0..(EVENTS_KEPT + 50) {
            m.apply(
                &Stamp::default(),
                Record::Step(Box::new(StepRecord {
                    step: Some(i as u64 + 1),
                    ..StepRecord::default()
                })),
            );
            m.apply(
                &Stamp::default(),
                Record::Event {
                    kind: EventKind::Checkpoint,
                    text: String::new(),
                },
            );
        }
        assert_eq!(m.events.len(), EVENTS_KEPT);
        assert_eq!(
            m.event_counts[&EventKind::Checkpoint],
            (EVENTS_KEPT + 50) as u64
        );
    }

    #[test]
    fn an_evaluation_over_many_lines_is_one_event() {
        let mut m = Model::new(ModelConfig::default());
        let event = |kind| Record::Event {
            kind,
            text: String::new(),
        };
        let step = |s: u64| {
            Record::Step(Box::new(StepRecord {
                step: Some(s),
                ..StepRecord::default()
            }))
        };
        for s in [100, 200] {
            m.apply(&Stamp::default(), step(s));
            // mmengine's `Iter(val) [50/1206]` lines, a checkpoint among them.
            for _ in 0..13 {
                m.apply(&Stamp::default(), event(EventKind::Eval));
            }
            m.apply(&Stamp::default(), event(EventKind::Checkpoint));
            m.apply(&Stamp::default(), event(EventKind::Eval));
        }
        assert_eq!(m.event_counts[&EventKind::Eval], 2);
        assert_eq!(m.event_counts[&EventKind::Checkpoint], 2);
        assert_eq!(m.events.len(), 4);
    }
}
