//! Line shapes: a memo of how the parser reads lines that differ only in their numbers.
//!
//! A training log prints the same few lines over and over with new numbers. A line's shape is
//! its bytes with each number's digits masked (digits right after a letter, as in `Stage8`,
//! `rank3` or `fp16`, are part of a name and stay). For a new shape the full parser runs with
//! trace.rs noting where it read each number; every figure it produced is then explained as one
//! of those reads (times a unit factor) or a value from the context. The next lines of the shape
//! are parsed in full too, and the explanation must give exactly what the parser gave: after
//! `CONFIRMATIONS` such lines, with each figure explained by one place in the line, the shape is
//! trusted, and its lines are read from those places alone. A line whose number does not read
//! (a timestamp with a 13th month) or reads as a non-finite value goes to the full parser; a
//! shape the explanation ever gets wrong is never memoised.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::hash::{BuildHasherDefault, Hasher};

use super::digits::Digits;
use super::record::{Format, Record, StepBoxes};
use super::trace::{Kind, Read, Val};
use super::{Context, Indents, LineInfo};
use super::{num, prefix};

/// Lines of a shape parsed in full and explained before the shape is trusted.
const CONFIRMATIONS: u8 = 3;
/// Lines of a shape the explanation could not be checked on (a number that did not read)
/// before the shape is given up.
const MAX_SKIPPED: u8 = 32;
/// Shapes one parser remembers. A log has a few hundred; each costs a KiB or two (its records,
/// explanations and guards). When the memo is full, the shapes still being learned (seen
/// fewer than four times) are forgotten to make room; when it holds only settled ones
/// (trusted or refused), lines of further shapes are parsed in full.
const MAX_SHAPES: usize = 1024;

/// The memo of one parser.
#[derive(Default)]
pub(crate) struct Shapes {
    map: HashMap<u64, Shape, BuildHasherDefault<Premixed>>,
    /// Lines read from a trusted shape, for the benchmark and the tests.
    served: u64,
    /// The memo was full of settled shapes: none will leave, so it is not swept again.
    settled: bool,
}

/// What the context holds apart from numbers: lines of one shape are the same line only in
/// the same such context.
#[derive(Clone, Copy, PartialEq)]
struct CtxKey {
    keras: bool,
    block: bool,
    indents: Indents,
    since_cache: u32,
    glued: Option<Format>,
    section: super::Section,
    record: bool,
    script: bool,
    table: u64,
}

impl CtxKey {
    fn of(c: &Context) -> Self {
        CtxKey {
            keras: c.keras_epoch.is_some(),
            block: c.block_step.is_some(),
            indents: c.stage_indents,
            since_cache: c.since_cache,
            glued: c.glued_format,
            section: c.section,
            record: c.entry_step.is_some(),
            script: c.script,
            table: c.table.map_or(0, |t| t.key),
        }
    }

    fn hash(&self) -> u64 {
        let mut h = mix(
            u64::from(self.keras)
                | u64::from(self.block) << 1
                | (self.section as u64) << 2
                | u64::from(self.record) << 62
                | u64::from(self.script) << 61
                | u64::from(self.since_cache) << 4,
            self.glued.map_or(0, |f| f as u64 + 1),
        );
        for i in 0..self.indents.len() {
            h = mix(h, u64::from(self.indents.at[i]));
        }
        mix(h, self.table)
    }
}

struct Shape {
    skeleton: u64,
    ctx: CtxKey,
    state: State,
}

enum State {
    /// Inserted by `lookup`; `learn` reads its first line.
    New,
    // Boxed: the map stays small and dense for the lookups on every line.
    Learning(Box<Memo>),
    Trusted(Box<Memo>),
    Refused,
}

/// A shape's lines as the parser read the first of them, and the places that explain each
/// figure.
pub(crate) struct Program {
    text: TextAt,
    records: Vec<Record>,
    info: LineInfo,
    ctx: Context,
    /// Where each text of the records is in the line (`texts` order).
    spans: Vec<(usize, usize)>,
    /// Where each figure comes from, as `choose` took the explanations.
    compiled: Compiled,
}

/// `len` bytes at `at` of the line's text, read as `kind`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Place {
    at: usize,
    len: usize,
    kind: Kind,
}

/// Where a compiled figure comes from: a place's number through a conversion, the sum of the
/// places `sums[start..start + n]` lists (`Sum(start, n)`), or the context.
#[derive(Clone, Copy, Debug)]
enum Source {
    Place(usize, Op),
    Sum(usize, usize),
    KerasEpoch,
    BlockStep,
}

/// A program's reads as places and indexes into them: each place read once a line, however
/// many figures, alternates and guards read it (5 figures, 2 alternates and 0.4 guards a line
/// on the bench log, from 6 places or so).
#[derive(Default)]
struct Compiled {
    places: Vec<Place>,
    /// How each place's digits lie, as the text the shape was compiled from had them.
    digits: Vec<Digits>,
    /// The places each `Source::Sum` adds up, one run after another.
    sums: Vec<usize>,
    /// Each figure's explanation.
    figures: Vec<Source>,
    /// Other explanations of figure `.0`, which must give the same value.
    alternates: Vec<(usize, Source)>,
    /// The parser's other reads, which must read the same way (fail, or give a finite or a
    /// non-finite number) for its branches to be the ones learned.
    guards: Vec<(usize, Class)>,
}

/// The numbers of one line's places and its figures, as `Program::run` reads them, and the
/// step records' boxes it fills: the parser keeps one to reuse for every line.
#[derive(Default)]
pub(crate) struct Scratch(Vec<Word>, Vec<Word>, pub(crate) StepBoxes);

/// A read as the scratch vectors hold it: two plain words, what it is and its bits. Held as
/// an `Option<Val>` (a float and an integer in one place), each was built on the stack with
/// two 8-byte stores and copied out with one 16-byte load, which the CPU cannot take from
/// the stores still in flight: a stall of a dozen cycles a number, half of the time of the
/// memo's reads and of its figures on a long run.
#[derive(Clone, Copy, Debug)]
struct Word {
    tag: u64,
    bits: u64,
}

impl Word {
    #[inline]
    fn of(v: Option<Val>) -> Word {
        match v {
            None => Word { tag: 0, bits: 0 },
            Some(Val::F(x)) => Word {
                tag: 1,
                bits: x.to_bits(),
            },
            Some(Val::U(n)) => Word { tag: 2, bits: n },
        }
    }

    #[inline]
    fn get(self) -> Option<Val> {
        match self.tag {
            1 => Some(Val::F(f64::from_bits(self.bits))),
            2 => Some(Val::U(self.bits)),
            _ => None,
        }
    }
}

