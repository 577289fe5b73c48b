//! Recordings: every input of a run, raw log lines with their file and arrival time and every
//! hardware sample, as JSON lines in the order the monitor received them, so that a run
//! replays elsewhere exactly (readings included). Versioned: the first line is a header with
//! `steptop_recording`, the version. A line's `t` is null for a line that was already in its
//! file when steptop started (its time then comes from the log, as it did live).
//!
//! ```text
//! {"kind":"header","steptop_recording":1}
//! {"kind":"line","t":null,"file":"train.log","text":"step 9/8880 | loss=0.6"}
//! {"kind":"line","t":1795253385.04,"file":"train.log","text":"step 10/8880 | loss=0.5"}
//! {"kind":"sample","sample":{"time":1795253385.1,"gpus":[...],"host":{...},...}}
//! {"kind":"stacks","stacks":{"kind":"sample","time":1795253385.2,"pid":812,...}}
//! ```

use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::common::error::Error;
use crate::model::sample::Sample;
use crate::model::stacks::StackReading;
use crate::monitor::msg::Msg;

/// Bumped when an entry changes meaning; a reader refuses versions it does not know.
pub const RECORDING_VERSION: u32 = 1;

/// One line of a recording.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Entry {
    Header {
        steptop_recording: u32,
    },
    Line {
        t: Option<f64>,
        file: String,
        text: String,
    },
    Sample {
        sample: Box<Sample>,
    },
    /// A sample of the trainer's Python stacks (one process's main thread), or why a process
    /// could not be sampled.
    Stacks {
        stacks: Box<StackReading>,
    },
}

/// Writes a recording. Each entry is flushed as it is written, so a run that dies leaves a
/// recording of everything before.
pub struct Recorder {
    out: BufWriter<std::fs::File>,
    path: String,
    /// The followed files' paths by source index, from the inbox's `Opened` messages.
    files: Vec<String>,
}

impl Recorder {
    /// Creates (or replaces) `path`: a recording is steptop's own output, never a training
    /// file.
    pub fn create(path: &Path) -> Result<Recorder, Error> {
        let file = std::fs::File::create(path)
            .map_err(|e| Error::Runtime(format!("cannot create {}: {e}", path.display())))?;
        let mut r = Recorder {
            out: BufWriter::new(file),
            path: path.display().to_string(),
            files: Vec::new(),
        };
        r.write(&Entry::Header {
            steptop_recording: RECORDING_VERSION,
        })?;
        Ok(r)
    }

    /// Records what an inbox message brings in: a log line, a sample, stacks. The other messages
    /// follow from the files themselves.
    pub fn record(&mut self, msg: &Msg) -> Result<(), Error> {
        match msg {
            Msg::Opened { source, path } => {
                if self.files.len() <= *source {
                    self.files.resize(*source + 1, String::new());
                }
                self.files[*source].clone_from(path);
                Ok(())
            }
            Msg::Line {
                stamp,
                text,
                arrival,
                ..
            } => {
                let file = self.files.get(stamp.source).cloned().unwrap_or_default();
                self.write(&Entry::Line {
                    t: *arrival,
                    file,
                    text: text.clone(),
                })
            }
            Msg::Lines(lines) => {
                for head in &lines.heads {
                    let file = self
                        .files
                        .get(head.stamp.source)
                        .cloned()
                        .unwrap_or_default();
                    self.write(&Entry::Line {
                        t: None,
                        file,
                        text: String::from_utf8_lossy(lines.text_of(head)).into_owned(),
                    })?;
                }
                Ok(())
            }
            Msg::Sample(sample) => self.write(&Entry::Sample {
                sample: sample.clone(),
            }),
            Msg::Stacks(stacks) => self.write(&Entry::Stacks {
                stacks: stacks.clone(),
            }),
            Msg::Status { .. }
            | Msg::CaughtUp { .. }
            | Msg::InputStopped { .. }
            | Msg::Ui(_)
            | Msg::Replay(_) => Ok(()),
        }
    }

    pub fn write(&mut self, entry: &Entry) -> Result<(), Error> {
        let fail = |e: String| Error::Runtime(format!("cannot write {}: {e}", self.path));
        serde_json::to_writer(&mut self.out, entry).map_err(|e| fail(e.to_string()))?;
        self.out
            .write_all(b"\n")
            .and_then(|()| self.out.flush())
            .map_err(|e| fail(e.to_string()))
    }
}

/// Whether `path` starts like a recording (its header), rather than a training log.
pub fn is_recording(path: &Path) -> bool {
    let mut head = [0u8; 64];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut head))
        .unwrap_or(0);
    let head = String::from_utf8_lossy(&head[..n]);
    head.starts_with('{') && head.contains("\"steptop_recording\"")
}

