//! One source's lines on their way to the model: parsed, judged, given their time and rank,
//! and counted for the report's sources table. Shared by whole-file reading and live following.

use std::collections::HashMap;
use std::sync::Arc;

use super::order::Order;
use super::shape_names::ShapeNames;
use crate::common::int_hash::IntHash;
use crate::input::metric_files::{Entry, UserTags};
use crate::model::Stamp;
use crate::model::source_stats::{SourceStats, data_over_step, read_nothing};
use crate::model::unparsed::{UnparsedShapes, example};
use crate::monitor::msg::Msg;
use crate::parse::clean::clean;
use crate::parse::record::{ConfigFact, EventKind, Format, Record, StepRecord};
use crate::parse::user::UserPattern;
use crate::parse::{LineInfo, Parser, prefix};

/// A file's parser and clock.
pub struct Feed {
    pub index: usize,
    pub path: String,
    pub stats: SourceStats,
    /// The lines nothing read (rejected ones aside) by shape, for the report: the feed's
    /// alone (the live view's counts need no shapes).
    pub unparsed_shapes: UnparsedShapes,
    parser: Parser,
    /// The rank the file name gives (`rank3.log`), used when lines carry none.
    file_rank: Option<u32>,
    /// The last rank a line named, for the report.
    line_rank: Option<u32>,
    last_log_time: Option<f64>,
    /// The format of the metric file this feed reads, if it reads one.
    metric_format: Option<Format>,
    /// A timeline made of the logged step times, for files without timestamps.
    synthetic: f64,
    /// The rank and step of the last step line the synthetic timeline took: a line every
    /// hundred steps moves it by a hundred steps' time.
    synthetic_step: Option<(u32, u64)>,
    /// Each rank's step order in this file (thousands of ranks may share one file).
    orders: HashMap<u32, Order, IntHash>,
    /// When the file was last written, as far as is known (its modification time, or the
    /// clock when it is followed): year-less timestamps are placed at or before it. Without
    /// one they stay in the year 2000.
    year_reference: Option<f64>,
    scratch: Vec<Record>,
    /// False when metric files read beside this log give the run's steps: its step lines are
    /// counted but their figures dropped, so that no step counts twice.
    steps: bool,
    tags: Arc<UserTags>,
    /// The last step record carried on, as `Repeat` tells it from the next.
    last_step: Option<Repeat>,
}

/// What tells a step line from a copy of it: its rank, step and figures. A trainer that logs
/// through a logger and prints too (timm's `INFO:train:` copy) writes each line twice, and a
/// step counted twice would halve the steps each line stands for.
#[derive(Clone, Copy, PartialEq)]
struct Repeat {
    rank: u32,
    step: u64,
    figures: [Option<f64>; 10],
}

/// Whether a line is a progress bar's: redrawn in place (`\r` inside it) or of a format that
/// draws bars.
fn redrawn(info: &LineInfo, raw: &[u8]) -> bool {
    let body = raw.strip_suffix(b"\n").unwrap_or(raw);
    let body = body.strip_suffix(b"\r").unwrap_or(body);
    body.contains(&b'\r')
        || matches!(
            info.format,
            Some(
                Format::Tqdm
                    | Format::Lightning
                    | Format::Ultralytics
                    | Format::Keras
                    | Format::HfTrainer
                    | Format::Accelerate
            )
        )
}

impl Repeat {
    /// None for a record with none of these figures: a block's lines of one figure each
    /// (OLMo's `optim/total_grad_norm=5.485` under `[step=10/1000]`) are no copies.
    fn of(rank: u32, s: &StepRecord) -> Option<Repeat> {
        let figures = [
            s.step_time_ms,
            s.data_time_ms,
            s.loss,
            s.lr,
            s.grad_norm,
            s.samples_per_s,
            s.iters_per_s,
            s.tokens_per_s,
            s.elapsed_s,
            s.avg_step_ms,
        ];
        figures.iter().any(Option::is_some).then_some(Repeat {
            rank,
            step: s.step?,
            figures,
        })
    }
}