impl Compiled {
    /// Compiles the explanations chosen on a line whose text is `text`.
    fn of(
        origins: &[Origin],
        alternates: &[(usize, Origin)],
        guards: &[Guard],
        text: &str,
    ) -> Compiled {
        let mut c = Compiled::default();
        let mut place = |p: Place| match c.places.iter().position(|q| *q == p) {
            Some(i) => i,
            None => {
                c.places.push(p);
                c.places.len() - 1
            }
        };
        let mut sums = Vec::new();
        let mut source = |o: &Origin| match *o {
            Origin::Read {
                at, len, kind, op, ..
            } => Source::Place(place(Place { at, len, kind }), op),
            Origin::Sum { places, n, .. } => {
                let start = sums.len();
                sums.extend(places[..n].iter().map(|p| place(*p)));
                Source::Sum(start, n)
            }
            Origin::KerasEpoch => Source::KerasEpoch,
            Origin::BlockStep => Source::BlockStep,
        };
        let figures = origins.iter().map(&mut source).collect();
        let alternates = alternates.iter().map(|(i, o)| (*i, source(o))).collect();
        let guards = guards
            .iter()
            .map(|g| {
                let at = place(Place {
                    at: g.at,
                    len: g.len,
                    kind: g.kind,
                });
                (at, g.class)
            })
            .collect();
        let digits = c
            .places
            .iter()
            .map(|p| {
                text.get(p.at..p.at + p.len)
                    .map_or(Digits::Other, |s| Digits::of(p.kind, s))
            })
            .collect();
        Compiled {
            figures,
            alternates,
            guards,
            sums,
            digits,
            ..c
        }
    }

    /// Reads every place of `text` into `into`, in `places` order. A place laid out in
    /// digits is read from its bytes; only one that does not fit is made a `str` (whose
    /// character bounds are checked) for the parser's reading.
    fn read(&self, text: &str, into: &mut Scratch) {
        let bytes = text.as_bytes();
        into.0.clear();
        into.0
            .extend(self.places.iter().zip(&self.digits).map(|(p, digits)| {
                let span = p.at..p.at + p.len;
                let read = || {
                    digits
                        .read(bytes.get(span.clone())?)
                        .or_else(|| read_as(p.kind, text.get(span.clone())?))
                };
                Word::of(read())
            }));
    }

    /// Whether every guard's place read the way it did when the shape was learned.
    fn guards_hold(&self, read: &[Word]) -> bool {
        self.guards
            .iter()
            .all(|&(i, class)| Class::of(read[i].get()) == class)
    }

    // Inlined into the loop over a line's figures: out of line (as it was once sums made it
    // bigger), the memo's lines cost 2% more instructions.
    #[inline(always)]
    fn value(&self, source: Source, read: &[Word], before: &Context) -> Option<Val> {
        match source {
            Source::Place(i, op) => op.apply(read[i].get()?),
            Source::Sum(start, n) => self.sum(start, n, read),
            Source::KerasEpoch => before.keras_epoch.map(Val::F),
            Source::BlockStep => before.block_step.map(Val::U),
        }
    }

    // Apart from `value`, which is inlined at every figure: sums are rare.
    #[inline(never)]
    fn sum(&self, start: usize, n: usize, read: &[Word]) -> Option<Val> {
        sum(self.sums[start..start + n].iter().map(|&i| read[i].get()))
    }
}

#[derive(Clone, Copy, Debug)]
struct Guard {
    at: usize,
    len: usize,
    kind: Kind,
    class: Class,
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Class {
    Fails,
    Finite,
    NonFinite,
}

impl Class {
    fn of(v: Option<Val>) -> Class {
        match v {
            None => Class::Fails,
            Some(Val::F(x)) if !x.is_finite() => Class::NonFinite,
            Some(_) => Class::Finite,
        }
    }
}

/// A shape's program and what it was learned from.
struct Memo {
    program: Program,
    /// For each figure, every origin that has explained it on every line so far. Two places
    /// can hold the same number for a long time (rank 1 and epoch 1): the program reads the
    /// first and checks that the others agree, and a line where they do not teaches which.
    candidates: Vec<Vec<Origin>>,
    /// The first line's reads, the guards' origin.
    reads: Vec<Read>,
    lines: u8,
    skipped: u8,
}

/// Where the parser's text was: the raw bytes themselves; these byte ranges of them, the
/// rest cleaned away (escape sequences and controls, which end at the same bytes on every
/// line of a shape: `clean::kept_spans`); or a copy cleaned otherwise, of this length.
#[derive(Clone, PartialEq)]
enum TextAt {
    Raw,
    Cut(Box<[(usize, usize)]>),
    Cleaned(usize),
}

/// Where a figure comes from.
#[derive(Clone, Copy, Debug)]
enum Origin {
    Read {
        at: usize,
        len: usize,
        kind: Kind,
        op: Op,
        /// The first digit of what was read, to tell two places from two reads of one place.
        anchor: usize,
    },
    /// The sum of the numbers at `places[..n]`, added in their order: a figure the parser adds
    /// up from columns (Ultralytics' loss, the sum of its loss columns).
    Sum {
        places: [Place; MAX_SUM],
        n: usize,
        anchor: usize,
    },
    KerasEpoch,
    BlockStep,
}

/// The most reads a `Sum` adds: Ultralytics' pose models print five loss columns.
const MAX_SUM: usize = 6;

/// The sum of numbers as the parser adds them (`Iterator::sum` over floats, counts as floats),
/// None when one is missing.
fn sum(vals: impl Iterator<Item = Option<Val>>) -> Option<Val> {
    vals.map(|v| match v? {
        Val::F(x) => Some(x),
        Val::U(n) => Some(n as f64),
    })
    .sum::<Option<f64>>()
    .map(Val::F)
}

/// How a read becomes a figure: the parser's unit conversions.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    Same,
    Mul(f64),
    Div(f64),
    /// `c / v`: a rate from a time per step, or the reverse.
    Over(f64),
    ToFloat,
    ToInt,
}

const FACTORS: [f64; 8] = [
    1000.0,
    1024.0,
    100.0,
    60.0,
    3600.0,
    86_400.0,
    1e6,
    1_048_576.0,
];

impl Op {
    fn apply(self, v: Val) -> Option<Val> {
        Some(match (self, v) {
            (Op::Same, v) => v,
            (Op::Mul(c), Val::F(x)) => Val::F(x * c),
            (Op::Div(c), Val::F(x)) => Val::F(x / c),
            (Op::Over(c), Val::F(x)) => Val::F(c / x),
            (Op::ToFloat, Val::U(n)) => Val::F(n as f64),
            // The parser truncates a float step the same way.
            (Op::ToInt, Val::F(x)) => Val::U(x as u64),
            _ => return None,
        })
    }

