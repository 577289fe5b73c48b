//! A training script's code printed into its log (some projects dump the script first):
//! its assignments are the run's configuration, read for the sizes that give throughput.
//! `batch_size : int = 8*64 # sequences per step, across all devices` is 512 samples of the
//! whole job; `train_batch_size = 2048 * 24 * 8 # tokens per step` is tokens. Products of
//! integers are worked out; the comment says what the number counts.

use super::kv;
use super::record::{ConfigFact, Format, Record};
use super::vocabulary::{self, Field};

/// An assignment of a product of integers: `name [: type] = 8 * 64 [# comment]`.
struct Assignment<'a> {
    name: &'a str,
    value: u64,
    comment: &'a str,
    /// How many integers multiply, and the largest.
    factors: u32,
    longest: u64,
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
    let (mut value, mut factors, mut longest) = (1u64, 0, 0);
    for factor in expr.split('*') {
        let f = factor.trim().replace('_', "");
        if f.is_empty() || !f.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let n: u64 = f.parse().ok()?;
        value = value.checked_mul(n)?;
        longest = longest.max(n);
        factors += 1;
    }
    (factors > 0).then_some(Assignment {
        name,
        value,
        comment: comment.trim(),
        factors,
        longest,
    })
}

/// An assignment in a script's code printed whole (`ctx.script`): as `facts`, but for names
/// that mean other things in code (`block_size` is nanoGPT's context length in a config, but
/// a kernel's or an attention mask's block in a script).
pub fn code_facts(p: &str, out: &mut Vec<Record>) -> Option<Format> {
    let a = assignment(p)?;
    let name = a.name.rsplit('.').next().unwrap_or(a.name);
    if name.eq_ignore_ascii_case("block_size") {
        return None;
    }
    facts(p, out)
}

/// The configuration fact an assignment states, if it states one: a batch whose comment says
/// it counts tokens is the tokens of a step; one said to cover all devices is global. A batch
/// written as a product with a factor of 256 or more (a sequence length) that comes to 65,536
/// or more counts tokens: `2048 * 24 * 8` is 24 sequences of 2048 tokens on 8 GPUs.
pub fn facts(p: &str, out: &mut Vec<Record>) -> Option<Format> {
    let a = assignment(p)?;
    let name = a.name.rsplit('.').next().unwrap_or(a.name);
    let lower = name.to_ascii_lowercase();
    if ["val", "eval", "test"].iter().any(|w| lower.starts_with(w)) {
        // An evaluation's sizes are not the training's.
        return Some(Format::KeyValue);
    }
    let comment = a.comment.to_ascii_lowercase();
    let field = vocabulary::lookup(name)?;
    let batch = matches!(field, Field::BatchSize | Field::GlobalBatch);
    let value = u32::try_from(a.value).ok();
    let in_tokens = a.longest >= 256 && a.factors >= 2 && a.value >= 65_536;
    let fact = if batch && (comment.contains("token") || in_tokens) {
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
