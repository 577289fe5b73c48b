//! How long a line appended to a followed local file takes to be in the model: the source
//! thread (follow, parse, stamp), the inbox and the monitor, as the live modes run them.
//!
//! The promise is 5 ms p99 with inotify. Each line is a step whose number is its sequence
//! number; the writer notes when it started each write and the monitor thread notes when the
//! model's last step reached it, so every line has its own latency. A second run switches
//! inotify off to show what the poll alone gives (as on NFS): latency up to one poll period.
//!
//! Run with `cargo bench --bench follow_latency`.

use std::error::Error;
use std::fs::OpenOptions;
use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use steptop::DiagnoseConfig;
use steptop::ModelConfig;
use steptop::Monitor;
use steptop::{FollowOptions, InputSpec};

type Res<T> = Result<T, Box<dyn Error>>;

/// One measured run: how many lines, how they are paced, and with what options.
struct Run {
    label: &'static str,
    opts: FollowOptions,
    lines: usize,
    /// Wait for each line to arrive before writing the next, so each is its own wake-up.
    one_at_a_time: bool,
    /// Pause after each line.
    gap: Duration,
}

fn main() -> Res<()> {
    let runs = [
        Run {
            label: "inotify + 1 s poll (default options)",
            opts: FollowOptions::default(),
            lines: 2_000,
            one_at_a_time: true,
            gap: Duration::from_micros(200),
        },
        Run {
            label: "poll only (use_notify = false), 1 s poll",
            opts: FollowOptions {
                use_notify: false,
                ..FollowOptions::default()
            },
            lines: 40,
            one_at_a_time: false,
            // Not a divisor of the poll period, so lines land at every phase of it.
            gap: Duration::from_millis(97),
        },
    ];
    println!(
        "follow_latency: append -> model (follow thread, inbox, monitor), local file in {}",
        std::env::temp_dir().display()
    );
    for run in &runs {
        let mut micros = measure(run)?;
        report(run.label, &mut micros);
    }
    Ok(())
}

/// Follows a fresh file, appends `run.lines` lines and returns each one's latency in µs.
fn measure(run: &Run) -> Res<Vec<u64>> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("train.log");
    std::fs::write(&path, b"")?;
    let spec = InputSpec::parse(path.to_str().ok_or("temp path is not UTF-8")?)?;
    let base = Instant::now();
    // Arrival time of each line in ns since `base`; 0 while not arrived.
    let arrived: Arc<Vec<AtomicU64>> =
        Arc::new((0..run.lines).map(|_| AtomicU64::new(0)).collect());
    let ready = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (inbox_tx, inbox) = steptop::inbox();
    let source = steptop::spawn_follow(
        vec![spec],
        run.opts.clone(),
        Arc::default(),
        Arc::clone(&stop),
        inbox_tx,
    )?;
    let monitor = {
        let (arrived, ready) = (Arc::clone(&arrived), Arc::clone(&ready));
        thread::spawn(move || {
            let mut m = Monitor::new(ModelConfig::default(), DiagnoseConfig::default());
            let mut seen = 0;
            // Ends when the follow thread ends and drops its sender.
            for msg in inbox {
                m.apply(msg);
                let now = base.elapsed().as_nanos().max(1) as u64;
                if let Some(step) = m.model.merged.last_step {
                    let step = step as usize;
                    while seen <= step && seen < arrived.len() {
                        arrived[seen].store(now, Ordering::Release);
                        seen += 1;
                    }
                }
                if m.caught_up() {
                    ready.store(1, Ordering::Release);
                }
            }
        })
    };
    // Watches are set up before the first read, so once caught up every append is seen.
    if !wait_for(std::slice::from_ref(&ready), Duration::from_secs(5)) {
        return Err("the follower never caught up".into());
    }

    let mut log = OpenOptions::new().append(true).open(&path)?;
    let mut written = Vec::with_capacity(run.lines);
    for seq in 0..run.lines {
        let line = format!("step {seq}/100000 | loss=0.1234 | lr=3.0e-04 | data_time=0.1ms\n");
        written.push(base.elapsed());
        log.write_all(line.as_bytes())?;
        if run.one_at_a_time {
            wait_for(&arrived[seq..=seq], Duration::from_secs(3));
        }
        thread::sleep(run.gap);
    }
    let all_in = wait_for(&arrived, run.opts.poll * 3);
    stop.store(true, Ordering::Relaxed);
    source.join().map_err(|_| "follow thread panicked")?;
    monitor.join().map_err(|_| "monitor thread panicked")?;
    if !all_in {
        return Err("some lines never reached the sink".into());
    }
    Ok(written
        .iter()
        .zip(arrived.iter())
        .map(|(w, a)| (a.load(Ordering::Acquire) / 1_000).saturating_sub(w.as_micros() as u64))
        .collect())
}

/// Spins (politely) until every slot is filled or the timeout passes; says whether all came.
fn wait_for(slots: &[AtomicU64], timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    while slots.iter().any(|s| s.load(Ordering::Acquire) == 0) {
        if Instant::now() > deadline {
            return false;
        }
        thread::yield_now();
    }
    true
}

fn report(label: &str, micros: &mut [u64]) {
    micros.sort_unstable();
    if micros.is_empty() {
        println!("  {label:<42} n=0");
        return;
    }
    let at = |q: f64| micros[((micros.len() - 1) as f64 * q).round() as usize];
    println!(
        "  {label:<42} n={:<5} p50={:>7} us  p90={:>7} us  p99={:>7} us  max={:>7} us",
        micros.len(),
        at(0.50),
        at(0.90),
        at(0.99),
        at(1.0),
    );
}
