//! The metrics a job writes to files instead of its log: TensorBoard event files
//! (`events.out.tfevents.*`), Lightning's `metrics.csv`, mmengine's `vis_data/scalars.json`
//! and Hugging Face's `trainer_state.json`. Each is read whole into entries, one per logged
//! step, that go the way of log lines (`ingest`): a step's figures, its wall time where the
//! file has one (so step times come from wall times), and a line of text for the log pane.

pub mod growing;
mod table;
pub mod tags;
pub mod tf_event;
pub mod tfrecord;

use std::path::Path;

use crate::parse::record::{EventKind, Format, Record, StepRecord, SummaryRecord};

/// Which kind of metric file a path is, by its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Events,
    LightningCsv,
    ScalarsJson,
    TrainerState,
}

impl Kind {
    /// The format a report credits its lines to.
    pub fn format(self) -> Format {
        match self {
            Kind::Events => Format::TensorBoard,
            Kind::LightningCsv => Format::MetricsCsv,
            Kind::ScalarsJson | Kind::TrainerState => Format::MetricsJson,
        }
    }

    /// Its entries carry their time: a wall time (event files) or each step's own time
    /// (mmengine's `time`). The others hold step numbers and figures only.
    pub fn timed(self) -> bool {
        matches!(self, Kind::Events | Kind::ScalarsJson)
    }

    /// Among the metric files of one run, which gives its steps: the one with wall times
    /// first. Lower comes first.
    pub fn preference(self) -> u8 {
        match self {
            Kind::Events => 0,
            Kind::ScalarsJson => 1,
            Kind::LightningCsv => 2,
            Kind::TrainerState => 3,
        }
    }
}

/// The kind of metric file `path` is, if it is one.
pub fn kind_of(path: &Path) -> Option<Kind> {
    let name = path.file_name()?.to_str()?;
    if name.starts_with("events.out.tfevents.") {
        return Some(Kind::Events);
    }
    match name {
        "metrics.csv" => Some(Kind::LightningCsv),
        "scalars.json" => Some(Kind::ScalarsJson),
        "trainer_state.json" => Some(Kind::TrainerState),
        _ => None,
    }
}

/// Whether metric files are among `paths`: then they give the run's steps, and the logs
/// beside them its events and config.
pub fn any<'a>(paths: impl IntoIterator<Item = &'a Path>) -> bool {
    paths.into_iter().any(|p| kind_of(p).is_some())
}

/// One logged step as the file gives it: its number, its wall time where the file has one,
/// and its named values. What the names mean is decided where it is read (`records`), with
/// the user's own names from the config's `[tags]`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Entry {
    pub step: Option<u64>,
    /// Wall time, Unix seconds, where the file has it.
    pub time: Option<f64>,
    pub values: Vec<(String, f64)>,
    /// Hugging Face's closing entry (`train_runtime`, the run's mean loss): the run's summary,
    /// not a step.
    pub summary: Option<SummaryRecord>,
}

impl Entry {
    /// The file's own names and values, for the log pane: `step 120 train/loss=0.53`.
    pub fn text(&self) -> String {
        let mut text = self.step.map(|s| format!("step {s}")).unwrap_or_default();
        for (name, v) in &self.values {
            if !text.is_empty() {
                text.push(' ');
            }
            text.push_str(&format!("{name}={}", shown(*v)));
        }
        text
    }

    /// The records its values give: a step's figures (none when no name is one steptop reads),
    /// or the run's summary.
    pub fn records(&self, user: &UserTags) -> Vec<Record> {
        if let Some(s) = &self.summary {
            return vec![Record::Summary(s.clone())];
        }
        let mut rec = StepRecord {
            step: self.step,
            ..StepRecord::default()
        };
        let mut any = false;
        for (name, v) in &self.values {
            if let Some(f) = tags::figure_with(user, name) {
                tags::set(&mut rec, f, *v);
                any = true;
            }
        }
        let mut out = Vec::new();
        if any {
            out.push(Record::Step(Box::new(rec)));
        }
        // An evaluation logged at this step ran after it: the next step's wall time holds it,
        // a pause and not a step (the model tells it as it does a log's evaluation).
        if self
            .values
            .iter()
            .any(|(name, _)| tags::is_evaluation(name) && tags::figure_with(user, name).is_none())
        {
            out.push(Record::Event {
                kind: EventKind::Eval,
                text: self.text(),
            });
        }
        out
    }
}

/// The user's own metric names (`[tags]` in the config): a name and the figure it is, or
/// None for a name to leave alone.
pub type UserTags = Vec<(String, Option<tags::Figure>)>;

/// A metric file's entries, and what in it could not be read.
#[derive(Debug, Default)]
pub struct Read {
    pub entries: Vec<Entry>,
    pub problems: Vec<String>,
}

/// Reads a metric file whole.
pub fn read(path: &Path, kind: Kind) -> std::io::Result<Read> {
    let bytes = std::fs::read(path)?;
    Ok(match kind {
        Kind::Events => events(&bytes),
        Kind::LightningCsv => table::csv(&String::from_utf8_lossy(&bytes)),
        Kind::ScalarsJson => table::json_lines(&String::from_utf8_lossy(&bytes)),
        Kind::TrainerState => table::trainer_state(&String::from_utf8_lossy(&bytes)),
    })
}

