//! A metric file that is still being written, read as it grows. An event file is appended
//! to: each look reads the records whole since the last (a record half written waits for its
//! bytes, so it never gives a value), and when a newer event file appears beside it (the job
//! restarted: a writer starts a new file) reading goes on there, as a rotated log's does. A
//! CSV or JSON metric file is rewritten: each look that finds it changed reads it again and
//! hands on only the steps past the last one handed on. A W&B run file is appended to in
//! LevelDB's framing: each look reads from the block its unread part begins in, and a record
//! whose fragments are not all written waits for them.

use std::io::{Read as _, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::{Entry, Kind, Read, leveldb_log, read, steps, tfrecord, wandb};

/// One followed metric file.
pub struct Growing {
    pub path: PathBuf,
    pub kind: Kind,
    /// Event files: the offset of the first record not read yet.
    offset: u64,
    /// Event files: a length that failed its check; nothing after it can be read.
    stuck: bool,
    /// Rewritten files: the size and time of the version read last.
    version: Option<(u64, SystemTime)>,
    /// The last step handed on.
    last_step: Option<u64>,
    summary_sent: bool,
    /// W&B run files: the records' reader, which keeps a sample whose parts are not all
    /// read yet.
    wandb: Option<wandb::Reader>,
}

impl Growing {
    pub fn new(path: PathBuf, kind: Kind) -> Growing {
        Growing {
            path,
            kind,
            offset: 0,
            stuck: false,
            version: None,
            last_step: None,
            summary_sent: false,
            wandb: None,
        }
    }

    /// What was written since the last look: new entries (and a tracker's samples among
    /// them), and what could not be read.
    pub fn look(&mut self) -> Read {
        let (entries, problems) = match self.kind {
            Kind::Events => self.appended(),
            Kind::Wandb => return self.wandb_appended(),
            _ => self.rewritten(),
        };
        Read {
            entries,
            problems,
            ..Read::default()
        }
    }

    /// A W&B run file's records since the last look, from the block the unread part begins
    /// in (LevelDB's blocks are aligned to the file's start).
    fn wandb_appended(&mut self) -> Read {
        let mut out = Read::default();
        let base = self.offset - self.offset % leveldb_log::BLOCK as u64;
        let Ok(bytes) = read_from(&self.path, base) else {
            return out;
        };
        if self.offset == 0 && leveldb_log::ident(&bytes).is_some_and(|i| i != wandb::IDENT) {
            out.problems
                .push("byte 0: not a W&B run file (it does not begin with `:W&B`)".into());
            return out;
        }
        let reader = self
            .wandb
            .get_or_insert_with(|| wandb::Reader::new(super::wandb_machine(&self.path)));
        let framed = leveldb_log::records_at(&bytes, base as usize, self.offset as usize);
        for (offset, data) in &framed.records {
            reader.record(*offset, data, &mut out);
        }
        self.offset = framed.consumed as u64;
        out.problems.extend(framed.problems);
        // A sample's parts are written together: what a look found is whole.
        // Each record is read once (the file is only appended to): every row goes on.
        reader.finish(&mut out, &super::file_name(&self.path));
        out
    }

    fn appended(&mut self) -> (Vec<Entry>, Vec<String>) {
        let (mut entries, mut problems) = self.read_appended();
        // A newer file beside it: this one is done (its last whole records were just read).
        if let Some(next) = newer_sibling(&self.path) {
            self.path = next;
            self.offset = 0;
            self.stuck = false;
            let (more, more_problems) = self.read_appended();
            entries.extend(more);
            problems.extend(more_problems);
        }
        (entries, problems)
    }

    fn read_appended(&mut self) -> (Vec<Entry>, Vec<String>) {
        if self.stuck {
            return (Vec::new(), Vec::new());
        }
        let Ok(bytes) = read_from(&self.path, self.offset) else {
            return (Vec::new(), Vec::new());
        };
        let frames = tfrecord::frames(&bytes, self.offset);
        self.offset += frames.consumed as u64;
        self.stuck = frames.stuck;
        let mut problems = frames.problems;
        // What the writer flushed is shown now: a step whose values a later flush completes
        // gives its later values without a step number of their own (`past_last`).
        let entries = steps(&frames.records, &mut problems);
        (self.past_last(entries), problems)
    }

    fn rewritten(&mut self) -> (Vec<Entry>, Vec<String>) {
        // An MLflow file store's run grows in the metric files beside its `meta.yaml`.
        let version = match self.kind {
            Kind::Mlflow => self
                .path
                .parent()
                .map(|d| version_of_tree(&d.join("metrics"))),
            _ => std::fs::metadata(&self.path)
                .ok()
                .map(|m| (m.len(), m.modified().unwrap_or(SystemTime::UNIX_EPOCH))),
        };
        let Some(version) = version else {
            return (Vec::new(), Vec::new());
        };
        if self.version == Some(version) {
            return (Vec::new(), Vec::new());
        }
        self.version = Some(version);
        let Ok(r) = read(&self.path, self.kind) else {
            return (Vec::new(), Vec::new());
        };
        let mut entries = r.entries;
        // The closing summary once, when it is there.
        if self.summary_sent {
            entries.retain(|e| step_of(e).is_some());
        }
        self.summary_sent |= entries.iter().any(|e| step_of(e).is_none());
        (self.past_last(entries), r.problems)
    }

    /// The entries past the last step handed on; a step given again (the rest of its values
    /// came in a later flush) keeps its values and loses its number.
    fn past_last(&mut self, entries: Vec<Entry>) -> Vec<Entry> {
        let mut out = Vec::new();
        for mut e in entries {
            match (step_of(&e), self.last_step) {
                (Some(s), Some(last)) if s < last => continue,
                (Some(s), Some(last)) if s == last => {
                    if self.kind != Kind::Events {
                        continue;
                    }
                    e.step = None;
                }
                (Some(s), _) => self.last_step = Some(s),
                (None, _) => {}
            }
            out.push(e);
        }
        out
    }
}

/// The files under `dir` as one version: their sizes summed, the latest change.
fn version_of_tree(dir: &Path) -> (u64, SystemTime) {
    let mut version = (0, SystemTime::UNIX_EPOCH);
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let Ok(m) = e.metadata() else { continue };
            if m.is_dir() {
                stack.push(e.path());
            } else {
                version.0 += m.len();
                version.1 = version
                    .1
                    .max(m.modified().unwrap_or(SystemTime::UNIX_EPOCH));
            }
        }
    }
    version
}

