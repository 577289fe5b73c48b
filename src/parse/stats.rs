//! Our users' own instrumentation: per-stage timing blocks (`VRT Stage8 : 965.12ms (26.7%)`),
//! cache statistics (`Hit Rate: 82.45% (8245 hits / 1755 misses)`) and memory monitor lines
//! (`[Step 100] Memory - Process: 15678.9MB (6.1%), System: 125.4/256.0GB (49.0%)`).

use super::record::{CacheRecord, Format, HostMemRecord, Record, StageRecord, StepRecord};
use super::{Context, kv, labels, num, push_step, read_pairs, vocabulary};

/// Lines starting with `[`: a timing block header (`[Step 100]`, `[Step 100] Forward timing:`),
/// a line of a block that names its step on every line (`[Step 100] VRT Stage1 : 10.2ms`), a
/// memory monitor line, or a cache block header (`[Cache Stats @ step 100]`,
/// `[SpikeDeblurDataset] Cache Stats:`).
pub fn bracket_line(p: &str, ctx: &mut Context, out: &mut Vec<Record>) -> Option<Format> {
    let close = p.find(']')?;
    let inner = &p[1..close];
    let after = &p[close + 1..];
    let rest = after.trim_start();
    if let Some(step) = step_number(inner) {
        if let Some(mem) = rest.strip_prefix("Memory - ") {
            return memory_monitor(mem, Some(step), out);
        }
        if rest.is_empty() || (rest.ends_with(':') && !cache_header(rest)) {
            ctx.block_step = Some(step);
            ctx.stage_indents.clear();
            out.push(Record::StageBlockStart {
                step: Some(step),
                timers: None,
            });
            return Some(Format::Timing);
        }
        let before = (out.len(), *ctx);
        if ctx.block_step != Some(step) {
            ctx.block_step = Some(step);
            ctx.stage_indents.clear();
            out.push(Record::StageBlockStart {
                step: Some(step),
                timers: None,
            });
        }
        // The indentation after the prefix is the line's own.
        let indent = after.len() - rest.len() - usize::from(after.starts_with(' '));
        if let Some(f) = stats_line(rest.trim_end(), indent, ctx, out) {
            return Some(f);
        }
        out.truncate(before.0);
        *ctx = before.1;
        // `[Step 1/100] Loss: 5.49 | Global Tokens/s: 1347.72 | ...`: a step line of its own.
        let mut rec = StepRecord {
            step: Some(step),
            total: inner.split_once('/').and_then(|(_, t)| num::integer(t)),
            ..StepRecord::default()
        };
        let mut seen = kv::Collected::default();
        read_pairs(rest, &mut rec, &mut seen);
        let measured = rec.loss.is_some()
            || rec.step_time_ms.is_some()
            || rec.samples_per_s.is_some()
            || rec.tokens_per_s.is_some()
            || rec.iters_per_s.is_some();
        if measured {
            push_step(rec, &seen, rest, out);
            return Some(Format::KeyValue);
        }
        // Something else that names its step: progress all the same.
        out.push(Record::StepMark { step });
        return Some(Format::Timing);
    }
    // `[After dataset creation] Memory - Process: ...`: a reading at a named moment.
    if let Some(mem) = rest.strip_prefix("Memory - ") {
        return memory_monitor(mem, None, out);
    }
    if cache_header(inner) {
        ctx.since_cache = 0;
        // `[cache] Hit Rate: 82.45% (...)`: the figures may follow on the same line, or as
        // pairs (`[cache] items=374 hits=8245 misses=1755`).
        return cache_line(rest, ctx, out)
            .or_else(|| cache_pairs(rest, out))
            .or(Some(Format::Cache));
    }
    if rest.ends_with(':') && cache_header(rest) {
        ctx.since_cache = 0;
        return Some(Format::Cache);
    }
    None
}

/// Cache counters as pairs after a cache's tag: `items=374 hits=8245 misses=1755`.
fn cache_pairs(rest: &str, out: &mut Vec<Record>) -> Option<Format> {
    let mut rec = CacheRecord::default();
    kv::pairs(rest, &mut |key, value| {
        if key.eq_ignore_ascii_case("items") || key.eq_ignore_ascii_case("size") {
            rec.items = num::integer(value);
        } else if let Some(field) = vocabulary::lookup(key) {
            kv::apply_cache(field, value, &mut rec);
        }
    });
    (rec != CacheRecord::default()).then_some(())?;
    out.push(Record::Cache(rec));
    Some(Format::Cache)
}

