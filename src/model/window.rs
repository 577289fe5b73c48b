//! Bounded statistics, the only statistics code: a rolling window of the last N values, whole-run
//! statistics in a fixed-size log histogram, and a decimated time series for charts. None of them
//! grows with the length of the run.

use std::cell::Cell;
use std::collections::VecDeque;

/// The last `cap` timestamped values, exactly: recent p50/p95/mean over the last N values or
/// the last T seconds.
#[derive(Clone)]
pub struct Rolling {
    values: VecDeque<(f64, f64)>,
    cap: usize,
    /// The last `mean_last` asked for, until the next value: the rules ask each stage's recent
    /// mean several times per step, and most stages' windows do not move every step.
    memo: Cell<Option<(usize, f64)>>,
    /// The last `sum_last` asked for, until the next value: the rules read the same window's
    /// sum for a share, a mean and the evidence in one evaluation, added once, in order.
    sum_memo: Cell<Option<(usize, f64)>>,
}

/// The values alone: the memo is no part of what the window holds (drawing a frame fills it,
/// and a frame changes nothing).
impl std::fmt::Debug for Rolling {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rolling")
            .field("values", &self.values)
            .field("cap", &self.cap)
            .finish()
    }
}

/// p50, p95 and mean of a window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Summary {
    pub p50: f64,
    pub p95: f64,
    pub mean: f64,
    pub n: usize,
}

impl Rolling {
    /// A window over the last `cap` values (at least one). Its memory grows with its values:
    /// a model starts many windows at every new run, most of which see few values.
    pub fn new(cap: usize) -> Self {
        Rolling {
            values: VecDeque::new(),
            cap: cap.max(1),
            memo: Cell::new(None),
            sum_memo: Cell::new(None),
        }
    }

    /// Forgets every value and keeps the room they took: the window `new(cap)` makes, for
    /// the next run's figure.
    pub fn clear(&mut self) {
        self.values.clear();
        self.memo.set(None);
        self.sum_memo.set(None);
    }

    pub fn push(&mut self, t: f64, v: f64) {
        if !v.is_finite() {
            return;
        }
        if self.values.len() == self.cap {
            self.values.pop_front();
        }
        self.values.push_back((t, v));
        self.memo.set(None);
        self.sum_memo.set(None);
    }

    pub fn len(&self) -> usize {
        self.values.len()
    }

    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    pub fn last(&self) -> Option<f64> {
        self.values.back().map(|x| x.1)
    }

    /// Summary of the last `n` values.
    pub fn last_n(&self, n: usize) -> Option<Summary> {
        let skip = self.values.len().saturating_sub(n);
        summarize(self.values.iter().skip(skip).map(|x| x.1))
    }

    /// The median (by nearest rank) of the last `n` values: `last_n`'s p50, chosen without
    /// sorting them all (a boundary asks for it at every step after it).
    pub fn median_last(&self, n: usize) -> Option<f64> {
        let skip = self.values.len().saturating_sub(n);
        let mut last: Vec<f64> = self.values.iter().skip(skip).map(|x| x.1).collect();
        if last.is_empty() {
            return None;
        }
        let at = nearest_rank(0.5, last.len());
        Some(*last.select_nth_unstable_by(at, f64::total_cmp).1)
    }

    /// Summary of the values at or after time `since`.
    pub fn since(&self, since: f64) -> Option<Summary> {
        summarize(self.values.iter().filter(|x| x.0 >= since).map(|x| x.1))
    }

    /// Mean of the last `n` values, without sorting (cheaper than `last_n` when only the mean
    /// is wanted).
    pub fn mean_last(&self, n: usize) -> Option<f64> {
        let k = n.min(self.values.len());
        if k == 0 {
            return None;
        }
        if let Some((m, mean)) = self.memo.get()
            && m == k
        {
            return Some(mean);
        }
        let mean = self.sum_last(k) / k as f64;
        self.memo.set(Some((k, mean)));
        Some(mean)
    }

