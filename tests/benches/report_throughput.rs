//! `cargo bench --bench report_throughput`: the bulk path over a large mixed log built from
//! every fixture in fixtures/logs (our users' styles, mmengine, HF dicts and tqdm bars, timing
//! blocks, noise). Prints, from one run: `steptop report --format json`'s MB/s (median of 3)
//! beside `rg -c` with one regex and the Python script a user writes instead
//! (`user_script.py`, two regexes) over the same file; replay at full speed, compare and the live
//! view's history against report, each run paired with one of report's; the CPU-seconds per GB of reading, parsing, the
//! model and the diagnosis (medians of three), and the peak RSS they reach in this process;
//! then, on one long run (its config line, then every line a step, a quarter of the size),
//! report against the script, the diagnosis's cost per step, where its windows are full, and
//! the CPU-seconds of its stages; then the same on a log whose lines change shape from one to
//! the next (`mklog.py`, the mixed log's size), and each log's lines and step records per MB;
//! and for every log the parser's floor (what taking each line's shape costs before a figure
//! is read), and the wall time of parsing alone, with the model, and of the whole report in
//! this process, which shows whether the parser's thread or the monitor's bounds it.
//! Size:
//! STEPTOP_BENCH_MB (default 1024). STEPTOP_BENCH_KEEP=PATH writes the log there and leaves
//! it, to profile on it.

#[path = "../support/mod.rs"]
mod support;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use steptop::Config;
use steptop::Feed;
use steptop::Model;
use steptop::Monitor;
use steptop::Msg;
use steptop::Stamp;
use steptop::StepBoxes;

/// The binary's allocator (Cargo.toml): the stages and the live history timed in this process
/// cost what they cost in steptop's.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Runs of each other mode, each paired with a run of report.
const PAIRS: usize = 5;

/// Bytes of the file whose records are held in memory to time the diagnosis on.
const DIAGNOSIS_BYTES: u64 = 64 << 20;