    /// Every conversion worth trying on a read of this kind.
    fn all(v: Val) -> impl Iterator<Item = Op> {
        let float = matches!(v, Val::F(_));
        let scaled = FACTORS
            .into_iter()
            .flat_map(|c| [Op::Mul(c), Op::Div(c), Op::Over(c)])
            .chain([Op::Over(1.0), Op::ToInt]);
        [Op::Same]
            .into_iter()
            .chain(float.then_some(scaled).into_iter().flatten())
            .chain((!float).then_some(Op::ToFloat))
    }
}

impl Origin {
    fn value(&self, text: &str, before: &Context) -> Option<Val> {
        match *self {
            Origin::Read {
                at, len, kind, op, ..
            } => op.apply(read_as(kind, text.get(at..at + len)?)?),
            Origin::Sum { places, n, .. } => sum(places[..n]
                .iter()
                .map(|p| read_as(p.kind, text.get(p.at..p.at + p.len)?))),
            Origin::KerasEpoch => before.keras_epoch.map(Val::F),
            Origin::BlockStep => before.block_step.map(Val::U),
        }
    }

    fn op(&self) -> Option<Op> {
        match *self {
            Origin::Read { op, .. } => Some(op),
            _ => None,
        }
    }

    fn anchor(&self) -> usize {
        match *self {
            Origin::Read { anchor, .. } | Origin::Sum { anchor, .. } => anchor,
            Origin::KerasEpoch => usize::MAX,
            Origin::BlockStep => usize::MAX - 1,
        }
    }
}

/// One figure of a line's output, to read or to fill in.
enum Slot<'a> {
    F(&'a mut f64),
    U(&'a mut u64),
    U32(&'a mut u32),
}

impl Slot<'_> {
    fn get(&self) -> Val {
        match self {
            Slot::F(x) => Val::F(**x),
            Slot::U(n) => Val::U(**n),
            Slot::U32(n) => Val::U(u64::from(**n)),
        }
    }

    /// False when the value cannot stand here (a non-finite float, an out-of-range rank): the
    /// line then goes to the full parser.
    fn set(self, v: Val) -> bool {
        match (self, v) {
            (Slot::F(x), Val::F(v)) if v.is_finite() => *x = v,
            (Slot::U(n), Val::U(v)) => *n = v,
            (Slot::U32(n), Val::U(v)) => match u32::try_from(v) {
                Ok(v) => *n = v,
                Err(_) => return false,
            },
            _ => return false,
        }
        true
    }
}

/// Calls `f` on every figure of a line's output, always in the same order.
// Generic: the memo runs it on every line it serves, with a call per figure.
fn slots<F: FnMut(Slot)>(
    records: &mut [Record],
    info: &mut LineInfo,
    ctx: &mut Context,
    f: &mut F,
) {
    let opt_f = |x: &mut Option<f64>, f: &mut F| {
        if let Some(x) = x {
            f(Slot::F(x));
        }
    };
    let opt_u = |n: &mut Option<u64>, f: &mut F| {
        if let Some(n) = n {
            f(Slot::U(n));
        }
    };
    for r in records {
        match r {
            Record::Step(s) => {
                opt_u(&mut s.step, f);
                opt_u(&mut s.total, f);
                opt_u(&mut s.updates, f);
                for x in [
                    &mut s.epoch,
                    &mut s.step_time_ms,
                    &mut s.elapsed_s,
                    &mut s.avg_step_ms,
                    &mut s.avg_data_ms,
                    &mut s.avg_samples_per_s,
                    &mut s.data_time_ms,
                    &mut s.samples_per_s,
                    &mut s.iters_per_s,
                    &mut s.batch_size,
                    &mut s.loss,
                    &mut s.lr,
                    &mut s.grad_norm,
                    &mut s.loss_scale,
                    &mut s.tokens_per_s,
                    &mut s.tokens_per_gpu_s,
                    &mut s.mfu_pct,
                    &mut s.memory_mb,
                    &mut s.eta_s,
                ] {
                    opt_f(x, f);
                }
            }
            Record::Stage(s) => {
                f(Slot::F(&mut s.ms));
                opt_f(&mut s.share_pct, f);
                opt_u(&mut s.step, f);
            }
            Record::StageTotal { ms, step, .. } => {
                f(Slot::F(ms));
                opt_u(step, f);
            }
            Record::StageBlockStart { step, .. } => opt_u(step, f),
            Record::StepMark { step } => f(Slot::U(step)),
            Record::Cache(c) => {
                opt_f(&mut c.hit_rate_pct, f);
                opt_u(&mut c.hits, f);
                opt_u(&mut c.misses, f);
                opt_u(&mut c.items, f);
                opt_f(&mut c.memory_used_mb, f);
                opt_f(&mut c.memory_total_mb, f);
            }
            Record::HostMem(m) => {
                opt_u(&mut m.step, f);
                for x in [
                    &mut m.process_mb,
                    &mut m.process_pct,
                    &mut m.system_used_mb,
                    &mut m.system_total_mb,
                    &mut m.system_pct,
                ] {
                    opt_f(x, f);
                }
            }
            Record::Event { .. } => {}
            // Config lines are never memoised (`first_line`).
            Record::Config(_) | Record::Rejected { .. } => {}
            Record::Summary(s) => {
                for x in [
                    &mut s.runtime_s,
                    &mut s.samples_per_s,
                    &mut s.steps_per_s,
                    &mut s.loss,
                ] {
                    opt_f(x, f);
                }
            }
        }
    }
    opt_f(&mut info.time, f);
    if let Some(rank) = &mut info.rank {
        f(Slot::U32(rank));
    }
    opt_f(&mut ctx.keras_epoch, f);
    opt_u(&mut ctx.block_step, f);
    opt_u(&mut ctx.entry_step, f);
}

/// Calls `f` on every text of a line's records (stage names, event texts), always in the
/// same order.
fn texts(records: &mut [Record], f: &mut dyn FnMut(&mut String)) {
    for r in records {
        match r {
            Record::Stage(s) => f(&mut s.name),
            Record::StageTotal { name, .. } => f(name),
            Record::Event { text, .. } => f(text),
            _ => {}
        }
    }
}

/// A line as the full parser read it, with what the memo needs to learn from it.
pub(crate) struct ParsedLine<'a> {
    pub raw: &'a [u8],
    pub text: &'a str,
    pub reads: &'a [Read],
    pub before: &'a Context,
    pub after: Context,
    pub info: LineInfo,
    pub records: &'a [Record],
}

