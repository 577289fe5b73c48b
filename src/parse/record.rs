//! Typed records: what one log line says, in the units the model uses.

use serde::Serialize;

use super::labels::Role;

/// The family of line shapes a record was recognised as; reported per file as its format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    /// `step 950/8880 | loss=0.1234 | ...` and the generic key=value / key: value / `| k v |` lines.
    KeyValue,
    /// Per-stage timing lines: `VRT Stage8 : 965.12ms (26.7%)`.
    Timing,
    /// Cache statistics: `Hit Rate: 82.45% (8245 hits / 1755 misses)`.
    Cache,
    /// `[Step 100] Memory - Process: ...MB (..%), System: ../..GB (..%)`.
    MemoryMonitor,
    Mmcv,
    Mmengine,
    HfTrainer,
    Accelerate,
    Lightning,
    Tqdm,
    Detectron2,
    Timm,
    Megatron,
    DeepSpeed,
    NanoGpt,
    Torchtitan,
    Keras,
    Fairseq,
    Ultralytics,
    /// A pattern from the user's config file.
    User,
    /// TensorBoard event files (`events.out.tfevents.*`).
    TensorBoard,
    /// A CSV logger's `metrics.csv` (Lightning's).
    MetricsCsv,
    /// JSON metric files: mmengine's `scalars.json`, Hugging Face's `trainer_state.json`.
    MetricsJson,
    /// W&B's run file, `run-<id>.wandb`.
    Wandb,
    /// An MLflow run, from a file store or a SQLite store.
    Mlflow,
    /// SwanLab's run file, `run-<id>.swanlab`.
    Swanlab,
    /// ClearML's offline run, `metrics.jsonl`.
    Clearml,
    /// Trackio's project store, `<project>.db`.
    Trackio,
}

impl Format {
    /// The stable name used in reports and fixtures.
    pub fn name(self) -> &'static str {
        match self {
            Format::KeyValue => "key-value",
            Format::Timing => "timing",
            Format::Cache => "cache",
            Format::MemoryMonitor => "memory-monitor",
            Format::Mmcv => "mmcv",
            Format::Mmengine => "mmengine",
            Format::HfTrainer => "hf-trainer",
            Format::Accelerate => "accelerate",
            Format::Lightning => "lightning",
            Format::Tqdm => "tqdm",
            Format::Detectron2 => "detectron2",
            Format::Timm => "timm",
            Format::Megatron => "megatron",
            Format::DeepSpeed => "deepspeed",
            Format::NanoGpt => "nanogpt",
            Format::Torchtitan => "torchtitan",
            Format::Keras => "keras",
            Format::Fairseq => "fairseq",
            Format::Ultralytics => "ultralytics",
            Format::User => "user",
            Format::TensorBoard => "tensorboard",
            Format::MetricsCsv => "metrics-csv",
            Format::MetricsJson => "metrics-json",
            Format::Wandb => "wandb",
            Format::Mlflow => "mlflow",
            Format::Swanlab => "swanlab",
            Format::Clearml => "clearml",
            Format::Trackio => "trackio",
        }
    }
}

/// How a line counts its steps, when its number is not plainly the run's global step. Decided
/// once per line shape by the parser; the file's feed turns the count into the global step.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Counter {
    /// The global training step.
    #[default]
    Global,
    /// A progress bar's position (tqdm without an epoch): the run's training bar, or another
    /// bar (an evaluation's) that runs inside it, told apart by the feed.
    Bar,
    /// The position within the epoch (`epoch`, counted from `base`), `total` being the
    /// epoch's length: `Epoch [8][700/750]`.
    InEpoch { base: u8 },
    /// A training engine's own count of its optimizer steps (DeepSpeed's `step=40,
    /// skipped=2`): the run's steps where the log has no other step lines; beside the run's
    /// own step lines (an RLHF loop's, Hugging Face's bar), an engine's figures of no step.
    Engine,
    /// What the run has consumed so far, samples or tokens (the `step` of MLPerf's NeMo
    /// `tracked_stats`): the step is that over one step's worth, the first positive count the
    /// log shows (its lines come every step).
    Consumed,
}

impl Counter {
    pub fn is_global(&self) -> bool {
        *self == Counter::Global
    }
}