fn main() {
    let mb: u64 = std::env::var("STEPTOP_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1024);
    let dir = tempfile::tempdir().expect("temp dir");
    let path = std::env::var_os("STEPTOP_BENCH_KEEP")
        .map_or_else(|| dir.path().join("mixed.log"), PathBuf::from);
    let bytes = build_log(&path, mb * 1024 * 1024);
    let mb = bytes as f64 / 1e6;
    println!(
        "report_throughput: {:.0} MiB mixed log from the format fixtures, {} cores",
        bytes as f64 / 1048576.0,
        std::thread::available_parallelism().map_or(1, |n| n.get())
    );
    // As `report --format json` runs: no chart series and no log pane (the live view's
    // history keeps them).
    let mut cfg = Config::default_checked();
    cfg.model = cfg.model.summary(false);
    let live_cfg = Config::default_checked();
    let bin = env!("CARGO_BIN_EXE_steptop");
    let path_s = path.to_str().expect("utf-8 temp path");

    // Where the CPU goes, per GB: each stage alone, then one more each time.
    let gb = bytes as f64 / 1e9;
    let stages = time_stages(&path, &cfg);
    let [reading, parsing, model, full] = stages.cpu;
    // Taken now, before the other modes run here: the peak of report's own path.
    println!(
        "  peak RSS of this process after the stages (report's path in-process): {:.1} MiB",
        peak_rss_kib() as f64 / 1024.0
    );
    let (diagnosis_s, steps, held_bytes) = diagnosis_cost(&path, &cfg);
    let diagnosis = diagnosis_s / (held_bytes as f64 / 1e9);
    println!(
        "  CPU-seconds per GB (medians of 3): reading {:.2}, parsing {:.2}, model {:.2}, \
         diagnosis {:.2}, the rest (the monitor's line bookkeeping, the threads' hand-offs) {:.2} (all: {:.2})",
        reading / gb,
        (parsing - reading) / gb,
        (model - parsing) / gb,
        diagnosis,
        (full - model) / gb - diagnosis,
        full / gb
    );
    stages.print_bounds("the mixed log's", gb);
    println!(
        "  diagnosis: {:.2} us per evaluated step ({steps} steps, the file's first {:.0} MB)",
        diagnosis_s / steps.max(1) as f64 * 1e6,
        held_bytes as f64 / 1e6
    );

    // The reference: ripgrep counting the lines one regex matches, same file, same run.
    let rg = median(3, || {
        let out = Command::new("rg")
            .args(["-c", r"step\s*\d+", path_s])
            .stdout(Stdio::null())
            .status();
        out.is_ok_and(|s| s.success() || s.code() == Some(1))
    });
    let mut report_peak_kib = 0;
    let report = median(3, || {
        let mut child = Command::new(bin)
            .args(["report", "--format", "json", path_s])
            .stdout(Stdio::null())
            .spawn()
            .expect("steptop report");
        let (status, peak) = wait_watching_peak(&mut child);
        report_peak_kib = report_peak_kib.max(peak);
        status.is_some_and(|s| s.success())
    });
    println!(
        "  steptop report's own peak RSS (the most of 3 runs, its binary's allocator): {:.1} MiB",
        report_peak_kib as f64 / 1024.0
    );
    let report_rate = report.map(|s| mb / s);
    match (rg, report_rate) {
        (Some(rg), Some(rate)) => println!(
            "  steptop report --format json: {rate:.0} MB/s (median of 3); rg -c: {:.0} MB/s; ratio {:.3}",
            mb / rg,
            rate / (mb / rg)
        ),
        (None, Some(rate)) => {
            println!(
                "  steptop report --format json: {rate:.0} MB/s (median of 3); rg not installed"
            )
        }
        _ => println!("  steptop report failed"),
    }

    // The script a user writes instead (tests/benches/user_script.py: two regexes, the
    // means), same file, same run: what steptop must beat.
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/benches/user_script.py");
    let user = median(3, || {
        succeeds(Command::new("python3").arg(&script).arg(path_s))
    });
    match (user, report_rate) {
        (Some(u), Some(rate)) => println!(
            "  the user's Python script: {:.0} MB/s (median of 3); report is {:.2}x it",
            mb / u,
            rate / (mb / u)
        ),
        _ => println!("  the user's Python script: did not run (python3 missing?)"),
    }

    // Every other mode through the same bulk reader, against report: each run right after a
    // run of report, and the ratio the median of the pairs' (load from elsewhere moves both
    // alike; single medians taken minutes apart put one mode anywhere from 0.64x to 1.01x).
    let timed = |args: &[&str]| {
        let t = Instant::now();
        succeeds(Command::new(bin).args(args)).then(|| t.elapsed().as_secs_f64())
    };
    let versus = |name: &str, volume: f64, mode: &mut dyn FnMut() -> Option<f64>| {
        let pairs = (0..PAIRS)
            .map(|_| Some((timed(&["report", "--format", "json", path_s])?, mode()?)))
            .collect::<Option<Vec<(f64, f64)>>>();
        match pairs {
            Some(p) => {
                let secs = middle(p.iter().map(|&(_, m)| m).collect());
                let ratio = middle(p.iter().map(|&(r, m)| volume * r / (mb * m)).collect());
                println!(
                    "  {name}: {:.0} MB/s, {ratio:.2}x report (medians of {PAIRS} pairs)",
                    volume / secs
                );
            }
            None => println!("  {name}: failed"),
        }
    };
    versus("replay --speed max --headless", mb, &mut || {
        timed(&["replay", "--speed", "max", "--headless", path_s])
    });
    versus(
        "compare (the file against itself: twice its bytes)",
        2.0 * mb,
        &mut || timed(&["compare", path_s, path_s]),
    );
    versus(
        "live view's history (follow until caught up)",
        mb,
        &mut || history_read(&path, &live_cfg),
    );

    // One long run, as most real logs are: its config line, then every line a step, in the
    // seeds' format (which the script reads too), a quarter of the mixed log's size. Here the
    // rules and the model meet full windows at every step, where the mixed log's 1.8 KB runs
    // rarely fill one.
    let one_run = dir.path().join("one-run.log");
    let one_bytes = build_one_run(&one_run, (bytes / 4).max(1 << 20));
    let one_mb = one_bytes as f64 / 1e6;
    let (one_diag_s, one_steps, _) = diagnosis_cost(&one_run, &cfg);
    println!(
        "  diagnosis on the long run: {:.2} us per evaluated step ({one_steps} steps)",
        one_diag_s / one_steps.max(1) as f64 * 1e6
    );
    against_script(bin, &script, "one long run, one step a line", &one_run);
    let one_gb = one_bytes as f64 / 1e9;
    let one_stages = time_stages(&one_run, &cfg);
    one_stages.print_cpu("the long run's", one_gb);
    one_stages.print_bounds("the long run's", one_gb);

    // A log whose lines change shape from one to the next, as a job's stdout does when
    // several libraries print into it (`tests/benches/mklog.py`: custom step lines, mmengine,
    // HF dicts, tqdm redraws, timing blocks, cache blocks, noise), the mixed log's size.
    let mixed_by_line = dir.path().join("interleaved.log");
    if !support::interleaved_log(&mixed_by_line, bytes) {
        println!("  the interleaved log: mklog.py did not run (python3 missing?)");
        return;
    }
    let il_bytes = std::fs::metadata(&mixed_by_line).map_or(0, |m| m.len());
    let il_mb = il_bytes as f64 / 1e6;
    against_script(
        bin,
        &script,
        "the interleaved log, mklog.py",
        &mixed_by_line,
    );
    let il_gb = il_bytes as f64 / 1e9;
    let il_stages = time_stages(&mixed_by_line, &cfg);
    il_stages.print_cpu("the interleaved log's", il_gb);
    il_stages.print_bounds("the interleaved log's", il_gb);
    // What each log asks of the monitor: its steps per MB. The monitor's work is per step
    // (the model's windows, the rules), the parser's per line.
    for (name, path, mb) in [
        ("mixed log", &path, mb),
        ("long run", &one_run, one_mb),
        ("interleaved log", &mixed_by_line, il_mb),
    ] {
        let (lines, steps) = lines_and_steps(path, &cfg);
        println!(
            "  the {name}: {:.0} lines and {:.0} step records per MB",
            lines as f64 / mb,
            steps as f64 / mb
        );
    }
}

/// Report against the user's script on `path` (medians of 3 each), said of `what`.
fn against_script(bin: &str, script: &Path, what: &str, path: &Path) {
    let bytes = std::fs::metadata(path).map_or(0, |m| m.len());
    let mb = bytes as f64 / 1e6;
    let p = path.to_str().expect("utf-8 temp path");
    let report = median(3, || {
        succeeds(Command::new(bin).args(["report", "--format", "json", p]))
    });
    let user = median(3, || succeeds(Command::new("python3").arg(script).arg(p)));
    match (report, user) {
        (Some(r), Some(u)) => println!(
            "  {what} ({:.0} MiB): report {:.0} MB/s, the user's Python script {:.0} MB/s \
             (medians of 3); report is {:.2}x it",
            bytes as f64 / 1048576.0,
            mb / r,
            mb / u,
            u / r
        ),
        _ => println!("  {what}: report or the script failed"),
    }
}

/// The lines of `path` and the step records they give, as report reads them.
fn lines_and_steps(path: &Path, cfg: &Config) -> (u64, u64) {
    let (mut lines, mut steps) = (0u64, 0u64);
    let mut feed = Feed::new(0, "bench.log", cfg.patterns.clone());
    steptop::read_file(path, &mut feed, &mut |msg| {
        if let steptop::Msg::Lines(block) = msg {
            lines += block.heads.len() as u64;
            steps += block
                .records
                .iter()
                .filter(|r| matches!(r, steptop::Record::Step(_)))
                .count() as u64;
        }
    })
    .expect("read");
    (lines, steps)
}

/// The parser's floor on `path`, in seconds: what any reader that knows lines by their shape
/// takes of each line before it reads a figure, its UTF-8 check and its shape's key. Timed as
/// reading the lines with and without it, alternating (medians of 5, wall time: one thread,
/// and CPU time comes in ticks too coarse for the long run).
fn parsing_floor(path: &Path) -> f64 {
    let (mut plain, mut keyed) = (Vec::new(), Vec::new());
    let mut keys = 0u64;
    for _ in 0..5 {
        plain.push(
            cpu_and_wall(&mut || {
                steptop::read_lines(path, &mut |_, line| {
                    keys = keys.wrapping_add(line.len() as u64);
                })
                .expect("read");
            })
            .1,
        );
        keyed.push(
            cpu_and_wall(&mut || {
                steptop::read_lines(path, &mut |_, line| {
                    let utf8 = u64::from(std::str::from_utf8(line).is_ok());
                    keys = keys.wrapping_add(steptop::testing::shape_key(line) ^ utf8);
                })
                .expect("read");
            })
            .1,
        );
    }
    std::hint::black_box(keys);
    (middle(keyed) - middle(plain)).max(0.0)
}

/// The diagnosis alone: the records of the file's first `DIAGNOSIS_BYTES` held in memory,
/// applied to a model alone and then through the monitor (model and diagnosis), the same
/// records and the same new runs. Returns the CPU-seconds between the two (medians of three
/// alternating passes: one pass is a fraction of a second, and CPU time is read in ticks of
/// 10 ms), the steps evaluated, and the bytes held.
fn diagnosis_cost(path: &Path, cfg: &Config) -> (f64, u64, u64) {
    let mut held: Vec<(Stamp, steptop::Record)> = Vec::new();
    let mut held_bytes = 0u64;
    let mut feed = Feed::new(0, "bench.log", cfg.patterns.clone());
    steptop::read_file(path, &mut feed, &mut |msg| {
        let steptop::Msg::Lines(lines) = msg else {
            return;
        };
        let lines = *lines;
        if held_bytes >= DIAGNOSIS_BYTES {
            return;
        }
        held_bytes += lines.bytes;
        let mut records = lines.records.into_iter();
        for head in &lines.heads {
            held.extend(
                records
                    .by_ref()
                    .take(head.records as usize)
                    .map(|rec| (head.stamp, rec)),
            );
        }
    })
    .expect("read");
    let mut alone = Vec::new();
    let mut monitored = Vec::new();
    let mut steps = 0;
    for _ in 0..3 {
        alone.push(cpu(&mut || {
            let mut model = Model::new(cfg.model);
            for (stamp, rec) in held.iter().cloned() {
                if let (Some(rec), new_run) = model.count(&stamp, rec) {
                    if new_run {
                        model.new_run(0);
                    }
                    model.apply(&stamp, rec);
                }
            }
        }));
        monitored.push(cpu(&mut || {
            let mut mon = Monitor::new(cfg.model, cfg.diagnose.clone());
            for (stamp, rec) in held.iter().cloned() {
                mon.record(&stamp, rec);
            }
            steps = mon.diagnosis.steps_evaluated();
        }));
    }
    let (alone, monitored) = (middle(alone), middle(monitored));
    ((monitored - alone).max(0.0), steps, held_bytes)
}

/// A run of steps counting up, one line each in the seeds' in-house format, with loss, rate
/// and data time drawn afresh each line, until the file reaches `target` bytes.
fn build_one_run(path: &Path, target: u64) -> u64 {
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("create"));
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = |m: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % m
    };
    // The config line a training script prints first. Its batch size turns each line's
    // samples/s into a step time: without it the timeline and every rule that reads step
    // times sat idle, and the monitor's thread did a third of a real run's work.
    let config = "config: world_size=1 batch_size=32 num_workers=8 pin_memory=true\n";
    out.write_all(config.as_bytes()).expect("write");
    let (mut written, mut step) = (config.len() as u64, 0u64);
    let total = target / 60;
    while written < target {
        step += 1;
        let line = format!(
            "step {step}/{total} | loss={}.{:04} | lr=2.0e-05 | {}.{} samples/s | data_time={}.{}ms\n",
            2 + next(2),
            next(10_000),
            400 + next(100),
            next(10),
            10 + next(20),
            next(10)
        );
        out.write_all(line.as_bytes()).expect("write");
        written += line.len() as u64;
    }
    out.flush().expect("flush");
    written
}

