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
//! {"kind":"frames","frames":[{"id":0,"function":"train","file":"train.py","path":"/w/train.py"}]}
//! {"kind":"stack","time":1795253385.2,"pid":812,"role":"main","active":true,"gil":true,"ids":[[0,42]]}
//! {"kind":"stacks","stacks":{"kind":"refused","time":1795253385.2,"pid":813,"why":"..."}}
//! ```
//!
//! A stack sample names its frames by number (`ids`: `[id, line]`, innermost first): each frame's
//! function and file are written once, in a `frames` entry before the first sample that
//! uses them, so that a long recording does not repeat the same paths four times a second.
//! `read` gives the samples back whole, as `Stacks` entries.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::common::error::Error;
use crate::model::sample::Sample;
use crate::model::stacks::{PyFrame, StackReading, StackSample};
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
    /// could not be sampled. Samples are written as `Frames` and `Stack`; `read` gives them
    /// back as this.
    Stacks {
        stacks: Box<StackReading>,
    },
    /// Frames a later `Stack` names by id (only in the file: `read` resolves them).
    Frames {
        frames: Vec<FrameDef>,
    },
    /// A stack sample without its frames, which it names by id and line (only in the file).
    Stack {
        #[serde(flatten)]
        sample: StackSample,
        ids: Vec<(u32, u32)>,
    },
}

/// A frame's function and file, numbered for `Stack` entries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FrameDef {
    pub id: u32,
    pub function: String,
    pub file: String,
    pub path: String,
}

/// Writes a recording. Each entry is flushed as it is written, so a run that dies leaves a
/// recording of everything before.
pub struct Recorder {
    out: BufWriter<std::fs::File>,
    path: String,
    /// The followed files' paths by source index, from the inbox's `Opened` messages.
    files: Vec<String>,
    /// The frames written so far, by (function, file, path), with their ids.
    frames: HashMap<(String, String, String), u32>,
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
            frames: HashMap::new(),
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
                        t: head.arrival,
                        file,
                        text: String::from_utf8_lossy(lines.text_of(head)).into_owned(),
                    })?;
                }
                Ok(())
            }
            Msg::Sample(sample) => self.write(&Entry::Sample {
                sample: sample.clone(),
            }),
            Msg::Stacks(stacks) => match stacks.as_ref() {
                StackReading::Sample(s) => self.stack(s),
                _ => self.write(&Entry::Stacks {
                    stacks: stacks.clone(),
                }),
            },
            // A recording always holds samples, which carry the same clock.
            Msg::Status { .. }
            | Msg::Tick(_)
            | Msg::JobEnded { .. }
            | Msg::CaughtUp { .. }
            | Msg::HistorySize { .. }
            | Msg::InputStopped { .. }
            | Msg::Ui(_)
            | Msg::Replay(_) => Ok(()),
        }
    }

    /// A stack sample: the frames not written yet first, then the sample by frame ids.
    fn stack(&mut self, s: &StackSample) -> Result<(), Error> {
        let mut new = Vec::new();
        let mut ids = Vec::with_capacity(s.frames.len());
        for f in &s.frames {
            let key = (f.function.clone(), f.file.clone(), f.path.clone());
            let next = u32::try_from(self.frames.len()).unwrap_or(u32::MAX);
            let id = *self.frames.entry(key).or_insert_with(|| {
                new.push(FrameDef {
                    id: next,
                    function: f.function.clone(),
                    file: f.file.clone(),
                    path: f.path.clone(),
                });
                next
            });
            ids.push((id, f.line));
        }
        if !new.is_empty() {
            self.write(&Entry::Frames { frames: new })?;
        }
        let mut sample = s.clone();
        sample.frames.clear();
        self.write(&Entry::Stack { sample, ids })
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
    // The frames defined so far, by id.
    let mut table: HashMap<u32, FrameDef> = HashMap::new();
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
            Entry::Frames { frames } => table.extend(frames.into_iter().map(|f| (f.id, f))),
            Entry::Stack { mut sample, ids } => {
                sample.frames = ids
                    .iter()
                    .map(|&(id, line)| {
                        let f = table.get(&id).ok_or_else(|| {
                            at(n, format!("frame {id} is not defined before it is used"))
                        })?;
                        Ok(PyFrame {
                            function: f.function.clone(),
                            file: f.file.clone(),
                            path: f.path.clone(),
                            line,
                        })
                    })
                    .collect::<Result<Vec<_>, Error>>()?;
                each(
                    Entry::Stacks {
                        stacks: Box::new(StackReading::Sample(sample)),
                    },
                    bytes,
                );
            }
            e => each(e, bytes),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stack_samples_name_their_frames_once_and_come_back_whole() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("run.jsonl");
        let frame = |function: &str, line| PyFrame {
            function: function.into(),
            file: "train.py".into(),
            path: "/home/u/train.py".into(),
            line,
        };
        let sample = |time, frames| StackSample {
            time,
            pid: 7,
            role: crate::model::stacks::Role::Main,
            active: true,
            gil: true,
            frames,
            code: None,
            cuda: None,
        };
        let written = vec![
            sample(1.0, vec![frame("hot", 3), frame("main", 9)]),
            sample(2.0, vec![frame("hot", 4), frame("main", 9)]),
        ];
        let mut r = Recorder::create(&path).expect("create");
        for s in &written {
            r.record(&Msg::Stacks(Box::new(StackReading::Sample(s.clone()))))
                .expect("record");
        }
        drop(r);
        let text = std::fs::read_to_string(&path).expect("read");
        assert_eq!(text.matches("\"kind\":\"frames\"").count(), 1, "{text}");
        assert_eq!(text.matches("\"/home/u/train.py\"").count(), 2, "{text}");
        let mut back = Vec::new();
        read(&path, &mut |e, _| {
            if let Entry::Stacks { stacks } = e
                && let StackReading::Sample(s) = *stacks
            {
                back.push(s);
            }
        })
        .expect("read back");
        assert_eq!(back, written);
        std::fs::write(
            &path,
            "{\"kind\":\"header\",\"steptop_recording\":1}\n{\"kind\":\"stack\",\"time\":1.0,\
             \"pid\":7,\"role\":\"main\",\"active\":true,\"gil\":true,\"ids\":[[5,3]]}\n",
        )
        .expect("write");
        let e = read(&path, &mut |_, _| {}).expect_err("an undefined frame");
        assert!(e.to_string().contains(":2: frame 5 is not defined"), "{e}");
    }
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
