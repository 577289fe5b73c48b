//! Lines to typed records. One `Parser` per file: it recognises every supported format on every
//! line (so formats can mix in one file), counts which ones it saw, and keeps the little context
//! some formats need (the Keras epoch header, the open timing block, the cache block).

pub mod clean;
mod digits;
mod events;
mod frameworks;
mod header_table;
pub mod kv;
pub mod labels;
mod mmlab;
pub mod num;
pub mod prefix;
mod progress;
pub mod record;
mod script;
mod shape;
mod stats;
mod trace;
pub mod user;
pub mod vocabulary;

use std::sync::Arc;

pub use shape::shape_key;

use record::{CacheRecord, ConfigFact, EventKind, Format, Record, StepBoxes, StepRecord};

/// What a line said besides its records.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct LineInfo {
    /// The log's own timestamp, seconds since the Unix epoch.
    pub time: Option<f64>,
    /// The timestamp had no year, so `time` is in the year 2000 (see `prefix::LogTime`).
    pub yearless: bool,
    pub rank: Option<u32>,
    /// The format the line was recognised as, if any.
    pub format: Option<Format>,
    /// The format of another line glued onto the end of a progress bar, counted as well.
    pub glued: Option<Format>,
    /// True for a line with no text at all, only a rule (`-----`, `═══`), or NCCL's setup
    /// chatter (`NCCL INFO Channel 00/32`): nothing to read, so not counted as unparsed.
    pub blank: bool,
    /// Set by the file's feed when the line's figures cannot be true (a step that goes back
    /// with no restart, an overflow): why. Such a line reaches no model and counts as rejected.
    pub rejected: Option<&'static str>,
    /// The user's `[[pattern]]` that read the line: its place in the config's list.
    pub pattern: Option<u8>,
    /// A step record of the line has a data time longer than its step time.
    pub data_over_step: bool,
}

/// Per-file parsing state.
#[derive(Default)]
pub struct Parser {
    buf: String,
    user: Arc<Vec<user::UserPattern>>,
    ctx: Context,
    shapes: shape::Shapes,
    reads: shape::Scratch,
    /// The memo's key of the trusted shape the last line was read from; None when it was
    /// parsed in full.
    served: Option<u64>,
}

/// What some formats need to remember from earlier lines. It is small and `Copy` on purpose:
/// whole-file reading parses blocks of a file in parallel, each from a default context, and
/// compares contexts to find where a block's own lines have made its guess right (see ingest.rs).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Context {
    /// Keras prints `Epoch 3/10` on its own line before the bar.
    pub(crate) keras_epoch: Option<f64>,
    /// The step of the open timing block (`[Step 100]` header).
    pub(crate) block_step: Option<u64>,
    /// Indentation of the enclosing stage lines, to tell nesting depth.
    pub(crate) stage_indents: Indents,
    /// Lines since the last cache statistics line, up to `CACHE_BLOCK_LINES + 1`: `Memory: a /
    /// b MB` and `Size: N items` are cache figures only inside such a block.
    pub(crate) since_cache: u32,
    /// The format of a line glued onto the end of a progress bar, counted with the bar's.
    pub(crate) glued_format: Option<Format>,
    /// The step of an entry printed over several lines (OLMo's `[step=20/1000,epoch=0]`
    /// then indented `key=value` lines), while its lines come.
    pub(crate) entry_step: Option<u64>,
    /// Which loader or phase the settings being printed belong to (`val_dataloader =
    /// dict(`, `***** Running Evaluation *****`): an evaluation's batch size and workers are
    /// not the training's.
    pub(crate) section: Section,
    /// A training script's own code is being printed (modded-nanogpt logs its script
    /// first): its lines are code, read for configuration only, until a rule or a step line.
    pub(crate) script: bool,
    /// The header of the table whose rows come now (`epoch  train_loss  time`).
    pub(crate) table: Option<header_table::Table>,
}

/// The part of a run the settings printed now belong to.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Section {
    #[default]
    Any,
    Train,
    Eval,
}

impl Section {
    /// The section a line opens, if it opens one: a config block named for a phase
    /// (`val_dataloader = dict(`, `test=dict(`, `VAL:`), or a framework's phase banner.
    fn opened_by(p: &str) -> Option<Section> {
        let block = p
            .strip_suffix("dict(")
            .map(|b| b.trim_end().trim_end_matches('='))
            .or_else(|| p.strip_suffix(':').filter(|k| !k.contains(' ')))
            .or_else(|| {
                p.strip_prefix("***** Running ")
                    .map(|b| b.trim_end_matches(" *****"))
            });
        let name = block?.trim().to_ascii_lowercase();
        let has = |w: &str| {
            name.split(|c: char| !c.is_ascii_alphanumeric())
                .any(|p| p == w)
        };
        if has("val")
            || has("valid")
            || has("validation")
            || has("test")
            || has("eval")
            || has("evaluation")
            || has("prediction")
        {
            Some(Section::Eval)
        } else if has("train") || has("training") {
            Some(Section::Train)
        } else {
            None
        }
    }
}

/// How many lines after a cache header still belong to its block.
pub(crate) const CACHE_BLOCK_LINES: u32 = 6;

