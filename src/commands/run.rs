//! `steptop run [--log FILE] -- CMD...`: starts the job as steptop's child and watches it.
//! The job's stdout and stderr are appended to the log unchanged (and copied to the terminal
//! when headless); the log is followed as `steptop LOG` follows one; the trainer is the job
//! (or the first process its launcher starts), found without searching; and as its parent,
//! steptop may read its Python stacks where Yama's default (`ptrace_scope` 1) refuses an
//! outside process. The job's exit code is steptop's. Ctrl-C reaches the job directly (one
//! process group); SIGTERM to steptop is passed on to it. Quitting the live view leaves the
//! job running: steptop keeps writing its output until it ends.

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;

use super::cli::RunArgs;
use super::live_output::{check_output, sink, watch};
use super::load_config;
use crate::common::display;
use crate::common::error::Error;
use crate::input;
use crate::monitor::msg::Msg;
use crate::probe;

/// Starts the job, watches it until the view is quit (or, headless, until the job ends),
/// then waits for the job and ends with its exit code.
pub fn run(args: &RunArgs) -> Result<(), Error> {
    let config = load_config(args.watch.config.as_deref())?;
    check_output(&args.out)?;
    let log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&args.log)
        .map_err(|e| Error::Usage(format!("cannot open --log {}: {e}", args.log.display())))?;
    let headless = args.out.headless;
    let (program, rest) = args
        .command
        .split_first()
        .ok_or_else(|| Error::Usage("no command to run: steptop run -- CMD...".into()))?;
    let mut child = Command::new(program)
        .args(rest)
        // The live view owns the terminal's input; headless, the job may read it.
        .stdin(if headless {
            Stdio::inherit()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| Error::Usage(format!("cannot start `{program}`: {e}")))?;
    let pid = child.id();
    let log = Arc::new(Mutex::new(log));
    let pumps = pumps(&mut child, &log, headless);

    let stop = Arc::new(AtomicBool::new(false));
    let trainer = probe::SamplerOptions {
        job: Some(pid),
        ..probe::SamplerOptions::default()
    };
    let inputs = vec![input::InputSpec::File(args.log.clone())];
    let feeding = watch(inputs, Vec::new(), &args.watch, &config, trainer, &stop)?;
    let mut job = Job::watch(child, feeding.tx.clone());
    let mut out = args.out.clone();
    if headless {
        // Headless ends with the job, after its last lines.
        out.until_exit = Some(pid);
    }
    let watched = sink(&out, args.watch.theme.as_deref(), config, feeding);
    stop.store(true, Ordering::SeqCst);
    if !job.ended() {
        if headless {
            // Stopped by a signal. Ctrl-C reached the job's process group too: it may be
            // saving a checkpoint, so it has a moment to end on its own before SIGTERM.
            for _ in 0..50 {
                if job.ended() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            if !job.ended() {
                terminate(pid);
            }
        } else {
            let log = args.log.display().to_string();
            eprintln!(
                "steptop: the job (pid {pid}) goes on; its output still goes to {}. Waiting \
                 for it to end (Ctrl-C stops it).",
                display::terminal(&log)
            );
        }
    }
    let status = job
        .wait()
        .map_err(|e| Error::Runtime(format!("cannot wait for the job (pid {pid}): {e}")))?;
    for p in pumps {
        let _ = p.join();
    }
    exit_of(status, watched)
}

/// The job, waited for on a thread of its own: the inbox hears when it ends (the live view
/// says so), and the command gets its exit status.
struct Job {
    status: Receiver<std::io::Result<ExitStatus>>,
    ended: Option<std::io::Result<ExitStatus>>,
}

impl Job {
    fn watch(mut child: Child, inbox: SyncSender<Msg>) -> Job {
        let (tx, status) = std::sync::mpsc::channel();
        let pid = child.id();
        let spawned = std::thread::Builder::new()
            .name("steptop-job".into())
            .spawn(move || {
                let waited = child.wait();
                if let Ok(s) = &waited {
                    let _ = inbox.send(Msg::JobEnded {
                        pid,
                        code: s.code(),
                        signal: s.signal(),
                    });
                }
                let _ = tx.send(waited);
            });
        Job {
            status,
            ended: spawned.err().map(Err),
        }
    }

    /// Whether the job has ended.
    fn ended(&mut self) -> bool {
        if self.ended.is_none() {
            self.ended = self.status.try_recv().ok();
        }
        self.ended.is_some()
    }

    /// The job's exit status, once it ends.
    fn wait(mut self) -> std::io::Result<ExitStatus> {
        match self.ended.take() {
            Some(status) => status,
            None => self.status.recv().unwrap_or_else(|_| {
                Err(std::io::Error::other(
                    "the thread that waits for the job stopped",
                ))
            }),
        }
    }
}

/// Copies the job's stdout and stderr into the log as they come (and to steptop's stderr when
/// headless); each thread ends when its pipe closes.
fn pumps(child: &mut Child, log: &Arc<Mutex<File>>, echo: bool) -> Vec<JoinHandle<()>> {
    let streams: [Option<Box<dyn Read + Send>>; 2] = [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    ];
    streams
        .into_iter()
        .flatten()
        .filter_map(|mut stream| {
            let log = Arc::clone(log);
            std::thread::Builder::new()
                .name("steptop-job-output".into())
                .spawn(move || {
                    let mut buf = vec![0u8; 64 * 1024];
                    while let Ok(n) = stream.read(&mut buf) {
                        if n == 0 {
                            return;
                        }
                        let chunk = &buf[..n];
                        // A full disk loses output, not the job: the pipe is still drained.
                        let _ = log
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .write_all(chunk);
                        if echo {
                            let _ = std::io::stderr().write_all(chunk);
                        }
                    }
                })
                .ok()
        })
        .collect()
}

/// Asks the job to stop (SIGTERM), as steptop was asked.
fn terminate(pid: u32) {
    if let Ok(pid) = i32::try_from(pid) {
        // SAFETY: kill(2) with a pid steptop started and still waits for (not yet reaped).
        unsafe {
            libc::kill(pid, libc::SIGTERM);
        }
    }
}

/// steptop's outcome: the job's failure first (its code, or 128 + the signal that ended it),
/// else what watching it said.
fn exit_of(status: std::process::ExitStatus, watched: Result<(), Error>) -> Result<(), Error> {
    use std::os::unix::process::ExitStatusExt;
    let code = status
        .code()
        .or_else(|| status.signal().map(|s| 128 + s))
        .unwrap_or(1);
    match code {
        0 => watched,
        c => Err(Error::Job(u8::try_from(c).unwrap_or(1))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::ExitStatusExt;

    #[test]
    fn the_jobs_failure_is_steptops_exit_code() {
        let ok = std::process::ExitStatus::from_raw(0);
        assert!(exit_of(ok, Ok(())).is_ok());
        let failed = std::process::ExitStatus::from_raw(3 << 8);
        assert!(matches!(exit_of(failed, Ok(())), Err(Error::Job(3))));
        // Killed by SIGTERM (15): 143, as a shell says.
        let killed = std::process::ExitStatus::from_raw(15);
        assert!(matches!(exit_of(killed, Ok(())), Err(Error::Job(143))));
        // A job that succeeded leaves the watch's own outcome (an alert with --fail-on).
        let alerted = exit_of(ok, Err(Error::Alerted("x".into())));
        assert!(matches!(alerted, Err(Error::Alerted(_))));
    }
}
