//! Whole files into a feed, parsed on every core, with exactly the result of parsing them one
//! line after another.
//!
//! The reader cuts the file into blocks of whole records and hands them round-robin to parser
//! threads; the calling thread takes the parsed blocks back in order and feeds the model. A
//! parser thread cannot know the context the previous block ended in (an open timing block, a
//! Keras epoch header), so it starts from the default context and remembers its context after
//! every line. If the real context differs, the calling thread parses the block's first lines
//! again with it until its context equals the one the thread reached after the same line: from
//! there on the thread's results are what a sequential parse gives, because parsing depends on
//! nothing but the line and the context.

use std::io;
use std::path::Path;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use crate::feed::Feed;
use crate::model::Stamp;
use crate::parse::record::Record;
use crate::parse::{Context, LineInfo, Parser};
use crate::source::{self, ReadStats};

/// Bytes per block: big enough that hand-offs cost nothing, small enough that the blocks in
/// flight (two per thread, with their records) stay a few MiB.
const BLOCK_BYTES: usize = 512 * 1024;

/// Reads `path` whole into `feed`, handing each record to `sink` in file order.
pub fn read_file(
    path: &Path,
    feed: &mut Feed,
    sink: &mut dyn FnMut(&Stamp, Record),
) -> io::Result<ReadStats> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
    if threads < 2 {
        return source::read_records(path, &mut |line_no, raw| {
            feed.line(line_no, raw, None, sink);
        });
    }
    std::thread::scope(|scope| {
        let mut to_workers = Vec::with_capacity(threads);
        let mut from_workers = Vec::with_capacity(threads);
        for _ in 0..threads {
            let (block_tx, block_rx) = sync_channel::<Block>(1);
            let (parsed_tx, parsed_rx) = sync_channel::<Parsed>(1);
            // One parser per thread for the whole file, so that its shape memo lasts.
            let mut parser = feed.parser().fresh();
            scope.spawn(move || {
                for block in block_rx {
                    if parsed_tx.send(parse_block(&mut parser, block)).is_err() {
                        return;
                    }
                }
            });
            to_workers.push(block_tx);
            from_workers.push(parsed_rx);
        }
        let mut pipe = Pipe {
            to_workers,
            from_workers,
            sent: 0,
            applied: 0,
            scratch: Vec::new(),
        };
        let mut block = Block::default();
        let mut failed = None;
        let stats = source::read_records(path, &mut |line_no, raw| {
            block.push(line_no, raw);
            if block.bytes.len() >= BLOCK_BYTES && failed.is_none() {
                failed = pipe.send(std::mem::take(&mut block), feed, sink).err();
            }
        })?;
        if let Some(e) = failed {
            return Err(e);
        }
        pipe.send(block, feed, sink)?;
        pipe.drain(feed, sink)?;
        Ok(stats)
    })
}

/// Whole records copied out of the file, with their line numbers and extents in `bytes`.
#[derive(Default)]
struct Block {
    bytes: Vec<u8>,
    lines: Vec<(u64, usize, usize)>,
}

impl Block {
    fn push(&mut self, line_no: u64, raw: &[u8]) {
        let start = self.bytes.len();
        self.bytes.extend_from_slice(raw);
        self.lines.push((line_no, start, self.bytes.len()));
    }

    fn raw(&self, i: usize) -> &[u8] {
        let (_, start, end) = self.lines[i];
        &self.bytes[start..end]
    }
}

/// A block parsed from the default context: per line its info, how many records it gave, and
/// the context after it.
struct Parsed {
    block: Block,
    infos: Vec<LineInfo>,
    counts: Vec<u32>,
    records: Vec<Record>,
    after: Vec<Context>,
}

fn parse_block(parser: &mut Parser, block: Block) -> Parsed {
    parser.set_context(Context::default());
    let n = block.lines.len();
    let mut parsed = Parsed {
        infos: Vec::with_capacity(n),
        counts: Vec::with_capacity(n),
        records: Vec::with_capacity(n),
        after: Vec::with_capacity(n),
        block: Block::default(),
    };
    for i in 0..n {
        let before = parsed.records.len();
        parsed
            .infos
            .push(parser.parse(block.raw(i), &mut parsed.records));
        parsed
            .counts
            .push(u32::try_from(parsed.records.len() - before).unwrap_or(u32::MAX));
        parsed.after.push(parser.context());
    }
    parsed.block = block;
    parsed
}

/// Blocks out to the parser threads round-robin and back in the same order.
struct Pipe {
    to_workers: Vec<SyncSender<Block>>,
    from_workers: Vec<Receiver<Parsed>>,
    sent: usize,
    applied: usize,
    scratch: Vec<Record>,
}

