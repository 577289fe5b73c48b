//! The unparsed shape of each memo shape a parser has read nothing from. The lines of one memo
//! shape differ only in their numbers' digits, which an unparsed shape folds, so it is made
//! once: a quarter of the bench log's lines read nothing, and each was cleaned and shaped.
//! A parser thread keeps one for its blocks, and the bulk reader one for the blocks it parses
//! in place (on one core).

use std::collections::HashMap;
use std::sync::Arc;

use crate::common::int_hash::IntHash;
use crate::model::unparsed::unparsed_shape;
use crate::parse::Parser;

#[derive(Default)]
pub(super) struct ShapeNames(HashMap<u64, Arc<str>, IntHash>);

impl ShapeNames {
    /// The memo trusts at most 1024 shapes in a file and never forgets a trusted one, so this
    /// bound is not reached; it keeps the map bounded without relying on that.
    const MAX: usize = 4096;

    /// The unparsed shape of `raw`, which `parser` has just read from a memo shape; None when
    /// it parsed the line in full (a shape being learned, or none).
    pub(super) fn served(&mut self, parser: &Parser, raw: &[u8]) -> Option<Arc<str>> {
        let key = parser.served_shape()?;
        if self.0.len() >= Self::MAX && !self.0.contains_key(&key) {
            self.0.clear();
        }
        Some(
            self.0
                .entry(key)
                .or_insert_with(|| unparsed_shape(raw))
                .clone(),
        )
    }
}
