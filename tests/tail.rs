//! The follower against real files in a temp directory: every promise `source::live` makes
//! (partial lines, `\r`, bad bytes, huge lines, truncation, copytruncate, rotation, deletion,
//! files that appear later), plus properties of the splitter under arbitrary chunking.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use steptop::{
    FILES_FOLLOWED, FileStatus, FollowOptions, InputSpec, LineSplitter, MAX_LINE_BYTES, TailEvent,
    read_lines, tail,
};

/// Generous, because CI machines are slow; a passing test never waits this long.
const DEADLINE: Duration = Duration::from_secs(10);

/// An owned copy of a `TailEvent`, to send across threads and compare.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Ev {
    Opened(usize, PathBuf),
    Status(usize, FileStatus),
    Record(usize, u64, Vec<u8>),
    CaughtUp(usize),
}

/// `follow` running on its own thread, its events collected as they come.
struct Follower {
    rx: mpsc::Receiver<Ev>,
    seen: Vec<Ev>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Result<(), String>>>,
}

impl Follower {
    fn start(inputs: &[&Path], opts: FollowOptions) -> Follower {
        let specs: Vec<InputSpec> = inputs
            .iter()
            .map(|p| InputSpec::parse(p.to_str().unwrap()).unwrap())
            .collect();
        let (tx, rx) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let stop_flag = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            tail(&specs, &opts, &stop_flag, &mut |event| {
                let owned = match event {
                    TailEvent::Opened { file, path } => Ev::Opened(file, path.to_path_buf()),
                    TailEvent::Status { file, status, .. } => Ev::Status(file, status.clone()),
                    TailEvent::Line {
                        file,
                        line_no,
                        bytes,
                    } => Ev::Record(file, line_no, bytes.to_vec()),
                    TailEvent::CaughtUp { file } => Ev::CaughtUp(file),
                    TailEvent::Waiting => return ControlFlow::Continue(()),
                };
                match tx.send(owned) {
                    Ok(()) => ControlFlow::Continue(()),
                    Err(_) => ControlFlow::Break(()),
                }
            })
        });
        Follower {
            rx,
            seen: Vec::new(),
            stop,
            thread: Some(thread),
        }
    }

    /// Collects events until `done` holds, failing the test at the deadline.
    fn wait_until(&mut self, what: &str, done: impl Fn(&[Ev]) -> bool) {
        let deadline = Instant::now() + DEADLINE;
        while !done(&self.seen) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(left) {
                Ok(ev) => self.seen.push(ev),
                Err(_) => panic!(
                    "timed out waiting for {what}; events so far: {:#?}",
                    self.seen
                ),
            }
        }
    }

    /// Waits until file `file` has given `n` records.
    fn wait_records(&mut self, file: usize, n: usize) {
        self.wait_until(&format!("{n} records from file {file}"), |evs| {
            records(evs, file).len() >= n
        });
    }

    /// Waits until the first read of `file` is over: with a slow poll and no inotify, the
    /// follower then sleeps until the next tick, so a test can change files behind its back.
    fn wait_caught_up(&mut self, file: usize) {
        self.wait_until("caught up", |evs| evs.contains(&Ev::CaughtUp(file)));
    }

    fn wait_status(&mut self, file: usize, status: FileStatus) {
        let want = Ev::Status(file, status);
        self.wait_until(&format!("{want:?}"), |evs| evs.contains(&want));
    }

    /// Stops the follower and returns every event it sent.
    fn finish(mut self) -> Vec<Ev> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            assert_eq!(thread.join().unwrap(), Ok(()));
        }
        self.seen.extend(self.rx.try_iter());
        std::mem::take(&mut self.seen)
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        // A failing test must not leave a thread spinning on its temp directory.
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Records of one file as (line number, lossy text).
fn records(evs: &[Ev], file: usize) -> Vec<(u64, String)> {
    evs.iter()
        .filter_map(|ev| match ev {
            Ev::Record(f, line, bytes) if *f == file => {
                Some((*line, String::from_utf8_lossy(bytes).into_owned()))
            }
            _ => None,
        })
        .collect()
}

fn texts(evs: &[Ev], file: usize) -> Vec<String> {
    records(evs, file)
        .into_iter()
        .map(|(_, text)| text)
        .collect()
}

