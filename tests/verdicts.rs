//! Verdicts worth trusting: the figures that decide, checked on real logs against what the
//! logs themselves say. Each test names the log and how its truth was read.

mod support;

use serde_json::Value;

fn report_json(path: &str) -> Value {
    support::report_json(&[path])
}

/// The report's checklist item `id`.
fn checklist_item<'a>(r: &'a Value, id: &str) -> &'a Value {
    let items = r["checklist"].as_array().expect("a checklist");
    items.iter().find(|c| c["id"] == id).expect("the item")
}

/// The report's alerts, active and cleared.
fn alerts(r: &Value) -> &[Value] {
    r["alerts"].as_array().map_or(&[], Vec::as_slice)
}

fn alert<'a>(r: &'a Value, rule: &str) -> Option<&'a Value> {
    alerts(r).iter().find(|a| a["rule"] == rule)
}

/// mmseg's PSPNet (fixtures/wild/mmengine-mmseg-pspnet-iter) logs every 100th iteration and
/// evaluates every 500. Around one evaluation: iteration 500 at 20:20:35, the last
/// `Iter(val)` at 20:20:50, iteration 600 at 20:21:04 with `time: 0.1386`: the 29 s gap holds
/// 100 training steps (13.9 s) and 15 s of evaluation. Over the run, 19 such gaps against
/// 1654 s: about 17% of the wall time, not 32% (a gap less one step). And an evaluation is
/// one event, however many `Iter(val)` lines it prints: 20 of them, not 260.
#[test]
fn an_evaluation_is_its_pause_once_and_one_event() {
    let r = report_json("fixtures/wild/mmengine-mmseg-pspnet-iter/20230211_201914.log");
    let a = alert(&r, "eval_overhead").expect("the pauses are named");
    let title = a["title"].as_str().unwrap();
    assert!(title.contains("17% of the wall time"), "{a:#}");
    assert!(
        a["evidence"]
            .to_string()
            .contains("no step would be shorter"),
        "{a:#}"
    );
    assert!(
        a["gain"].is_null(),
        "a pause is not a gain of the step: {a:#}"
    );
    let count = |kind: &str| {
        r["event_counts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["kind"] == kind)
            .map(|c| c["count"].clone())
    };
    assert_eq!(count("eval"), Some(20.into()));
    assert_eq!(count("checkpoint"), Some(10.into()));
}

/// One wording of what a fix could give, the same in every sink: a cause that takes 65% of
/// each step leaves a step up to 65% shorter, 2.86 times as fast (fixtures/runs/gpu_starved,
/// a recording), not "65% faster" nor "0.65x faster".
#[test]
fn a_gain_is_said_one_way_everywhere() {
    let dir = env!("CARGO_MANIFEST_DIR");
    let log = "fixtures/runs/gpu_starved/run.jsonl";
    let text = |args: &[&str]| {
        let out = support::steptop()
            .current_dir(dir)
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let report = text(&["report", log]);
    let markdown = text(&["report", "--format", "markdown", log]);
    let headless = text(&["replay", "--speed", "max", "--headless", log]);
    let r = report_json(log);
    let gain = r["verdict"]["gain"].as_f64().expect("a gain");
    let want = format!(
        "fixed: steps up to {:.0}% shorter, {:.2}x as fast",
        gain * 100.0,
        1.0 / (1.0 - gain)
    );
    for (what, out) in [("text", &report), ("markdown", &markdown)] {
        assert!(out.contains(&want), "{what} lacks {want:?}:\n{out}");
    }
    assert!(headless.contains("fixed: steps up to "), "{headless}");
    for out in [&report, &markdown, &headless] {
        assert!(
            !out.contains("% faster") && !out.contains("(gain "),
            "{out}"
        );
    }
}

/// detectron2 on three GPUs (fixtures/wild/detectron2-voc-c4-3gpu), read with no GPU
/// readings: 11 ms of data wait in a 948 ms step. The log shows that the input is not the
/// limit, not that a GPU nobody read is; and the checklist agrees with the verdict.
#[test]
fn without_gpu_readings_a_run_is_not_data_bound_not_gpu_bound() {
    let r = report_json("fixtures/wild/detectron2-voc-c4-3gpu/log.txt");
    let v = &r["verdict"];
    assert_eq!(v["rule"], "compute_bound", "{v:#}");
    let title = v["title"].as_str().unwrap();
    assert!(title.starts_with("not data-bound"), "{title}");
    let actions = v["actions"].to_string();
    assert!(
        !actions.contains("cuda") && !actions.contains("TF32"),
        "no GPU advice for a GPU not read: {actions}"
    );
    let data = checklist_item(&r, "data_time");
    assert_eq!(data["status"], "pass", "{data:#}");
}

/// A user's `[[pattern]]` that takes the step's group for the data wait (a log of its own
/// format: `it 12 took 0.101s, fetch 0.368`): a data time longer than the step is no figure
/// to judge by. It is a note that names the pattern, never a verdict; and a pattern that
/// matched nothing says so, instead of a report the same as one without it.
#[test]
fn a_pattern_that_reads_impossible_figures_or_nothing_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("t.log");
    let text: String = (1..=200)
        .map(|s| {
            format!(
                "it {s} took {:.3}s, fetch 0.368 L={:.3}\n",
                0.1 + 0.001 * f64::from(s % 7),
                2.0 - f64::from(s) * 0.001
            )
        })
        .collect();
    std::fs::write(&log, text).unwrap();
    let config = |name: &str, regex: &str| {
        let path = dir.path().join(format!("{name}.toml"));
        std::fs::write(
            &path,
            format!("[[pattern]]\nname = \"{name}\"\nregex = '{regex}'\n"),
        )
        .unwrap();
        path
    };
    let run = |cfg: &std::path::Path| -> Value {
        support::report_json(&[std::path::Path::new("--config"), cfg, &log])
    };
    let wrong = config(
        "mine",
        r"it (?P<step>\d+) took (?P<step_time_s>[\d.]+)s, fetch (?P<data_time_s>[\d.]+) L=(?P<loss>\S+)",
    );
    let r = run(&wrong);
    assert!(r["verdict"].is_null(), "{:#}", r["verdict"]);
    assert!(r["data_share"].is_null(), "{}", r["data_share"]);
    let notes = r["reading_notes"].to_string();
    assert!(
        notes.contains("pattern 'mine'") && notes.contains("longer than their step"),
        "{notes}"
    );
    let none = config(
        "other",
        r"iteration (?P<step>\d+) took (?P<step_time_s>[\d.]+)s",
    );
    let r = run(&none);
    assert!(
        r["reading_notes"]
            .to_string()
            .contains("pattern 'other' in ")
            && r["reading_notes"]
                .to_string()
                .contains("matched 0 of 200 lines"),
        "{}",
        r["reading_notes"]
    );
}

/// detectron2's first logged iteration (fixtures/wild/detectron2-voc-c4-3gpu: `iter: 19 ...
/// data_time: 1.9727`) is the loader's warm-up: the rules judge the run from the end of its
/// warm-up, so no data-bound alert is raised at the start and cleared 200 steps later.
#[test]
fn the_warm_up_is_not_judged_as_the_run() {
    let r = report_json("fixtures/wild/detectron2-voc-c4-3gpu/log.txt");
    let rules: Vec<&str> = alerts(&r)
        .iter()
        .filter_map(|a| a["rule"].as_str())
        .collect();
    assert!(!rules.contains(&"data_loading_bound"), "{rules:?}");
    // Iterations 19 to 199 print ten lines: the warm-up; judged from iteration 219.
    assert_eq!(r["judged_from"], 219, "{}", r["judged_from"]);
}

/// The truth a case's log gives, as tests/wild/truth.py computed it from the log alone.
fn truth(case: &str) -> Value {
    let path = format!(
        "{}/fixtures/wild/{case}/truth.json",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// timm's qkformer log (fixtures/wild/timm-qkformer-cifar10-1gpu) prints batch 0 (slow: the
/// loader restarts) and batch 780 of each 781-batch epoch, each line twice (through the
/// logger and bare). Its figures are the epochs' running averages (`(0.159s, 402.71/s)`,
/// `Data: 0.000 (0.003)`), differenced from each epoch's batch 0: 158 ms, 1.9% data, 405
/// samples/s; each line counts once; the report says what the mean rests on.
#[test]
fn a_log_that_samples_steps_is_judged_by_the_averages_it_prints() {
    let r = report_json("fixtures/wild/timm-qkformer-cifar10-1gpu/cifar10_origin_log.txt");
    let t = truth("timm-qkformer-cifar10-1gpu");
    assert_eq!(r["steps"]["count"], 248, "each line once: {}", r["steps"]);
    let near = |got: &Value, want: &Value, within: f64| {
        let (g, w) = (got.as_f64().unwrap(), want.as_f64().unwrap());
        assert!((g - w).abs() <= within * w.abs(), "{g} vs {w}");
    };
    near(&r["step_time_ms"]["mean"], &t["step_time_ms"], 0.02);
    near(&r["data_share"], &t["data_share"], 0.1);
    near(&r["samples_per_s"], &t["samples_per_s"], 0.02);
    let basis = r["basis"]["step_time"].as_str().unwrap();
    assert!(
        basis.contains("running averages, over") && basis.contains("of the run's 96843 steps"),
        "{basis}"
    );
    assert!(
        r["reading_notes"]
            .to_string()
            .contains("printed twice, read once: 248"),
        "{}",
        r["reading_notes"]
    );
    let data = checklist_item(&r, "data_time");
    assert_eq!(data["status"], "pass", "{data}");
}

/// timm's spikingformer log (fixtures/wild/timm-spikingformer-imagenet-8gpu): each epoch's
/// batch 0 waits 1.3-1.6 s for data (the loader restarts after the evaluation) and the other
/// five lines 5-7 ms; the epochs' running averages put the data wait at 1.2% of the step. A
/// window of lines that weighs batch 0 as much as a thousand batches called it data-bound at
/// 26%; and three slow batches among the 438 lines sampled from 324,703 steps are no 6% of
/// the time.
#[test]
fn a_loader_restart_is_no_verdict_on_the_run() {
    let r = report_json("fixtures/wild/timm-spikingformer-imagenet-8gpu");
    for rule in ["data_loading_bound", "step_spikes"] {
        assert!(alert(&r, rule).is_none(), "{rule}: {:#}", r["alerts"]);
    }
    let share = r["data_share"].as_f64().unwrap();
    assert!(share < 0.02, "{share}");
}

/// DINO's log (fixtures/wild/multi-dino-pretrain-then-linear) ends with a k-NN evaluation:
/// its feature extraction prints `[ 0/79]  time: 1.083012  data: 0.914453` and the like, the
/// first fetches of a fresh loader, after the training's last `Epoch: [27] [781/782]` (data
/// 0.15 ms). Those are another loop's lines, not training steps: the run, whose own epochs
/// wait 0.3-3 ms for data, is not data-bound.
#[test]
fn another_loops_lines_are_no_verdict_on_the_training() {
    let r = report_json("fixtures/wild/multi-dino-pretrain-then-linear");
    let active: Vec<&Value> = alerts(&r)
        .iter()
        .filter(|a| a["cleared_step"].is_null())
        .collect();
    assert!(
        active.iter().all(|a| a["rule"] != "data_loading_bound"),
        "{active:#?}"
    );
}

/// Read from its log alone, a data-bound run is `data_loading_bound`; live, with the trainer's
/// workers and the host's CPU read, the same run may be named `loader_workers_starved`. The
/// report says the readings make the difference, and how to get them
/// (fixtures/wild/mmengine-deformdetr-4gpu-resume).
#[test]
fn a_report_without_readings_says_what_the_readings_would_name() {
    let r = report_json("fixtures/wild/mmengine-deformdetr-4gpu-resume");
    let a = alert(&r, "data_loading_bound").expect("data-bound");
    let evidence = a["evidence"].to_string();
    assert!(
        evidence.contains("from the log alone") && evidence.contains("loader_workers_starved"),
        "{evidence}"
    );
}

/// A hung run whose trainer the probes read (fixtures/runs/stalled_hung, pid 4242): the fix
/// names that pid, not a placeholder.
#[test]
fn the_stall_fix_names_the_trainers_pid() {
    let r = report_json("fixtures/runs/stalled_hung/run.jsonl");
    let a = alert(&r, "stalled").expect("the stall");
    assert!(
        a["actions"].to_string().contains("py-spy dump --pid 4242 "),
        "{:#}",
        a["actions"]
    );
}

/// Headless lines keep one clock: a live run's alert lines say when steptop said them, as its
/// status lines do (not the log's own time beside this machine's); and a status line gives a
/// rate even when no batch size is known (it/s).
#[test]
fn headless_lines_keep_one_clock_and_a_rate() {
    // fixtures/runs/crash_oom's log says 2025-07-02; read live today.
    let mut child = support::steptop()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["--headless", "--no-probe", "--status-every", "1s"])
        .arg("fixtures/runs/crash_oom/train.log")
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(2500));
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let days: std::collections::BTreeSet<&str> = text.lines().filter_map(|l| l.get(..10)).collect();
    assert_eq!(days.len(), 1, "one clock:\n{text}");
    assert!(text.contains("RAISED") && text.contains("status"), "{text}");
    // A log without a batch size: its status says it/s.
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("t.log");
    let steps: String = (1..=40)
        .map(|s| format!("step {s}/40 | loss=1.0 | time=250.0ms\n"))
        .collect();
    std::fs::write(&log, steps).unwrap();
    let out = support::steptop()
        .args([
            "replay",
            "--speed",
            "max",
            "--headless",
            "--status-every",
            "2s",
        ])
        .arg(&log)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines()
            .any(|l| l.contains("status") && l.contains("4.000 it/s")),
        "{text}"
    );
}