/// Runs `cmd` with its output thrown away: whether it succeeded.
fn succeeds(cmd: &mut Command) -> bool {
    cmd.stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// CPU and wall seconds of each stage of reading a file as the report does (reading its
/// lines; parsing; with the model; the whole report), medians of three rounds; and the
/// parser's floor (`parsing_floor`).
struct Stages {
    cpu: [f64; 4],
    wall: [f64; 4],
    floor: f64,
}

impl Stages {
    /// What bounds the report, per GB: the parser's floor beside parsing's CPU-seconds; then
    /// the wall times, where parsing alone (the reader and the parser's thread) as long as the
    /// whole report says that the parser's thread bounds the report, and much shorter, that
    /// the monitor's thread does.
    fn print_cpu(&self, log: &str, gb: f64) {
        let [reading, parsing, model, full] = self.cpu;
        println!(
            "  {log} CPU-seconds per GB (medians of 3): reading {:.2}, parsing {:.2}, model \
             {:.2}, the rules and the rest {:.2} (all: {:.2})",
            reading / gb,
            (parsing - reading) / gb,
            (model - parsing) / gb,
            (full - model) / gb,
            full / gb
        );
    }

    fn print_bounds(&self, log: &str, gb: f64) {
        let [reading, parsing, ..] = self.cpu;
        println!(
            "  {log} parsing floor (each line's UTF-8 check and shape key, no figure read): \
             {:.2} s per GB, {:.0}% of parsing",
            self.floor / gb,
            self.floor / (parsing - reading) * 100.0
        );
        let [_, parsing, model, report] = self.wall;
        println!(
            "  {log} wall seconds per GB (medians of 3): parsing {:.2}, with the model {:.2}, \
             the report {:.2} (parsing alone {:.0}% of the report)",
            parsing / gb,
            model / gb,
            report / gb,
            100.0 * parsing / report
        );
    }
}

/// Times the stages of `path` (medians of three rounds), run as `report --format json` runs,
/// and its parser's floor.
fn time_stages(path: &Path, cfg: &Config) -> Stages {
    // Three rounds of all four: a stage's median of three (one pass moves by a second a GB
    // when the machine is shared).
    let mut spent: [Vec<(f64, f64)>; 4] = Default::default();
    for _ in 0..3 {
        spent[0].push(cpu_and_wall(&mut || {
            steptop::read_lines(path, &mut |_, _| {}).expect("read");
        }));
        spent[1].push(cpu_and_wall(&mut || {
            let mut feed = Feed::new(0, "bench.log", cfg.patterns.clone());
            // The step records' boxes go back to the reader, as the monitor sends them.
            steptop::read_file(path, &mut feed, &mut |msg| {
                let steptop::Msg::Lines(lines) = msg else {
                    return;
                };
                let lines = *lines;
                let mut spent = StepBoxes::default();
                for rec in lines.records {
                    if let steptop::Record::Step(b) = rec {
                        spent.give(b);
                    }
                }
                lines.home.send(spent);
            })
            .expect("read");
        }));
        spent[2].push(cpu_and_wall(&mut || {
            let mut feed = Feed::new(0, "bench.log", cfg.patterns.clone());
            let mut model = Model::new(cfg.model);
            steptop::read_file(path, &mut feed, &mut |msg| {
                let steptop::Msg::Lines(lines) = msg else {
                    return;
                };
                let lines = *lines;
                let mut spent = StepBoxes::default();
                let mut records = lines.records.into_iter();
                for head in &lines.heads {
                    for rec in records.by_ref().take(head.records as usize) {
                        // As the monitor does: a step count that goes back starts a new run.
                        if let (Some(rec), new_run) = model.count(&head.stamp, rec) {
                            if new_run {
                                model.new_run(0);
                            }
                            if let Some(b) = model.apply_keeping(&head.stamp, rec) {
                                spent.give(b);
                            }
                        }
                    }
                }
                lines.home.send(spent);
            })
            .expect("read");
            model.finish();
        }));
        spent[3].push(cpu_and_wall(&mut || {
            steptop::analyze(&[path.to_path_buf()], cfg).expect("analyze");
        }));
    }
    let medians = |part: fn(&(f64, f64)) -> f64| {
        std::array::from_fn(|i| middle(spent[i].iter().map(part).collect()))
    };
    Stages {
        cpu: medians(|s| s.0),
        wall: medians(|s| s.1),
        floor: parsing_floor(path),
    }
}

/// The middle value.
fn middle(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v.get(v.len() / 2).copied().unwrap_or(0.0)
}

/// The median wall time of `runs` runs of `f`, None if one failed.
fn median(runs: usize, mut f: impl FnMut() -> bool) -> Option<f64> {
    median_of(runs, || {
        let t = Instant::now();
        f().then(|| t.elapsed().as_secs_f64())
    })
}

/// The median of `runs` timings `f` takes itself, None if one failed.
fn median_of(runs: usize, mut f: impl FnMut() -> Option<f64>) -> Option<f64> {
    let secs = (0..runs).map(|_| f()).collect::<Option<Vec<f64>>>()?;
    Some(middle(secs))
}

/// What the live view does with a file that is already written: its follow thread reads the
/// history into the inbox and the monitor takes it, until the file is caught up.
fn history_read(path: &Path, cfg: &Config) -> Option<f64> {
    let (tx, inbox) = steptop::inbox();
    let stop = Arc::new(AtomicBool::new(false));
    let input = steptop::InputSpec::File(path.to_path_buf());
    let follower = steptop::spawn_follow(
        vec![input],
        steptop::FollowOptions::default(),
        cfg.patterns.clone(),
        stop.clone(),
        tx,
    )
    .expect("follow thread");
    let t = Instant::now();
    let mut mon = Monitor::new(cfg.model, cfg.diagnose.clone());
    let mut caught_up = None;
    while caught_up.is_none() {
        match inbox.recv_timeout(Duration::from_secs(60)) {
            Ok(msg) => {
                let last = matches!(msg, Msg::CaughtUp { .. });
                mon.apply(msg);
                caught_up = last.then(|| t.elapsed().as_secs_f64());
            }
            Err(_) => break,
        }
    }
    // Not timed: the follow thread sees the stop at its next poll.
    stop.store(true, Ordering::Relaxed);
    drop(inbox);
    let _ = follower.join();
    caught_up
}

/// The CPU seconds `f` takes, all threads of this process.
fn cpu(f: &mut dyn FnMut()) -> f64 {
    cpu_and_wall(f).0
}

/// The CPU seconds `f` takes, all threads of this process, and its wall seconds.
fn cpu_and_wall(f: &mut dyn FnMut()) -> (f64, f64) {
    let (before, t) = (cpu_seconds(), Instant::now());
    f();
    (cpu_seconds() - before, t.elapsed().as_secs_f64())
}

/// CPU seconds this process has used, all threads (user and system, in ticks of 1/100 s).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // The fields after the command name, which is in parentheses and may hold spaces.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<f64>().ok())
            .unwrap_or(0.0)
    };
    // utime and stime are fields 14 and 15 of the line, 12 and 13 after the name.
    (ticks(11) + ticks(12)) / 100.0
}