impl Feed {
    pub fn new(index: usize, path: &str, patterns: Arc<Vec<UserPattern>>) -> Self {
        Feed {
            index,
            path: path.to_string(),
            stats: SourceStats::default(),
            unparsed_shapes: UnparsedShapes::default(),
            parser: Parser::with_patterns(patterns),
            file_rank: rank_from_name(path),
            line_rank: None,
            last_log_time: None,
            metric_format: None,
            synthetic: 0.0,
            synthetic_step: None,
            orders: HashMap::default(),
            year_reference: None,
            scratch: Vec::new(),
            steps: true,
            tags: Arc::default(),
            last_step: None,
        }
    }

    /// Leaves the run's steps to the metric files read beside this log.
    pub fn steps_elsewhere(&mut self) {
        self.steps = false;
    }

    /// Sets the moment the file's year-less timestamps are placed at or before (Unix seconds):
    /// its modification time when it is read whole, the clock when it is followed.
    pub fn set_year_reference(&mut self, t: f64) {
        self.year_reference = Some(t);
    }

    /// Parses line `line_no` (`raw`) and hands each typed record it gave to `sink` with its
    /// stamp. `arrival` is the wall-clock time for live lines; whole-file reading passes
    /// `None`. Returns what the line said besides its records, and its stamp.
    pub fn line(
        &mut self,
        line_no: u64,
        raw: &[u8],
        arrival: Option<f64>,
        sink: &mut dyn FnMut(&Stamp, Record),
    ) -> (LineInfo, Stamp) {
        self.line_named(None, (line_no, raw, None), arrival, sink)
    }

    /// `line`, given `raw` as a `str` when the caller knows it already (`utf8`), and taking
    /// the unparsed shape of a line nothing read from `names` when the parser read it from a
    /// memo shape: the bulk reader's lines parsed in place.
    pub(super) fn line_named(
        &mut self,
        names: Option<&mut ShapeNames>,
        (line_no, raw, utf8): (u64, &[u8], Option<&str>),
        arrival: Option<f64>,
        sink: &mut dyn FnMut(&Stamp, Record),
    ) -> (LineInfo, Stamp) {
        let mut out = std::mem::take(&mut self.scratch);
        let info = self.parser.parse_known(raw, utf8, &mut out);
        let shape = names
            .filter(|_| read_nothing(&info, out.len()))
            .and_then(|names| names.served(&self.parser, raw));
        let passed = self.pass(
            line_no,
            raw,
            info,
            &mut out,
            shape.as_deref(),
            arrival,
            sink,
        );
        self.scratch = out;
        passed
    }

