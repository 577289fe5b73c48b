//! The one bulk path from bytes to the monitor: a report's files, a replay at full speed and
//! the history of a followed file all go through it, in blocks of lines, as `Lines`.
//!
//! A block is cut from whole lines and parsed on a parser thread (on a machine with one core,
//! in place); the caller takes the parsed blocks back in order, passes each line through its
//! file's feed (judged, stamped, counted) and hands the block on. A parser thread cannot be
//! sure of the context the previous block ended in (an open timing block, a Keras epoch
//! header): it starts from the context its own previous block ended in (with one parser
//! thread, the two cores' case, that is the real one), notes that start, and remembers its
//! context after every line. If the real context differs from the start, the caller parses
//! the block's first lines again with it until its context equals the one the thread reached
//! after the same line: from there on the thread's results are what a sequential parse
//! gives, because parsing depends on nothing but the line and the context. Lines that arrive
//! one by one (live following) take `Feed::message`, the same steps for one line (a test
//! checks both ways give the same).
//!
//! The boxes of the step records come back: each `Lines` carries its way home, the monitor
//! sends back the boxes the model has read, and the next block takes them to its parser,
//! which fills them for its lines (`StepBoxes`). A box freed on the other thread was a tenth
//! of the monitor thread's work.

use std::io;
use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, Sender, SyncSender, channel, sync_channel};
use std::thread::JoinHandle;

use super::Feed;
use super::feed::drop_places;
use super::shape_names::ShapeNames;
use crate::input::file::{ReadStats, read_lines};
use crate::input::metric_files;
use crate::model::Stamp;
use crate::model::source_stats::read_nothing;
use crate::model::unparsed::unparsed_shape;
use crate::monitor::msg::{Home, LineHead, Lines, Msg};
use crate::parse::record::{Record, StepBoxes};
use crate::parse::{Context, LineInfo, Parser};

/// Bytes per block: big enough that hand-offs cost nothing, small enough that the blocks in
/// flight (two per thread, with their records) stay a few MiB. At 512 KiB the allocator kept
/// more of the freed blocks: the report's peak RSS reached 68 MiB on the 256 MiB bench log,
/// 57 MiB at 256 KiB, for 3% of its speed.
const BLOCK_BYTES: usize = 256 * 1024;

/// Reads `path` whole through `feed`, handing its lines to `out` in blocks (`Msg::Lines`), in
/// file order. A metric file (`input::metric_files`) gives its entries as the lines, and a
/// tracker's hardware samples (`Msg::Sample`) among them where the file has them.
pub fn read_file(path: &Path, feed: &mut Feed, out: &mut dyn FnMut(Msg)) -> io::Result<ReadStats> {
    if let Some(kind) = metric_files::kind_of(path) {
        return read_metric_file(path, kind, feed, out);
    }
    let mut ingest = Ingest::new(feed);
    let mut failed = None;
    let mut lines_out = |lines: Lines| out(Msg::Lines(Box::new(lines)));
    let stats = read_lines(path, &mut |line_no, raw| {
        if failed.is_none() {
            failed = ingest.push(feed, line_no, raw, &mut lines_out).err();
        }
    })?;
    if let Some(e) = failed {
        return Err(e);
    }
    ingest.flush(feed, &mut lines_out)?;
    Ok(stats)
}

