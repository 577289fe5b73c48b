//! What the words of a log line mean: for each figure (the step and its total, a step's time,
//! an interval's, an average's, the time so far, the data wait, a throughput and what it
//! counts, the training loss, the learning rate, memory, the batch, the job's settings), the
//! keys and words frameworks and hand-written loops print for it, in English and Chinese, in
//! one table (`field_of`) to extend. The generic readers (key/value pairs, progress bars,
//! bracketed counters, metric names) all consult it; a framework's own file is left only for
//! what no word can say.

use super::num::Unit;

/// What a key names. Times and memory carry the unit a bare number is in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Step,
    /// A position in brackets with no name (`[120/938]`): the step, or with a second one the
    /// epoch, unless the line names its step.
    Position,
    Total,
    /// The planned number of steps, from a step line or a config dump.
    TotalSteps,
    Epoch,
    StepTime(Unit),
    /// The time of the steps its key counts (HugeCTR's `Time(100 iters): 0.525s`): each step's
    /// is that over their number.
    IntervalTime(u32, Unit),
    /// Training time so far: `train_time:98412ms`, `elapsed: 0:41:07`.
    Elapsed(Unit),
    /// The step time averaged since the start: `step_avg:231.55ms`.
    AvgStepTime(Unit),
    DataTime(Unit),
    /// `11ms/step`, `2.83s/it`: the unit is in the value.
    TimePerStep,
    SamplesPerS,
    ItersPerS,
    BatchSize,
    GlobalBatch,
    GradAccum,
    SeqLen,
    TokensPerStep,
    /// Loss, with a rank: `loss` beats `train_loss` beats `loss_step`.
    Loss(u8),
    Lr,
    GradNorm,
    LossScale,
    TokensPerS,
    /// Tokens per second of one GPU: `tgs` (tokens per GPU per second).
    TokensPerGpuS,
    Mfu,
    Memory(Unit),
    Eta,
    NumWorkers,
    PinMemory,
    AmpDtype,
    GradientCheckpointing,
    CudnnBenchmark,
    WorldSize,
    /// A list or range of GPU ids: its length is the world size.
    GpuIds,
    Nodes,
    GpusPerNode,
    /// Cache counters printed as pairs: `hits=8245 misses=1755 hit_rate=0.82`.
    CacheHits,
    CacheMisses,
    CacheHitRate,
}

/// Maps a key to its field; a key with words before it (`[train] step`, `INFO loss`) falls back
/// to its last word.
pub fn lookup(key: &str) -> Option<Field> {
    field_of(key)
        .or_else(|| namespaced(key))
        .or_else(|| interval(key))
        .or_else(|| {
            // `loss is 2.31` (MindSpore's), `avg loss so far is 0.11`: the words before `is`.
            if let Some(phrase) = key.strip_suffix(" is") {
                let phrase = phrase.strip_suffix(" so far").unwrap_or(phrase);
                return lookup(phrase);
            }
            // `update batch_size to 8`, `set num_workers to 4`: the word before `to`.
            if let Some(phrase) = key.strip_suffix(" to") {
                return lookup(phrase.rsplit(' ').next()?).filter(|f| !matches!(f, Field::Step));
            }
            let last = key.rsplit([' ', '(', '[', '{']).next()?;
            // `(writing took 2.1 seconds)`: what took is named before it, and it is no step.
            if last.len() == key.len() || last.eq_ignore_ascii_case("took") {
                return None;
            }
            let field = field_of(last)?;
            // `Training time=1.25s`, `Generate time=2.92s`: a part of the step, not the step
            // (an RLHF step is generation, then training).
            if matches!(field, Field::StepTime(_)) && names_a_phase(&key[..key.len() - last.len()])
            {
                return None;
            }
            Some(field)
        })
}