impl ParsedLine<'_> {
    fn text_at(&self) -> TextAt {
        if self.text.as_ptr() == self.raw.as_ptr() && self.text.len() == self.raw.len() {
            TextAt::Raw
        } else if let Some(spans) = super::clean::kept_spans(self.raw) {
            TextAt::Cut(spans.into())
        } else {
            TextAt::Cleaned(self.text.len())
        }
    }

    /// The line's figures in `slots` order.
    fn figures(&self) -> Vec<Val> {
        let mut records = self.records.to_vec();
        let (mut info, mut ctx) = (self.info, self.after);
        let mut out = Vec::new();
        slots(&mut records, &mut info, &mut ctx, &mut |s| {
            out.push(s.get())
        });
        out
    }
}

/// What `Shapes::lookup` found for a line.
pub(crate) enum Lookup<'a> {
    /// Read it with this program; if the program cannot, parse it in full with reads noted
    /// and call `learn`.
    Trusted(&'a Program, u64),
    /// Parse it in full with reads noted, then call `learn`.
    Learn(u64),
    /// Parse it in full.
    Full,
}

impl Shapes {
    #[cfg(test)]
    pub(crate) fn served(&self) -> u64 {
        self.served
    }

    /// The memo's entry for `raw` in context `ctx`.
    pub(crate) fn lookup(&mut self, raw: &[u8], ctx: &Context) -> Lookup<'_> {
        let skeleton = skeleton(raw);
        let ctx_key = CtxKey::of(ctx);
        let key = mix(skeleton, ctx_key.hash());
        if self.map.len() >= MAX_SHAPES && !self.settled && !self.map.contains_key(&key) {
            // A long run whose columns change width makes a new shape now and then; most
            // are seen a few times and never again.
            self.map
                .retain(|_, s| matches!(s.state, State::Trusted(_) | State::Refused));
            self.settled = self.map.len() >= MAX_SHAPES;
        }
        let room = self.map.len() < MAX_SHAPES;
        match self.map.entry(key) {
            Entry::Occupied(e) => {
                let shape = e.into_mut();
                if shape.skeleton != skeleton || shape.ctx != ctx_key {
                    // Another shape under the same key.
                    return Lookup::Full;
                }
                match &shape.state {
                    State::Trusted(m) => Lookup::Trusted(&m.program, key),
                    State::Refused => Lookup::Full,
                    State::New | State::Learning(_) => Lookup::Learn(key),
                }
            }
            Entry::Vacant(e) if room => {
                e.insert(Shape {
                    skeleton,
                    ctx: ctx_key,
                    state: State::New,
                });
                Lookup::Learn(key)
            }
            Entry::Vacant(_) => Lookup::Full,
        }
    }

    pub(crate) fn count_served(&mut self) {
        self.served += 1;
    }

    /// Learns from a line of the shape `key` that the full parser has just read.
    pub(crate) fn learn(&mut self, key: u64, line: &ParsedLine) {
        let Some(shape) = self.map.get_mut(&key) else {
            return;
        };
        let state = std::mem::replace(&mut shape.state, State::Refused);
        shape.state = match state {
            State::New => first_line(line).map_or(State::Refused, |m| State::Learning(Box::new(m))),
            State::Learning(m) | State::Trusted(m) => m.next_line(line),
            State::Refused => State::Refused,
        };
    }
}

/// Explains every figure of a shape's first line, or None when one has no explanation.
fn first_line(line: &ParsedLine) -> Option<Memo> {
    // Config facts come once per run, and some are read from digits by value (`pin_memory:
    // 1`, `precision: 16`): not worth a memo.
    if line.records.iter().any(|r| matches!(r, Record::Config(_))) {
        return None;
    }
    // A rejected line's verdict depends on the size of its numbers, which a shape does not
    // see (`1e999` and `1e99` have one shape).
    if line
        .records
        .iter()
        .any(|r| matches!(r, Record::Rejected { .. }))
    {
        return None;
    }
    let text_at = line.text_at();
    let mut candidates = Vec::new();
    for v in line.figures() {
        let mut found: Vec<Origin> = Vec::new();
        // One place read twice is one explanation; one place with two conversions that both
        // fit (a `0.000` is 0 ms and 0 s) is two, until a line tells them apart.
        let mut add = |s: Origin| {
            if s.value(line.text, line.before).is_some_and(|x| x.same(v))
                && !found
                    .iter()
                    .any(|f| f.anchor() == s.anchor() && f.op() == s.op())
            {
                found.push(s);
            }
            !found.is_empty()
        };
        // An `Unfinished` read is a comparison the parser branched on, not a figure.
        for r in line.reads.iter().filter(|r| r.kind != Kind::Unfinished) {
            let Some(val) = r.val else {
                continue;
            };
            let anchor = r.at
                + line.text[r.at..r.at + r.len]
                    .bytes()
                    .position(|b| b.is_ascii_digit())
                    .unwrap_or(0);
            // The trace's number through each conversion first; the few that give the figure
            // are then checked reading the line as the program will.
            for op in Op::all(val).filter(|op| op.apply(val).is_some_and(|x| x.same(v))) {
                add(Origin::Read {
                    at: r.at,
                    len: r.len,
                    kind: r.kind,
                    op,
                    anchor,
                });
            }
        }
        add(Origin::KerasEpoch);
        if !add(Origin::BlockStep) {
            // A figure no single read explains may be the sum of a run of reads.
            let reads: Vec<&Read> = line
                .reads
                .iter()
                .filter(|r| r.kind != Kind::Unfinished && r.val.is_some())
                .collect();
            for first in 0..reads.len() {
                for n in 2..=MAX_SUM.min(reads.len() - first) {
                    // The trace's own numbers first: most runs add up to something else.
                    let run = reads[first..first + n].iter().map(|r| r.val);
                    if !sum(run).is_some_and(|x| x.same(v)) {
                        continue;
                    }
                    let mut places = [Place {
                        at: 0,
                        len: 0,
                        kind: Kind::Decimal,
                    }; MAX_SUM];
                    for (p, r) in places.iter_mut().zip(&reads[first..first + n]) {
                        *p = Place {
                            at: r.at,
                            len: r.len,
                            kind: r.kind,
                        };
                    }
                    // Apart from every read's digit and from the context's anchors.
                    let anchor = usize::MAX - 2 - (first * MAX_SUM + n);
                    add(Origin::Sum { places, n, anchor });
                }
            }
        }
        if found.is_empty() {
            return None;
        }
        candidates.push(found);
    }
    // A text must be a piece of the line, which the next lines have at the same place.
    let mut records = line.records.to_vec();
    let mut spans = Vec::new();
    let mut all_found = true;
    texts(&mut records, &mut |t| match line.text.find(t.as_str()) {
        Some(at) => spans.push((at, t.len())),
        None => all_found = false,
    });
    if !all_found {
        return None;
    }
    let mut program = Program {
        text: text_at,
        spans,
        records,
        info: line.info,
        ctx: line.after,
        compiled: Compiled::default(),
    };
    program.choose(&candidates, line.reads, line.text);
    Some(Memo {
        program,
        candidates,
        reads: line.reads.to_vec(),
        lines: 1,
        skipped: 0,
    })
}