/// A metric file's entries through its feed as blocks of lines: each is a line with its wall
/// time and its records, credited to the file's format. A tracker's samples go out between
/// the blocks, each after the entries the file held before it.
fn read_metric_file(
    path: &Path,
    kind: metric_files::Kind,
    feed: &mut Feed,
    out: &mut dyn FnMut(Msg),
) -> io::Result<ReadStats> {
    let read = metric_files::read(path, kind)?;
    feed.read_as(kind.format());
    let size = std::fs::metadata(path).map_or(0, |m| m.len());
    // A tracker's rows and its hardware samples were written on one clock, as a recording's
    // lines and samples are: they are played as a live run sent them (each row arrives at
    // the time it was logged, the clock reading that time), so that the rules that count
    // seconds between steps judge the run as it went, not as steps all read at once.
    let recorded = !read.samples.is_empty();
    if recorded {
        out(Msg::CaughtUp { source: feed.index });
    }
    let mut lines = Lines::default();
    let send = |lines: &mut Lines, out: &mut dyn FnMut(Msg)| {
        if !lines.heads.is_empty() {
            out(Msg::Lines(Box::new(std::mem::take(lines))));
        }
    };
    let entries = read.entries.len();
    for item in metric_files::in_order(read.entries, read.samples) {
        let (i, e) = match item {
            metric_files::InOrder::Sample(sample) => {
                send(&mut lines, out);
                out(Msg::Sample(sample));
                continue;
            }
            metric_files::InOrder::Entry(i, e) => (i, e),
        };
        let arrival = e.time.filter(|_| recorded);
        if let Some(t) = arrival {
            send(&mut lines, out);
            out(Msg::Tick(t));
        }
        let text = e.text();
        // Played at its logged time (the `Tick` before it), not arrived while followed.
        lines.add(text.as_bytes(), None, |sink| {
            feed.entry(i as u64 + 1, &e, &text, kind.format(), arrival, sink)
        });
        // The block that ends with the last entry spans the file.
        if i + 1 == entries {
            lines.bytes = size;
        }
    }
    feed.stats.problems = read.problems;
    let stats = ReadStats {
        bytes: size,
        ..ReadStats::default()
    };
    send(&mut lines, out);
    Ok(stats)
}

/// Lines of one file at a time on their way to `Lines`: push them in order, then flush before
/// the lines of another file (or anything else the receiver must see after them).
pub struct Ingest {
    /// None on a machine with one core: blocks are parsed in place.
    pool: Option<Pool>,
    /// The unparsed shapes of the memo shapes of the lines parsed in place.
    names: ShapeNames,
    block: Block,
    block_bytes: usize,
    /// The way back for the boxes of the step records the monitor has read (each `Lines`
    /// carries it), from whichever thread the monitor runs on, and where they arrive.
    home: Sender<StepBoxes>,
    returned: Receiver<StepBoxes>,
}

impl Ingest {
    /// A reader for `feed`'s lines with a parser thread per core but one (up to 8), each with
    /// a copy of the feed's parser (its patterns; the shape memo is the thread's own). The
    /// caller's thread, which takes the parsed blocks into the monitor, is the busiest: it
    /// keeps a core of its own.
    pub fn new(feed: &mut Feed) -> Ingest {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        Ingest::with(feed.parser(), (cores - 1).min(8), BLOCK_BYTES)
    }

    /// With `threads` parser threads (none: in place) and blocks of `block_bytes`.
    fn with(parser: &Parser, threads: usize, block_bytes: usize) -> Ingest {
        let (home, returned) = channel();
        Ingest {
            pool: (threads >= 1)
                .then(|| Pool::start(parser, threads))
                .flatten(),
            names: ShapeNames::default(),
            block: Block::sized(block_bytes),
            block_bytes,
            home,
            returned,
        }
    }

    /// Adds line `line_no` of `feed`'s file; hands on every block that is ready.
    pub fn push(
        &mut self,
        feed: &mut Feed,
        line_no: u64,
        raw: &[u8],
        out: &mut dyn FnMut(Lines),
    ) -> io::Result<()> {
        self.block.push(line_no, raw);
        if self.block.bytes.len() >= self.block_bytes {
            self.send(feed, out)?;
        }
        Ok(())
    }

    /// Hands on every line pushed so far.
    pub fn flush(&mut self, feed: &mut Feed, out: &mut dyn FnMut(Lines)) -> io::Result<()> {
        if !self.block.lines.is_empty() {
            self.send(feed, out)?;
        }
        if let Some(pool) = &mut self.pool {
            while pool.pending() {
                out(apply(pool.next()?, feed, &self.home));
            }
        }
        Ok(())
    }

