//! Where the parser read its numbers. While shape.rs learns a line, every function that turns
//! text into a number notes which bytes of the line it read and what it made of them; at any
//! other time the note is one thread-local flag test.

use std::cell::{Cell, RefCell};

/// A number as the parser read it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Val {
    F(f64),
    U(u64),
}

impl Val {
    /// Bit-for-bit equality: a memo must give exactly what the parser gives.
    pub(crate) fn same(self, other: Val) -> bool {
        match (self, other) {
            (Val::F(a), Val::F(b)) => a.to_bits() == b.to_bits(),
            (Val::U(a), Val::U(b)) => a == b,
            _ => false,
        }
    }
}

/// The function that read the number, so that it can read the same bytes of another line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `num::decimal` on the digits of a number with a unit.
    Decimal,
    /// `num::integer`.
    Integer,
    /// `num::duration_s`.
    Duration,
    /// `prefix::timestamp`.
    Timestamp,
    /// Plain digits read with `str::parse` as a float (an epoch number).
    Float,
    /// `prefix::rank`.
    Rank,
    /// A counter `n/total` with n short of total (a running Keras epoch); fails otherwise.
    /// The parser branches on it, so the memo must see it.
    Unfinished,
}

/// One read: `len` bytes at `at` in the line's text, and what they read as (None: the
/// function refused them).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Read {
    pub at: usize,
    pub len: usize,
    pub kind: Kind,
    pub val: Option<Val>,
}

struct Reads {
    base: usize,
    len: usize,
    list: Vec<Read>,
}

thread_local! {
    static ON: Cell<bool> = const { Cell::new(false) };
    static READS: RefCell<Reads> = const {
        RefCell::new(Reads { base: 0, len: 0, list: Vec::new() })
    };
}

/// Notes that `s` was read as `val`. Text outside the line being learned (a copy the parser
/// made) is not noted: another line's copy is not at a known place.
pub(crate) fn note(s: &str, kind: Kind, val: Option<Val>) {
    if !ON.with(Cell::get) {
        return;
    }
    READS.with_borrow_mut(|r| {
        let p = s.as_ptr() as usize;
        if p >= r.base && p + s.len() <= r.base + r.len {
            r.list.push(Read {
                at: p - r.base,
                len: s.len(),
                kind,
                val,
            });
        }
    });
}

/// Runs `parse` over `text` and returns what it returned and every read it made of `text`.
pub(crate) fn reads_of<T>(text: &str, parse: impl FnOnce() -> T) -> (T, Vec<Read>) {
    READS.with_borrow_mut(|r| {
        r.base = text.as_ptr() as usize;
        r.len = text.len();
        r.list.clear();
    });
    ON.with(|on| on.set(true));
    let out = parse();
    ON.with(|on| on.set(false));
    let reads = READS.with_borrow_mut(|r| std::mem::take(&mut r.list));
    (out, reads)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::num;
    use crate::parse::shape::read_as;

    #[test]
    fn reads_inside_the_text_are_noted_with_their_place() {
        let text = "loss 0.25 lr 3e-4";
        let ((), reads) = reads_of(text, || {
            num::number_unit(&text[5..9]);
            num::number_unit("7.5");
        });
        assert_eq!(reads.len(), 1, "{reads:?}");
        assert_eq!((reads[0].at, reads[0].len), (5, 4));
        assert!(reads[0].val.is_some_and(|v| v.same(Val::F(0.25))));
        assert!(matches!(read_as(reads[0].kind, "0.75"), Some(v) if v.same(Val::F(0.75))));
    }

    #[test]
    fn nothing_is_noted_outside_a_learned_line() {
        num::number_unit("0.5");
        let ((), reads) = reads_of("x", || ());
        assert!(reads.is_empty());
    }
}
