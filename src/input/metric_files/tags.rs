//! What a metric's name means: the common names of Hugging Face, Lightning, mmengine, timm and
//! plain loops, by the last part of the name (`train/loss`, `train_loss_step`, `lr-AdamW`).
//! Evaluation figures (`val/loss`, `eval_loss`) and epoch aggregates (`train_loss_epoch`) are
//! not a step's. Pure.

use crate::parse::record::StepRecord;
use crate::parse::vocabulary::{self, Field};

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Figure {
    Loss,
    Lr,
    GradNorm,
    /// Seconds, as TensorBoard scalars and mmengine's scalars give times.
    StepTime,
    DataTime,
    SamplesPerS,
    TokensPerS,
    /// MiB (mmengine's `memory`).
    Memory,
    Epoch,
}

/// Parts of a name that say it is not a training step's figure.
const NOT_TRAINING: [&str; 6] = ["val", "valid", "validation", "eval", "test", "predict"];

/// Whether a metric's name says it is an evaluation's (`val_loss`, `eval/accuracy`,
/// `validation/epoch_loss`).
pub fn is_evaluation(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    lower.split(['/', '.', ':']).any(|p| {
        NOT_TRAINING
            .iter()
            .any(|n| p == *n || p.starts_with(&format!("{n}_")) || p.starts_with(&format!("{n}-")))
    })
}

/// Whether a metric's name is the training step a framework logs beside its figures
/// (`train/global_step`, Lightning's `trainer/global_step`, `iteration`), and how surely: the
/// lower, the surer (a global step over a plain `step`, which may be a loop's own). A
/// tracker's own row counter (W&B's `_step`) is none.
pub fn step_rank(name: &str) -> Option<u8> {
    if is_evaluation(name) {
        return None;
    }
    let lower = name.to_ascii_lowercase();
    Some(match last_part(&lower) {
        "global_step" | "globalstep" => 0,
        "update_step" | "updates" | "num_updates" | "train_step" => 1,
        "iteration" | "iterations" | "iter" => 2,
        "step" => 3,
        _ => return None,
    })
}

/// The figure a metric's name gives, if steptop reads it.
pub fn figure(name: &str) -> Option<Figure> {
    if is_evaluation(name) {
        return None;
    }
    let lower = name.to_ascii_lowercase();
    let parts: Vec<&str> = lower.split(['/', '.', ':']).collect();
    // Hugging Face's closing figures (`train/train_loss`, `train/train_samples_per_second`):
    // averages over the whole run, not a step's.
    if let [.., "train", last] = parts.as_slice()
        && last.starts_with("train_")
    {
        return None;
    }
    // Lightning's LearningRateMonitor: `lr-AdamW`, `lr-AdamW/pg1`.
    if parts[0].starts_with("lr-") || parts[0].starts_with("lr_") {
        return Some(Figure::Lr);
    }
    // The PyTorch tutorial's `Loss/train`: the figure first, the split after it.
    let last = match parts.as_slice() {
        [.., figure, "train" | "training"] => figure,
        [.., last] => last,
        [] => return None,
    };
    if last.ends_with("_epoch") {
        return None;
    }
    let last = last.strip_suffix("_step").unwrap_or(last);
    // This rank's own value (`train_loss_local`) is the figure as a one-rank log prints it.
    let last = last.strip_suffix("_local").unwrap_or(last);
    let last = last
        .strip_prefix("train_")
        .or_else(|| last.strip_prefix("training_"))
        .unwrap_or(last);
    Some(match last {
        "loss" | "total_loss" | "loss_total" | "lm_loss" => Figure::Loss,
        "lr" | "learning_rate" | "learning-rate" => Figure::Lr,
        "grad_norm" | "grad-norm" | "gradient_norm" | "grad_norm_total" => Figure::GradNorm,
        "time" | "step_time" | "iter_time" | "batch_time" | "time_per_step" => Figure::StepTime,
        "data_time" | "dataloader_time" => Figure::DataTime,
        "samples_per_second" | "samples_per_sec" | "samples/s" | "throughput" => {
            Figure::SamplesPerS
        }
        "tokens_per_second" | "tokens_per_sec" | "tokens/s" | "tps" => Figure::TokensPerS,
        "memory" | "max_memory" | "mem" | "max_mem" => Figure::Memory,
        "epoch" => Figure::Epoch,
        // The loss names logs print (`batch_loss`, an RLHF actor's `actor/pg_loss`, a GAN's
        // `generator_loss`) mean the same in a tracker.
        _ => return log_loss_rank(&lower, last).map(|_| Figure::Loss),
    })
}

/// The last part of a lower-cased name: `loss` of `train/loss`.
fn last_part(lower: &str) -> &str {
    lower.rsplit(['/', '.', ':']).next().unwrap_or_default()
}