/// A small stack of indentations: timing blocks nest a few levels, never dozens; deeper lines
/// share the deepest level.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct Indents {
    len: usize,
    at: [u32; Indents::CAP],
}

impl Indents {
    const CAP: usize = 12;

    pub fn clear(&mut self) {
        *self = Indents::default();
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn last(&self) -> Option<u32> {
        self.len.checked_sub(1).map(|i| self.at[i])
    }

    pub fn pop(&mut self) {
        if self.len > 0 {
            self.len -= 1;
            // Cleared so that equal stacks compare equal.
            self.at[self.len] = 0;
        }
    }

    pub fn push(&mut self, indent: u32) {
        if self.len < Self::CAP {
            self.at[self.len] = indent;
            self.len += 1;
        }
    }
}

/// How many lines each format recognised in one file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FormatCounts([u64; FORMAT_COUNT]);

const FORMAT_COUNT: usize = Format::Trackio as usize + 1;

impl Parser {
    /// A parser that also tries the user's own patterns first.
    /// The user's patterns this parser tries first.
    pub fn patterns(&self) -> &[user::UserPattern] {
        &self.user
    }

    pub fn with_patterns(user: Arc<Vec<user::UserPattern>>) -> Self {
        Parser {
            user,
            ..Parser::default()
        }
    }

    /// A parser in the default context with the same user patterns, for another thread.
    pub fn fresh(&self) -> Parser {
        Parser::with_patterns(self.user.clone())
    }

    /// The context the next line will be parsed in.
    pub fn context(&self) -> Context {
        self.ctx
    }

    pub fn set_context(&mut self, ctx: Context) {
        self.ctx = ctx;
    }

    /// Parses one record (a line or a `\r` redraw) and appends what it says to `out`: the
    /// tests' way in; the feed passes what it knows of the line (`parse_known`).
    #[cfg(test)]
    pub fn parse(&mut self, raw: &[u8], out: &mut Vec<Record>) -> LineInfo {
        self.parse_known(raw, None, out)
    }

    /// Parses one record (a line or a `\r` redraw) and appends what it says to `out`, given
    /// `raw` as a `str` when the caller knows it already (a block of lines checked as UTF-8
    /// at once costs a fraction of checking each line).
    pub fn parse_known(
        &mut self,
        raw: &[u8],
        utf8: Option<&str>,
        out: &mut Vec<Record>,
    ) -> LineInfo {
        debug_assert!(utf8.is_none_or(|t| t.as_bytes() == raw));
        // A user's regex may tell digits apart (`step [1-4]\d`), which the shape memo
        // cannot see, so their files are always parsed in full.
        if !self.user.is_empty() {
            return self.parse_whole(raw, out);
        }
        let mut shapes = std::mem::take(&mut self.shapes);
        let info = self.parse_shaped(&mut shapes, raw, utf8, out);
        self.shapes = shapes;
        info
    }

    /// The shape the last line was read from, when the memo read it: lines with the same
    /// key are the same bytes but for their numbers' digits (a 64-bit hash of both, as the
    /// memo trusts), in the same context.
    pub fn served_shape(&self) -> Option<u64> {
        self.served
    }

    /// Step records' boxes the model has read, to fill again for the lines to come.
    pub fn recycle(&mut self, boxes: StepBoxes) {
        self.reads.2.append(boxes);
    }

    /// Step records' boxes kept to fill again.
    #[cfg(test)]
    pub fn spare_steps(&self) -> usize {
        self.reads.2.kept()
    }

    /// Lines read from the shape memo rather than parsed in full.
    #[cfg(test)]
    pub fn memo_hits(&self) -> u64 {
        self.shapes.served()
    }

    fn parse_whole(&mut self, raw: &[u8], out: &mut Vec<Record>) -> LineInfo {
        let mut buf = std::mem::take(&mut self.buf);
        let text = clean::clean(raw, &mut buf);
        let info = self.parse_text(text, out);
        self.buf = buf;
        info
    }

    /// Reads the line from its shape when the memo trusts it, else parses it in full (and
    /// lets the memo learn from it).
    fn parse_shaped(
        &mut self,
        shapes: &mut shape::Shapes,
        raw: &[u8],
        utf8: Option<&str>,
        out: &mut Vec<Record>,
    ) -> LineInfo {
        let before = self.ctx;
        self.served = None;
        let key = match shapes.lookup(raw, &before) {
            shape::Lookup::Trusted(program, key) => {
                let mut buf = std::mem::take(&mut self.buf);
                let done = program
                    .text(raw, utf8, &mut buf)
                    .and_then(|text| program.run(raw, text, &before, out, &mut self.reads));
                self.buf = buf;
                if let Some((info, ctx)) = done {
                    self.ctx = ctx;
                    self.served = Some(key);
                    shapes.count_served();
                    return info;
                }
                key
            }
            shape::Lookup::Full => return self.parse_whole(raw, out),
            shape::Lookup::Learn(key) => key,
        };
        let start = out.len();
        let mut buf = std::mem::take(&mut self.buf);
        let text = clean::clean(raw, &mut buf);
        let (info, reads) = trace::reads_of(text, || self.parse_text(text, out));
        shapes.learn(
            key,
            &shape::ParsedLine {
                raw,
                text,
                reads: &reads,
                before: &before,
                after: self.ctx,
                info,
                records: &out[start..],
            },
        );
        self.buf = buf;
        info
    }

