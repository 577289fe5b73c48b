//! Screen snapshots: scenario fixtures through the monitor, drawn with ratatui's TestBackend at
//! 80x24 and 160x48, compared with tests/snapshots/<name>.txt. After a deliberate change to
//! the screen, `STEPTOP_BLESS=1 cargo test --test render` rewrites them; review the diff.

use std::path::Path;
use std::sync::Arc;

use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::style::Modifier;

use steptop::DiagnoseConfig;
use steptop::ModelConfig;
use steptop::Monitor;
use steptop::Msg;
use steptop::testing::UiState;
use steptop::testing::View;
use steptop::testing::{Role, Theme};
use steptop::{HostReading, Sample};
use steptop::{Key, KeyCode, Mods};

fn monitor(files: &[&str]) -> Monitor {
    monitor_until(files, u64::MAX)
}

/// The monitor as it was when the logs reached step `last`.
fn monitor_until(files: &[&str], last: u64) -> Monitor {
    let mut m = Monitor::new(ModelConfig::default(), DiagnoseConfig::default());
    let paths: Vec<&Path> = files.iter().map(Path::new).collect();
    steptop::replay_messages(&paths, &Arc::default(), 0, &mut |msg, _| {
        if m.model.merged.last_step.is_none_or(|s| s < last) {
            m.apply(msg);
        }
    })
    .unwrap();
    m
}

fn draw(m: &Monitor, ui: &UiState, theme: &Theme, w: u16, h: u16) -> Buffer {
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    let view = View {
        mon: m,
        ui,
        theme,
        step_age: None,
    };
    t.draw(|f| steptop::testing::draw(f, &view)).unwrap();
    t.backend().buffer().clone()
}

/// One pane alone, at `w`x`h`, in the default theme.
fn draw_pane(m: &Monitor, pane: steptop::testing::Pane, w: u16, h: u16) -> Buffer {
    let theme = default_theme();
    let ui = UiState::default();
    let view = View {
        mon: m,
        ui: &ui,
        theme: &theme,
        step_age: None,
    };
    let mut t = Terminal::new(TestBackend::new(w, h)).unwrap();
    t.draw(|f| steptop::testing::render(f, pane, f.area(), &view))
        .unwrap();
    t.backend().buffer().clone()
}

fn text(buf: &Buffer) -> String {
    let mut out = String::new();
    for y in 0..buf.area.height {
        let mut row = String::new();
        for x in 0..buf.area.width {
            row.push_str(buf[(x, y)].symbol());
        }
        out.push_str(row.trim_end());
        out.push('\n');
    }
    out
}

fn snapshot(name: &str, buf: &Buffer) {
    let got = text(buf);
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/snapshots")
        .join(format!("{name}.txt"));
    if std::env::var_os("STEPTOP_BLESS").is_some() {
        std::fs::write(&path, &got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!(
            "no snapshot {}; run STEPTOP_BLESS=1 cargo test --test render and review it\n{got}",
            path.display()
        )
    });
    assert!(
        want == got,
        "screen {name} differs from {}\n--- want\n{want}\n--- got\n{got}",
        path.display()
    );
}

fn fixture(run: &str, file: &str) -> String {
    format!("{}/fixtures/runs/{run}/{file}", env!("CARGO_MANIFEST_DIR"))
}

fn default_theme() -> Theme {
    Theme::load("default").unwrap()
}

/// Finds `needle` on the screen; its position.
fn find(buf: &Buffer, needle: &str) -> Option<(u16, u16)> {
    let t = text(buf);
    t.lines().enumerate().find_map(|(y, line)| {
        let x = line.find(needle)?;
        Some((line[..x].chars().count() as u16, y as u16))
    })
}

#[test]
fn healthy_run_at_both_sizes() {
    let m = monitor(&[&fixture("healthy_run", "run.jsonl")]);
    let theme = default_theme();
    let ui = UiState::default();
    let small = draw(&m, &ui, &theme, 80, 24);
    snapshot("healthy_run_80x24", &small);
    let big = draw(&m, &ui, &theme, 160, 48);
    snapshot("healthy_run_160x48", &big);
    // The verdict line is coloured as its severity says.
    let (x, y) = find(&big, "●").expect("a verdict mark");
    assert_eq!(big[(x, y)].style().fg, theme.style(Role::Info).fg);
}