/// The log vocabulary's rank of a lower-cased name that it reads as the loss, whole
/// (`actor/pg_loss`) or by its `last` part (`train/batch_loss`).
fn log_loss_rank(lower: &str, last: &str) -> Option<u8> {
    let rank = |name| match vocabulary::field_of(name)? {
        Field::Loss(rank) => Some(rank),
        _ => None,
    };
    rank(lower).or_else(|| rank(last))
}

/// How surely a name that gives the loss is the run's loss, ranked as logs' names are (`loss`
/// over `batch_loss`), so that a row with several keeps the surest.
pub fn loss_rank(name: &str) -> u8 {
    let lower = name.to_ascii_lowercase();
    log_loss_rank(&lower, last_part(&lower)).unwrap_or(LOSS_RANK_PLAIN)
}

/// The rank of the plain names (`loss`, `train/total_loss`): the log vocabulary's for `loss`.
const LOSS_RANK_PLAIN: u8 = 4;

/// Whether a training name is a part of the loss (`train/box_loss`, `loss_cls`): a run that
/// logs no whole loss logs it as its parts, and the loss is their sum (Ultralytics' is its box,
/// class and DFL parts added).
pub fn is_loss_part(name: &str) -> bool {
    if is_evaluation(name) {
        return false;
    }
    let lower = name.to_ascii_lowercase();
    let last = last_part(&lower);
    !last.ends_with("_epoch") && (last.ends_with("_loss") || last.starts_with("loss_"))
}

/// The figure a name gives: the user's own names first (`[tags]`), then the common ones.
pub fn figure_with(user: &[(String, Option<Figure>)], name: &str) -> Option<Figure> {
    match user.iter().find(|(n, _)| n == name) {
        Some((_, f)) => *f,
        None => figure(name),
    }
}

impl Figure {
    /// The names the config's `[tags]` table uses, `ignore` for a name to leave alone.
    pub const NAMES: [(&'static str, Option<Figure>); 10] = [
        ("loss", Some(Figure::Loss)),
        ("lr", Some(Figure::Lr)),
        ("grad-norm", Some(Figure::GradNorm)),
        ("step-time-s", Some(Figure::StepTime)),
        ("data-time-s", Some(Figure::DataTime)),
        ("samples-per-s", Some(Figure::SamplesPerS)),
        ("tokens-per-s", Some(Figure::TokensPerS)),
        ("memory-mib", Some(Figure::Memory)),
        ("epoch", Some(Figure::Epoch)),
        ("ignore", None),
    ];

    /// A `[tags]` value: Some(figure or None to ignore), or None for a name it does not know.
    pub fn parse(name: &str) -> Option<Option<Figure>> {
        Figure::NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, f)| *f)
    }
}

/// Puts one figure into a step's record, in the record's units.
pub fn set(rec: &mut StepRecord, f: Figure, v: f64) {
    let slot = match f {
        Figure::Loss => &mut rec.loss,
        Figure::Lr => &mut rec.lr,
        Figure::GradNorm => &mut rec.grad_norm,
        Figure::StepTime => {
            rec.step_time_ms = Some(v * 1000.0);
            return;
        }
        Figure::DataTime => {
            rec.data_time_ms = Some(v * 1000.0);
            return;
        }
        Figure::SamplesPerS => &mut rec.samples_per_s,
        Figure::TokensPerS => &mut rec.tokens_per_s,
        Figure::Memory => &mut rec.memory_mb,
        Figure::Epoch => &mut rec.epoch,
    };
    *slot = Some(v);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_common_names_of_each_framework_are_read_and_evaluation_is_not() {
        for (name, want) in [
            ("loss", Some(Figure::Loss)),
            ("train/loss", Some(Figure::Loss)),
            ("train_loss", Some(Figure::Loss)),
            ("train_loss_step", Some(Figure::Loss)),
            ("train_loss_local", Some(Figure::Loss)),
            ("Loss/train", Some(Figure::Loss)),
            ("Loss/test", None),
            ("train/learning_rate", Some(Figure::Lr)),
            ("lr-AdamW", Some(Figure::Lr)),
            ("lr-AdamW/pg1", Some(Figure::Lr)),
            ("train/grad_norm", Some(Figure::GradNorm)),
            ("data_time", Some(Figure::DataTime)),
            ("time", Some(Figure::StepTime)),
            ("memory", Some(Figure::Memory)),
            ("train/epoch", Some(Figure::Epoch)),
            ("val/loss", None),
            ("eval_loss", None),
            ("val_loss", None),
            ("test/accuracy", None),
            ("train_loss_epoch", None),
            ("train/train_loss", None),
            ("train/train_samples_per_second", None),
            ("accuracy/top1", None),
        ] {
            assert_eq!(figure(name), want, "{name}");
        }
        for (name, step) in [
            ("train/global_step", true),
            ("trainer/global_step", true),
            ("train/update_step", true),
            ("iteration", true),
            ("_step", false),
            ("val/step", false),
            ("steps_per_second", false),
        ] {
            assert_eq!(step_rank(name).is_some(), step, "{name}");
        }
    }
}