/// The next event file after `path` in its directory, by name: writers name them
/// `events.out.tfevents.<unix seconds>.<host>...`, so a later start sorts after.
fn newer_sibling(path: &Path) -> Option<PathBuf> {
    let name = path.file_name()?.to_str()?;
    let dir = path.parent()?;
    std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with("events.out.tfevents.") && n.as_str() > name)
        .min()
        .map(|n| dir.join(n))
}

fn step_of(e: &Entry) -> Option<u64> {
    e.step.filter(|_| e.summary.is_none())
}

/// The file's bytes from `offset` on (none when it is shorter: a new file in its place
/// starts again from the beginning on the next look).
fn read_from(path: &Path, offset: u64) -> std::io::Result<Vec<u8>> {
    let mut f = std::fs::File::open(path)?;
    let len = f.metadata()?.len();
    if len < offset {
        return Ok(Vec::new());
    }
    f.seek(SeekFrom::Start(offset))?;
    let mut out = Vec::with_capacity((len - offset) as usize);
    f.read_to_end(&mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn scalar(step: i64, tag: &str, v: f32) -> Vec<u8> {
        super::super::scalar(step, 1000.0 + step as f64, tag, v)
    }

    fn steps(entries: &[Entry]) -> Vec<Option<u64>> {
        entries.iter().map(step_of).collect()
    }

    #[test]
    fn an_event_file_is_read_as_it_grows_and_a_half_written_record_waits() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("events.out.tfevents.1.host");
        let mut f = std::fs::File::create(&path).unwrap();
        f.write_all(&scalar(1, "loss", 2.0)).unwrap();
        f.write_all(&scalar(2, "loss", 1.5)).unwrap();
        let mut g = Growing::new(path.clone(), Kind::Events);
        let r = g.look();
        assert_eq!(
            (steps(&r.entries), r.problems.len()),
            (vec![Some(1), Some(2)], 0)
        );
        // Half of step 3's loss: nothing yet.
        let third = scalar(3, "loss", 1.25);
        f.write_all(&third[..9]).unwrap();
        assert!(g.look().entries.is_empty());
        // The rest of it, and step 3's lr flushed later: its values without a step number.
        f.write_all(&third[9..]).unwrap();
        assert_eq!(steps(&g.look().entries), vec![Some(3)]);
        f.write_all(&scalar(3, "lr", 0.1)).unwrap();
        let late = g.look().entries;
        assert_eq!(steps(&late), vec![None]);
        assert!(late[0].text().contains("lr=0.1"));
    }

    #[test]
    fn a_restart_writes_a_new_event_file_and_reading_goes_on_there() {
        let dir = tempfile::tempdir().unwrap();
        let first = dir.path().join("events.out.tfevents.1795652626.vm.1.0");
        std::fs::write(
            &first,
            [scalar(1, "loss", 2.0), scalar(2, "loss", 1.5)].concat(),
        )
        .unwrap();
        let mut g = Growing::new(first.clone(), Kind::Events);
        assert_eq!(steps(&g.look().entries), vec![Some(1), Some(2)]);
        // The job's last record before it stopped, and the new file of the restart.
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(&first)
            .unwrap();
        f.write_all(&scalar(3, "loss", 1.4)).unwrap();
        let second = dir.path().join("events.out.tfevents.1795652634.vm.1.1");
        std::fs::write(&second, scalar(4, "loss", 1.3)).unwrap();
        assert_eq!(steps(&g.look().entries), vec![Some(3), Some(4)]);
        assert_eq!(g.path, second);
        std::fs::write(
            &second,
            [scalar(4, "loss", 1.3), scalar(5, "loss", 1.2)].concat(),
        )
        .unwrap();
        assert_eq!(steps(&g.look().entries), vec![Some(5)]);
    }

    #[test]
    fn a_rewritten_csv_gives_only_its_new_steps() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("metrics.csv");
        std::fs::write(&path, "step,train_loss\n0,2.0\n1,1.9\n").unwrap();
        let mut g = Growing::new(path.clone(), Kind::LightningCsv);
        assert_eq!(steps(&g.look().entries), vec![Some(0), Some(1)]);
        assert!(g.look().entries.is_empty(), "unchanged");
        // Rewritten whole with a new column (Lightning, when val_loss first appears).
        std::fs::write(
            &path,
            "step,train_loss,val_loss\n0,2.0,\n1,1.9,\n2,1.8,\n3,1.7,2.1\n",
        )
        .unwrap();
        assert_eq!(steps(&g.look().entries), vec![Some(2), Some(3)]);
    }
}