/// Streams the entries of a recording after its header, in order, each with the bytes of the
/// file read through its line (a replay's position). A malformed line, or a version this
/// steptop does not know, is an error naming the file and the line.
pub fn read(path: &Path, each: &mut dyn FnMut(Entry, u64)) -> Result<(), Error> {
    let at = |n: usize, what: String| Error::Runtime(format!("{}:{n}: {what}", path.display()));
    let file = std::fs::File::open(path)
        .map_err(|e| Error::Runtime(format!("cannot open {}: {e}", path.display())))?;
    let mut reader = BufReader::new(file);
    let mut line = String::new();
    let mut bytes = 0u64;
    for n in 1.. {
        line.clear();
        let len = reader
            .read_line(&mut line)
            .map_err(|e| at(n, e.to_string()))?;
        if len == 0 {
            break;
        }
        bytes += len as u64;
        if line.trim().is_empty() {
            continue;
        }
        let entry: Entry = serde_json::from_str(&line)
            .map_err(|e| at(n, format!("not a recording entry ({e})")))?;
        match entry {
            Entry::Header { steptop_recording } if n == 1 => {
                if steptop_recording != RECORDING_VERSION {
                    return Err(at(
                        n,
                        format!(
                            "recording version {steptop_recording}; this steptop reads version \
                             {RECORDING_VERSION}"
                        ),
                    ));
                }
            }
            Entry::Header { .. } => return Err(at(n, "a second header".into())),
            _ if n == 1 => return Err(at(n, "no recording header on the first line".into())),
            e => each(e, bytes),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::sample::{GpuReading, HostReading};

    #[test]
    fn entries_come_back_as_written() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("run.jsonl");
        let sample = Sample {
            time: 12.5,
            gpus: vec![GpuReading {
                index: 1,
                name: "H100".into(),
                util_pct: Some(35),
                power_w: Some(100.25),
                ..GpuReading::default()
            }],
            host: Some(HostReading {
                cpus: 64,
                cpu_pct: Some(12.5),
                ..HostReading::default()
            }),
            ..Sample::default()
        };
        let entries = vec![
            Entry::Line {
                t: Some(12.0),
                file: "train.log".into(),
                text: "step 1/10 | loss=0.5\r".into(),
            },
            Entry::Sample {
                sample: Box::new(sample),
            },
        ];
        let mut r = Recorder::create(&path).expect("create");
        for e in &entries {
            r.write(e).expect("write");
        }
        assert!(is_recording(&path));
        let mut got = Vec::new();
        read(&path, &mut |e, _| got.push(e)).expect("read");
        assert_eq!(got, entries);
    }

    #[test]
    fn inbox_messages_become_lines_of_their_file_and_samples() {
        use crate::model::Stamp;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("run.jsonl");
        let line = |source: usize, text: &str, arrival: Option<f64>| Msg::Line {
            stamp: Stamp {
                source,
                ..Stamp::default()
            },
            info: crate::parse::LineInfo::default(),
            records: Vec::new(),
            text: text.into(),
            arrival,
        };
        let msgs = [
            Msg::Opened {
                source: 1,
                path: "b.log".into(),
            },
            Msg::Opened {
                source: 0,
                path: "a.log".into(),
            },
            line(1, "history of b", None),
            Msg::CaughtUp { source: 1 },
            line(0, "live in a", Some(7.5)),
            Msg::Sample(Box::new(Sample {
                time: 8.0,
                ..Sample::default()
            })),
        ];
        let mut r = Recorder::create(&path).expect("create");
        for m in &msgs {
            r.record(m).expect("record");
        }
        let mut got = Vec::new();
        read(&path, &mut |e, _| got.push(e)).expect("read");
        let text = |t: Option<f64>, file: &str, text: &str| Entry::Line {
            t,
            file: file.into(),
            text: text.into(),
        };
        assert_eq!(
            got,
            vec![
                text(None, "b.log", "history of b"),
                text(Some(7.5), "a.log", "live in a"),
                Entry::Sample {
                    sample: Box::new(Sample {
                        time: 8.0,
                        ..Sample::default()
                    })
                },
            ]
        );
    }

    #[test]
    fn a_bad_line_or_version_is_named() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("run.jsonl");
        std::fs::write(
            &path,
            "{\"kind\":\"header\",\"steptop_recording\":1}\n{\"kind\":\"line\"}\n",
        )
        .expect("write");
        let e = read(&path, &mut |_, _| {}).expect_err("bad").to_string();
        assert!(
            e.starts_with(&format!("{}:2: not a recording entry", path.display())),
            "{e}"
        );
        std::fs::write(&path, "{\"kind\":\"header\",\"steptop_recording\":9}\n").expect("write");
        let e = read(&path, &mut |_, _| {})
            .expect_err("version")
            .to_string();
        assert!(
            e.contains("recording version 9; this steptop reads version 1"),
            "{e}"
        );
        std::fs::write(&path, "step 1/10 loss=0.5\n").expect("write");
        assert!(!is_recording(&path));
    }
}
