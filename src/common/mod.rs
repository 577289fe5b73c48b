//! The few helpers every layer shares, depending on nothing else in steptop: the error type
//! and its exit codes (`error`), numbers with their units and times of day (`units`, `dates`),
//! and text laid out for a terminal or a file (`display`).

pub mod dates;
pub mod display;
pub mod error;
pub mod units;