/// `Cache Stats`, `cache statistics`, `Cache Stats @ step 100`: the head of a cache block.
fn cache_header(s: &str) -> bool {
    // Most lines hold no `cache` at all: only those that do are lowercased.
    let b = s.as_bytes();
    if memchr::memmem::find(b, b"ache").is_none() && memchr::memmem::find(b, b"ACHE").is_none() {
        return false;
    }
    let lower = s.to_ascii_lowercase();
    lower.contains("cache") && (lower.contains("stat") || !lower.contains(':'))
}

/// `Step 100`, `step 100`, `Step: 100`: the step a block belongs to.
fn step_number(s: &str) -> Option<u64> {
    let rest = s.strip_prefix("Step").or_else(|| s.strip_prefix("step"))?;
    num::integer(rest.trim_start_matches([':', ' ', '=']))
}

/// Lines without a distinguishing first byte: stage costs, block headers, cache figures and
/// unbracketed memory monitor lines.
pub fn stats_line(
    p: &str,
    indent: usize,
    ctx: &mut Context,
    out: &mut Vec<Record>,
) -> Option<Format> {
    if let Some(mem) = p.strip_prefix("Memory - ") {
        return memory_monitor(mem, None, out);
    }
    if let Some(f) = cache_line(p, ctx, out) {
        return Some(f);
    }
    if let Some(f) = stage_line(p, indent, ctx, out) {
        return Some(f);
    }
    // `Step 100 timing:`, `=== Step 100 ===`: a block header without brackets.
    let head = p.trim_start_matches(['=', '-', '#', ' ']);
    if let Some(step) = step_number(head)
        && head.len() < 48
        && (head.ends_with(':') || head.ends_with('=') || head.contains("timing"))
    {
        ctx.block_step = Some(step);
        ctx.stage_indents.clear();
        out.push(Record::StageBlockStart {
            step: Some(step),
            timers: None,
        });
        return Some(Format::Timing);
    }
    None
}

/// `Label : 965.12ms (26.7%)`, `Total : 3610.53ms`. The label may hold any script; the line must
/// hold nothing but the label, one time with its unit, and an optional share.
fn stage_line(p: &str, indent: usize, ctx: &mut Context, out: &mut Vec<Record>) -> Option<Format> {
    let (label, value) = p.rsplit_once(':')?;
    let label = label.trim();
    // A label is a name, not a list of pairs (`loss=0.5 | data_time: 0.1ms` is not a stage).
    if label.is_empty() || label.len() > 120 || label.contains(['=', '|', ',', ':']) {
        return None;
    }
    let value = value.trim();
    let (ms, unit, suffix) = num::number_unit(value)?;
    if !matches!(unit, num::Unit::Ms | num::Unit::S | num::Unit::Us) {
        return None;
    }
    let ms = num::to_ms(ms, unit, num::Unit::Ms)?;
    if !ms.is_finite() || ms < 0.0 {
        out.push(Record::Rejected {
            what: "a negative or infinite time",
        });
        return Some(Format::Timing);
    }
    let after_unit = suffix.trim_start_matches(char::is_alphabetic).trim();
    let share_pct = if after_unit.is_empty() {
        None
    } else {
        let inner = after_unit.strip_prefix('(')?.strip_suffix(')')?;
        Some(num::number(inner.strip_suffix('%')?)?)
    };
    let role = labels::role(label);
    if role.is_total() {
        ctx.stage_indents.clear();
        out.push(Record::StageTotal {
            name: label.to_string(),
            role,
            ms,
            step: ctx.block_step,
        });
        return Some(Format::Timing);
    }
    // Nesting from indentation: pop the enclosing levels this line is not inside.
    let indent = u32::try_from(indent).unwrap_or(u32::MAX);
    while ctx.stage_indents.last().is_some_and(|i| i >= indent) {
        ctx.stage_indents.pop();
    }
    let depth = u8::try_from(ctx.stage_indents.len()).unwrap_or(u8::MAX);
    ctx.stage_indents.push(indent);
    out.push(Record::Stage(StageRecord {
        name: label.to_string(),
        role,
        ms,
        share_pct,
        depth,
        step: ctx.block_step,
        inside: None,
    }));
    Some(Format::Timing)
}