    fn send(&mut self, feed: &mut Feed, out: &mut dyn FnMut(Lines)) -> io::Result<()> {
        let mut block = std::mem::replace(&mut self.block, Block::sized(self.block_bytes));
        for boxes in self.returned.try_iter() {
            block.spare.append(boxes);
        }
        match &mut self.pool {
            Some(pool) => {
                if let Some(parsed) = pool.send(block)? {
                    out(apply(parsed, feed, &self.home));
                }
                Ok(())
            }
            None => {
                out(parse_in_place(block, feed, &mut self.names, &self.home));
                Ok(())
            }
        }
    }
}

/// Whole lines copied out of the file, with their line numbers and extents in `bytes`, and
/// the input they span; and step records' boxes for its parser to fill.
#[derive(Default)]
struct Block {
    bytes: Vec<u8>,
    lines: Vec<(u64, usize, usize)>,
    input: u64,
    spare: StepBoxes,
}

impl Block {
    /// An empty block with room for `bytes` of lines and a line longer than most: filled
    /// without the copies of growing from nothing.
    fn sized(bytes: usize) -> Block {
        Block {
            bytes: Vec::with_capacity(bytes + 4096),
            lines: Vec::with_capacity(bytes / 64),
            input: 0,
            spare: StepBoxes::default(),
        }
    }

    fn push(&mut self, line_no: u64, raw: &[u8]) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(raw);
        self.lines.push((line_no, start, self.bytes.len()));
        // Its end of line (a `\n`, or the `\r` of a redraw).
        self.input += raw.len() as u64 + 1;
    }

    fn raw(&self, i: usize) -> &[u8] {
        let (_, start, end) = self.lines[i];
        &self.bytes[start..end]
    }

    /// Each line as a `str`, where it is one. The block is checked as UTF-8 once: a line whose
    /// ends are character bounds in it is then a `str` with no check of its own (a line that
    /// ends inside a character is not, and neither is any line of a block that is not UTF-8).
    fn texts(&self) -> impl Iterator<Item = Option<&str>> {
        let text = std::str::from_utf8(&self.bytes).ok();
        self.lines
            .iter()
            .map(move |&(_, start, end)| text.and_then(|t| t.get(start..end)))
    }
}

/// A block's lines through the feed as they are parsed: what the pool's threads do, with the
/// real context from the start. The boxes of its step records come back to `home`.
fn parse_in_place(
    mut block: Block,
    feed: &mut Feed,
    names: &mut ShapeNames,
    home: &Sender<StepBoxes>,
) -> Lines {
    feed.parser().recycle(std::mem::take(&mut block.spare));
    let mut out = Lines {
        home: Home::to(home),
        ..Lines::default()
    };
    for (i, utf8) in block.texts().enumerate() {
        push(&mut out, &block, i, |line_no, raw, sink| {
            feed.line_named(Some(names), (line_no, raw, utf8), None, sink)
        });
    }
    out.text = block.bytes;
    out.bytes = block.input;
    out
}

/// Line `i` of `block` into `out` as its feed passes it: `pass` hands the line's records on
/// and returns its info and stamp.
fn push(
    out: &mut Lines,
    block: &Block,
    i: usize,
    pass: impl FnOnce(u64, &[u8], &mut dyn FnMut(&Stamp, Record)) -> (LineInfo, Stamp),
) {
    let (line_no, start, end) = block.lines[i];
    let before = out.records.len();
    let kept = &mut out.records;
    let (info, stamp) = pass(line_no, block.raw(i), &mut |_, r| kept.push(r));
    out.heads.push(LineHead {
        stamp,
        info,
        records: u32::try_from(out.records.len() - before).unwrap_or(u32::MAX),
        start,
        end,
        arrival: None,
    });
}

