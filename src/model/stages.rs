//! Timing blocks: the lines of each block gathered (per file: a header, a repeated label or a
//! total ends one), read through timing.rs (its tree, its forward, what its total is), and
//! folded into per-stage and per-part cost over the run and recently; each block is matched
//! with its step so that the time no log accounts for (backward, optimizer, sync) is measured.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashMap, VecDeque};
use std::hash::{Hash, Hasher};

use super::Stamp;
use super::breakdown::Over;
use super::step_map::StepMap;
use super::timing::{self, Figures, Line, Place, Structure, TotalIs};
use super::window::{Rolling, RunStats};
use crate::parse::labels::Role;
use crate::parse::record::{PhaseTimers, StageRecord};

/// Blocks that count towards a stage's baseline (after the warm-up ones).
const BASELINE_BLOCKS: u64 = 20;
const WARMUP_BLOCKS: u64 = 2;

/// One piece of the forward, over the run.
#[derive(Clone, Debug)]
pub struct StageStats {
    pub name: String,
    /// Levels below the forward (0: a direct part of it).
    pub depth: u8,
    /// It has no parts of its own in the latest block: the finest piece the log times.
    pub leaf: bool,
    /// The name says the stage times a host-to-device copy (`H2D`, `to_device`, `copy`...).
    pub copies: bool,
    pub ms: RunStats,
    pub recent: Rolling,
    baseline: RunStats,
    blocks: u64,
}

impl StageStats {
    /// Mean cost over `span`'s blocks.
    pub fn mean(&self, span: Over) -> Option<f64> {
        span.mean(&self.ms, &self.recent)
    }

    /// Recent mean against the run's own early mean (1.0 = unchanged).
    pub fn trend(&self, window: usize) -> Option<f64> {
        if self.blocks < WARMUP_BLOCKS + BASELINE_BLOCKS {
            return None;
        }
        Some(self.recent.mean_last(window)? / self.baseline.mean()?)
    }
}

/// A logged part of the step outside the forward: the data wait, the loss, the backward, the
/// optimizer, a copy, or another named piece.
#[derive(Clone, Debug)]
pub struct PartStats {
    pub name: String,
    pub role: Role,
    pub ms: RunStats,
    pub recent: Rolling,
}

impl PartStats {
    /// Mean cost over `span`'s blocks.
    pub fn mean(&self, span: Over) -> Option<f64> {
        span.mean(&self.ms, &self.recent)
    }
}

/// A step's figures kept for matching with its timing block.
#[derive(Clone, Copy, Debug)]
pub struct StepFacts {
    pub time: f64,
    pub step_ms: f64,
    /// The data time the step line gave, if it gave one.
    pub data_ms: Option<f64>,
}

/// A step time a block's total gave (its total is the whole step), for the model to use when
/// no step line times the steps.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BlockStep {
    pub step: Option<u64>,
    pub time: f64,
    pub rank: u32,
    pub step_ms: f64,
    pub data_ms: Option<f64>,
}

/// A block being gathered.
#[derive(Clone, Debug)]
struct Block {
    step: Option<u64>,
    time: f64,
    rank: u32,
    lines: Vec<Line>,
    has_total: bool,
    /// How many steps its figures sum: 1 but for a framework's timers that sum the steps
    /// since their previous block, and 0 for timers that time no step (dropped).
    steps: f64,
    /// A framework's phase timers (`timer_block`).
    timers: Option<PhaseTimers>,
    /// Lines the framework times within another line of the block, by that line's role.
    inside: Vec<(usize, Role)>,
}

/// How many recent steps and unmatched blocks are kept for matching: memory stays bounded.
const MATCH_KEEP: usize = 4096;
/// Block layouts (label sequences) remembered with their structures; further ones are read
/// afresh each time.
const LAYOUTS_KEPT: usize = 64;
/// Structures one layout keeps with their votes.
const CANDIDATES: usize = 4;
/// Stage names (and names of parts outside the forward) followed; a log whose names embed a
/// step number or a timestamp would otherwise add one per block for weeks. Lines of further
/// names are counted in `names_dropped` and left out of the figures per name.
pub const NAMES_KEPT: usize = 256;