    /// Mean of the last `n` values leaving out the largest: one outlier (an eval step, a
    /// checkpoint) does not move it, and it needs no sort.
    pub fn mean_last_but_max(&self, n: usize) -> Option<f64> {
        let k = n.min(self.values.len());
        if k < 2 {
            return self.mean_last(n);
        }
        let (sum, max) = self
            .values
            .iter()
            .skip(self.values.len() - k)
            .fold((0.0, f64::NEG_INFINITY), |(s, m), x| (s + x.1, m.max(x.1)));
        Some((sum - max) / (k - 1) as f64)
    }

    /// Sum of the last `n` values.
    pub fn sum_last(&self, n: usize) -> f64 {
        let k = n.min(self.values.len());
        if let Some((m, sum)) = self.sum_memo.get()
            && m == k
        {
            return sum;
        }
        let sum = self
            .values
            .iter()
            .skip(self.values.len() - k)
            .map(|x| x.1)
            .sum();
        self.sum_memo.set(Some((k, sum)));
        sum
    }
}

/// A window's values kept in order (`f64::total_cmp`) as they come and go: its median and
/// median absolute deviation without a selection over all of them each time (a timeline
/// asked for both every 16 steps, and the two selections over its 200 step times were a
/// tenth of the monitor's work on a long run). The values are held as integer keys in the
/// same order, which compare in one instruction.
#[derive(Clone, Debug, Default)]
pub struct Ordered {
    keys: Vec<i64>,
}

/// `v`'s bits as an integer that orders as `f64::total_cmp` orders the floats (negative
/// floats' magnitude bits flipped).
fn key(v: f64) -> i64 {
    let bits = v.to_bits() as i64;
    bits ^ (((bits >> 63) as u64) >> 1) as i64
}

/// The float whose key is `k`.
fn value(k: i64) -> f64 {
    f64::from_bits((k ^ (((k >> 63) as u64) >> 1) as i64) as u64)
}

impl Ordered {
    /// Forgets every value, keeping the room they took.
    pub fn clear(&mut self) {
        self.keys.clear();
    }

    pub fn insert(&mut self, v: f64) {
        let k = key(v);
        let at = self.keys.partition_point(|&x| x < k);
        self.keys.insert(at, k);
    }

    /// Takes out one value with the bits of `old` (if one is held: else only adds) and adds
    /// `new`, moving only the values between their places.
    pub fn replace(&mut self, old: f64, new: f64) {
        let Ok(from) = self.keys.binary_search(&key(old)) else {
            return self.insert(new);
        };
        let k = key(new);
        let to = self.keys.partition_point(|&x| x < k);
        if to <= from {
            self.keys.copy_within(to..from, to + 1);
            self.keys[to] = k;
        } else {
            self.keys.copy_within(from + 1..to, from);
            self.keys[to - 1] = k;
        }
    }

    /// The median (the upper one of an even count, as `median` selects it) and the median
    /// of the values' absolute deviations from it.
    pub fn spread(&self) -> Option<(f64, f64)> {
        let v = &self.keys;
        let h = v.len() / 2;
        let mid = value(*v.get(h)?);
        // The deviations lie in two rising runs: those of the values below the median, read
        // down from it (`down`), and those of the rest, read up from it (`up`). The one of
        // rank h is the largest of the h + 1 smallest, which are the first i of one run and
        // the first h + 1 - i of the other, for the i found by bisection.
        let dev = |at: usize| (value(v[at]) - mid).abs();
        let down = |i: usize| dev(h - 1 - i);
        let up = |j: usize| dev(h + j);
        let (take, up_len) = (h + 1, v.len() - h);
        let (mut lo, mut hi) = (take.saturating_sub(up_len), take.min(h));
        loop {
            let i = (lo + hi) / 2;
            let j = take - i;
            if i < h && j > 0 && down(i) < up(j - 1) {
                lo = i + 1;
            } else if i > 0 && j < up_len && up(j) < down(i - 1) {
                hi = i - 1;
            } else {
                let last_down = if i > 0 { down(i - 1) } else { 0.0 };
                let last_up = if j > 0 { up(j - 1) } else { 0.0 };
                return Some((mid, last_down.max(last_up)));
            }
        }
    }
}

