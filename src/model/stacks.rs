//! The trainer's Python stacks: each sample of one process's main thread (the stack sampler in
//! `probe/stacks` takes them), where it was (`Place`), and the shares of the recent samples by
//! place and by user function, per role (the main threads of the ranks, the DataLoader
//! workers together). Sampled shares are estimates: short bursts of CPU are under-counted at
//! normal priority, so the words say "about" where it matters.

use std::collections::{BTreeMap, VecDeque};

use serde::{Deserialize, Serialize};

/// How long samples are kept: the diagnosis window (60 s by default) and more.
const KEPT_SECONDS: f64 = 300.0;
/// Samples kept at most, whatever the rates.
const KEPT_SAMPLES: usize = 4096;
/// Frames of a stack kept at most, innermost first: the user's code is near the top.
pub const FRAMES_KEPT: usize = 64;

/// How many of a stack's frames (innermost first) say where it is: up to the second frame of
/// the user's own code (the function, and the one that called it, with the library frames
/// between them that place it: a module call, autograd, a queue), at most `FRAMES_KEPT`. The
/// frames past it (the training loop's callers, a framework's launcher) are the same in every
/// sample: a recording need not keep them.
pub fn frames_needed(paths: impl Iterator<Item = impl AsRef<str>>) -> usize {
    let mut users = 0;
    let mut n = 0;
    for path in paths.take(FRAMES_KEPT) {
        n += 1;
        if !is_library(path.as_ref()) {
            users += 1;
            if users == 2 {
                break;
            }
        }
    }
    n
}

/// What the stack sampler sends: a sample, or why a process cannot be sampled.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum StackReading {
    Sample(StackSample),
    Refused {
        time: f64,
        pid: u32,
        why: String,
    },
    /// What the samples of a process need said beside them (an old Python).
    Note {
        time: f64,
        pid: u32,
        text: String,
    },
}

/// One process's main thread at one moment.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct StackSample {
    /// Unix seconds, from the stack sampler's clock.
    pub time: f64,
    pub pid: u32,
    pub role: Role,
    /// Whether the thread was running (not waiting in the kernel).
    pub active: bool,
    /// Whether it held the GIL.
    pub gil: bool,
    /// Its Python frames, innermost first, at most `FRAMES_KEPT` (a recording writes them
    /// apart, by id).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub frames: Vec<PyFrame>,
    /// The source line the thread waited at, when it waited in a call from the user's own
    /// code (`loss.item()`): what it waits for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Whether the process had the GPU driver loaded (the NVIDIA driver's CUDA library or a
    /// GPU device in its memory maps): only then can a line such as `.tolist()` wait on a GPU.
    /// None where it is not known (a recording made before it was read).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cuda: Option<bool>,
}

/// What a sampled process does for the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// A rank's main process: its main thread runs the training loop.
    Main,
    /// A DataLoader worker.
    Worker,
}

/// One Python frame.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PyFrame {
    pub function: String,
    /// The file as the user knows it (relative to its sys.path entry).
    pub file: String,
    /// The file's full path, which tells the standard library and installed packages apart.
    pub path: String,
    pub line: u32,
}

/// Where a thread was when it was sampled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Place {
    /// Main thread: waiting for the next batch (the DataLoader's queue, or any queue it reads).
    WaitingForBatch,
    /// Running the user's own Python code.
    UserCode,
    /// Waiting in a call made from the user's code: a sleep, a file or network read, or a
    /// GPU sync its line does not show.
    Blocked,
    /// Waiting on the GPU at a line of the user's code that syncs (`.item()`, `.cpu()`,
    /// `.numpy()`, `.tolist()`, `synchronize()`, `.to(...)`).
    GpuSync,
    /// In PyTorch's module calls (the forward).
    Forward,
    /// In autograd (the backward).
    Backward,
    /// In a `torch.optim` optimizer step.
    Optimizer,
    /// Writing logs or checkpoints.
    LoggingOrCheckpoint,
    /// A worker reading: waiting in the kernel outside any queue (a file, the network).
    Reading,
    /// A worker computing: decoding, augmenting, in the user's or a library's code.
    Computing,
    /// A worker collating a batch.
    Collating,
    /// A worker waiting on its queues (for an index, or for room to put a batch).
    WaitingOnQueue,
    /// Anywhere else (another library, the interpreter's own frames).
    Other,
}

