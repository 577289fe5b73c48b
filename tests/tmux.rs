//! The real binary in a real terminal: tmux runs `steptop LOG` in a pane, the test types keys
//! (send-keys) and reads the screen (capture-pane). It starts, shows the fixture's step and
//! verdict, follows new lines, reacts to keys, survives a resize, and gives the terminal back
//! (main screen, cooked mode) on `q`, SIGHUP, SIGTERM and a panic. The GPU pane reads the fake NVML through
//! the real sampler. `.ci/run` installs tmux.

mod support;

use support::tmux::Tmux;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

fn steptop() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_steptop"))
}

const FAKE_GPU: &str = "gpus 1\nname 0 NVIDIA H100 80GB HBM3\n\
                        row 0 0 93 40 61000 81559 512000 700000 66 1755 1980 0x0 1000 2000\n";

/// The script the pane runs: steptop, then, on one line, its exit code and whether the
/// terminal is back in cooked mode (`icanon echo`, not `-icanon -echo`); then it waits, so
/// the pane stays for the test to read (the server is killed on drop).
fn script(args: &str, env: &str) -> String {
    format!(
        "{env} {} {args}; echo \"exit=$? $(stty -a | tr ' ;' '\\n\\n' | grep -x -e icanon -e -icanon -e echo -e -echo | tr '\\n' ' ')\"; sleep 60",
        steptop().display()
    )
}

fn append(path: &Path, text: &str) {
    let mut f = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    f.write_all(text.as_bytes()).unwrap();
}

fn steps(from: u64, to: u64) -> String {
    (from..=to)
        .map(|s| {
            format!(
                "step {s}/100 | loss={:.3} | data_time=120ms | time=0.400s\n",
                3.0 - s as f64 * 0.01
            )
        })
        .collect()
}

#[test]
fn the_live_view_starts_follows_reacts_and_restores_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("train.log");
    std::fs::write(&log, steps(1, 40)).unwrap();
    let scenario = dir.path().join("gpu.txt");
    std::fs::write(&scenario, FAKE_GPU).unwrap();
    let env = format!(
        "STEPTOP_NVML_LIB={} FAKE_NVML_SCENARIO={}",
        support::fake_nvml().display(),
        scenario.display()
    );
    let t = Tmux::start("main", 100, 30, dir.path(), &script("train.log", &env));
    let s = t.wait("the fixture's step and verdict", |s| {
        s.contains("step 40/100") && s.contains("data loading takes")
    });
    assert!(s.contains("H100 80GB"), "the fake GPU is read:\n{s}");
    assert_eq!(t.var("alternate_on"), "1", "full screen while running");

    append(&log, &steps(41, 45));
    t.wait("appended steps", |s| s.contains("step 45/100"));

    t.keys(&["?"]);
    t.wait("the help", |s| s.contains("keys (Esc closes)"));
    t.keys(&["Escape"]);
    t.wait("the help closed", |s| !s.contains("keys (Esc closes)"));

    t.keys(&["a"]);
    t.wait("the alert details", |s| s.contains("What to do"));
    // Escape and the next key sent at once would read as Alt and that key: wait in between.
    t.keys(&["Escape"]);
    t.wait("the alert details closed", |s| !s.contains("What to do"));

    // Focus the log (the last pane, after the python pane), zoom it: it takes the screen
    // under the header.
    for _ in 0..7 {
        t.keys(&["Tab"]);
    }
    t.keys(&["Enter"]);
    t.wait("the zoomed log", |s| {
        s.contains(" log ") && !s.contains(" GPUs ") && s.contains("step 45/100 | loss")
    });
    t.keys(&["Escape"]);
    t.wait("the log unzoomed", |s| s.contains(" GPUs "));

    t.cmd(&["resize-window", "-t", "t", "-x", "80", "-y", "24"])
        .expect("resize");
    let s = t.wait("the screen redrawn at 80x24", |s| {
        s.lines().count() <= 24 && s.contains("step 45/100") && s.contains(" GPUs ")
    });
    assert!(s.lines().all(|l| l.chars().count() <= 80), "{s}");

    t.keys(&["q"]);
    let s = t.wait("steptop to quit", |s| s.contains("exit="));
    assert!(s.contains("exit=0"), "{s}");
    assert!(
        s.contains("icanon echo") && !s.contains("-icanon"),
        "cooked mode back:\n{s}"
    );
    assert_eq!(t.var("alternate_on"), "0", "the main screen back");
}

#[test]
fn sighup_and_sigterm_restore_the_terminal() {
    for signal in ["HUP", "TERM"] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("train.log"), steps(1, 10)).unwrap();
        let t = Tmux::start(
            signal,
            100,
            30,
            dir.path(),
            &script("--no-probe train.log", ""),
        );
        t.wait("the screen", |s| s.contains("step 10/100"));
        let pid = t.child_pid();
        Command::new("kill")
            .args([&format!("-{signal}"), &pid.to_string()])
            .status()
            .unwrap();
        let s = t.wait("steptop to stop", |s| s.contains("exit="));
        assert!(s.contains("exit=0"), "SIG{signal}: {s}");
        assert!(
            s.contains("icanon echo") && !s.contains("-icanon"),
            "SIG{signal}: {s}"
        );
        assert_eq!(t.var("alternate_on"), "0", "SIG{signal}");
    }
}