/// The median (the upper one of an even count), by selection: no full sort. Reorders `values`.
pub fn median(values: &mut [f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let mid = values.len() / 2;
    Some(*values.select_nth_unstable_by(mid, f64::total_cmp).1)
}

fn summarize(values: impl Iterator<Item = f64>) -> Option<Summary> {
    let mut sorted: Vec<f64> = values.collect();
    if sorted.is_empty() {
        return None;
    }
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    Some(Summary {
        p50: sorted[nearest_rank(0.5, n)],
        p95: sorted[nearest_rank(0.95, n)],
        mean: sorted.iter().sum::<f64>() / n as f64,
        n,
    })
}

/// The index of the `q` quantile among `n` sorted values, by nearest rank.
pub(crate) fn nearest_rank(q: f64, n: usize) -> usize {
    ((q * n as f64).ceil() as usize).clamp(1, n) - 1
}

/// Buckets per factor of two, evenly spaced: a relative error under 0.8% for any quantile.
const SUB_BITS: u32 = 6;
const SUB_BUCKETS: usize = 1 << SUB_BITS;
/// Covers 2^-20 .. 2^40 (about 1e-6 .. 1e12) in the unit of the values.
const MIN_EXP: i32 = -20;
const OCTAVES: usize = 60;

/// Whole-run statistics in constant memory: count, sum, min, max, and quantiles from a
/// histogram of 64 buckets per octave. Non-positive values are counted in the lowest bucket.
/// Only the buckets between the lowest and the highest value seen are held (`first` is the
/// index of `buckets[0]`): a figure that stays within a few octaves, as a step time does,
/// costs a few hundred bytes, not the 30 KiB of all sixty octaves (thousands of ranks each
/// keep one). The first `EXACT` values are held as they are, and the histogram is made when
/// one more comes, spanning them all at once: a figure of a short run (a log that restarts
/// its steps often starts a fresh model each time) never makes one, and a long run's is not
/// widened value by value while it finds its range. A quantile of the held values is the one
/// the histogram would give: the middle of the bucket of the value at its rank.
#[derive(Clone, Debug)]
pub struct RunStats {
    count: u64,
    sum: f64,
    min: f64,
    max: f64,
    first: usize,
    /// The histogram's counts; while `exact`, the values themselves (their bits), in order.
    buckets: Vec<u64>,
    exact: bool,
    /// False for a figure whose quantiles nobody reads (one rank's of thousands): no histogram.
    quantiles: bool,
}

/// Values held as they are before a histogram is made.
const EXACT: usize = 16;

impl Default for RunStats {
    fn default() -> Self {
        RunStats {
            count: 0,
            sum: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            first: 0,
            buckets: Vec::new(),
            exact: true,
            quantiles: true,
        }
    }
}

impl RunStats {
    /// Count, sum, min and max only; `quantile` answers None.
    pub fn without_quantiles() -> Self {
        RunStats {
            quantiles: false,
            ..RunStats::default()
        }
    }

    /// Forgets every value and keeps the room they took and whether quantiles are kept: the
    /// statistics `default` or `without_quantiles` make, for the next run's figure.
    pub fn clear(&mut self) {
        let mut buckets = std::mem::take(&mut self.buckets);
        buckets.clear();
        *self = RunStats {
            buckets,
            quantiles: self.quantiles,
            ..RunStats::default()
        };
    }

    // Inline, the rest not: most statistics keep no quantiles (a rank's figures but its step
    // time), and the call of the whole had cost them more than their sums.
    #[inline]
    pub fn push(&mut self, v: f64) {
        if !v.is_finite() {
            return;
        }
        self.count += 1;
        self.sum += v;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        if self.quantiles {
            self.count_in(v);
        }
    }

    /// `v` into the held values or the histogram.
    #[inline(never)]
    fn count_in(&mut self, v: f64) {
        if self.exact {
            if self.buckets.len() < EXACT {
                if self.buckets.is_empty() {
                    self.buckets.reserve_exact(EXACT);
                }
                // Kept in order: the median is asked for at each of a run's first steps.
                let at = self
                    .buckets
                    .partition_point(|b| f64::from_bits(*b).total_cmp(&v).is_le());
                self.buckets.insert(at, v.to_bits());
                return;
            }
            self.make_histogram();
        }
        let i = bucket_of(v);
        // Most values fall in the buckets held: only the others call out to widen them.
        if !(self.first..self.first + self.buckets.len()).contains(&i) {
            self.cover(i, i);
        }
        self.buckets[i - self.first] += 1;
    }

    /// The held values into a histogram that spans them (and the value on its way in, which
    /// `min` and `max` count already).
    fn make_histogram(&mut self) {
        let held = std::mem::take(&mut self.buckets);
        self.exact = false;
        self.cover(bucket_of(self.min), bucket_of(self.max));
        for bits in held {
            let i = bucket_of(f64::from_bits(bits));
            self.buckets[i - self.first] += 1;
        }
    }

    /// Widens the held buckets to cover indices `lo..=hi`, with room for the figure to wander
    /// a little further before the next widening.
    fn cover(&mut self, lo: usize, hi: usize) {
        const SLACK: usize = SUB_BUCKETS / 4;
        if self.buckets.is_empty() {
            self.first = lo.saturating_sub(SLACK);
            let end = (hi + SLACK + 1).min(OCTAVES * SUB_BUCKETS);
            self.buckets = vec![0; end - self.first];
            return;
        }
        if lo < self.first {
            let start = lo.saturating_sub(SLACK);
            let mut grown = vec![0; self.first - start];
            grown.extend_from_slice(&self.buckets);
            self.buckets = grown;
            self.first = start;
        }
        let end = self.first + self.buckets.len();
        if hi >= end {
            let new_end = (hi + SLACK + 1).min(OCTAVES * SUB_BUCKETS);
            self.buckets.resize(new_end - self.first, 0);
        }
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum / self.count as f64)
    }

    pub fn sum(&self) -> f64 {
        self.sum
    }

    pub fn min(&self) -> Option<f64> {
        (self.count > 0).then_some(self.min)
    }

    pub fn max(&self) -> Option<f64> {
        (self.count > 0).then_some(self.max)
    }

    /// The q-quantile, within the histogram's relative error, clamped to the seen range.
    pub fn quantile(&self, q: f64) -> Option<f64> {
        if self.count == 0 || !self.quantiles {
            return None;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        if self.exact {
            let at = usize::try_from(rank - 1).unwrap_or(0);
            let v = f64::from_bits(*self.buckets.get(at)?);
            return Some(bucket_mid(bucket_of(v)).clamp(self.min, self.max));
        }
        // Eight buckets at a time up to the group that holds the rank (a sum the compiler
        // vectorises), then one at a time: a run's median is asked for at each of its first
        // 64 steps.
        let mut seen = 0;
        let mut from = 0;
        for group in self.buckets.chunks_exact(8) {
            let sum: u64 = group.iter().sum();
            if seen + sum >= rank {
                break;
            }
            seen += sum;
            from += 8;
        }
        for (i, n) in self.buckets.iter().enumerate().skip(from) {
            seen += n;
            if seen >= rank {
                return Some(bucket_mid(self.first + i).clamp(self.min, self.max));
            }
        }
        Some(self.max)
    }
}

/// The bucket of `v`: its binary exponent picks the octave and the top bits of its mantissa
/// the linear sub-bucket, read straight from the float's bits (no logarithm on the hot path).
fn bucket_of(v: f64) -> usize {
    if v <= 0.0 {
        return 0;
    }
    let bits = v.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i32 - 1023;
    let Ok(octave) = usize::try_from(exp - MIN_EXP) else {
        return 0;
    };
    if octave >= OCTAVES {
        return OCTAVES * SUB_BUCKETS - 1;
    }
    let sub = ((bits >> (52 - SUB_BITS)) & (SUB_BUCKETS as u64 - 1)) as usize;
    octave * SUB_BUCKETS + sub
}

fn bucket_mid(i: usize) -> f64 {
    let octave = (i / SUB_BUCKETS) as i32 + MIN_EXP;
    let sub = (i % SUB_BUCKETS) as f64 + 0.5;
    octave_base(octave) * (1.0 + sub / SUB_BUCKETS as f64)
}

/// 2^`octave`, exactly, made from its exponent bits (`powi` is a library call, and a quantile
/// is asked for at every step); the octaves are well within a normal float's.
fn octave_base(octave: i32) -> f64 {
    const { assert!(MIN_EXP > -1022 && MIN_EXP + (OCTAVES as i32) < 1023) };
    f64::from_bits(((octave + 1023) as u64) << 52)
}

/// One point of a chart: the time span it covers and the min, max and mean of its values.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Point {
    pub t0: f64,
    pub t1: f64,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
    pub n: u32,
}

