//! One file on disk: read whole for the report (streamed in fixed chunks, so a 50 GB log costs
//! 1 MiB), and the facts the follower judges it by: its identity, what a stat of it means
//! (grown, truncated, replaced, gone), and the copy a copytruncate rotation left beside it.

use std::fs::{self, File, Metadata};
use std::io::{self, Read, Seek, SeekFrom};
use std::ops::ControlFlow;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::SystemTime;

use super::spec::is_rotated_sibling;
use super::split::LineSplitter;

/// Chunk size: large enough that syscalls vanish next to parsing, small enough to stay cached.
const CHUNK_BYTES: usize = 1 << 20;
/// How much of what we read last is kept to recognise the copy a copytruncate made.
pub(crate) const TAIL_BYTES: usize = 256;

/// What one file held, for the report's summary line.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadStats {
    /// Bytes read.
    pub bytes: u64,
    /// Physical lines (`\n`-terminated, plus an unterminated last one).
    pub lines: u64,
    /// Lines longer than `MAX_LINE_BYTES`, handed on cut.
    pub cut_lines: u64,
}

/// Reads a whole file as lines, so the report sees exactly what following it would have.
///
/// The file is opened read-only; errors name the file.
pub fn read_lines(path: &Path, emit: &mut dyn FnMut(u64, &[u8])) -> io::Result<ReadStats> {
    let named = |e: io::Error| io::Error::new(e.kind(), format!("{}: {e}", path.display()));
    let mut file = File::open(path).map_err(named)?;
    let mut splitter = LineSplitter::new();
    let mut buf = vec![0u8; CHUNK_BYTES];
    let mut bytes = 0u64;
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(named(e)),
        };
        bytes += n as u64;
        splitter.push(&buf[..n], emit);
    }
    splitter.finish(emit);
    Ok(ReadStats {
        bytes,
        lines: splitter.lines(),
        cut_lines: splitter.cut_lines(),
    })
}

/// When `path` was last written, in Unix seconds, or now when the file system cannot say: a
/// finished log's year-less timestamps are placed at or before it.
pub fn modified(path: &Path) -> f64 {
    let at = fs::metadata(path)
        .and_then(|m| m.modified())
        .unwrap_or_else(|_| SystemTime::now());
    at.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

/// Reads `len` bytes ending at `end`, leaving the position at `end`.
pub(crate) fn read_back(file: &mut File, end: u64, len: usize) -> io::Result<Vec<u8>> {
    let start = end
        .checked_sub(len as u64)
        .ok_or(io::ErrorKind::InvalidInput)?;
    let mut bytes = vec![0; len];
    file.seek(SeekFrom::Start(start))?;
    file.read_exact(&mut bytes)?;
    Ok(bytes)
}

/// Finds the copy a copytruncate left beside `path`: long enough, and holding the bytes we read
/// last just before `offset`. Returned positioned at `offset`, ready to read what we missed.
pub(crate) fn find_rotated_copy(path: &Path, offset: u64, tail: &[u8]) -> Option<File> {
    let base = path.file_name()?.to_string_lossy().into_owned();
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let mut best: Option<(SystemTime, File)> = None;
    for entry in fs::read_dir(dir).ok()?.flatten() {
        if !is_rotated_sibling(&base, &entry.file_name().to_string_lossy()) {
            continue;
        }
        let candidate = entry.path();
        let Ok(meta) = fs::metadata(&candidate) else {
            continue;
        };
        if !meta.is_file() || meta.len() < offset {
            continue;
        }
        let Ok(mut file) = File::open(&candidate) else {
            continue;
        };
        if read_back(&mut file, offset, tail.len()).ok().as_deref() != Some(tail) {
            continue;
        }
        // Several copies can match a short tail; the newest is the one just made.
        let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
        if best.as_ref().is_none_or(|(t, _)| modified > *t) {
            best = Some((modified, file));
        }
    }
    best.map(|(_, file)| file)
}

/// Which file a path names now: a change means it was replaced.
pub(crate) type FileId = (u64, u64);

/// The (device, inode) of a file, to notice the path now names another one.
#[cfg(unix)]
pub(crate) fn identity(meta: &Metadata) -> FileId {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

#[cfg(not(unix))]
pub(crate) fn identity(_meta: &Metadata) -> FileId {
    // Without inode numbers only truncation can be seen, not replacement.
    (0, 0)
}

/// One stat of the followed path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Probe {
    Missing,
    Present { id: FileId, size: u64 },
    NotAFile,
    Failed(String),
}

/// Stats the path (following symlinks, so a `latest.log` link that moves reads as a rotation).
pub(crate) fn probe(path: &Path) -> Probe {
    match fs::metadata(path) {
        Ok(meta) if meta.is_file() => Probe::Present {
            id: identity(&meta),
            size: meta.len(),
        },
        Ok(_) => Probe::NotAFile,
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
            ) =>
        {
            Probe::Missing
        }
        Err(e) => Probe::Failed(e.to_string()),
    }
}

/// What to do about one file after a stat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step {
    Absent,
    Unreadable(String),
    Open,
    Read,
    Truncated,
    Replaced,
    Gone,
}