/// A value as written: a 32-bit float (as TensorBoard stores scalars) in its shortest form.
fn shown(v: f64) -> String {
    let single = v as f32;
    if f64::from(single) == v {
        single.to_string()
    } else {
        v.to_string()
    }
}

/// TensorBoard's events, one entry per step: a writer logs each scalar as its own event, so
/// consecutive events of one step are one entry, at the first one's wall time.
fn events(bytes: &[u8]) -> Read {
    let frames = tfrecord::frames(bytes, 0);
    let mut out = Read {
        problems: frames.problems,
        ..Read::default()
    };
    if frames.consumed < bytes.len() && !frames.stuck {
        out.problems.push(format!(
            "byte {}: the last record is not whole (still being written, or cut)",
            frames.consumed
        ));
    }
    out.entries = steps(&frames.records, &mut out.problems);
    out
}

/// Event records (with their offsets) as entries, one per step: consecutive events of one
/// step are one entry, at the first one's wall time. A record that is not an event is named.
fn steps(records: &[(u64, &[u8])], problems: &mut Vec<String>) -> Vec<Entry> {
    let mut entries = Vec::new();
    let mut current: Option<Pending> = None;
    for (offset, data) in records {
        let e = match tf_event::Event::decode_from(data) {
            Ok(e) => e,
            Err(why) => {
                problems.push(format!("byte {offset}: {why}"));
                continue;
            }
        };
        let scalars: Vec<(String, f64)> = e.scalars().map(|(t, v)| (t.to_string(), v)).collect();
        if scalars.is_empty() {
            continue;
        }
        match &mut current {
            Some(p) if p.step == e.step => p.values.extend(scalars),
            _ => {
                entries.extend(current.take().map(Pending::entry));
                current = Some(Pending {
                    step: e.step,
                    time: e.wall_time,
                    values: scalars,
                });
            }
        }
    }
    entries.extend(current.map(Pending::entry));
    entries
}

/// The scalars of one step gathered so far, at its first event's wall time.
struct Pending {
    step: i64,
    time: f64,
    values: Vec<(String, f64)>,
}

impl Pending {
    fn entry(self) -> Entry {
        Entry {
            step: u64::try_from(self.step).ok(),
            time: Some(self.time),
            values: self.values,
            summary: None,
        }
    }
}

/// One scalar as an event record, framed as a writer frames it: for tests.
#[cfg(test)]
pub fn scalar(step: i64, t: f64, tag: &str, v: f32) -> Vec<u8> {
    use prost::Message;
    let e = tf_event::Event {
        wall_time: t,
        step,
        file_version: None,
        summary: Some(tf_event::Summary {
            value: vec![tf_event::Value {
                tag: tag.into(),
                simple_value: Some(v),
                tensor: None,
            }],
        }),
    };
    tfrecord::frame(&e.encode_to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use prost::Message;

    #[test]
    fn a_steps_scalars_are_one_entry_at_its_first_wall_time() {
        let version = tf_event::Event {
            wall_time: 99.0,
            step: 0,
            file_version: Some("brain.Event:2".into()),
            summary: None,
        };
        let mut file = tfrecord::frame(&version.encode_to_vec());
        file.extend(scalar(1, 100.0, "train/loss", 2.5));
        file.extend(scalar(1, 100.001, "train/lr", 0.001));
        file.extend(scalar(2, 100.25, "train/loss", 2.0));
        file.extend(scalar(3, 100.5, "val/loss", 2.2));
        let torn = scalar(4, 100.75, "train/loss", 1.9);
        file.extend(&torn[..torn.len() - 3]);
        let r = events(&file);
        assert_eq!(r.entries.len(), 3);
        assert_eq!(r.entries[0].text(), "step 1 train/loss=2.5 train/lr=0.001");
        assert_eq!(r.entries[0].time, Some(100.0));
        let Record::Step(s) = &r.entries[0].records(&UserTags::new())[0] else {
            panic!("a step record")
        };
        assert_eq!((s.step, s.loss), (Some(1), Some(2.5)));
        assert!(s.lr.is_some_and(|lr| (lr - 0.001).abs() < 1e-9));
        let eval = &r.entries[2];
        assert!(
            matches!(
                eval.records(&UserTags::new()).as_slice(),
                [Record::Event {
                    kind: EventKind::Eval,
                    ..
                }]
            ),
            "an evaluation figure is not a step: it says an evaluation ran"
        );
        // Unless the config's [tags] says what it is.
        let mine = vec![("val/loss".to_string(), Some(tags::Figure::Loss))];
        let loss = |r: &Record| match r {
            Record::Step(s) => s.loss,
            _ => None,
        };
        // 2.2 as TensorBoard stores it, a 32-bit float.
        assert_eq!(loss(&eval.records(&mine)[0]), Some(f64::from(2.2f32)));
        assert_eq!(r.problems.len(), 1);
        assert!(r.problems[0].contains("not whole"), "{:?}", r.problems);
    }
}
