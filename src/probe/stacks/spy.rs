//! One process's Python stacks through py-spy's `PythonSpy`, never blocking the target: the
//! trainer is not paused (a paused 32-thread trainer lost 46% of its throughput at 100 Hz),
//! so a sample now and then reads a frame that moved and fails; it is dropped.
//! Only the main thread's stack is kept (the training loop, or a worker's fetch loop), and of
//! it the frames that place it (`frames_needed`).

use py_spy::config::LockingStrategy;
use py_spy::{Config, PythonSpy, StackTrace};

use std::collections::HashMap;

use crate::common::contain::contained;

use crate::model::stacks::{PyFrame, Role, StackSample, frames_needed, is_library};
use crate::probe::process::maps_gpu_driver;

pub struct Spy {
    spy: PythonSpy,
    pub pid: u32,
    pub role: Role,
    /// Source lines read so far, by file and line: a training loop waits at the same few.
    lines: HashMap<(String, u32), Option<String>>,
    /// Whether the process has the GPU driver loaded, and when its maps were last read: once
    /// loaded it stays; until then the maps are read again every `CUDA_RECHECK_S`.
    cuda: (bool, Option<f64>),
}

/// Seconds between readings of the maps of a process that has not loaded the GPU driver
/// (yet: CUDA starts when the trainer first touches a GPU). A PyTorch process maps a few
/// thousand regions; read four times a second they would cost more than the sample.
const CUDA_RECHECK_S: f64 = 10.0;

/// py-spy panicked on what it read (a frame that moved under it): this spy is not to be
/// trusted any more.
#[derive(Debug)]
pub struct Broken;

/// Source lines remembered at most; past it the memory starts again.
const LINES_KEPT: usize = 4096;

impl Spy {
    /// Attaches to `pid`; the error is py-spy's, for a process that is not Python (or not
    /// yet: an interpreter that is still starting).
    pub fn attach(pid: u32, role: Role) -> Result<Spy, String> {
        let config = Config {
            blocking: LockingStrategy::NonBlocking,
            // GIL-only mode prints to stderr on interpreters where it cannot tell the GIL's
            // holder; steptop reads `owns_gil` from full samples instead.
            gil_only: false,
            ..Config::default()
        };
        let pid_t = i32::try_from(pid).map_err(|_| format!("pid {pid} is out of range"))?;
        let spy = contained(|| PythonSpy::new(pid_t, &config))
            .ok_or_else(|| "py-spy failed while reading the interpreter".to_string())?
            .map_err(|e| format!("{e:#}"))?;
        Ok(Spy {
            spy,
            pid,
            role,
            lines: HashMap::new(),
            cuda: (false, None),
        })
    }

    /// The interpreter's version, `3.11` and the like.
    pub fn python(&self) -> (u64, u64) {
        (self.spy.version.major, self.spy.version.minor)
    }

    /// The main thread now: Err when py-spy broke on what it read (then this spy is dropped
    /// and the process attached again), Ok(None) when the read failed or the thread was not
    /// found.
    pub fn sample(&mut self, time: f64) -> Result<Option<StackSample>, Broken> {
        let traces = match contained(|| self.spy.get_stack_traces()) {
            None => return Err(Broken),
            Some(Ok(t)) => t,
            Some(Err(_)) => return Ok(None),
        };
        Ok(self.main_sample(&traces, time))
    }

    fn main_sample(&mut self, traces: &[StackTrace], time: f64) -> Option<StackSample> {
        let main = main_thread(traces, self.pid)?;
        let kept = frames_needed(main.frames.iter().map(|f| f.filename.as_str()));
        // In a call from the user's own code: its line says what for (a sync waits on the
        // GPU whether the thread sleeps or spins, and CUDA spins on a short wait).
        let code = match main.frames.first() {
            Some(f) if !is_library(&f.filename) => {
                self.line(&f.filename, u32::try_from(f.line).unwrap_or(0))
            }
            _ => None,
        };
        Some(StackSample {
            time,
            pid: self.pid,
            role: self.role,
            active: main.active,
            gil: main.owns_gil,
            frames: main
                .frames
                .iter()
                .take(kept)
                .map(|f| PyFrame {
                    function: f.name.clone(),
                    file: f
                        .short_filename
                        .clone()
                        .unwrap_or_else(|| f.filename.clone()),
                    path: f.filename.clone(),
                    line: u32::try_from(f.line).unwrap_or(0),
                })
                .collect(),
            code,
            cuda: Some(self.uses_cuda(time)),
        })
    }

    /// Whether the process has the GPU driver loaded (see `maps_gpu_driver`), read from its
    /// maps at most every `CUDA_RECHECK_S` until it has.
    fn uses_cuda(&mut self, now: f64) -> bool {
        let (loaded, read) = self.cuda;
        if !loaded && read.is_none_or(|t| now - t >= CUDA_RECHECK_S) {
            let maps = std::fs::read_to_string(format!("/proc/{}/maps", self.pid));
            self.cuda = (maps.is_ok_and(|m| maps_gpu_driver(&m)), Some(now));
        }
        self.cuda.0
    }

    /// Line `line` of the user's file `path`, trimmed (read once; the file is only read).
    fn line(&mut self, path: &str, line: u32) -> Option<String> {
        if self.lines.len() >= LINES_KEPT {
            self.lines.clear();
        }
        self.lines
            .entry((path.to_string(), line))
            .or_insert_with(|| {
                let text = std::fs::read_to_string(path).ok()?;
                let at = usize::try_from(line).ok()?.checked_sub(1)?;
                let l = text.lines().nth(at)?.trim();
                Some(l.chars().take(160).collect())
            })
            .clone()
    }
}

/// The process's main thread: its OS thread id is the pid; else the thread Python names
/// `MainThread`.
fn main_thread(traces: &[StackTrace], pid: u32) -> Option<&StackTrace> {
    traces
        .iter()
        .find(|t| t.os_thread_id == Some(u64::from(pid)))
        .or_else(|| {
            traces
                .iter()
                .find(|t| t.thread_name.as_deref() == Some("MainThread"))
        })
}