/// The whole rotation policy, from what we hold (identity and offset) and what the path is now.
pub(crate) fn decide(held: Option<(FileId, u64)>, now: &Probe) -> Step {
    match (held, now) {
        (None, Probe::Missing) => Step::Absent,
        (None, Probe::Present { .. }) => Step::Open,
        (None, Probe::NotAFile) => Step::Unreadable("not a regular file".to_string()),
        (None, Probe::Failed(why)) => Step::Unreadable(why.clone()),
        (Some(_), Probe::Missing | Probe::NotAFile) => Step::Gone,
        (Some((id, _)), Probe::Present { id: now_id, .. }) if id != *now_id => Step::Replaced,
        (Some((_, offset)), Probe::Present { size, .. }) if *size < offset => Step::Truncated,
        // A failed stat (a network hiccup) says nothing about the handle we hold: keep reading.
        (Some(_), Probe::Present { .. } | Probe::Failed(_)) => Step::Read,
    }
}

/// Keeps the last `TAIL_BYTES` of everything read.
pub(crate) fn remember_tail(tail: &mut Vec<u8>, bytes: &[u8]) {
    if bytes.len() >= TAIL_BYTES {
        tail.clear();
        tail.extend_from_slice(&bytes[bytes.len() - TAIL_BYTES..]);
    } else {
        tail.extend_from_slice(bytes);
        let excess = tail.len().saturating_sub(TAIL_BYTES);
        tail.drain(..excess);
    }
}

/// Reads `file` from its position to its end, handing each chunk on; stops early on `stop`.
pub(crate) fn pump(
    file: &mut File,
    buf: &mut [u8],
    stop: &AtomicBool,
    mut on_chunk: impl FnMut(&[u8]) -> ControlFlow<()>,
) -> io::Result<ControlFlow<()>> {
    while !stop.load(Ordering::Relaxed) {
        match file.read(buf) {
            Ok(0) => return Ok(ControlFlow::Continue(())),
            Ok(n) if on_chunk(&buf[..n]).is_break() => break,
            Ok(_) => {}
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(ControlFlow::Break(()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: FileId = (1, 10);
    const B: FileId = (1, 11);

    #[test]
    fn reads_every_record_and_counts() -> io::Result<()> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("train.log");
        std::fs::write(&path, b"a\r\nb\rc\nlast")?;
        let mut got = Vec::new();
        let stats = read_lines(&path, &mut |l, r| got.push((l, r.to_vec())))?;
        let want: Vec<(u64, Vec<u8>)> = vec![
            (1, b"a".to_vec()),
            (2, b"b".to_vec()),
            (2, b"c".to_vec()),
            (3, b"last".to_vec()),
        ];
        assert_eq!(got, want);
        assert_eq!(
            stats,
            ReadStats {
                bytes: 11,
                lines: 3,
                cut_lines: 0
            }
        );
        Ok(())
    }

    #[test]
    fn a_missing_file_error_names_it() {
        let err = read_lines(Path::new("/nonexistent/steptop.log"), &mut |_, _| {})
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(err.contains("/nonexistent/steptop.log"), "{err}");
    }

    #[test]
    fn decide_covers_every_rotation_case() {
        let present = |id, size| Probe::Present { id, size };
        assert_eq!(decide(None, &Probe::Missing), Step::Absent);
        assert_eq!(decide(None, &present(A, 5)), Step::Open);
        assert!(matches!(
            decide(None, &Probe::NotAFile),
            Step::Unreadable(_)
        ));
        assert_eq!(decide(Some((A, 5)), &present(A, 5)), Step::Read);
        assert_eq!(decide(Some((A, 5)), &present(A, 9)), Step::Read);
        assert_eq!(decide(Some((A, 5)), &present(A, 4)), Step::Truncated);
        assert_eq!(decide(Some((A, 5)), &present(B, 50)), Step::Replaced);
        assert_eq!(decide(Some((A, 5)), &Probe::Missing), Step::Gone);
        assert_eq!(
            decide(Some((A, 5)), &Probe::Failed("EIO".into())),
            Step::Read
        );
    }

    #[test]
    fn the_rotated_copy_must_hold_what_we_read_last() -> io::Result<()> {
        let dir = tempfile::tempdir()?;
        let log = dir.path().join("train.log");
        fs::write(dir.path().join("train.log.2"), b"old run\nolder\n")?;
        fs::write(dir.path().join("train.log.1.gz"), b"one\ntwo\nthree\n")?;
        fs::write(dir.path().join("train.log.1"), b"one\ntwo\nthree\n")?;
        let mut copy = find_rotated_copy(&log, 8, b"two\n").ok_or(io::ErrorKind::NotFound)?;
        let mut rest = String::new();
        copy.read_to_string(&mut rest)?;
        assert_eq!(rest, "three\n");
        assert!(find_rotated_copy(&log, 8, b"xyz\n").is_none());
        assert!(find_rotated_copy(&log, 99, b"").is_none());
        Ok(())
    }

    #[test]
    fn tail_keeps_the_last_bytes_read() {
        let mut tail = Vec::new();
        remember_tail(&mut tail, b"abc");
        remember_tail(&mut tail, &[b'x'; TAIL_BYTES - 1]);
        assert_eq!(tail.len(), TAIL_BYTES);
        assert_eq!(tail[0], b'c');
        remember_tail(&mut tail, &[b'y'; TAIL_BYTES + 7]);
        assert_eq!(tail, vec![b'y'; TAIL_BYTES]);
    }
}
