//! What the live view costs when left running, and how fast it starts. Prints figures; asserts
//! nothing (the machines are shared and noisy).
//!
//! Idle: `steptop LOG` in tmux at 160x48 (probes on), the log growing one step per second: a
//! real Megatron run's log (fixtures/wild/megatron-gh200-40rank-hang), its first 200
//! iterations already there, then its next lines one iteration a second.
//! Over `STEPTOP_BENCH_SECONDS` (default 60) after a 5 s warm-up, in 10 s windows: CPU of one
//! core (utime + stime from /proc), bytes written to the terminal (tmux pipe-pane), RSS. htop
//! (`htop -d 10`: a refresh a second), when installed, runs beside it in a tmux of the same
//! size over the same windows, measured the same way: the reference a terminal monitor is
//! held to.
//! Busy: `steptop --no-probe LOG` at 160x48 while the log grows 5,000 lines a second (the
//! interleaved log of `mklog.py`, a write every 10 ms), over the same windows: CPU and RSS.
//! Start-up: with a log of `STEPTOP_BENCH_LINES` (default 1,000,000) lines, the time from
//! exec to the first frame on the terminal, and until the whole history is read.
//!
//! `cargo bench --bench idle_cost` (needs tmux).

#[path = "../support/mod.rs"]
mod support;

use std::io::Write;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

const WIDTH: &str = "160";
const HEIGHT: &str = "48";

struct Tmux(String);