fn position(evs: &[Ev], want: &Ev) -> usize {
    evs.iter()
        .position(|ev| ev == want)
        .unwrap_or_else(|| panic!("no {want:?} in {evs:#?}"))
}

fn append(path: &Path, bytes: &[u8]) {
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    file.write_all(bytes).unwrap();
}

fn lines(range: std::ops::RangeInclusive<u32>) -> String {
    range.map(|i| format!("step {i}\n")).collect()
}

fn step_texts(range: std::ops::RangeInclusive<u32>) -> Vec<String> {
    range.map(|i| format!("step {i}")).collect()
}

/// Poll often so the poll-only path is quick to test.
fn fast() -> FollowOptions {
    FollowOptions {
        poll: Duration::from_millis(50),
        ..FollowOptions::default()
    }
}

/// Poll-only with a period long enough that a test's few file operations land between two
/// looks, so it can tell which path (rotated copy, old handle) delivered a line.
fn slow_poll_only() -> FollowOptions {
    FollowOptions {
        poll: Duration::from_millis(400),
        use_notify: false,
        ..FollowOptions::default()
    }
}

fn rec(line: u64, text: &str) -> (u64, String) {
    (line, text.to_string())
}

#[test]
fn partial_line_is_held_until_completed() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("train.log");
    fs::write(&log, "a\nstep 1 lo").unwrap();
    let mut f = Follower::start(&[&log], fast());
    f.wait_caught_up(0);
    assert_eq!(records(&f.seen, 0), vec![rec(1, "a")]);
    append(&log, b"ss=2\n");
    f.wait_records(0, 2);
    let evs = f.finish();
    assert_eq!(records(&evs, 0), vec![rec(1, "a"), rec(2, "step 1 loss=2")]);
}

#[test]
fn crlf_and_tqdm_redraws_are_records_on_shared_lines() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("train.log");
    fs::write(&log, "x\r\n 10%|#  |\r 50%|## |\r100%|###|\ndone\n").unwrap();
    let mut f = Follower::start(&[&log], fast());
    f.wait_records(0, 5);
    let want = vec![
        rec(1, "x"),
        rec(2, " 10%|#  |"),
        rec(2, " 50%|## |"),
        rec(2, "100%|###|"),
        rec(3, "done"),
    ];
    assert_eq!(records(&f.finish(), 0), want);
}

#[test]
fn cr_ending_one_read_and_lf_starting_the_next_are_one_terminator() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("train.log");
    fs::write(&log, "").unwrap();
    let mut f = Follower::start(&[&log], fast());
    append(&log, b"x\r");
    // The record is out, so the follower has read up to the `\r` and no further.
    f.wait_records(0, 1);
    append(&log, b"\ny\n");
    f.wait_records(0, 2);
    assert_eq!(records(&f.finish(), 0), vec![rec(1, "x"), rec(2, "y")]);
}

#[test]
fn invalid_utf8_and_nul_bytes_pass_through() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("train.log");
    let raw: &[u8] = b"bad \xff\xfe \x00 nul";
    fs::write(&log, [raw, b"\n"].concat()).unwrap();
    let mut f = Follower::start(&[&log], fast());
    f.wait_records(0, 1);
    assert!(f.finish().contains(&Ev::Record(0, 1, raw.to_vec())));
}

#[test]
fn a_huge_line_is_cut_and_the_next_line_is_intact() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("train.log");
    let mut content = vec![b'x'; 5 << 20];
    content.extend_from_slice(b"\nnext\n");
    fs::write(&log, &content).unwrap();

    let mut f = Follower::start(&[&log], fast());
    f.wait_records(0, 2);
    let evs = f.finish();
    assert_eq!(
        evs.iter().filter(|e| matches!(e, Ev::Record(..))).count(),
        2
    );
    assert!(evs.contains(&Ev::Record(0, 1, vec![b'x'; MAX_LINE_BYTES])));
    assert!(evs.contains(&Ev::Record(0, 2, b"next".to_vec())));

    let mut got = Vec::new();
    let stats = read_lines(&log, &mut |line, bytes| got.push((line, bytes.len()))).unwrap();
    assert_eq!(got, vec![(1, MAX_LINE_BYTES), (2, 4)]);
    assert_eq!(
        (stats.bytes, stats.lines, stats.cut_lines),
        (content.len() as u64, 2, 1)
    );
}

