//! Forward stages from timing logs: blocks of stage lines assembled into one forward pass each,
//! per-stage cost and trend, and the match of each block with its step so that the time no log
//! accounts for (backward, optimizer, sync) can be measured.

use std::collections::{BTreeMap, HashMap, VecDeque};

use super::window::{Rolling, RunStats};
use crate::parse::record::StageRecord;

/// Blocks that count towards a stage's baseline (after the warm-up ones).
const BASELINE_BLOCKS: u64 = 20;
const WARMUP_BLOCKS: u64 = 2;

/// One stage's cost over the run.
#[derive(Clone, Debug)]
pub struct StageStats {
    pub name: String,
    pub depth: u8,
    /// The name says the stage times a host-to-device copy (`H2D`, `to_device`, `copy`...).
    pub copies: bool,
    pub ms: RunStats,
    pub recent: Rolling,
    baseline: RunStats,
    blocks: u64,
}

impl StageStats {
    /// Recent mean against the run's own early mean (1.0 = unchanged).
    pub fn trend(&self, window: usize) -> Option<f64> {
        if self.blocks < WARMUP_BLOCKS + BASELINE_BLOCKS {
            return None;
        }
        Some(self.recent.mean_last(window)? / self.baseline.mean()?)
    }
}

/// Words in a stage name that mean it times a host-to-device copy.
const COPY_WORDS: [&str; 6] = [
    "h2d",
    "to_device",
    "todevice",
    "copy",
    "transfer",
    "to_cuda",
];

fn copies(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    COPY_WORDS.iter().any(|w| name.contains(w))
}

/// A forward pass as a timing log printed it.
#[derive(Clone, Debug, Default)]
struct Block {
    step: Option<u64>,
    time: f64,
    stages: Vec<StageRecord>,
    total: Option<f64>,
}

impl Block {
    /// The forward time: the top-level stages, or the logged total when it is the forward and
    /// not a sum of parents and children together.
    fn forward_ms(&self) -> Option<f64> {
        let top: f64 = self
            .stages
            .iter()
            .filter(|s| s.depth == 0)
            .map(|s| s.ms)
            .sum();
        let all: f64 = self.stages.iter().map(|s| s.ms).sum();
        let nested = self.stages.iter().any(|s| s.depth > 0);
        match self.total {
            Some(t) if nested && (t - all).abs() <= 0.01 * t.max(1e-9) => Some(top),
            Some(t) => Some(t),
            None if self.stages.is_empty() => None,
            None => Some(top),
        }
    }
}

/// A step's figures kept for matching with its timing block.
#[derive(Clone, Copy, Debug)]
pub struct StepFacts {
    pub time: f64,
    pub step_ms: f64,
    pub data_ms: f64,
}

/// How many recent steps and unmatched blocks are kept for matching: memory stays bounded.
const MATCH_KEEP: usize = 4096;

/// All forward-stage state.
#[derive(Clone, Debug)]
pub struct Stages {
    pub by_name: Vec<StageStats>,
    index: HashMap<String, usize>,
    pub forward_ms: RunStats,
    pub recent_forward: Rolling,
    /// Step time minus data time minus forward time, for blocks matched with their step.
    pub unlogged_ms: RunStats,
    pub recent_unlogged: Rolling,
    pub blocks: u64,
    /// The step of the block closed last, when it named one.
    pub last_closed: Option<u64>,
    window: usize,
    open: Option<Block>,
    steps: BTreeMap<u64, StepFacts>,
    steps_by_time: VecDeque<(f64, StepFacts)>,
    pending: VecDeque<(u64, f64)>,
}

impl Stages {
    pub fn new(window: usize) -> Self {
        Stages {
            by_name: Vec::new(),
            index: HashMap::new(),
            forward_ms: RunStats::default(),
            recent_forward: Rolling::new(window),
            unlogged_ms: RunStats::default(),
            recent_unlogged: Rolling::new(window),
            blocks: 0,
            last_closed: None,
            window,
            open: None,
            steps: BTreeMap::new(),
            steps_by_time: VecDeque::new(),
            pending: VecDeque::new(),
        }
    }

    /// A `[Step N]` header: closes the open block and opens one for step N.
    pub fn block_start(&mut self, step: Option<u64>, t: f64) {
        self.close();
        self.open = Some(Block {
            step,
            time: t,
            ..Block::default()
        });
    }

    pub fn stage(&mut self, s: StageRecord, t: f64) {
        let starts_new = match &self.open {
            None => true,
            Some(b) => {
                (s.step.is_some() && b.step.is_some() && s.step != b.step)
                    || (s.depth == 0 && b.stages.iter().any(|o| o.depth == 0 && o.name == s.name))
            }
        };
        if starts_new {
            self.close();
            self.open = Some(Block {
                step: s.step,
                time: t,
                ..Block::default()
            });
        }
        if let Some(b) = &mut self.open {
            b.stages.push(s);
        }
    }

    pub fn total(&mut self, ms: f64, step: Option<u64>, t: f64) {
        let b = self.open.get_or_insert_with(|| Block {
            step,
            time: t,
            ..Block::default()
        });
        b.total = Some(ms);
        self.close();
    }

