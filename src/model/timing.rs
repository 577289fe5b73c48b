//! One timing block read the way its author meant it.
//!
//! Users' scripts print nested lines at one indentation and totals that add a parent to its own
//! children (seed 000: `Total : 3610.53ms` is `前向传播总耗时` + its child `VRT处理` +
//! `Spike模块`). So a block's tree comes from its numbers as much as from its indentation: a line
//! is the parent of the lines next to it (after it, or before it as a footer) when its value is
//! their sum; deeper indentation and percentages that are shares of the line make the case on
//! their own. The labels (parse/labels.rs) say which line is the forward, the data wait, the
//! loss, the backward or the optimizer. The total is then read as the one thing that fits: a
//! sum that counts nested lines twice (ignored), the forward itself, or the whole step.
//!
//! `structure` is the costly part (it tries every run of lines); a block usually repeats the
//! structure of the one before, which `fits` checks in one pass (see stages.rs).

use crate::parse::labels::Role;

/// One line of a timing block.
#[derive(Clone, Debug, PartialEq)]
pub struct Line {
    pub name: String,
    pub ms: f64,
    /// The percentage the line printed, if any.
    pub share_pct: Option<f64>,
    /// Nesting by indentation: 0 for the block's outermost lines.
    pub indent: u8,
    pub role: Role,
}

/// Why a line hangs under its parent: it decides how strictly a later block is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nest {
    /// Indented under it.
    Indent,
    /// Its percentage is a share of the parent.
    Percent,
    /// Its value and its siblings' add up to the parent's.
    Sum,
}

/// The tree of a block: each line's parent and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Structure {
    pub parent: Vec<Option<(usize, Nest)>>,
}

/// What the block's total turned out to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TotalIs {
    /// The block has no total line.
    Absent,
    /// A sum that counts nested lines twice: not a figure of the step.
    Nested,
    /// The forward pass.
    Forward,
    /// The whole step: data, forward, loss, backward, optimizer.
    Step,
    /// Less than its own parts: it cannot be read as any of the above.
    Ignored,
}

/// Where a line belongs in the step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Place {
    Total,
    /// The line that times the forward as a whole.
    Forward,
    /// A piece of the forward, this many levels below it (0: a direct part).
    InForward(u8),
    /// A top-level part of the step outside the forward: data, loss, backward, optimizer, a
    /// copy, or another piece.
    Outside,
    /// Nested under an outside part, and counted in it.
    Below,
}

/// How one block reads: what its total is, where each line belongs, and its figures.
#[derive(Clone, Debug, PartialEq)]
pub struct Reading {
    pub total: TotalIs,
    pub place: Vec<Place>,
    pub figures: Figures,
}

/// The figures of one block.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Figures {
    pub forward_ms: Option<f64>,
    /// The whole step, when the total is one.
    pub step_ms: Option<f64>,
    /// The data wait the block itemises, if it does.
    pub data_ms: Option<f64>,
    /// Logged parts outside the forward besides the data wait (loss, backward, optimizer...).
    pub other_ms: f64,
}

/// The share of a parent its children may leave uncovered and still count as its parts by
/// value alone: the glue between timed pieces (Python, launches).
const GLUE: f64 = 0.02;

/// Rounding of `n` printed values (two decimals each) and of float sums.
fn eps(n: usize, ms: f64) -> f64 {
    0.006 * (n as f64 + 1.0) + ms.abs() * 1e-3
}

/// Whether `pct` is `ms`'s share of `base`, as a printed percentage rounds it.
fn pct_of(pct: f64, ms: f64, base: f64) -> bool {
    if base <= 0.0 {
        return false;
    }
    // `27%` is rounded to a unit, `26.7%` to a tenth.
    let tol = if pct.fract() == 0.0 { 0.51 } else { 0.051 };
    (100.0 * ms / base - pct).abs() <= tol
}

