//! `steptop report`: whole files through the same parser and model, summarised once. The JSON
//! form is a versioned schema (see docs/report.md); text is for a terminal, markdown for an issue.

mod html;
mod markdown;
mod text;

use crate::model::stacks::StackSummary;

use serde::Serialize;

use crate::diagnose::Alert;
use crate::diagnose::checklist::{self, Item};
use crate::input::ingest::Feed;
use crate::model::basis::MeanFrom;
use crate::model::breakdown::{Breakdown, Over};
use crate::model::rank_state::{LossTrack, RankState};
use crate::model::ranks::RankSpread;
use crate::model::window::RunStats;
use crate::model::{Facts, Model};
use crate::parse::record::SummaryRecord;

use crate::analysis::Analysis;
pub use html::Curves;
pub(crate) use html::{Curve, Draw, chart, esc as html_escape, page_start, share_bar};

/// The forms a report is written in (`steptop report --format`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Form {
    Text,
    Json,
    Markdown,
    /// One self-contained page: charts in inline SVG, light or dark, printable.
    Html,
}

/// An analysis's report in `form`: what `steptop report` prints, the one way into this sink.
pub fn render(a: &Analysis, form: Form) -> Result<String, crate::common::error::Error> {
    let r = Report::build(a);
    Ok(match form {
        Form::Text => text::render(&r),
        Form::Markdown => markdown::render(&r),
        Form::Html => html::render(&r, &Curves::of(&a.model)),
        Form::Json => {
            let mut s = serde_json::to_string_pretty(&r)
                .map_err(|e| crate::common::error::Error::Runtime(e.to_string()))?;
            s.push('\n');
            s
        }
    })
}

/// Bumped on any change a consumer of the JSON would notice.
pub const SCHEMA_VERSION: u32 = 1;

#[derive(Debug, Serialize)]
pub struct Report {
    pub schema_version: u32,
    pub sources: Vec<SourceOut>,
    /// The most frequent shapes of the lines nothing read (numbers folded to `N`), with one
    /// example each: what steptop skipped, to write a `[[pattern]]` for.
    pub unparsed_shapes: Vec<UnparsedOut>,
    /// Runs that ended earlier in the same file (its step count went back: an appended run,
    /// a restart, a resume): the report covers the last one, and lists these.
    pub earlier_runs: Vec<RunOut>,
    /// Earlier runs past the ones listed.
    pub earlier_runs_dropped: u64,
    /// Set when the files look like separate runs (each starts at the same first step): a
    /// sentence pointing to `steptop compare`.
    pub separate_runs: Option<String>,
    /// What reading found wrong with the user's patterns or the figures, one sentence each:
    /// a pattern that read nothing, lines whose data time is longer than their step.
    pub reading_notes: Vec<String>,
    pub steps: StepsOut,
    pub progress: ProgressOut,
    pub step_time_ms: Option<Quantiles>,
    pub data_time_ms: Option<Quantiles>,
    pub data_share: Option<f64>,
    pub samples_per_s: Option<f64>,
    pub iters_per_s: Option<f64>,
    pub tokens_per_s: Option<f64>,
    /// Tokens per second of one GPU: printed (`tgs`), or the job's over its GPUs.
    pub tokens_per_gpu_s: Option<f64>,
    /// The model FLOPs utilisation the log printed last, a percentage.
    pub mfu_pct: Option<f64>,
    /// How each of those figures was had, in words: printed, worked out (from which sizes,
    /// what assumed), or missing and why.
    pub basis: crate::model::basis::BasisOut,
    pub stages: Vec<StageOut>,
    /// Stage lines left out of the per-name figures: their name came after 256 others.
    pub stage_lines_dropped: u64,
    pub forward_ms: Option<f64>,
    pub unlogged_ms: Option<f64>,
    /// Where a step's time goes: every figure text and markdown print comes from here.
    pub breakdown: BreakdownOut,
    /// How the timing blocks' totals were read (most blocks), in a sentence.
    pub timing_reading: Option<String>,
    pub cache: Option<CacheOut>,
    pub loss: LossTrack,
    pub last: LastOut,
    /// Every rank up to `RANKS_LISTED`; past that, the `SLOWEST_SHOWN` slowest (the spread
    /// says the rest).
    pub ranks: Vec<RankOut>,
    /// With two ranks or more: p50/p95/max of the ranks' step time and lag, the slowest.
    pub rank_spread: Option<RankSpread>,
    pub config: Facts,
    pub summary: Option<SummaryRecord>,
    pub host_memory: Option<HostMemOut>,
    pub events: Vec<EventOut>,
    pub event_counts: Vec<EventCount>,
    /// The one active alert to fix first; null when none is active.
    pub verdict: Option<Alert>,
    /// The alerts kept, in the order raised, with their first and last step and clear time:
    /// every active one, the first 50 and the latest up to 500 in all.
    pub alerts: Vec<Alert>,
    /// Old cleared alerts no longer listed (counted in `alert_counts`).
    pub alerts_retired: u64,
    /// The step from which the rules judged the run: the step lines before it were its
    /// warm-up, left out of the rules' windows. Null when no step was judged.
    pub judged_from: Option<u64>,
    /// The warm-up's step lines.
    pub warmup_steps: u64,
    /// Alerts ever raised, per rule.
    pub alert_counts: Vec<AlertCount>,
    pub checklist: Vec<Item>,
    /// What the hardware samples of a recording said; null for plain logs.
    pub hardware: Option<HardwareOut>,
    /// Where the trainer's Python stacks were, in a recording that sampled them (the last
    /// five minutes of samples); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stacks: Option<StackSummary>,
}

