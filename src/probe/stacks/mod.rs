//! The trainer's Python stacks, sampled from outside on a thread of their own, with no change
//! to the training code: the main thread of each rank a few times a second, each DataLoader
//! worker about once a second. The sampler thread says which processes those are (they change:
//! workers are replaced every epoch without `persistent_workers`); this thread attaches to
//! each (`spy`, after `access` has checked that the kernel will allow it) and sends every
//! sample into the inbox. Its own cost is held under a budget: after a sample that took `d`,
//! the next waits at least `d / budget`, so a trainer with many threads is sampled less often
//! rather than costing more.

mod access;
mod spy;

use std::path::PathBuf;
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::model::stacks::{Role, StackReading};
use crate::monitor::msg::{Msg, unix_now};
use access::Rights;
use spy::Spy;

/// The processes to sample: each rank's main process, and the DataLoader workers.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Targets {
    pub mains: Vec<u32>,
    pub workers: Vec<u32>,
}

/// How often, and at what cost at most.
#[derive(Clone, Debug, PartialEq)]
pub struct StackOptions {
    pub main_every: Duration,
    pub worker_every: Duration,
    /// The share of one core the sampling may take (0.008: 0.8%), measured as the time spent
    /// in reads.
    pub budget: f64,
    pub proc_root: PathBuf,
}

impl Default for StackOptions {
    fn default() -> Self {
        StackOptions {
            main_every: Duration::from_millis(250),
            worker_every: Duration::from_secs(1),
            budget: 0.008,
            proc_root: PathBuf::from("/proc"),
        }
    }
}

/// Attach tries before a process that never answers as Python is said not to be one.
const ATTACH_TRIES: u32 = 5;
/// How soon to try again after a failed attach, and after a refusal or a non-Python process.
const ATTACH_RETRY: Duration = Duration::from_secs(2);
const REFUSED_RETRY: Duration = Duration::from_secs(60);

/// One process to sample.
struct Target {
    pid: u32,
    role: Role,
    spy: Option<Spy>,
    due: Instant,
    /// When to try attaching again, and how many tries failed.
    attach_at: Instant,
    failures: u32,
}

/// Starts the stack thread. It ends when the inbox closes, or when the targets' sender is
/// gone.
pub fn spawn(
    opts: StackOptions,
    targets: Receiver<Targets>,
    inbox: SyncSender<Msg>,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("steptop-stacks".into())
        .spawn(move || run(&opts, &targets, &inbox))
}

fn run(opts: &StackOptions, targets: &Receiver<Targets>, inbox: &SyncSender<Msg>) {
    let rights = Rights::of_self(&opts.proc_root);
    let mut list: Vec<Target> = Vec::new();
    // The earliest moment the next read may start, by the budget.
    let mut gate = Instant::now();
    loop {
        let now = Instant::now();
        let next = list
            .iter()
            .map(|t| if t.spy.is_some() { t.due } else { t.attach_at })
            .min()
            .map_or(now + Duration::from_secs(1), |d| d.max(gate));
        match targets.recv_timeout(next.saturating_duration_since(now)) {
            Ok(t) => {
                update(&mut list, &t);
                continue;
            }
            Err(RecvTimeoutError::Disconnected) => return,
            Err(RecvTimeoutError::Timeout) => {}
        }
        let now = Instant::now();
        for t in list
            .iter_mut()
            .filter(|t| t.spy.is_none() && t.attach_at <= now)
        {
            if let Some(msg) = attach(t, &rights, opts)
                && inbox.send(Msg::Stacks(Box::new(msg))).is_err()
            {
                return;
            }
        }
        let Some(t) = list
            .iter_mut()
            .filter(|t| t.spy.is_some() && t.due <= now)
            .min_by_key(|t| t.due)
        else {
            continue;
        };
        let every = match t.role {
            Role::Main => opts.main_every,
            Role::Worker => opts.worker_every,
        };
        let started = Instant::now();
        let sample = match t.spy.as_mut().map(|s| s.sample(unix_now())) {
            Some(Ok(sample)) => sample,
            Some(Err(_)) | None => {
                // Broken on what it read: attach afresh in a moment.
                t.spy = None;
                t.attach_at = Instant::now() + ATTACH_RETRY;
                None
            }
        };
        let took = started.elapsed();
        gate = Instant::now() + took.div_f64(opts.budget.max(1e-4));
        t.due = (t.due + every).max(Instant::now());
        if let Some(s) = sample
            && inbox
                .send(Msg::Stacks(Box::new(StackReading::Sample(s))))
                .is_err()
        {
            return;
        }
    }
}