impl Place {
    /// A few words, for a narrow pane.
    pub fn short(self) -> &'static str {
        match self {
            Place::WaitingForBatch => "batch wait",
            Place::UserCode => "user code",
            Place::Blocked => "in a call",
            Place::GpuSync => "GPU sync",
            Place::Forward => "forward",
            Place::Backward => "backward",
            Place::Optimizer => "optimizer",
            Place::LoggingOrCheckpoint => "logs, checkpoints",
            Place::Reading => "reading",
            Place::Computing => "computing",
            Place::Collating => "collating",
            Place::WaitingOnQueue => "queue wait",
            Place::Other => "elsewhere",
        }
    }

    pub fn words(self) -> &'static str {
        match self {
            Place::WaitingForBatch => "waiting for the next batch",
            Place::UserCode => "in the user's Python code",
            Place::Blocked => "waiting in a call from the user's code (sleep, I/O)",
            Place::GpuSync => "waiting on the GPU (a sync: .item(), .cpu(), a blocking .to())",
            Place::Forward => "in PyTorch's forward",
            Place::Backward => "in PyTorch's backward",
            Place::Optimizer => "in the optimizer",
            Place::LoggingOrCheckpoint => "writing logs or checkpoints",
            Place::Reading => "reading (waiting on a file or the network)",
            Place::Computing => "computing (decoding, augmenting)",
            Place::Collating => "collating batches",
            Place::WaitingOnQueue => "waiting on its queues",
            Place::Other => "elsewhere",
        }
    }
}

/// A library's file: the standard library, an installed package, or the interpreter's own.
pub fn is_library(path: &str) -> bool {
    path.starts_with('<')
        || path.contains("site-packages/")
        || path.contains("dist-packages/")
        || path.contains("/lib/python")
}

fn is_queue_wait(f: &PyFrame) -> bool {
    let p = &f.path;
    p.ends_with("multiprocessing/queues.py")
        || p.ends_with("multiprocessing/connection.py")
        || p.ends_with("/queue.py")
        || p.ends_with("/selectors.py")
        || (p.ends_with("/threading.py") && f.function == "wait")
}

/// Whether a line of code waits on the GPU: it copies a result back to the host or syncs.
pub fn syncs(code: &str) -> bool {
    [
        ".item()",
        ".cpu()",
        ".numpy()",
        ".tolist()",
        "synchronize(",
        ".to(",
        ".cuda(",
    ]
    .iter()
    .any(|s| code.contains(s))
}