    /// A line already parsed (as `info` and `records`, and `shape` when it read nothing and
    /// its shape is known) the rest of its way (`pass_in_place`), its records that go on
    /// handed to `sink` in order; `records` is left empty.
    #[expect(
        clippy::too_many_arguments,
        reason = "one line's parts, each used once"
    )]
    fn pass(
        &mut self,
        line_no: u64,
        raw: &[u8],
        mut info: LineInfo,
        records: &mut Vec<Record>,
        shape: Option<&str>,
        arrival: Option<f64>,
        sink: &mut dyn FnMut(&Stamp, Record),
    ) -> (LineInfo, Stamp) {
        let mut dropped = Vec::new();
        let stamp = self.pass_in_place(
            line_no,
            raw,
            &mut info,
            records,
            (0, &mut dropped),
            shape,
            arrival,
        );
        drop_places(records, dropped);
        for rec in records.drain(..) {
            sink(&stamp, rec);
        }
        (info, stamp)
    }

    /// One line as the message the follow thread sends: its records, what else it said, and its
    /// text (invalid UTF-8 replaced) for the log pane and recordings. Sent for every line,
    /// so that the monitor counts them too.
    pub fn message(&mut self, line_no: u64, raw: &[u8], arrival: Option<f64>) -> Msg {
        let mut records = Vec::new();
        let (info, stamp) = self.line(line_no, raw, arrival, &mut |_, r| records.push(r));
        Msg::Line {
            stamp,
            info,
            records,
            text: String::from_utf8_lossy(raw).into_owned(),
            arrival,
        }
    }

    /// The user's own metric names (`[tags]`), for the metric files this feed reads.
    pub fn set_tags(&mut self, tags: Arc<UserTags>) {
        self.tags = tags;
    }

    /// A metric file's entry (`input::metric_files`) the rest of its way, as the line `text` with
    /// the entry's wall time and records, credited to the file's `format`: its records go to
    /// `sink`.
    pub fn entry(
        &mut self,
        line_no: u64,
        e: &Entry,
        text: &str,
        format: Format,
        arrival: Option<f64>,
        sink: &mut dyn FnMut(&Stamp, Record),
    ) -> (LineInfo, Stamp) {
        let info = LineInfo {
            time: e.time,
            format: Some(format),
            ..LineInfo::default()
        };
        let mut records = e.records(&self.tags);
        self.pass(
            line_no,
            text.as_bytes(),
            info,
            &mut records,
            None,
            arrival,
            sink,
        )
    }

    /// The first step any rank logged in this file; None for a log whose run's steps a metric
    /// file gives (its step lines are the same run's, not a run of their own).
    pub fn first_step(&self) -> Option<u64> {
        if !self.steps {
            return None;
        }
        self.orders.values().filter_map(|o| o.first).min()
    }

    /// Whether the records parsed from a line may reach the model: None, or why they cannot be
    /// true (the parser's own rejection, or a step that goes back with no restart to explain
    /// it). It remembers the line's steps.
    fn admit(&mut self, info: &LineInfo, records: &[Record]) -> Option<&'static str> {
        let rank = self.rank_of(info);
        for rec in records {
            match rec {
                Record::Rejected { what, .. } => return Some(what),
                Record::Step(s) if s.step.is_some() && !self.order(rank).admits(s) => {
                    return Some("a step that goes back with no restart to explain it");
                }
                Record::Event {
                    kind: EventKind::Checkpoint,
                    ..
                } => self.order(rank).checkpoint(),
                _ => {}
            }
        }
        None
    }

    /// A line's rank: its own prefix's, else the file name's, else 0.
    fn rank_of(&self, info: &LineInfo) -> u32 {
        info.rank.or(self.file_rank).unwrap_or(0)
    }

    /// A parsed line the rest of its way where its records lie: judged (may its figures be
    /// true?), stamped, counted, and each record made what the model reads; a line whose
    /// figures cannot be true is dropped whole, with `info` saying why. The records that do
    /// not go on are added to `dropped` as their places in `records` plus `at`, in order.
    /// `shape` is the line's `unparsed_shape` when a bulk reader's thread made it already.
    /// Returns the line's stamp.
    #[expect(
        clippy::too_many_arguments,
        reason = "one line's parts, each used once"
    )]
    pub(super) fn pass_in_place(
        &mut self,
        line_no: u64,
        raw: &[u8],
        info: &mut LineInfo,
        records: &mut [Record],
        (at, dropped): (usize, &mut Vec<usize>),
        shape: Option<&str>,
        arrival: Option<f64>,
    ) -> Stamp {
        let refused = self.admit(info, records);
        // Only a step line can be a copy: the others are not looked at.
        let redraws = records.iter().any(|r| matches!(r, Record::Step(_))) && redrawn(info, raw);
        info.data_over_step = records.iter().any(data_over_step);
        let stamp = self.open(line_no, raw, shape, info, refused, records.len(), arrival);
        for (i, rec) in records.iter_mut().enumerate() {
            if refused.is_some() || !self.carry(&stamp, rec, redraws) {
                dropped.push(at + i);
            }
        }
        stamp
    }

    /// Stamps and counts a line of `records` records as `admit` judged it (`refused`): a
    /// line whose figures cannot be true is counted as rejected, and `info` says why,
    /// crediting no format with it. A line nothing read is counted under `shape`, or the
    /// shape made of it here.
    #[expect(
        clippy::too_many_arguments,
        reason = "one line's parts, each used once"
    )]
    fn open(
        &mut self,
        line_no: u64,
        raw: &[u8],
        shape: Option<&str>,
        info: &mut LineInfo,
        refused: Option<&'static str>,
        records: usize,
        arrival: Option<f64>,
    ) -> Stamp {
        let stamp = self.stamp(info, line_no, arrival);
        info.rejected = refused;
        if let Some(what) = refused {
            self.stats.reject(line_no, info, what, raw);
            info.format = None;
            info.glued = None;
            return stamp;
        }
        if self.stats.count(line_no, info, records) {
            let mut buf = String::new();
            match shape {
                Some(key) => self
                    .unparsed_shapes
                    .add_shaped(line_no, key, || example(clean(raw, &mut buf))),
                None => self.unparsed_shapes.add(line_no, clean(raw, &mut buf)),
            }
        }
        stamp
    }

    /// A record of a line that goes on, made what the model reads (a step beside the metric
    /// files becomes the run's length): false when it is dropped instead.
    fn carry(&mut self, stamp: &Stamp, rec: &mut Record, redraws: bool) -> bool {
        if !self.steps
            && let Record::Step(s) = rec
        {
            // A step line beside the metric files still says how many steps the run takes.
            match s.total {
                Some(t) if s.counter.is_global() => {
                    *rec = Record::Config(ConfigFact::TotalSteps(t));
                }
                _ => return false,
            }
        }
        if let Record::Step(s) = rec {
            // A progress bar redraws a position as it is (tqdm's close): each redraw is read.
            let repeat = Repeat::of(stamp.rank, s).filter(|_| !redraws);
            if repeat.is_some() && repeat == self.last_step {
                self.stats.repeated += 1;
                self.stats.first_repeated.get_or_insert(stamp.line);
                return false;
            }
            self.last_step = repeat;
        }
        if !stamp.real_time
            && let Record::Step(s) = rec
            && let Some(ms) = s.step_time_ms
        {
            let before = self
                .synthetic_step
                .filter(|(rank, _)| *rank == stamp.rank)
                .map(|(_, step)| step);
            let covers = crate::model::coverage::steps_since(before, s.step);
            if let Some(step) = s.step {
                self.synthetic_step = Some((stamp.rank, step));
            }
            self.synthetic += ms * covers / 1000.0;
        }
        true
    }

    fn order(&mut self, rank: u32) -> &mut Order {
        self.orders.entry(rank).or_default()
    }

    /// This file's parser, for the bulk reader: its patterns for the threads that parse ahead,
    /// its context where their blocks begin.
    pub(super) fn parser(&mut self) -> &mut Parser {
        &mut self.parser
    }

    fn stamp(&mut self, info: &LineInfo, line: u64, arrival: Option<f64>) -> Stamp {
        if info.rank.is_some() {
            self.line_rank = info.rank;
        }
        let rank = self.rank_of(info);
        let logged = info.time.map(|t| match arrival.or(self.year_reference) {
            // A line that arrives now was written by now: its arrival is the nearest reference.
            Some(reference) if info.yearless => prefix::place_yearless(t, reference),
            _ => t,
        });
        let (time, real_time) = match (logged, arrival) {
            (Some(t), _) => {
                self.last_log_time = Some(t);
                (t, true)
            }
            (None, Some(now)) => (now, true),
            (None, None) => (self.last_log_time.unwrap_or(self.synthetic), false),
        };
        Stamp {
            time,
            real_time,
            arrived: logged.is_none() && arrival.is_some(),
            source: self.index,
            line,
            rank,
        }
    }

    /// The user's `[[pattern]]`s the file is read with.
    pub fn patterns(&self) -> &[UserPattern] {
        self.parser.patterns()
    }

    /// The file's primary format, if any line was recognised; a metric file is of its kind's
    /// format even when it holds no entry (a tracker's run that logged only system metrics).
    pub fn format(&self) -> Option<Format> {
        self.stats.formats.primary().or(self.metric_format)
    }

    /// The file is a metric file of `format`, read whole.
    pub fn read_as(&mut self, format: Format) {
        self.metric_format = Some(format);
    }

    /// Lines recognised per format.
    pub fn format_counts(&self) -> Vec<(Format, u64)> {
        self.stats.formats.counts()
    }

    /// The rank of this file: from its lines' prefixes, else from its name.
    pub fn rank(&self) -> Option<u32> {
        self.line_rank.or(self.file_rank)
    }
}