/// All timing-block state.
#[derive(Clone, Debug)]
pub struct Stages {
    /// Pieces of the forward, in the order first seen.
    pub by_name: Vec<StageStats>,
    index: HashMap<String, usize>,
    /// Parts outside the forward, in the order first seen.
    pub parts: Vec<PartStats>,
    part_index: HashMap<String, usize>,
    /// Lines whose name came after `NAMES_KEPT` others.
    pub names_dropped: u64,
    pub forward_ms: RunStats,
    pub recent_forward: Rolling,
    /// Per block: the logged parts outside the forward besides the data wait.
    pub other_ms: RunStats,
    pub recent_other: Rolling,
    /// Step time minus data, forward and the other logged parts, for blocks matched with
    /// their step (or whose total is the step).
    pub unlogged_ms: RunStats,
    pub recent_unlogged: Rolling,
    pub blocks: u64,
    /// The step of the block closed last, when it named one.
    pub last_closed: Option<u64>,
    /// How the blocks' totals were read: how often each way, with the latest such block, whose
    /// sentence the report asks for once (`reading`).
    pub readings: Vec<(TotalIs, u64, Vec<Line>, Structure)>,
    /// Step times from whole-step totals since the model last took them.
    pub closed: Vec<BlockStep>,
    /// Data waits of blocks matched with a step line that gave none, with that step's time,
    /// since the model last took them.
    pub matched_data: Vec<BlockStep>,
    /// The mean data wait a run's profiler report gave (`PhaseTimers::RunMeans`).
    pub run_data_ms: Option<f64>,
    window: usize,
    /// The open block of each file.
    open: Vec<(usize, Block)>,
    /// Per file: the step of its latest block of a framework's phase timers.
    timer_steps: Vec<(usize, u64)>,
    /// Per file: whether its total comes first in a block (else last), once seen.
    total_first: Vec<(usize, bool)>,
    layouts: HashMap<u64, Vec<(Structure, u64)>>,
    steps: StepMap<StepFacts>,
    steps_by_time: VecDeque<(f64, StepFacts)>,
    pending: VecDeque<(u64, u32, Figures)>,
}

impl Stages {
    pub fn new(window: usize) -> Self {
        Stages {
            by_name: Vec::new(),
            index: HashMap::new(),
            parts: Vec::new(),
            part_index: HashMap::new(),
            names_dropped: 0,
            forward_ms: RunStats::default(),
            recent_forward: Rolling::new(window),
            other_ms: RunStats::default(),
            recent_other: Rolling::new(window),
            unlogged_ms: RunStats::default(),
            recent_unlogged: Rolling::new(window),
            blocks: 0,
            last_closed: None,
            readings: Vec::new(),
            closed: Vec::new(),
            matched_data: Vec::new(),
            run_data_ms: None,
            window,
            open: Vec::new(),
            total_first: Vec::new(),
            timer_steps: Vec::new(),
            layouts: HashMap::new(),
            steps: StepMap::new(MATCH_KEEP),
            steps_by_time: VecDeque::new(),
            pending: VecDeque::new(),
        }
    }

    /// A `[Step N]` header: closes the file's open block and opens one for step N.
    pub fn block_start(&mut self, step: Option<u64>, at: &Stamp) {
        self.close(at.source);
        self.open.push((at.source, block(step, at)));
    }

    /// A framework's phase timers for `step`, the step they time. Timers that sum the steps
    /// since their previous block are divided by that many steps: the block is one step's. A
    /// block with no step to pair with (before any step line), or for a step already timed (a
    /// repeated print), says nothing of a step: its lines are dropped.
    pub fn timer_block(&mut self, step: Option<u64>, timers: PhaseTimers, at: &Stamp) {
        self.close(at.source);
        let steps = match (timers, step) {
            (PhaseTimers::RunMeans, _) => 1,
            (_, None) => 0,
            (_, Some(step)) => {
                let before = match self.timer_steps.iter_mut().find(|(s, _)| *s == at.source) {
                    Some((_, last)) => std::mem::replace(last, step),
                    None => {
                        self.timer_steps.push((at.source, step));
                        0
                    }
                };
                match timers {
                    PhaseTimers::SinceLastBlock => step.saturating_sub(before),
                    PhaseTimers::PerStep | PhaseTimers::RunMeans => 1,
                }
            }
        };
        let mut b = block(step, at);
        b.steps = steps as f64;
        b.timers = Some(timers);
        self.open.push((at.source, b));
    }