#[test]
fn truncation_is_reported_and_the_file_read_again_from_zero() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("train.log");
    fs::write(&log, lines(1..=3)).unwrap();
    let mut f = Follower::start(&[&log], fast());
    f.wait_records(0, 3);
    fs::write(&log, "new\n").unwrap();
    f.wait_records(0, 4);
    let evs = f.finish();
    assert!(evs.contains(&Ev::Status(0, FileStatus::Truncated)));
    let mut want: Vec<_> = (1..=3).map(|i| rec(i, &format!("step {i}"))).collect();
    want.push(rec(1, "new"));
    assert_eq!(records(&evs, 0), want);
}

/// logrotate's copytruncate: copy to `train.log.1`, then truncate in place.
fn copytruncate(opts: FollowOptions) -> Vec<Ev> {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("train.log");
    fs::write(&log, lines(1..=5)).unwrap();
    let mut f = Follower::start(&[&log], opts);
    f.wait_caught_up(0);
    append(&log, lines(6..=10).as_bytes());
    fs::copy(&log, dir.path().join("train.log.1")).unwrap();
    OpenOptions::new()
        .write(true)
        .open(&log)
        .unwrap()
        .set_len(0)
        .unwrap();
    append(&log, lines(11..=12).as_bytes());
    f.wait_records(0, 12);
    let evs = f.finish();
    assert_eq!(
        texts(&evs, 0),
        step_texts(1..=12),
        "every line once, in order"
    );
    assert!(evs.contains(&Ev::Status(0, FileStatus::Truncated)));
    evs
}

#[test]
fn copytruncate_loses_no_line_and_reads_none_twice() {
    let evs = copytruncate(slow_poll_only());
    // Lines 6-10 were written after the follower's last look and before the truncation:
    // they can only have come from the copy, before the file was read again.
    let truncated = position(&evs, &Ev::Status(0, FileStatus::Truncated));
    let line_10 = evs
        .iter()
        .position(|e| matches!(e, Ev::Record(0, 10, _)))
        .unwrap();
    assert!(line_10 < truncated, "{evs:#?}");
    assert!(evs.contains(&Ev::Record(0, 1, b"step 11".to_vec())));
}

#[test]
fn copytruncate_with_inotify_loses_no_line_and_reads_none_twice() {
    copytruncate(fast());
}

/// Rename rotation: the old file is renamed away and a new one created at the path.
fn rename_rotation(opts: FollowOptions) -> Vec<Ev> {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("train.log");
    let staged = dir.path().join("staged");
    fs::write(&log, lines(1..=3)).unwrap();
    let mut f = Follower::start(&[&log], opts);
    f.wait_caught_up(0);
    append(&log, lines(4..=5).as_bytes());
    fs::write(&staged, lines(6..=7)).unwrap();
    fs::rename(&log, dir.path().join("train.log.1")).unwrap();
    fs::rename(&staged, &log).unwrap();
    f.wait_records(0, 7);
    let evs = f.finish();
    assert_eq!(
        texts(&evs, 0),
        step_texts(1..=7),
        "every line once, in order"
    );
    assert!(evs.contains(&Ev::Record(0, 1, b"step 6".to_vec())));
    evs
}

#[test]
fn rename_rotation_drains_the_old_file_first() {
    let evs = rename_rotation(slow_poll_only());
    let rotated = position(&evs, &Ev::Status(0, FileStatus::Rotated));
    let line_5 = evs
        .iter()
        .position(|e| matches!(e, Ev::Record(0, 5, _)))
        .unwrap();
    assert!(line_5 < rotated, "{evs:#?}");
}

#[test]
fn rename_rotation_with_inotify_loses_no_line() {
    let evs = rename_rotation(fast());
    // inotify may show the moment between the two renames, when the path is gone.
    assert!(evs.iter().any(|e| matches!(
        e,
        Ev::Status(0, FileStatus::Rotated) | Ev::Status(0, FileStatus::Deleted)
    )));
}