/// The cache statistics our users print, with or without a list marker: `Hit Rate: 82.45%
/// (8245 hits / 1755 misses)` and `Cache hit rate: 45.2% (4520 hits / 5480 misses)`; inside
/// a cache block also `Size: 374 items` and `Memory: 49876.3 / 51200.0 MB`; and the block's
/// head (`Cache Stats:`).
fn cache_line(p: &str, ctx: &mut Context, out: &mut Vec<Record>) -> Option<Format> {
    let p = p.trim_start_matches(['-', '*', '•', ' ']);
    let mut rec = CacheRecord::default();
    let rate = ["hit rate:", "cache hit rate:", "hit_rate:"]
        .iter()
        .find(|h| p.get(..h.len()).is_some_and(|x| x.eq_ignore_ascii_case(h)))
        .map(|h| &p[h.len()..]);
    if let Some(rest) = rate {
        let (rate, counts) = rest.split_once('(').unwrap_or((rest, ""));
        rec.hit_rate_pct = Some(num::number(rate.trim().trim_end_matches('%'))?);
        if let Some((hits, misses)) = counts.split_once('/') {
            rec.hits = num::integer(hits);
            rec.misses = num::integer(misses);
        }
        ctx.since_cache = 0;
    } else if p.ends_with(':') && p.len() < 64 && cache_header(p) {
        ctx.since_cache = 0;
        return Some(Format::Cache);
    } else if ctx.since_cache <= super::CACHE_BLOCK_LINES {
        if let Some(rest) = p.strip_prefix("Size:") {
            rec.items = Some(num::integer(rest)?);
        } else if let Some(rest) = p.strip_prefix("Memory:") {
            let (used, total) = rest.split_once('/')?;
            let (total_v, unit, _) = num::number_unit(total.trim())?;
            let (used_v, used_unit, _) = num::number_unit(used.trim())?;
            let used_unit = if used_unit == num::Unit::None {
                unit
            } else {
                used_unit
            };
            rec.memory_used_mb = num::to_mib(used_v, used_unit, num::Unit::MiB);
            rec.memory_total_mb = num::to_mib(total_v, unit, num::Unit::MiB);
        } else {
            return None;
        }
    } else {
        return None;
    }
    out.push(Record::Cache(rec));
    Some(Format::Cache)
}

/// `Process: 15678.9MB (6.1%), System: 125.4/256.0GB (49.0%)`.
fn memory_monitor(s: &str, step: Option<u64>, out: &mut Vec<Record>) -> Option<Format> {
    let mut rec = HostMemRecord {
        step,
        ..HostMemRecord::default()
    };
    let proc_part = s.split("Process:").nth(1)?;
    let (v, unit, rest) = num::number_unit(proc_part.trim_start())?;
    rec.process_mb = num::to_mib(v, unit, num::Unit::MiB);
    rec.process_pct = pct_in(rest);
    if let Some(sys) = s.split("System:").nth(1) {
        let (used, rest) = sys.trim_start().split_once('/')?;
        let (total, unit, rest) = num::number_unit(rest)?;
        let (used, used_unit, _) = num::number_unit(used)?;
        let used_unit = if used_unit == num::Unit::None {
            unit
        } else {
            used_unit
        };
        rec.system_used_mb = num::to_mib(used, used_unit, num::Unit::MiB);
        rec.system_total_mb = num::to_mib(total, unit, num::Unit::MiB);
        rec.system_pct = pct_in(rest);
    }
    out.push(Record::HostMem(rec));
    Some(Format::MemoryMonitor)
}