/// Keeps the targets still named, adds the new ones.
fn update(list: &mut Vec<Target>, targets: &Targets) {
    let wanted: Vec<(u32, Role)> = targets
        .mains
        .iter()
        .map(|p| (*p, Role::Main))
        .chain(targets.workers.iter().map(|p| (*p, Role::Worker)))
        .collect();
    list.retain(|t| wanted.contains(&(t.pid, t.role)));
    let now = Instant::now();
    for (pid, role) in wanted {
        if !list.iter().any(|t| t.pid == pid) {
            list.push(Target {
                pid,
                role,
                spy: None,
                due: now,
                attach_at: now,
                failures: 0,
            });
        }
    }
}

/// Tries to attach to `t`; what the monitor should hear of it, if anything.
fn attach(t: &mut Target, rights: &Rights, opts: &StackOptions) -> Option<StackReading> {
    let now = Instant::now();
    let refused = |t: &mut Target, why: String| {
        t.attach_at = now + REFUSED_RETRY;
        Some(StackReading::Refused {
            time: unix_now(),
            pid: t.pid,
            why,
        })
    };
    if let Some(why) = rights.refusal(&opts.proc_root, t.pid) {
        return refused(t, why);
    }
    let name = std::fs::read_to_string(opts.proc_root.join(format!("{}/comm", t.pid)))
        .map(|s| s.trim().to_string())
        .unwrap_or_default();
    // A wrapper (a pyenv shim, `env`, `sh -c`) may become Python a moment later, through a
    // chain of execs: a few tries before saying so.
    if !maps_python(&opts.proc_root, t.pid) {
        t.failures += 1;
        if t.failures < ATTACH_TRIES {
            t.attach_at = now + ATTACH_RETRY;
            return None;
        }
        return refused(
            t,
            format!(
                "no Python stacks for pid {} ({name}): it is not a Python process",
                t.pid
            ),
        );
    }
    match Spy::attach(t.pid, t.role) {
        Ok(spy) => {
            let (major, minor) = spy.python();
            t.spy = Some(spy);
            t.failures = 0;
            // Before 3.11 a thread's idle state is a guess from the OS alone.
            ((major, minor) < (3, 11)).then(|| StackReading::Note {
                time: unix_now(),
                pid: t.pid,
                text: format!(
                    "pid {} runs Python {major}.{minor}: waiting and running are told apart \
                     reliably from Python 3.11 on, so idle shares are rough",
                    t.pid
                ),
            })
        }
        Err(e) => {
            t.failures += 1;
            if t.failures < ATTACH_TRIES {
                t.attach_at = now + ATTACH_RETRY;
                return None;
            }
            refused(
                t,
                format!(
                    "cannot read the Python stacks of pid {} ({name}): not a Python process \
                     steptop can read ({})",
                    t.pid,
                    e.lines().next().unwrap_or("no reason given")
                ),
            )
        }
    }
}

/// Whether a Python interpreter is mapped into `pid` (its executable, or libpython); true
/// when the map cannot be read, so that attaching decides.
fn maps_python(proc_root: &std::path::Path, pid: u32) -> bool {
    std::fs::read_to_string(proc_root.join(format!("{pid}/maps"))).map_or(true, |maps| {
        maps.lines()
            .filter_map(|l| l.split_whitespace().nth(5))
            .any(|path| {
                let file = path.rsplit('/').next().unwrap_or(path);
                file.starts_with("python") || file.starts_with("libpython")
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_that_go_are_dropped_and_new_ones_added_once() {
        let mut list = Vec::new();
        update(
            &mut list,
            &Targets {
                mains: vec![10],
                workers: vec![11, 12],
            },
        );
        update(
            &mut list,
            &Targets {
                mains: vec![10],
                workers: vec![12, 13],
            },
        );
        let pids: Vec<(u32, Role)> = list.iter().map(|t| (t.pid, t.role)).collect();
        assert_eq!(
            pids,
            [(10, Role::Main), (12, Role::Worker), (13, Role::Worker)]
        );
    }

    #[test]
    fn a_process_without_python_mapped_is_told_at_once() {
        // This test binary is Rust: no interpreter in its maps.
        assert!(!maps_python(
            std::path::Path::new("/proc"),
            std::process::id()
        ));
    }
}
