//! Whether steptop may read another process's memory, decided before trying: the kernel's
//! own refusal (EPERM, or py-spy's "failed to get process executable name") says nothing a
//! user can act on. Reading another process's memory takes the rights of ptrace: the same
//! user (or CAP_SYS_PTRACE), and what Yama's `ptrace_scope` allows on top.

use std::path::Path;

/// CAP_SYS_PTRACE's bit in /proc/PID/status's capability masks.
const CAP_SYS_PTRACE: u32 = 19;

/// What the kernel would say, from /proc: who steptop is and who the target is.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rights {
    /// steptop's effective uid.
    pub uid: u32,
    /// Whether steptop holds CAP_SYS_PTRACE.
    pub ptrace_cap: bool,
    /// Yama's `kernel.yama.ptrace_scope`; None without Yama.
    pub ptrace_scope: Option<u32>,
    /// steptop's pid, for Yama's "descendants only".
    pub pid: u32,
}

impl Rights {
    /// steptop's own rights, read from `proc_root` (`/proc`).
    pub fn of_self(proc_root: &Path) -> Rights {
        let status = std::fs::read_to_string(proc_root.join("self/status")).unwrap_or_default();
        let pid = std::fs::read_link(proc_root.join("self"))
            .ok()
            .and_then(|p| p.to_string_lossy().parse().ok())
            .unwrap_or_else(std::process::id);
        Rights {
            uid: uids(&status).map_or(u32::MAX, |u| u[1]),
            ptrace_cap: field(&status, "CapEff:")
                .and_then(|v| u64::from_str_radix(v, 16).ok())
                .is_some_and(|caps| caps & (1 << CAP_SYS_PTRACE) != 0),
            ptrace_scope: std::fs::read_to_string(proc_root.join("sys/kernel/yama/ptrace_scope"))
                .ok()
                .and_then(|s| s.trim().parse().ok()),
            pid,
        }
    }

    /// None when steptop may read `pid`'s memory; else why not and what to do, in one
    /// sentence.
    pub fn refusal(&self, proc_root: &Path, pid: u32) -> Option<String> {
        let dir = proc_root.join(pid.to_string());
        let status = std::fs::read_to_string(dir.join("status")).ok()?;
        let name = field(&status, "Name:").unwrap_or("?");
        let who = format!("pid {pid} ({name})");
        let grant = "or give steptop the capability (sudo setcap cap_sys_ptrace+ep \
                     \"$(command -v steptop)\")";
        if self.ptrace_scope == Some(3) {
            return Some(format!(
                "cannot read the Python stacks of {who}: this machine forbids reading other \
                 processes (kernel.yama.ptrace_scope is 3) until it reboots; --no-stacks \
                 silences this"
            ));
        }
        if self.ptrace_cap {
            return None;
        }
        let target = uids(&status)?;
        if target.iter().any(|u| *u != self.uid) {
            return Some(format!(
                "cannot read the Python stacks of {who}: it runs as uid {} and steptop as uid \
                 {}; run steptop as the trainer's user, or with sudo, {grant}",
                target[1], self.uid
            ));
        }
        match self.ptrace_scope {
            Some(2) => Some(format!(
                "cannot read the Python stacks of {who}: kernel.yama.ptrace_scope is 2 (only \
                 administrators may); run steptop with sudo, {grant}"
            )),
            Some(1) if !descends_from(proc_root, pid, self.pid) => Some(format!(
                "cannot read the Python stacks of {who}: kernel.yama.ptrace_scope is 1 (a \
                 process may only read its own children); {grant}, or allow it for this user's \
                 processes (sudo sysctl kernel.yama.ptrace_scope=0)"
            )),
            _ => None,
        }
    }
}

