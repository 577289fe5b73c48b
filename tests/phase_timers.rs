//! Frameworks' own phase timers feed the step breakdown: each part is what the timer times,
//! nothing counts twice, and "unlogged" is the step less what the timers itemise. The lines are
//! real runs' output, verbatim; the expected figures are computed here from the printed
//! numbers by hand.

use steptop::Config;
use steptop::Model;
use steptop::analyze;
use steptop::testing::Over;

/// The model `steptop report` builds from a log holding `text`.
fn read(text: &str) -> Model {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("train.log");
    std::fs::write(&path, text).unwrap();
    let cfg = Config::default_checked();
    analyze(&[path], &cfg).unwrap().model
}

fn part(m: &Model, name: &str) -> Option<f64> {
    let b = m.step_breakdown(Over::Run);
    b.parts.iter().find(|p| p.name == name).map(|p| p.ms)
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() <= 1e-6 * b.abs().max(1.0))
}

/// Lines `from..=to` (1-based) of a log in the corpus of real runs, byte for byte.
fn wild(case_file: &str, from: usize, to: usize) -> String {
    let path = format!("{}/fixtures/wild/{case_file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("a corpus log");
    let lines: Vec<&str> = text.lines().collect();
    lines[from - 1..to].join("\n")
}

/// Megatron-DeepSpeed's iteration lines with the timer line after each (microsoft/
/// Megatron-DeepSpeed, examples/MoE/log, in fixtures/wild/mds-gpt125m-tokendrop-8gpu).
fn megatron_one_line() -> String {
    wild(
        "mds-gpt125m-tokendrop-8gpu/gpt3-0.125B-tokendropping-graduallyIncrease-lr-3.0e-4-with-kernel.log",
        2411,
        2416,
    )
}

#[test]
fn megatron_timers_on_one_line() {
    let m = read(&megatron_one_line());
    let b = m.step_breakdown(Over::Run);
    // batch-generator runs inside forward-compute: the forward is what is left of it.
    assert!(close(
        b.forward_ms,
        ((340.72 - 42.49) + (281.56 - 37.60)) / 2.0
    ));
    assert!(close(part(&m, "backward-compute"), (176.25 + 156.97) / 2.0));
    assert!(close(part(&m, "optimizer"), (313.71 + 13.99) / 2.0));
    // The data wait comes from the timers, as a share of the steps they itemise.
    let share = (42.49 + 37.60) / (849.6 + 473.2);
    assert!(
        b.data_share.is_some_and(|s| (s - share).abs() < 1e-9),
        "{b:?}"
    );
    let unlogged = |step: f64, f: f64, bw: f64, ar: f64, opt: f64, data: f64| {
        step - data - (f - data) - bw - ar - opt
    };
    let want = (unlogged(849.6, 340.72, 176.25, 0.01, 313.71, 42.49)
        + unlogged(473.2, 281.56, 156.97, 0.01, 13.99, 37.60))
        / 2.0;
    assert!(close(b.unlogged_ms, want), "{:?} vs {want}", b.unlogged_ms);
}

/// A Megatron-LM SLURM job on GH200 (fixtures/wild/megatron-gh200-smoke-then-run): the
/// iteration line, then one timer a line, (min, max) across ranks.
fn megatron_across_ranks() -> String {
    wild("megatron-gh200-smoke-then-run/3108456.out", 1037, 1055)
}

#[test]
fn megatron_timers_across_ranks() {
    let m = read(&megatron_across_ranks());
    let b = m.step_breakdown(Over::Run);
    // The slowest rank's time; containers (forward-backward) and sub-timers (optimizer-*)
    // are left out.
    assert!(close(b.forward_ms, 6285.74 - 100.80));
    assert!(close(part(&m, "backward-compute"), 1298.90));
    assert!(close(part(&m, "all-grads-sync"), 378.23));
    assert!(close(part(&m, "optimizer"), 829.84));
    assert!(part(&m, "forward-backward").is_none());
    assert!(part(&m, "optimizer-inner-step").is_none());
    let logged = 6285.74 + 1298.90 + 378.23 + 0.06 + 829.84;
    assert!(close(b.unlogged_ms, 9185.1 - logged), "{:?}", b.unlogged_ms);
    assert!(
        b.data_share
            .is_some_and(|s| (s - 100.80 / 9185.1).abs() < 1e-9)
    );
}

/// Argonne's Megatron-DeepSpeed notes (saforem2's ALCF runs, 2024-04-04; fetched with the
/// library's find_string): DeepSpeed's wall-clock breakdown beside Megatron's iteration line.
/// `bwd` holds `bwd_inner` and `bwd_allreduce`; the micro-step line repeats one micro-batch.
const DEEPSPEED_BREAKDOWN: &str = "[2024-04-04 09:09:53,311] [INFO] [logging.py:96:log_dist] [Rank 0] time (ms) | optimizer_allgather: 884.11 | optimizer_gradients: 6.43 | optimizer_step: 23.44
[2024-04-04 09:09:53,312] [INFO] [logging.py:96:log_dist] [Rank 0] step=1, skipped=0, lr=[0.00029999999999267505, 0.00029999999999267505], mom=[(0.9, 0.999), (0.9, 0.999)]
[2024-04-04 09:09:53,313] [INFO] [logging.py:96:log_dist] [Rank 0] time (ms) | fwd_microstep: 6567.68 | bwd_microstep: 17950.36 | bwd_inner_microstep: 17711.20 | bwd_allreduce_microstep: 239.11 | step_microstep: 1139.27
[2024-04-04 09:09:53,313] [INFO] [logging.py:96:log_dist] [Rank 0] time (ms) | fwd: 6567.66 | bwd: 17950.35 | bwd_inner: 17711.19 | bwd_allreduce: 239.11 | step: 1139.29
[Rank 0] (after 1 iterations) memory (MB) | allocated: 18244.640625 | max allocated: 41299.50146484375 | reserved: 46764.0 | max reserved: 46764.0
 iteration        1/  317892 | consumed samples:           96 | consumed tokens:       393216 | elapsed time per iteration (ms): 25849.1 | learning rate: 3.000E-04 | global batch size:    96 | lm loss: 1.117136E+01 | loss scale: 1.0 | actual seqlen:  4096 | number of skipped iterations:   0 | number of nan iterations:   0 | samples per second: 3.714 | tokens per gpu per second(tgs): 633.832 | TFLOPs: 38.61 |
[2024-04-04 09:10:13,619] [INFO] [logging.py:96:log_dist] [Rank 0] time (ms) | optimizer_allgather: 327.85 | optimizer_gradients: 6.26 | optimizer_step: 23.60
[2024-04-04 09:10:13,619] [INFO] [logging.py:96:log_dist] [Rank 0] step=2, skipped=0, lr=[0.00029999999997070033, 0.00029999999997070033], mom=[(0.9, 0.999), (0.9, 0.999)]
[2024-04-04 09:10:13,620] [INFO] [logging.py:96:log_dist] [Rank 0] time (ms) | fwd_microstep: 4022.74 | bwd_microstep: 15738.67 | bwd_inner_microstep: 15556.80 | bwd_allreduce_microstep: 181.82 | step_microstep: 371.01
[2024-04-04 09:10:13,620] [INFO] [logging.py:96:log_dist] [Rank 0] time (ms) | fwd: 4022.73 | bwd: 15738.66 | bwd_inner: 15556.62 | bwd_allreduce: 181.81 | step: 371.02
 iteration        2/  317892 | consumed samples:          192 | consumed tokens:       786432 | elapsed time per iteration (ms): 20298.3 | learning rate: 3.000E-04 | global batch size:    96 | lm loss: 2.537718E+01 | loss scale: 1.0 | actual seqlen:  4096 | number of skipped iterations:   0 | number of nan iterations:   0 | samples per second: 4.729 | tokens per gpu per second(tgs): 807.159 | TFLOPs: 49.17 |
";

#[test]
fn deepspeed_wall_clock_breakdown() {
    let m = read(DEEPSPEED_BREAKDOWN);
    let b = m.step_breakdown(Over::Run);
    assert_eq!(m.stages.blocks, 2);
    assert!(close(b.forward_ms, (6567.66 + 4022.73) / 2.0));
    assert!(close(part(&m, "bwd_inner"), (17711.19 + 15556.62) / 2.0));
    assert!(close(part(&m, "bwd_allreduce"), (239.11 + 181.81) / 2.0));
    assert!(close(part(&m, "step"), (1139.29 + 371.02) / 2.0));
    assert!(part(&m, "bwd").is_none());
    let unlogged = (25849.1 - 6567.66 - 17711.19 - 239.11 - 1139.29 + 20298.3
        - 4022.73
        - 15556.62
        - 181.81
        - 371.02)
        / 2.0;
    assert!(
        close(b.unlogged_ms, unlogged),
        "{:?} vs {unlogged}",
        b.unlogged_ms
    );
}

/// DeepSpeed resets its global timers when it prints them: printed every 10 steps, a line
/// sums 10 steps and the breakdown is a tenth of it. (Lines in DeepSpeed's format, the
/// figures our own: no public log we found prints them at an interval.)
#[test]
fn deepspeed_timers_printed_every_ten_steps_are_divided() {
    let mut log = String::new();
    for step in [10u64, 20, 30] {
        log.push_str(&format!(
            "[2024-04-04 09:{:02}:00,000] [INFO] [logging.py:96:log_dist] [Rank 0] step={step}, skipped=0, lr=[0.0003], mom=[(0.9, 0.999)]\n",
            step / 10
        ));
        log.push_str("[Rank 0] time (ms) | fwd: 1000.00 | bwd: 2100.00 | bwd_inner: 2000.00 | bwd_allreduce: 100.00 | step: 300.00\n");
        log.push_str(&format!(
            " iteration       {step}/     100 | consumed samples:          960 | elapsed time per iteration (ms): 350.0 | learning rate: 3.000E-04 | global batch size:    96 | lm loss: 1.117136E+01 | loss scale: 1.0 |\n"
        ));
    }
    let m = read(&log);
    let b = m.step_breakdown(Over::Run);
    assert!(close(b.forward_ms, 100.0), "{:?}", b.forward_ms);
    assert!(close(part(&m, "bwd_inner"), 200.0));
    assert!(close(b.unlogged_ms, 350.0 - 100.0 - 200.0 - 10.0 - 30.0));
}

/// Lightning's profiler table, from a real CPU run (fixtures/phase_timers/
/// lightning_simple_profiler): means over the run, set against the mean step.
#[test]
fn lightning_profiler_report() {
    let path = format!(
        "{}/fixtures/phase_timers/lightning_simple_profiler/train.log",
        env!("CARGO_MANIFEST_DIR")
    );
    let m = read(&std::fs::read_to_string(path).unwrap());
    let b = m.step_breakdown(Over::Run);
    // The profiler table's own figures (in the log), in ms.
    assert!(close(b.forward_ms, 2.9583));
    assert!(close(
        part(&m, "[Strategy]SingleDeviceStrategy.backward"),
        2.4621
    ));
    // training_step and backward run inside optimizer_step: the optimizer is what is left.
    assert!(close(
        part(&m, "[LightningModule]Net.optimizer_step"),
        11.257 - 2.9583 - 2.4621
    ));
    assert!(close(
        part(&m, "[Strategy]SingleDeviceStrategy.batch_to_device"),
        0.073587
    ));
    // The run's step: 8.0892 s of run_training_epoch over 256 batches; the data wait is
    // 4.9564 s of it. The bar's rates give the step time (within 5%), the table the wait.
    let step = 8.0892 / 256.0 * 1000.0;
    let step_ms = b.step_ms.unwrap();
    assert!((step_ms / step - 1.0).abs() < 0.05, "{step_ms} vs {step}");
    let share = b.data_share.unwrap();
    assert!((share - 4.9564 / 8.0892).abs() < 0.03, "{share}");
}
