//! Finding the training process when the user did not name it: the process that holds a
//! followed log open for writing (its DataLoader workers inherit the handle, so the root of
//! the writers' tree is taken), or else a GPU's compute process.
//!
//! This is the one place that looks at every process of the machine, and only while no
//! trainer is known.

use std::collections::HashSet;
use std::ffi::OsString;
use std::path::{Path, PathBuf};

use super::launcher::launcher;
use super::process::{children, command_line, parse_stat};

/// The trainer and how it was found.
#[derive(Clone, Debug, PartialEq)]
pub struct Found {
    pub pid: u32,
    pub found_by: String,
}

/// The trainer behind a log: the root of the processes that hold one of `logs` open for
/// writing; when that root only copies a pipe into the log (`python train.py | tee
/// train.log`), the root of the processes whose output or error goes into that pipe; when it is a launcher
/// (`torchrun train.py > train.log`), its first child, which is local rank 0.
pub fn by_log_writer(root: &Path, logs: &[PathBuf]) -> Option<Found> {
    let wanted: Vec<(PathBuf, &PathBuf)> = logs
        .iter()
        .filter_map(|l| Some((std::fs::canonicalize(l).ok()?, l)))
        .collect();
    if wanted.is_empty() {
        return None;
    }
    let log_writers = writers(root, Fds::All, |target| {
        wanted.iter().find(|(p, _)| p == target).map(|(_, l)| *l)
    });
    let (pid, log) = root_writer(root, log_writers)?;
    let mut found = Found {
        pid,
        found_by: format!("holds {} open for writing", log.display()),
    };
    if let Some(pipe) = stdin_pipe(root, pid) {
        let feeders = writers(root, Fds::OutAndErr, |target| {
            (*target == pipe).then_some(())
        });
        if let Some((feeder, ())) = root_writer(root, feeders) {
            let name = comm(root, pid);
            found = Found {
                pid: feeder,
                found_by: format!("writes into {name} (pid {pid}), which {}", found.found_by),
            };
        }
    }
    Some(through_launchers(root, found))
}

/// Which descriptors of a process a writer is looked for among.
#[derive(Clone, Copy)]
enum Fds {
    All,
    /// Standard output and error: what a program in a shell pipeline writes into the pipe.
    OutAndErr,
}

/// Every process but steptop that holds a descriptor (of `fds`) open for writing on a target
/// `matches` accepts, with what it returned.
fn writers<T>(root: &Path, fds: Fds, matches: impl Fn(&PathBuf) -> Option<T>) -> Vec<(u32, T)> {
    let me = std::process::id();
    let mut found = Vec::new();
    for pid in pids(root).into_iter().filter(|p| *p != me) {
        let dir = root.join(pid.to_string());
        let names: Vec<OsString> = match fds {
            Fds::All => match std::fs::read_dir(dir.join("fd")) {
                Ok(entries) => entries.flatten().map(|e| e.file_name()).collect(),
                Err(_) => continue,
            },
            Fds::OutAndErr => vec!["1".into(), "2".into()],
        };
        for fd in names {
            let target = std::fs::read_link(dir.join("fd").join(&fd)).ok();
            let Some(hit) = target.and_then(|t| matches(&t)) else {
                continue;
            };
            let info = dir.join("fdinfo").join(&fd);
            if opened_for_writing(&std::fs::read_to_string(info).unwrap_or_default()) {
                found.push((pid, hit));
                break;
            }
        }
    }
    found
}

/// The writer whose parent does not write (forked workers inherit the handle); the lowest
/// pid if there are several.
fn root_writer<T>(root: &Path, writers: Vec<(u32, T)>) -> Option<(u32, T)> {
    let set: HashSet<u32> = writers.iter().map(|w| w.0).collect();
    writers
        .into_iter()
        .filter(|(pid, _)| {
            let parent = std::fs::read_to_string(root.join(pid.to_string()).join("stat"))
                .ok()
                .and_then(|t| parse_stat(&t))
                .map(|s| s.ppid);
            parent.is_none_or(|pp| !set.contains(&pp))
        })
        .min_by_key(|(pid, _)| *pid)
}

/// The pipe on the process's standard input, if that is a pipe.
fn stdin_pipe(root: &Path, pid: u32) -> Option<PathBuf> {
    let target = std::fs::read_link(root.join(pid.to_string()).join("fd/0")).ok()?;
    target.to_str()?.starts_with("pipe:").then_some(target)
}

fn comm(root: &Path, pid: u32) -> String {
    std::fs::read_to_string(root.join(pid.to_string()).join("comm"))
        .map(|c| c.trim().to_string())
        .unwrap_or_else(|_| "a pipe reader".into())
}

/// Launchers run the training script as child processes, one per local rank, and more than
/// one launcher may be stacked (deepspeed starts deepspeed.launcher.launch).
const MAX_STACKED_LAUNCHERS: usize = 4;

