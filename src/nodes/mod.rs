//! `steptop cluster`: many nodes at once, read from the Prometheus that already scrapes each
//! node's `steptop --headless --metrics-addr` (and dcgm-exporter, where the cluster runs it).
//! A refresh is a few aggregate queries (`queries`), sent by `fetch`; `rows` turns the
//! answers into rows, problems first, and a summary per job. The sinks (`sink::cluster`)
//! print the table once or show it live.

pub mod fetch;
pub mod queries;
pub mod rows;
