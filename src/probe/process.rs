//! The trainer's process tree from /proc: its CPU and its busiest thread every reading, its
//! DataLoader workers (its children) with their state and CPU, and, on the slow tier, the
//! memory of a few of them at a time from smaps_rollup (PSS and private pages: a sum of RSS would count the
//! copy-on-write pages the workers share with their parent once per worker).
//!
//! Only this tree is read, never every process of the machine.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use super::launcher::launcher;
use super::{TrainerReading, WorkerReading};

/// Processes whose smaps_rollup one slow reading reads: the kernel walks each one's page
/// tables (a quarter of a millisecond for 70 MiB, more for a real trainer), so a tree of 50
/// workers is read a few at a time, the stalest first, and each figure is at most
/// ceil(processes / 8) slow readings old.
const MEMORY_READS_PER_TICK: usize = 8;

/// Jiffies per second in /proc's CPU times. The kernel fixes USER_HZ at 100 on every
/// architecture steptop runs on (x86-64, arm64), whatever its internal HZ.
const USER_HZ: f64 = 100.0;

/// Reads one process tree; remembers CPU times and memory between readings.
pub struct TreeProbe {
    root: PathBuf,
    pub pid: u32,
    pub found_by: String,
    /// Read again on slow readings only: it changes when the process execs (a wrapper such as a
    /// pyenv shim or `env` becomes the interpreter), and rarely otherwise.
    command: Option<String>,
    /// CPU jiffies of each process and thread at the previous reading.
    prev_cpu: HashMap<u32, u64>,
    prev_time: Option<f64>,
    /// Each process's memory as last read, and the slow reading that read it.
    memory: HashMap<u32, (u64, Result<Memory, String>)>,
    slow_reads: u64,
    usable_cores: Option<f64>,
    /// The rank processes started by the same launcher, read on the slow tier.
    ranks: Vec<u32>,
}

/// One line of /proc/PID/stat, the fields steptop uses.
#[derive(Clone, Debug, PartialEq)]
pub struct ProcStat {
    pub comm: String,
    pub state: char,
    pub ppid: u32,
    /// utime + stime, in jiffies.
    pub cpu: u64,
    pub threads: u32,
}

/// Memory of one process from smaps_rollup, in bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Memory {
    pub rss: u64,
    pub pss: u64,
    pub private: u64,
}

impl TreeProbe {
    pub fn new(root: &Path, pid: u32, found_by: String) -> Self {
        TreeProbe {
            root: root.to_path_buf(),
            pid,
            found_by,
            command: None,
            prev_cpu: HashMap::new(),
            prev_time: None,
            memory: HashMap::new(),
            slow_reads: 0,
            usable_cores: None,
            ranks: Vec::new(),
        }
    }

    /// Reads the tree at `now`; `slow` also reads memory and usable cores. None once the
    /// process has exited.
    pub fn read(&mut self, now: f64, slow: bool) -> Option<TrainerReading> {
        let dir = self.root.join(self.pid.to_string());
        let stat = read_stat(&dir.join("stat"))?;
        let dt = self.prev_time.map(|t| now - t).filter(|dt| *dt > 0.0);
        let mut cpu_now = HashMap::new();
        let mut pct = |id: u32, jiffies: u64| {
            cpu_now.insert(id, jiffies);
            let before = *self.prev_cpu.get(&id)?;
            Some(100.0 * jiffies.saturating_sub(before) as f64 / USER_HZ / dt?)
        };
        if slow || self.command.is_none() {
            self.command = Some(command_line(&dir).unwrap_or_else(|| stat.comm.clone()));
        }
        let mut r = TrainerReading {
            pid: self.pid,
            found_by: self.found_by.clone(),
            command: self.command.clone().unwrap_or_default(),
            state: Some(stat.state.to_string()),
            cpu_pct: pct(self.pid, stat.cpu),
            threads: stat.threads,
            ..TrainerReading::default()
        };
        // Threads are keyed apart from processes by an offset no pid reaches (pid_max is at
        // most 2^22).
        let mut busiest: Option<f64> = None;
        let mut children = Vec::new();
        for (tid, tdir) in tasks(&dir) {
            if let Some(t) = read_stat(&tdir.join("stat"))
                && let Some(p) = pct(tid | 1 << 31, t.cpu)
            {
                busiest = Some(busiest.map_or(p, |b| b.max(p)));
            }
            children.extend(read_children(&tdir.join("children")));
        }
        r.busiest_thread_cpu_pct = busiest;
        children.sort_unstable();
        children.dedup();
        for child in &children {
            let Some(s) = read_stat(&self.root.join(child.to_string()).join("stat")) else {
                continue;
            };
            r.workers.push(WorkerReading {
                pid: *child,
                state: s.state.to_string(),
                cpu_pct: pct(*child, s.cpu),
                ..WorkerReading::default()
            });
        }
        self.prev_cpu = cpu_now;
        self.prev_time = Some(now);
        if slow || self.slow_reads == 0 {
            self.ranks = sibling_ranks(&self.root, stat.ppid);
            self.read_memory(&children);
        }
        self.fill_memory(&mut r);
        r.ranks.clone_from(&self.ranks);
        Some(r)
    }