/// One training step's figures, as far as the line gives them. Times are milliseconds,
/// memory is MiB, rates are per second, `mfu_pct` is a percentage.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct StepRecord {
    pub step: Option<u64>,
    pub total: Option<u64>,
    pub epoch: Option<f64>,
    #[serde(skip_serializing_if = "Counter::is_global")]
    pub counter: Counter,
    /// The optimizer updates so far, printed beside a position in the epoch (fairseq's
    /// `num_updates`): the run's global step.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub updates: Option<u64>,
    /// The rate is a progress bar's average, not this step's own: the model recovers each
    /// step's time from consecutive redraws.
    #[serde(skip_serializing_if = "Smoothing::is_off")]
    pub smoothed: Smoothing,
    pub step_time_ms: Option<f64>,
    /// Training time so far, a running total (`train_time:98412ms`): differenced, never a
    /// step time itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub elapsed_s: Option<f64>,
    /// The step time averaged since the start (`step_avg:231.55ms`, detectron2's `time`), or
    /// since `avg_steps` says (timm's, since the epoch began).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub avg_step_ms: Option<f64>,
    /// The steps the running averages cover, where they restart within the run (timm's each
    /// epoch); None: the run's steps so far (the step number). Set by the model from the
    /// line's place in its epoch where `avg_in_epoch` says so.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub avg_steps: Option<u64>,
    /// The running averages restart each epoch and cover its batches so far, the line's
    /// position counted from 0 (timm's, the ImageNet example's ProgressMeter).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub avg_in_epoch: bool,
    /// The line reports an evaluation too (`val_loss`, `val-core/...`, `timing_s/testing`):
    /// its figures are the evaluation's as much as a training step's.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub evaluated: bool,
    /// The data wait and the samples/s averaged as `avg_step_ms` is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub avg_data_ms: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub avg_samples_per_s: Option<f64>,
    pub data_time_ms: Option<f64>,
    pub samples_per_s: Option<f64>,
    pub iters_per_s: Option<f64>,
    pub batch_size: Option<f64>,
    pub loss: Option<f64>,
    pub lr: Option<f64>,
    pub grad_norm: Option<f64>,
    pub loss_scale: Option<f64>,
    pub tokens_per_s: Option<f64>,
    /// Tokens per second of one GPU (`tgs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens_per_gpu_s: Option<f64>,
    /// `tokens_per_s` as printed counts one device's tokens (torchtitan's `tps`): the job's
    /// are that times the GPUs.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub tokens_per_device: bool,
    pub mfu_pct: Option<f64>,
    pub memory_mb: Option<f64>,
    pub eta_s: Option<f64>,
}

/// The largest step number taken as true: 2^53, where counts stop being exact as floats (a
/// step a microsecond would take 285 years to get there).
const MAX_STEP: u64 = 1 << 53;

impl StepRecord {
    /// True when the line carried no figure at all, so it is not a step record.
    pub fn is_empty(&self) -> bool {
        *self == StepRecord::default()
    }

    /// What makes this record impossible, if anything: a step that overflows, a negative or
    /// non-finite time, rate or memory. (A NaN or inf loss is not impossible: training
    /// diverges, and that is an event.)
    pub fn impossible(&self) -> Option<&'static str> {
        if self.step.is_some_and(|s| s > MAX_STEP) || self.total.is_some_and(|s| s > MAX_STEP) {
            return Some("a step number that overflows");
        }
        let bad = |v: Option<f64>| v.is_some_and(|v| !v.is_finite() || v < 0.0);
        if bad(self.step_time_ms)
            || bad(self.data_time_ms)
            || bad(self.eta_s)
            || bad(self.elapsed_s)
            || bad(self.avg_step_ms)
            || bad(self.avg_data_ms)
        {
            return Some("a negative or infinite time");
        }
        if bad(self.samples_per_s)
            || bad(self.iters_per_s)
            || bad(self.tokens_per_s)
            || bad(self.tokens_per_gpu_s)
            || bad(self.batch_size)
        {
            return Some("a negative or infinite rate");
        }
        if bad(self.memory_mb) || bad(self.epoch) {
            return Some("a negative memory or epoch");
        }
        None
    }
}

/// One line of a timing block: a stage's cost, or another part of the step its label names.
/// `depth` is the nesting its indentation shows (0 = the block's outermost lines).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StageRecord {
    pub name: String,
    /// What the label says the line measures (labels.rs): read once per line shape.
    pub role: Role,
    pub ms: f64,
    pub share_pct: Option<f64>,
    pub depth: u8,
    /// Step number when the timing block states it.
    pub step: Option<u64>,
    /// The framework times this line within the block's line of this role, whatever the
    /// layout shows (Megatron's batch-generator runs inside forward-compute, Lightning's
    /// training_step and backward inside optimizer_step): that line's own time excludes it.
    pub inside: Option<Role>,
}

/// How a progress bar averages the rate it shows.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Smoothing {
    /// The rate is the step's own, or no bar's.
    #[default]
    Off,
    /// tqdm's default: a moving average, smoothing 0.3 over the redraws.
    Moving,
    /// The mean since the bar began (tqdm with `smoothing=0`, as Lightning's training bar,
    /// which restarts each epoch).
    SinceStart,
}