/// A logger's namespaced key (`train/CrossEntropyLoss`, `throughput/device/tokens_per_second`,
/// `optim/total_grad_norm`): its last part, a device's tokens per GPU.
fn namespaced(key: &str) -> Option<Field> {
    let (space, last) = key.rsplit_once('/')?;
    // `s/epoch`, `img/s`: a rate's unit, not a namespace.
    if space.len() < 3 || last.len() < 3 {
        return None;
    }
    // `global_step/max_steps: "1/438"` (ms-swift): the step over the run's steps.
    if field_of(space) == Some(Field::Step) && field_of(last) == Some(Field::TotalSteps) {
        return Some(Field::Position);
    }
    let field = match last.to_ascii_lowercase().as_str() {
        "crossentropyloss" | "ce_loss" => Field::Loss(3),
        "batches_per_second" | "steps_per_second" => Field::ItersPerS,
        "total_grad_norm" => Field::GradNorm,
        _ => field_of(last)?,
    };
    Some(match field {
        Field::TokensPerS if space.split('/').any(|s| s == "device" || s == "gpu") => {
            Field::TokensPerGpuS
        }
        // Running totals (`throughput/total_tokens`) and others: not a step's figure.
        Field::Step | Field::Total | Field::Epoch => return None,
        f => f,
    })
}

/// `Time(100 iters)`, `time (50 steps)`: a time over the steps the key counts.
fn interval(key: &str) -> Option<Field> {
    let (name, inner) = key.strip_suffix(')')?.split_once('(')?;
    let (n, what) = inner.trim().split_once(' ')?;
    let n: u32 = n.parse().ok().filter(|n| *n > 0)?;
    if !matches!(
        what.trim().to_ascii_lowercase().as_str(),
        "iter" | "iters" | "iteration" | "iterations" | "step" | "steps" | "batch" | "batches"
    ) {
        return None;
    }
    match field_of(name.trim())? {
        Field::StepTime(unit) => Some(Field::IntervalTime(n, unit)),
        _ => None,
    }
}

/// Words before `time` that make it one phase's time.
fn names_a_phase(words: &str) -> bool {
    const PHASES: &[&str] = &[
        "train",
        "training",
        "generate",
        "generation",
        "gen",
        "rollout",
        "forward",
        "fwd",
        "backward",
        "bwd",
        "optimizer",
        "optim",
        "gather",
        "eval",
        "evaluation",
        "inference",
        "others",
        "other",
        "update",
        "reward",
        "ref",
        "critic",
        "actor",
    ];
    words
        .split(|c: char| !c.is_ascii_alphanumeric())
        .any(|w| PHASES.iter().any(|p| w.eq_ignore_ascii_case(p)))
}

