//! steptop: where each training step's time goes, from the logs a training job already writes.

pub mod parse;
pub mod source;