/// A block parsed from the context `start`: per line its head (info, records, place; its
/// stamp is the feed's to give) and the context after it; every line's records in order;
/// and the shape of each line nothing read (by its place in the block), made here rather
/// than on the monitor's thread.
struct Parsed {
    start: Context,
    block: Block,
    heads: Vec<LineHead>,
    records: Vec<Record>,
    after: Vec<Context>,
    shapes: Vec<(usize, Arc<str>)>,
}

/// Parses `block` from the context `parser` is in: the one its previous block ended in.
fn parse_block(parser: &mut Parser, names: &mut ShapeNames, block: Block) -> Parsed {
    let n = block.lines.len();
    let mut parsed = Parsed {
        start: parser.context(),
        heads: Vec::with_capacity(n),
        records: Vec::with_capacity(n),
        after: Vec::with_capacity(n),
        block: Block::default(),
        shapes: Vec::new(),
    };
    for (i, (&(_, start, end), utf8)) in block.lines.iter().zip(block.texts()).enumerate() {
        let before = parsed.records.len();
        let info = parser.parse_known(block.raw(i), utf8, &mut parsed.records);
        let count = parsed.records.len() - before;
        if read_nothing(&info, count) {
            let raw = block.raw(i);
            let shape = names
                .served(parser, raw)
                .unwrap_or_else(|| unparsed_shape(raw));
            parsed.shapes.push((i, shape));
        }
        parsed.heads.push(LineHead {
            stamp: Stamp::default(),
            info,
            records: u32::try_from(count).unwrap_or(u32::MAX),
            start,
            end,
            arrival: None,
        });
        parsed.after.push(parser.context());
    }
    parsed.block = block;
    parsed
}

/// Parser threads: blocks out round-robin and back in the same order.
struct Pool {
    to_workers: Vec<SyncSender<Block>>,
    from_workers: Vec<Receiver<Parsed>>,
    handles: Vec<JoinHandle<()>>,
    sent: usize,
    applied: usize,
}

impl Pool {
    /// None when no thread can be started: then blocks are parsed in place.
    fn start(parser: &Parser, threads: usize) -> Option<Pool> {
        let mut pool = Pool {
            to_workers: Vec::with_capacity(threads),
            from_workers: Vec::with_capacity(threads),
            handles: Vec::with_capacity(threads),
            sent: 0,
            applied: 0,
        };
        for _ in 0..threads {
            let (block_tx, block_rx) = sync_channel::<Block>(1);
            let (parsed_tx, parsed_rx) = sync_channel::<Parsed>(1);
            // One parser per thread for its whole life, so that its shape memo lasts.
            let mut parser = parser.fresh();
            let handle = std::thread::Builder::new()
                .name("steptop-parse".into())
                .spawn(move || {
                    let mut names = ShapeNames::default();
                    for mut block in block_rx {
                        parser.recycle(std::mem::take(&mut block.spare));
                        let parsed = parse_block(&mut parser, &mut names, block);
                        if parsed_tx.send(parsed).is_err() {
                            return;
                        }
                    }
                })
                .ok()?;
            pool.to_workers.push(block_tx);
            pool.from_workers.push(parsed_rx);
            pool.handles.push(handle);
        }
        Some(pool)
    }

    /// Sends a block; when every thread already has two, first takes back the oldest.
    fn send(&mut self, block: Block) -> io::Result<Option<Parsed>> {
        let oldest = if self.sent - self.applied == 2 * self.to_workers.len() {
            Some(self.next()?)
        } else {
            None
        };
        let worker = self.sent % self.to_workers.len();
        self.to_workers[worker].send(block).map_err(|_| lost())?;
        self.sent += 1;
        Ok(oldest)
    }

    /// Whether blocks sent are still to be taken back.
    fn pending(&self) -> bool {
        self.applied < self.sent
    }