/// `VRT Stage1` and `VRT Stage8`: names that differ only in their numbers are siblings, never
/// parent and child.
fn same_but_numbers(a: &str, b: &str) -> bool {
    let mask = |s: &str| {
        let mut out = String::with_capacity(s.len());
        let mut digits = false;
        for c in s.chars() {
            if c.is_ascii_digit() {
                if !digits {
                    out.push('#');
                }
                digits = true;
            } else {
                out.push(c);
                digits = false;
            }
        }
        out
    };
    a != b && mask(a) == mask(b)
}

/// Builds the block's tree: repeatedly hangs the run of top-level lines that fits a line best
/// under it, the surest evidence first (indentation, then percentages, then sums), the
/// closest sum breaking ties.
pub fn structure(lines: &[Line]) -> Structure {
    let flat = partition(lines);
    let mut parent = vec![None; lines.len()];
    let mut seq: Vec<usize> = (0..lines.len())
        .filter(|&i| !lines[i].role.is_total())
        .collect();
    loop {
        // (class, gap, parent position, run start, run end exclusive, how)
        let mut best: Option<(u8, f64, usize, usize, usize, Nest)> = None;
        let mut consider = |p: usize, start: usize, end: usize, sum: f64| {
            let Some((class, gap, how)) = fit(lines, &seq, p, start, end, sum, flat) else {
                return;
            };
            let better = best.is_none_or(|(c, g, ..)| (class, gap.abs()) < (c, g.abs()));
            if better {
                best = Some((class, gap, p, start, end, how));
            }
        };
        for p in 0..seq.len() {
            let limit = |sum: f64, n: usize| sum > lines[seq[p]].ms + eps(n, lines[seq[p]].ms);
            let mut sum = 0.0;
            for end in p + 1..seq.len() {
                sum += lines[seq[end]].ms;
                if limit(sum, end - p) {
                    break;
                }
                consider(p, p + 1, end + 1, sum);
            }
            sum = 0.0;
            for start in (0..p).rev() {
                sum += lines[seq[start]].ms;
                if limit(sum, p - start) {
                    break;
                }
                consider(p, start, p, sum);
            }
        }
        let Some((_, _, p, start, end, how)) = best else {
            break;
        };
        let x = seq[p];
        for &child in &seq[start..end] {
            parent[child] = Some((x, how));
        }
        seq.drain(start..end);
    }
    Structure { parent }
}

/// Whether the percentages say the lines partition the total: every line prints its share of
/// the total and the shares add up to 100%. Then no line holds others by its value alone
/// (`encoder 300 = decoder 200 + head 100` is a coincidence when they are 50%, 33.3% and
/// 16.7% of one whole).
fn partition(lines: &[Line]) -> bool {
    let Some(total) = lines.iter().rev().find(|l| l.role.is_total()) else {
        return false;
    };
    let items: Vec<&Line> = lines.iter().filter(|l| !l.role.is_total()).collect();
    let mut sum = 0.0;
    for l in &items {
        match l.share_pct {
            Some(pct) if pct_of(pct, l.ms, total.ms) => sum += pct,
            _ => return false,
        }
    }
    (sum - 100.0).abs() <= 0.06 * items.len() as f64 + 0.5
}

/// How well the run `seq[start..end]` (summing to `sum`) fits under `seq[p]`: a class (0
/// indentation, 1 percentages, 2 sums), the uncovered share of the parent, and why. `flat`:
/// the percentages say there is no nesting by value (see `partition`).
fn fit(
    lines: &[Line],
    seq: &[usize],
    p: usize,
    start: usize,
    end: usize,
    sum: f64,
    flat: bool,
) -> Option<(u8, f64, Nest)> {
    let x = &lines[seq[p]];
    let run = &seq[start..end];
    if run
        .iter()
        .any(|&r| lines[r].indent < x.indent || same_but_numbers(&lines[r].name, &x.name))
    {
        return None;
    }
    let gap = (x.ms - sum) / x.ms.max(1e-9);
    if run.iter().all(|&r| lines[r].indent > x.indent) {
        // Indented lines belong to the line above (or below) them, all of them.
        let beyond = if start > p {
            seq.get(end)
        } else {
            start.checked_sub(1).map(|i| &seq[i])
        };
        return beyond
            .is_none_or(|&b| lines[b].indent <= x.indent)
            .then_some((0, gap, Nest::Indent));
    }
    let shares = run
        .iter()
        .filter(|&&r| lines[r].share_pct.is_some())
        .count();
    let of_x = run.iter().all(|&r| {
        lines[r]
            .share_pct
            .is_none_or(|pct| pct_of(pct, lines[r].ms, x.ms))
    });
    if shares > 0 && of_x && gap <= 0.5 {
        return Some((1, gap, Nest::Percent));
    }
    (!flat && gap <= GLUE && (run.len() >= 2 || x.role == Role::Forward)).then_some((
        2,
        gap,
        Nest::Sum,
    ))
}

