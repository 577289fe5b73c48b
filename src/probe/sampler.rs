//! One sampler reads everything at once: GPUs, host, trainer tree. A fast tier every
//! interval (1 s by default) and a slow tier every few intervals for what is costly to read
//! (the GPUs' process lists, which take a driver lock, and smaps_rollup, which walks page
//! tables). `spawn` runs it on one thread that sends each sample into the inbox.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::mpsc::SyncSender;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nvml_wrapper::Nvml;

use super::gpu::select::{CudaEnv, GpuSelect};
use super::gpu::{self, GpuProbe};
use super::host::HostProbe;
use super::process::TreeProbe;
use super::stacks::{self, StackOptions, Targets};
use super::{GpuReading, Sample, TrainerReading, environ, trainer};
use crate::model::job::JobIdentity;
use crate::monitor::msg::{Msg, unix_now};

/// What to read, and how often.
#[derive(Clone, Debug)]
pub struct SamplerOptions {
    pub interval: Duration,
    /// The slow tier runs every this many samples (the first sample is always slow).
    pub slow_every: u32,
    /// `--gpus 0,2`, UUIDs or `cuda`; None: all, or the trainer's once known.
    pub gpus: Option<GpuSelect>,
    pub gpm: bool,
    /// `--pid`; None: looked for among the writers of `logs`, then the GPUs' processes.
    pub pid: Option<u32>,
    /// The job `steptop run` started: the trainer is it, or the first process under it when
    /// it is a launcher (looked for again until that process exists).
    pub job: Option<u32>,
    pub logs: Vec<PathBuf>,
    /// /proc, or a directory laid out like it.
    pub proc_root: PathBuf,
    /// Sample the trainer's Python stacks too (`--no-stacks` turns it off).
    pub stacks: Option<StackOptions>,
}

impl Default for SamplerOptions {
    fn default() -> Self {
        SamplerOptions {
            interval: Duration::from_secs(1),
            slow_every: 5,
            gpus: None,
            gpm: false,
            pid: None,
            job: None,
            logs: Vec::new(),
            proc_root: PathBuf::from("/proc"),
            stacks: None,
        }
    }
}

/// Reads samples; borrows the NVML session its caller keeps open.
pub struct Sampler<'n> {
    opts: SamplerOptions,
    nvml: Option<&'n Nvml>,
    gpus: Result<GpuProbe<'n>, String>,
    /// Under `--gpus cuda`: the environment the GPUs were numbered by.
    cuda_env: CudaEnv,
    host: HostProbe,
    trainer: Option<TreeProbe>,
    ticks: u64,
    /// (device, pid) of the GPUs' compute processes at the last slow reading.
    gpu_processes: Vec<((u32, Option<u32>), u32)>,
    /// Which of those pids are processes of ours that hold a GPU open, by pid.
    ours: HashMap<u32, bool>,
    /// When to look for the log's writer again while no trainer is known.
    discovery: Backoff,
    /// The job identity read from the trainer's environment, by its pid (read once).
    job: Option<(u32, Option<JobIdentity>)>,
}

/// Looking for a log's writer reads every process's descriptors: milliseconds on a busy
/// node. While it finds nothing (the trainer has not started, or writes the log from another
/// node over NFS) it is tried after 1, 2, 4, ... slow readings, at most this many apart.
const MAX_DISCOVERY_BACKOFF: u32 = 12;

/// A retry schedule in slow readings: due now, then after 1, 2, 4, ... failures apart.
#[derive(Debug, Default)]
struct Backoff {
    /// Slow readings to skip before the next try.
    wait: u32,
    /// The gap after the next failure.
    step: u32,
}

impl Backoff {
    /// Whether to try at this slow reading.
    fn due(&mut self) -> bool {
        if self.wait == 0 {
            return true;
        }
        self.wait -= 1;
        false
    }

    fn failed(&mut self) {
        self.wait = self.step;
        self.step = (self.step * 2).clamp(1, MAX_DISCOVERY_BACKOFF);
    }
}

impl<'n> Sampler<'n> {
    /// `nvml` is the result of `gpu::open()`.
    pub fn new(nvml: &'n Result<Nvml, String>, opts: SamplerOptions) -> Self {
        let cuda_env = CudaEnv::from_env();
        let gpus = match nvml {
            Ok(n) => GpuProbe::new(n, opts.gpus.as_ref(), opts.gpm, &cuda_env),
            Err(e) => Err(e.clone()),
        };
        let trainer = opts
            .pid
            .map(|pid| TreeProbe::new(&opts.proc_root, pid, "--pid".into()));
        Sampler {
            host: HostProbe::new(&opts.proc_root),
            opts,
            nvml: nvml.as_ref().ok(),
            gpus,
            cuda_env,
            trainer,
            ticks: 0,
            gpu_processes: Vec::new(),
            ours: HashMap::new(),
            discovery: Backoff::default(),
            job: None,
        }
    }