fn pct_in(s: &str) -> Option<f64> {
    let inner = s.split_once('(')?.1.split_once('%')?.0;
    num::number(inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::dispatch;

    fn run(lines: &[&str]) -> Vec<Record> {
        let mut out = Vec::new();
        let mut ctx = Context::default();
        for l in lines {
            dispatch(l, None, &mut ctx, &mut out);
        }
        out
    }

    fn caches(out: &[Record]) -> Vec<&CacheRecord> {
        out.iter()
            .filter_map(|r| match r {
                Record::Cache(c) => Some(c),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn cache_counters_behind_a_tag() {
        let out = run(&[
            "[cache] items=374 hits=8245 misses=1755",
            "[SpikeDeblurDataset] hits=9245 misses=1855",
        ]);
        let caches = caches(&out);
        assert_eq!(caches.len(), 2, "{out:?}");
        assert_eq!(
            (caches[0].items, caches[0].hits, caches[0].misses),
            (Some(374), Some(8245), Some(1755))
        );
        assert_eq!((caches[1].hits, caches[1].misses), (Some(9245), Some(1855)));
    }

    #[test]
    fn nested_block_with_a_step_header() {
        let out = run(&[
            "[Step 7]",
            "VRT Stage1 : 10.00ms (10.0%)",
            "VRT Stage2 : 90.0ms (90.0%)",
            "  attn : 60.0ms",
            "  mlp : 30.0ms",
            "Total : 190.0ms",
        ]);
        let depths: Vec<_> = out
            .iter()
            .filter_map(|r| {
                if let Record::Stage(s) = r {
                    Some((s.depth, s.step))
                } else {
                    None
                }
            })
            .collect();
        assert_eq!(
            depths,
            vec![(0, Some(7)), (0, Some(7)), (1, Some(7)), (1, Some(7))]
        );
        assert_eq!(
            out.last(),
            Some(&Record::StageTotal {
                name: "Total".into(),
                role: labels::Role::Total,
                ms: 190.0,
                step: Some(7)
            })
        );
    }

    #[test]
    fn labels_in_any_language() {
        let out = run(&[
            "前向传播 阶段3 : 120.5ms (4.1%)",
            "Étape préliminaire : 12ms",
        ]);
        assert!(
            matches!(&out[0], Record::Stage(s) if s.name == "前向传播 阶段3" && s.share_pct == Some(4.1))
        );
        assert!(
            matches!(&out[1], Record::Stage(s) if s.name == "Étape préliminaire" && s.ms == 12.0)
        );
    }

    #[test]
    fn cache_block_and_memory_monitor() {
        let out = run(&[
            "[Cache Stats @ step 100]",
            "Hit Rate: 82.45% (8245 hits / 1755 misses)",
            "Size: 374 items",
            "Memory: 49876.3 / 51200.0 MB",
        ]);
        assert_eq!(out.len(), 3);
        assert!(
            matches!(&out[0], Record::Cache(c) if c.hits == Some(8245) && c.misses == Some(1755))
        );
        assert!(matches!(&out[2], Record::Cache(c) if c.memory_total_mb == Some(51200.0)));
        let out =
            run(&["[Step 100] Memory - Process: 15678.9MB (6.1%), System: 125.4/256.0GB (49.0%)"]);
        assert!(
            matches!(&out[0], Record::HostMem(m) if m.system_total_mb == Some(262_144.0) && m.process_pct == Some(6.1))
        );
        let out = run(&[
            "[After dataset creation] Memory - Process: 12345.6MB (4.8%), System: 48.3/256.0GB (18.9%)",
        ]);
        assert!(
            matches!(&out[0], Record::HostMem(m) if m.step.is_none() && m.process_mb == Some(12345.6))
        );
    }

    #[test]
    fn the_seeds_cache_block_with_list_dashes_and_its_one_line_form() {
        let out = run(&[
            "[SpikeDeblurDataset] Cache Stats:",
            "  - Size: 374 items",
            "  - Memory: 49876.3 / 51200.0 MB",
            "  - Hit Rate: 82.45% (8245 hits / 1755 misses)",
            "Cache hit rate: 45.2% (4520 hits / 5480 misses)",
        ]);
        let caches = caches(&out);
        assert_eq!(caches.len(), 4);
        assert_eq!(caches[0].items, Some(374));
        assert_eq!(caches[1].memory_used_mb, Some(49876.3));
        assert_eq!(caches[1].memory_total_mb, Some(51200.0));
        assert_eq!(
            (caches[2].hit_rate_pct, caches[2].hits, caches[2].misses),
            (Some(82.45), Some(8245), Some(1755))
        );
        assert_eq!(
            (caches[3].hit_rate_pct, caches[3].hits, caches[3].misses),
            (Some(45.2), Some(4520), Some(5480))
        );
    }

    #[test]
    fn a_step_prefix_on_every_line_makes_a_block() {
        let out = run(&[
            "[Step 5] forward : 50.00ms",
            "[Step 5]   conv : 30.00ms",
            "[Step 6] forward : 51.00ms",
            "[Step 6] saving samples",
        ]);
        let seen: Vec<String> = out
            .iter()
            .map(|r| match r {
                Record::StageBlockStart { step, .. } => format!("block {step:?}"),
                Record::Stage(s) => format!("{} {} {:?}", s.name, s.depth, s.step),
                Record::StepMark { step } => format!("mark {step}"),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(
            seen,
            vec![
                "block Some(5)",
                "forward 0 Some(5)",
                "conv 1 Some(5)",
                "block Some(6)",
                "forward 0 Some(6)",
                "mark 6"
            ]
        );
    }

    #[test]
    fn a_negative_stage_time_is_rejected() {
        let out = run(&["VRT Stage1 : -5.00ms (1.0%)"]);
        assert!(matches!(&out[..], [Record::Rejected { .. }]));
    }

    #[test]
    fn a_key_value_line_is_not_a_stage() {
        let out = run(&["loss=0.5 | data_time: 0.1ms"]);
        assert!(!out.iter().any(|r| matches!(r, Record::Stage(_))));
    }
}