    /// A stage line. A label the open block already has at its outermost indentation, or
    /// another step number, begins the next block.
    pub fn stage(&mut self, s: StageRecord, at: &Stamp) {
        let line = Line {
            role: s.role,
            name: s.name,
            ms: s.ms,
            share_pct: s.share_pct,
            indent: s.depth,
        };
        let starts_new = match self.open_of(at.source) {
            None => true,
            Some(b) => {
                (s.step.is_some() && b.step.is_some() && s.step != b.step)
                    || (line.indent == 0
                        && b.lines.iter().any(|o| o.indent == 0 && o.name == line.name))
            }
        };
        if starts_new {
            self.close(at.source);
            self.open.push((at.source, block(s.step, at)));
        }
        if let Some(b) = self.open_mut(at.source) {
            if let Some(role) = s.inside {
                b.inside.push((b.lines.len(), role));
            }
            b.lines.push(line);
        }
    }

    /// A total line. It ends its block when the file prints totals last, and begins one when
    /// it prints them first (learnt from the first total: one that finds no lines before it
    /// in its block comes first).
    pub fn total(&mut self, name: String, role: Role, ms: f64, step: Option<u64>, at: &Stamp) {
        let line = Line {
            role,
            name,
            ms,
            share_pct: None,
            indent: 0,
        };
        let first = self
            .total_first
            .iter()
            .find(|(s, _)| *s == at.source)
            .map(|(_, f)| *f);
        let open = self
            .open_of(at.source)
            .map(|b| (b.lines.is_empty(), b.has_total));
        match open {
            Some((false, false)) if first != Some(true) => {
                self.learn_order(at.source, false);
                if let Some(b) = self.open_mut(at.source) {
                    b.lines.push(line);
                }
                self.close(at.source);
            }
            Some((true, _)) => {
                self.learn_order(at.source, true);
                if let Some(b) = self.open_mut(at.source) {
                    b.lines.push(line);
                    b.has_total = true;
                }
            }
            _ => {
                self.close(at.source);
                if first.is_none() {
                    self.learn_order(at.source, true);
                }
                let mut b = block(step, at);
                b.lines.push(line);
                b.has_total = true;
                self.open.push((at.source, b));
            }
        }
    }

    /// Ends every open block (at the end of input).
    pub fn finish(&mut self) {
        let sources: Vec<usize> = self.open.iter().map(|(s, _)| *s).collect();
        for s in sources {
            self.close(s);
        }
    }

    fn learn_order(&mut self, source: usize, first: bool) {
        if !self.total_first.iter().any(|(s, _)| *s == source) {
            self.total_first.push((source, first));
        }
    }

    fn open_of(&self, source: usize) -> Option<&Block> {
        self.open.iter().find(|(s, _)| *s == source).map(|(_, b)| b)
    }

    fn open_mut(&mut self, source: usize) -> Option<&mut Block> {
        self.open
            .iter_mut()
            .find(|(s, _)| *s == source)
            .map(|(_, b)| b)
    }