/// A time series whose memory stays flat: the newest `recent` points at full resolution; older
/// points are merged pairwise (keeping min and max) whenever the old part fills up, so the whole
/// history is always there at a coarser grain.
#[derive(Clone, Debug)]
pub struct Series {
    old: Vec<Point>,
    recent: VecDeque<Point>,
    recent_cap: usize,
    old_cap: usize,
}

impl Series {
    pub fn new(recent_cap: usize, old_cap: usize) -> Self {
        Series {
            old: Vec::new(),
            recent: VecDeque::new(),
            recent_cap: recent_cap.max(1),
            old_cap: old_cap.max(2),
        }
    }

    /// A series that keeps nothing: for a figure never drawn (one rank's of thousands).
    pub fn off() -> Self {
        Series {
            old: Vec::new(),
            recent: VecDeque::new(),
            recent_cap: 0,
            old_cap: 2,
        }
    }

    /// Forgets every point and keeps the room they took: the series `new` or `off` made.
    pub fn clear(&mut self) {
        self.old.clear();
        self.recent.clear();
    }

    // Inline, the rest not: a series that keeps nothing (a figure no chart draws) returns at
    // once, and the call of the whole had cost it more than that.
    #[inline]
    pub fn push(&mut self, t: f64, v: f64) {
        if v.is_finite() && self.recent_cap > 0 {
            self.keep(t, v);
        }
    }