#[test]
fn data_bound_run_names_the_bottleneck_in_the_crit_colour() {
    // Epoch 1, read from NFS; epoch 2 comes from the page cache and clears it.
    let m = monitor_until(&[&fixture("data_loading_bound", "run.jsonl")], 200);
    let theme = default_theme();
    let ui = UiState::default();
    let small = draw(&m, &ui, &theme, 80, 24);
    snapshot("data_loading_bound_80x24", &small);
    snapshot("data_loading_bound_160x48", &draw(&m, &ui, &theme, 160, 48));
    let verdict = m.diagnosis.verdict().expect("a verdict");
    assert_eq!(verdict.rule, "data_loading_bound");
    let (x, y) = find(&small, "●").expect("a verdict mark");
    assert_eq!(verdict.severity, steptop::Severity::Crit);
    assert_eq!(small[(x, y)].style().fg, theme.style(Role::Crit).fg);
}

/// A plain log and what the sampler sends on a machine without the NVIDIA driver.
#[test]
fn without_nvml_the_gpu_pane_says_why() {
    let mut m = monitor(&[&fixture("stage8_third", "timing.log")]);
    m.apply(Msg::Sample(Box::new(Sample {
        time: 1_800_000_000.0,
        gpus: Vec::new(),
        gpu_notes: Vec::new(),
        gpu_error: Some(
            "no NVIDIA driver here: libnvidia-ml.so.1 cannot be loaded (no NVIDIA driver on \
             this machine, or set STEPTOP_NVML_LIB to the library's path)"
                .into(),
        ),
        host: Some(HostReading {
            cpus: 8,
            cpu_pct: Some(12.5),
            per_cpu_pct: vec![10.0, 20.0, 5.0, 15.0, 0.0, 30.0, 8.0, 12.0],
            mem_total_bytes: 64 << 30,
            mem_available_bytes: 48 << 30,
            mem_used_bytes: 16 << 30,
            load_avg: Some([1.5, 1.2, 1.0]),
            ..HostReading::default()
        }),
        trainer: None,
    })));
    let theme = default_theme();
    let ui = UiState::default();
    let small = draw(&m, &ui, &theme, 80, 24);
    snapshot("no_nvml_80x24", &small);
    snapshot("no_nvml_160x48", &draw(&m, &ui, &theme, 160, 48));
    // One line at 80x24: its room is for what is read.
    assert!(find(&small, "no GPU readings: no NVIDIA driver here").is_some());
    assert!(find(&small, "STEPTOP_NVML_LIB").is_none());
}

/// With the probes off there will never be readings: the GPU and host panes say why, not
/// that they wait.
#[test]
fn with_the_probes_off_the_hardware_panes_say_so() {
    let m = monitor(&[&fixture("stage8_third", "timing.log")]);
    let theme = default_theme();
    let waiting = draw(&m, &UiState::default(), &theme, 80, 24);
    assert!(find(&waiting, "no hardware readings yet").is_some());
    let ui = UiState {
        probes_off: Some("probes off (--no-probe)"),
        ..UiState::default()
    };
    let off = draw(&m, &ui, &theme, 80, 24);
    assert!(find(&off, "readings yet").is_none(), "{}", text(&off));
    assert_eq!(
        text(&off).matches("probes off (--no-probe)").count(),
        2,
        "{}",
        text(&off)
    );
}

/// Readings recorded from the fake NVML's throttling scenario: clocks held down, named.
#[test]
fn a_throttled_gpu_shows_its_reasons() {
    let m = monitor(&[&fixture("gpu_throttling", "run.jsonl")]);
    let theme = default_theme();
    let ui = UiState::default();
    let big = draw(&m, &ui, &theme, 160, 48);
    snapshot("gpu_throttling_160x48", &big);
    snapshot("gpu_throttling_80x24", &draw(&m, &ui, &theme, 80, 24));
}