    /// Reads the memory of the stalest processes of the tree (all of them the first time).
    fn read_memory(&mut self, children: &[u32]) {
        self.slow_reads += 1;
        let tree: Vec<u32> = std::iter::once(self.pid)
            .chain(children.iter().copied())
            .collect();
        self.memory.retain(|pid, _| tree.contains(pid));
        let mut order = tree.clone();
        order.sort_by_key(|pid| self.memory.get(pid).map_or(0, |m| m.0));
        let budget = if self.slow_reads == 1 {
            order.len()
        } else {
            MEMORY_READS_PER_TICK
        };
        for pid in order.into_iter().take(budget) {
            let path = self.root.join(pid.to_string()).join("smaps_rollup");
            let m = match std::fs::read_to_string(&path) {
                Ok(text) => parse_smaps_rollup(&text)
                    .ok_or_else(|| format!("{}: no Pss line", path.display())),
                Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => Err(format!(
                    "the memory of process {pid} cannot be read (another user's process): \
                     run steptop as the user who runs the training"
                )),
                Err(e) => Err(format!("{}: {e}", path.display())),
            };
            self.memory.insert(pid, (self.slow_reads, m));
        }
        self.usable_cores = usable_cores(&self.root, self.pid);
    }

    fn fill_memory(&self, r: &mut TrainerReading) {
        let mut note = |e: &String| {
            if !r.unreadable.contains(e) {
                r.unreadable.push(e.clone());
            }
        };
        match self.memory.get(&self.pid).map(|m| &m.1) {
            Some(Ok(m)) => {
                r.rss_bytes = Some(m.rss);
                r.pss_bytes = Some(m.pss);
                r.private_bytes = Some(m.private);
            }
            Some(Err(e)) => note(e),
            None => {}
        }
        let (mut pss, mut private, mut all) = (0, 0, !r.workers.is_empty());
        for w in &mut r.workers {
            match self.memory.get(&w.pid).map(|m| &m.1) {
                Some(Ok(m)) => {
                    w.pss_bytes = Some(m.pss);
                    w.private_bytes = Some(m.private);
                    pss += m.pss;
                    private += m.private;
                }
                Some(Err(e)) => {
                    note(e);
                    all = false;
                }
                // A worker born since the last slow reading: its memory comes next time.
                None => all = false,
            }
        }
        if all {
            r.workers_pss_bytes = Some(pss);
            r.workers_private_bytes = Some(private);
        }
        r.usable_cores = self.usable_cores;
    }
}

/// The threads of a process: (tid, /proc/PID/task/TID).
fn tasks(dir: &Path) -> Vec<(u32, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir.join("task")) else {
        return Vec::new();
    };
    entries
        .filter_map(|e| {
            let e = e.ok()?;
            let tid = e.file_name().to_str()?.parse().ok()?;
            Some((tid, e.path()))
        })
        .collect()
}

fn read_stat(path: &Path) -> Option<ProcStat> {
    parse_stat(&std::fs::read_to_string(path).ok()?)
}