    /// Closes the open block of file `source`, if any, and folds it in.
    fn close(&mut self, source: usize) {
        let Some(i) = self.open.iter().position(|(s, _)| *s == source) else {
            return;
        };
        let (_, mut b) = self.open.swap_remove(i);
        if b.lines.is_empty() || b.steps == 0.0 {
            return;
        }
        if b.steps > 1.0 {
            for l in &mut b.lines {
                l.ms /= b.steps;
            }
        }
        // A line timed within another: the other's own time is what is left of it.
        for &(i, role) in &b.inside {
            let held = b.lines[i].ms;
            let outer = (0..b.lines.len())
                .find(|&j| b.lines[j].role == role && b.inside.iter().all(|(k, _)| *k != j));
            if let Some(j) = outer {
                b.lines[j].ms = (b.lines[j].ms - held).max(0.0);
            }
        }
        // A framework's timers are flat by design: none holds another by its value, however
        // close two sums come (forward-compute may equal backward-compute).
        let structure = if b.timers.is_some() {
            timing::Structure {
                parent: vec![None; b.lines.len()],
            }
        } else {
            self.structure(&b.lines)
        };
        let r = timing::read(&b.lines, &structure);
        self.blocks += 1;
        self.last_closed = b.step;
        let fig = r.figures;
        if let Some(f) = fig.forward_ms {
            self.forward_ms.push(f);
            self.recent_forward.push(b.time, f);
        }
        self.other_ms.push(fig.other_ms);
        self.recent_other.push(b.time, fig.other_ms);
        let mut has_parts = vec![false; b.lines.len()];
        for (p, _) in structure.parent.iter().flatten() {
            has_parts[*p] = true;
        }
        let n = self.blocks;
        for (i, line) in b.lines.iter().enumerate() {
            match r.place[i] {
                Place::InForward(depth) => {
                    self.push_stage(line, depth, !has_parts[i], b.time, n);
                }
                Place::Outside => self.push_part(line, b.time),
                Place::Forward | Place::Total | Place::Below => {}
            }
        }
        if let Some(step_ms) = fig.step_ms {
            self.closed.push(BlockStep {
                step: b.step,
                time: b.time,
                rank: b.rank,
                step_ms,
                data_ms: fig.data_ms,
            });
        }
        // Means over the run are no step's: the breakdown sets them against the mean step.
        if b.timers == Some(PhaseTimers::RunMeans) {
            if fig.data_ms.is_some() {
                self.run_data_ms = fig.data_ms;
            }
            return;
        }
        let facts = match b.step {
            Some(step) => self.steps.get(step),
            None => self.step_at(b.time),
        };
        // A block whose total is the step needs no step line.
        let complete = fig.step_ms.is_some();
        match (facts, b.step) {
            (Some(f), _) => self.settle(fig, Some(f), f.time, b.rank),
            (None, Some(step)) if !complete => {
                if self.pending.len() == MATCH_KEEP {
                    self.pending.pop_front();
                }
                self.pending.push_back((step, b.rank, fig));
            }
            (None, _) => self.settle(fig, None, b.time, b.rank),
        }
        if r.total != TotalIs::Absent {
            let kept = (b.lines, structure);
            match self.readings.iter_mut().find(|(t, ..)| *t == r.total) {
                Some(entry) => {
                    entry.1 += 1;
                    (entry.2, entry.3) = kept;
                }
                None => self.readings.push((r.total, 1, kept.0, kept.1)),
            }
        }
    }

    /// The structure to read `lines` with: the one their layout's earlier blocks voted for
    /// when it fits these numbers too, else their own.
    fn structure(&mut self, lines: &[Line]) -> Structure {
        let mut h = DefaultHasher::new();
        for l in lines {
            (&l.name, l.indent, l.role, l.share_pct.is_some()).hash(&mut h);
        }
        let key = h.finish();
        if !self.layouts.contains_key(&key) && self.layouts.len() >= LAYOUTS_KEPT {
            return timing::structure(lines);
        }
        let candidates = self.layouts.entry(key).or_default();
        let leader = candidates
            .iter_mut()
            .enumerate()
            .max_by(|a, b| a.1.1.cmp(&b.1.1).then(b.0.cmp(&a.0)))
            .map(|(_, c)| c);
        if let Some((s, votes)) = leader
            && timing::fits(s, lines)
        {
            *votes += 1;
            return s.clone();
        }
        let own = timing::structure(lines);
        if let Some((_, votes)) = candidates.iter_mut().find(|(s, _)| *s == own) {
            *votes += 1;
        } else if candidates.len() < CANDIDATES {
            candidates.push((own.clone(), 1));
        } else if let Some(least) = candidates.iter_mut().min_by_key(|(_, v)| *v) {
            *least = (own.clone(), 1);
        }
        own
    }

    fn push_stage(&mut self, line: &Line, depth: u8, leaf: bool, t: f64, n: u64) {
        let i = match self.index.get(&line.name) {
            Some(&i) => i,
            None if self.by_name.len() >= NAMES_KEPT => {
                self.names_dropped += 1;
                return;
            }
            None => {
                self.by_name.push(StageStats {
                    copies: line.role == Role::Copy,
                    name: line.name.clone(),
                    depth,
                    leaf,
                    ms: RunStats::default(),
                    recent: Rolling::new(self.window),
                    baseline: RunStats::default(),
                    blocks: 0,
                });
                self.index.insert(line.name.clone(), self.by_name.len() - 1);
                self.by_name.len() - 1
            }
        };
        let st = &mut self.by_name[i];
        st.leaf = leaf;
        st.blocks += 1;
        st.ms.push(line.ms);
        st.recent.push(t, line.ms);
        if (WARMUP_BLOCKS..WARMUP_BLOCKS + BASELINE_BLOCKS).contains(&(n - 1)) {
            st.baseline.push(line.ms);
        }
    }

