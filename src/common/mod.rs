//! The few helpers every layer shares, depending on nothing else in steptop: the error type
//! and its exit codes (`error`), numbers with their units and times of day (`units`, `dates`),
//! text laid out for a terminal or a file (`display`), a library's panics kept quiet
//! (`contain`), and a quick hash for maps keyed by integers (`int_hash`).

pub mod contain;
pub mod dates;
pub mod display;
pub mod error;
pub mod int_hash;
pub mod units;
