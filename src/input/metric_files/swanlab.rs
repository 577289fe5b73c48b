//! SwanLab's run file, `swanlog/run-<stamp>-<id>/run-<id>.swanlab` (SwanLab 0.10 and later):
//! W&B's LevelDB framing under the ident `:SWL`, its records SwanLab's own protobuf `Record`.
//! Read here: each scalar (a key, the step `swanlab.log` was given, its time and value),
//! consecutive scalars of one step making one entry at the first one's time; and the config
//! from the run folder's `files/config.yaml`. The messages are derived in Rust for the fields
//! read (SwanLab's `record/v1/record.proto`); other records are skipped unread.

use prost::Message;

use super::wandb::Timestamp;
use super::{Entry, Read, leveldb_log};

#[derive(Clone, PartialEq, Message)]
pub struct Record {
    #[prost(message, optional, tag = "13")]
    pub scalar: Option<ScalarRecord>,
}

#[derive(Clone, PartialEq, Message)]
pub struct ScalarRecord {
    #[prost(string, tag = "1")]
    pub key: String,
    #[prost(int64, tag = "2")]
    pub step: i64,
    #[prost(message, optional, tag = "4")]
    pub timestamp: Option<Timestamp>,
    #[prost(message, optional, tag = "5")]
    pub value: Option<ScalarValue>,
}

#[derive(Clone, Copy, PartialEq, Message)]
pub struct ScalarValue {
    #[prost(double, tag = "1")]
    pub number: f64,
}

/// The ident a `.swanlab` file begins with.
pub const IDENT: &[u8] = b":SWL";

/// Reads a whole `.swanlab` file; `config` is the run's `files/config.yaml`, when there is one.
pub fn read(bytes: &[u8], config: Option<&str>) -> Read {
    let mut out = Read::default();
    if leveldb_log::ident(bytes) != Some(IDENT) {
        out.problems
            .push("byte 0: not a SwanLab run file (it does not begin with `:SWL`)".into());
        return out;
    }
    if let Some(config) = config {
        let facts = config_facts(config);
        if !facts.is_empty() {
            out.entries.push(Entry {
                config: facts,
                ..Entry::default()
            });
        }
    }
    let framed = leveldb_log::records(bytes, 0);
    for (offset, data) in &framed.records {
        let scalar = match Record::decode(data.as_ref()) {
            Ok(r) => r.scalar,
            Err(e) => {
                out.problems
                    .push(format!("byte {offset}: not a SwanLab record ({e})"));
                continue;
            }
        };
        let Some(s) = scalar else { continue };
        let Some(value) = s.value.map(|v| v.number).filter(|v| v.is_finite()) else {
            continue;
        };
        let time = s
            .timestamp
            .map(|t| t.seconds as f64 + f64::from(t.nanos) / 1e9);
        let step = u64::try_from(s.step).ok();
        match out.entries.last_mut() {
            Some(e) if e.config.is_empty() && e.step == step => e.values.push((s.key, value)),
            _ => out.entries.push(Entry {
                step,
                time,
                values: vec![(s.key, value)],
                ..Entry::default()
            }),
        }
    }
    out.problems.extend(framed.problems);
    out.problems
        .extend(super::torn_tail(framed.consumed, bytes.len()));
    out
}

/// The facts of a tracker's `config.yaml` as SwanLab and W&B write it: each key on a line of
/// its own, its value on an indented `value:` line below.
fn config_facts(yaml: &str) -> Vec<(String, crate::parse::record::ConfigFact)> {
    let mut facts = Vec::new();
    let mut key: Option<&str> = None;
    for line in yaml.lines() {
        if !line.starts_with(' ') {
            key = line.strip_suffix(':').map(str::trim);
            continue;
        }
        let (Some(k), Some(v)) = (key, line.trim().strip_prefix("value:")) else {
            continue;
        };
        facts.extend(super::config_fact(k, v.trim().trim_matches(['\'', '"'])));
    }
    facts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_configs_values_are_read_under_their_keys() {
        let facts = config_facts(
            "batch_size:\n  desc: ''\n  sort: 0\n  value: 32\nnum_workers:\n  desc: null\n  value: 2\nlr:\n  value: 0.05\n",
        );
        let text: Vec<&str> = facts.iter().map(|(t, _)| t.as_str()).collect();
        assert_eq!(text, vec!["batch_size=32", "num_workers=2"]);
    }
}
