//! The core: the monitor is the model and its diagnosis fed from the inbox, the same for every
//! sink. `msg` is the one message type of the bounded inbox, and `keys` the user's input in
//! steptop's own terms (so nothing here knows a terminal library). It does no I/O and reads no
//! clock: every message carries its own time, so replaying the same messages gives the same
//! state.

pub mod keys;
pub mod msg;

use crate::diagnose::{DiagnoseConfig, Diagnosis, Trigger};
use crate::model::log_lines::{LineKind, shown};
use crate::model::sample::Sample;
use crate::model::source_stats::SourceStats;
use crate::model::{Model, ModelConfig, Stamp};
use crate::monitor::msg::{FileStatus, LineHead, Lines, Msg};
use crate::parse::LineInfo;
use crate::parse::record::{Record, StepBoxes, StepRecord};

/// Seconds between the live loop's readings of the clock (`Msg::Tick`) when nothing else reads
/// it: the stall rule counts in seconds, so finer would change nothing it says.
const TICK_S: f64 = 1.0;

/// Everything a sink shows, built only from messages: the model and its diagnosis, kept
/// in step (every record and sample reaches both, in order).
#[derive(Clone, Debug)]
pub struct Monitor {
    pub model: Model,
    pub diagnosis: Diagnosis,
    pub sources: Vec<SourceView>,
    /// Why the input thread (following or replaying) stopped, if it did.
    pub stopped: Option<String>,
    /// How the job `steptop run` started ended, once it has: its pid, exit code or signal.
    pub job_ended: Option<(u32, Option<i32>, Option<i32>)>,
    /// `--baseline`: a finished run's figures, shown beside the live ones; read before the
    /// monitor starts and never changed.
    pub baseline: Option<crate::model::baseline::Baseline>,
    /// Keep the run of this index (0 the first) of a file that holds several: the records
    /// after it ends are not taken (compare puts one file's runs side by side).
    pub only_run: Option<usize>,
    /// Runs that started so far: the first, and one for each new run.
    runs_started: usize,
}

/// One followed file as the header shows it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SourceView {
    pub path: String,
    /// None until the follower has said anything about the file.
    pub status: Option<FileStatus>,
    pub stats: SourceStats,
    /// The content present at the start has been read.
    pub caught_up: bool,
    /// The bytes of that content, when the follower said, and how many of them were read.
    pub history_bytes: Option<u64>,
    pub history_read: u64,
}

impl Monitor {
    pub fn new(cfg: ModelConfig, diagnose: DiagnoseConfig) -> Self {
        Monitor {
            model: Model::new(cfg),
            diagnosis: Diagnosis::new(diagnose),
            sources: Vec::new(),
            stopped: None,
            job_ended: None,
            baseline: None,
            only_run: None,
            runs_started: 1,
        }
    }

    /// Applies one message. Returns true when something a sink shows changed.
    pub fn apply(&mut self, msg: Msg) -> bool {
        match msg {
            Msg::Opened { source, path } => {
                self.source(source).path = path;
                true
            }
            Msg::Line {
                stamp,
                info,
                records,
                text,
                arrival,
            } => {
                let logged = shown(text.as_bytes()).map(|t| (LineKind::of(&records), t));
                let text = text.as_bytes();
                self.model.arriving = arrival.is_some() || self.source(stamp.source).caught_up;
                self.line(&stamp, &info, records.into_iter(), text, logged, None);
                // The log pane shows every line.
                true
            }
            Msg::Lines(lines) => {
                if let Some(head) = lines.heads.first() {
                    let src = self.source(head.stamp.source);
                    if !src.caught_up {
                        src.history_read += lines.bytes;
                    }
                }
                self.lines(*lines, &mut |_, _| {});
                true
            }
            Msg::HistorySize { source, bytes } => {
                self.source(source).history_bytes = Some(bytes);
                true
            }
            Msg::Status { source, status } => {
                self.source(source).status = Some(status);
                true
            }
            Msg::CaughtUp { source } => {
                self.source(source).caught_up = true;
                true
            }
            Msg::Sample(sample) => {
                self.sample(*sample);
                true
            }
            Msg::Tick(now) => self.tick(now),
            Msg::Stacks(reading) => {
                self.model.stacks.apply(*reading);
                true
            }
            Msg::InputStopped { reason } => {
                self.stopped = Some(reason);
                true
            }
            Msg::JobEnded { pid, code, signal } => {
                self.job_ended = Some((pid, code, signal));
                true
            }
            Msg::Ui(_) | Msg::Replay(_) => false,
        }
    }