/// The HTML report of mmseg's PSPNet (fixtures/wild/mmengine-mmseg-pspnet-iter): the bar of
/// where a step's time goes is the whole step (a 3% data part, and the rest it does not
/// itemise), and the charts over time mark the evaluations and checkpoints its verdict is
/// about.
#[test]
fn the_html_report_draws_the_whole_step_and_marks_the_pauses() {
    let out = support::steptop()
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(["report", "--format", "html"])
        .arg("fixtures/wild/mmengine-mmseg-pspnet-iter/20230211_201914.log")
        .output()
        .unwrap();
    let html = String::from_utf8_lossy(&out.stdout);
    assert!(
        html.contains("<rect class=\"part-rest\""),
        "no rest of the step"
    );
    assert!(html.contains("the rest of the step, not itemised"));
    let pauses = html.matches("<line class=\"mark-pause\"").count();
    // 20 evaluations and 10 checkpoints (two of them with an evaluation), on two charts.
    assert!(pauses >= 2 * 20, "{pauses} pause marks");
}

/// A log without timestamps that prints every hundredth step (`time=0.41s` each) and its
/// memory monitor every thousand (`[Step 8000] Memory - Process: 27545.6MB (10.5%), System:
/// 233.5/256.0GB (91.2%)`, the seeds' shape): the clock the trend is measured on is the
/// steps' own, a hundred steps a line. The machine's use grows 10 GiB a thousand steps, 410 s:
/// about 1500 MiB a minute, so the 26 GiB left at step 8000 last about 18 minutes, not none.
#[test]
fn memory_trends_run_on_the_time_of_all_the_steps_a_line_stands_for() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("train.log");
    let mut text = String::new();
    for s in (100..=8000).step_by(100) {
        text += &format!("[Step {s}] loss=2.31 | lr=1e-4 | time=0.41s\n");
        if s % 1000 == 0 {
            let used = 150.0 + f64::from(s) / 100.0;
            text += &format!(
                "[Step {s}] Memory - Process: 27545.6MB (10.5%), System: {used:.1}/256.0GB ({:.1}%)\n",
                used / 2.56
            );
        }
    }
    text += "WARNING: System memory usage is critically high (91.2%)!\n";
    std::fs::write(&log, text).unwrap();
    let r = report_json(log.to_str().unwrap());
    let a = alert(&r, "host_memory_pressure").expect("host memory pressure");
    let title = a["title"].as_str().unwrap();
    let minutes: f64 = title
        .split("runs out in ")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|m| m.parse().ok())
        .unwrap_or_else(|| panic!("no time to exhaustion: {title}"));
    assert!((16.0..=20.0).contains(&minutes), "{title}");
}