/// Concatenates the fixture logs (not the garbage one) until the file reaches `target` bytes.
fn build_log(path: &Path, target: u64) -> u64 {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/logs");
    let mut chunk = Vec::new();
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("fixtures")
        .map(|e| e.expect("entry").path())
        .collect();
    dirs.sort();
    for d in dirs.iter().filter(|d| !d.ends_with("garbage")) {
        for f in std::fs::read_dir(d).expect("fixture dir") {
            let f = f.expect("entry").path();
            if f.extension().is_none_or(|e| e != "toml") {
                chunk.extend(std::fs::read(&f).expect("fixture"));
                if chunk.last() != Some(&b'\n') {
                    chunk.push(b'\n');
                }
            }
        }
    }
    // Repeated lines carry new numbers, as a real log's do: each copy of the fixtures gets
    // other fraction digits (losses, times, rates), in the same layout.
    let mut seed = 0x2545_f491_4f6c_dd1d_u64;
    let variants: Vec<Vec<u8>> = (0..16).map(|_| new_fractions(&chunk, &mut seed)).collect();
    let mut out = std::io::BufWriter::new(std::fs::File::create(path).expect("create"));
    let mut written = 0;
    for variant in variants.iter().cycle() {
        if written >= target {
            break;
        }
        out.write_all(variant).expect("write");
        written += variant.len() as u64;
    }
    out.flush().expect("flush");
    written
}