    /// Lines read in bulk, in order, each as its own `Msg::Line` would be applied; `after_each`
    /// sees the monitor after each line (headless prints the changes a line caused). Only the
    /// lines the log pane will still hold after the last are given to it. The boxes of the
    /// step records read go back to the reader that made them, to be filled again.
    pub fn lines(&mut self, lines: Lines, after_each: &mut dyn FnMut(&Monitor, &LineHead)) {
        let mut spent = StepBoxes::default();
        // Lines read as they arrived (a busy log's read) each go to the log pane as a single
        // line does, so that the pane counts every one (its place when scrolled back); of a
        // history, only the ones it will still hold.
        let arrived = lines.heads.iter().any(|h| h.arrival.is_some());
        let mut shown = if arrived {
            let texts = lines.heads.iter().map(|h| shown(lines.text_of(h)));
            texts
                .enumerate()
                .filter_map(|(i, t)| Some((i, t?)))
                .collect()
        } else {
            (self.model.log).kept_of(lines.heads.iter().map(|h| lines.text_of(h)))
        }
        .into_iter()
        .peekable();
        let mut records = lines.records.into_iter();
        // Lines in bulk are a file's history unless it was read to its end before them (a
        // busy log read in blocks).
        self.model.arriving = lines.heads.first().is_some_and(|h| {
            self.sources
                .get(h.stamp.source)
                .is_some_and(|s| s.caught_up)
        });
        for (i, head) in lines.heads.iter().enumerate() {
            let n = head.records as usize;
            let logged = shown
                .next_if(|(at, _)| *at == i)
                .map(|(_, t)| (LineKind::of(&records.as_slice()[..n]), t));
            let text = &lines.text[head.start..head.end];
            self.line(
                &head.stamp,
                &head.info,
                records.by_ref().take(n),
                text,
                logged,
                Some(&mut spent),
            );
            after_each(self, head);
        }
        lines.home.send(spent);
    }

    /// One line: counted for its file, shown in the log pane when `logged` (its kind and
    /// shown text), its records into the model and the rules; the boxes of its step records
    /// into `spent` when given.
    fn line(
        &mut self,
        stamp: &Stamp,
        info: &LineInfo,
        records: impl ExactSizeIterator<Item = Record>,
        text: &[u8],
        logged: Option<(LineKind, String)>,
        mut spent: Option<&mut StepBoxes>,
    ) {
        if let Some((kind, shown)) = logged {
            self.model.line(stamp.source, stamp.line, shown, kind);
        }
        let stats = &mut self.source(stamp.source).stats;
        match info.rejected {
            Some(what) => stats.reject(stamp.line, info, what, text),
            None => {
                stats.count(stamp.line, info, records.len());
            }
        }
        for rec in records {
            let read = self.record(stamp, rec);
            if let (Some(b), Some(spent)) = (read, spent.as_deref_mut()) {
                spent.give(b);
            }
        }
    }

    /// The end of the input, whatever the mode (a report's files read, a replay finished, a
    /// headless run stopped): open timing blocks close, and active alerts take the words of
    /// the final state.
    pub fn finish(&mut self) {
        self.model.finish();
        self.diagnosis.refresh(&self.model);
    }

    /// One record into the model, then the rules it concerns. Returns the box of a step
    /// record the model read.
    pub fn record(&mut self, stamp: &Stamp, rec: Record) -> Option<Box<StepRecord>> {
        if self.only_run.is_some_and(|k| self.runs_started > k + 1) {
            return None;
        }
        let (rec, new_run) = self.model.count(stamp, rec);
        if new_run {
            self.runs_started += 1;
            if self.only_run.is_some_and(|k| self.runs_started > k + 1) {
                // The run kept ended here: what follows is another's.
                return None;
            }
        }
        let rec = rec?;
        if new_run {
            let alerts = self.diagnosis.run_alerts().count() as u64;
            self.diagnosis.new_run(
                self.model.merged.last_step,
                self.model.last_time.unwrap_or(0.0),
            );
            self.model.new_run(alerts);
        }
        let trigger = Trigger::of(&rec);
        let read = self.model.apply_keeping(stamp, rec);
        if let Some(t) = trigger {
            self.diagnosis.after(&self.model, t);
        }
        read
    }