/// Where a sampled thread was: its place, the user function that holds it (the innermost
/// frame of the user's own code), and whether that function's own Python was running (it is
/// the innermost frame and the thread was not waiting).
pub fn classify(s: &StackSample) -> (Place, Option<&PyFrame>, bool) {
    // A worker's frames past its process's entry point are its parent's, from the fork (the
    // trainer's loop at `iter(loader)`): not the worker's doing.
    let frames = match s.role {
        Role::Main => &s.frames[..],
        Role::Worker => {
            let entry = s
                .frames
                .iter()
                .position(|f| f.path.ends_with("multiprocessing/process.py"))
                .unwrap_or(s.frames.len());
            &s.frames[..entry]
        }
    };
    let user_at = frames.iter().position(|f| !is_library(&f.path));
    let user = user_at.map(|i| &frames[i]);
    // At a line of the user's that syncs, the thread waits on the GPU, asleep or spinning:
    // on a real H200, CUDA spun in `torch.cuda.synchronize()` at 100% of a core. A process
    // with no GPU driver loaded waits on no GPU: its `.tolist()` is the CPU converting.
    let syncing =
        user_at == Some(0) && s.cuda != Some(false) && s.code.as_deref().is_some_and(syncs);
    let own = user_at == Some(0) && s.active && !syncing;
    let any = |needle: &str| frames.iter().any(|f| f.path.contains(needle));
    let innermost_library = frames.first().is_some_and(|f| is_library(&f.path));
    let place = match s.role {
        Role::Main => {
            if any("torch/utils/data/dataloader.py")
                || (!s.active && innermost_library && frames.iter().any(is_queue_wait))
            {
                Place::WaitingForBatch
            } else if any("/logging/") || any("torch/serialization.py") {
                Place::LoggingOrCheckpoint
            } else if any("torch/optim/") {
                Place::Optimizer
            } else if syncing
                || frames
                    .iter()
                    .any(|f| f.path.contains("torch/cuda/") && f.function.ends_with("synchronize"))
            {
                // torch.cuda.synchronize() (a stream's, an event's) is Python that calls
                // the driver: the user's line is not the innermost frame.
                Place::GpuSync
            } else if any("torch/autograd/")
                || frames
                    .iter()
                    .any(|f| f.path.ends_with("torch/_tensor.py") && f.function == "backward")
            {
                Place::Backward
            } else if any("torch/nn/modules/module.py")
                || frames
                    .first()
                    .is_some_and(|f| f.path.contains("/torch/nn/"))
            {
                // A module's call: the user's own forward code counts as the forward too.
                Place::Forward
            } else if user.is_some() {
                if s.active {
                    Place::UserCode
                } else {
                    Place::Blocked
                }
            } else {
                Place::Other
            }
        }
        Role::Worker => {
            if any("torch/utils/data/_utils/collate.py") {
                Place::Collating
            } else if !s.active && frames.iter().any(is_queue_wait) {
                Place::WaitingOnQueue
            } else if s.active {
                Place::Computing
            } else {
                Place::Reading
            }
        }
    };
    (place, user, own)
}

/// A sample as kept: its place and its user function.
#[derive(Clone, Debug, PartialEq)]
struct Kept {
    time: f64,
    pid: u32,
    role: Role,
    place: Place,
    gil: bool,
    /// `file:line function` of the innermost user frame.
    function: Option<(String, String, u32)>,
    /// Whether that function's own Python was running.
    own: bool,
    /// Whether the thread was running at all.
    active: bool,
}

/// The recent samples, and what could not be sampled.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stacks {
    kept: VecDeque<Kept>,
    /// Why stacks cannot be read, per process, as the sampler said it (permissions, not
    /// Python); the latest per pid, until the process is sampled.
    pub refusals: BTreeMap<u32, String>,
    /// What the samples of a process need said beside them, per pid.
    pub notes: BTreeMap<u32, String>,
    /// The newest sample of a main thread, whole: where a stalled run is stuck.
    pub last_main: Option<StackSample>,
}

/// The shares of one role's samples over a window.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct RoleShares {
    pub samples: u64,
    /// The seconds the samples cover: the window, or less while sampling has run less.
    pub seconds: f64,
    /// Share of samples per place, largest first.
    pub places: Vec<(Place, f64)>,
    /// Share of samples per user function (`file`, `function`, a line it was seen at),
    /// largest first, the first few.
    pub functions: Vec<FunctionShare>,
    /// Share of samples in which the thread held the GIL.
    pub gil: f64,
}

/// What the stacks said over a window, for the probe's output and the report.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct StackSummary {
    /// The seconds the samples cover: the window asked for, or less while sampling has run
    /// less.
    pub seconds: f64,
    /// The ranks' main threads.
    pub main: RoleShares,
    /// The DataLoader workers, together.
    pub workers: RoleShares,
    /// Each rank's main thread on its own, when several were sampled (a launcher's ranks).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub ranks: Vec<RankShares>,
    /// Why some processes cannot be sampled, one sentence each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