/// From a launcher down to its first child (local rank 0 is started first), as often as the
/// child is a launcher too.
fn through_launchers(root: &Path, mut found: Found) -> Found {
    for _ in 0..MAX_STACKED_LAUNCHERS {
        let dir = root.join(found.pid.to_string());
        let Some(name) = command_line(&dir).as_deref().and_then(launcher) else {
            break;
        };
        let Some(&first) = children(&dir).first() else {
            break;
        };
        found = Found {
            pid: first,
            found_by: format!(
                "first process under {name} (pid {}), which {}",
                found.pid, found.found_by
            ),
        };
    }
    found
}

/// The job `steptop run` started: the trainer is that process, or the first process under it
/// while it is a launcher; None while a launcher has started nothing yet, or once the job is
/// gone.
pub fn of_job(root: &Path, pid: u32) -> Option<Found> {
    if !root.join(pid.to_string()).exists() {
        return None;
    }
    let found = through_launchers(
        root,
        Found {
            pid,
            found_by: "started by steptop run".into(),
        },
    );
    let dir = root.join(found.pid.to_string());
    command_line(&dir)
        .as_deref()
        .and_then(launcher)
        .is_none()
        .then_some(found)
}

/// The first compute process of the GPUs, as (gpu index, pid) pairs in index order.
pub fn by_gpu(processes: &[(u32, u32)]) -> Option<Found> {
    let me = std::process::id();
    processes
        .iter()
        .find(|(_, pid)| *pid != me)
        .map(|(gpu, pid)| Found {
            pid: *pid,
            found_by: format!("compute process on GPU {gpu}"),
        })
}

/// Whether the process at `dir` holds an NVIDIA device open (every CUDA process holds
/// /dev/nvidiactl and /dev/nvidiaN; a `dev/nvidia*` node anywhere counts, as under a
/// container's or a test's root); None when its descriptors cannot be read (another user's
/// process).
pub fn holds_gpu(dir: &Path) -> Option<bool> {
    let entries = std::fs::read_dir(dir.join("fd")).ok()?;
    Some(entries.flatten().any(|e| {
        std::fs::read_link(e.path()).is_ok_and(|t| {
            let parent = t.parent().and_then(Path::file_name);
            let name = t.file_name().map(|n| n.as_encoded_bytes());
            parent.is_some_and(|p| p == "dev") && name.is_some_and(|n| n.starts_with(b"nvidia"))
        })
    }))
}

fn pids(root: &Path) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse().ok())
        .collect()
}

/// Whether an fdinfo's `flags:` (octal) open the file for writing (O_WRONLY or O_RDWR).
pub fn opened_for_writing(fdinfo: &str) -> bool {
    fdinfo
        .lines()
        .find_map(|l| l.strip_prefix("flags:"))
        .and_then(|f| u32::from_str_radix(f.trim(), 8).ok())
        .is_some_and(|flags| flags & 0o3 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fdinfo_flags_tell_a_writer() {
        assert!(opened_for_writing(
            "pos:\t0\nflags:\t02102001\nmnt_id:\t30\n"
        ));
        assert!(opened_for_writing("flags:\t0100002\n"));
        assert!(!opened_for_writing("pos:\t0\nflags:\t0100000\n"));
        assert!(!opened_for_writing("pos:\t0\n"));
    }

    #[test]
    fn steptop_is_never_taken_for_the_writer_of_its_own_file() {
        // steptop never takes itself for the trainer: a file only this process writes has
        // no other writer.
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("train.log");
        let _f = std::fs::File::create(&path).expect("create");
        assert_eq!(by_log_writer(Path::new("/proc"), &[path]), None);
    }

    #[test]
    fn a_process_holds_a_gpu_when_it_has_an_nvidia_device_open() {
        // This test process holds no NVIDIA device; a directory without fd/ cannot be read.
        assert_eq!(holds_gpu(Path::new("/proc/self")), Some(false));
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(holds_gpu(dir.path()), None);
        let fd = dir.path().join("fd");
        std::fs::create_dir(&fd).expect("fd");
        std::os::unix::fs::symlink("/dev/null", fd.join("4")).expect("link");
        std::os::unix::fs::symlink("/srv/nvidia-docs/x", fd.join("5")).expect("link");
        assert_eq!(holds_gpu(dir.path()), Some(false));
        std::os::unix::fs::symlink("/dev/nvidiactl", fd.join("6")).expect("link");
        assert_eq!(holds_gpu(dir.path()), Some(true));
    }

    #[test]
    fn the_first_compute_process_that_is_not_steptop() {
        let me = std::process::id();
        let found = by_gpu(&[(0, me), (1, 77)]).expect("found");
        assert_eq!(found.pid, 77);
        assert_eq!(found.found_by, "compute process on GPU 1");
        assert_eq!(by_gpu(&[]), None);
    }
}