    /// A finite value into the series that keeps points.
    #[inline(never)]
    fn keep(&mut self, t: f64, v: f64) {
        self.recent.push_back(Point {
            t0: t,
            t1: t,
            min: v,
            max: v,
            mean: v,
            n: 1,
        });
        if self.recent.len() > self.recent_cap
            && let Some(p) = self.recent.pop_front()
        {
            self.old.push(p);
            if self.old.len() >= self.old_cap {
                // Pairwise in place: point i takes points 2i and 2i+1 (an odd last alone).
                let half = self.old.len().div_ceil(2);
                for i in 0..half {
                    let end = (2 * i + 2).min(self.old.len());
                    self.old[i] = merge_points(&self.old[2 * i..end]);
                }
                self.old.truncate(half);
            }
        }
    }

    /// Every point, oldest first.
    pub fn points(&self) -> impl Iterator<Item = &Point> {
        self.old.iter().chain(self.recent.iter())
    }

    pub fn len(&self) -> usize {
        self.old.len() + self.recent.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

fn merge_points(pair: &[Point]) -> Point {
    let mut p = pair[0];
    for q in &pair[1..] {
        let n = p.n + q.n;
        p.mean = (p.mean * f64::from(p.n) + q.mean * f64::from(q.n)) / f64::from(n);
        p.n = n;
        p.t1 = q.t1;
        p.min = p.min.min(q.min);
        p.max = p.max.max(q.max);
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_remembered_sums_and_the_median_are_the_full_computations() {
        let mut r = Rolling::new(50);
        let mut seed = 7u64;
        for i in 0..400 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let v = (seed >> 11) as f64 / 9.7e12 + f64::from(i % 7) * 0.1;
            r.push(f64::from(i), v);
            let held: Vec<f64> = r.values.iter().map(|x| x.1).collect();
            for n in [1, 3, 20, 50, 80] {
                let k = n.min(held.len());
                let sum: f64 = held[held.len() - k..].iter().sum();
                // Asked twice: the second answer is the remembered one.
                assert_eq!(r.sum_last(n).to_bits(), sum.to_bits());
                assert_eq!(r.sum_last(n).to_bits(), sum.to_bits());
                let median = r.last_n(n).map(|s| s.p50);
                assert_eq!(r.median_last(n).map(f64::to_bits), median.map(f64::to_bits));
            }
        }
        assert_eq!(Rolling::new(4).median_last(20), None);
    }

    #[test]
    fn rolling_keeps_the_last_values() {
        let mut r = Rolling::new(3);
        for v in [1.0, 2.0, 3.0, 4.0] {
            r.push(v * 10.0, v);
        }
        assert_eq!(r.len(), 3);
        let s = r.last_n(10).unwrap();
        assert_eq!((s.mean, s.p50, s.p95, s.n), (3.0, 3.0, 4.0, 3));
        assert_eq!(r.since(35.0).map(|s| s.n), Some(1));
        assert_eq!(r.last_n(2).map(|s| s.mean), Some(3.5));
        // The remembered mean goes with the next value, and another n is computed afresh.
        assert_eq!(r.mean_last(2), Some(3.5));
        assert_eq!(r.mean_last(3), Some(3.0));
        r.push(50.0, 8.0);
        assert_eq!(r.mean_last(3), Some(5.0));
        assert_eq!(r.mean_last(2), Some(6.0));
    }

    #[test]
    fn an_octaves_base_is_its_power_of_two() {
        for octave in MIN_EXP..MIN_EXP + OCTAVES as i32 {
            assert_eq!(octave_base(octave), 2f64.powi(octave), "{octave}");
        }
    }

    #[test]
    fn quantiles_are_the_bucket_by_bucket_walks() {
        // The walk one bucket at a time over a histogram of every octave, as the histogram
        // defines the quantile: what the held values and the partial histogram both give.
        let slow = |values: &[f64], q: f64| {
            let mut all = vec![0u64; OCTAVES * SUB_BUCKETS];
            values.iter().for_each(|v| all[bucket_of(*v)] += 1);
            let (min, max) = values
                .iter()
                .fold((f64::INFINITY, f64::NEG_INFINITY), |m, v| {
                    (m.0.min(*v), m.1.max(*v))
                });
            let rank = ((q * values.len() as f64).ceil() as u64).clamp(1, values.len() as u64);
            let mut seen = 0;
            for (i, n) in all.iter().enumerate() {
                seen += n;
                if seen >= rank {
                    return bucket_mid(i).clamp(min, max);
                }
            }
            max
        };
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        for n in 1..200 {
            let mut s = RunStats::default();
            let mut values = Vec::new();
            for i in 0..n {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                // Spread over several octaves, so that the rank falls in any group of eight;
                // now and then a zero or a negative (the lowest bucket) and ties.
                let v = match seed % 23 {
                    0 => 0.0,
                    1 => -3.5,
                    2 if i > 0 => values[0],
                    _ => 1.0 + (seed % 10_000) as f64 / 100.0,
                };
                s.push(v);
                values.push(v);
            }
            assert_eq!(s.exact, n <= EXACT as u32);
            for q in [0.0, 0.01, 0.25, 0.5, 0.9, 0.95, 0.99, 1.0] {
                assert_eq!(s.quantile(q), Some(slow(&values, q)), "n {n}, q {q}");
            }
        }
    }

    #[test]
    fn run_stats_quantiles_are_within_the_relative_error() {
        let mut s = RunStats::default();
        for i in 1..=10_000 {
            s.push(f64::from(i));
        }
        let p50 = s.quantile(0.5).unwrap();
        let p95 = s.quantile(0.95).unwrap();
        assert!((p50 / 5000.0 - 1.0).abs() < 0.008, "{p50}");
        assert!((p95 / 9500.0 - 1.0).abs() < 0.008, "{p95}");
        assert_eq!(s.mean(), Some(5000.5));
        assert_eq!((s.min(), s.max()), (Some(1.0), Some(10_000.0)));
    }

    #[test]
    fn the_histogram_holds_only_the_octaves_its_values_reach() {
        // Step times of 95-110 ms: under an octave, a few hundred bytes.
        let mut narrow = RunStats::default();
        for i in 0..1000 {
            narrow.push(95.0 + f64::from(i % 16));
        }
        assert!(
            narrow.buckets.len() <= 2 * SUB_BUCKETS,
            "{}",
            narrow.buckets.len()
        );
        // Values that wander over twelve decades, up and down, give what a histogram of
        // every octave gives.
        let values: Vec<f64> = (0..2000)
            .map(|i| 10f64.powf(f64::from((i * 7919) % 2000) / 2000.0 * 12.0 - 3.0))
            .collect();
        let mut wide = RunStats::default();
        values.iter().for_each(|v| wide.push(*v));
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        for q in [0.01, 0.25, 0.5, 0.9, 0.99] {
            let exact = sorted[nearest_rank(q, sorted.len())];
            let got = wide.quantile(q).expect("values");
            assert!((got / exact - 1.0).abs() < 0.02, "q{q}: {got} vs {exact}");
        }
        // Without quantiles: the sums, no histogram at all.
        let mut sums = RunStats::without_quantiles();
        values.iter().for_each(|v| sums.push(*v));
        assert_eq!((sums.count(), sums.sum()), (wide.count(), wide.sum()));
        assert_eq!(sums.quantile(0.5), None);
        assert!(sums.buckets.is_empty());
    }

    #[test]
    fn a_constant_is_exact() {
        let mut s = RunStats::default();
        for _ in 0..5 {
            s.push(6000.0);
        }
        assert_eq!(s.quantile(0.5), Some(6000.0));
    }

    #[test]
    fn series_memory_is_flat_and_keeps_extremes() {
        let mut s = Series::new(10, 16);
        for i in 0..100_000 {
            s.push(f64::from(i), if i == 500 { 1e9 } else { 1.0 });
        }
        assert!(s.len() <= 26, "{}", s.len());
        assert_eq!(s.points().map(|p| p.max).fold(0.0, f64::max), 1e9);
        assert_eq!(s.points().map(|p| p.n).sum::<u32>(), 100_000);
    }

    #[test]
    fn series_merges_neighbours_in_time_order() {
        // Old points of an odd count (15 of a cap of 15) merge pairwise, the last alone.
        let mut s = Series::new(1, 15);
        for i in 0..16 {
            s.push(f64::from(i), f64::from(i));
        }
        let old: Vec<(f64, f64, f64, u32)> =
            s.points().map(|p| (p.t0, p.t1, p.mean, p.n)).collect();
        let mut want: Vec<(f64, f64, f64, u32)> = (0..7)
            .map(|i| f64::from(2 * i))
            .map(|t| (t, t + 1.0, t + 0.5, 2))
            .collect();
        want.push((14.0, 14.0, 14.0, 1));
        want.push((15.0, 15.0, 15.0, 1));
        assert_eq!(old, want);
    }
}