#[test]
fn lines_the_writer_adds_to_the_renamed_file_after_rotation_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("train.log");
    fs::write(&log, lines(1..=2)).unwrap();
    // The trainer's own handle, which a rename rotation does not move.
    let mut writer = fs::OpenOptions::new().append(true).open(&log).unwrap();
    let mut f = Follower::start(&[&log], fast());
    f.wait_caught_up(0);
    fs::rename(&log, dir.path().join("train.log.1")).unwrap();
    fs::write(&log, "new 1\n").unwrap();
    f.wait_until("the new file's first line", |evs| {
        texts(evs, 0).contains(&"new 1".to_string())
    });
    // Written after the follower has moved on to the new file, before the writer reopens.
    writer.write_all(b"step 3\n").unwrap();
    f.wait_until("the late line of the old file", |evs| {
        texts(evs, 0).contains(&"step 3".to_string())
    });
    let evs = f.finish();
    let texts = texts(&evs, 0);
    assert_eq!(
        texts.iter().filter(|t| *t == "step 3").count(),
        1,
        "{texts:?}"
    );
    assert_eq!(texts.len(), 4, "{texts:?}");
}

#[test]
fn lines_written_to_a_rotated_file_while_its_path_is_empty_are_read() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("train.log");
    fs::write(&log, lines(1..=2)).unwrap();
    let mut writer = fs::OpenOptions::new().append(true).open(&log).unwrap();
    let mut f = Follower::start(&[&log], fast());
    f.wait_records(0, 2);
    // The follower looks between the rename and the new file's creation.
    fs::rename(&log, dir.path().join("train.log.1")).unwrap();
    f.wait_status(0, FileStatus::Deleted);
    writer.write_all(b"step 3\n").unwrap();
    f.wait_until("the line written after the rename", |evs| {
        texts(evs, 0).contains(&"step 3".to_string())
    });
    fs::write(&log, "new 1\n").unwrap();
    f.wait_until("the new file", |evs| {
        texts(evs, 0).contains(&"new 1".to_string())
    });
    let texts = texts(&f.finish(), 0);
    assert_eq!(texts.len(), 4, "{texts:?}");
}

#[test]
fn a_deleted_file_is_waited_for_and_read_from_zero_when_it_returns() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("train.log");
    fs::write(&log, lines(1..=2)).unwrap();
    let mut f = Follower::start(&[&log], fast());
    f.wait_records(0, 2);
    fs::remove_file(&log).unwrap();
    f.wait_status(0, FileStatus::Deleted);
    fs::write(&log, "again\n").unwrap();
    f.wait_records(0, 3);
    let evs = f.finish();
    let deleted = position(&evs, &Ev::Status(0, FileStatus::Deleted));
    assert!(evs[deleted..].contains(&Ev::Status(0, FileStatus::Following)));
    assert_eq!(records(&evs, 0).last(), Some(&rec(1, "again")));
}

#[test]
fn a_file_missing_at_start_is_waited_for_then_read_from_zero() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("later.log");
    let mut f = Follower::start(&[&log], fast());
    f.wait_status(0, FileStatus::Waiting);
    // Nothing to read yet is history done: the UI need not wait for a file that may never come.
    f.wait_caught_up(0);
    fs::write(&log, lines(1..=2)).unwrap();
    f.wait_records(0, 2);
    let evs = f.finish();
    assert_eq!(evs[0], Ev::Opened(0, log.clone()));
    assert!(evs.contains(&Ev::Status(0, FileStatus::Following)));
    assert_eq!(records(&evs, 0), vec![rec(1, "step 1"), rec(2, "step 2")]);
}

#[test]
fn a_glob_picks_up_a_file_created_later() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("rank0.log"), "a1\n").unwrap();
    fs::write(dir.path().join("notes.txt"), "not a log\n").unwrap();
    let pattern = dir.path().join("rank*.log");
    let mut f = Follower::start(&[&pattern], fast());
    f.wait_records(0, 1);
    let later = dir.path().join("rank1.log");
    fs::write(&later, "b1\n").unwrap();
    fs::write(dir.path().join("other.txt"), "x\n").unwrap();
    f.wait_records(1, 1);
    let evs = f.finish();
    let opened: Vec<_> = evs.iter().filter(|e| matches!(e, Ev::Opened(..))).collect();
    assert_eq!(
        opened,
        [
            &Ev::Opened(0, dir.path().join("rank0.log")),
            &Ev::Opened(1, later)
        ]
    );
    assert_eq!(records(&evs, 1), vec![rec(1, "b1")]);
}