/// A trainer on a MIG device: the GPU (no utilization in MIG mode) and its MIG device as
/// `0:0`, and the GPUs' notes under them.
#[test]
fn mig_devices_sit_under_their_gpu_and_the_notes_close_the_pane() {
    let mut m = monitor(&[&fixture("mig_device_trainer", "run.jsonl")]);
    let mut last = m.model.hardware.latest().expect("a sample").clone();
    last.time += 1.0;
    last.gpu_notes = vec![
        "GPU 1 is hidden from this process (NVML: Insufficient Permissions): a container or \
         Slurm's device cgroup gives it to another job"
            .into(),
    ];
    m.apply(Msg::Sample(Box::new(last)));
    let theme = default_theme();
    let ui = UiState::default();
    let big = draw(&m, &ui, &theme, 160, 48);
    snapshot("mig_device_160x48", &big);
    snapshot("mig_device_80x24", &draw(&m, &ui, &theme, 80, 24));
    assert!(find(&big, "0:0 ").is_some());
    assert!(find(&big, " MIG ").is_some());
    assert!(find(&big, "GPU 1 is hidden from this process").is_some());
}

#[test]
fn help_overlay_and_a_zoomed_pane() {
    let m = monitor(&[&fixture("stage8_third", "timing.log")]);
    let theme = default_theme();
    let mut ui = UiState::default();
    ui.apply(steptop::testing::Action::Help);
    let help = draw(&m, &ui, &theme, 80, 24);
    snapshot("help_80x24", &help);
    for b in steptop::testing::KEYMAP {
        assert!(find(&help, b.help).is_some(), "help lacks '{}'", b.help);
    }
    let mut ui = UiState {
        focus: steptop::testing::Pane::Stages,
        ..UiState::default()
    };
    ui.apply(steptop::testing::Action::Zoom);
    let zoomed = draw(&m, &ui, &theme, 80, 24);
    snapshot("stages_zoomed_80x24", &zoomed);
    assert!(find(&zoomed, "Stage8").is_some());
}

#[test]
fn alert_details_list_every_action() {
    let m = monitor_until(&[&fixture("data_loading_bound", "run.jsonl")], 200);
    let theme = default_theme();
    let mut ui = UiState::default();
    ui.apply(steptop::testing::Action::AlertDetails);
    let buf = draw(&m, &ui, &theme, 100, 30);
    snapshot("details_100x30", &buf);
    let verdict = m.diagnosis.verdict().unwrap();
    for (i, _) in verdict.actions.iter().enumerate().take(3) {
        assert!(
            find(&buf, &format!("{}. ", i + 1)).is_some(),
            "action {}",
            i + 1
        );
    }
}

#[test]
fn a_hostile_log_line_reaches_the_screen_without_its_escapes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("train.log");
    std::fs::write(
        &path,
        "step 1 loss=2.5 \x1b]52;c;ZWNobyBwd25lZA==\x07\x1b]0;owned\x07\x1b[2J\x1b[10;10Hend\n",
    )
    .unwrap();
    let m = monitor(&[path.to_str().unwrap()]);
    let ui = UiState {
        focus: steptop::testing::Pane::Log,
        ..UiState::default()
    };
    let buf = draw(&m, &ui, &default_theme(), 80, 24);
    let screen = text(&buf);
    assert!(screen.contains("step 1 loss=2.5 end"), "{screen}");
    for cell in buf.content() {
        assert!(!cell.symbol().chars().any(char::is_control), "{screen}");
    }
}

#[test]
fn keys_change_the_screen_not_the_model() {
    let m = monitor(&[&fixture("stage8_third", "timing.log")]);
    let before = format!("{:?}", m.model);
    let theme = default_theme();
    let mut ui = UiState::default();
    for code in [KeyCode::Tab, KeyCode::Tab, KeyCode::Tab, KeyCode::Char('+')] {
        ui.key(&Key::new(code, Mods::NONE));
    }
    let buf = draw(&m, &ui, &theme, 80, 24);
    // The third Tab focuses the stages, which take the left slot at 80x24.
    let (x, y) = find(&buf, "forward stages forward").expect("stages shown");
    assert!(buf[(x, y)].style().add_modifier.contains(Modifier::BOLD));
    assert_eq!(
        buf[(x - 1, y)].style().fg,
        theme.style(Role::BorderFocused).fg
    );
    assert_eq!(format!("{:?}", m.model), before);
}