/// `text` with every digit after a decimal point replaced by a pseudo-random one.
fn new_fractions(text: &[u8], seed: &mut u64) -> Vec<u8> {
    let mut fraction = false;
    text.iter()
        .map(|&b| {
            let digit = b.is_ascii_digit();
            let out = if digit && fraction {
                *seed ^= *seed << 13;
                *seed ^= *seed >> 7;
                *seed ^= *seed << 17;
                b'0' + (*seed % 10) as u8
            } else {
                b
            };
            fraction = (b == b'.' && !fraction) || (digit && fraction);
            out
        })
        .collect()
}

fn peak_rss_kib() -> u64 {
    vm_hwm_kib("/proc/self/status")
}

/// The peak RSS (VmHWM) a status file of /proc says, in KiB; 0 once the process is gone.
fn vm_hwm_kib(path: &str) -> u64 {
    let status = std::fs::read_to_string(path).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Waits for `child`, reading its peak RSS every 5 ms until it exits: the last reading is
/// its peak but for its last few milliseconds (the peak of a report is its steady state).
fn wait_watching_peak(child: &mut std::process::Child) -> (Option<std::process::ExitStatus>, u64) {
    let path = format!("/proc/{}/status", child.id());
    let mut peak = 0;
    loop {
        peak = peak.max(vm_hwm_kib(&path));
        match child.try_wait() {
            Ok(Some(status)) => return (Some(status), peak),
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(_) => return (None, peak),
        }
    }
}
