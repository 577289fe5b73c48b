//! What a file is before it is read as a log: a training log is text, and a tracker's binary
//! files (a W&B transaction log, a SQLite store) or its own diagnostics log are not the
//! job's output. Read as text they gave thousands of false steps (a W&B run folder: 25,000
//! steps for a run of 760), so they are told apart from their first bytes and their names.

use std::io::Read;
use std::path::Path;

/// Bytes looked at: enough for a header and a few lines.
const HEAD_BYTES: usize = 4096;

/// Why `path` is no training log, if it is none: a binary file (named by its header where it
/// has one), or a tracker's own diagnostics log. A file that cannot be read is left to the
/// reader, which names the error.
pub fn not_a_log(path: &Path) -> Option<&'static str> {
    if let Some(why) = tool_log(path) {
        return Some(why);
    }
    let mut head = Vec::with_capacity(HEAD_BYTES);
    std::fs::File::open(path)
        .ok()?
        .take(HEAD_BYTES as u64)
        .read_to_end(&mut head)
        .ok()?;
    binary(&head)
}

/// A binary file by its first bytes: a known header, or control bytes no text holds (a log
/// keeps its tabs, line ends and terminal escapes; a few stray NULs from a crash do not make
/// it binary).
fn binary(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"SQLite format 3\0") {
        return Some("a SQLite database (an MLflow or Trackio store)");
    }
    if head.starts_with(b":W&B") {
        return Some("a W&B transaction log (.wandb)");
    }
    if head.starts_with(b":SWL") {
        return Some("a SwanLab run file");
    }
    let control = head
        .iter()
        .filter(|&&b| b < 0x20 && !matches!(b, b'\t' | b'\n' | b'\r' | 0x1b | 0x08 | 0x0c))
        .count();
    (head.len() >= 64 && control * 8 > head.len()).then_some("a binary file")
}

/// The name of the folder `p`, if it has one.
fn folder(p: Option<&Path>) -> Option<&str> {
    p.and_then(Path::file_name).and_then(|n| n.to_str())
}

/// A tracker's own diagnostics log (W&B's `debug.log`, `debug-internal.log` and
/// `debug-core.log` in a run folder, SwanLab's `debug/debug.log`): the library's messages
/// about itself, not the job's output.
fn tool_log(path: &Path) -> Option<&'static str> {
    let name = path.file_name()?.to_str()?;
    let run = folder(path.parent().and_then(Path::parent)).unwrap_or_default();
    if name == "debug.log" && folder(path.parent()) == Some("debug") && run.starts_with("run-") {
        return Some("SwanLab's own diagnostics log");
    }
    // `wandb/...`, or a W&B run folder given itself: `run-<stamp>-<id>/logs/debug.log`.
    let logs = path.parent();
    let run = folder(logs.and_then(Path::parent)).unwrap_or_default();
    let in_wandb = path.components().any(|c| c.as_os_str() == "wandb")
        || folder(logs) == Some("logs")
            && (run.starts_with("run-") || run.starts_with("offline-run-"));
    (in_wandb && matches!(name, "debug.log" | "debug-internal.log" | "debug-core.log"))
        .then_some("W&B's own diagnostics log")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trackers_binary_files_are_no_logs() {
        assert!(binary(b":W&B\x00\x01\x00\x00\x00\x00\x00\x00").is_some());
        assert!(binary(b"SQLite format 3\0\x10\x00").is_some());
        let mut block = vec![0u8; 512];
        block[..5].copy_from_slice(b"\x01\x02abc");
        assert_eq!(binary(&block), Some("a binary file"));
    }

    #[test]
    fn text_with_escapes_and_a_few_nuls_is_a_log() {
        let mut log = b"\x1b[1m   --> STEP: 24/36\x1b[0m\r\n\tloss: 0.5\n".repeat(20);
        log.extend_from_slice(&[0; 8]);
        assert_eq!(binary(&log), None);
    }

    #[test]
    fn wandbs_own_logs_are_no_logs_of_the_job() {
        let run = Path::new("wandb/run-20240101_000000-abc/logs/debug-internal.log");
        assert!(tool_log(run).is_some());
        assert!(tool_log(Path::new("wandb/latest-run/files/output.log")).is_none());
        assert!(tool_log(Path::new("run-20240101_000000-abc/logs/debug.log")).is_some());
        assert!(tool_log(Path::new("exp/debug.log")).is_none());
        assert!(tool_log(Path::new("runs/run-3/debug.log")).is_none());
    }
}