    fn push_part(&mut self, line: &Line, t: f64) {
        let i = match self.part_index.get(&line.name) {
            Some(&i) => i,
            None if self.parts.len() >= NAMES_KEPT => {
                self.names_dropped += 1;
                return;
            }
            None => {
                self.parts.push(PartStats {
                    name: line.name.clone(),
                    role: line.role,
                    ms: RunStats::default(),
                    recent: Rolling::new(self.window),
                });
                self.part_index
                    .insert(line.name.clone(), self.parts.len() - 1);
                self.parts.len() - 1
            }
        };
        self.parts[i].ms.push(line.ms);
        self.parts[i].recent.push(t, line.ms);
    }

    /// A step's figures, to match blocks that came before or will come after it.
    pub fn step(&mut self, step: Option<u64>, f: StepFacts) {
        if let Some(step) = step {
            if self.steps.contains(step) {
                return;
            }
            if let Some(i) = self.pending.iter().position(|(s, ..)| *s == step)
                && let Some((_, rank, fig)) = self.pending.remove(i)
            {
                self.settle(fig, Some(f), f.time, rank);
            }
            self.steps.insert(step, f);
        }
        if self.steps_by_time.len() == MATCH_KEEP {
            self.steps_by_time.pop_front();
        }
        self.steps_by_time.push_back((f.time, f));
    }

    /// The first step that ended at or after `t`, within one step time of it: a forward pass
    /// is logged during its step, and the step's line comes at its end.
    fn step_at(&self, t: f64) -> Option<StepFacts> {
        let (_, f) = self.steps_by_time.iter().find(|(end, _)| *end >= t)?;
        (f.time - t <= f.step_ms / 1000.0 + 1.0).then_some(*f)
    }

    /// The unlogged time of a block: its step (its own total when that is the step, else its
    /// step line's) less the data wait, the forward and the other logged parts. A data wait the
    /// block itemises for a step line that times the step but not its data is kept for the
    /// data share (`matched_data`).
    fn settle(&mut self, fig: Figures, facts: Option<StepFacts>, time: f64, rank: u32) {
        let Some(step) = fig.step_ms.or(facts.map(|f| f.step_ms)) else {
            return;
        };
        if let (None, Some(f), Some(data_ms)) = (fig.step_ms, facts, fig.data_ms)
            && f.data_ms.is_none()
        {
            self.matched_data.push(BlockStep {
                step: None,
                time,
                rank,
                step_ms: f.step_ms,
                data_ms: Some(data_ms),
            });
        }
        let data = fig.data_ms.or(facts.and_then(|f| f.data_ms)).unwrap_or(0.0);
        let unlogged = (step - data - fig.forward_ms.unwrap_or(0.0) - fig.other_ms).max(0.0);
        self.unlogged_ms.push(unlogged);
        self.recent_unlogged.push(time, unlogged);
    }

    /// Forward stages hottest first (by mean cost), outer stages before their parts at equal
    /// cost.
    pub fn hottest(&self) -> Vec<&StageStats> {
        let mut v: Vec<&StageStats> = self.by_name.iter().collect();
        v.sort_by(|a, b| {
            let (ma, mb) = (a.ms.mean().unwrap_or(0.0), b.ms.mean().unwrap_or(0.0));
            mb.total_cmp(&ma).then(a.depth.cmp(&b.depth))
        });
        v
    }

    /// How most blocks' totals were read, as a sentence; None when no block had a total.
    pub fn reading(&self) -> Option<String> {
        let (_, _, lines, s) = self.readings.iter().max_by_key(|(_, n, ..)| *n)?;
        timing::describe(lines, s)
    }
}