impl Smoothing {
    pub fn is_off(&self) -> bool {
        *self == Smoothing::Off
    }
}

/// What a framework's phase timer block covers: the step logged last before it, or the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum PhaseTimers {
    /// Each figure is one step's (Megatron's timers, averaged over the log interval).
    PerStep,
    /// Each figure sums the steps since the previous block (DeepSpeed's global timers, reset
    /// when printed).
    SinceLastBlock,
    /// Each figure is a mean over the whole run, printed at its end (Lightning's profiler
    /// report): no one step's.
    RunMeans,
}

/// Cache counters as a cache reports them; counters are cumulative.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CacheRecord {
    pub hit_rate_pct: Option<f64>,
    pub hits: Option<u64>,
    pub misses: Option<u64>,
    pub items: Option<u64>,
    pub memory_used_mb: Option<f64>,
    pub memory_total_mb: Option<f64>,
}

/// Host memory as the training script's own memory monitor prints it.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct HostMemRecord {
    pub step: Option<u64>,
    pub process_mb: Option<f64>,
    pub process_pct: Option<f64>,
    pub system_used_mb: Option<f64>,
    pub system_total_mb: Option<f64>,
    pub system_pct: Option<f64>,
}

/// Things that happened, as opposed to figures.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum EventKind {
    CudaOom,
    DataloaderKilled,
    NcclTimeout,
    TorchrunFailure,
    Traceback,
    LossScaleOverflow,
    NonFinite,
    Checkpoint,
    Eval,
    EpochEnd,
    MemoryCritical,
    /// A GPU stopped answering NVML (fallen off the bus), or answered again.
    GpuLost,
    GpuBack,
    /// Something the GPU readings need said, the first time it is: a GPU that cannot be
    /// opened, the numbering shown, process ids of another PID namespace.
    GpuNote,
}

impl EventKind {
    /// The stable name used in reports.
    pub fn name(self) -> &'static str {
        match self {
            EventKind::CudaOom => "cuda-oom",
            EventKind::DataloaderKilled => "dataloader-killed",
            EventKind::NcclTimeout => "nccl-timeout",
            EventKind::TorchrunFailure => "torchrun-failure",
            EventKind::Traceback => "traceback",
            EventKind::LossScaleOverflow => "loss-scale-overflow",
            EventKind::NonFinite => "non-finite",
            EventKind::Checkpoint => "checkpoint",
            EventKind::Eval => "eval",
            EventKind::EpochEnd => "epoch-end",
            EventKind::MemoryCritical => "memory-critical",
            EventKind::GpuLost => "gpu-lost",
            EventKind::GpuBack => "gpu-back",
            EventKind::GpuNote => "gpu-note",
        }
    }
}

/// A training-setup fact the log states, which the diagnosis weighs.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "kebab-case", tag = "fact", content = "value")]
pub enum ConfigFact {
    NumWorkers(u32),
    /// Samples per step of one process (a DataLoader's `batch_size`, `per_device_...`).
    BatchSize(u32),
    /// Samples per optimizer step of the whole job, stated as such (`global_batch_size`,
    /// detectron2's `IMS_PER_BATCH`, Hugging Face's "Total train batch size").
    GlobalBatch(u32),
    GradAccum(u32),
    SeqLen(u32),
    /// Tokens per optimizer step of the whole job (`tokens per iteration will be: 16,384`).
    TokensPerStep(u64),
    WorldSize(u32),
    /// Machines and GPUs on each (`nnodes`, `n_gpus_per_node`): the world size is their
    /// product when it is not stated.
    Nodes(u32),
    GpusPerNode(u32),
    PinMemory(bool),
    AmpDtype(String),
    GradientCheckpointing(bool),
    CudnnBenchmark(bool),
    TotalSteps(u64),
}

impl ConfigFact {
    /// A data loader's setting: an evaluation loader's is not the training's.
    pub fn is_loader_setting(&self) -> bool {
        matches!(
            self,
            ConfigFact::BatchSize(_) | ConfigFact::GlobalBatch(_) | ConfigFact::NumWorkers(_)
        )
    }
}