#[test]
fn a_panic_on_a_background_thread_restores_the_terminal() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("train.log"), steps(1, 10)).unwrap();
    let env = "STEPTOP_INJECT_PANIC=1";
    let t = Tmux::start(
        "panic",
        100,
        30,
        dir.path(),
        &script("--no-probe train.log", env),
    );
    let s = t.wait("steptop to stop", |s| s.contains("exit="));
    assert!(s.contains("exit=101"), "{s}");
    assert!(
        s.contains("injected by STEPTOP_INJECT_PANIC"),
        "the panic is printed:\n{s}"
    );
    assert!(s.contains("icanon echo") && !s.contains("-icanon"), "{s}");
    assert_eq!(t.var("alternate_on"), "0");
}

/// The replay's share read, from the header's `replay ... 37%`.
fn replay_share(screen: &str) -> Option<u32> {
    let at = screen.find("replay ")?;
    screen[at..]
        .split_whitespace()
        .find_map(|w| w.strip_suffix('%')?.parse().ok())
}

#[test]
fn replay_keys_pause_change_speed_and_jump() {
    let dir = tempfile::tempdir().unwrap();
    let recording =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/runs/data_loading_bound/run.jsonl");
    let t = Tmux::start(
        "replay",
        100,
        30,
        dir.path(),
        &script(&format!("replay --speed 1 {}", recording.display()), ""),
    );
    t.wait("the replay at 1x", |s| s.contains("replay 1x"));
    t.keys(&["]"]);
    t.wait("twice the speed", |s| s.contains("replay 2x"));
    t.keys(&["["]);
    t.keys(&["["]);
    t.wait("half the speed", |s| s.contains("replay 0.5x"));

    t.keys(&["Space"]);
    let s = t.wait("the pause", |s| s.contains("replay PAUSED"));
    let before = replay_share(&s).expect("a position");
    // While paused the position holds; a jump reads ahead 5% of the input and stays paused.
    t.keys(&[">"]);
    let s = t.wait("the jump", |s| {
        replay_share(s).is_some_and(|p| p >= before + 4) && s.contains("replay PAUSED")
    });
    let jumped = replay_share(&s).unwrap();
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(replay_share(&t.screen()), Some(jumped), "paused holds");

    t.keys(&["Space"]);
    t.wait("the replay going on", |s| s.contains("replay 0.5x"));
    t.keys(&["?"]);
    t.wait("the replay keys in the help", |s| {
        s.contains("replay: pause") && s.contains("replay: jump ahead")
    });
    t.keys(&["q"]);
    let s = t.wait("steptop to quit", |s| s.contains("exit="));
    assert!(s.contains("exit=0"), "{s}");
}

#[test]
fn without_a_terminal_it_points_to_headless_and_report() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("train.log");
    std::fs::write(&log, steps(1, 3)).unwrap();
    let out = Command::new(steptop()).arg(&log).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("not one") && err.contains("--headless") && err.contains("steptop report"),
        "{err}"
    );
    assert!(out.stdout.is_empty());
}

/// `--baseline` in a real terminal: the Stage 8 cut replayed against the run before it, at
/// 160x48 (the stages pane's baseline column) and at 80x24 (the header and the stages, once
/// the stages pane has the focus).
#[test]
fn a_baseline_column_shows_in_the_live_view_at_both_sizes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/compare/stage8_cut");
    let args = format!(
        "replay --speed max --baseline {} {}",
        root.join("before").display(),
        root.join("after/timing.log").display()
    );
    let dir = tempfile::tempdir().unwrap();
    let big = Tmux::start("baseline-big", 160, 48, dir.path(), &script(&args, ""));
    let screen = big.wait("the baseline column", |s| s.contains(" 278 -46%"));
    assert!(screen.contains("baseline"), "{screen}");
    big.keys(&["q"]);
    big.wait("a clean exit", |s| s.contains("exit=0 icanon echo"));
    let small = Tmux::start("baseline-small", 80, 24, dir.path(), &script(&args, ""));
    small.wait("the replay", |s| s.contains("step 60"));
    // Tab moves the focus pane by pane; the stages pane comes into the left column.
    for _ in 0..6 {
        if small.screen().contains(" 278 -46%") {
            break;
        }
        small.keys(&["Tab"]);
        std::thread::sleep(Duration::from_millis(200));
    }
    let screen = small.wait("the baseline column at 80x24", |s| s.contains(" 278 -46%"));
    assert!(screen.lines().all(|l| l.chars().count() <= 80), "{screen}");
    small.keys(&["q"]);
    small.wait("a clean exit", |s| s.contains("exit=0 icanon echo"));
}