    /// The oldest block sent and not taken back yet, parsed.
    fn next(&mut self) -> io::Result<Parsed> {
        let worker = self.applied % self.from_workers.len();
        let parsed = self.from_workers[worker].recv().map_err(|_| lost())?;
        self.applied += 1;
        Ok(parsed)
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        // Hang up both ways first, so that no thread waits on a block or on a reader.
        self.to_workers.clear();
        self.from_workers.clear();
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

/// A parsed block through the feed, parsing its first lines again while the real context
/// differs from the one the thread started from. The thread's heads and records become the
/// `Lines` where they lie: the feed stamps each head and judges each record in place, and
/// only the records it drops (and those of lines parsed again) move. The boxes of its step
/// records come back to `home`.
fn apply(parsed: Parsed, feed: &mut Feed, home: &Sender<StepBoxes>) -> Lines {
    let Parsed {
        start,
        block,
        mut heads,
        mut records,
        after,
        shapes,
    } = parsed;
    // The lines parsed again, their records, and the thread's records they replace.
    let (mut first, mut again, mut replaced) = (0, Vec::new(), 0);
    let mut converged = feed.parser().context() == start;
    while !converged && first < heads.len() {
        let head = &mut heads[first];
        replaced += head.records as usize;
        let before = again.len();
        let (info, stamp) = feed.line(block.lines[first].0, block.raw(first), None, &mut |_, r| {
            again.push(r)
        });
        *head = LineHead {
            stamp,
            info,
            records: u32::try_from(again.len() - before).unwrap_or(u32::MAX),
            ..*head
        };
        converged = feed.parser().context() == after[first];
        first += 1;
    }
    let mut shapes = shapes.into_iter().filter(|(at, _)| *at >= first).peekable();
    let mut dropped = Vec::new();
    let mut at = replaced;
    for (i, head) in heads.iter_mut().enumerate().skip(first) {
        let n = head.records as usize;
        let shape = shapes.next_if(|(s, _)| *s == i).map(|(_, s)| s);
        let before = dropped.len();
        head.stamp = feed.pass_in_place(
            block.lines[i].0,
            block.raw(i),
            &mut head.info,
            &mut records[at..at + n],
            (at, &mut dropped),
            shape.as_deref(),
            None,
        );
        head.records -= u32::try_from(dropped.len() - before).unwrap_or(u32::MAX);
        at += n;
    }
    drop_places(&mut records, dropped);
    if replaced > 0 || !again.is_empty() {
        records.splice(..replaced, again);
    }
    if converged && let Some(ctx) = after.last() {
        feed.parser().set_context(*ctx);
    }
    Lines {
        heads,
        records,
        text: block.bytes,
        bytes: block.input,
        home: Home::to(home),
        ..Lines::default()
    }
}

fn lost() -> io::Error {
    io::Error::other("a parser thread stopped unexpectedly")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::Analysis;
    use crate::input::split::LineSplitter;
    use crate::monitor::Monitor;
    use crate::settings::config::Config;
    use crate::sink::report::Report;
    use proptest::prelude::*;

    /// The report's JSON, and the log pane's lines and the monitor's counts, after reading.
    fn outcome(mon: Monitor, feed: Feed) -> (String, String) {
        let seen = format!("{:?} {:?}", mon.model.log.lines, mon.sources);
        let a = Analysis {
            model: mon.model,
            diagnosis: mon.diagnosis,
            feeds: vec![feed],
        };
        let json = serde_json::to_string_pretty(&Report::build(&a)).expect("json");
        (json, seen)
    }

    fn new_pair(cfg: &Config) -> (Monitor, Feed) {
        let mut feed = Feed::new(0, "train.log", cfg.patterns.clone());
        feed.set_year_reference(1.7e9);
        (Monitor::new(cfg.model, cfg.diagnose.clone()), feed)
    }

    /// Through the bulk reader with `threads` parser threads and blocks of `block` bytes.
    fn in_bulk(text: &[u8], cfg: &Config, threads: usize, block: usize) -> (String, String) {
        let (mut mon, mut feed) = new_pair(cfg);
        let mut ingest = Ingest::with(feed.parser(), threads, block);
        let mut out = |lines: Lines| mon.lines(lines, &mut |_, _| {});
        let mut splitter = LineSplitter::new();
        let mut emit = |n: u64, raw: &[u8]| {
            ingest.push(&mut feed, n, raw, &mut out).expect("push");
        };
        splitter.push(text, &mut emit);
        splitter.finish(&mut emit);
        ingest.flush(&mut feed, &mut out).expect("flush");
        mon.finish();
        outcome(mon, feed)
    }

    /// The reference: the plain parser, one `Msg::Line` per line, as live lines go.
    fn line_by_line(text: &[u8], cfg: &Config) -> (String, String) {
        let (mut mon, mut feed) = new_pair(cfg);
        let mut splitter = LineSplitter::new();
        let mut emit = |n: u64, raw: &[u8]| {
            mon.apply(feed.message(n, raw, None));
        };
        splitter.push(text, &mut emit);
        splitter.finish(&mut emit);
        mon.finish();
        outcome(mon, feed)
    }

    fn assert_same(text: &[u8], cfg: &Config, name: &str) {
        let plain = line_by_line(text, cfg);
        for (threads, block) in [(1, BLOCK_BYTES), (2, 4096), (3, 300), (0, 4096)] {
            let bulk = in_bulk(text, cfg, threads, block);
            assert!(
                bulk.0 == plain.0,
                "{name}: the report differs in bulk ({threads} threads, blocks of {block})"
            );
            assert!(
                bulk.1 == plain.1,
                "{name}: the log pane or the counts differ in bulk ({threads} threads, blocks of {block})"
            );
        }
    }

    #[test]
    fn a_character_cut_by_a_line_end_reads_the_same_in_bulk() {
        // A block holds its lines without their ends: `前` cut by a newline is a whole
        // character there, though neither line is valid UTF-8 on its own; and a block
        // with one bad byte checks each of its lines alone.
        let mut text = Vec::new();
        for step in 1..=40 {
            text.extend_from_slice(
                format!("step {step}/100 | loss=2.{step:02} | 4{step}.5 samples/s\n").as_bytes(),
            );
            if step % 7 == 0 {
                text.extend_from_slice(b"step 9\xe5\x89\n\x8dloss 3.5\n");
            }
            if step % 11 == 0 {
                text.extend_from_slice(b"noise \xff 12\n");
            }
        }
        assert!(std::str::from_utf8(&text).is_err());
        assert_same(&text, &Config::default_checked(), "cut characters");
    }

    #[test]
    fn every_fixture_reads_the_same_in_bulk_as_line_by_line() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
        let mut logs: Vec<(std::path::PathBuf, Config)> = Vec::new();
        for dir in std::fs::read_dir(root.join("logs")).expect("fixtures") {
            for f in std::fs::read_dir(dir.expect("dir").path()).expect("fixture dir") {
                let f = f.expect("entry").path();
                if f.extension().is_none_or(|e| e != "toml") {
                    logs.push((f, Config::default_checked()));
                }
            }
        }
        let patterns = root.join("configs/valid/in-house-pattern.toml");
        logs.push((
            root.join("configs/in-house.log"),
            Config::load(&patterns).expect("config"),
        ));
        assert!(logs.len() > 20);
        for (path, cfg) in &logs {
            let text = std::fs::read(path).expect("fixture");
            assert_same(&text, cfg, &path.display().to_string());
        }
    }

    #[test]
    fn the_step_records_boxes_go_back_to_the_parser_and_hold_only_their_lines_figures() {
        // Two trusted shapes by turns, fifty lines each: a box that held a line of the first
        // (with its data time and lr) is filled for a line of the second (without them).
        let mut text = String::new();
        for step in 100..900u64 {
            text.push_str(&if step / 50 % 2 == 0 {
                format!(
                    "step {step}/900 | loss=0.5{} | lr=1e-4 | data_time=2.{}ms | 800 samples/s\n",
                    step % 10,
                    step % 7
                )
            } else {
                format!("step {step}/900 | loss=0.6{} | 700 samples/s\n", step % 10)
            });
        }
        let cfg = Config::default_checked();
        assert_same(text.as_bytes(), &cfg, "two shapes by turns");
        let (mut mon, mut feed) = new_pair(&cfg);
        // In place, where the feed's own parser takes them back.
        let mut ingest = Ingest::with(feed.parser(), 0, 4096);
        let mut out = |lines: Lines| mon.lines(lines, &mut |_, _| {});
        for (n, line) in text.lines().enumerate() {
            ingest
                .push(&mut feed, n as u64 + 1, line.as_bytes(), &mut out)
                .expect("push");
        }
        ingest.flush(&mut feed, &mut out).expect("flush");
        // Each block's boxes came back, and the next block's lines filled them again: the
        // last block's wait, and the parser keeps a few (the blocks' step lines differ).
        let waiting: usize = ingest.returned.try_iter().map(|b| b.kept()).sum();
        let kept = feed.parser().spare_steps();
        assert!(waiting > 0, "no box came back");
        assert!(
            waiting < 100 && kept < 100,
            "the boxes came back but were not used again: {waiting} waiting, {kept} kept"
        );
    }

    /// One line of a generated log, from the shapes the fixtures hold; `s` is the step.
    fn render(kind: u8, s: u64, x: u32) -> Vec<u8> {
        let f = f64::from(x % 1000) / 7.0;
        let text = match kind % 12 {
            0 | 1 => format!(
                "step {s}/900 | loss={f:.4} | lr=1e-4 | data_time={f:.1}ms | {f:.1} samples/s\n"
            ),
            2 => {
                let mut b = format!("[Step {s}] Forward timing:\n");
                for i in 0..(x % 6) {
                    b.push_str(&format!("  Stage{i} : {f:.2}ms ({:.1}%)\n", f / 10.0));
                }
                if !x.is_multiple_of(3) {
                    b.push_str(&format!("Total : {:.1}ms\n", f * 10.0));
                }
                b
            }
            3 => format!(
                "[Cache Stats]\nHit Rate: {:.2}% ({s} hits / {x} misses)\nSize: {x} items\n",
                f / 10.0
            ),
            4 => format!("Epoch {}/10\n", s % 10 + 1),
            5 => format!(
                "\r{s}/900 [==>....] - ETA: 3s - loss: {f:.4}\r{s}/900 [===>...] - loss: {f:.3}\n"
            ),
            6 => format!(
                "{{'loss': {f:.4}, 'grad_norm': 1.5, 'learning_rate': 1e-05, 'epoch': {:.2}}}\n",
                f / 100.0
            ),
            7 => format!(
                "2024/01/01 12:00:{:02} - mmengine - INFO - Epoch(train)  [1][{s:>3}/900]  lr: 1.0000e-04  eta: 0:10:00  time: {:.4}  data_time: 0.0100  memory: 1000  loss: {f:.4}\n",
                x % 60,
                f / 100.0
            ),
            8 => return b"\xff\xfe garbage \x1b[2J\n".to_vec(),
            9 => "loss is nan, skipping this step\n".to_string(),
            10 => "Saving model checkpoint to out/checkpoint-500\n".to_string(),
            _ => "\n".to_string(),
        };
        text.into_bytes()
    }

    proptest! {
        // A failing case is printed, not written beside the code.
        #![proptest_config(ProptestConfig {
            failure_persistence: None,
            ..ProptestConfig::with_cases(24)
        })]
        #[test]
        fn a_generated_log_reads_the_same_in_bulk_as_line_by_line(
            lines in prop::collection::vec((any::<u8>(), any::<u32>(), 0u8..10), 50..400),
        ) {
            let mut step = 0u64;
            let mut text = Vec::new();
            for (kind, x, jump) in lines {
                // Mostly forward; now and then back (a restart, or a rejected line).
                step = match jump {
                    0 => step.saturating_sub(u64::from(x % 50)),
                    _ => step + 1,
                };
                text.extend(render(kind, step, x));
            }
            assert_same(&text, &Config::default_checked(), "generated");
        }
    }
}