/// Whether `pid` is `ancestor` or descends from it.
fn descends_from(proc_root: &Path, pid: u32, ancestor: u32) -> bool {
    let mut at = pid;
    for _ in 0..64 {
        if at == ancestor {
            return true;
        }
        let status = std::fs::read_to_string(proc_root.join(at.to_string()).join("status"));
        match status
            .ok()
            .as_deref()
            .and_then(|s| field(s, "PPid:")?.parse().ok())
        {
            Some(0) | None => return false,
            Some(parent) => at = parent,
        }
    }
    false
}

/// The first word after `key` on its line of a /proc status file.
fn field<'a>(status: &'a str, key: &str) -> Option<&'a str> {
    status
        .lines()
        .find_map(|l| l.strip_prefix(key))?
        .split_whitespace()
        .next()
}

/// The real, effective, saved and file-system uids.
fn uids(status: &str) -> Option<[u32; 4]> {
    let line = status.lines().find_map(|l| l.strip_prefix("Uid:"))?;
    let mut u = line.split_whitespace().map(|v| v.parse().ok());
    Some([u.next()??, u.next()??, u.next()??, u.next()??])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A /proc with processes (pid, parent, uid) and a ptrace_scope.
    fn fake_proc(procs: &[(u32, u32, u32)], scope: Option<u32>) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        for (pid, ppid, uid) in procs {
            let p = dir.path().join(pid.to_string());
            std::fs::create_dir_all(&p).expect("dir");
            std::fs::write(
                p.join("status"),
                format!("Name:\tpython3\nPPid:\t{ppid}\nUid:\t{uid}\t{uid}\t{uid}\t{uid}\n"),
            )
            .expect("status");
        }
        if let Some(s) = scope {
            let y = dir.path().join("sys/kernel/yama");
            std::fs::create_dir_all(&y).expect("yama");
            std::fs::write(y.join("ptrace_scope"), format!("{s}\n")).expect("scope");
        }
        dir
    }

    fn rights(uid: u32, cap: bool, scope: Option<u32>) -> Rights {
        Rights {
            uid,
            ptrace_cap: cap,
            ptrace_scope: scope,
            pid: 100,
        }
    }

    #[test]
    fn another_users_process_is_refused_with_what_to_do() {
        let p = fake_proc(&[(200, 1, 1000)], None);
        let why = rights(1001, false, None)
            .refusal(p.path(), 200)
            .expect("refused");
        assert!(
            why.contains("uid 1000") && why.contains("uid 1001"),
            "{why}"
        );
        assert!(why.contains("setcap cap_sys_ptrace+ep"), "{why}");
        assert_eq!(rights(1000, false, None).refusal(p.path(), 200), None);
        assert_eq!(rights(1001, true, None).refusal(p.path(), 200), None);
    }

    #[test]
    fn yama_allows_children_only_at_scope_one_and_nothing_at_three() {
        // 300 is steptop's grandchild; 200 is not its descendant.
        let p = fake_proc(
            &[(200, 1, 1000), (250, 100, 1000), (300, 250, 1000)],
            Some(1),
        );
        let me = rights(1000, false, Some(1));
        assert_eq!(me.refusal(p.path(), 300), None);
        let why = me.refusal(p.path(), 200).expect("refused");
        assert!(why.contains("ptrace_scope is 1"), "{why}");
        assert!(
            rights(1000, true, Some(3))
                .refusal(p.path(), 300)
                .expect("refused")
                .contains("ptrace_scope is 3")
        );
        assert!(
            rights(1000, false, Some(2))
                .refusal(p.path(), 300)
                .is_some()
        );
        assert_eq!(rights(1000, true, Some(2)).refusal(p.path(), 300), None);
    }

    #[test]
    fn steptop_reads_its_own_rights() {
        let me = Rights::of_self(Path::new("/proc"));
        assert_eq!(me.pid, std::process::id());
        assert_ne!(me.uid, u32::MAX);
        // Its own process is always its own to read.
        assert_eq!(me.refusal(Path::new("/proc"), me.pid), None);
    }
}