impl Memo {
    /// Checks the explanation against another line the full parser read.
    fn next_line(mut self: Box<Self>, line: &ParsedLine) -> State {
        let serves = self.program.serves(line.text, line.before);
        // A line the program would not serve (a number that does not read) says nothing
        // about the lines it would.
        let skip = |mut this: Box<Memo>| {
            if serves {
                return State::Refused;
            }
            if this.lines > CONFIRMATIONS {
                return State::Trusted(this);
            }
            this.skipped += 1;
            if this.skipped > MAX_SKIPPED {
                State::Refused
            } else {
                State::Learning(this)
            }
        };
        if line.text_at() != self.program.text {
            return skip(self);
        }
        let figures = line.figures();
        if figures.len() != self.candidates.len() {
            return skip(self);
        }
        let mut candidates = self.candidates.clone();
        for (found, v) in candidates.iter_mut().zip(figures) {
            found.retain(|s| s.value(line.text, line.before).is_some_and(|x| x.same(v)));
            if found.is_empty() {
                return skip(self);
            }
        }
        self.candidates = candidates;
        self.program
            .choose(&self.candidates, &self.reads, line.text);
        let mut records = Vec::new();
        match self.program.run(
            line.raw,
            line.text,
            line.before,
            &mut records,
            &mut Scratch::default(),
        ) {
            Some((info, ctx))
                if records == line.records && info == line.info && ctx == line.after => {}
            _ => return State::Refused,
        }
        self.lines = self.lines.saturating_add(1);
        if self.lines > CONFIRMATIONS {
            State::Trusted(self)
        } else {
            State::Learning(self)
        }
    }
}

impl Program {
    /// Takes the first explanation of each figure, and every other read as a guard, on a
    /// line whose text is `text`.
    fn choose(&mut self, candidates: &[Vec<Origin>], reads: &[Read], text: &str) {
        let origins: Vec<Origin> = candidates.iter().map(|c| c[0]).collect();
        let alternates: Vec<(usize, Origin)> = candidates
            .iter()
            .enumerate()
            .flat_map(|(i, c)| c[1..].iter().map(move |s| (i, *s)))
            .collect();
        let is_origin = |r: &Read| {
            origins.iter().any(|s| {
                matches!(*s, Origin::Read { at, len, kind, .. }
                    if at == r.at && len == r.len && kind == r.kind)
            })
        };
        let mut guards: Vec<Guard> = Vec::new();
        for r in reads.iter().filter(|r| !is_origin(r)) {
            if !guards
                .iter()
                .any(|g| g.at == r.at && g.len == r.len && g.kind == r.kind)
            {
                guards.push(Guard {
                    at: r.at,
                    len: r.len,
                    kind: r.kind,
                    class: Class::of(r.val),
                });
            }
        }
        self.compiled = Compiled::of(&origins, &alternates, &guards, text);
    }

    /// True when every figure reads from `text` and every guard holds.
    fn serves(&self, text: &str, before: &Context) -> bool {
        let c = &self.compiled;
        let mut read = Scratch::default();
        c.read(text, &mut read);
        c.guards_hold(&read.0)
            && c.figures
                .iter()
                .all(|&s| c.value(s, &read.0, before).is_some())
    }

    /// The text the parser would read for `raw` (`utf8` when the caller has it as a `str`),
    /// cleaning it into `buf` when the shape needs it; None when it is not laid out as the
    /// shape's was.
    pub(crate) fn text<'a>(
        &self,
        raw: &'a [u8],
        utf8: Option<&'a str>,
        buf: &'a mut String,
    ) -> Option<&'a str> {
        let utf8 = || utf8.or_else(|| std::str::from_utf8(raw).ok());
        match &self.text {
            TextAt::Raw => utf8(),
            TextAt::Cut(spans) => cut(utf8()?, spans, buf),
            TextAt::Cleaned(len) => {
                let text = super::clean::clean(raw, buf);
                (text.len() == *len).then_some(text)
            }
        }
    }

    /// Appends the line's records to `out` and returns its info and the context after it, or
    /// None (and `out` as it was) when a figure does not read.
    pub(crate) fn run(
        &self,
        raw: &[u8],
        text: &str,
        before: &Context,
        out: &mut Vec<Record>,
        scratch: &mut Scratch,
    ) -> Option<(LineInfo, Context)> {
        debug_assert!(self.text != TextAt::Raw || text.len() == raw.len());
        let c = &self.compiled;
        c.read(text, scratch);
        let (read, figures, boxes) = (&scratch.0, &mut scratch.1, &mut scratch.2);
        if !c.guards_hold(read) {
            return None;
        }
        // Every figure first, in one plain loop; a figure that does not read sends the line
        // to the full parser.
        figures.clear();
        for &s in &c.figures {
            figures.push(Word::of(Some(c.value(s, read, before)?)));
        }
        let agree = |&(i, alt): &(usize, Source)| {
            let alt = c.value(alt, read, before);
            figures
                .get(i)
                .and_then(|w| w.get())
                .zip(alt)
                .is_some_and(|(a, b)| a.same(b))
        };
        if !c.alternates.iter().all(agree) {
            return None;
        }
        let start = out.len();
        out.extend(self.records.iter().map(|r| match r {
            Record::Step(s) => Record::Step(boxes.boxed(s)),
            r => r.clone(),
        }));
        let (mut info, mut ctx) = (self.info, self.ctx);
        let mut figures = figures.iter();
        let mut ok = true;
        slots(&mut out[start..], &mut info, &mut ctx, &mut |slot| {
            ok = ok
                && figures
                    .next()
                    .and_then(|w| w.get())
                    .is_some_and(|v| slot.set(v));
        });
        let mut spans = self.spans.iter();
        texts(&mut out[start..], &mut |t| {
            let piece = spans.next().and_then(|&(at, len)| text.get(at..at + len));
            match piece {
                Some(piece) => {
                    t.clear();
                    t.push_str(piece);
                }
                None => ok = false,
            }
        });
        if ok {
            Some((info, ctx))
        } else {
            out.truncate(start);
            None
        }
    }
}