    /// One hardware sample into the model, then the hardware rules.
    pub fn sample(&mut self, sample: Sample) {
        let time = sample.time;
        self.model.apply_sample(sample);
        self.diagnosis.after(&self.model, Trigger::Sample(time));
    }

    /// This machine's clock read at `now`, then the rules that count seconds. True when an
    /// alert changed or was reworded: otherwise a tick changes nothing a sink shows.
    pub fn tick(&mut self, now: f64) -> bool {
        let before = self.diagnosis.revision();
        self.model.tick(now);
        self.diagnosis.after(&self.model, Trigger::Tick(now));
        self.diagnosis.revision() != before
    }

    /// Whether the live loop should read the clock into the monitor at `now`: when nothing
    /// read it for a second (the sampler's readings do, every second, when probes run).
    pub fn tick_due(&self, now: f64) -> bool {
        self.model.wall.now.is_none_or(|t| now - t >= TICK_S)
    }

    /// How far the history is read, of its bytes, while some file's is still being read:
    /// (read, total) over the files whose size the follower said.
    pub fn history_progress(&self) -> Option<(u64, u64)> {
        if self.caught_up() {
            return None;
        }
        let sized = self.sources.iter().filter_map(|s| {
            let total = s.history_bytes?;
            Some((
                if s.caught_up {
                    total
                } else {
                    s.history_read.min(total)
                },
                total,
            ))
        });
        let (read, total) = sized.fold((0, 0), |(r, t), (a, b)| (r + a, t + b));
        (total > 0).then_some((read, total))
    }

    /// True once every file known so far has had its history read.
    pub fn caught_up(&self) -> bool {
        !self.sources.is_empty() && self.sources.iter().all(|s| s.caught_up)
    }

