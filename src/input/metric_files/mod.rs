//! The metrics a job writes to files instead of its log: TensorBoard event files
//! (`events.out.tfevents.*`), Lightning's `metrics.csv`, mmengine's `vis_data/scalars.json`,
//! Hugging Face's `trainer_state.json`, and the trackers' runs: W&B's `run-<id>.wandb`,
//! MLflow's file and SQLite stores, SwanLab's `run-<id>.swanlab`, ClearML's offline runs,
//! Trackio's project stores.
//! Each is read whole into entries, one per logged step, that go the way of log lines
//! (`ingest`): a step's figures, its wall time where the file has one (so step times come
//! from wall times), and a line of text for the log pane. A tracker's system metrics become
//! hardware samples placed among the entries, on the run's own clock.

pub mod clearml;
mod gpu_figure;
pub mod growing;
pub mod leveldb_log;
pub mod mlflow;
mod mlflow_db;
mod sqlite;
pub mod swanlab;
mod table;
pub mod tags;
pub mod tf_event;
pub mod tfrecord;
mod trackio;
pub mod wandb;

use std::path::Path;

use crate::model::sample::Sample;
use crate::parse::record::{ConfigFact, EventKind, Format, Record, StepRecord, SummaryRecord};

/// Which kind of metric file a path is, by its name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Events,
    LightningCsv,
    ScalarsJson,
    TrainerState,
    /// W&B's transaction log, `run-<id>.wandb`.
    Wandb,
    /// An MLflow file store's run, by its `meta.yaml`.
    Mlflow,
    /// An MLflow SQLite store (`mlflow.db`): its latest run.
    MlflowDb,
    /// SwanLab's run file, `run-<id>.swanlab`.
    Swanlab,
    /// ClearML's offline run, `offline-<task>/metrics.jsonl`.
    Clearml,
    /// Trackio's project store (`<project>.db`): its latest run.
    Trackio,
}

impl Kind {
    /// The format a report credits its lines to.
    pub fn format(self) -> Format {
        match self {
            Kind::Events => Format::TensorBoard,
            Kind::LightningCsv => Format::MetricsCsv,
            Kind::ScalarsJson | Kind::TrainerState => Format::MetricsJson,
            Kind::Wandb => Format::Wandb,
            Kind::Mlflow | Kind::MlflowDb => Format::Mlflow,
            Kind::Swanlab => Format::Swanlab,
            Kind::Clearml => Format::Clearml,
            Kind::Trackio => Format::Trackio,
        }
    }

    /// Its entries carry their time: a wall time (event files) or each step's own time
    /// (mmengine's `time`). The others hold step numbers and figures only.
    pub fn timed(self) -> bool {
        matches!(
            self,
            Kind::Events
                | Kind::ScalarsJson
                | Kind::Wandb
                | Kind::Mlflow
                | Kind::MlflowDb
                | Kind::Swanlab
                | Kind::Clearml
        )
    }

    /// Among the metric files of one run, which gives its steps: the one with wall times
    /// first. Lower comes first.
    pub fn preference(self) -> u8 {
        match self {
            // A tracker's run file holds what an event file it syncs does, and the GPUs too.
            Kind::Wandb
            | Kind::Mlflow
            | Kind::MlflowDb
            | Kind::Swanlab
            | Kind::Clearml
            | Kind::Trackio => 0,
            Kind::Events => 1,
            Kind::ScalarsJson => 2,
            Kind::LightningCsv => 3,
            Kind::TrainerState => 4,
        }
    }
}

