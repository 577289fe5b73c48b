//! The few helpers every layer shares, depending on nothing else in steptop: the error type
//! and its exit codes (`error`), numbers with their units and times of day (`units`, `dates`),
//! text laid out for a terminal or a file (`display`), and a library's panics kept quiet
//! (`contain`).

pub mod contain;
pub mod dates;
pub mod display;
pub mod error;
pub mod units;
