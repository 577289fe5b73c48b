//! Our users' own instrumentation: per-stage timing blocks (`VRT Stage8 : 965.12ms (26.7%)`),
//! cache statistics (`Hit Rate: 82.45% (8245 hits / 1755 misses)`) and memory monitor lines
//! (`[Step 100] Memory - Process: 15678.9MB (6.1%), System: 125.4/256.0GB (49.0%)`).

use super::record::{CacheRecord, Format, HostMemRecord, Record, StageRecord};
use super::{Context, num};

/// Lines starting with `[`: a timing block header (`[Step 100]`, `[Step 100] Forward timing:`),
/// a memory monitor line, or a cache block header (`[Cache Stats @ step 100]`).
pub fn bracket_line(p: &str, ctx: &mut Context, out: &mut Vec<Record>) -> Option<Format> {
    let close = p.find(']')?;
    let inner = &p[1..close];
    let rest = p[close + 1..].trim_start();
    if let Some(step) = step_number(inner) {
        if let Some(mem) = rest.strip_prefix("Memory - ") {
            return memory_monitor(mem, Some(step), out);
        }
        ctx.block_step = Some(step);
        ctx.stage_indents.clear();
        out.push(Record::StageBlockStart { step: Some(step) });
        return Some(Format::Timing);
    }
    if inner.to_ascii_lowercase().contains("cache") {
        ctx.since_cache = 0;
        return Some(Format::Cache);
    }
    None
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
        out.push(Record::StageBlockStart { step: Some(step) });
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
    let after_unit = suffix.trim_start_matches(char::is_alphabetic).trim();
    let share_pct = if after_unit.is_empty() {
        None
    } else {
        let inner = after_unit.strip_prefix('(')?.strip_suffix(')')?;
        Some(num::number(inner.strip_suffix('%')?)?)
    };
    if is_total(label) {
        ctx.stage_indents.clear();
        out.push(Record::StageTotal {
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
        ms,
        share_pct,
        depth,
        step: ctx.block_step,
    }));
    Some(Format::Timing)
}

fn is_total(label: &str) -> bool {
    let last = label.rsplit(' ').next().unwrap_or(label);
    matches!(
        last,
        "Total" | "total" | "TOTAL" | "总计" | "合计" | "总时间"
    ) || label.eq_ignore_ascii_case("total time")
}

/// `Hit Rate: 82.45% (8245 hits / 1755 misses)`; inside a cache block also `Size: 374 items`
/// and `Memory: 49876.3 / 51200.0 MB`.
fn cache_line(p: &str, ctx: &mut Context, out: &mut Vec<Record>) -> Option<Format> {
    let mut rec = CacheRecord::default();
    if let Some(rest) = p
        .strip_prefix("Hit Rate:")
        .or_else(|| p.strip_prefix("Hit rate:"))
    {
        let (rate, counts) = rest.split_once('(').unwrap_or((rest, ""));
        rec.hit_rate_pct = Some(num::number(rate.trim().trim_end_matches('%'))?);
        if let Some((hits, misses)) = counts.split_once('/') {
            rec.hits = num::integer(hits);
            rec.misses = num::integer(misses);
        }
        ctx.since_cache = 0;
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
    }

    #[test]
    fn a_key_value_line_is_not_a_stage() {
        let out = run(&["loss=0.5 | data_time: 0.1ms"]);
        assert!(!out.iter().any(|r| matches!(r, Record::Stage(_))));
    }
}
