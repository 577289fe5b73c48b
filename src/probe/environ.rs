//! A process's environment, as /proc/PID/environ holds it: what the job's scheduler and
//! launcher told the trainer (its GPUs, its job and rank).

use std::path::Path;

use crate::model::job::JobIdentity;

/// The NUL-separated `NAME=value` entries of one process's environment.
pub struct Environ(Vec<u8>);

impl Environ {
    /// None when it cannot be read (another user's process, or one that exited).
    pub fn of_process(proc_root: &Path, pid: u32) -> Option<Environ> {
        std::fs::read(proc_root.join(pid.to_string()).join("environ"))
            .ok()
            .map(Environ)
    }

    pub fn var(&self, name: &str) -> Option<String> {
        self.0.split(|b| *b == 0).find_map(|kv| {
            let value = kv.strip_prefix(name.as_bytes())?.strip_prefix(b"=")?;
            Some(String::from_utf8_lossy(value).into_owned())
        })
    }
}

/// steptop's own job identity: it runs inside the job (`srun steptop ...`) or beside it.
pub fn own_job() -> JobIdentity {
    JobIdentity::from_vars(|name| std::env::var(name).ok())
}

/// The job identity in a process's environment.
pub fn job_of(proc_root: &Path, pid: u32) -> Option<JobIdentity> {
    let env = Environ::of_process(proc_root, pid)?;
    Some(JobIdentity::from_vars(|name| env.var(name)))
}