    /// Reads everything now; `time` is the sample's Unix time.
    pub fn sample(&mut self, time: f64) -> Sample {
        let slow = self
            .ticks
            .is_multiple_of(u64::from(self.opts.slow_every.max(1)));
        self.ticks += 1;
        let mut s = Sample {
            time,
            ..Sample::default()
        };
        match &mut self.gpus {
            Ok(p) => {
                s.gpus = p.read(slow);
                s.gpu_notes = p.notes().to_vec();
            }
            Err(e) => s.gpu_error = Some(e.clone()),
        }
        if slow {
            self.gpu_processes = s
                .gpus
                .iter()
                .flat_map(|g| g.processes.iter().flatten().map(move |p| (g.key(), p.pid)))
                .collect();
            self.check_gpu_pids();
        }
        if self.foreign_pids() {
            s.gpu_notes.push(FOREIGN_PIDS.into());
        }
        s.host = self.host.read(time);
        if self.trainer.is_none() && slow {
            self.trainer = self.discover();
        }
        if let Some(t) = &mut self.trainer {
            s.trainer = t.read(time, slow);
            // A trainer found on its own that has exited is looked for again at once; one
            // named by --pid stays named.
            if s.trainer.is_none() && self.opts.pid.is_none() {
                self.trainer = None;
                self.discovery = Backoff::default();
            }
        }
        if self.opts.gpus.is_none() {
            self.keep_trainer_gpus(&mut s.gpus, s.trainer.as_ref());
        }
        if slow && let Some(t) = &s.trainer {
            self.number_as_the_trainer(t.pid);
        }
        if let Some(t) = &mut s.trainer {
            t.job = self.job_of(t);
        }
        s
    }

    /// The trainer's job identity, read from its environment once per trainer.
    fn job_of(&mut self, t: &TrainerReading) -> Option<JobIdentity> {
        if self.job.as_ref().is_none_or(|(pid, _)| *pid != t.pid) {
            let job = environ::job_of(&self.opts.proc_root, t.pid)
                .filter(|j| !j.is_empty())
                .map(|j| if t.ranks.len() > 1 { j.node_level() } else { j });
            self.job = Some((t.pid, job));
        }
        self.job.as_ref().and_then(|(_, j)| j.clone())
    }

    /// Under `--gpus cuda`, once the trainer is known, its CUDA_VISIBLE_DEVICES numbers the
    /// GPUs from the next reading on (steptop's own did until then).
    fn number_as_the_trainer(&mut self, pid: u32) {
        let (Some(GpuSelect::Cuda), Some(nvml)) = (&self.opts.gpus, self.nvml) else {
            return;
        };
        if self.cuda_env.trainer == Some(pid) {
            return;
        }
        let Some(env) = CudaEnv::of_process(&self.opts.proc_root, pid) else {
            return;
        };
        self.gpus = GpuProbe::new(nvml, self.opts.gpus.as_ref(), self.opts.gpm, &env);
        self.cuda_env = env;
    }

    /// The trainer, looked for among the logs' writers when that is due, else among the GPUs'
    /// compute processes (already read, so free to check).
    fn discover(&mut self) -> Option<TreeProbe> {
        if let Some(job) = self.opts.job {
            // steptop writes the job's log itself: its writer would be steptop.
            let found = trainer::of_job(&self.opts.proc_root, job)?;
            return Some(TreeProbe::new(
                &self.opts.proc_root,
                found.pid,
                found.found_by,
            ));
        }
        let logs = &self.opts.logs;
        let by_log = if !logs.is_empty() && self.discovery.due() {
            let found = trainer::by_log_writer(&self.opts.proc_root, logs);
            if found.is_none() {
                self.discovery.failed();
            }
            found
        } else {
            None
        };
        let ours: Vec<(u32, u32)> = self
            .gpu_processes
            .iter()
            .filter(|(_, pid)| self.ours.get(pid) == Some(&true))
            .map(|((gpu, _), pid)| (*gpu, *pid))
            .collect();
        let found = by_log.or_else(|| trainer::by_gpu(&ours))?;
        Some(TreeProbe::new(
            &self.opts.proc_root,
            found.pid,
            found.found_by,
        ))
    }

    /// Which GPU processes are processes of ours that hold a GPU open. NVML gives process ids
    /// in the host's PID namespace: inside a container they are absent from /proc, or name
    /// another process.
    fn check_gpu_pids(&mut self) {
        let listed: Vec<u32> = self.gpu_processes.iter().map(|(_, pid)| *pid).collect();
        self.ours.retain(|pid, _| listed.contains(pid));
        for pid in listed {
            self.ours.entry(pid).or_insert_with(|| {
                let dir = self.opts.proc_root.join(pid.to_string());
                dir.exists() && trainer::holds_gpu(&dir) != Some(false)
            });
        }
    }