/// One rank's main thread (by its process id).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RankShares {
    pub pid: u32,
    #[serde(flatten)]
    pub shares: RoleShares,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FunctionShare {
    pub function: String,
    pub file: String,
    pub line: u32,
    pub share: f64,
    pub samples: u64,
    /// Of them, the samples in which the thread ran the function's own Python (not a call it
    /// made).
    pub running: u64,
    /// Of them, the samples in which the thread waited (in the kernel: a sync, a read).
    pub waiting: u64,
}

/// One function's samples in a window: all of them, those running its own Python, those
/// waiting in a call, and how many at each of its lines.
#[derive(Default)]
struct Tally {
    samples: u64,
    running: u64,
    waiting: u64,
    lines: BTreeMap<u32, u64>,
}

impl Stacks {
    /// Folds in one reading: a sample, or why a process cannot be sampled.
    pub fn apply(&mut self, reading: StackReading) {
        match reading {
            StackReading::Sample(s) => self.add(s),
            StackReading::Refused { pid, why, .. } => {
                self.refusals.insert(pid, why);
            }
            StackReading::Note { pid, text, .. } => {
                self.notes.insert(pid, text);
            }
        }
    }

    pub fn add(&mut self, s: StackSample) {
        let (place, user, own) = classify(&s);
        self.kept.push_back(Kept {
            time: s.time,
            pid: s.pid,
            role: s.role,
            place,
            gil: s.gil,
            function: user.map(|f| (f.file.clone(), f.function.clone(), f.line)),
            own,
            active: s.active,
        });
        self.refusals.remove(&s.pid);
        while self.kept.len() > KEPT_SAMPLES
            || self
                .kept
                .front()
                .is_some_and(|k| k.time < s.time - KEPT_SECONDS)
        {
            self.kept.pop_front();
        }
        if s.role == Role::Main {
            self.last_main = Some(s);
        }
    }

    /// Whether any sample was taken, or any process refused.
    pub fn any(&self) -> bool {
        !self.kept.is_empty() || !self.refusals.is_empty()
    }

    /// Seconds between the oldest and the newest sample kept.
    pub fn span(&self) -> f64 {
        match (self.kept.front(), self.kept.back()) {
            (Some(a), Some(b)) => b.time - a.time,
            _ => 0.0,
        }
    }

    /// Both roles' shares over the `seconds` before the newest sample, with the refusals and
    /// notes.
    pub fn summary(&self, seconds: f64) -> StackSummary {
        StackSummary {
            seconds: seconds.min(self.span()),
            main: self.shares(Role::Main, seconds),
            workers: self.shares(Role::Worker, seconds),
            ranks: self.rank_shares(seconds),
            refused: self.refusals.values().cloned().collect(),
            notes: self.notes.values().cloned().collect(),
        }
    }

    /// The time of the newest sample.
    pub fn latest(&self) -> Option<f64> {
        self.kept.back().map(|k| k.time)
    }

    /// The shares of `role`'s samples over the `seconds` before the newest sample.
    pub fn shares(&self, role: Role, seconds: f64) -> RoleShares {
        self.shares_of(seconds, |k| k.role == role)
    }

    /// Each rank's main thread on its own, when more than one was sampled in the window.
    pub fn rank_shares(&self, seconds: f64) -> Vec<RankShares> {
        let Some(now) = self.latest() else {
            return Vec::new();
        };
        let mut pids: Vec<u32> = self
            .kept
            .iter()
            .rev()
            .take_while(|k| k.time >= now - seconds)
            .filter(|k| k.role == Role::Main)
            .map(|k| k.pid)
            .collect();
        pids.sort_unstable();
        pids.dedup();
        if pids.len() < 2 {
            return Vec::new();
        }
        pids.into_iter()
            .map(|pid| RankShares {
                pid,
                shares: self.shares_of(seconds, |k| k.role == Role::Main && k.pid == pid),
            })
            .collect()
    }