fn read_children(path: &Path) -> Vec<u32> {
    std::fs::read_to_string(path)
        .map(|t| {
            t.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// The children of every thread of the process in `dir`, in pid order.
pub fn children(dir: &Path) -> Vec<u32> {
    let mut all: Vec<u32> = tasks(dir)
        .iter()
        .flat_map(|(_, t)| read_children(&t.join("children")))
        .collect();
    all.sort_unstable();
    all.dedup();
    all
}

/// Every process its launcher started, when the parent `ppid` is a launcher (torchrun,
/// deepspeed, accelerate: one child per local rank); else none.
fn sibling_ranks(root: &Path, ppid: u32) -> Vec<u32> {
    let parent = root.join(ppid.to_string());
    match command_line(&parent).as_deref().and_then(launcher) {
        Some(_) => children(&parent),
        None => Vec::new(),
    }
}

/// Whether process `pid` runs: it exists and has not exited (a zombie has).
pub fn running(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|text| parse_stat(&text))
        .is_some_and(|s| !matches!(s.state, 'Z' | 'X'))
}

/// The command line, arguments joined by spaces; None for a kernel thread or a zombie.
pub fn command_line(dir: &Path) -> Option<String> {
    let raw = std::fs::read(dir.join("cmdline")).ok()?;
    let text: Vec<String> = raw
        .split(|&b| b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    (!text.is_empty()).then(|| text.join(" "))
}

/// Whether `maps` (a /proc/PID/maps) holds the GPU driver: the NVIDIA driver's CUDA library
/// (`libcuda.so`, loaded when CUDA starts, and only where a driver is installed; a CUDA
/// build of PyTorch maps its runtime, `libcudart`, on a machine with no GPU too) or a GPU
/// device file (`/dev/nvidia0`, `/dev/nvidiactl`).
pub fn maps_gpu_driver(maps: &str) -> bool {
    // The sixth field is the mapped file's path.
    maps.lines()
        .filter_map(|l| l.split_whitespace().nth(5))
        .any(|path| {
            path.starts_with("/dev/nvidia")
                || path
                    .rsplit('/')
                    .next()
                    .is_some_and(|f| f.starts_with("libcuda.so"))
        })
}

/// /proc/PID/stat. The command name may hold spaces and parentheses, so the fields are
/// counted from the last `)`.
pub fn parse_stat(text: &str) -> Option<ProcStat> {
    let open = text.find('(')?;
    let close = text.rfind(')')?;
    let comm = text.get(open + 1..close)?.to_string();
    let f: Vec<&str> = text.get(close + 1..)?.split_whitespace().collect();
    // f[0] is field 3 (state); utime and stime are fields 14 and 15, num_threads field 20.
    let num = |i: usize| f.get(i).and_then(|v| v.parse::<u64>().ok());
    Some(ProcStat {
        comm,
        state: f.first()?.chars().next()?,
        ppid: u32::try_from(num(1)?).ok()?,
        cpu: num(11)? + num(12)?,
        threads: u32::try_from(num(17)?).ok()?,
    })
}

/// Rss, Pss and the private pages (clean and dirty) of /proc/PID/smaps_rollup, in bytes.
pub fn parse_smaps_rollup(text: &str) -> Option<Memory> {
    let mut m = Memory::default();
    let mut pss = false;
    for (key, bytes) in super::kib_lines(text) {
        match key {
            "Rss" => m.rss = bytes,
            "Pss" => (m.pss, pss) = (bytes, true),
            "Private_Clean" | "Private_Dirty" => m.private += bytes,
            _ => {}
        }
    }
    pss.then_some(m)
}

/// The CPUs a process may use: the CPUs of its affinity mask, capped by its cgroup (v2)
/// CPU quota.
pub fn usable_cores(root: &Path, pid: u32) -> Option<f64> {
    let dir = root.join(pid.to_string());
    let status = std::fs::read_to_string(dir.join("status")).ok()?;
    let allowed = status
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .and_then(|l| count_cpu_list(l.trim()))?;
    let quota = std::fs::read_to_string(dir.join("cgroup"))
        .ok()
        .and_then(|t| {
            let path = t.lines().find_map(|l| l.strip_prefix("0::"))?.to_string();
            std::fs::read_to_string(
                Path::new("/sys/fs/cgroup")
                    .join(path.trim_start_matches('/'))
                    .join("cpu.max"),
            )
            .ok()
        })
        .and_then(|t| parse_cpu_max(&t));
    Some(quota.map_or(allowed as f64, |q| q.min(allowed as f64)))
}

/// How many CPUs a list like `0-3,8,10-11` names.
pub fn count_cpu_list(list: &str) -> Option<u32> {
    let mut n = 0;
    for part in list.split(',').filter(|p| !p.is_empty()) {
        n += match part.split_once('-') {
            Some((a, b)) => b.parse::<u32>().ok()?.checked_sub(a.parse().ok()?)? + 1,
            None => {
                part.parse::<u32>().ok()?;
                1
            }
        };
    }
    Some(n)
}

/// A cgroup v2 `cpu.max` (`QUOTA PERIOD`, or `max PERIOD` for no limit) as a number of CPUs.
pub fn parse_cpu_max(text: &str) -> Option<f64> {
    let mut it = text.split_whitespace();
    let quota: f64 = it.next()?.parse().ok()?;
    let period: f64 = it.next()?.parse().ok()?;
    (period > 0.0).then(|| quota / period)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gpu_driver_is_its_cuda_library_or_a_gpu_device_not_cudas_runtime() {
        let cpu_torch = "\
7f0c1a200000-7f0c1a2c6000 r-xp 00000000 fd:01 2231  /venv/lib/python3.11/site-packages/nvidia/cuda_runtime/lib/libcudart.so.12
7f0c1b000000-7f0c1b400000 r-xp 00000000 fd:01 2301  /venv/lib/python3.11/site-packages/torch/lib/libtorch_cuda.so
7ffd5e1f0000-7ffd5e211000 rw-p 00000000 00:00 0     [stack]
7f0c1c000000-7f0c1c001000 rw-p 00000000 00:00 0
";
        assert!(!maps_gpu_driver(cpu_torch));
        let driver = format!(
            "{cpu_torch}7f0c20000000-7f0c21a00000 r-xp 00000000 103:02 1834245  /usr/lib/x86_64-linux-gnu/libcuda.so.535.104.05\n"
        );
        assert!(maps_gpu_driver(&driver));
        let device = format!(
            "{cpu_torch}7f0c30000000-7f0c30001000 rw-s 00000000 00:05 1062  /dev/nvidiactl\n"
        );
        assert!(maps_gpu_driver(&device));
    }

    #[test]
    fn stat_fields_are_counted_from_the_last_parenthesis() {
        let text = "4242 (pt_main (thread) x) S 1 4242 4242 0 -1 4194560 100 0 0 0 \
                    250 50 0 0 20 0 37 0 12345 1000000 2000 18446744073709551615\n";
        let s = parse_stat(text).expect("stat");
        assert_eq!(s.comm, "pt_main (thread) x");
        assert_eq!(s.state, 'S');
        assert_eq!(s.ppid, 1);
        assert_eq!(s.cpu, 300);
        assert_eq!(s.threads, 37);
        assert_eq!(parse_stat("12 (x) S 1"), None);
    }

    #[test]
    fn smaps_rollup_gives_pss_and_private_pages() {
        let text = "55d0c0000000-7ffd00000000 ---p 00000000 00:00 0  [rollup]\n\
                    Rss:              204800 kB\nPss:              120000 kB\n\
                    Shared_Clean:      10000 kB\nPrivate_Clean:      4000 kB\n\
                    Private_Dirty:     16000 kB\n";
        let m = parse_smaps_rollup(text).expect("rollup");
        assert_eq!(m.rss, 204_800 * 1024);
        assert_eq!(m.pss, 120_000 * 1024);
        assert_eq!(m.private, 20_000 * 1024);
        assert_eq!(parse_smaps_rollup("Rss: 5 kB\n"), None);
    }

    #[test]
    fn cpu_lists_and_quotas() {
        assert_eq!(count_cpu_list("0-3,8,10-11"), Some(7));
        assert_eq!(count_cpu_list("0"), Some(1));
        assert_eq!(count_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_max("250000 100000\n"), Some(2.5));
        assert_eq!(parse_cpu_max("max 100000\n"), None);
    }
}