#[test]
fn a_glob_follows_a_bounded_number_of_files_and_says_when_it_leaves_some_out() {
    // Ten times more matching files than are followed.
    let dir = tempfile::tempdir().unwrap();
    let total = 10 * FILES_FOLLOWED;
    for i in 0..total {
        fs::write(
            dir.path().join(format!("run-{i:05}.log")),
            format!("s{i}\n"),
        )
        .unwrap();
    }
    let pattern = dir.path().join("run-*.log");
    let mut f = Follower::start(&[&pattern], fast());
    f.wait_status(FILES_FOLLOWED, FileStatus::NotFollowed);
    f.wait_until("every followed file read", |evs| {
        (0..FILES_FOLLOWED).all(|i| evs.contains(&Ev::CaughtUp(i)))
    });
    // A file written later is left out too, and nothing more is said.
    fs::write(dir.path().join("run-99999.log"), "late\n").unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let evs = f.finish();
    let opened = evs.iter().filter(|e| matches!(e, Ev::Opened(..))).count();
    assert_eq!(
        opened,
        FILES_FOLLOWED + 1,
        "the followed files and the one that says so"
    );
    let told = evs
        .iter()
        .filter(|e| matches!(e, Ev::Status(_, FileStatus::NotFollowed)))
        .count();
    assert_eq!(told, 1);
    assert!(records(&evs, FILES_FOLLOWED).is_empty());
    assert_eq!(records(&evs, 0), vec![rec(1, "s0")]);
}

#[test]
fn history_comes_before_caught_up_and_live_lines_after() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("train.log");
    fs::write(&log, lines(1..=3)).unwrap();
    let mut f = Follower::start(&[&log], fast());
    f.wait_caught_up(0);
    append(&log, lines(4..=4).as_bytes());
    f.wait_records(0, 4);
    let evs = f.finish();
    let caught_up = position(&evs, &Ev::CaughtUp(0));
    assert_eq!(texts(&evs[..caught_up], 0), step_texts(1..=3));
    assert_eq!(texts(&evs[caught_up..], 0), step_texts(4..=4));
    assert_eq!(
        evs.iter().filter(|e| matches!(e, Ev::CaughtUp(_))).count(),
        1
    );
}

#[test]
fn without_from_start_existing_content_is_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("train.log");
    fs::write(&log, "old\n").unwrap();
    let mut f = Follower::start(
        &[&log],
        FollowOptions {
            from_start: false,
            ..fast()
        },
    );
    f.wait_caught_up(0);
    append(&log, b"new\n");
    f.wait_records(0, 1);
    assert_eq!(texts(&f.finish(), 0), ["new"]);
}

#[test]
fn the_poll_alone_follows_when_notify_is_off() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("train.log");
    fs::write(&log, "").unwrap();
    let mut f = Follower::start(
        &[&log],
        FollowOptions {
            use_notify: false,
            ..fast()
        },
    );
    f.wait_caught_up(0);
    append(&log, lines(1..=2).as_bytes());
    f.wait_records(0, 2);
    assert_eq!(texts(&f.finish(), 0), step_texts(1..=2));
}

#[test]
fn a_break_from_the_sink_ends_follow() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("train.log");
    fs::write(&log, lines(1..=3)).unwrap();
    let spec = InputSpec::parse(log.to_str().unwrap()).unwrap();
    let stop = AtomicBool::new(false);
    let mut got = 0;
    let result = tail(&[spec], &fast(), &stop, &mut |event| match event {
        TailEvent::Line { .. } => {
            got += 1;
            ControlFlow::Break(())
        }
        _ => ControlFlow::Continue(()),
    });
    assert_eq!(result, Ok(()));
    assert_eq!(got, 1);
}

#[test]
fn follow_without_inputs_is_an_error() {
    let stop = AtomicBool::new(false);
    assert!(tail(&[], &fast(), &stop, &mut |_| ControlFlow::Continue(())).is_err());
}