    fn source(&mut self, index: usize) -> &mut SourceView {
        if self.sources.len() <= index {
            self.sources.resize_with(index + 1, SourceView::default);
        }
        &mut self.sources[index]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_historys_progress_is_its_bytes_read_of_the_sizes_said() {
        let mut m = Monitor::new(ModelConfig::default(), DiagnoseConfig::default());
        for source in 0..2 {
            m.apply(Msg::Opened {
                source,
                path: format!("rank{source}.log"),
            });
            m.apply(Msg::HistorySize {
                source,
                bytes: 1000,
            });
        }
        let block = |source: usize, bytes: u64| {
            Msg::Lines(Box::new(Lines {
                heads: vec![LineHead {
                    stamp: Stamp {
                        source,
                        ..Stamp::default()
                    },
                    info: LineInfo::default(),
                    records: 0,
                    start: 0,
                    end: 0,
                    arrival: None,
                }],
                bytes,
                ..Default::default()
            }))
        };
        m.apply(block(0, 400));
        assert_eq!(m.history_progress(), Some((400, 2000)));
        m.apply(Msg::CaughtUp { source: 0 });
        m.apply(block(1, 100));
        assert_eq!(m.history_progress(), Some((1100, 2000)));
        m.apply(Msg::CaughtUp { source: 1 });
        assert_eq!(m.history_progress(), None, "all read: nothing to show");
    }
    use crate::model::Stamp;
    use crate::parse::LineInfo;
    use crate::parse::record::{Format, Record, StepRecord};

    fn line(source: usize, line: u64, time: f64, step: Option<u64>) -> Msg {
        let records = step
            .map(|s| {
                Record::Step(Box::new(StepRecord {
                    step: Some(s),
                    step_time_ms: Some(500.0),
                    ..StepRecord::default()
                }))
            })
            .into_iter()
            .collect();
        Msg::Line {
            stamp: Stamp {
                time,
                real_time: true,
                source,
                line,
                ..Stamp::default()
            },
            info: LineInfo {
                format: step.map(|_| Format::KeyValue),
                ..LineInfo::default()
            },
            records,
            text: format!("line {line}"),
            arrival: Some(time),
        }
    }

    #[test]
    fn an_alert_on_the_readings_of_the_jobs_start_clears_when_steps_come() {
        use crate::model::sample::GpuReading;
        let mut m = Monitor::new(ModelConfig::default(), DiagnoseConfig::default());
        let sample = |time: f64, util: u32| Sample {
            time,
            gpus: vec![GpuReading {
                name: "H200".into(),
                util_pct: Some(util),
                power_w: Some(80.0),
                ..GpuReading::default()
            }],
            ..Sample::default()
        };
        // Fifteen seconds of start-up at 0% (imports, CUDA's start), as on a real H200.
        for t in 0..15 {
            m.apply(Msg::Sample(Box::new(sample(f64::from(t), 0))));
        }
        let active = |m: &Monitor| m.diagnosis.active().any(|a| a.rule == "low_gpu_util");
        assert!(active(&m), "raised on the readings alone");
        // Then the job steps at 98%: the start's alert goes at the next reading.
        for t in 15..20 {
            m.apply(line(
                0,
                u64::from(t as u32),
                f64::from(t),
                Some(u64::from(t as u32)),
            ));
            m.apply(Msg::Sample(Box::new(sample(f64::from(t) + 0.5, 98))));
        }
        assert!(!active(&m), "the start explains it");
    }

    #[test]
    fn lines_reach_the_model_and_the_source_counts() {
        let mut m = Monitor::new(ModelConfig::default(), DiagnoseConfig::default());
        assert!(m.apply(Msg::Opened {
            source: 1,
            path: "b.log".into()
        }));
        assert!(m.apply(line(1, 1, 10.0, Some(7))));
        assert!(m.apply(line(1, 2, 10.5, None)));
        assert_eq!(m.model.merged.last_step, Some(7));
        assert_eq!(m.sources.len(), 2);
        let b = &m.sources[1];
        assert_eq!(
            (b.path.as_str(), b.stats.records, b.stats.unparsed),
            ("b.log", 1, 1)
        );
        assert!(!m.caught_up());
        m.apply(Msg::CaughtUp { source: 0 });
        m.apply(Msg::CaughtUp { source: 1 });
        assert!(m.caught_up());
    }

    #[test]
    fn a_followed_files_rejected_lines_are_counted_as_report_counts_them() {
        // Steps 1..30, then one that goes back to 12 with nothing to explain it, then 31.
        let mut feed = crate::input::ingest::Feed::new(0, "train.log", Default::default());
        let mut m = Monitor::new(ModelConfig::default(), DiagnoseConfig::default());
        let mut text: Vec<String> = (1..=30)
            .map(|s| format!("step {s}/100 | loss=1.0 | time=100.0ms"))
            .collect();
        text.push("step 12/100 | loss=1.0 | time=100.0ms".into());
        text.push("step 31/100 | loss=1.0 | time=100.0ms".into());
        for (i, line) in text.iter().enumerate() {
            m.apply(feed.message(i as u64 + 1, line.as_bytes(), None));
        }
        let live = &m.sources[0].stats;
        assert_eq!(live.rejected, 1);
        assert_eq!(
            live.first_rejected,
            Some((
                31,
                "a step that goes back with no restart to explain it",
                "step 12/100 | loss=1.0 | time=100.0ms".to_string()
            ))
        );
        // The monitor's count is the feed's own, as `report` gives it.
        assert_eq!(live, &feed.stats);
        assert_eq!(m.model.merged.last_step, Some(31));
    }

    #[test]
    fn the_same_messages_give_the_same_state() {
        let msgs: Vec<Msg> = (1..50).map(|i| line(0, i, i as f64, Some(i))).collect();
        let run = |msgs: &[Msg]| {
            let mut m = Monitor::new(ModelConfig::default(), DiagnoseConfig::default());
            for msg in msgs {
                m.apply(msg.clone());
            }
            format!("{:?}", m.model)
        };
        assert_eq!(run(&msgs), run(&msgs));
    }
}