/// Whether `lines` (a later block with the same labels) still fits a structure found
/// earlier: no parent smaller than its children, and sums still sums.
pub fn fits(s: &Structure, lines: &[Line]) -> bool {
    if s.parent.len() != lines.len() {
        return false;
    }
    let mut sums = vec![0.0; lines.len()];
    let mut counts = vec![0usize; lines.len()];
    let mut by_sum = vec![false; lines.len()];
    for (i, p) in s.parent.iter().enumerate() {
        if let Some((p, how)) = p {
            sums[*p] += lines[i].ms;
            counts[*p] += 1;
            by_sum[*p] |= *how == Nest::Sum;
        }
    }
    (0..lines.len()).filter(|&i| counts[i] > 0).all(|i| {
        let ms = lines[i].ms;
        // A little looser than `structure`: a block whose glue grew a little is the same
        // block, not a new layout.
        let over = sums[i] <= ms + eps(counts[i], ms) + 0.01 * ms;
        let covered = !by_sum[i] || sums[i] >= ms * (1.0 - 2.5 * GLUE);
        over && covered
    })
}

/// Reads a block through its structure: where each line belongs, the forward, and what the
/// total is.
pub fn read(lines: &[Line], s: &Structure) -> Reading {
    read_with(lines, s, false).0
}

/// How a block's total is read, in the sentence the report prints; None without a total.
/// Asked for once, at the end, not for every block.
pub fn describe(lines: &[Line], s: &Structure) -> Option<String> {
    read_with(lines, s, true).1
}

