//! Failure and milestone messages inside training logs: CUDA OOM, killed DataLoader workers,
//! NCCL watchdog timeouts, torchrun failures, tracebacks, loss-scale overflows, checkpoints.

use std::sync::LazyLock;

use aho_corasick::AhoCorasick;

use super::push_event;
use super::record::{EventKind, Record};

/// Phrases and the event each one marks. Case matters: these are the frameworks' own words.
const PHRASES: &[(&str, EventKind)] = &[
    ("CUDA out of memory", EventKind::CudaOom),
    ("OutOfMemoryError", EventKind::CudaOom),
    ("DataLoader worker (pid", EventKind::DataloaderKilled),
    (
        "Watchdog caught collective operation timeout",
        EventKind::NcclTimeout,
    ),
    ("ChildFailedError", EventKind::TorchrunFailure),
    ("failed (exitcode:", EventKind::TorchrunFailure),
    ("Traceback (most recent call last)", EventKind::Traceback),
    ("OVERFLOW!", EventKind::LossScaleOverflow),
    ("overflow detected", EventKind::LossScaleOverflow),
    ("Gradient overflow", EventKind::LossScaleOverflow),
    ("aving checkpoint", EventKind::Checkpoint),
    ("aved checkpoint", EventKind::Checkpoint),
    ("saving model to", EventKind::Checkpoint),
    ("aving model checkpoint", EventKind::Checkpoint),
    ("end of epoch", EventKind::EpochEnd),
    ("emory critical", EventKind::MemoryCritical),
    // Our users' own memory monitor: `WARNING: System memory usage is critically high (91.2%)!`.
    ("usage is critically high", EventKind::MemoryCritical),
    ("EMORY CRITICAL", EventKind::MemoryCritical),
];

/// One automaton for every phrase, built once: a line is scanned once, not once per phrase.
static PHRASE_FINDER: LazyLock<Option<AhoCorasick>> =
    LazyLock::new(|| AhoCorasick::new(PHRASES.iter().map(|(p, _)| p)).ok());

/// Appends at most one event for the line: the earliest phrase in `PHRASES` wins, so a line
/// that names an OOM inside a traceback counts once, as the OOM.
pub fn detect(p: &str, out: &mut Vec<Record>) {
    let hay = p.as_bytes();
    // Every phrase holds a space; a line without one is a bar or a number, never a message.
    if hay.len() < 9 || memchr::memchr(b' ', hay).is_none() {
        return;
    }
    let Some(finder) = PHRASE_FINDER.as_ref() else {
        return;
    };
    let first = finder
        .find_overlapping_iter(hay)
        .map(|m| m.pattern().as_usize())
        .min();
    if let Some(&(_, kind)) = first.and_then(|i| PHRASES.get(i)) {
        push_event(kind, p, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(line: &str) -> Vec<EventKind> {
        let mut out = Vec::new();
        detect(line, &mut out);
        out.iter()
            .filter_map(|r| match r {
                Record::Event { kind, .. } => Some(*kind),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn each_family_is_recognised_once() {
        assert_eq!(
            kinds("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2 GiB"),
            [EventKind::CudaOom]
        );
        assert_eq!(
            kinds("RuntimeError: DataLoader worker (pid 19) is killed by signal: Killed."),
            [EventKind::DataloaderKilled]
        );
        assert_eq!(
            kinds("[Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1"),
            [EventKind::NcclTimeout]
        );
        assert_eq!(kinds("nothing to see here"), []);
        // Order of the list, not of the line: the OOM inside a traceback line is the OOM.
        assert_eq!(
            kinds("Traceback (most recent call last) ... CUDA out of memory"),
            [EventKind::CudaOom]
        );
    }
}