impl Tmux {
    fn cmd(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .args(["-L", &self.0, "-f", "/dev/null"])
            .args(args)
            .output()
            .expect("tmux (apt-get install tmux)");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// A session whose shell waits for Enter and then execs `command`, with the pane's
    /// output copied to `capture` from before the program starts.
    fn start(name: &str, dir: &Path, command: &str, capture: &Path) -> Tmux {
        let t = Tmux(format!("steptop-bench-{}-{name}", std::process::id()));
        let script = format!("read go; exec {command}");
        t.cmd(&[
            "new-session",
            "-d",
            "-s",
            "b",
            "-x",
            WIDTH,
            "-y",
            HEIGHT,
            "-c",
            dir.to_str().unwrap(),
            &script,
        ]);
        t.cmd(&[
            "pipe-pane",
            "-o",
            "-t",
            "b",
            &format!("cat >> {}", capture.display()),
        ]);
        t
    }

    fn pid(&self) -> u32 {
        self.cmd(&["display-message", "-p", "-t", "b", "#{pane_pid}"])
            .trim()
            .parse()
            .expect("pane pid")
    }

    fn screen(&self) -> String {
        self.cmd(&["capture-pane", "-p", "-t", "b"])
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        self.cmd(&["kill-server"]);
    }
}

fn line(step: u64, total: u64) -> String {
    format!(
        "step {step}/{total} | epoch=1 | loss={:.4} | lr=3.0e-04 | data_time=41ms | time=0.987s | samples/s=259.3\n",
        4.0 - step as f64 * 1e-6
    )
}

fn status_kib(pid: u32, key: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(key)?.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

fn size(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

fn env_or(key: &str, default: u64) -> u64 {
    std::env::var(key)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The real Megatron log's lines, each iteration with the lines before it: what one step of
/// the run appends.
fn megatron_steps() -> Vec<String> {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/wild/megatron-gh200-40rank-hang/stdout.log"),
    )
    .unwrap();
    let mut steps = vec![String::new()];
    for l in text.split_inclusive('\n') {
        steps.last_mut().unwrap().push_str(l);
        if l.contains("] iteration ") {
            steps.push(String::new());
        }
    }
    steps
}

fn idle(bin: &str) {
    let seconds = env_or("STEPTOP_BENCH_SECONDS", 60).max(10);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("train.log");
    let steps = megatron_steps();
    assert!(
        steps.len() > 200 + 5 + seconds as usize,
        "the log has too few iterations"
    );
    let history: String = steps[..200].concat();
    std::fs::write(&log, history).unwrap();
    let capture = dir.path().join("tty.bin");
    let t = Tmux::start("idle", dir.path(), &format!("{bin} train.log"), &capture);
    t.cmd(&["send-keys", "-t", "b", "Enter"]);
    let pid = t.pid();
    let htop_capture = dir.path().join("htop.bin");
    let htop = Command::new("htop")
        .arg("--version")
        .output()
        .is_ok()
        .then(|| Tmux::start("htop", dir.path(), "htop -d 10", &htop_capture));
    if let Some(h) = &htop {
        h.cmd(&["send-keys", "-t", "b", "Enter"]);
    }
    let htop_pid = htop.as_ref().map(Tmux::pid);
    let (mut htop_cpu, mut htop_bytes) = (Vec::new(), Vec::new());
    let mut step = 200;
    let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    let mut tick = |step: &mut u64| {
        f.write_all(steps[*step as usize].as_bytes()).unwrap();
        *step += 1;
        std::thread::sleep(Duration::from_secs(1));
    };
    for _ in 0..5 {
        tick(&mut step);
    }
    let (mut cpu, mut bytes) = (Vec::new(), Vec::new());
    for _ in 0..seconds / 10 {
        let (c0, b0, t0) = (support::cpu_seconds(pid), size(&capture), Instant::now());
        let (hc0, hb0) = (htop_pid.map(support::cpu_seconds), size(&htop_capture));
        for _ in 0..10 {
            tick(&mut step);
        }
        let dt = t0.elapsed().as_secs_f64();
        cpu.push(100.0 * (support::cpu_seconds(pid) - c0) / dt);
        bytes.push((size(&capture) - b0) as f64 / dt);
        if let (Some(hp), Some(hc0)) = (htop_pid, hc0) {
            htop_cpu.push(100.0 * (support::cpu_seconds(hp) - hc0) / dt);
            htop_bytes.push((size(&htop_capture) - hb0) as f64 / dt);
        }
    }
    let rss = status_kib(pid, "VmRSS:");
    let hwm = status_kib(pid, "VmHWM:");
    assert!(
        t.screen().contains(&format!("step {step}/")),
        "the view did not follow:\n{}",
        t.screen()
    );
    println!(
        "idle at {WIDTH}x{HEIGHT}, one Megatron step per second, {} windows of 10 s: CPU median {:.3}% of one core (windows {}), terminal output median {:.0} B/s (windows {}), RSS {:.1} MiB (peak {:.1} MiB)",
        cpu.len(),
        support::median(cpu.clone()),
        support::listed(&cpu),
        support::median(bytes.clone()),
        bytes
            .iter()
            .map(|b| format!("{b:.0}"))
            .collect::<Vec<_>>()
            .join(" "),
        rss as f64 / 1024.0,
        hwm as f64 / 1024.0,
    );
    match htop_pid {
        Some(_) => println!(
            "htop beside it, same windows: CPU median {:.3}% of one core, terminal output median {:.0} B/s (steptop/htop: {:.2}x the bytes, {:.2}x the CPU)",
            support::median(htop_cpu.clone()),
            support::median(htop_bytes.clone()),
            support::median(bytes.clone()) / support::median(htop_bytes.clone()).max(1.0),
            support::median(cpu.clone()) / support::median(htop_cpu.clone()).max(1e-9),
        ),
        None => println!("htop is not installed: no side-by-side reference (apt-get install htop)"),
    }
}

/// The live view under a busy log: the interleaved log (`mklog.py`: several libraries'
/// lines, tqdm redraws, timing blocks) appended at `BUSY_LINES_PER_S`, in a write every 10 ms
/// as a job's buffered stdout comes, with the probes off.
fn busy(bin: &str) {
    let seconds = env_or("STEPTOP_BENCH_SECONDS", 60).max(10);
    let dir = tempfile::tempdir().unwrap();
    let source = dir.path().join("interleaved.log");
    let needed = (seconds + 10) * BUSY_LINES_PER_S * 120;
    if !support::interleaved_log(&source, needed) {
        println!("busy: mklog.py did not run (python3 missing?)");
        return;
    }
    let text = std::fs::read(&source).unwrap();
    let lines: Vec<&[u8]> = text.split_inclusive(|b| *b == b'\n').collect();
    let log = dir.path().join("train.log");
    std::fs::write(&log, b"").unwrap();
    let capture = dir.path().join("tty.bin");
    let t = Tmux::start(
        "busy",
        dir.path(),
        &format!("{bin} --no-probe train.log"),
        &capture,
    );
    t.cmd(&["send-keys", "-t", "b", "Enter"]);
    std::thread::sleep(Duration::from_millis(500));
    let pid = t.pid();
    let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    let per_write = (BUSY_LINES_PER_S / 100) as usize;
    let mut next = 0;
    let start = Instant::now();
    // Writes due by `until`, every 10 ms on the clock (a late write catches up).
    let mut write_until = |until: Instant| {
        while Instant::now() < until {
            let due = (start.elapsed().as_millis() / 10) as usize * per_write;
            if next < due.min(lines.len()) {
                f.write_all(&lines[next..due.min(lines.len())].concat())
                    .unwrap();
                next = due.min(lines.len());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    write_until(Instant::now() + Duration::from_secs(5));
    let mut cpu = Vec::new();
    for _ in 0..seconds / 10 {
        let (c0, t0) = (support::cpu_seconds(pid), Instant::now());
        write_until(t0 + Duration::from_secs(10));
        cpu.push(100.0 * (support::cpu_seconds(pid) - c0) / t0.elapsed().as_secs_f64());
    }
    let rss = status_kib(pid, "VmRSS:");
    let hwm = status_kib(pid, "VmHWM:");
    println!(
        "busy at {WIDTH}x{HEIGHT}, {BUSY_LINES_PER_S} lines/s of the interleaved log ({} lines written), --no-probe, {} windows of 10 s: CPU median {:.2}% of one core (windows {}), RSS {:.1} MiB (peak {:.1} MiB)",
        next,
        cpu.len(),
        support::median(cpu.clone()),
        support::listed(&cpu),
        rss as f64 / 1024.0,
        hwm as f64 / 1024.0,
    );
}

/// The busy log's rate: a chatty framework, or a tqdm bar per rank of eight in one log.
const BUSY_LINES_PER_S: u64 = 5000;

fn startup(bin: &str) {
    let lines = env_or("STEPTOP_BENCH_LINES", 1_000_000);
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("big.log");
    {
        let mut w = std::io::BufWriter::new(std::fs::File::create(&log).unwrap());
        for s in 1..=lines {
            w.write_all(line(s, lines).as_bytes()).unwrap();
        }
    }
    let capture = dir.path().join("tty.bin");
    std::fs::write(&capture, b"").unwrap();
    let t = Tmux::start(
        "start",
        dir.path(),
        &format!("{bin} --no-probe big.log"),
        &capture,
    );
    std::thread::sleep(Duration::from_millis(300));
    let t0 = Instant::now();
    t.cmd(&["send-keys", "-t", "b", "Enter"]);
    let deadline = t0 + Duration::from_secs(300);
    let mut first = None;
    // The first frame: the header's name on the terminal. Then: the last step shown.
    while first.is_none() && Instant::now() < deadline {
        let out = std::fs::read(&capture).unwrap_or_default();
        if out.windows(7).any(|w| w == b"steptop") {
            first = Some(t0.elapsed());
        }
        std::thread::sleep(Duration::from_millis(2));
    }
    let want = format!("step {lines}/{lines}");
    let mut all = None;
    while all.is_none() && Instant::now() < deadline {
        if t.screen().contains(&want) {
            all = Some(t0.elapsed());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let pid = t.pid();
    let hwm = status_kib(pid, "VmHWM:");
    let mb = size(&log) as f64 / 1e6;
    println!(
        "start-up with {lines} lines ({mb:.0} MB): first frame after {:.0} ms (includes tmux's send-keys and pipe), whole history shown after {:.2} s, peak RSS {:.1} MiB",
        first.map_or(f64::NAN, |d| d.as_secs_f64() * 1000.0),
        all.map_or(f64::NAN, |d| d.as_secs_f64()),
        hwm as f64 / 1024.0
    );
}

fn main() {
    let bin = env!("CARGO_BIN_EXE_steptop");
    startup(bin);
    busy(bin);
    idle(bin);
}