#[test]
fn every_theme_draws_and_mono_has_no_colour() {
    let m = monitor_until(&[&fixture("data_loading_bound", "run.jsonl")], 200);
    for (name, _) in steptop::testing::BUILTIN {
        let theme = Theme::load(name).unwrap();
        let buf = draw(&m, &UiState::default(), &theme, 80, 24);
        if name == "mono" {
            for cell in buf.content() {
                let s = cell.style();
                assert!(
                    s.fg.is_none_or(|c| c == ratatui::style::Color::Reset)
                        && s.bg.is_none_or(|c| c == ratatui::style::Color::Reset),
                    "mono has colour {s:?}"
                );
            }
        }
    }
}

#[test]
fn the_readme_lists_every_key() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/live.md")).unwrap();
    for b in steptop::testing::bindings(true) {
        assert!(
            readme.contains(&format!(" | {} |\n", b.help)),
            "docs/live.md's key table lacks '{}'",
            b.help
        );
    }
}

/// The breakdown pane alone, cell by cell: a quarter of each step waits for data.
#[test]
fn the_breakdown_bar_splits_the_step_by_its_shares() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("train.log");
    let lines: String = (1..=30)
        .map(|s| format!("step {s}/100 | loss=1.0 | data_time=100ms | time=0.400s\n"))
        .collect();
    std::fs::write(&path, lines).unwrap();
    let m = monitor(&[path.to_str().unwrap()]);
    let buf = &draw_pane(&m, steptop::testing::Pane::Breakdown, 40, 3);
    let bar: String = (0..40).map(|x| buf[(x, 1)].symbol().to_string()).collect();
    assert_eq!(bar, format!("{}{}", "█".repeat(10), "▓".repeat(30)));
    let theme = default_theme();
    assert_eq!(buf[(0, 1)].style().fg, theme.style(Role::Data).fg);
    assert_eq!(buf[(39, 1)].style().fg, theme.style(Role::Forward).fg);
    let legend: String = (0..40).map(|x| buf[(x, 2)].symbol().to_string()).collect();
    assert!(
        legend.starts_with("█ data 100.0 ms 25% · ▓ compute"),
        "{legend}"
    );
}

/// A stage label with a right-to-left override and a zero width space: escaped wherever the
/// live view prints it (stages, verdict, log), so it can neither reorder a row nor hide.
#[test]
fn invisible_characters_in_a_stage_name_are_shown_escaped() {
    let dir = tempfile::tempdir().unwrap();
    let src = std::fs::read_to_string(fixture("stage8_third", "timing.log")).unwrap();
    let path = dir.path().join("timing.log");
    std::fs::write(
        &path,
        src.replace("VRT Stage8", "VRT Stage\u{202e}8\u{200b}"),
    )
    .unwrap();
    let m = monitor(&[path.to_str().unwrap()]);
    let buf = draw(&m, &UiState::default(), &default_theme(), 160, 48);
    let screen = text(&buf);
    for cell in buf.content() {
        assert!(
            !cell.symbol().contains(['\u{202e}', '\u{200b}']),
            "{screen}"
        );
    }
    let escaped = "VRT Stage\\u{202e}8\\u{200b}";
    let rows = screen.lines().filter(|l| l.contains(escaped)).count();
    // The stages pane, the verdict (marked ●), the log pane's last block.
    assert!(rows >= 3, "{rows} rows show it:\n{screen}");
    assert!(
        screen
            .lines()
            .any(|l| l.contains('●') && l.contains(escaped)),
        "{screen}"
    );
}

/// The stages pane alone: Chinese names take two cells a character, and the columns after
/// them still line up.
#[test]
fn stage_columns_line_up_by_cells_with_chinese_names() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("timing.log");
    let log: String = (1..=20)
        .map(|s| {
            format!(
                "[Step {s}]\n特征提取          : 412.50ms (22.8%)\nVRT处理          : 1099.99ms (60.9%)\n\
                 上采样 Upsample   : 289.30ms (16.0%)\nTotal           : 1801.79ms\n"
            )
        })
        .collect();
    std::fs::write(&path, log).unwrap();
    let m = monitor(&[path.to_str().unwrap()]);
    let buf = &draw_pane(&m, steptop::testing::Pane::Stages, 60, 6);
    // Rows 2..5 are the three stages; each share ends with `%` in the same cell.
    let ends: Vec<Option<u16>> = (2..5)
        .map(|y| (0..60).rev().find(|&x| buf[(x, y)].symbol() == "%"))
        .collect();
    assert!(ends[0].is_some(), "{}", text(buf));
    assert!(
        ends.iter().all(|e| *e == ends[0]),
        "{ends:?}\n{}",
        text(buf)
    );
}