#[test]
fn the_python_pane_names_the_hot_function_and_no_py_spy_text_reaches_the_screen() {
    let t = support::PyTrainer::start(&["--workers", "1", "--hot-ms", "60", "--wait-ms", "10"]);
    let cfg = support::fast_stacks_config(t.dir.path());
    let args = format!(
        "--pid {} --config {} {}",
        t.pid(),
        cfg.display(),
        t.log().display()
    );
    let tmux = Tmux::start(
        "stacks",
        80,
        24,
        t.dir.path(),
        &script(&args, "XDG_CONFIG_HOME=/nonexistent/steptop-tests"),
    );
    tmux.wait("the first step", |s| s.contains("step "));
    // Tab through the panes to the python pane: it takes the left half at 80x24.
    for _ in 0..6 {
        tmux.keys(&["Tab"]);
    }
    let s = tmux.wait("the hot function in the python pane", |s| {
        s.contains("_generate_targets pytrainer.py")
    });
    for noise in ["py-spy", "Failed to", "Error:", "error:"] {
        assert!(!s.contains(noise), "{noise} on the screen:\n{s}");
    }
    tmux.keys(&["q"]);
    tmux.wait("the exit line", |s| s.contains("exit=0"));
}

/// A log long enough that `report` shows its progress: past the half second before the bar
/// shows, about 10 MB takes seconds for a debug build, and a release build (built with this
/// test) needs ten times that.
fn big_log(path: &Path) {
    let bytes = if cfg!(debug_assertions) {
        10_000_000
    } else {
        100_000_000
    };
    let one = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/runs/data_bound_two_workers/train.log"),
    )
    .unwrap();
    std::fs::write(path, one.repeat(bytes / one.len())).unwrap();
}

#[test]
fn report_shows_its_progress_on_a_terminal_and_clears_it() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("big.log");
    big_log(&log);
    let script = format!(
        "{} report big.log > report.txt; echo \"exit=$?\"; sleep 60",
        steptop().display()
    );
    let t = Tmux::start("progress", 100, 10, dir.path(), &script);
    let s = t.wait("the progress bar", |s| {
        s.contains("1/1 big.log [") && s.contains("MiB/") && s.contains("left")
    });
    assert!(s.lines().count() <= 10, "{s}");
    let s = t.wait("the report", |s| s.contains("exit=0"));
    assert!(!s.contains("big.log ["), "the bar is cleared:\n{s}");
    let report = std::fs::read_to_string(dir.path().join("report.txt")).unwrap();
    assert!(report.starts_with("steptop report: 1 file"), "{report}");

    // Not on a terminal, or with --quiet: nothing on stderr.
    let out = Command::new(steptop())
        .args(["report", "--quiet"])
        .arg(&log)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = Command::new(steptop())
        .arg("report")
        .arg(&log)
        .output()
        .unwrap();
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The progress line names the file being read: a name that holds a cleared screen and a
/// right-to-left override shows them escaped, and the terminal is not cleared.
#[test]
fn the_progress_line_shows_a_hostile_file_name_escaped() {
    let dir = tempfile::tempdir().unwrap();
    big_log(&dir.path().join("big\u{1b}[2J\u{202e}x.log"));
    let script = format!(
        "echo KEEP-ME; {} report big* > report.txt; echo \"exit=$?\"; sleep 60",
        steptop().display()
    );
    let t = Tmux::start("hostile-name", 120, 10, dir.path(), &script);
    let s = t.wait("the progress bar", |s| s.contains("left"));
    assert!(s.contains("big\\u{1b}[2J\\u{202e}x.log ["), "{s}");
    assert!(s.contains("KEEP-ME"), "the screen was cleared:\n{s}");
    t.wait("the report", |s| s.contains("exit=0"));
}

/// A log that stopped before steptop started, read with the probes off: the live view says
/// the run stalled (its clock is the loop's tick, not the samples).
#[test]
fn the_live_view_says_a_log_read_without_probes_stalled() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("train.log"), steps(1, 60)).unwrap();
    std::fs::write(
        dir.path().join("stall.toml"),
        "[rules.stalled]\nfactor = 2\nmin-seconds = 3\nsustain = 1\n",
    )
    .unwrap();
    let t = Tmux::start(
        "stall",
        80,
        24,
        dir.path(),
        &script("--no-probe --config stall.toml train.log", ""),
    );
    let s = t.wait("the stall", |s| {
        s.contains("no new step since steptop started")
    });
    assert!(s.contains("step 60/100"), "{s}");
    t.keys(&["q"]);
    t.wait("steptop's exit", |s| s.contains("exit=0"));
}

/// `steptop run` in the live view: when the job ends, the header says so, with its code.
#[test]
fn the_live_view_says_the_job_ended() {
    let dir = tempfile::tempdir().unwrap();
    let t = Tmux::start(
        "job-ended",
        80,
        24,
        dir.path(),
        &script(
            "run --no-probe --log job.log -- sh -c \"echo 'step 1/10 | loss=0.5'; sleep 1; exit 3\"",
            "",
        ),
    );
    t.wait("the job's end", |s| s.contains("job exited (3)"));
    t.keys(&["q"]);
    t.wait("steptop's exit with the job's code", |s| {
        s.contains("exit=3")
    });
}