/// The kind of metric file `path` is, if it is one.
pub fn kind_of(path: &Path) -> Option<Kind> {
    let name = path.file_name()?.to_str()?;
    if name.starts_with("events.out.tfevents.") {
        return Some(Kind::Events);
    }
    if name.ends_with(".wandb") {
        return Some(Kind::Wandb);
    }
    if name.ends_with(".swanlab") {
        return Some(Kind::Swanlab);
    }
    if clearml::is_offline_metrics(path) {
        return Some(Kind::Clearml);
    }
    if mlflow::is_run_meta(path) {
        return Some(Kind::Mlflow);
    }
    if path.extension().is_some_and(|e| e == "db") {
        let tables = sqlite::table_names(path);
        if sqlite::holds(&tables, &mlflow_db::TABLES) {
            return Some(Kind::MlflowDb);
        }
        if sqlite::holds(&tables, &trackio::TABLES) {
            return Some(Kind::Trackio);
        }
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
    /// The run's config as a tracker recorded it (batch size, workers): each fact with its
    /// name and value as written (`batch_size=32`).
    pub config: Vec<(String, ConfigFact)>,
}

impl Entry {
    /// The file's own names and values, for the log pane: `step 120 train/loss=0.53`.
    pub fn text(&self) -> String {
        if !self.config.is_empty() {
            let facts: Vec<&str> = self.config.iter().map(|(text, _)| text.as_str()).collect();
            return format!("config {}", facts.join(" "));
        }
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
        if !self.config.is_empty() {
            return self
                .config
                .iter()
                .map(|(_, fact)| Record::Config(fact.clone()))
                .collect();
        }
        let mut rec = StepRecord {
            step: self.step,
            ..StepRecord::default()
        };
        // What the row holds: a training figure, only the epoch it was logged in, or none
        // steptop reads.
        let mut training = false;
        let mut epoch = false;
        let mut loss_rank = None;
        // A whole loss's parts (`train/box_loss`): the loss where the row has no whole one.
        let (mut parts, mut parts_sum) = (0, 0.0);
        // An evaluation logged at this step ran after it: the next step's wall time holds it,
        // a pause and not a step (the model tells it as it does a log's evaluation).
        let mut evaluation = false;
        // Training figures steptop does not read (`metrics/mAP50(B)`, `lr/pg0`): the run
        // still logged this step.
        let mut unread = false;
        for (name, v) in &self.values {
            let Some(f) = tags::figure_with(user, name) else {
                let evaluated = tags::is_evaluation(name);
                evaluation |= evaluated;
                unread |= !evaluated;
                // A name the user's `[tags]` names (even `ignore`) is theirs to mean.
                if !user.iter().any(|(n, _)| n == name) && tags::is_loss_part(name) {
                    parts += 1;
                    parts_sum += v;
                }
                continue;
            };
            if f == tags::Figure::Loss {
                let rank = tags::loss_rank(name);
                if loss_rank.is_some_and(|r| r > rank) {
                    continue;
                }
                loss_rank = Some(rank);
            }
            tags::set(&mut rec, f, *v);
            training |= f != tags::Figure::Epoch;
            epoch |= f == tags::Figure::Epoch;
        }
        if rec.loss.is_none() && parts > 0 {
            rec.loss = Some(parts_sum);
            training = true;
        }
        let mut out = Vec::new();
        if training || epoch && !evaluation {
            out.push(Record::Step(Box::new(rec)));
        } else if let Some(step) = self.step.filter(|_| unread) {
            out.push(Record::StepMark { step });
        }
        if evaluation {
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
    /// A tracker's hardware samples, each after the number of entries that came before it
    /// in the file.
    pub samples: Vec<(usize, Sample)>,
    pub problems: Vec<String>,
}

/// An entry (with its place among the file's entries) or a hardware sample, as a file holds
/// them in order.
pub enum InOrder {
    Entry(usize, Entry),
    Sample(Box<Sample>),
}

/// A file's entries and its samples in file order: each sample (placed after the number of
/// entries before it, as `Read::samples` are) comes before the entries written after it.
pub fn in_order(
    entries: Vec<Entry>,
    samples: Vec<(usize, Sample)>,
) -> impl Iterator<Item = InOrder> {
    let mut entries = entries.into_iter().enumerate().peekable();
    let mut samples = samples.into_iter().peekable();
    std::iter::from_fn(move || match entries.peek() {
        Some(&(i, _)) => match samples.next_if(|(at, _)| *at <= i) {
            Some((_, s)) => Some(InOrder::Sample(Box::new(s))),
            None => entries.next().map(|(i, e)| InOrder::Entry(i, e)),
        },
        None => samples.next().map(|(_, s)| InOrder::Sample(Box::new(s))),
    })
}

/// Reads a metric file whole.
pub fn read(path: &Path, kind: Kind) -> std::io::Result<Read> {
    if kind == Kind::Mlflow {
        let (run, problems) = mlflow::read_file_store(path)?;
        // The run's folder is named by its id.
        let store = format!("run {}", file_name(path.parent().unwrap_or(path)));
        let mut read = mlflow::entries(&run, &store);
        read.problems = problems;
        return Ok(read);
    }
    if kind == Kind::MlflowDb {
        return Ok(match mlflow_db::read_latest(path) {
            Ok(Some((id, run))) => {
                mlflow::entries(&run, &format!("{} (run {id})", file_name(path)))
            }
            Ok(None) => Read {
                problems: vec!["the store holds no active run".into()],
                ..Read::default()
            },
            Err(e) => Read {
                problems: vec![format!("cannot read the store: {e}")],
                ..Read::default()
            },
        });
    }
    if kind == Kind::Trackio {
        return Ok(trackio::read(path).unwrap_or_else(|e| Read {
            problems: vec![format!("cannot read the store: {e}")],
            ..Read::default()
        }));
    }
    let bytes = std::fs::read(path)?;
    Ok(match kind {
        Kind::Mlflow | Kind::MlflowDb | Kind::Trackio => Read::default(),
        Kind::Events => events(&bytes),
        Kind::LightningCsv => table::csv(&String::from_utf8_lossy(&bytes)),
        Kind::ScalarsJson => table::json_lines(&String::from_utf8_lossy(&bytes)),
        Kind::TrainerState => table::trainer_state(&String::from_utf8_lossy(&bytes)),
        Kind::Wandb => wandb::read(&bytes, &wandb_machine(path), &file_name(path)),
        Kind::Swanlab => {
            let config = path
                .parent()
                .and_then(|d| std::fs::read_to_string(d.join("files").join("config.yaml")).ok());
            swanlab::read(&bytes, config.as_deref())
        }
        Kind::Clearml => clearml::read(&String::from_utf8_lossy(&bytes)),
    })
}

/// What a framed file's end says when its last record is not all there.
fn torn_tail(consumed: usize, len: usize) -> Option<String> {
    (consumed < len).then(|| {
        format!("byte {consumed}: the last record is not whole (still being written, or cut)")
    })
}

/// A config value a tracker recorded, as the fact a log's config line would give (`batch_size`
/// = `32`): with its text for the log pane.
fn config_fact(name: &str, value: &str) -> Option<(String, ConfigFact)> {
    let fact = crate::parse::vocabulary::lookup(name)
        .and_then(|field| crate::parse::kv::config_fact(field, name, value))?;
    Some((format!("{name}={value}"), fact))
}

/// A file's name, for notes that say where figures came from.
pub(super) fn file_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// The GPUs a W&B run's folder describes (`files/wandb-metadata.json` beside the run file):
/// their names and memory, which its system metrics do not repeat. Nothing when the file is
/// missing or says nothing of GPUs.
pub(super) fn wandb_machine(run_file: &Path) -> wandb::Machine {
    let meta = run_file
        .parent()
        .map(|d| d.join("files").join("wandb-metadata.json"));
    let json = meta
        .and_then(|m| std::fs::read(m).ok())
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
    json.map(|j| wandb::machine(&j)).unwrap_or_default()
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
    if !frames.stuck {
        out.problems.extend(torn_tail(frames.consumed, bytes.len()));
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
            ..Entry::default()
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

    #[test]
    fn samples_come_among_the_entries_where_the_file_placed_them() {
        let entry = |step| Entry {
            step: Some(step),
            ..Entry::default()
        };
        let sample = |time| Sample {
            time,
            ..Sample::default()
        };
        let entries = vec![entry(1), entry(2), entry(3)];
        let samples = vec![
            (0, sample(0.5)),
            (2, sample(2.5)),
            (2, sample(2.6)),
            (9, sample(9.0)),
        ];
        let order: Vec<String> = in_order(entries, samples)
            .map(|item| match item {
                InOrder::Entry(i, e) => format!("e{i}:{}", e.step.unwrap_or(0)),
                InOrder::Sample(s) => format!("s{}", s.time),
            })
            .collect();
        assert_eq!(
            order,
            ["s0.5", "e0:1", "e1:2", "s2.5", "s2.6", "e2:3", "s9"]
        );
    }

    fn loss_of(values: &[(&str, f64)], user: &UserTags) -> Option<f64> {
        let entry = Entry {
            step: Some(3),
            time: None,
            values: values.iter().map(|(n, v)| (n.to_string(), *v)).collect(),
            summary: None,
            config: Vec::new(),
        };
        match entry.records(user).first() {
            Some(Record::Step(s)) => s.loss,
            _ => None,
        }
    }

    #[test]
    fn a_rows_loss_is_its_surest_name_or_the_sum_of_its_parts() {
        let none = UserTags::new();
        // Ultralytics logs its loss only as parts.
        let parts = [
            ("train/box_loss", 1.0),
            ("train/cls_loss", 2.5),
            ("train/dfl_loss", 0.5),
            ("val/box_loss", 9.0),
            ("lr/pg0", 0.01),
        ];
        assert_eq!(loss_of(&parts, &none), Some(4.0));
        // A whole loss beside its parts is the loss, whichever comes first.
        assert_eq!(
            loss_of(&[("loss_cls", 0.3), ("loss", 0.9)], &none),
            Some(0.9)
        );
        assert_eq!(
            loss_of(&[("loss", 0.9), ("batch_loss", 0.7)], &none),
            Some(0.9)
        );
        assert_eq!(
            loss_of(&[("batch_loss", 0.7), ("loss", 0.9)], &none),
            Some(0.9)
        );
        // Two models: the trained one's loss.
        let gan = [("discriminator_loss", 0.4), ("generator_loss", 1.3)];
        assert_eq!(loss_of(&gan, &none), Some(1.3));
        let ppo = [("critic/vf_loss", 0.2), ("actor/pg_loss", -0.03)];
        assert_eq!(loss_of(&ppo, &none), Some(-0.03));
        // A part the user's [tags] leaves alone is not added.
        let mine = vec![("train/cls_loss".to_string(), None)];
        assert_eq!(loss_of(&parts, &mine), Some(1.5));
        // No loss at all: none is made up.
        assert_eq!(loss_of(&[("train/accuracy", 0.8)], &none), None);
    }
}