/// Four ranks, rank 3 slow from step 61: while it is, the header names it beside the ranks'
/// median step time.
#[test]
fn the_header_gives_the_ranks_spread_and_the_slowest() {
    let m = monitor_until(&[&fixture("straggler_rank", "train.log")], 120);
    let theme = default_theme();
    let big = draw(&m, &UiState::default(), &theme, 160, 48);
    let header = text(&big)
        .lines()
        .nth(1)
        .expect("a second header line")
        .to_string();
    assert!(header.contains("4 ranks p50 "), "{header}");
    assert!(header.contains("· slowest 3 "), "{header}");
}

/// `--baseline`: the stages pane gives the baseline's mean of each stage and the change, and
/// the header samples/s then and now; the columns survive 80x24.
#[test]
fn a_baseline_shows_beside_the_live_figures() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/compare");
    let cfg = steptop::Config::default_checked();
    let baseline = |run: &str| {
        let dir = root.join(run);
        let paths: Vec<std::path::PathBuf> = if dir.is_dir() {
            vec![dir.join("timing.log")]
        } else {
            vec![dir]
        };
        steptop::testing::read_baseline("before".into(), &paths, &cfg).expect("reads")
    };
    let theme = default_theme();
    let ui = UiState::default();
    let after = root.join("stage8_cut/after/timing.log");
    let mut m = monitor(&[after.to_str().expect("utf-8")]);
    m.baseline = Some(baseline("stage8_cut/before"));
    let big = draw(&m, &ui, &theme, 160, 48);
    snapshot("baseline_stages_160x48", &big);
    let screen = text(&big);
    let row = screen
        .lines()
        .find(|l| l.contains("VRT Stage8") && l.contains(" -46%"))
        .expect("the stages pane's VRT Stage8 row");
    assert!(row.contains(" 278 -46%"), "{row}");
    assert!(screen.contains("baseline"), "{screen}");
    // At 80x24 the stages take the left pane when focused.
    let mut focused = ui.clone();
    focused.focus = steptop::testing::Pane::Stages;
    let small = draw(&m, &focused, &theme, 80, 24);
    snapshot("baseline_stages_80x24", &small);
    assert!(text(&small).contains(" 278 -46%"), "{}", text(&small));

    let b8 = root.join("batch_4_to_8/bs8.log");
    let mut m = monitor(&[b8.to_str().expect("utf-8")]);
    m.baseline = Some(baseline("batch_4_to_8/bs4.log"));
    let header = text(&draw(&m, &ui, &theme, 160, 48))
        .lines()
        .nth(1)
        .expect("header")
        .to_string();
    assert!(
        header.contains("29.1 samples/s (baseline 29.8, -2%)"),
        "{header}"
    );
    // The step breakdown: the baseline's slower step as a longer thin bar under this one.
    let w12 = root.join("workers_2_to_12/workers12.log");
    let mut m = monitor(&[w12.to_str().expect("utf-8")]);
    m.baseline = Some(baseline("workers_2_to_12/workers2.log"));
    let big = draw(&m, &ui, &theme, 160, 48);
    snapshot("baseline_breakdown_160x48", &big);
    let screen = text(&big);
    let thin = screen
        .lines()
        .find(|l| l.contains(" baseline 45"))
        .expect("the baseline's bar");
    let cells = thin.chars().filter(|c| *c == '▁').count();
    let live = screen
        .lines()
        .find(|l| l.contains('█') && l.contains('▓'))
        .expect("the live bar")
        .chars()
        .filter(|c| matches!(c, '█' | '▓' | '░'))
        .count();
    assert!(cells > live, "{cells} thin cells against {live}:\n{screen}");
}

