//! Values by step number, bounded: the smallest step goes first when it is full.
//!
//! Steps come in order almost always, so the entries are a deque kept sorted: a new step is
//! added at its end and the smallest leaves from its front, each in constant time, where a
//! tree map rebalanced at every step (a tenth of the monitor's time on a long run). A step out
//! of order is put in its place.

use std::collections::VecDeque;

#[derive(Clone, Debug)]
pub struct StepMap<V> {
    entries: VecDeque<(u64, V)>,
    cap: usize,
}

impl<V: Copy> StepMap<V> {
    /// A map of at most `cap` steps (at least one).
    pub fn new(cap: usize) -> Self {
        StepMap {
            entries: VecDeque::new(),
            cap: cap.max(1),
        }
    }

    fn find(&self, step: u64) -> Result<usize, usize> {
        // The newest step is the likeliest asked for.
        match self.entries.back() {
            Some(&(last, _)) if step > last => Err(self.entries.len()),
            _ => self.entries.binary_search_by_key(&step, |e| e.0),
        }
    }

    pub fn get(&self, step: u64) -> Option<V> {
        self.find(step).ok().map(|i| self.entries[i].1)
    }

    pub fn contains(&self, step: u64) -> bool {
        self.find(step).is_ok()
    }

    /// Sets `step`'s value; when that makes one too many, the smallest step leaves.
    pub fn insert(&mut self, step: u64, v: V) {
        match self.find(step) {
            Ok(i) => self.entries[i].1 = v,
            Err(i) => {
                self.entries.insert(i, (step, v));
                if self.entries.len() > self.cap {
                    self.entries.pop_front();
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn it_keeps_what_a_tree_map_cut_to_the_largest_steps_keeps() {
        let mut map = StepMap::new(50);
        let mut tree = BTreeMap::new();
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut step = 0u64;
        for i in 0..5000u64 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            // Mostly the next step; now and then a restart, a step again, or one from the past.
            step = match seed % 20 {
                0 => 0,
                1 => step,
                2 => step.saturating_sub(seed % 80),
                _ => step + 1,
            };
            map.insert(step, i);
            tree.insert(step, i);
            if tree.len() > 50 {
                tree.pop_first();
            }
            for s in step.saturating_sub(100)..step + 3 {
                assert_eq!(map.get(s), tree.get(&s).copied(), "step {s} after {i}");
                assert_eq!(map.contains(s), tree.contains_key(&s));
            }
        }
    }
}