/// The ranges `spans` of `raw` one after another in `buf`: a line of a shape
/// whose first line the cleaning only cut, without looking for its controls again. Out of
/// line: inlined, it made the parser's loop too big to inline for logs without colours.
#[inline(never)]
fn cut<'a>(raw: &str, spans: &[(usize, usize)], buf: &'a mut String) -> Option<&'a str> {
    buf.clear();
    for &(from, to) in spans {
        buf.push_str(raw.get(from..to)?);
    }
    Some(buf)
}

/// The key the memo files a line under, for the bench: what every line costs before any
/// of its figures is read, the floor of any reader that knows lines by their shape.
pub fn shape_key(raw: &[u8]) -> u64 {
    skeleton(raw)
}

/// A hash of the line with its number digits masked, eight bytes at a time. A digit is kept
/// when its run of digits follows a letter, `_` or a non-ASCII byte (a name: `Stage8`, `阶段4`);
/// the other digits become `0`.
fn skeleton(raw: &[u8]) -> u64 {
    skeleton_with::<true>(raw)
}

/// `skeleton`, where `SKIP` passes over the masking of words without a digit (most of a log
/// line's words: its names, units and separators); without it, every word takes the whole
/// masking, the reference a test compares against.
fn skeleton_with<const SKIP: bool>(raw: &[u8]) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    // Each word is mixed with its position on its own and the results summed: no chain of
    // multiplications from one word to the next.
    let mut h = 0u64;
    let mut position = 0u64;
    // The previous word's last byte: a digit, a digit kept, a byte that names what follows.
    let (mut digit_in, mut kept_in, mut names_in) = (0u64, 0u64, 0u64);
    let whole = raw.chunks_exact(8).map(|c| {
        let mut b = [0u8; 8];
        b.copy_from_slice(c);
        u64::from_le_bytes(b)
    });
    for w in whole.chain(std::iter::once(tail_word(raw))) {
        let low = w & !HIGH;
        let ascii = !w & HIGH;
        let digit = (low + ONES * (0x80 - 0x30)) & !(low + ONES * (0x80 - 0x3a)) & ascii;
        position = position.wrapping_add(0x9e37_79b9_7f4a_7c15);
        if SKIP && digit == 0 {
            // Nothing to mask; only the last byte matters to the next word.
            h = h.wrapping_add(mix(position, w));
            let last = (w >> 56) as u8;
            (digit_in, kept_in) = (0, 0);
            names_in = u64::from(last.is_ascii_alphabetic() || last == b'_' || last >= 0x80) << 7;
            continue;
        }
        let folded = low | (ONES * 0x20);
        let alpha = (folded + ONES * (0x80 - 0x61)) & !(folded + ONES * (0x80 - 0x7b)) & ascii;
        let not_under = low ^ (ONES * 0x5f);
        let under = !((not_under + ONES * 0x7f) | not_under) & ascii;
        let names = alpha | under | (w & HIGH);
        // A digit whose previous byte names it, or is a kept digit, is kept: spread the
        // run starts along their runs in three doubling steps. Most words start none (a
        // number follows a space, `=` or `:`), and skip the spreading.
        let prev_digit = digit << 8 | digit_in;
        let mut kept = digit & ((names << 8 | names_in) | (prev_digit & kept_in));
        if kept != 0 {
            let run2 = digit & (digit << 8);
            let run4 = run2 & (run2 << 16);
            kept |= (kept << 8) & digit;
            kept |= (kept << 16) & run2;
            kept |= (kept << 32) & run4;
        }
        let masked = ((digit & !kept) >> 7) * 0x0f;
        h = h.wrapping_add(mix(position, w & !masked));
        digit_in = digit >> 56;
        kept_in = kept >> 56;
        names_in = names >> 56;
    }
    mix(h, raw.len() as u64)
}

/// The bytes after the line's last whole word, zero-padded to a word. Read as the line's last
/// eight bytes shifted down, not copied into a padded buffer whose wide load waits for the
/// byte stores before it.
fn tail_word(raw: &[u8]) -> u64 {
    let rest = raw.len() % 8;
    match raw.last_chunk::<8>() {
        Some(last) if rest > 0 => u64::from_le_bytes(*last) >> (8 * (8 - rest)),
        Some(_) => 0,
        None => raw.iter().rev().fold(0, |w, &b| (w << 8) | u64::from(b)),
    }
}

/// One multiply-fold step: enough mixing that different shapes of a file do not collide.
fn mix(h: u64, w: u64) -> u64 {
    let m = u128::from(h ^ w) * 0x9e37_79b9_7f4a_7c15;
    (m as u64) ^ (m >> 64) as u64
}

/// The map's keys are already mixed.
#[derive(Default)]
struct Premixed(u64);

impl Hasher for Premixed {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = mix(self.0, u64::from(b));
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}

