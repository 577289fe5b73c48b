//! One process's Python stacks through py-spy's `PythonSpy`, never blocking the target: the
//! trainer is not paused (a paused 32-thread trainer lost 46% of its throughput at 100 Hz),
//! so a sample now and then reads a frame that moved and fails; it is dropped and counted.
//! Only the main thread's stack is kept (the training loop, or a worker's fetch loop), and of
//! it the frames that place it (`frames_needed`).

use py_spy::config::LockingStrategy;
use py_spy::{Config, PythonSpy, StackTrace};

use crate::model::stacks::{PyFrame, Role, StackSample, frames_needed};

pub struct Spy {
    spy: PythonSpy,
    pub pid: u32,
    pub role: Role,
    /// Samples that failed (a frame moved while it was read).
    pub failed: u64,
}

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
        let spy = PythonSpy::new(pid_t, &config).map_err(|e| format!("{e:#}"))?;
        Ok(Spy {
            spy,
            pid,
            role,
            failed: 0,
        })
    }

    /// The interpreter's version, `3.11` and the like.
    pub fn python(&self) -> (u64, u64) {
        (self.spy.version.major, self.spy.version.minor)
    }

    /// The main thread now; None when the read failed or the thread was not found.
    pub fn sample(&mut self, time: f64) -> Option<StackSample> {
        let traces = match self.spy.get_stack_traces() {
            Ok(t) => t,
            Err(_) => {
                self.failed += 1;
                return None;
            }
        };
        let main = main_thread(&traces, self.pid)?;
        let kept = frames_needed(main.frames.iter().map(|f| f.filename.as_str()));
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
        })
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