/// The reading, and its sentence when `describe`.
fn read_with(lines: &[Line], s: &Structure, describe: bool) -> (Reading, Option<String>) {
    let n = lines.len();
    let parent = |i: usize| s.parent.get(i).copied().flatten().map(|(p, _)| p);
    let ancestors = |mut i: usize| {
        std::iter::from_fn(move || {
            i = parent(i)?;
            Some(i)
        })
    };
    let total_line = (0..n).rev().find(|&i| lines[i].role.is_total());
    let items: Vec<usize> = (0..n).filter(|&i| !lines[i].role.is_total()).collect();
    let roots: Vec<usize> = items
        .iter()
        .copied()
        .filter(|&i| parent(i).is_none())
        .collect();
    // The outermost line labelled as the forward.
    let forward_line = items.iter().copied().find(|&i| {
        lines[i].role == Role::Forward && ancestors(i).all(|a| lines[a].role != Role::Forward)
    });
    let outside_role =
        |i: usize| !matches!(lines[i].role, Role::Stage | Role::Forward) || forward_line.is_some();
    let sum = |set: &mut dyn Iterator<Item = usize>| set.map(|i| lines[i].ms).sum::<f64>();
    let top = sum(&mut roots.iter().copied());
    // The lines a total that counts nested lines twice adds up.
    let mut counted = Vec::new();
    let total = match total_line {
        None => TotalIs::Absent,
        Some(t) => {
            let t_ms = lines[t].ms;
            let close = |v: f64, k: usize| (t_ms - v).abs() <= eps(k, t_ms) + 0.002 * t_ms;
            // Sums that count a line and its own parts: the outermost indentation's lines,
            // or every line.
            // The lines a sum that counts a line and its own parts may add up: the outermost
            // indentation's lines, every line, or the tree's first levels. Only looked for
            // when the total is neither the top level's sum nor a step total.
            let double_count = || {
                let min_indent = items.iter().map(|&i| lines[i].indent).min().unwrap_or(0);
                let nests =
                    |set: &[usize]| set.iter().any(|&i| ancestors(i).any(|a| set.contains(&a)));
                let shallow = items
                    .iter()
                    .copied()
                    .filter(|&i| lines[i].indent == min_indent);
                let levels = (1..=3).map(|d| {
                    items
                        .iter()
                        .copied()
                        .filter(|&i| ancestors(i).count() <= d)
                        .collect::<Vec<usize>>()
                });
                std::iter::once(shallow.collect::<Vec<usize>>())
                    .chain(std::iter::once(items.clone()))
                    .chain(levels)
                    .find(|set| nests(set) && close(sum(&mut set.iter().copied()), set.len()))
            };
            let parts_outside = roots
                .iter()
                .any(|&r| outside_role(r) && Some(r) != forward_line);
            if items.is_empty() {
                // A lone total says nothing else: read as the forward, as a bare forward
                // timer usually is.
                TotalIs::Forward
            } else if lines[t].role == Role::StepTotal {
                if t_ms + eps(roots.len(), t_ms) >= top {
                    TotalIs::Step
                } else {
                    TotalIs::Ignored
                }
            } else if close(top, roots.len()) {
                if parts_outside {
                    TotalIs::Step
                } else {
                    TotalIs::Forward
                }
            } else if let Some(set) = double_count() {
                counted = set;
                TotalIs::Nested
            } else if t_ms > top {
                if parts_outside || forward_line.is_some() || top < 0.75 * t_ms {
                    TotalIs::Step
                } else {
                    TotalIs::Forward
                }
            } else {
                TotalIs::Ignored
            }
        }
    };
    let mut place = vec![Place::Outside; n];
    for i in 0..n {
        place[i] = if lines[i].role.is_total() {
            Place::Total
        } else if Some(i) == forward_line {
            Place::Forward
        } else if let Some(f) = forward_line {
            match ancestors(i).position(|a| a == f) {
                Some(depth) => Place::InForward(u8::try_from(depth).unwrap_or(u8::MAX)),
                None if parent(i).is_none() => Place::Outside,
                None => Place::Below,
            }
        } else {
            let root = ancestors(i).last().unwrap_or(i);
            if outside_role(root) {
                if root == i {
                    Place::Outside
                } else {
                    Place::Below
                }
            } else {
                Place::InForward(u8::try_from(ancestors(i).count()).unwrap_or(u8::MAX))
            }
        };
    }
    // A data wait timed inside the forward's own timer (Megatron's batch-generator runs within
    // forward-compute): it is the data wait, not a piece of the forward, and the forward is
    // what is left of its timer.
    let mut data_in_forward = 0.0;
    if let Some(f) = forward_line {
        for i in 0..n {
            let data_above = ancestors(i).any(|a| lines[a].role == Role::Data);
            if lines[i].role == Role::Data && !data_above && ancestors(i).any(|a| a == f) {
                place[i] = Place::Outside;
                data_in_forward += lines[i].ms;
            } else if data_above && matches!(place[i], Place::InForward(_)) {
                place[i] = Place::Below;
            }
        }
    }
    let stage_roots = roots
        .iter()
        .copied()
        .filter(|&r| place[r] == Place::InForward(0));
    let forward_ms = match (forward_line, total_line) {
        (Some(f), _) => Some((lines[f].ms - data_in_forward).max(0.0)),
        (None, Some(t)) if total == TotalIs::Forward => Some(lines[t].ms),
        _ => {
            let mut it = stage_roots.peekable();
            it.peek().is_some().then(|| sum(&mut it))
        }
    };
    let place_ref = &place;
    let outside = |data: bool| {
        (0..n).filter(move |&i| {
            place_ref[i] == Place::Outside && (lines[i].role == Role::Data) == data
        })
    };
    let data_ms = outside(true)
        .next()
        .is_some()
        .then(|| sum(&mut outside(true)));
    let other_ms = sum(&mut outside(false));
    let step_ms = match (total, total_line) {
        (TotalIs::Step, Some(t)) => Some(lines[t].ms),
        _ => None,
    };
    let note = total_line
        .filter(|_| describe)
        .map(|t| note(lines, t, total, forward_line, &roots, &counted, forward_ms));
    let reading = Reading {
        total,
        place,
        figures: Figures {
            forward_ms,
            step_ms,
            data_ms,
            other_ms,
        },
    };
    (reading, note)
}