/// `records` without the ones at `places` (in ascending order), the rest kept in order.
pub(super) fn drop_places(records: &mut Vec<Record>, places: Vec<usize>) {
    if places.is_empty() {
        return;
    }
    let mut at = 0;
    let mut places = places.into_iter().peekable();
    records.retain(|_| {
        let keep = places.next_if_eq(&at).is_none();
        at += 1;
        keep
    });
}

/// `rank3.log`, `train_rank12.txt`, `log.rank1` give 3, 12 and 1.
fn rank_from_name(path: &str) -> Option<u32> {
    let name = path.rsplit('/').next()?.to_ascii_lowercase();
    let at = name.rfind("rank")?;
    let digits: String = name[at + 4..]
        .chars()
        .skip_while(|c| *c == '_' || *c == '-')
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds `lines` and returns the steps that reached the model and the rejected count.
    fn steps_of(lines: &[&str]) -> (Vec<u64>, u64) {
        let mut feed = Feed::new(0, "train.log", Arc::default());
        let mut steps = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            feed.line(i as u64 + 1, line.as_bytes(), None, &mut |_, r| {
                if let Record::Step(s) = r {
                    steps.extend(s.step);
                }
            });
        }
        (steps, feed.stats.rejected)
    }

    #[test]
    fn impossible_values_never_reach_the_model() {
        let (steps, rejected) = steps_of(&[
            "step 1/100 | loss=0.5 | 2.0 samples/s | data_time=1ms",
            "step 999999999999999999999999/1 | loss=1e999 | -5 samples/s | data_time=-1ms",
            "step 2/100 | loss=1e999 | 2.0 samples/s",
            "step 3/100 | loss=0.5 | -5 samples/s",
            "step 4/100 | loss=0.5 | data_time=-1ms",
            "step 5/100 | loss=nan | 2.0 samples/s",
        ]);
        assert_eq!(steps, vec![1, 5]);
        assert_eq!(rejected, 4);
    }

    #[test]
    fn a_step_that_goes_back_is_a_restart_only_when_something_explains_it() {
        // A glitch in the middle of a run.
        let (steps, rejected) = steps_of(&[
            "step 10000: loss 1.0",
            "step 10001: loss 1.0",
            "step 50: loss 9.0",
            "step 10002: loss 1.0",
        ]);
        assert_eq!((steps, rejected), (vec![10000, 10001, 10002], 1));
        // A resume from the checkpoint the log saved.
        let (steps, _) = steps_of(&[
            "step 100: loss 1.0",
            "Saving checkpoint to ckpt/step_100",
            "step 150: loss 1.0",
            "step 101: loss 1.0",
        ]);
        assert_eq!(steps, vec![100, 150, 101]);
        // A new run appended to the log starts at its first steps again.
        let (steps, _) = steps_of(&[
            "step 10: loss 1.0",
            "step 900: loss 1.0",
            "step 10: loss 9.0",
        ]);
        assert_eq!(steps, vec![10, 900, 10]);
        // A run resumed from a checkpoint the log never named: its first line is doubted, the
        // next one carries on from it.
        let (steps, rejected) = steps_of(&[
            "step 10: loss 1.0",
            "step 900: loss 1.0",
            "step 400: loss 9.0",
            "step 401: loss 1.0",
            "step 402: loss 1.0",
        ]);
        assert_eq!((steps, rejected), (vec![10, 900, 401, 402], 1));
    }

    #[test]
    fn rank_from_file_names() {
        assert_eq!(rank_from_name("logs/rank3.log"), Some(3));
        assert_eq!(rank_from_name("train_rank_12.txt"), Some(12));
        assert_eq!(rank_from_name("/x/rank/train.log"), None);
    }

    /// The stamp's date, `YYYY-MM-DD`, of a detectron2 line read by `feed`.
    fn stamped_date(feed: &mut Feed, line: &str, arrival: Option<f64>) -> String {
        let mut date = String::new();
        feed.line(1, line.as_bytes(), arrival, &mut |s, _| {
            date = crate::common::units::clock(s.time)[..10].to_string();
        });
        date
    }

    #[test]
    fn a_step_line_printed_twice_is_one_step() {
        // timm writes each line through its logger and bare.
        let mut feed = Feed::new(0, "t.log", Arc::default());
        let mut steps = 0;
        let lines = [
            "INFO:train:Train: 1 [1000/4448 ( 22%)]  Loss:  6.486881 (6.6571)  Time: 0.565s,  510.16/s  (0.603s,  477.51/s)  LR: 2.595e-05  Data: 0.005 (0.009)",
            "Train: 1 [1000/4448 ( 22%)]  Loss:  6.486881 (6.6571)  Time: 0.565s,  510.16/s  (0.603s,  477.51/s)  LR: 2.595e-05  Data: 0.005 (0.009)",
            "Train: 1 [2000/4448 ( 45%)]  Loss:  6.409575 (6.5746)  Time: 0.555s,  519.27/s  (0.602s,  478.27/s)  LR: 2.595e-05  Data: 0.005 (0.009)",
        ];
        for (no, line) in (1..).zip(lines) {
            feed.line(no, line.as_bytes(), None, &mut |_, rec| {
                steps += u32::from(matches!(rec, Record::Step(_)));
            });
        }
        assert_eq!(steps, 2);
        assert_eq!(
            (feed.stats.repeated, feed.stats.first_repeated),
            (1, Some(2))
        );
    }

    #[test]
    fn yearless_times_take_the_year_of_the_reference_or_the_arrival() {
        // A step line repeated figure for figure is read once: each call logs a new step.
        let line = |iter: u32| {
            format!(
                "[02/29 14:02:18 d2.utils.events]:  iter: {iter}  total_loss: 2.913  time: 0.3127"
            )
        };
        let mut feed = Feed::new(0, "t.log", Arc::default());
        assert_eq!(stamped_date(&mut feed, &line(19), None), "2000-02-29");
        // Modified 2025-06-01: the last Feb 29 before it.
        feed.set_year_reference(1_748_736_000.0);
        assert_eq!(stamped_date(&mut feed, &line(39), None), "2024-02-29");
        // A live line that arrived on 2028-03-01.
        assert_eq!(
            stamped_date(&mut feed, &line(59), Some(1_835_481_600.0)),
            "2028-02-29"
        );
    }

    #[test]
    fn lines_without_time_follow_a_timeline_of_step_times() {
        let mut feed = Feed::new(0, "t.log", Arc::default());
        let mut times = Vec::new();
        for (i, line) in [
            "iter 1: loss 1.0, time 500.00ms",
            "iter 2: loss 1.0, time 500.00ms",
            "noise",
        ]
        .iter()
        .enumerate()
        {
            feed.line(i as u64 + 1, line.as_bytes(), None, &mut |s, _| {
                times.push((s.time, s.real_time))
            });
        }
        assert_eq!(times, vec![(0.0, false), (0.5, false)]);
        let stats = &feed.stats;
        assert_eq!((stats.lines, stats.records, stats.unparsed), (3, 2, 1));
        assert_eq!(feed.format_counts(), vec![(Format::NanoGpt, 2)]);
    }
}
