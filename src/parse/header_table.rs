//! Tables under a header row: a line of column names (`epoch  main/loss  elapsed_time`,
//! `epoch  train_loss  valid_loss  time`), then rows of numbers under them, as Chainer's
//! PrintReport, fastai's progress table and many hand-written loops print. The names are the
//! vocabulary's, so a row means what a line of `name: value` pairs would; which name a
//! number belongs to is told by where it stands under the header.

use super::kv;
use super::vocabulary::{self, Field};
use super::{Context, push_step};
use crate::parse::record::{Format, Record, StepRecord};

/// Columns a header may have: a wider line is prose or a dump, not a table's header.
const MAX_COLUMNS: usize = 12;

/// A header's columns, kept in the parser's context while its rows come.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Table {
    columns: [Column; MAX_COLUMNS],
    len: u8,
    /// The header's layout as one number: rows read under one header are the same line
    /// only under that header (the shape memo keys on it).
    pub(crate) key: u64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq)]
struct Column {
    /// Where the name starts and ends in the header line.
    start: u16,
    end: u16,
    field: Option<Field>,
    /// An evaluation's column (`validation/main/loss`, `valid_loss`): not the step's.
    eval: bool,
}

/// The header a line is, if it is one: three or more names, nothing else, at least one of
/// them a step or an epoch and one a figure of the step.
pub(crate) fn header(p: &str) -> Option<Table> {
    let mut columns = [Column::default(); MAX_COLUMNS];
    let mut len = 0;
    let (mut progress, mut figure) = (false, false);
    let mut key = 0xcbf2_9ce4_8422_2325u64;
    for (start, word) in words(p) {
        let named = word.as_bytes()[0].is_ascii_alphabetic()
            && word
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'/' | b'-' | b'.'));
        if !named || len == MAX_COLUMNS {
            return None;
        }
        let field = vocabulary::lookup(word);
        let eval = super::evaluation_key(word);
        progress |= matches!(field, Some(Field::Step | Field::Epoch)) && !eval;
        figure |= matches!(
            field,
            Some(
                Field::Loss(_)
                    | Field::StepTime(_)
                    | Field::Elapsed(_)
                    | Field::DataTime(_)
                    | Field::SamplesPerS
                    | Field::ItersPerS
                    | Field::TokensPerS
            )
        ) && !eval;
        let end = start + word.len();
        columns[len] = Column {
            start: u16::try_from(start).ok()?,
            end: u16::try_from(end).ok()?,
            field,
            eval,
        };
        len += 1;
        for b in word.bytes().chain([b' ']) {
            key = (key ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
        key = (key ^ start as u64).wrapping_mul(0x100_0000_01b3);
    }
    (len >= 3 && progress && figure).then_some(Table {
        columns,
        len: len as u8,
        key,
    })
}

/// A row under the header in `ctx`: numbers only, each standing under one column. Its
/// figures are a step record, as the same names and values on one line would be.
pub(crate) fn row(p: &str, ctx: &Context, out: &mut Vec<Record>) -> Option<Format> {
    let table = ctx.table.as_ref()?;
    let columns = &table.columns[..usize::from(table.len)];
    let mut rec = StepRecord::default();
    let mut seen = kv::Collected::default();
    let mut taken = [false; MAX_COLUMNS];
    let (mut cells, mut measured) = (0, false);
    // A row with a number in every column is read in order, aligned or not; one with blanks
    // by where its numbers stand.
    let full = words(p).count() == columns.len();
    for (i, (start, cell)) in words(p).enumerate() {
        if !cell_value(cell) {
            return None;
        }
        let at = if full {
            i
        } else {
            under(columns, start, start + cell.len())?
        };
        if std::mem::replace(&mut taken[at], true) {
            return None;
        }
        cells += 1;
        let column = columns[at];
        let Some(field) = column.field.filter(|_| !column.eval) else {
            continue;
        };
        if kv::apply(field, cell, &mut rec, &mut seen) {
            measured |= !matches!(field, Field::Step | Field::Epoch | Field::Total);
        }
    }
    if cells < 2 || !measured || seen.fields < 2 {
        return None;
    }
    push_step(rec, &seen, p, out);
    Some(Format::KeyValue)
}

/// The column a cell from `start` to `end` stands under: the one it overlaps most, its
/// span running from its name to the next name (left-aligned values) and back to the end of
/// the name before (right-aligned ones).
fn under(columns: &[Column], start: usize, end: usize) -> Option<usize> {
    let mut best: Option<(usize, usize)> = None;
    for (i, c) in columns.iter().enumerate() {
        let from = if i == 0 {
            0
        } else {
            usize::from(columns[i - 1].end)
        };
        let to = columns
            .get(i + 1)
            .map_or(usize::MAX, |n| usize::from(n.start));
        let left = usize::from(c.start).max(start);
        let right = to.min(end);
        // Overlap with the column's own span counts first, then with the gap before it.
        let own = right.saturating_sub(left);
        let near = end
            .min(usize::from(c.start))
            .saturating_sub(from.max(start));
        let score = own * 2 + near;
        if score > 0 && best.is_none_or(|(_, s)| score > s) {
            best = Some((i, score));
        }
    }
    best.map(|(i, _)| i)
}

/// A table cell: a number, a clock (`00:12`, `1:02:03`) or a missing value's mark.
fn cell_value(cell: &str) -> bool {
    let b = cell.as_bytes();
    let numeric = b
        .iter()
        .all(|c| c.is_ascii_digit() || b".:-+eE%".contains(c))
        && b.iter().any(u8::is_ascii_digit);
    numeric || matches!(cell, "nan" | "inf" | "-inf" | "#na#" | "-" | "None")
}

/// The line's words and where each starts.
fn words(p: &str) -> impl Iterator<Item = (usize, &str)> {
    let base = p.as_ptr() as usize;
    p.split_ascii_whitespace()
        .map(move |w| (w.as_ptr() as usize - base, w))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(lines: &[&str]) -> Vec<StepRecord> {
        let mut ctx = Context::default();
        let mut out = Vec::new();
        for l in lines {
            if let Some(t) = header(l) {
                ctx.table = Some(t);
                continue;
            }
            row(l, &ctx, &mut out);
        }
        out.into_iter()
            .filter_map(|r| match r {
                Record::Step(s) => Some(*s),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn rows_are_read_by_the_names_above_them() {
        // Chainer's PrintReport, validation columns left blank.
        let got = rows(&[
            "epoch       main/loss   validation/main/loss  main/accuracy  validation/main/accuracy  elapsed_time",
            "1           0.617648                                                                   92.4512       ",
            "2           0.41                0.39                                                   180.2",
        ]);
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0].epoch, Some(1.0));
        assert_eq!(got[0].loss, Some(0.617648));
        assert_eq!(
            got[1].loss,
            Some(0.41),
            "the validation loss is not the step's"
        );
        assert_eq!(got[1].elapsed_s, Some(180.2));
    }

    #[test]
    fn prose_and_single_figures_are_no_header() {
        assert!(header("epoch loss").is_none());
        assert!(header("Saving the model to disk now").is_none());
        assert!(header("epoch: 1 loss: 0.5 time: 3").is_none());
        assert!(header("step  loss  lr").is_some());
    }

    #[test]
    fn a_line_of_words_is_no_row() {
        let got = rows(&["step  loss  lr", "10  0.5  1e-4", "Saving checkpoint 10"]);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].step, Some(10));
        assert_eq!(got[0].lr, Some(1e-4));
    }
}