    fn parse_text(&mut self, text: &str, out: &mut Vec<Record>) -> LineInfo {
        let rule = is_rule(text);
        if rule || text.trim().is_empty() {
            // A dumped script ends where the log draws its rule (a rule of `#` is a comment).
            self.ctx.script &= !rule || text.trim_start().starts_with('#');
            return LineInfo {
                blank: true,
                ..LineInfo::default()
            };
        }
        let (prefix, payload) = prefix::strip(text);
        let mut info = LineInfo {
            time: prefix.time.map(|t| t.secs),
            yearless: prefix.time.is_some_and(|t| t.yearless),
            rank: prefix.rank,
            ..LineInfo::default()
        };
        self.ctx.since_cache = (self.ctx.since_cache + 1).min(CACHE_BLOCK_LINES + 1);
        let before = out.len();
        if !self.user.is_empty()
            && let Some(i) = user::parse(&self.user, payload, out)
        {
            info.format = Some(Format::User);
            info.pattern = u8::try_from(i).ok();
        }
        if info.format.is_none() {
            let payload = launcher_host(payload).unwrap_or(payload);
            info.format = dispatch(payload, prefix.logger, &mut self.ctx, out);
        }
        // Step lines never carry these messages (a message glued onto a bar is looked at by
        // the bar's parser), so the searches run only on the other lines.
        if !out[before..].iter().any(|r| matches!(r, Record::Step(_))) {
            events::detect(payload, out);
        }
        info.glued = self.ctx.glued_format.take();
        // NCCL's INFO lines (hundreds per rank at start-up) would hide the shapes a user could
        // write a pattern for; a dumped script's code has nothing to read.
        info.blank = info.format.is_none()
            && out.len() == before
            && (self.ctx.script
                || memchr::memmem::find(payload.as_bytes(), b"NCCL INFO ").is_some());
        info
    }
}

impl FormatCounts {
    pub fn add(&mut self, info: &LineInfo) {
        for f in [info.format, info.glued].into_iter().flatten() {
            self.0[f as usize] += 1;
        }
    }

    /// The file's primary format: the most frequent framework format, else the most frequent
    /// generic one (key-value, tqdm, timing, cache, memory monitor).
    pub fn primary(&self) -> Option<Format> {
        let best = |generic: bool| {
            ALL_FORMATS
                .iter()
                .filter(|f| is_generic(**f) == generic && self.0[**f as usize] > 0)
                .max_by_key(|f| (self.0[**f as usize], std::cmp::Reverse(**f as usize)))
                .copied()
        };
        best(false).or_else(|| best(true))
    }