/// An LLM run counts tokens: the header shows the job's tokens/s and the MFU the log
/// printed, as the report, the status line and the metrics do.
#[test]
fn tokens_and_mfu_reach_every_sink() {
    let log = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/wild/llmc-a100-hellaswag/gpt2_train.11672114.log");
    let m = monitor(&[log.to_str().unwrap()]);
    let theme = default_theme();
    let screen = text(&draw(&m, &UiState::default(), &theme, 160, 48));
    let header = screen.lines().take(2).collect::<Vec<_>>().join("\n");
    assert!(header.contains(" tokens/s"), "{header}");
    assert!(header.contains("MFU 3"), "{header}");
    let status = steptop::testing::Status::of(&m, 0.0);
    assert!(status.tokens_per_s.is_some_and(|t| t > 100_000.0));
    let exposition = steptop::exposition(&m, &steptop::NodeIdentity::default());
    assert!(
        exposition
            .lines()
            .any(|l| l.starts_with("steptop_tokens_per_second ")
                || l.starts_with("steptop_tokens_per_second{")),
        "{exposition}"
    );
    assert!(
        exposition.lines().any(|l| l.starts_with("steptop_mfu")),
        "{exposition}"
    );
}

#[test]
fn the_python_pane_names_the_function_that_holds_the_main_thread() {
    let m = monitor(&[&fixture("python_hotspot", "run.jsonl")]);
    let theme = default_theme();
    let ui = UiState {
        focus: steptop::testing::Pane::Code,
        ..UiState::default()
    };
    let small = draw(&m, &ui, &theme, 80, 24);
    snapshot("python_hotspot_80x24", &small);
    let (x, y) = find(&small, "_generate_targets pytrainer").expect("the function in the pane");
    // The function that runs is in the warning colour; the loop that waits is not.
    assert_eq!(
        small[(x, y)].fg,
        theme.style(Role::Warn).fg.expect("warn colour")
    );
    let wide = draw(&m, &UiState::default(), &theme, 160, 48);
    snapshot("python_hotspot_160x48", &wide);
    assert!(find(&wide, "decode_sample").is_some());
}

/// A real Megatron run's log (fixtures/wild/megatron-gh200-40rank-hang) followed live, one
/// iteration at a time, at 160x48: the cells each new step changes on the screen. A view that
/// scrolled its log pane a row per line and moved every chart column at each new one changed
/// every row of the pane at every step; what the terminal is sent is what changes.
#[test]
fn following_a_log_changes_few_cells_a_step() {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/wild/megatron-gh200-40rank-hang/stdout.log"),
    )
    .unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let mut feed = steptop::Feed::new(0, "stdout.log", Arc::default());
    let mut m = Monitor::new(ModelConfig::default(), DiagnoseConfig::default());
    let theme = default_theme();
    let ui = UiState::default();
    let mut t = Terminal::new(TestBackend::new(160, 48)).unwrap();
    let mut changed = Vec::new();
    let mut at = 1_800_000_000.0;
    for (i, line) in lines.iter().enumerate() {
        let live = i >= 200;
        if live && i == 200 {
            m.apply(Msg::CaughtUp { source: 0 });
        }
        m.apply(feed.message(i as u64 + 1, line.as_bytes(), live.then_some(at)));
        if !live || !line.contains("] iteration ") {
            continue;
        }
        at += 1.0;
        let before = t.backend().buffer().clone();
        let view = View {
            mon: &m,
            ui: &ui,
            theme: &theme,
            step_age: None,
        };
        t.draw(|f| steptop::testing::draw(f, &view)).unwrap();
        if i > 220 {
            changed.push(before.diff(t.backend().buffer()).len());
        }
    }
    changed.sort_unstable();
    let median = changed[changed.len() / 2];
    let total: usize = changed.iter().sum();
    // Of the 160x48 screen (7,680 cells): a new log line, the header's figures, the newest
    // column; the whole log pane and chart only at a page turn.
    assert!(median < 120, "median {median} cells a step: {changed:?}");
    assert!(
        total < changed.len() * 200,
        "{total} cells over {} steps",
        changed.len()
    );
}