/// What one line says. A line can say several things (a tqdm bar with a glued log line).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub enum Record {
    /// Boxed: a step record is three times the size of any other, and every record moves
    /// several times between the parser and the model; a block's records take a third of the
    /// memory. In bulk reading the boxes go round (`StepBoxes`): a step line the shape memo
    /// reads costs no allocation.
    Step(Box<StepRecord>),
    Stage(StageRecord),
    /// A timing block's total line (`Total : 3610.53ms`, `总计`, `step time`): the model reads
    /// whether it is the forward, the whole step, or a sum that counts nested lines twice.
    StageTotal {
        name: String,
        /// `Total` or `StepTotal`.
        role: Role,
        ms: f64,
        step: Option<u64>,
    },
    /// `[Step N]` header of a timing block with no figures of its own.
    StageBlockStart {
        step: Option<u64>,
        /// A framework's phase timers, which time a step already logged (None: a user's
        /// block, which times the step in progress or the one it names).
        timers: Option<PhaseTimers>,
    },
    /// A line that names its step in a `[Step N]` prefix and says nothing steptop reads: it
    /// still tells how far the run is.
    StepMark {
        step: u64,
    },
    Cache(CacheRecord),
    HostMem(HostMemRecord),
    Event {
        kind: EventKind,
        text: String,
    },
    Config(ConfigFact),
    /// An end-of-training summary (Hugging Face `train_runtime` dict or `***** train metrics *****`).
    Summary(SummaryRecord),
    /// A line whose figures cannot be true (`step 999999999999999999999999/1`, `loss=1e999`,
    /// `-5 samples/s`): it never moves the model, and the report counts it (feed.rs).
    Rejected {
        what: &'static str,
    },
}

/// Step records' boxes on their way round: the monitor's thread hands back the boxes whose
/// records the model has read, and the parser's thread fills them again for the next lines.
/// A box made on one thread and freed on the other cost the monitor's thread a tenth of its
/// instructions on a log of step lines (the allocator's remote free and its collection), and
/// records held in place of boxes cost more in copies than the boxes did (both measured with
/// `cargo bench --bench report_throughput`).
#[derive(Default)]
// The boxes are the point: they go round, their records are filled in place.
#[allow(clippy::vec_box)]
pub struct StepBoxes(Vec<Box<StepRecord>>);

impl StepBoxes {
    /// Boxes kept: more than the step lines of the blocks in flight (a 256 KiB block holds
    /// at most a few thousand), so that a pool never runs dry in a steady stream, and a few
    /// MiB at most when boxes come back faster than they are used.
    const KEPT: usize = 4096;

    /// A box holding a copy of `rec`, a kept one where there is one.
    pub fn boxed(&mut self, rec: &StepRecord) -> Box<StepRecord> {
        match self.0.pop() {
            Some(mut b) => {
                (*b).clone_from(rec);
                b
            }
            None => Box::new(rec.clone()),
        }
    }

    /// Keeps a box whose record has been read, up to `KEPT`.
    pub fn give(&mut self, b: Box<StepRecord>) {
        if self.0.len() < Self::KEPT {
            self.0.push(b);
        }
    }

    /// Keeps `other`'s boxes too, up to `KEPT`. The longer list stays as it is and takes the
    /// other's: a block's boxes reach an empty pool (the reader's next block, a parser that
    /// used up its own) without being copied from list to list.
    pub fn append(&mut self, mut other: StepBoxes) {
        if other.0.len() > self.0.len() {
            std::mem::swap(&mut self.0, &mut other.0);
        }
        let room = Self::KEPT.saturating_sub(self.0.len());
        self.0.extend(other.0.into_iter().take(room));
    }

    #[cfg(test)]
    pub fn kept(&self) -> usize {
        self.0.len()
    }
}

/// Whole-run figures a framework prints when training ends.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct SummaryRecord {
    pub runtime_s: Option<f64>,
    pub samples_per_s: Option<f64>,
    pub steps_per_s: Option<f64>,
    pub loss: Option<f64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kept_box_holds_only_the_record_it_is_filled_with() {
        let mut boxes = StepBoxes::default();
        boxes.give(Box::new(StepRecord {
            step: Some(7),
            loss: Some(1.0),
            eta_s: Some(3.0),
            tokens_per_device: true,
            ..StepRecord::default()
        }));
        let rec = StepRecord {
            step: Some(8),
            lr: Some(1e-4),
            ..StepRecord::default()
        };
        let filled = boxes.boxed(&rec);
        assert_eq!(*filled, rec);
        assert_eq!(boxes.kept(), 0, "the kept box was not the one filled");
    }

    #[test]
    fn boxes_are_kept_up_to_a_bound() {
        let mut boxes = StepBoxes::default();
        for _ in 0..StepBoxes::KEPT + 3 {
            boxes.give(Box::default());
        }
        assert_eq!(boxes.kept(), StepBoxes::KEPT);
        let mut more = StepBoxes::default();
        more.give(Box::default());
        boxes.append(more);
        assert_eq!(boxes.kept(), StepBoxes::KEPT);
        // The other way round: the full list taken whole, the short one's box left out.
        let mut few = StepBoxes::default();
        few.give(Box::default());
        few.append(boxes);
        assert_eq!(few.kept(), StepBoxes::KEPT);
    }
}