    /// How many lines each format recognised, for the report.
    pub fn counts(&self) -> Vec<(Format, u64)> {
        ALL_FORMATS
            .iter()
            .map(|f| (*f, self.0[*f as usize]))
            .filter(|(_, n)| *n > 0)
            .collect()
    }
}

/// The `deepspeed` launcher's `hostname: ` in front of worker output. A host name has a digit
/// or a hyphen and is not a key we know, so `loss: 0.5` and `step: 14` stay whole.
fn launcher_host(p: &str) -> Option<&str> {
    let p = p.trim_start();
    // A plain byte search: this runs on every line.
    let colon = memchr::memchr(b':', &p.as_bytes()[..p.len().min(65)])?;
    let (host, rest) = (&p[..colon], p[colon + 1..].strip_prefix(' ')?);
    let hostlike = !host.is_empty()
        && host.len() < 64
        && host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.' || b == b'_')
        && host.bytes().any(|b| b == b'-' || b.is_ascii_digit())
        // A number alone is a count (Darknet's iteration), not a host.
        && !host.bytes().all(|b| b.is_ascii_digit())
        && vocabulary::lookup(host).is_none();
    hostlike.then_some(rest)
}

fn is_generic(f: Format) -> bool {
    matches!(
        f,
        Format::KeyValue | Format::Tqdm | Format::Timing | Format::Cache | Format::MemoryMonitor
    )
}

const ALL_FORMATS: [Format; FORMAT_COUNT] = [
    Format::KeyValue,
    Format::Timing,
    Format::Cache,
    Format::MemoryMonitor,
    Format::Mmcv,
    Format::Mmengine,
    Format::HfTrainer,
    Format::Accelerate,
    Format::Lightning,
    Format::Tqdm,
    Format::Detectron2,
    Format::Timm,
    Format::Megatron,
    Format::DeepSpeed,
    Format::NanoGpt,
    Format::Torchtitan,
    Format::Keras,
    Format::Fairseq,
    Format::Ultralytics,
    Format::User,
    Format::TensorBoard,
    Format::MetricsCsv,
    Format::MetricsJson,
    Format::Wandb,
    Format::Mlflow,
    Format::Swanlab,
    Format::Clearml,
    Format::Trackio,
];

/// A line drawn to separate others (`------`, `=====`, `───`): no text to read.
fn is_rule(text: &str) -> bool {
    let t = text.trim();
    t.len() >= 3 && t.chars().all(|c| "-=_*~+#|─━═".contains(c))
}

/// Reads a line of the log: a line of a dumped script as such, any other as its format.
pub(crate) fn dispatch(
    payload: &str,
    logger: Option<&str>,
    ctx: &mut Context,
    out: &mut Vec<Record>,
) -> Option<Format> {
    let p = payload.trim_start();
    // A log line never starts with Python's imports; a dumped script does.
    if payload.len() == p.len()
        && (p.starts_with("import ") || p.starts_with("from ") && p.contains(" import "))
    {
        ctx.script = true;
    }
    if ctx.script {
        return script_line(payload, logger, ctx, out);
    }
    log_line(payload, logger, ctx, out)
}

/// Tries the formats in order of their cheapest distinguishing prefix.
fn log_line(
    payload: &str,
    logger: Option<&str>,
    ctx: &mut Context,
    out: &mut Vec<Record>,
) -> Option<Format> {
    let indent = payload.len() - payload.trim_start().len();
    let p = payload.trim();
    let first = *p.as_bytes().first()?;
    if ctx.entry_step.is_some() {
        if indent > 0 {
            if let Some(f) = frameworks::record_figure(p, ctx, out) {
                return Some(f);
            }
        } else {
            ctx.entry_step = None;
        }
    }
    // Under a table's header, a row of numbers is read by the names above it.
    if ctx.table.is_some()
        && let Some(f) = header_table::row(payload, ctx, out)
    {
        return Some(f);
    }
    let found = match first {
        b'{' => frameworks::dict_line(p, logger, out),
        b'E' | b'I' if p.starts_with("Epoch(") || p.starts_with("Iter(") => mmlab::mmengine(p, out),
        b'E' | b'I' if p.starts_with("Epoch [") || p.starts_with("Iter [") => mmlab::mmcv(p, out),
        b'E' if p.starts_with("Epoch ") => progress::epoch_line(p, ctx, out),
        b'E' if p.starts_with("Epoch:") => frameworks::meters(p, out),
        b'T' if p.starts_with("Train: ") => frameworks::timm(p, out),
        b'T' | b'V' if p.starts_with("Test: [") || p.starts_with("Validation: [") => {
            eval(p, Format::Timm, out)
        }
        // MetricLogger's evaluation header (`Test:  [78/79]  eta: ...  loss: 11.58 (11.55)`).
        b'T' | b'V' | b'E' if evaluation_header(p) => eval(p, Format::KeyValue, out),
        b'i' if p.starts_with("iteration") => frameworks::megatron(p, out),
        b'B' if p.starts_with("Building device mesh") => frameworks::mesh(p, out),
        // DeepSpeed-Chat's print_throughput: one rank's micro-batch (`Batch Size: 2`), its
        // samples/s not the job's; the engine's timer line gives those.
        b'M' if p.starts_with("Model Parameters:") && p.contains("Latency:") => {
            Some(Format::DeepSpeed)
        }
        b'i' if p.starts_with("iter ") => frameworks::nanogpt(p, out),
        b'i' | b'e' if p.starts_with("iter: ") || p.starts_with("eta: ") => {
            frameworks::detectron2(p, out)
        }
        b'F' if p.starts_with("FIT Profiler") => frameworks::profiler_header(p, out),
        b'e' | b'|' => frameworks::profiler_row(p, out)
            .or_else(|| frameworks::fairseq(p, logger, out))
            .or_else(|| frameworks::accelerate(p, out))
            .or_else(|| frameworks::deepspeed(p, out)),
        b't' if p.starts_with("train_") => frameworks::metrics_line(p, out),
        b't' if p.starts_with("timer: ") => step_timer(p, out),
        b't' if p.starts_with("time (ms)") => frameworks::time_line(p, out),
        b'(' => frameworks::across_ranks_header(p, out),
        b':' if p.starts_with(":::MLLOG") => frameworks::mllog(p, out),
        b's' if p.starts_with("step:") => frameworks::torchtitan(p, out),
        b's' if p.starts_with("steps: ") || p.starts_with("step=") => frameworks::deepspeed(p, out),
        b's' if p.starts_with("samples/sec:") => frameworks::megatron(p, out),
        b's' if p.starts_with("step ") && p.contains(": train loss") => {
            eval(p, Format::NanoGpt, out)
        }
        b's' if p.starts_with("step ") && p.contains(" | ") => frameworks::llm_step(p, out),
        b's' if p.starts_with("s:") => frameworks::llmc_file(p, out),
        b'v' if p.starts_with("validate step:") => eval(p, Format::Torchtitan, out),
        b'v' if p.starts_with("validation loss at iteration") => eval(p, Format::Megatron, out),
        b'[' if p.starts_with("[step=") => {
            frameworks::record_header(p, ctx, out).or_else(|| stats::bracket_line(p, ctx, out))
        }
        b'[' => frameworks::headless_meter(p, out).or_else(|| stats::bracket_line(p, ctx, out)),
        b'0'..=b'9' if p.contains(" avg") && p.contains(" rate, ") => frameworks::darknet(p, out),
        b'0'..=b'9' => {
            progress::counter_line(p, ctx, out).or_else(|| frameworks::deepspeed(p, out))
        }
        _ => None,
    };
    if found.is_some() {
        return found;
    }
    if p.starts_with("Class ") && p.contains("Instances") {
        // Ultralytics' validation bar.
        return eval(p, Format::Ultralytics, out);
    }
    // Megatron's timers, one a line: `forward-compute .....: (5424.15, 6285.74)`.
    if let Some(f) = frameworks::across_ranks_line(p, out) {
        return Some(f);
    }
    if let Some(f) = stats::stats_line(p, indent, ctx, out) {
        return Some(f);
    }
    if let Some(f) = progress::tqdm(p, ctx, out) {
        return Some(f);
    }
    let found = generic(p, ctx, out);
    if found.is_none()
        && let Some(t) = header_table::header(payload)
    {
        ctx.table = Some(t);
        return Some(Format::KeyValue);
    }
    found
}

/// A line of a training script's code printed into the log: a plain assignment of numbers
/// is configuration (script.rs); any other code says nothing, however much it looks like a
/// setting (`dtype=torch.float32` in a kernel, `grad_accum_steps = 8 // world_size`). A step
/// line means the log proper has begun.
fn script_line(
    p: &str,
    logger: Option<&str>,
    ctx: &mut Context,
    out: &mut Vec<Record>,
) -> Option<Format> {
    if let Some(f) = script::code_facts(p.trim(), out) {
        return Some(f);
    }
    let (before, saved) = (out.len(), *ctx);
    ctx.script = false;
    let found = log_line(p, logger, ctx, out);
    if out[before..].iter().any(|r| matches!(r, Record::Step(_))) {
        return found;
    }
    out.truncate(before);
    *ctx = saved;
    None
}

/// A line in the generic key=value families: a step record when it carries at least two step
/// figures, one of them a step, a time, a rate or a loss; config facts otherwise. A line of
/// config facts whose only step figure is a step states the plan (`num_workers=4,
/// batch_size=16, steps=2500`): the total, not the current step. Cache counters
/// (`hits=8245 misses=1755`) are a cache reading.
fn generic(p: &str, ctx: &mut Context, out: &mut Vec<Record>) -> Option<Format> {
    if let Some(section) = Section::opened_by(p) {
        ctx.section = section;
    }
    let before = out.len();
    if let Some(f) = script::facts(p, out) {
        return Some(f);
    }
    if printed_object(p) {
        // A dataclass or namespace printed whole (`TrainConfig(run_name='x', model=
        // ModelConfig(max_sequence_length=4096), global_train_batch_size=512)`): its settings.
        kv::assignments(p, &mut |key, value| {
            if let Some(fact) = vocabulary::lookup(key).and_then(|f| kv::config_fact(f, key, value))
            {
                push_setting(ctx.section, fact, out);
            }
        });
        return (out.len() > before).then_some(Format::KeyValue);
    }
    let mut rec = StepRecord::default();
    let mut cache = CacheRecord::default();
    let mut seen = kv::Collected::default();
    let (mut core, mut measured, mut facts) = (false, false, 0);
    let (mut evaluated, mut only_evaluated) = (false, true);
    // `Epoch 1, batch 50`: a batch's number beside its epoch, not a batch's size; told once
    // the whole line is read.
    let mut batch_word = None;
    let mut eval_seen = kv::Collected::default();
    let mut steps_only = true;
    kv::pairs(p, &mut |key, value| {
        let evaluation = evaluation_key(key);
        evaluated |= evaluation;
        only_evaluated &= evaluation;
        if key.trim().eq_ignore_ascii_case("batch") && batch_word.is_none() {
            batch_word = Some(value);
            return;
        }
        let Some(field) = vocabulary::lookup(key) else {
            return;
        };
        if kv::apply_cache(field, value, &mut cache) {
            return;
        }
        if let Some(fact) = kv::config_fact(field, key, value) {
            push_setting(ctx.section, fact, out);
            facts += 1;
        }
        if evaluation && matches!(field, vocabulary::Field::Loss(_)) {
            // `Valid loss: 7.97` beside `Train loss: 8.01`: the evaluation's, not the step's.
            kv::apply(field, value, &mut StepRecord::default(), &mut eval_seen);
            return;
        }
        if kv::apply(field, value, &mut rec, &mut seen) {
            let step = field == vocabulary::Field::Step;
            steps_only &= matches!(
                field,
                vocabulary::Field::Step | vocabulary::Field::Total | vocabulary::Field::TotalSteps
            );
            let measure = matches!(
                field,
                vocabulary::Field::StepTime(_)
                    | vocabulary::Field::IntervalTime(..)
                    | vocabulary::Field::DataTime(_)
                    | vocabulary::Field::TimePerStep
                    | vocabulary::Field::SamplesPerS
                    | vocabulary::Field::ItersPerS
                    | vocabulary::Field::Loss(_)
                    | vocabulary::Field::TokensPerS
            );
            core |= step || measure;
            measured |= measure;
        }
    });
    if let Some(value) = batch_word {
        let field = if rec.epoch.is_some() && rec.step.is_none() {
            vocabulary::Field::Step
        } else {
            vocabulary::Field::BatchSize
        };
        if let Some(fact) = kv::config_fact(field, "batch", value) {
            push_setting(ctx.section, fact, out);
            facts += 1;
        }
        if kv::apply(field, value, &mut rec, &mut seen) && field == vocabulary::Field::Step {
            core = true;
        }
    }
    let cached = (cache != CacheRecord::default()).then_some(Record::Cache(cache));
    if seen.step_range {
        // A summary over a range of steps (`Steps 1-50: Energy=..., Time=210.3 s`) tells no
        // step's figures.
        out.truncate(before);
        out.extend(cached);
        return (out.len() > before).then_some(Format::KeyValue);
    }
    if let Some(step) = rec.step
        && !measured
        && facts > 0
    {
        out.push(Record::Config(ConfigFact::TotalSteps(
            rec.total.unwrap_or(step),
        )));
        out.extend(cached);
        return Some(Format::KeyValue);
    }
    // A step and an epoch alone (`resumed epoch: 24, iter: 95064`) say where a run is, not
    // what a step did: a message, not a step line.
    if core && seen.fields >= 2 && (measured || seen.fields >= 3) {
        // Facts named inside a step line are figures of that step, not the run's config.
        out.truncate(before);
        out.extend(cached);
        if evaluated && rec.step.is_some() {
            // A step that ran an evaluation too (verl's step 170 with `val-core/...` and
            // `timing_s/testing`): its time holds the evaluation's.
            push_event(EventKind::Eval, p, out);
            rec.evaluated = true;
        }
        push_step(rec, &seen, p, out);
        return Some(Format::KeyValue);
    }
    out.extend(cached);
    seen.non_finite |= eval_seen.non_finite;
    if evaluated
        && only_evaluated
        && (seen.fields > 0 || eval_seen.fields > 0 || seen.non_finite)
        && rec.step.is_none()
        && out.len() == before
    {
        // An evaluation's result alone (`validation loss: 6.1696`): an evaluation ran.
        push_event(EventKind::Eval, p, out);
        if seen.non_finite {
            push_event(EventKind::NonFinite, p, out);
        }
        return Some(Format::KeyValue);
    }
    if seen.non_finite {
        push_event(EventKind::NonFinite, p, out);
    }
    // A step named alone (Coqui's `--> STEP: 24/36 -- GLOBAL_STEP: 1000025`): its figures
    // come on the indented lines below it, as OLMo's do.
    if let Some(step) = rec.step
        && steps_only
        && !evaluated
        && out.len() == before
        && names_a_step_alone(p)
    {
        ctx.entry_step = Some(step);
        return Some(Format::KeyValue);
    }
    (out.len() > before).then_some(Format::KeyValue)
}

/// The line is a step's name and number, nothing else (`--> STEP: 24/36 -- GLOBAL_STEP: 1000025`,
/// `Step 100`): no message that mentions a step (`Grad overflow on iteration 0`).
fn names_a_step_alone(p: &str) -> bool {
    p.split(|c: char| c.is_whitespace() || matches!(c, ':' | '=' | '[' | ']' | '(' | ')' | ','))
        .filter(|w| w.bytes().any(|b| b.is_ascii_alphanumeric()))
        .all(|w| {
            w.starts_with(|c: char| c.is_ascii_digit())
                || vocabulary::field_of(w) == Some(vocabulary::Field::Step)
        })
}

/// A setting read in `section`: an evaluation loader's settings are not the training's.
fn push_setting(section: Section, fact: ConfigFact, out: &mut Vec<Record>) {
    if section != Section::Eval || !fact.is_loader_setting() {
        out.push(Record::Config(fact));
    }
}

/// A key of an evaluation's result or timer (`val-core/gsm8k/acc`, `val/loss`,
/// `validation loss`, `timing_s/testing`).
fn evaluation_key(key: &str) -> bool {
    let k = key.as_bytes();
    let starts = |w: &[u8]| {
        k.len() > w.len()
            && k[..w.len()].eq_ignore_ascii_case(w)
            && matches!(k[w.len()], b'/' | b'-' | b'_' | b' ')
    };
    starts(b"val")
        || starts(b"valid")
        || starts(b"validation")
        || starts(b"eval")
        || starts(b"evaluation")
        || starts(b"test")
        || key.ends_with("/testing")
        || key.ends_with("/validation")
}

/// `timer: 0.3520 sec.` alone on its line (ssd.pytorch's loop): the time of the iteration
/// printed next.
fn step_timer(p: &str, out: &mut Vec<Record>) -> Option<Format> {
    let value = p.strip_prefix("timer: ")?.strip_suffix(" sec.")?;
    let mut rec = StepRecord::default();
    let mut seen = kv::Collected::default();
    kv::apply(
        vocabulary::Field::StepTime(num::Unit::S),
        value,
        &mut rec,
        &mut seen,
    )
    .then_some(())?;
    push_step(rec, &seen, p, out);
    Some(Format::KeyValue)
}

/// `Test:  [78/79]`, `Val: [3/50]`, `Eval:  [..`: a meter's header for an evaluation loop.
fn evaluation_header(p: &str) -> bool {
    let Some((head, rest)) = p.split_once(':') else {
        return false;
    };
    matches!(
        head,
        "Test" | "Val" | "Valid" | "Validation" | "Eval" | "Evaluation"
    ) && rest.trim_start().starts_with('[')
}

/// `Name(key=value, ...)` at the start of the line: a Python object printed whole (a config
/// dataclass, an argparse `Namespace`).
fn printed_object(p: &str) -> bool {
    let name = p
        .bytes()
        .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
        .count();
    name > 0
        && p[name..].starts_with('(')
        && p[name + 1..]
            .split(['=', ',', ')'])
            .next()
            .is_some_and(|k| {
                !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            })
        && p.as_bytes()
            .get(name + 1 + p[name + 1..].find(['=', ',', ')']).unwrap_or(0))
            == Some(&b'=')
}

/// Reads every recognised pair of `s` into `rec`.
pub(crate) fn read_pairs(s: &str, rec: &mut StepRecord, seen: &mut kv::Collected) {
    kv::pairs(s, &mut |key, value| {
        if let Some(field) = vocabulary::lookup(key) {
            kv::apply(field, value, rec, seen);
        }
    });
}

/// A line whose figures are all plain pairs and that must name its step (detectron2,
/// torchtitan): a step record of `format`, with `meaning` saying what the framework's figures
/// are, or nothing.
pub(crate) fn pairs_step(
    p: &str,
    format: Format,
    meaning: fn(&mut StepRecord),
    out: &mut Vec<Record>,
) -> Option<Format> {
    let mut rec = StepRecord::default();
    let mut seen = kv::Collected::default();
    read_pairs(p, &mut rec, &mut seen);
    rec.step?;
    meaning(&mut rec);
    push_step(rec, &seen, p, out);
    Some(format)
}

/// Appends a step record, and a non-finite event when a loss or grad norm was NaN or inf
/// (after the step, so that the event belongs to it).
pub(crate) fn push_step(rec: StepRecord, seen: &kv::Collected, text: &str, out: &mut Vec<Record>) {
    let impossible = if seen.overflow {
        Some("a number that overflows")
    } else {
        rec.impossible()
    };
    if let Some(what) = impossible {
        out.push(Record::Rejected { what });
        return;
    }
    out.push(Record::Step(Box::new(rec)));
    if seen.non_finite {
        push_event(EventKind::NonFinite, text, out);
    }
}

/// Event text is the payload, cut to a length a report line can carry.
pub(crate) fn push_event(kind: EventKind, text: &str, out: &mut Vec<Record>) {
    const MAX: usize = 240;
    let text = text.trim();
    let mut end = text.len().min(MAX);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    out.push(Record::Event {
        kind,
        text: text[..end].to_string(),
    });
}

/// A validation or evaluation line: an event, never a step.
pub(crate) fn eval(p: &str, format: Format, out: &mut Vec<Record>) -> Option<Format> {
    push_event(EventKind::Eval, p, out);
    Some(format)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Vec<Record> {
        let mut out = Vec::new();
        Parser::default().parse(line.as_bytes(), &mut out);
        out
    }

    fn steps(lines: &[&str]) -> Vec<StepRecord> {
        let mut parser = Parser::default();
        let mut out = Vec::new();
        for l in lines {
            parser.parse(l.as_bytes(), &mut out);
        }
        out.into_iter()
            .filter_map(|r| match r {
                Record::Step(s) => Some(*s),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn names_and_numbers_taking_turns_are_pairs() {
        // TensoRF's `Step, 140, Loss, ..., StepTime, ..., TrainTime, ...,` (camel case names).
        let got =
            steps(&["Step, 140, Loss, 0.1166, PSNR, 14.8, StepTime, 0.131, TrainTime, 18.6,"]);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!((got[0].step, got[0].loss), (Some(140), Some(0.1166)));
        assert!(
            got[0]
                .step_time_ms
                .is_some_and(|ms| (ms - 131.0).abs() < 1e-9)
        );
        assert_eq!(got[0].elapsed_s, Some(18.6));
        assert!(steps(&["Saving model, 3, files"]).is_empty());
    }

    #[test]
    fn a_step_named_alone_owns_the_indented_figures_below_it() {
        // Coqui's trainer.
        let got = steps(&[
            "   --> STEP: 24/36 -- GLOBAL_STEP: 1000025",
            "     | > loss: 26.92974  (35.54205)",
            "     | > step_time: 1.31510  (1.38766)",
            "Grad overflow on iteration 7",
            "     | > step_time: 9.0",
        ]);
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got.iter().all(|s| s.step == Some(1_000_025)));
        assert!(
            got[1]
                .step_time_ms
                .is_some_and(|ms| (ms - 1315.1).abs() < 1e-9)
        );
    }

    #[test]
    fn json_lines_of_trainers_name_their_steps_and_clocks() {
        // LLaMA-Factory's trainer_log.jsonl: an evaluation's key with no value is no evaluation.
        let got = steps(&[
            r#"{"current_steps": 5, "total_steps": 8712, "loss": 1.7484, "eval_loss": null, "elapsed_time": "4 days, 0:03:29"}"#,
        ]);
        assert_eq!((got[0].step, got[0].total), (Some(5), Some(8712)));
        assert_eq!(got[0].elapsed_s, Some(4.0 * 86_400.0 + 209.0));
        // ms-swift's logging.jsonl.
        let got = steps(&[
            r#"{"loss": 0.237, "global_step/max_steps": "20/438", "elapsed_time": "1m 42s"}"#,
        ]);
        assert_eq!((got[0].step, got[0].total), (Some(20), Some(438)));
        assert_eq!(got[0].elapsed_s, Some(102.0));
    }

    #[test]
    fn an_evaluations_result_alone_is_an_evaluation() {
        // build-nanogpt's line after its evaluation, and llm.c's with a NaN.
        let is_eval = |out: &[Record]| {
            out.iter().any(|r| {
                matches!(
                    r,
                    Record::Event {
                        kind: EventKind::Eval,
                        ..
                    }
                )
            })
        };
        assert!(is_eval(&parse("validation loss: 6.1696")));
        let out = parse("val loss nan");
        assert!(is_eval(&out));
        assert!(out.iter().any(|r| matches!(
            r,
            Record::Event {
                kind: EventKind::NonFinite,
                ..
            }
        )));
        // A config dump's evaluation settings, or a training figure beside one, are not.
        assert!(!is_eval(&parse("val_dataloader = dict(")));
        assert!(!is_eval(&parse("train loss: 2.1 val loss: 2.3")));
    }

    #[test]
    fn a_header_that_states_the_plan_is_the_total_not_the_step() {
        let out =
            parse("Dataset: 700 samples, cache 4.0 GB, num_workers=4, batch_size=16, steps=2500");
        assert!(out.contains(&Record::Config(ConfigFact::TotalSteps(2500))));
        assert!(out.contains(&Record::Config(ConfigFact::NumWorkers(4))));
        assert!(!out.iter().any(|r| matches!(r, Record::Step(_))));
        let out = parse("config: max_iters=80000 batch_size=32");
        assert!(out.contains(&Record::Config(ConfigFact::TotalSteps(80000))));
        // A step line is still a step line.
        let out = parse("step=20 loss=0.5 lr=1e-4");
        assert!(matches!(&out[..], [Record::Step(s)] if s.step == Some(20)));
    }

    #[test]
    fn a_dumped_script_is_read_for_its_configuration_only() {
        // Our own script in the shape of modded-nanogpt's logs, which print their code first.
        let log = "import os
import torch
with open(sys.argv[0]) as f:
    code = f.read() # read the code of this file ASAP, for logging
########################################
#  kernels
########################################
def scale(x, s):
    return x.new_tensor(s, dtype=torch.float32, pin_memory=True)
@dataclass
class Hyperparameters:
    train_batch_size: int = 2048 * 16 * 8
    train_max_seq_len: int = 128 * 16
    val_batch_size: int = 4 * 64 * 1024 * 8
    num_iterations: int = 1500 # number of iterations to run
    block_size: int = 128
grad_accum_steps = 8 // world_size
print0(f\"step:{step}/{train_steps} train_time:{training_time_ms:.0f}ms\")
====================================================================================================
Running PyTorch 2.9.0 compiled for CUDA 12.6
====================================================================================================
step:1/1500 train_time:473ms step_avg:472.96ms
step:2/1500 train_time:494ms step_avg:246.81ms";
        let mut parser = Parser::default();
        let mut out = Vec::new();
        let mut unparsed = 0;
        for line in log.lines() {
            let before = out.len();
            let info = parser.parse(line.as_bytes(), &mut out);
            if !info.blank && info.format.is_none() && out.len() == before {
                unparsed += 1;
            }
        }
        let facts: Vec<&ConfigFact> = out
            .iter()
            .filter_map(|r| match r {
                Record::Config(f) => Some(f),
                _ => None,
            })
            .collect();
        // The dataclass's plain numbers; no dtype, pinning, accumulation or block from code.
        assert_eq!(
            facts,
            vec![
                &ConfigFact::TokensPerStep(262_144),
                &ConfigFact::SeqLen(2048),
                &ConfigFact::TotalSteps(1500),
            ]
        );
        let steps: Vec<Option<u64>> = out
            .iter()
            .filter_map(|r| match r {
                Record::Step(s) => Some(s.step),
                _ => None,
            })
            .collect();
        assert_eq!(steps, vec![Some(1), Some(2)]);
        // Code is not "not understood": only the log's own line after the script is.
        assert_eq!(unparsed, 1);
    }

    #[test]
    fn cache_counters_as_pairs() {
        let out = parse("cache: hits=8245 misses=1755 hit_rate=0.8245");
        assert_eq!(
            out,
            vec![Record::Cache(CacheRecord {
                hits: Some(8245),
                misses: Some(1755),
                hit_rate_pct: Some(82.45),
                ..CacheRecord::default()
            })]
        );
    }

    #[test]
    fn the_scripts_own_memory_warning_is_an_event() {
        let out = parse("⚠️  WARNING: System memory usage is critically high (91.2%)!");
        assert!(matches!(
            &out[..],
            [Record::Event {
                kind: EventKind::MemoryCritical,
                ..
            }]
        ));
    }

    #[test]
    fn an_overflowing_number_is_rejected_and_a_nan_is_an_event() {
        let out =
            parse("step 999999999999999999999999/1 | loss=1e999 | -5 samples/s | data_time=-1ms");
        assert!(matches!(&out[..], [Record::Rejected { .. }]));
        let out = parse("step 12/100 | loss=nan | 2.0 samples/s");
        assert!(matches!(
            &out[..],
            [
                Record::Step(_),
                Record::Event {
                    kind: EventKind::NonFinite,
                    ..
                }
            ]
        ));
    }
}