impl Pipe {
    /// Sends a block, first applying the oldest one when every thread has two.
    fn send(
        &mut self,
        block: Block,
        feed: &mut Feed,
        sink: &mut dyn FnMut(&Stamp, Record),
    ) -> io::Result<()> {
        if self.sent - self.applied == 2 * self.to_workers.len() {
            self.apply_next(feed, sink)?;
        }
        let worker = self.sent % self.to_workers.len();
        self.to_workers[worker].send(block).map_err(|_| lost())?;
        self.sent += 1;
        Ok(())
    }

    fn drain(&mut self, feed: &mut Feed, sink: &mut dyn FnMut(&Stamp, Record)) -> io::Result<()> {
        while self.applied < self.sent {
            self.apply_next(feed, sink)?;
        }
        Ok(())
    }

    fn apply_next(
        &mut self,
        feed: &mut Feed,
        sink: &mut dyn FnMut(&Stamp, Record),
    ) -> io::Result<()> {
        let worker = self.applied % self.from_workers.len();
        let parsed = self.from_workers[worker].recv().map_err(|_| lost())?;
        self.applied += 1;
        apply(parsed, feed, &mut self.scratch, sink);
        Ok(())
    }
}

/// Feeds a parsed block, parsing its first lines again while the real context differs from
/// the default one the thread assumed.
fn apply(
    parsed: Parsed,
    feed: &mut Feed,
    scratch: &mut Vec<Record>,
    sink: &mut dyn FnMut(&Stamp, Record),
) {
    let mut converged = feed.parser().context() == Context::default();
    let mut records = parsed.records.into_iter();
    for (i, info) in parsed.infos.iter().enumerate() {
        let line_no = parsed.block.lines[i].0;
        let count = parsed.counts[i] as usize;
        let raw = parsed.block.raw(i);
        if converged {
            let refused = feed.admit(info, &records.as_slice()[..count]);
            let mine = records.by_ref().take(count);
            feed.deliver(line_no, raw, info, refused, mine, None, sink);
            continue;
        }
        records.by_ref().take(count).for_each(drop);
        let info = feed.parser().parse(raw, scratch);
        let refused = feed.admit(&info, scratch);
        feed.deliver(line_no, raw, &info, refused, scratch.drain(..), None, sink);
        converged = feed.parser().context() == parsed.after[i];
    }
    if converged && let Some(ctx) = parsed.after.last() {
        feed.parser().set_context(*ctx);
    }
}

fn lost() -> io::Error {
    io::Error::other("a parser thread stopped unexpectedly")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    /// Every record with its stamp, as text, for comparing two ways of reading.
    fn read_all(path: &Path, parallel: bool) -> (Vec<String>, String) {
        let mut feed = Feed::new(0, "t.log", Arc::default());
        let mut got = Vec::new();
        let mut sink = |s: &Stamp, r: Record| got.push(format!("{s:?} {r:?}"));
        if parallel {
            read_file(path, &mut feed, &mut sink).expect("read");
        } else {
            source::read_records(path, &mut |n, raw| {
                feed.line(n, raw, None, &mut sink);
            })
            .expect("read");
        }
        let summary = format!(
            "{:?} {:?} {:?}",
            feed.stats,
            feed.format_counts(),
            feed.rank()
        );
        (got, summary)
    }

    #[test]
    fn parallel_reading_equals_sequential_across_block_edges() {
        // Timing blocks, cache blocks and Keras epochs whose context spans block boundaries.
        let mut log = String::new();
        let mut step = 0;
        while log.len() < 6 * BLOCK_BYTES {
            step += 1;
            log.push_str(&format!("[Step {step}] Forward timing:\n"));
            for s in 0..40 {
                log.push_str(&format!("  Stage{s} : {}.25ms (2.5%)\n", 10 + s));
                log.push_str(&format!("    Sub{s} : {}.5ms\n", 3 + s));
            }
            log.push_str("Total : 1000.0ms\n[Cache Stats]\n");
            log.push_str(&format!("Hit Rate: 50.00% ({step} hits / {step} misses)\n"));
            log.push_str("Size: 374 items\nMemory: 10.0 / 20.0 MB\n");
            if step % 50 == 0 {
                log.push_str(&format!("Epoch {}/10\n", step / 50));
            }
            log.push_str(&format!(
                "\r{step}/900 [==>....] - ETA: 3s - loss: 0.5\r{step}/900 [===>...] - loss: 0.4\n"
            ));
            log.push_str(&format!("step {step}/8880 | loss=0.12 | data_time=0.1ms\n"));
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("t.log");
        std::fs::write(&path, &log).expect("write");
        let sequential = read_all(&path, false);
        let parallel = read_all(&path, true);
        assert!(sequential.0.len() > 10_000);
        assert_eq!(sequential.1, parallel.1);
        assert_eq!(sequential.0.len(), parallel.0.len());
        for (a, b) in sequential.0.iter().zip(&parallel.0) {
            assert_eq!(a, b);
        }
    }
}
