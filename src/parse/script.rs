//! A training script's source printed into its log (some projects dump the script first):
//! its assignments are the run's configuration, read for the sizes that give throughput.
//! `batch_size : int = 8*64 # sequences per step, across all devices` is 512 samples of the
//! whole job; `train_batch_size = 2048 * 24 * 8 # tokens per step` is tokens. Products of
//! integers are worked out; the comment says what the number counts.

use super::kv::{self, Field};
use super::record::{ConfigFact, Format, Record};

/// An assignment of a product of integers: `name [: type] = 8 * 64 [# comment]`.
struct Assignment<'a> {
    name: &'a str,
    value: u64,
    comment: &'a str,
}

fn assignment(p: &str) -> Option<Assignment<'_>> {
    let (left, right) = p.split_once('=')?;
    if right.starts_with('=') {
        return None;
    }
    let name = left.split(':').next()?.trim();
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.')
    {
        return None;
    }
    let (expr, comment) = right.split_once('#').unwrap_or((right, ""));
    let mut value: u64 = 1;
    let mut factors = 0;
    for factor in expr.split('*') {
        let f = factor.trim().replace('_', "");
        if f.is_empty() || !f.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        value = value.checked_mul(f.parse().ok()?)?;
        factors += 1;
    }
    (factors > 0).then_some(Assignment {
        name,
        value,
        comment: comment.trim(),
    })
}

/// The configuration fact an assignment states, if it states one: a batch whose comment says
/// it counts tokens is the tokens of a step; one said to cover all devices is global.
pub fn facts(p: &str, out: &mut Vec<Record>) -> Option<Format> {
    let a = assignment(p)?;
    let name = a.name.rsplit('.').next().unwrap_or(a.name);
    let lower = name.to_ascii_lowercase();
    if ["val", "eval", "test"].iter().any(|w| lower.starts_with(w)) {
        // An evaluation's sizes are not the training's.
        return Some(Format::KeyValue);
    }
    let comment = a.comment.to_ascii_lowercase();
    let field = kv::lookup(name)?;
    let batch = matches!(field, Field::BatchSize | Field::GlobalBatch);
    let value = u32::try_from(a.value).ok();
    let fact = if batch && comment.contains("token") {
        ConfigFact::TokensPerStep(a.value)
    } else if batch && (comment.contains("all devices") || comment.contains("global")) {
        ConfigFact::GlobalBatch(value?)
    } else {
        kv::config_fact(field, name, &a.value.to_string())?
    };
    out.push(Record::Config(fact));
    Some(Format::KeyValue)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fact(line: &str) -> Option<ConfigFact> {
        let mut out = Vec::new();
        facts(line, &mut out)?;
        match out.pop() {
            Some(Record::Config(f)) => Some(f),
            _ => None,
        }
    }

    #[test]
    fn products_and_what_the_comment_says_they_count() {
        assert_eq!(
            fact("batch_size : int = 8*64 # batch size, in sequences, across all devices"),
            Some(ConfigFact::GlobalBatch(512))
        );
        assert_eq!(
            fact("train_batch_size : int = 2048 * 24 * 8 # tokens per step, all devices"),
            Some(ConfigFact::TokensPerStep(393_216))
        );
        assert_eq!(
            fact("sequence_length : int = 1024 # sequence length, in tokens"),
            Some(ConfigFact::SeqLen(1024))
        );
        assert_eq!(fact("val_batch_size : int = 4 * 64 * 1024 * 8"), None);
        assert_eq!(fact("num_workers = 4"), Some(ConfigFact::NumWorkers(4)));
        assert_eq!(fact("x = y * 2"), None);
    }
}