fn block(step: Option<u64>, at: &Stamp) -> Block {
    Block {
        step,
        time: at.time,
        rank: at.rank,
        lines: Vec::new(),
        has_total: false,
        steps: 1.0,
        timers: None,
        inside: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(name: &str, ms: f64, depth: u8) -> StageRecord {
        StageRecord {
            name: name.into(),
            role: crate::parse::labels::role(name),
            ms,
            share_pct: None,
            depth,
            step: Some(1),
            inside: None,
        }
    }

    fn at(source: usize) -> Stamp {
        Stamp {
            source,
            ..Stamp::default()
        }
    }

    #[test]
    fn a_total_of_parents_and_children_is_not_the_forward() {
        let mut s = Stages::new(10);
        s.block_start(Some(1), &at(0));
        for r in [
            st("a", 10.0, 0),
            st("b", 90.0, 0),
            st("b.x", 60.0, 1),
            st("b.y", 30.0, 1),
        ] {
            s.stage(r, &at(0));
        }
        s.total("Total".into(), Role::Total, 190.0, Some(1), &at(0));
        assert_eq!(s.forward_ms.mean(), Some(100.0));
        assert_eq!(s.readings[0].0, TotalIs::Nested);
    }

    #[test]
    fn names_that_change_every_block_are_followed_up_to_a_bound() {
        // A stage whose name carries the block's number: a new name each block, ten times
        // past the bound. The forward is still every block's.
        let mut s = Stages::new(10);
        let blocks = 10 * NAMES_KEPT;
        for n in 0..blocks {
            s.block_start(Some(n as u64 + 1), &at(0));
            s.stage(st("encoder", 40.0, 0), &at(0));
            s.stage(st(&format!("decode batch {n}"), 60.0, 0), &at(0));
            s.total(
                "Total".into(),
                Role::Total,
                100.0,
                Some(n as u64 + 1),
                &at(0),
            );
        }
        s.finish();
        assert_eq!(s.by_name.len(), NAMES_KEPT);
        assert_eq!(s.names_dropped, (blocks - (NAMES_KEPT - 1)) as u64);
        assert_eq!(s.forward_ms.count(), blocks as u64);
        assert_eq!(s.by_name[0].name, "encoder");
        assert_eq!(s.by_name[0].ms.count(), blocks as u64);
    }

    #[test]
    fn a_real_total_is_the_forward() {
        let mut s = Stages::new(10);
        for r in [st("a", 10.0, 0), st("b", 80.0, 0)] {
            s.stage(r, &at(0));
        }
        s.total("Total".into(), Role::Total, 100.0, None, &at(0));
        assert_eq!(s.forward_ms.mean(), Some(100.0));
    }

    #[test]
    fn totals_first_begin_their_block() {
        let mut s = Stages::new(10);
        for _ in 0..3 {
            s.total("Total".into(), Role::Total, 100.0, None, &at(0));
            s.stage(st("a", 40.0, 0), &at(0));
            s.stage(st("b", 60.0, 0), &at(0));
        }
        s.finish();
        assert_eq!(s.blocks, 3);
        assert_eq!(s.forward_ms.mean(), Some(100.0));
        assert_eq!(s.by_name.len(), 2);
    }

    #[test]
    fn two_files_keep_their_blocks_apart() {
        let mut s = Stages::new(10);
        s.stage(st("a", 10.0, 0), &at(0));
        s.stage(st("a", 20.0, 0), &at(1));
        s.stage(st("b", 10.0, 0), &at(0));
        s.stage(st("b", 20.0, 0), &at(1));
        s.finish();
        assert_eq!(s.blocks, 2);
        assert_eq!(s.forward_ms.quantile(0.5).map(f64::round), Some(20.0));
    }

    #[test]
    fn blocks_match_steps_in_either_order() {
        let mut s = Stages::new(10);
        s.step(
            Some(1),
            StepFacts {
                time: 6.0,
                step_ms: 6000.0,
                data_ms: None,
            },
        );
        s.block_start(Some(1), &at(0));
        s.stage(st("a", 1800.0, 0), &at(0));
        s.block_start(Some(2), &at(0));
        s.stage(
            StageRecord {
                step: Some(2),
                ..st("a", 1800.0, 0)
            },
            &at(0),
        );
        s.finish();
        assert_eq!(s.unlogged_ms.count(), 1);
        s.step(
            Some(2),
            StepFacts {
                time: 12.0,
                step_ms: 6100.0,
                data_ms: Some(100.0),
            },
        );
        assert_eq!(s.unlogged_ms.count(), 2);
        assert_eq!(s.unlogged_ms.mean(), Some(4200.0));
    }
}