/// Reads `s` the way the parser did when it read the number as `kind`.
pub(super) fn read_as(kind: Kind, s: &str) -> Option<Val> {
    match kind {
        Kind::Decimal => num::decimal(s).map(Val::F),
        Kind::Integer => num::integer(s).map(Val::U),
        Kind::Duration => num::duration_s(s).map(Val::F),
        Kind::Timestamp => prefix::timestamp(s).map(|(t, _)| Val::F(t.secs)),
        Kind::Float => s.parse().ok().map(Val::F),
        Kind::Rank => prefix::rank(s).map(|r| Val::U(u64::from(r))),
        Kind::Unfinished => {
            let (n, total) = s.split_once('/')?;
            (num::integer(n)? < num::integer(total)?).then_some(Val::U(1))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::LineSplitter;
    use crate::parse::Parser;

    #[test]
    fn a_word_gives_back_the_read_it_holds() {
        let reads = [
            None,
            Some(Val::F(-0.0)),
            Some(Val::F(f64::NAN)),
            Some(Val::F(2.5e-5)),
            Some(Val::U(0)),
            Some(Val::U(u64::MAX)),
        ];
        for read in reads {
            let back = Word::of(read).get();
            let same = match (read, back) {
                (Some(a), Some(b)) => a.same(b),
                (a, b) => a.is_none() && b.is_none(),
            };
            assert!(same, "{read:?} came back as {back:?}");
        }
    }

    #[test]
    fn skeleton_skips_only_what_the_masking_leaves_alone() {
        let mut lines = fixture_records();
        // Names and numbers across word edges: a digit run after a name at a word's last
        // byte, a non-ASCII byte before digits, `_` before digits.
        lines.extend(
            [
                "abcdefg1 23",
                "abcdefgh12345678 x",
                "1234567_89 abc",
                "阶段4: 12.5ms",
                "rank7 step 12/99 loss 0.5",
            ]
            .map(|l| l.as_bytes().to_vec()),
        );
        for raw in &lines {
            for start in 0..8.min(raw.len()) {
                let raw = &raw[start..];
                assert_eq!(
                    skeleton(raw),
                    skeleton_with::<false>(raw),
                    "{}",
                    String::from_utf8_lossy(raw)
                );
            }
        }
    }

    #[test]
    fn tail_word_is_the_zero_padded_rest() {
        let line: Vec<u8> = (1..=40u8).map(|b| b.wrapping_mul(37) | 0x80).collect();
        for len in 0..=line.len() {
            let raw = &line[..len];
            let rest = &raw[len - len % 8..];
            let mut padded = [0u8; 8];
            padded[..rest.len()].copy_from_slice(rest);
            assert_eq!(tail_word(raw), u64::from_le_bytes(padded), "length {len}");
        }
    }

    /// Every fixture log (the garbage one too) as records the way the tail cuts them.
    fn fixture_records() -> Vec<Vec<u8>> {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/logs");
        let mut files: Vec<_> = std::fs::read_dir(&root)
            .expect("fixtures")
            .flat_map(|d| std::fs::read_dir(d.expect("dir").path()).expect("fixture dir"))
            .map(|f| f.expect("file").path())
            .filter(|f| f.extension().is_none_or(|e| e != "toml"))
            .collect();
        files.sort();
        let mut records = Vec::new();
        let mut split = LineSplitter::new();
        for f in files {
            split.push(&std::fs::read(&f).expect("fixture"), &mut |_, r| {
                records.push(r.to_vec())
            });
            split.finish(&mut |_, r| records.push(r.to_vec()));
        }
        records
    }

    /// The line with each digit the memo masks replaced, at random, by another: new values
    /// in the same layout, including impossible ones (a 19th month, `9e999`).
    fn vary(line: &[u8], seed: &mut u64, odds: u64) -> Vec<u8> {
        let mut next = || {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            *seed
        };
        let mut named = false;
        line.iter()
            .map(|&b| {
                let digit = b.is_ascii_digit();
                let masked = digit && !named;
                named = b.is_ascii_alphabetic() || b == b'_' || b >= 0x80 || (digit && named);
                if masked && next() % odds == 0 {
                    b'0' + (next() % 10) as u8
                } else {
                    b
                }
            })
            .collect()
    }

    /// Parses `lines` with the memo and in full; every line must give the same records, info
    /// and context. Returns how many lines the memo served.
    fn compare(lines: &[Vec<u8>]) -> u64 {
        let (mut memo, mut full) = (Parser::default(), Parser::default());
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for (n, line) in lines.iter().enumerate() {
            a.clear();
            b.clear();
            let ia = memo.parse(line, &mut a);
            let ib = full.parse_whole(line, &mut b);
            // Debug text, so that NaN equals NaN and -0.0 differs from 0.0.
            assert_eq!(
                format!("{ia:?} {a:?} {:?}", memo.context()),
                format!("{ib:?} {b:?} {:?}", full.context()),
                "line {n}: {}",
                String::from_utf8_lossy(line)
            );
        }
        memo.memo_hits()
    }

    /// `compare` over `lines`: how many the memo served, of how many.
    fn served(lines: Vec<String>) -> (u64, usize) {
        let lines: Vec<Vec<u8>> = lines.into_iter().map(String::into_bytes).collect();
        (compare(&lines), lines.len())
    }

    #[test]
    fn memo_reads_every_fixture_exactly_as_the_parser_does() {
        let records = fixture_records();
        for k in 1..=3u64 {
            let mut seed = 0x9e37_79b9_7f4a_7c15u64.wrapping_mul(k);
            let mut lines = Vec::new();
            for round in 0..12 {
                for r in &records {
                    // As written, then mostly new numbers, some lines with every digit new.
                    lines.push(match round % 4 {
                        0 => r.clone(),
                        1 => vary(r, &mut seed, 1),
                        _ => vary(r, &mut seed, 6),
                    });
                }
            }
            let served = compare(&lines);
            assert!(
                served * 2 > lines.len() as u64,
                "the memo served only {served} of {} lines",
                lines.len()
            );
        }
    }

    /// The real logs of every batch (fixtures/wild), each file's first records as written: the
    /// memo reads them as the parser does, layouts nobody wrote for it included.
    #[test]
    fn memo_reads_the_real_logs_exactly_as_the_parser_does() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/wild");
        let mut files = Vec::new();
        let mut folders = vec![root];
        while let Some(folder) = folders.pop() {
            for entry in std::fs::read_dir(&folder).expect("fixtures/wild") {
                let p = entry.expect("entry").path();
                if p.is_dir() {
                    folders.push(p);
                } else if !p
                    .extension()
                    .is_some_and(|e| e == "toml" || e == "json" || e == "csv" || e == "py")
                    && !p.to_string_lossy().contains("tfevents")
                {
                    files.push(p);
                }
            }
        }
        files.sort();
        for f in files {
            let mut records = Vec::new();
            let mut split = LineSplitter::new();
            split.push(&std::fs::read(&f).expect("log"), &mut |_, r| {
                if records.len() < 2000 {
                    records.push(r.to_vec());
                }
            });
            compare(&records);
        }
    }

    #[test]
    fn a_figure_the_parser_adds_up_is_read_as_a_sum() {
        // Ultralytics' loss is the sum of its loss columns: three here, five for pose models;
        // the layout keeps, the numbers change.
        let mut lines = Vec::new();
        for i in 0..30u32 {
            let (a, b, c) = (1 + i % 3, 3 + i % 5, i % 7);
            lines.push(format!(
                "        1/3      2.4{a}G      1.{b}{c}2      2.{c}{a}1      1.{a}{b}3         {b}{c}        640: {c}% ━━━━━━━━━━━━ {a}{b}/90 2.{c}it/s 4.{a}s<14.{b}s"
            ));
            lines.push(format!(
                "      {a}/100      3.0{c}G     0.{b}{c}13      1.{a}22      0.{c}{b}2      1.{a}{c}3      0.{b}{b}1         1{c}        640:  {b}0%|████      | {a}{c}/99 [00:0{b}<00:0{c},  2.{a}{b}it/s]"
            ));
        }
        let (served, of) = served(lines);
        assert!(served > 40, "the memo served {served} of {of} lines");
    }

    #[test]
    fn coloured_lines_are_served_from_the_ranges_their_shape_keeps() {
        // detectron2's coloured logger and a tqdm bar redrawn over backspaces: the escapes
        // hold digits of their own, which change with the colour. Each line read from the
        // memo must be what the parser reads; a line whose text came out wrong would not
        // read, and go to the parser.
        let mut lines = Vec::new();
        for i in 0..40u32 {
            let (a, b, c) = (1 + i % 9, i % 7, 2 + i % 3);
            lines.push(format!(
                "\x1b[3{c}m[09/12 14:0{b}:1{a} d2.utils.events]: \x1b[0m eta: 0:5{b}:40  iter: {a}{b}9  total_loss: 2.{a}07  time: 0.1{b}34  data_time: 0.0{c}54  lr: 0.00{a}99  max_mem: 1{b}41M"
            ));
            lines.push(format!(
                "\x08\x08Epoch {c}: {a}{b}%|\x1b[3{c}m####\x1b[0m| {a}{b}/100 [00:0{b}<00:1{a}, {c}.{a}{b}it/s, loss=0.{b}{a}]"
            ));
        }
        let (served, of) = served(lines);
        assert!(served >= 50, "the memo served {served} of {of} lines");
    }

    #[test]
    fn shapes_seen_a_few_times_make_room_for_new_ones() {
        // More one-off shapes than the memo holds (a long run whose right-aligned columns
        // make a new shape whenever a number's digit count changes), then a step line.
        let word = |i: usize| {
            (0..3)
                .map(|k| char::from(b'a' + (i / 26usize.pow(k) % 26) as u8))
                .collect::<String>()
        };
        let mut lines: Vec<Vec<u8>> = (0..MAX_SHAPES + 100)
            .map(|i| format!("note {} 12", word(i)).into_bytes())
            .collect();
        lines.extend((0..20).map(|i| format!("step {i} | loss={i}.5").into_bytes()));
        assert!(compare(&lines) >= 10, "the step lines were not served");
    }

    #[test]
    fn a_zero_does_not_decide_a_unit() {
        // `Data  0.000` is 0 s and 0 ms: the lines that follow, with real data times, must
        // still read as seconds.
        let mut lines = Vec::new();
        for i in 0..12 {
            lines.push(
                format!("Epoch: [0][{i}00/5005]\tTime  0.3{i} ( 0.5)\tData  0.000 ( 0.9)\tLoss 2.1 (2.1)")
                    .into_bytes(),
            );
        }
        for i in 0..12 {
            lines.push(
                format!("Epoch: [1][{i}00/5005]\tTime  2.4{i} ( 0.5)\tData  2.13{i} ( 0.9)\tLoss 2.1 (2.1)")
                    .into_bytes(),
            );
        }
        assert!(compare(&lines) > 0);
    }

    #[test]
    fn a_shape_that_reads_differently_by_value_is_not_trusted() {
        // Same shape, but the year decides whether the prefix is a timestamp at all.
        let mut lines = Vec::new();
        for i in 0..20 {
            lines.push(format!(
                "2024-01-1{} 10:00:0{} step {i}0 loss=0.5{i}",
                i % 10,
                i % 10
            ));
            lines.push(format!(
                "9024-41-1{} 10:00:0{} step {i}0 loss=0.5{i}",
                i % 10,
                i % 10
            ));
        }
        let lines: Vec<Vec<u8>> = lines.into_iter().map(String::into_bytes).collect();
        compare(&lines);
    }

    #[test]
    fn lines_read_from_the_memo_keep_the_yearless_flag() {
        let mut parser = Parser::default();
        let mut out = Vec::new();
        for i in 0..10 {
            let line = format!(
                "[04/0{} 01:32:1{i} d2.utils.events]:  iter: {i}9  total_loss: 0.5{i}  time: 0.31",
                i % 9 + 1
            );
            let info = parser.parse(line.as_bytes(), &mut out);
            assert!(info.yearless && info.time.is_some(), "{line}");
            let dated = format!("2025/04/0{} 01:32:1{i} - mmengine - INFO - x", i % 9 + 1);
            assert!(!parser.parse(dated.as_bytes(), &mut out).yearless);
        }
        assert!(parser.memo_hits() > 0);
    }

    /// The skeleton's bytes one at a time, as the rule says, and where it keeps a digit.
    fn masked_slowly(raw: &[u8]) -> (Vec<u8>, Vec<usize>) {
        let mut named = false;
        let mut kept = Vec::new();
        let masked = raw
            .iter()
            .enumerate()
            .map(|(i, &b)| {
                let digit = b.is_ascii_digit();
                if digit && named {
                    kept.push(i);
                }
                let out = if digit && !named { b'0' } else { b };
                named = b.is_ascii_alphabetic() || b == b'_' || b >= 0x80 || (digit && named);
                out
            })
            .collect();
        (masked, kept)
    }

    #[test]
    fn skeleton_masks_exactly_the_digits_the_rule_says() {
        let mut seed = 0x1234_5678_9abc_def1_u64;
        let alphabet = b"0123456789a_Z.:- \x80\xe9/[";
        for len in 0..200 {
            for _ in 0..50 {
                let line: Vec<u8> = (0..len)
                    .map(|_| {
                        seed ^= seed << 13;
                        seed ^= seed >> 7;
                        seed ^= seed << 17;
                        alphabet[(seed % alphabet.len() as u64) as usize]
                    })
                    .collect();
                let shown = String::from_utf8_lossy(&line).into_owned();
                let (masked, kept) = masked_slowly(&line);
                // Other digits where the rule masks: the same shape.
                assert_eq!(skeleton(&line), skeleton(&masked), "{shown:?}");
                // Another digit where it keeps one: another shape.
                if let Some(&i) = kept.last() {
                    let mut other = line.clone();
                    other[i] = if line[i] == b'7' { b'3' } else { b'7' };
                    assert_ne!(skeleton(&line), skeleton(&other), "{shown:?} at {i}");
                }
            }
        }
    }

    #[test]
    fn names_with_digits_are_part_of_the_shape() {
        assert_ne!(
            skeleton(b"Stage8 : 965.12ms"),
            skeleton(b"Stage2 : 965.12ms")
        );
        assert_eq!(
            skeleton(b"Stage8 : 965.12ms"),
            skeleton(b"Stage8 : 123.45ms")
        );
        assert_ne!(skeleton(b"loss 0.5"), skeleton(b"loss 0.55"));
    }
}