/// A time as a log prints it: at most two decimals, none when it has none.
fn logged(ms: f64) -> String {
    let s = format!("{ms:.2}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// How the total was read, in the words the report prints.
fn note(
    lines: &[Line],
    t: usize,
    total: TotalIs,
    forward_line: Option<usize>,
    roots: &[usize],
    counted: &[usize],
    forward_ms: Option<f64>,
) -> String {
    let t_line = &lines[t];
    // The sentence holds for every block of the layout; the figures are one block's.
    let name = &t_line.name;
    let total_ms = logged(t_line.ms);
    let names = |set: &[usize]| {
        if set.len() > 4 {
            format!("the sum of {} lines", set.len())
        } else {
            set.iter()
                .map(|&i| lines[i].name.as_str())
                .collect::<Vec<_>>()
                .join(" + ")
        }
    };
    let sum = |set: &[usize]| set.iter().map(|&i| lines[i].ms).sum::<f64>();
    match total {
        TotalIs::Absent => String::new(),
        TotalIs::Nested => {
            let forward = match (forward_line, forward_ms) {
                (Some(f), _) => format!(
                    ", so the forward is {} (last block: {name} {total_ms} ms, forward {} ms)",
                    lines[f].name,
                    logged(lines[f].ms)
                ),
                (None, Some(ms)) => format!(
                    " (last block: {name} {total_ms} ms, forward {} ms)",
                    logged(ms)
                ),
                _ => format!(" (last block: {name} {total_ms} ms)"),
            };
            format!(
                "{name} = {}: nested lines counted once{forward}",
                names(counted)
            )
        }
        TotalIs::Forward => {
            let tail = format!(
                "(last block: {name} {total_ms} ms, {:.0} ms of it itemised)",
                sum(roots)
            );
            match roots {
                [] => format!("{name} is the forward (last block: {total_ms} ms)"),
                [one] => format!(
                    "{name} is the forward, {} a part of it {tail}",
                    lines[*one].name
                ),
                _ if roots.len() > 4 => {
                    format!("{name} is the forward: its {} parts {tail}", roots.len())
                }
                _ => format!("{name} is the forward: {} its parts {tail}", names(roots)),
            }
        }
        TotalIs::Step => format!(
            "{name} is the whole step: {} itemised, the rest in no log (backward, optimizer; last block: {name} {total_ms} ms, {:.0} ms not itemised)",
            names(roots),
            (t_line.ms - sum(roots)).max(0.0)
        ),
        TotalIs::Ignored => format!(
            "{name} is less than its parts: ignored (last block: {name} {total_ms} ms, parts {:.0} ms)",
            sum(roots)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::labels::role;

    /// A block from `(indent, label, ms, pct)`.
    fn block(rows: &[(u8, &str, f64, Option<f64>)]) -> Vec<Line> {
        rows.iter()
            .map(|&(indent, name, ms, share_pct)| Line {
                name: name.to_string(),
                ms,
                share_pct,
                indent,
                role: role(name),
            })
            .collect()
    }

    fn seed_000() -> Vec<Line> {
        block(&[
            (0, "前向传播总耗时", 1805.28, Some(50.0)),
            (0, "VRT处理", 1799.99, Some(49.9)),
            (1, "VRT Stage1", 118.30, Some(3.3)),
            (1, "VRT Stage2", 269.40, Some(7.5)),
            (1, "VRT Stage3", 95.10, Some(2.6)),
            (1, "VRT Stage4", 84.10, Some(2.3)),
            (1, "VRT Stage5", 71.80, Some(2.0)),
            (1, "VRT Stage6", 60.90, Some(1.7)),
            (1, "VRT Stage7", 137.20, Some(3.8)),
            (1, "VRT Stage8", 963.19, Some(26.7)),
            (0, "Spike模块", 5.26, Some(0.1)),
            (0, "Total", 3610.53, None),
        ])
    }

    #[test]
    fn seed_000_total_counts_the_forward_and_its_child() {
        let lines = seed_000();
        let s = structure(&lines);
        assert_eq!(s.parent[1], Some((0, Nest::Sum)));
        assert_eq!(s.parent[2], Some((1, Nest::Indent)));
        assert_eq!(s.parent[10], Some((0, Nest::Sum)));
        let r = read(&lines, &s);
        assert_eq!(r.total, TotalIs::Nested);
        assert_eq!(r.figures.forward_ms, Some(1805.28));
        assert_eq!(r.figures.step_ms, None);
        assert_eq!(r.place[1], Place::InForward(0));
        assert_eq!(r.place[9], Place::InForward(1));
        assert_eq!(
            describe(&lines, &s).as_deref(),
            Some(
                "Total = 前向传播总耗时 + VRT处理 + Spike模块: nested lines counted once, so the forward is 前向传播总耗时 (last block: Total 3610.53 ms, forward 1805.28 ms)"
            )
        );
        assert!(fits(&s, &lines));
    }

    #[test]
    fn flat_stages_are_siblings_whatever_their_sums() {
        // Stage7 = Stage5 + Stage6 within 2%: siblings by name all the same.
        let lines = block(&[
            (0, "Stage5", 70.0, None),
            (0, "Stage6", 66.0, None),
            (0, "Stage7", 137.0, None),
            (0, "Total", 273.0, None),
        ]);
        let s = structure(&lines);
        assert!(s.parent.iter().all(Option::is_none));
        let r = read(&lines, &s);
        assert_eq!(r.total, TotalIs::Forward);
        assert_eq!(r.figures.forward_ms, Some(273.0));
    }

    #[test]
    fn a_footer_forward_with_shares_of_it_and_a_whole_step_total() {
        let lines = block(&[
            (0, "数据加载耗时", 12.0, Some(0.3)),
            (0, "encoder", 780.0, Some(78.0)),
            (0, "decoder", 120.0, Some(12.0)),
            (0, "head", 100.0, Some(10.0)),
            (0, "前向传播总耗时", 1000.0, Some(27.0)),
            (0, "损失计算耗时", 50.0, Some(1.4)),
            (0, "Total", 3700.0, None),
        ]);
        let s = structure(&lines);
        assert_eq!(s.parent[1], Some((4, Nest::Percent)));
        let r = read(&lines, &s);
        assert_eq!(r.total, TotalIs::Step);
        assert_eq!(r.figures.forward_ms, Some(1000.0));
        assert_eq!(r.figures.step_ms, Some(3700.0));
        assert_eq!(r.figures.data_ms, Some(12.0));
        assert_eq!(r.figures.other_ms, 50.0);
    }

    #[test]
    fn a_data_wait_inside_the_forward_timer_is_the_data_wait() {
        // Indented under the forward: the forward's timer holds the data wait.
        let mut lines = block(&[
            (0, "forward", 340.0, None),
            (1, "batch-generator", 40.0, None),
            (1, "embed", 300.0, None),
        ]);
        lines[1].role = Role::Data;
        let r = read(&lines, &structure(&lines));
        assert_eq!(r.place[1], Place::Outside);
        assert_eq!(r.figures.forward_ms, Some(300.0));
        assert_eq!(r.figures.data_ms, Some(40.0));
    }

    #[test]
    fn a_later_block_is_checked_against_the_structure() {
        let s = structure(&seed_000());
        let mut other = seed_000();
        other[1].ms = 1500.0; // VRT处理 no longer holds its stages
        assert!(!fits(&s, &other));
    }
}