    /// Ends the open block (at a header, a total, or the end of input).
    pub fn close(&mut self) {
        let Some(b) = self.open.take() else { return };
        let Some(forward) = b.forward_ms() else {
            return;
        };
        self.blocks += 1;
        self.last_closed = b.step;
        let n = self.blocks;
        self.forward_ms.push(forward);
        self.recent_forward.push(b.time, forward);
        for s in b.stages {
            let i = match self.index.get(&s.name) {
                Some(&i) => i,
                None => {
                    self.by_name.push(StageStats {
                        copies: copies(&s.name),
                        name: s.name.clone(),
                        depth: s.depth,
                        ms: RunStats::default(),
                        recent: Rolling::new(self.window),
                        baseline: RunStats::default(),
                        blocks: 0,
                    });
                    self.index.insert(s.name, self.by_name.len() - 1);
                    self.by_name.len() - 1
                }
            };
            let st = &mut self.by_name[i];
            st.blocks += 1;
            st.ms.push(s.ms);
            st.recent.push(b.time, s.ms);
            if (WARMUP_BLOCKS..WARMUP_BLOCKS + BASELINE_BLOCKS).contains(&(n - 1)) {
                st.baseline.push(s.ms);
            }
        }
        let facts = match b.step {
            Some(step) => self.steps.get(&step).copied(),
            None => self.step_at(b.time),
        };
        match (facts, b.step) {
            (Some(f), _) => self.record_unlogged(f, forward),
            (None, Some(step)) => {
                if self.pending.len() == MATCH_KEEP {
                    self.pending.pop_front();
                }
                self.pending.push_back((step, forward));
            }
            (None, None) => {}
        }
    }

    /// A step's figures, to match blocks that came before or will come after it.
    pub fn step(&mut self, step: Option<u64>, f: StepFacts) {
        if let Some(step) = step {
            if self.steps.contains_key(&step) {
                return;
            }
            if let Some(i) = self.pending.iter().position(|(s, _)| *s == step)
                && let Some((_, forward)) = self.pending.remove(i)
            {
                self.record_unlogged(f, forward);
            }
            self.steps.insert(step, f);
            if self.steps.len() > MATCH_KEEP {
                self.steps.pop_first();
            }
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

    fn record_unlogged(&mut self, f: StepFacts, forward: f64) {
        let unlogged = (f.step_ms - f.data_ms - forward).max(0.0);
        self.unlogged_ms.push(unlogged);
        self.recent_unlogged.push(f.time, unlogged);
    }

    /// Stages hottest first (by mean cost), top-level stages before their children at equal cost.
    pub fn hottest(&self) -> Vec<&StageStats> {
        let mut v: Vec<&StageStats> = self.by_name.iter().collect();
        v.sort_by(|a, b| {
            let (ma, mb) = (a.ms.mean().unwrap_or(0.0), b.ms.mean().unwrap_or(0.0));
            mb.total_cmp(&ma).then(a.depth.cmp(&b.depth))
        });
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn st(name: &str, ms: f64, depth: u8) -> StageRecord {
        StageRecord {
            name: name.into(),
            ms,
            share_pct: None,
            depth,
            step: Some(1),
        }
    }

    #[test]
    fn a_total_of_parents_and_children_is_not_the_forward() {
        let mut s = Stages::new(10);
        s.block_start(Some(1), 0.0);
        for r in [
            st("a", 10.0, 0),
            st("b", 90.0, 0),
            st("b.x", 60.0, 1),
            st("b.y", 30.0, 1),
        ] {
            s.stage(r, 0.0);
        }
        s.total(190.0, Some(1), 0.0);
        assert_eq!(s.forward_ms.mean(), Some(100.0));
    }

    #[test]
    fn a_real_total_is_the_forward() {
        let mut s = Stages::new(10);
        for r in [st("a", 10.0, 0), st("b", 80.0, 0)] {
            s.stage(r, 0.0);
        }
        s.total(100.0, None, 0.0);
        assert_eq!(s.forward_ms.mean(), Some(100.0));
    }

    #[test]
    fn blocks_match_steps_in_either_order() {
        let mut s = Stages::new(10);
        s.step(
            Some(1),
            StepFacts {
                time: 6.0,
                step_ms: 6000.0,
                data_ms: 0.0,
            },
        );
        s.block_start(Some(1), 0.0);
        s.stage(st("a", 1800.0, 0), 0.0);
        s.block_start(Some(2), 0.0);
        s.stage(
            StageRecord {
                step: Some(2),
                ..st("a", 1800.0, 0)
            },
            0.0,
        );
        s.close();
        assert_eq!(s.unlogged_ms.count(), 1);
        s.step(
            Some(2),
            StepFacts {
                time: 12.0,
                step_ms: 6100.0,
                data_ms: 100.0,
            },
        );
        assert_eq!(s.unlogged_ms.count(), 2);
        assert_eq!(s.unlogged_ms.mean(), Some(4200.0));
    }
}