    /// The shares of the samples `keep` takes over the `seconds` before the newest sample.
    fn shares_of(&self, seconds: f64, keep: impl Fn(&Kept) -> bool) -> RoleShares {
        let Some(now) = self.latest() else {
            return RoleShares::default();
        };
        let recent: Vec<&Kept> = self
            .kept
            .iter()
            .rev()
            .take_while(|k| k.time >= now - seconds)
            .filter(|k| keep(k))
            .collect();
        let n = recent.len() as u64;
        if n == 0 {
            return RoleShares::default();
        }
        let share = |c: u64| c as f64 / n as f64;
        let mut places: BTreeMap<Place, u64> = BTreeMap::new();
        let mut functions: BTreeMap<(&str, &str), Tally> = BTreeMap::new();
        let mut gil = 0;
        for k in &recent {
            *places.entry(k.place).or_default() += 1;
            gil += u64::from(k.gil);
            // A function holds the thread while the thread runs in it or waits in a call it
            // made; waiting for a batch, on a queue or on the logs is not the function's time.
            if let Some((file, function, line)) = &k.function
                && !matches!(
                    k.place,
                    Place::WaitingForBatch | Place::WaitingOnQueue | Place::LoggingOrCheckpoint
                )
            {
                let e = functions.entry((file, function)).or_default();
                e.samples += 1;
                e.running += u64::from(k.own);
                e.waiting += u64::from(!k.active);
                *e.lines.entry(*line).or_default() += 1;
            }
        }
        let mut places: Vec<(Place, f64)> =
            places.into_iter().map(|(p, c)| (p, share(c))).collect();
        places.sort_by(|a, b| b.1.total_cmp(&a.1));
        let mut functions: Vec<FunctionShare> = functions
            .into_iter()
            .map(|((file, function), t)| FunctionShare {
                function: function.to_string(),
                file: file.to_string(),
                // The line the function was seen at most (the lower line on a tie).
                line: t
                    .lines
                    .iter()
                    .max_by_key(|&(l, n)| (*n, std::cmp::Reverse(*l)))
                    .map_or(0, |(l, _)| *l),
                share: share(t.samples),
                samples: t.samples,
                running: t.running,
                waiting: t.waiting,
            })
            .collect();
        functions.sort_by_key(|f| std::cmp::Reverse(f.samples));
        functions.truncate(5);
        let oldest = recent.last().map_or(now, |k| k.time);
        RoleShares {
            samples: n,
            seconds: now - oldest,
            places,
            functions,
            gil: share(gil),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(function: &str, path: &str) -> PyFrame {
        PyFrame {
            function: function.into(),
            file: path.rsplit('/').next().unwrap_or(path).into(),
            path: path.into(),
            line: 7,
        }
    }

    fn sample(role: Role, active: bool, frames: Vec<PyFrame>) -> StackSample {
        StackSample {
            time: 0.0,
            pid: 1,
            role,
            active,
            gil: active,
            frames,
            code: None,
            cuda: None,
        }
    }

    const LIB: &str = "/usr/lib/python3.11";
    const TORCH: &str = "/venv/lib/python3.11/site-packages/torch";

    #[test]
    fn the_main_thread_is_placed_by_its_frames_and_its_state() {
        let train = frame("train", "/home/u/train.py");
        let hot = frame("_generate_targets", "/home/u/train.py");
        let place = |active, frames: Vec<PyFrame>| classify(&sample(Role::Main, active, frames)).0;
        assert_eq!(
            place(true, vec![hot.clone(), train.clone()]),
            Place::UserCode
        );
        // Idle in the user's own frame: a C call that waits (.item(), a sleep, a read).
        assert_eq!(
            place(false, vec![hot.clone(), train.clone()]),
            Place::Blocked
        );
        let dataloader = vec![
            frame("wait", &format!("{LIB}/threading.py")),
            frame("get", &format!("{LIB}/queue.py")),
            frame(
                "_try_get_data",
                &format!("{TORCH}/utils/data/dataloader.py"),
            ),
            train.clone(),
        ];
        assert_eq!(place(false, dataloader), Place::WaitingForBatch);
        let mp_queue = vec![
            frame(
                "recv_bytes",
                &format!("{LIB}/multiprocessing/connection.py"),
            ),
            frame("get", &format!("{LIB}/multiprocessing/queues.py")),
            train.clone(),
        ];
        assert_eq!(place(false, mp_queue), Place::WaitingForBatch);
        let forward = vec![
            frame("_call_impl", &format!("{TORCH}/nn/modules/module.py")),
            train.clone(),
        ];
        assert_eq!(place(true, forward), Place::Forward);
        let backward = vec![
            frame("backward", &format!("{TORCH}/autograd/__init__.py")),
            frame("backward", &format!("{TORCH}/_tensor.py")),
            train.clone(),
        ];
        assert_eq!(place(true, backward), Place::Backward);
        let step = vec![frame("step", &format!("{TORCH}/optim/adamw.py")), train];
        assert_eq!(place(true, step), Place::Optimizer);
    }

    #[test]
    fn a_line_that_syncs_waits_on_a_gpu_only_in_a_process_that_has_one() {
        let train = frame("build_targets", "/home/u/train.py");
        let at = |active, cuda| {
            let s = StackSample {
                code: Some("targets = torch.tensor(heatmaps.tolist())".into()),
                cuda,
                ..sample(Role::Main, active, vec![train.clone()])
            };
            classify(&s).0
        };
        assert_eq!(at(false, Some(true)), Place::GpuSync);
        assert_eq!(
            at(true, Some(true)),
            Place::GpuSync,
            "CUDA spins on a short wait"
        );
        // Not known (a recording made before it was read): as the line says.
        assert_eq!(at(false, None), Place::GpuSync);
        // No GPU driver in the process: the CPU converting, or a wait in a call.
        assert_eq!(at(true, Some(false)), Place::UserCode);
        assert_eq!(at(false, Some(false)), Place::Blocked);
    }

    #[test]
    fn a_models_own_forward_is_the_forward_and_still_names_its_function() {
        let fwd = frame("SmallNet.forward", "/home/u/train.py");
        let frames = vec![
            fwd.clone(),
            frame("_call_impl", &format!("{TORCH}/nn/modules/module.py")),
            frame("main", "/home/u/train.py"),
        ];
        let s = sample(Role::Main, true, frames);
        let (place, user, own) = classify(&s);
        assert_eq!((place, user, own), (Place::Forward, Some(&fwd), true));
    }

    #[test]
    fn a_workers_frames_from_its_parents_fork_are_not_its_own() {
        let frames = vec![
            frame("fetch", &format!("{TORCH}/utils/data/_utils/fetch.py")),
            frame(
                "_worker_loop",
                &format!("{TORCH}/utils/data/_utils/worker.py"),
            ),
            frame("run", &format!("{LIB}/multiprocessing/process.py")),
            frame("_bootstrap", &format!("{LIB}/multiprocessing/process.py")),
            frame("main", "/home/u/train.py"),
        ];
        let s = sample(Role::Worker, true, frames);
        let (place, user, _) = classify(&s);
        assert_eq!((place, user), (Place::Computing, None));
    }

    #[test]
    fn a_stack_is_kept_up_to_the_caller_of_the_users_function() {
        let paths = [
            format!("{TORCH}/nn/modules/conv.py"),
            format!("{TORCH}/nn/modules/module.py"),
            "/home/u/model.py".to_string(),
            format!("{TORCH}/nn/modules/module.py"),
            "/home/u/train.py".to_string(),
            "/home/u/train.py".to_string(),
            format!("{LIB}/runpy.py"),
        ];
        assert_eq!(frames_needed(paths.iter()), 5);
        assert_eq!(frames_needed(paths[..2].iter()), 2);
    }

    #[test]
    fn workers_read_compute_collate_or_wait_on_their_queues() {
        let get = frame("__getitem__", "/home/u/data.py");
        let place =
            |active, frames: Vec<PyFrame>| classify(&sample(Role::Worker, active, frames)).0;
        assert_eq!(place(false, vec![get.clone()]), Place::Reading);
        assert_eq!(place(true, vec![get.clone()]), Place::Computing);
        let collate = vec![
            frame("collate", &format!("{TORCH}/utils/data/_utils/collate.py")),
            get,
        ];
        assert_eq!(place(true, collate), Place::Collating);
        let waiting = vec![
            frame("get", &format!("{LIB}/multiprocessing/queues.py")),
            frame(
                "_worker_loop",
                &format!("{TORCH}/utils/data/_utils/worker.py"),
            ),
        ];
        assert_eq!(place(false, waiting), Place::WaitingOnQueue);
    }

    #[test]
    fn a_line_that_syncs_waits_on_the_gpu_even_while_the_thread_spins() {
        let mut s = sample(
            Role::Main,
            true,
            vec![frame("run_compute", "/home/u/train.py")],
        );
        s.code = Some("torch.cuda.synchronize()".into());
        assert_eq!(classify(&s).0, Place::GpuSync);
        assert!(!classify(&s).2, "not the function's own Python");
        s.code = Some("acc += math.sin(r)".into());
        assert_eq!(classify(&s).0, Place::UserCode);
        // torch.cuda.synchronize() is a Python function of torch's: the innermost frame.
        let cuda = frame("synchronize", &format!("{TORCH}/cuda/__init__.py"));
        s.frames.insert(0, cuda);
        s.code = None;
        assert_eq!(classify(&s).0, Place::GpuSync);
    }

    #[test]
    fn a_functions_line_is_the_one_it_was_seen_at_most_not_its_oldest() {
        // A training function: one sample while it built the optimizer (line 112), then its
        // loop waiting at synchronize() (124) and at .item() (130).
        let mut st = Stacks::default();
        for (i, line) in [112, 124, 124, 130, 124, 124, 130, 124]
            .into_iter()
            .enumerate()
        {
            let mut f = frame("run_compute", "/home/u/train.py");
            f.line = line;
            let mut s = sample(Role::Main, false, vec![f]);
            s.time = i as f64;
            st.add(s);
        }
        let sh = st.shares(Role::Main, 60.0);
        assert_eq!(
            (sh.functions[0].function.as_str(), sh.functions[0].line),
            ("run_compute", 124)
        );
    }

    #[test]
    fn shares_count_a_function_while_it_runs_or_waits_in_its_calls() {
        let mut st = Stacks::default();
        let hot = frame("_generate_targets", "/home/u/train.py");
        let queue = frame("get", &format!("{LIB}/queue.py"));
        let train = frame("train", "/home/u/train.py");
        for i in 0..10 {
            let (active, frames) = match i % 5 {
                0..=2 => (true, vec![hot.clone(), train.clone()]),
                3 => (false, vec![queue.clone(), train.clone()]),
                _ => (false, vec![hot.clone(), train.clone()]),
            };
            let mut s = sample(Role::Main, active, frames);
            s.time = f64::from(i);
            st.add(s);
        }
        let sh = st.shares(Role::Main, 60.0);
        assert_eq!(sh.samples, 10);
        assert_eq!(sh.functions[0].function, "_generate_targets");
        assert!((sh.functions[0].share - 0.8).abs() < 1e-9);
        assert_eq!(sh.places[0], (Place::UserCode, 0.6));
        assert!(st.rank_shares(60.0).is_empty(), "one rank: no split");
        let mut other = sample(Role::Main, true, vec![train.clone()]);
        other.pid = 2;
        other.time = 9.5;
        st.add(other);
        let ranks = st.rank_shares(60.0);
        assert_eq!(
            ranks
                .iter()
                .map(|r| (r.pid, r.shares.samples))
                .collect::<Vec<_>>(),
            [(1, 10), (2, 1)]
        );
        // A shorter window sees only the newest samples.
        assert_eq!(st.shares(Role::Main, 4.5).samples, 6);
        assert_eq!(st.shares(Role::Worker, 60.0), RoleShares::default());
    }
}