    /// Whether the GPUs run processes and none of them is ours to see.
    fn foreign_pids(&self) -> bool {
        !self.ours.is_empty() && !self.ours.values().any(|o| *o)
    }

    /// With no `--gpus`, once the trainer is known and runs on some GPUs, only those are
    /// shown: the GPUs of every rank its launcher started, and the GPUs of those MIG devices.
    fn keep_trainer_gpus(&self, gpus: &mut Vec<GpuReading>, t: Option<&TrainerReading>) {
        let Some(t) = t else {
            return;
        };
        let tree: Vec<u32> = std::iter::once(t.pid)
            .chain(t.workers.iter().map(|w| w.pid))
            .chain(t.ranks.iter().copied())
            .collect();
        let used: Vec<(u32, Option<u32>)> = self
            .gpu_processes
            .iter()
            .filter(|(_, pid)| tree.contains(pid))
            .map(|(key, _)| *key)
            .collect();
        if !used.is_empty() {
            // A GPU stays when the trainer uses it or one of its MIG devices; a MIG device
            // when the trainer uses that device.
            gpus.retain(|g| match g.key() {
                (index, None) => used.iter().any(|(u, _)| *u == index),
                key => used.contains(&key),
            });
        }
    }
}

/// The note for GPU processes that are not ours to see.
const FOREIGN_PIDS: &str = "GPU processes are reported with the host's PIDs (steptop runs in \
     a container or another PID namespace): the trainer is found by its log or --pid instead";

/// The processes whose stacks to sample, from a reading of the trainer's tree.
fn targets_of(t: Option<&TrainerReading>) -> Targets {
    let Some(t) = t else {
        return Targets::default();
    };
    Targets {
        mains: if t.ranks.is_empty() {
            vec![t.pid]
        } else {
            t.ranks.clone()
        },
        workers: t.workers.iter().map(|w| w.pid).collect(),
    }
}

/// Runs the sampler on its own thread until the inbox closes, with the stack thread beside it
/// when `opts.stacks` asks for one.
pub fn spawn(opts: SamplerOptions, inbox: SyncSender<Msg>) -> std::io::Result<JoinHandle<()>> {
    let stack_targets = match &opts.stacks {
        Some(stack_opts) => {
            let (tx, rx) = std::sync::mpsc::channel();
            stacks::spawn(stack_opts.clone(), rx, inbox.clone())?;
            Some(tx)
        }
        None => None,
    };
    std::thread::Builder::new()
        .name("sampler".into())
        .spawn(move || {
            let nvml = gpu::open();
            let interval = opts.interval;
            let mut sampler = Sampler::new(&nvml, opts);
            let mut next = Instant::now();
            let mut targets = Targets::default();
            loop {
                let sample = sampler.sample(unix_now());
                let now_targets = targets_of(sample.trainer.as_ref());
                if let Some(tx) = &stack_targets
                    && now_targets != targets
                {
                    // The stack thread ends on its own once the inbox is gone.
                    let _ = tx.send(now_targets.clone());
                    targets = now_targets;
                }
                if inbox.send(Msg::Sample(Box::new(sample))).is_err() {
                    return;
                }
                // Deadlines, not sleeps: a slow reading does not push later ones back.
                next += interval;
                let now = Instant::now();
                if next > now {
                    std::thread::sleep(next - now);
                } else {
                    next = now;
                }
            }
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn discovery_backs_off_to_a_try_every_twelve_slow_readings() {
        let mut b = Backoff::default();
        // Every try fails: the slow readings at which a try is made.
        let tries: Vec<u32> = (0..80)
            .filter(|_| {
                let due = b.due();
                if due {
                    b.failed();
                }
                due
            })
            .collect();
        assert_eq!(tries, [0, 1, 3, 6, 11, 20, 33, 46, 59, 72]);
    }

    #[test]
    fn the_thread_sends_samples_at_its_interval_and_stops_when_the_inbox_closes() {
        let (tx, rx) = crate::monitor::msg::inbox();
        let opts = SamplerOptions {
            interval: Duration::from_millis(20),
            ..SamplerOptions::default()
        };
        let handle = spawn(opts, tx).expect("thread");
        let mut times = Vec::new();
        for _ in 0..3 {
            match rx.recv_timeout(Duration::from_secs(10)) {
                Ok(Msg::Sample(s)) => {
                    assert!(s.host.is_some(), "this test runs on Linux");
                    times.push(s.time);
                }
                other => panic!("expected a sample, got {other:?}"),
            }
        }
        assert!(times.windows(2).all(|w| w[1] > w[0]), "{times:?}");
        drop(rx);
        handle
            .join()
            .expect("the sampler ends when the inbox closes");
    }
}