#[derive(Debug, Serialize)]
pub struct AlertCount {
    pub rule: &'static str,
    pub raised: u64,
}

#[derive(Debug, Serialize)]
pub struct HardwareOut {
    pub samples: u64,
    /// Where the GPU figures came from: a tracker's run and how often it read them, or NVML.
    pub gpu_source: Option<String>,
    pub gpus: Vec<GpuOut>,
    pub host_cpu_pct: Option<Quantiles>,
    /// The host's used memory at its highest, in bytes.
    pub host_mem_peak_bytes: Option<f64>,
    pub trainer_cpu_pct: Option<Quantiles>,
    pub busiest_thread_cpu_pct: Option<Quantiles>,
    /// DataLoader workers seen per sample.
    pub workers: Option<Quantiles>,
    /// The last sample's reason for having no GPU readings.
    pub gpu_error: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct GpuOut {
    pub index: u32,
    /// For a MIG device, its number under GPU `index`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mig_device: Option<u32>,
    /// `1`, or `1:0` for MIG device 0 of GPU 1.
    pub id: String,
    pub name: String,
    pub util_pct: Option<Quantiles>,
    pub power_w: Option<Quantiles>,
    pub power_limit_w: Option<f64>,
    pub mem_used_bytes: Option<Quantiles>,
    pub mem_total_bytes: Option<u64>,
    /// It had fallen off the bus at the last sample.
    pub failed: bool,
}

/// A file read: its format, counts and what went wrong in it.
fn source_out(feed: &Feed) -> SourceOut {
    SourceOut {
        path: feed.path.clone(),
        format: feed.format().map(|f| f.name()),
        lines: feed.stats.lines,
        records: feed.stats.records,
        unparsed: feed.stats.unparsed,
        rejected: feed.stats.rejected,
        first_rejected: feed
            .stats
            .first_rejected
            .as_ref()
            .map(|(line, why, text)| RejectedOut {
                line: *line,
                why,
                text: text.clone(),
            }),
        rank: feed.rank(),
        first_step: feed.first_step(),
        problems: feed.stats.problems.clone(),
    }
}

/// The runs that ended earlier in the files, each with the file it was in.
fn earlier_runs(m: &Model, feeds: &[Feed]) -> Vec<RunOut> {
    m.runs
        .iter()
        .map(|r| RunOut {
            source: feeds
                .get(r.source)
                .map(|f| f.path.clone())
                .unwrap_or_default(),
            run: r.clone(),
        })
        .collect()
}

/// The hottest stages of the timing log, each with its share of the forward.
fn stages_out(m: &Model, forward: Option<f64>) -> Vec<StageOut> {
    m.stages
        .hottest()
        .iter()
        .filter_map(|s| {
            let mean = s.ms.mean()?;
            Some(StageOut {
                name: s.name.clone(),
                depth: s.depth,
                mean_ms: mean,
                p50_ms: s.ms.quantile(0.5)?,
                share: forward.filter(|f| *f > 0.0).map(|f| mean / f),
                trend: s.trend(m.cfg.window_steps),
            })
        })
        .collect()
}

/// The sample cache's figures, where the log printed any.
fn cache_out(cache: &crate::model::cache::CacheState) -> Option<CacheOut> {
    (cache.readings > 0 || cache.printed_rate.is_some() || cache.items.is_some()).then(|| {
        CacheOut {
            hit_rate: cache.hit_rate(),
            recent_hit_rate: cache.recent_hit_rate,
            hits: cache.hits,
            misses: cache.misses,
            items: cache.items,
            memory_used_mb: cache.memory_used_mb,
            memory_total_mb: cache.memory_total_mb,
        }
    })
}

/// The host memory the log's own monitor printed last.
fn host_memory_out(h: &crate::parse::record::HostMemRecord) -> HostMemOut {
    HostMemOut {
        step: h.step,
        process_mb: h.process_mb,
        process_pct: h.process_pct,
        system_used_mb: h.system_used_mb,
        system_total_mb: h.system_total_mb,
        system_pct: h.system_pct,
    }
}

/// The run's events, each with the file (or the hardware) it came from.
fn events_out(m: &Model, feeds: &[Feed]) -> Vec<EventOut> {
    m.events
        .iter()
        .map(|e| EventOut {
            kind: e.kind.name(),
            source: if e.source == crate::model::HARDWARE_SOURCE {
                "hardware".to_string()
            } else {
                feeds
                    .get(e.source)
                    .map(|f| f.path.clone())
                    .unwrap_or_default()
            },
            line: e.line,
            time: e.time,
            text: e.text.clone(),
        })
        .collect()
}

fn hardware(m: &Model) -> Option<HardwareOut> {
    let h = &m.hardware;
    if h.samples == 0 {
        return None;
    }
    Some(HardwareOut {
        samples: h.samples,
        gpu_source: h.gpu_source(),
        gpus: h
            .gpus
            .iter()
            .map(|((index, mig_device), g)| GpuOut {
                index: *index,
                mig_device: *mig_device,
                id: g.id.clone(),
                name: g.name.clone(),
                util_pct: Quantiles::of(&g.util_pct),
                power_w: Quantiles::of(&g.power_w),
                power_limit_w: g.power_limit_w,
                mem_used_bytes: Quantiles::of(&g.mem_used_bytes),
                mem_total_bytes: g.mem_total_bytes,
                failed: g.failed,
            })
            .collect(),
        host_cpu_pct: Quantiles::of(&h.host_cpu_pct),
        host_mem_peak_bytes: h.host_mem_used_bytes.max(),
        trainer_cpu_pct: Quantiles::of(&h.trainer_cpu_pct),
        busiest_thread_cpu_pct: Quantiles::of(&h.busiest_thread_cpu_pct),
        workers: Quantiles::of(&h.workers),
        gpu_error: h.latest().and_then(|s| s.gpu_error.clone()),
    })
}

#[derive(Debug, Serialize)]
pub struct SourceOut {
    pub path: String,
    pub format: Option<&'static str>,
    pub lines: u64,
    pub records: u64,
    pub unparsed: u64,
    /// Lines with impossible figures (counted in `unparsed` too).
    pub rejected: u64,
    /// The first of them, when there is one.
    pub first_rejected: Option<RejectedOut>,
    pub rank: Option<u32>,
    /// The first step the file logs.
    pub first_step: Option<u64>,
    /// What in a metric file could not be read, with where.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub problems: Vec<String>,
}

/// One shape of unparsed lines, across the files.
#[derive(Debug, Serialize)]
pub struct UnparsedOut {
    pub shape: String,
    pub count: u64,
    /// The first line of that shape: its file, line number and text.
    pub source: String,
    pub line: u64,
    pub example: String,
}

/// A run that ended before the one the report covers, in the same file.
#[derive(Debug, Serialize)]
pub struct RunOut {
    pub source: String,
    #[serde(flatten)]
    pub run: crate::model::runs::RunSummary,
}

/// Unparsed shapes a report lists.
const UNPARSED_SHAPES_SHOWN: usize = 5;

/// The most frequent unparsed shapes over every file, the first example of each.
fn unparsed_shapes(feeds: &[Feed]) -> Vec<UnparsedOut> {
    let mut all: std::collections::HashMap<&str, UnparsedOut> = Default::default();
    for feed in feeds {
        for (shape, s) in feed.unparsed_shapes.iter() {
            all.entry(shape)
                .and_modify(|o| o.count += s.count)
                .or_insert_with(|| UnparsedOut {
                    shape: shape.to_string(),
                    count: s.count,
                    source: feed.path.clone(),
                    line: s.line,
                    example: s.example.clone(),
                });
        }
    }
    let mut out: Vec<UnparsedOut> = all.into_values().collect();
    out.sort_by(|a, b| b.count.cmp(&a.count).then_with(|| a.shape.cmp(&b.shape)));
    out.truncate(UNPARSED_SHAPES_SHOWN);
    out
}

/// A line refused because its figures cannot be true.
#[derive(Debug, Serialize)]
pub struct RejectedOut {
    pub line: u64,
    /// What cannot be true (`a step number that overflows`, `a negative or infinite rate`).
    pub why: &'static str,
    pub text: String,
}

#[derive(Debug, Serialize)]
pub struct StepsOut {
    pub count: u64,
    pub first: Option<u64>,
    pub last: Option<u64>,
    pub total: Option<u64>,
}

impl StepsOut {
    /// ` (steps 950..989 of 8880)`, as every format words it; empty without steps.
    pub fn range(&self) -> String {
        match (self.first, self.last, self.total) {
            (Some(first), Some(last), Some(total)) => {
                format!(" (steps {first}..{last} of {total})")
            }
            (Some(first), Some(last), None) => format!(" (steps {first}..{last})"),
            _ => String::new(),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct ProgressOut {
    pub epoch: Option<f64>,
    /// The run reached its planned last step (`steps.total`).
    pub finished: bool,
    /// Our own estimate: steps left times the recent median step time.
    pub eta_s: Option<f64>,
    /// The last ETA the log printed.
    pub logged_eta_s: Option<f64>,
}

/// A run's closing summary (Hugging Face's `train_runtime`, `train_steps_per_second`) as the
/// run's figures, where nothing else times its steps. Its runtime holds every evaluation that
/// ran during training: with one, it is no step's time, and the basis says so.
struct Closing {
    steps_per_s: Option<f64>,
    samples_per_s: Option<f64>,
    /// Evaluations ran: the summary is the wall time of training and evaluation together.
    evaluated: bool,
    /// The run's steps are timed otherwise.
    timed: bool,
}

impl Closing {
    fn of(m: &crate::model::Model) -> Closing {
        let evaluated = m
            .event_counts
            .get(&crate::parse::record::EventKind::Eval)
            .is_some_and(|n| *n > 0);
        let timed = m.merged.step_time_ms.run.count() > 0;
        let usable = !evaluated && !timed;
        Closing {
            steps_per_s: m.summary.steps_per_s.filter(|r| *r > 0.0 && usable),
            samples_per_s: m.summary.samples_per_s.filter(|r| *r > 0.0 && usable),
            evaluated: evaluated && !timed && m.summary.steps_per_s.is_some(),
            timed,
        }
    }

    fn step_ms(&self) -> Option<f64> {
        self.steps_per_s.map(|r| 1000.0 / r)
    }

    /// The basis in words where the summary gives the figures, or is why none is given.
    fn describe(&self, mut basis: crate::model::basis::BasisOut) -> crate::model::basis::BasisOut {
        if self.timed {
            return basis;
        }
        if self.steps_per_s.is_some() {
            basis.step_time = "the run's closing summary (train_steps_per_second over the whole run; no evaluation ran during it)".into();
        }
        if self.samples_per_s.is_some() {
            basis.samples_per_s = "the run's closing summary (train_samples_per_second)".into();
        }
        if self.evaluated {
            basis.step_time = "none: the run's closing summary (train_runtime) holds its evaluations, so it is no step's time".into();
        }
        basis
    }
}

#[derive(Debug, Serialize, Clone, Copy)]
pub struct Quantiles {
    pub p50: f64,
    pub p95: f64,
    pub mean: f64,
}

impl Quantiles {
    /// A single figure for the whole run: its median, tail and mean alike.
    fn one(ms: f64) -> Quantiles {
        Quantiles {
            p50: ms,
            p95: ms,
            mean: ms,
        }
    }

    fn of(s: &RunStats) -> Option<Quantiles> {
        Some(Quantiles {
            p50: s.quantile(0.5)?,
            p95: s.quantile(0.95)?,
            mean: s.mean()?,
        })
    }
}

#[derive(Debug, Serialize)]
pub struct StageOut {
    pub name: String,
    pub depth: u8,
    pub mean_ms: f64,
    pub p50_ms: f64,
    /// Share of the forward time (0..1).
    pub share: Option<f64>,
    /// Recent mean over the run's own early mean.
    pub trend: Option<f64>,
}

/// A step split into its logged parts and the rest, over the whole run.
#[derive(Debug, Serialize)]
pub struct BreakdownOut {
    /// Mean step time.
    pub step_ms: Option<f64>,
    /// In step order: the data wait, the forward, the other logged parts, the unlogged rest.
    pub parts: Vec<PartOut>,
}

#[derive(Debug, Serialize)]
pub struct PartOut {
    pub name: String,
    /// `data`, `forward`, `loss`, `backward`, `optimizer`, `copy`, `stage` (a piece outside
    /// the forward) or `unlogged`.
    pub role: &'static str,
    pub ms: Option<f64>,
    /// Of the mean step (the data part: its paired data share).
    pub share: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct CacheOut {
    pub hit_rate: Option<f64>,
    pub recent_hit_rate: Option<f64>,
    pub hits: Option<u64>,
    pub misses: Option<u64>,
    pub items: Option<u64>,
    pub memory_used_mb: Option<f64>,
    pub memory_total_mb: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct LastOut {
    pub lr: Option<f64>,
    /// The batch size the step lines printed last (`bs 8`).
    pub batch_size: Option<f64>,
    pub grad_norm: Option<f64>,
    pub loss_scale: Option<f64>,
    pub mfu_pct: Option<f64>,
    pub memory_mb: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct RankOut {
    pub rank: u32,
    pub steps: u64,
    pub last: Option<u64>,
    pub step_time_ms: Option<Quantiles>,
    pub data_share: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct HostMemOut {
    pub step: Option<u64>,
    pub process_mb: Option<f64>,
    pub process_pct: Option<f64>,
    pub system_used_mb: Option<f64>,
    pub system_total_mb: Option<f64>,
    pub system_pct: Option<f64>,
}

#[derive(Debug, Serialize)]
pub struct EventOut {
    pub kind: &'static str,
    pub source: String,
    pub line: u64,
    /// When it came, on the run's clock (the charts' time axis).
    pub time: f64,
    pub text: String,
}

#[derive(Debug, Serialize)]
pub struct EventCount {
    pub kind: &'static str,
    pub count: u64,
}

impl Report {
    /// Summarises an analysis.
    pub fn build(a: &Analysis) -> Report {
        let m = &a.model;
        let g = &m.merged;
        let b = m.step_breakdown(Over::Run);
        let forward = b.forward_ms;
        let f = &m.facts;
        let spread = m.rank_spread(SLOWEST_SHOWN);
        let run = g.run_figures();
        let closing = Closing::of(m);
        Report {
            schema_version: SCHEMA_VERSION,
            sources: a.feeds.iter().map(source_out).collect(),
            unparsed_shapes: unparsed_shapes(&a.feeds),
            earlier_runs: earlier_runs(m, &a.feeds),
            earlier_runs_dropped: m.runs_dropped,
            separate_runs: separate_runs(&a.feeds),
            reading_notes: reading_notes(&a.feeds),
            steps: StepsOut {
                count: g.records,
                first: m.ranks.values().filter_map(|r| r.first_step).min(),
                last: m.ranks.values().filter_map(|r| r.last_step).max(),
                total: g.total.or(f.total_steps),
            },
            progress: ProgressOut {
                epoch: g.epoch,
                finished: g.finished(),
                eta_s: g.eta_s(m.cfg.window_steps),
                logged_eta_s: g.logged_eta_s,
            },
            step_time_ms: Quantiles::of(&g.step_time_ms.run)
                .map(|q| Quantiles {
                    mean: g.mean_step_ms().unwrap_or(q.mean),
                    ..q
                })
                .or_else(|| closing.step_ms().map(Quantiles::one)),
            data_time_ms: Quantiles::of(&g.data_time_ms.run),
            data_share: b.data_share,
            // Steps over the time they took, each line over the steps it stands for; the
            // median of the printed rates where no line stands for any (a single line).
            samples_per_s: run
                .samples_per_s
                .or(g.samples_per_s.run.quantile(0.5))
                .or(closing.samples_per_s),
            iters_per_s: run
                .iters_per_s
                .or(g.iters_per_s.run.quantile(0.5))
                .or(closing.steps_per_s),
            tokens_per_s: run.tokens_per_s.or(g.tokens_per_s.run.quantile(0.5)),
            tokens_per_gpu_s: run
                .tokens_per_gpu_s
                .or(g.tokens_per_gpu_s.run.quantile(0.5)),
            mfu_pct: g.mfu_pct,
            basis: closing.describe(m.basis.describe(
                f,
                MeanFrom {
                    source: run.step_ms.map(|(_, source)| source),
                    covered: run.steps,
                    timed: g.step_time_ms.run.count(),
                    steps: g.last_step,
                    last_average: g.logged_avg_step_ms.is_some(),
                },
                m.stages.run_data_ms.is_some(),
            )),
            stage_lines_dropped: m.stages.names_dropped,
            stages: stages_out(m, forward),
            forward_ms: forward,
            unlogged_ms: b.unlogged_ms,
            breakdown: breakdown_out(&b),
            timing_reading: m.stages.reading(),
            cache: cache_out(&m.cache),
            loss: g.loss_track,
            last: LastOut {
                lr: g.lr,
                batch_size: g.batch_size,
                grad_norm: g.grad_norm,
                loss_scale: g.loss_scale,
                mfu_pct: g.mfu_pct,
                memory_mb: g.memory_mb,
            },
            ranks: ranks_out(m, spread.as_ref()),
            rank_spread: spread,
            config: f.clone(),
            summary: (m.summary != SummaryRecord::default()).then(|| m.summary.clone()),
            host_memory: m.host_mem.as_ref().map(host_memory_out),
            events: events_out(m, &a.feeds),
            event_counts: m
                .event_counts
                .iter()
                .map(|(k, n)| EventCount {
                    kind: k.name(),
                    count: *n,
                })
                .collect(),
            verdict: a.diagnosis.verdict().cloned(),
            alerts: a.diagnosis.run_alerts().cloned().collect(),
            alerts_retired: a.diagnosis.alerts_retired,
            judged_from: a.diagnosis.judged_from.flatten(),
            warmup_steps: a.diagnosis.config().warmup_steps,
            alert_counts: a
                .diagnosis
                .raised_by_rule()
                .map(|(rule, raised)| AlertCount { rule, raised })
                .collect(),
            checklist: checklist::evaluate(m, &a.diagnosis),
            hardware: hardware(m),
            stacks: m.stacks.any().then(|| m.stacks.summary(m.stacks.span())),
        }
    }
}

/// The breakdown's rows in step order, each with its share of the mean step.
fn breakdown_out(b: &Breakdown) -> BreakdownOut {
    let share = |ms: Option<f64>| Some(ms? / b.step_ms.filter(|s| *s > 0.0)?);
    let mut parts = Vec::new();
    if b.data_ms.is_some() {
        parts.push(PartOut {
            name: "data loading".into(),
            role: "data",
            ms: b.data_ms,
            share: b.data_share,
        });
    }
    if b.forward_ms.is_some() {
        parts.push(PartOut {
            name: "forward".into(),
            role: "forward",
            ms: b.forward_ms,
            share: share(b.forward_ms),
        });
    }
    for p in &b.parts {
        parts.push(PartOut {
            name: p.name.to_string(),
            role: p.role.name(),
            ms: Some(p.ms),
            share: share(Some(p.ms)),
        });
    }
    if b.unlogged_ms.is_some() {
        parts.push(PartOut {
            name: "unlogged".into(),
            role: "unlogged",
            ms: b.unlogged_ms,
            share: share(b.unlogged_ms),
        });
    }
    BreakdownOut {
        step_ms: b.step_ms,
        parts,
    }
}

/// A sentence when the files look like separate runs: two or more files with steps, each of
/// them starting at the same step, and none tagged with a rank (ranks of one run start
/// together too).
fn reading_notes(feeds: &[Feed]) -> Vec<String> {
    let mut notes = Vec::new();
    let Some(first) = feeds.first() else {
        return notes;
    };
    let lines: u64 = feeds.iter().map(|f| f.stats.lines).sum();
    let mut by_patterns = 0;
    for (i, p) in first.patterns().iter().enumerate() {
        let count = |f: &Feed| f.stats.patterns.get(i).copied().unwrap_or_default();
        let matched: u64 = feeds.iter().map(|f| count(f).matched).sum();
        let over: u64 = feeds.iter().map(|f| count(f).data_over_step).sum();
        by_patterns += over;
        let name = if p.origin.is_empty() {
            format!("pattern '{}'", p.name)
        } else {
            format!("pattern '{}' in {}", p.name, p.origin)
        };
        if matched == 0 {
            notes.push(format!(
                "{name} matched 0 of {lines} lines: try its regex on a line of the log"
            ));
        } else if over > 0 {
            notes.push(format!(
                "{name}: {over} of the {matched} lines it read give a data time longer than \
                 their step: one of its groups names the wrong figure"
            ));
        }
    }
    let repeated: u64 = feeds.iter().map(|f| f.stats.repeated).sum();
    if let Some((feed, line)) = feeds
        .iter()
        .find_map(|f| Some((f, f.stats.first_repeated?)))
    {
        notes.push(format!(
            "step lines printed twice, read once: {repeated} (the first: {}:{line}), a \
             logger's copy beside the trainer's print",
            feed.path
        ));
    }
    // A few such lines are a smoothed step time beside one slow fetch (detectron2's first
    // iterations); many are a misreading worth a word.
    let over: u64 = feeds.iter().map(|f| f.stats.data_over_step).sum::<u64>() - by_patterns;
    let records: u64 = feeds.iter().map(|f| f.stats.records).sum();
    if over * 20 >= records.max(1)
        && let Some((feed, line)) = feeds
            .iter()
            .find_map(|f| Some((f, f.stats.first_data_over_step?)))
    {
        notes.push(format!(
            "step lines whose data time is longer than their step: {over} (the first: \
             {}:{line}); a figure read for another, a step time smoothed beside a raw wait, or \
             a step time that leaves the wait out",
            feed.path
        ));
    }
    notes
}

fn separate_runs(feeds: &[Feed]) -> Option<String> {
    let firsts: Vec<u64> = feeds.iter().filter_map(Feed::first_step).collect();
    let ranked = feeds.iter().any(|f| f.rank().is_some());
    if firsts.len() < 2 || ranked || firsts.iter().any(|s| *s != firsts[0]) {
        return None;
    }
    Some(format!(
        "these {} files each start at step {}: they look like separate runs, read here as one; \
         `steptop compare` puts runs side by side",
        firsts.len(),
        firsts[0]
    ))
}

/// Ranks listed one by one in a report; a job with more is shown as its spread.
const RANKS_LISTED: usize = 256;
/// The slowest ranks named, by number.
const SLOWEST_SHOWN: usize = 8;

/// Every rank, or past `RANKS_LISTED` the slowest ones of `spread`, in rank order.
fn ranks_out(m: &Model, spread: Option<&RankSpread>) -> Vec<RankOut> {
    if m.ranks.len() <= RANKS_LISTED {
        return m.ranks.iter().map(|(rank, r)| rank_out(*rank, r)).collect();
    }
    let mut slow: Vec<u32> = spread
        .map(|s| s.slowest.iter().map(|r| r.rank).collect())
        .unwrap_or_default();
    slow.sort_unstable();
    slow.iter()
        .filter_map(|r| Some(rank_out(*r, m.ranks.get(r)?)))
        .collect()
}

fn rank_out(rank: u32, r: &RankState) -> RankOut {
    RankOut {
        rank,
        steps: r.records,
        last: r.last_step,
        step_time_ms: Quantiles::of(&r.step_time_ms.run),
        data_share: r.data_share(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::analyze;
    use crate::model::log_lines::QUOTED;
    use crate::settings::config::Config;

    #[test]
    fn a_report_reads_no_chart_in_words_and_no_log_pane() {
        // Text, markdown and JSON reports are made without the figures' chart histories, and
        // no report keeps the log pane's lines: nothing they say may depend on them.
        let with = Config::default_checked();
        let mut without = with.clone();
        without.model = with.model.summary(false);
        let mut page = with.clone();
        page.model = with.model.summary(true);
        let said = |a: &Analysis| {
            let r = Report::build(a);
            let json = serde_json::to_string_pretty(&r).expect("json");
            (json, text::render(&r), markdown::render(&r))
        };
        let html = |a: &Analysis| html::render(&Report::build(a), &Curves::of(&a.model));
        let (mut drawn, mut paned) = (0, 0);
        for paths in crate::analysis::fixture_inputs::all() {
            let a = analyze(&paths, &with).expect("analyze");
            let b = analyze(&paths, &without).expect("analyze");
            let c = analyze(&paths, &page).expect("analyze");
            drawn += a.model.merged.step_time_ms.series.len();
            paned += usize::from(a.model.log.lines.len() > QUOTED);
            assert!(b.model.merged.step_time_ms.series.is_empty(), "{paths:?}");
            assert!(b.model.log.lines.len() <= QUOTED, "{paths:?}");
            assert!(
                said(&a) == said(&b),
                "{paths:?}: the report differs without charts and the pane"
            );
            assert!(
                html(&a) == html(&c),
                "{paths:?}: the page differs without the pane"
            );
        }
        assert!(drawn > 1000, "{drawn} chart points in all");
        assert!(paned > 50, "{paned} inputs with more lines than are quoted");
    }
}