/// Maps a key as frameworks print it to the figure it names.
pub fn field_of(key: &str) -> Option<Field> {
    let mut buf = [0u8; 72];
    let raw = key.as_bytes();
    if raw.len() > buf.len() {
        return None;
    }
    if !key.is_ascii() {
        return chinese(key);
    }
    // `StepTime`, `TrainTime`, `DataTime`: a name in camel case is its words joined by `_`.
    let mut len = 0;
    for (i, &c) in raw.iter().enumerate() {
        let hump = c.is_ascii_uppercase() && i > 0 && raw[i - 1].is_ascii_lowercase();
        if hump {
            *buf.get_mut(len)? = b'_';
            len += 1;
        }
        *buf.get_mut(len)? = match c {
            b' ' | b'-' => b'_',
            c => c.to_ascii_lowercase(),
        };
        len += 1;
    }
    use Field::*;
    Some(match &buf[..len] {
        b"step" | b"iter" | b"iteration" | b"global_step" | b"steps" | b"num_updates" | b"it"
        | b"batch_index" | b"batch_idx" | b"iters" | b"step_#" | b"up." | b"global_steps"
        | b"current_steps" | b"current_step" | b"cur_step" | b"cur_iter" => Step,
        b"total" => Total,
        b"[position]" => Position,
        b"total_steps"
        | b"max_steps"
        | b"total_optimization_steps"
        | b"train_iters"
        | b"max_iters"
        | b"max_iter"
        | b"total_iters"
        | b"num_training_steps"
        | b"num_iterations"
        | b"train_steps" => TotalSteps,
        b"epoch" | b"ep" => Epoch,
        b"time" | b"step_time" | b"batch_time" | b"iter_time" | b"time_per_batch"
        | b"time_per_step" | b"time_per_iter" | b"iteration_time" | b"time_consumption"
        // PaddlePaddle's toolkits: a step's own time, or the mean over the steps since the
        // last print (`avg_`): a per-step figure either way.
        | b"batch_cost" | b"avg_batch_cost" | b"iter_cost"
        // dllogger's `took  0.92 s`.
        | b"took" => StepTime(Unit::S),
        // MindSpore's `per step time: 123.4 ms`, mindformers' `per_step_time: 1432ms`.
        b"per_step_time" | b"per_iter_time" => StepTime(Unit::Ms),
        b"train_time" | b"elapsed" | b"elapsed_time" | b"time_elapsed" | b"training_time"
        | b"wall" | b"total_time" | b"total_used_time" | b"cost_time" | b"time_elapsed_(s)" => {
            Elapsed(Unit::S)
        }
        b"step_avg" | b"avg_step_time" | b"avg_time" | b"time_avg" | b"avg_iter_time"
        | b"step_time_avg" => AvgStepTime(Unit::S),
        b"elapsed_time_per_iteration_(ms)" | b"step_time_ms" | b"iter_time_ms" | b"time_ms" => {
            StepTime(Unit::Ms)
        }
        b"elapsed_time_per_iteration_ms" => StepTime(Unit::Ms),
        // DeepSpeed-Chat's whole RLHF step: generation and training; verl's.
        b"e2e_latency" | b"e2e_time" | b"e2e_step_time" | b"timing_s/step"
        // NeMo's MLPerf callbacks.
        | b"train_step_time" | b"train_step_timing"
        | b"perf/time_per_step" => StepTime(Unit::S),
        // verl: tokens over the step's time and the GPUs.
        b"perf/throughput" => TokensPerGpuS,
        b"iter_time_(s)" | b"step_time_s" => StepTime(Unit::S),
        b"data_time" | b"data" | b"data_load_time" | b"dataload_time" | b"dataloader_time"
        // PaddlePaddle's toolkits: the wait for the batch, its own or the mean since the
        // last print.
        | b"reader_cost" | b"avg_reader_cost" | b"data_cost" | b"data_s" | b"loader_time"
        | b"data_loading_time" | b"rtime" | b"reader_time" => DataTime(Unit::S),
        b"data_time_ms" | b"data_ms" => DataTime(Unit::Ms),
        b"s/it" | b"ms/step" | b"s/step" | b"us/step" | b"ms/it" | b"ms/iter" | b"s/iter"
        | b"sec/step" | b"sec/iter" | b"ms/batch" | b"s/batch" => TimePerStep,
        b"samples/s"
        | b"samples/sec"
        | b"samples_per_second"
        | b"samples_per_sec"
        | b"samples_per_s"
        | b"samples/second"
        | b"samples_per_second_per_gpu"
        | b"sps"
        // DeepSpeed's `CurrSamplesPerSec`, `SamplesPerSec`.
        | b"curr_samples_per_sec"
        | b"cur_samples_per_sec"
        | b"samples_per_second_(s)"
        | b"img/s"
        | b"images/s"
        | b"imgs/s"
        | b"throughput"
        | b"instance/sec"
        | b"instances/sec"
        | b"instances/s"
        | b"images/sec"
        | b"imgs/sec"
        | b"img/sec"
        | b"examples/sec"
        | b"examples/s"
        | b"examples_per_sec"
        | b"samples_per_sec_per_gpu"
        | b"s/sec"
        | b"utts/s"
        | b"utt/s"
        // A rate whose unit says what it counts (`ips: 259.4 samples/s`, `ips: 843 tokens/s`,
        // `Speed: 26.4 steps/s`): samples unless the unit says otherwise (`apply`).
        | b"ips"
        | b"ips_total"
        | b"speed" => SamplesPerS,
        b"it/s" | b"iters/s" | b"iter/s" | b"steps/s" | b"steps_per_second" | b"ups" | b"step/s"
        | b"it/sec" | b"iters/sec" | b"u/sec" | b"updates/s" | b"batches/s" | b"global_step/sec" => {
            ItersPerS
        }
        b"batch_size"
        | b"bs"
        | b"bsz"
        | b"batch"
        | b"per_device_train_batch_size"
        | b"instantaneous_batch_size_per_device"
        | b"micro_batch_size"
        | b"micro_batch_size_b"
        // EAST's `mini-batch is [2/1600]`: a size, or with `/` a position (`kv::apply`).
        | b"mini_batch"
        | b"device_train_batch_size"
        | b"batch_size_per_gpu"
        | b"batch_size_per_device"
        | b"train_micro_batch_size_per_gpu"
        // mmcv's config dump: images per GPU.
        | b"samples_per_gpu"
        | b"imgs_per_gpu" => BatchSize,
        // Whole-job batches: detectron2's images per step over all GPUs, DeepSpeed's
        // `train_batch_size`, Hugging Face's header.
        b"global_batch_size"
        | b"global_train_batch_size"
        | b"ims_per_batch"
        | b"train_batch_size"
        | b"total_batch_size"
        | b"effective_batch_size"
        | b"total_train_batch_size"
        | b"total_train_batch_size_(w._parallel,_distributed_&_accumulation)" => GlobalBatch,
        b"gradient_accumulation_steps"
        | b"gradient_accumulation"
        | b"grad_accum"
        | b"grad_accum_steps"
        | b"accumulation_steps"
        | b"accum_steps" => GradAccum,
        b"seq_length" | b"seq_len" | b"sequence_length" | b"max_seq_length" | b"max_seq_len"
        | b"train_seq_len" | b"train_max_seq_len" | b"block_size" | b"context_length"
        | b"sequence_length_t" => SeqLen,
        b"tokens_per_iteration_will_be"
        | b"tokens_per_iteration"
        | b"tokens_per_step"
        | b"tokens_per_batch"
        | b"total_desired_batch_size" => TokensPerStep,
        b"loss" => Loss(4),
        // Names of the training loss that say how it was measured: ranked under `loss`, so a
        // line with both keeps `loss`.
        b"batch_loss" | b"avg_loss" | b"cross_entropy" | b"xent" | b"celoss" | b"ce_loss" => {
            Loss(1)
        }
        // BasicSR's pixel loss, its only loss in a restoration run.
        b"l_pix" => Loss(2),
        b"train_loss" | b"lm_loss" | b"total_loss" | b"train/loss" | b"lm_loss_value"
        | b"reduced_train_loss"
        // RLHF: the actor's (policy) loss is the one trained.
        | b"act_loss" | b"actor_loss" | b"actor/pg_loss" | b"actor/loss"
        // A GAN: the generator is the model trained for the output; the discriminator judges it.
        | b"generator_loss" | b"gen_loss" | b"g_loss" | b"loss_g" => Loss(3),
        b"train_loss_step" | b"loss_step" | b"train/loss_step" => Loss(2),
        b"lr" | b"learning_rate" | b"learning_rate_(lr)" => Lr,
        b"grad_norm" | b"gnorm" | b"gradient_norm" | b"grad_norm_total" => GradNorm,
        b"loss_scale" | b"scale" | b"loss_scaler" => LossScale,
        b"tokens_per_sec"
        | b"tokens/s"
        | b"tps"
        | b"wps"
        | b"tokens_per_second"
        | b"tok/s"
        | b"tok/sec"
        | b"tokens/sec"
        | b"tks/s"
        | b"words/s"
        | b"words/sec" => TokensPerS,
        b"tgs" | b"tokens_per_gpu_per_second_tgs" | b"tokens_per_gpu_per_second_(tgs)" => {
            TokensPerGpuS
        }
        b"mfu" | b"mfu_%" | b"mfu(%)" => Mfu,
        b"memory" | b"mem" | b"max_mem" | b"gpu_mem" | b"max_memory" | b"memory_mb" => {
            Memory(Unit::MiB)
        }
        b"max_mem_allocated" | b"memory_gb" | b"mem_gb" => Memory(Unit::GiB),
        b"eta" | b"estimated_time" | b"remaining_time" | b"time_left" | b"left_time"
        | b"time_remaining" | b"eta_time" => Eta,
        b"num_workers"
        | b"workers"
        | b"dataloader_num_workers"
        | b"num_data_workers"
        | b"workers_per_gpu" => NumWorkers,
        b"pin_memory" | b"dataloader_pin_memory" => PinMemory,
        // Old PaddlePaddle's `Pass 3, batch 20`: an epoch.
        b"pass" => Epoch,
        b"amp_dtype" | b"mixed_precision" | b"precision" | b"dtype" | b"autocast_dtype" => AmpDtype,
        b"fp16" | b"bf16" | b"amp" => AmpDtype,
        b"gradient_checkpointing"
        | b"grad_checkpointing"
        | b"activation_checkpointing"
        | b"use_checkpoint"
        | b"checkpoint_activations" => GradientCheckpointing,
        b"cudnn.benchmark"
        | b"cudnn_benchmark"
        | b"torch.backends.cudnn.benchmark"
        | b"benchmark" => CudnnBenchmark,
        b"world_size" | b"nproc" | b"num_gpus" | b"ngpus" | b"gpus" | b"num_processes"
        | b"gpu_number" => WorldSize,
        b"nnodes" | b"num_nodes" | b"trainer.nnodes" => Nodes,
        b"n_gpus_per_node" | b"nproc_per_node" | b"gpus_per_node" | b"trainer.n_gpus_per_node" => {
            GpusPerNode
        }
        // mmcv's config: `gpu_ids = range(0, 2)`, `gpu_ids = [0, 1]`.
        b"gpu_ids" => GpuIds,
        b"hits" | b"cache_hits" => CacheHits,
        b"misses" | b"cache_misses" => CacheMisses,
        b"hit_rate" | b"cache_hit_rate" | b"hitrate" => CacheHitRate,
        _ => return None,
    })
}

