//! Finding the training process when the user did not name it: the process that holds a
//! followed log open for writing (its DataLoader workers inherit the handle, so the root of
//! the writers' tree is taken), or else a GPU's compute process.
//!
//! This is the one place that looks at every process of the machine, and only while no
//! trainer is known.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::process::parse_stat;

/// The trainer and how it was found.
#[derive(Clone, Debug, PartialEq)]
pub struct Found {
    pub pid: u32,
    pub found_by: String,
}

/// The root of the processes that hold one of `logs` open for writing.
pub fn by_log_writer(root: &Path, logs: &[PathBuf]) -> Option<Found> {
    let wanted: Vec<(PathBuf, &PathBuf)> = logs
        .iter()
        .filter_map(|l| Some((std::fs::canonicalize(l).ok()?, l)))
        .collect();
    if wanted.is_empty() {
        return None;
    }
    let me = std::process::id();
    let mut writers: Vec<(u32, &PathBuf)> = Vec::new();
    for pid in pids(root).into_iter().filter(|p| *p != me) {
        let fd_dir = root.join(pid.to_string()).join("fd");
        let Ok(fds) = std::fs::read_dir(&fd_dir) else {
            continue;
        };
        for fd in fds.flatten() {
            let Ok(target) = std::fs::read_link(fd.path()) else {
                continue;
            };
            let Some((_, log)) = wanted.iter().find(|(p, _)| *p == target) else {
                continue;
            };
            let info = root
                .join(pid.to_string())
                .join("fdinfo")
                .join(fd.file_name());
            if opened_for_writing(&std::fs::read_to_string(info).unwrap_or_default()) {
                writers.push((pid, log));
                break;
            }
        }
    }
    let set: HashSet<u32> = writers.iter().map(|w| w.0).collect();
    // The root: a writer whose parent does not write (forked workers inherit the handle).
    writers
        .iter()
        .filter(|(pid, _)| {
            let parent = std::fs::read_to_string(root.join(pid.to_string()).join("stat"))
                .ok()
                .and_then(|t| parse_stat(&t))
                .map(|s| s.ppid);
            parent.is_none_or(|pp| !set.contains(&pp))
        })
        .min_by_key(|(pid, _)| *pid)
        .map(|(pid, log)| Found {
            pid: *pid,
            found_by: format!("holds {} open for writing", log.display()),
        })
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
    fn the_first_compute_process_that_is_not_steptop() {
        let me = std::process::id();
        let found = by_gpu(&[(0, me), (1, 77)]).expect("found");
        assert_eq!(found.pid, 77);
        assert_eq!(found.found_by, "compute process on GPU 1");
        assert_eq!(by_gpu(&[]), None);
    }
}
