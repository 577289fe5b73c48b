//! Lines to typed records.

pub mod record;