/// The Chinese names of the figures (our users print them: `损失: 2.31`, `学习率=1e-4`,
/// `数据加载耗时: 0.8s`), matched whole after the ASCII table has had its turn.
fn chinese(key: &str) -> Option<Field> {
    use Field::*;
    let key = key.trim();
    Some(match key {
        "步" | "步数" | "迭代" | "迭代次数" | "当前步" | "全局步" => Step,
        "总步数" | "最大步数" | "总迭代次数" => TotalSteps,
        "轮" | "轮次" | "轮数" | "周期" => Epoch,
        "耗时" | "每步耗时" | "单步耗时" | "迭代耗时" | "每步时间" | "步耗时" | "批次耗时" => {
            StepTime(Unit::S)
        }
        "数据时间" | "数据耗时" | "数据加载时间" | "数据加载耗时" | "读取耗时" => {
            DataTime(Unit::S)
        }
        "吞吐" | "吞吐量" | "样本每秒" | "样本/秒" => SamplesPerS,
        "损失" | "训练损失" | "损失值" => Loss(3),
        "学习率" => Lr,
        "梯度范数" => GradNorm,
        "显存" | "显存占用" => Memory(Unit::MiB),
        "批大小" | "批量大小" | "批次大小" => BatchSize,
        "剩余时间" | "预计剩余时间" => Eta,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use crate::parse::Parser;
    use crate::parse::record::{Record, StepRecord};

    fn step(line: &str) -> StepRecord {
        let mut out = Vec::new();
        Parser::default().parse(line.as_bytes(), &mut out);
        out.into_iter()
            .find_map(|r| match r {
                Record::Step(s) => Some(*s),
                _ => None,
            })
            .unwrap_or_else(|| panic!("no step in {line}"))
    }

    /// PaddleClas's and PaddleDetection's words: `batch_cost` the step, `reader_cost` and
    /// `data_cost` the wait for data, `ips` a throughput whose unit says what it counts.
    #[test]
    fn paddles_costs_and_ips_are_the_step_the_data_wait_and_the_throughput() {
        let s = step(
            "[Train][Epoch 1/400][Iter: 10/98]lr(LinearWarmup): 0.00002245, CELoss: 6.93595, loss: 6.93595, batch_cost: 0.49343s, reader_cost: 0.00027, ips: 259.40864 samples/s, eta: 5:22:17",
        );
        assert_eq!(s.step_time_ms, Some(493.43));
        assert_eq!(s.data_time_ms, Some(0.27));
        assert_eq!(s.samples_per_s, Some(259.40864));
        assert_eq!(s.loss, Some(6.93595));
        let s = step(
            "[train] epoch: [0/1], batch: [1/10000], loss: 10.982267380, avg_batch_cost: 0.73793 sec, speed: 1.36 step/s, ips_total: 5551 tokens/s, ips: 5551 tokens/s,  learning rate: 4.68750e-08",
        );
        assert_eq!(s.step_time_ms, Some(737.93));
        assert_eq!(s.iters_per_s, Some(1.36));
        assert_eq!(s.tokens_per_s, Some(5551.0));
        assert_eq!(s.samples_per_s, None);
    }

    /// A rate's unit, written apart from its multiplier (`122.0K tks/s`), decides what it
    /// counts.
    #[test]
    fn a_rates_unit_says_what_it_counts() {
        let s =
            step("[step 249]\tmlm_loss=9.24962\tthroughput=122.0K tks/s\tlr=0.0000025 time=163.24");
        assert_eq!(s.tokens_per_s, Some(122_000.0));
        assert_eq!(s.samples_per_s, None);
        let s = step("Epoch[0] Batch [49]\tSpeed: 1934.811369 samples/sec\taccuracy=0.868184");
        assert_eq!(s.samples_per_s, Some(1934.811369));
    }

    /// MindSpore's `loss is`, and a loss named for how it is measured ranked under `loss`.
    #[test]
    fn a_figure_named_with_is_and_the_losses_by_rank() {
        let s = step("epoch: 1 step: 100, loss is 2.3016");
        assert_eq!((s.step, s.loss), (Some(100), Some(2.3016)));
        let s = step("Step 50/100000; acc:   2.15; ppl: 11344.46; xent: 9.34; lr: 0.00001");
        assert_eq!((s.step, s.loss), (Some(50), Some(9.34)));
    }

    /// A count written `Step #N`, at the end of a line too.
    #[test]
    fn a_numbered_count_is_the_step() {
        let s = step("Step #120: rate 0.000500, accuracy 5.00%, cross entropy 2.508803");
        assert_eq!((s.step, s.loss), (Some(120), Some(2.508803)));
        let s = step("loss=2.5 Step #7");
        assert_eq!((s.step, s.loss), (Some(7), Some(2.5)));
    }

    /// Shapes of the second fresh batch: a figure at a count (`Loss at step N: V`), a time
    /// over the steps its key counts, a unit written apart, a clock where a length would be,
    /// a batch numbered beside its epoch, Open MPI's tag and a level's ` - `.
    #[test]
    fn counts_and_lengths_as_the_second_batch_wrote_them() {
        let s = step("2017-08-18 02:43:53,914:\tLoss at step 120: 8.499695");
        assert_eq!((s.step, s.loss), (Some(120), Some(8.499695)));
        let s = step(
            "[HCTR][20:49:17.111][INFO][RK0][main]: Iter: 100 Time(100 iters): 0.525023s Loss: 0.132315 lr:0.004",
        );
        assert_eq!(s.step, Some(100));
        assert!((s.step_time_ms.unwrap() - 5.25023).abs() < 1e-9);
        let s = step(
            "Epoch:[0/1] [1184/75869]  eta: 0:05:57  loss: 0.1354  step_time: 4.7864 ms  lr: 10.341818",
        );
        assert_eq!(s.step_time_ms, Some(4.7864));
        let s = step(r#"step 10 loss 2.5 time_ms 1684443437908"#);
        assert_eq!(s.step_time_ms, None);
        let s = step(
            "2023-09-12 18:13:31,385 INFO [train.py:888] (0/2) Epoch 1, batch 50, loss[loss=0.5993, simple_loss=1.199], batch size: 51, lr: 4.4e-02",
        );
        assert_eq!(
            (s.epoch, s.step, s.batch_size),
            (Some(1.0), Some(50), Some(51.0))
        );
        let s = step(
            "[1,0]<stderr>:INFO:root:[Epoch 0][Batch 99], Speed: 658.447 samples/sec, RPN_Conf=0.280",
        );
        assert_eq!(
            (s.epoch, s.step, s.samples_per_s),
            (Some(0.0), Some(99), Some(658.447))
        );
        let s = step(
            "2018-10-11 09:16:49,200 INFO - Epoch[5] Batch [0-20]\tSpeed: 25.77 samples/sec\tM0_RPNAcc=0.996745",
        );
        assert_eq!(
            (s.epoch, s.step, s.samples_per_s),
            (Some(5.0), Some(20), Some(25.77))
        );
    }

    /// The figures' Chinese names, as users print them.
    #[test]
    fn chinese_names_are_the_same_figures() {
        let s = step("步数: 120, 损失: 2.31, 学习率: 0.0001, 耗时: 0.52s, 数据加载耗时: 0.11s");
        assert_eq!(s.step, Some(120));
        assert_eq!(s.loss, Some(2.31));
        assert_eq!(s.lr, Some(0.0001));
        assert_eq!(s.step_time_ms, Some(520.0));
        assert_eq!(s.data_time_ms, Some(110.0));
    }
}