/// The splitter's specification, one byte at a time.
fn reference_split(input: &[u8]) -> Vec<(u64, Vec<u8>)> {
    let (mut out, mut current, mut line) = (Vec::new(), Vec::new(), 1);
    let mut i = 0;
    while i < input.len() {
        match input[i] {
            b'\n' | b'\r' => {
                if !current.is_empty() {
                    out.push((line, std::mem::take(&mut current)));
                }
                if input[i] == b'\n' {
                    line += 1;
                } else if input.get(i + 1) == Some(&b'\n') {
                    line += 1;
                    i += 1;
                }
            }
            byte => current.push(byte),
        }
        i += 1;
    }
    if !current.is_empty() {
        out.push((line, current));
    }
    out
}

/// Feeds `input` cut at `cuts` (sorted, deduplicated, in range) and finishes.
fn split_in_chunks(input: &[u8], cuts: &[usize]) -> (Vec<(u64, Vec<u8>)>, LineSplitter) {
    let mut splitter = LineSplitter::new();
    let mut out = Vec::new();
    let mut emit = |line: u64, rec: &[u8]| out.push((line, rec.to_vec()));
    let mut start = 0;
    for &cut in cuts.iter().chain([input.len()].iter()) {
        splitter.push(&input[start..cut], &mut emit);
        assert!(splitter.pending_bytes() <= MAX_LINE_BYTES);
        start = cut;
    }
    splitter.finish(&mut emit);
    (out, splitter)
}

fn chunk_cuts(len: usize, mut cuts: Vec<usize>) -> Vec<usize> {
    for cut in &mut cuts {
        *cut %= len + 1;
    }
    cuts.sort_unstable();
    cuts.dedup();
    cuts
}

proptest! {
    /// Any chunking gives the reference's records; removing terminators from the input gives
    /// exactly the records' bytes (nothing lost, nothing invented, when nothing is cut).
    #[test]
    fn chunking_never_changes_the_records(
        input in prop::collection::vec(
            prop_oneof![Just(b'\n'), Just(b'\r'), Just(b'a'), any::<u8>()], 0..600),
        cuts in prop::collection::vec(any::<usize>(), 0..12),
    ) {
        let cuts = chunk_cuts(input.len(), cuts);
        let (got, splitter) = split_in_chunks(&input, &cuts);
        prop_assert_eq!(&got, &reference_split(&input));
        let kept: Vec<u8> = input.iter().copied().filter(|b| *b != b'\n' && *b != b'\r').collect();
        prop_assert_eq!(got.iter().flat_map(|(_, r)| r.iter().copied()).collect::<Vec<u8>>(), kept);
        let newlines = input.iter().filter(|b| **b == b'\n').count() as u64;
        let open_last_line = input.last().is_some_and(|b| *b != b'\n');
        prop_assert_eq!(splitter.lines(), newlines + u64::from(open_last_line));
        prop_assert_eq!(splitter.cut_lines(), 0);
    }
}

proptest! {
    // Each case is up to a few hundred KiB: fewer cases keep the debug build quick.
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Records near and past the cap: each is cut to its first MAX_LINE_BYTES, counted, and
    /// the held bytes never exceed the cap.
    #[test]
    fn long_records_are_cut_to_their_start(
        lens in prop::collection::vec(0..3 * MAX_LINE_BYTES, 1..4),
        cuts in prop::collection::vec(any::<usize>(), 0..8),
    ) {
        let mut input = Vec::new();
        for (i, len) in lens.iter().enumerate() {
            input.extend((0..*len).map(|j| b'a' + ((i + j) % 26) as u8));
            input.extend_from_slice(if i % 2 == 0 { b"\n" } else { b"\r\n" });
        }
        let cuts = chunk_cuts(input.len(), cuts);
        let (got, splitter) = split_in_chunks(&input, &cuts);
        let want: Vec<(u64, Vec<u8>)> = reference_split(&input)
            .into_iter()
            .map(|(line, rec)| (line, rec[..rec.len().min(MAX_LINE_BYTES)].to_vec()))
            .collect();
        prop_assert_eq!(got, want);
        let cut = lens.iter().filter(|len| **len > MAX_LINE_BYTES).count() as u64;
        prop_assert_eq!(splitter.cut_lines(), cut);
    }
}
