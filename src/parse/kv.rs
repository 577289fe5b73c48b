//! The key/value scanner that most formats share: `key=value`, `key: value`, `'key': value`,
//! `| key value |`, `0.5 samples/s`, `14.19it/s`, `11ms/step`, and the key names frameworks use
//! for the same figure.

use super::num::{self, Unit};
use super::record::{CacheRecord, ConfigFact, StepRecord};
use super::vocabulary::{self, Field, lookup};

/// Calls `f(key, value)` for every pair in `s`. `value` runs to the end of its segment, so a
/// caller can read `1 day, 12:59:34` or `9.46GiB(64.99%)` whole; only its start is the value.
/// A table row of two cells (`| micro batch size B | 32 |`) is one pair.
pub fn pairs<'a>(s: &'a str, f: &mut dyn FnMut(&'a str, &'a str)) {
    if let Some((key, value)) = table_row(s).or_else(|| dotted_row(s)) {
        f(key, value);
        return;
    }
    if alternates(s) {
        for (name, value) in cells(s).zip(cells(s).skip(1)).step_by(2) {
            f(name, value);
        }
        return;
    }
    for seg in segments(s) {
        segment_pairs(seg, f);
    }
}

/// Calls `f(key, value)` for every `name=value` in a printed dataclass or namespace
/// (`TrainConfig(model=ModelConfig(max_sequence_length=4096), global_train_batch_size=512)`),
/// however deeply nested; `value` runs to the next `,` or `)`.
pub fn assignments<'a>(s: &'a str, f: &mut dyn FnMut(&'a str, &'a str)) {
    let b = s.as_bytes();
    let mut from = 0;
    while let Some(at) = memchr::memchr(b'=', &b[from..]).map(|i| from + i) {
        from = at + 1;
        if b.get(at + 1) == Some(&b'=') || at == 0 || b[at - 1] == b'=' {
            from += 1;
            continue;
        }
        let start = b[..at]
            .iter()
            .rposition(|c| !(c.is_ascii_alphanumeric() || *c == b'_' || *c == b'.'))
            .map_or(0, |i| i + 1);
        if start == at {
            continue;
        }
        let rest = &s[at + 1..];
        let end = rest.find([',', ')']).unwrap_or(rest.len());
        f(&s[start..at], rest[..end].trim().trim_matches(['\'', '"']));
    }
}

/// `Step, 140, Loss, 0.11, StepTime, 0.13,`: names and numbers taking turns between commas,
/// two pairs or more.
fn alternates(s: &str) -> bool {
    let mut cells = cells(s);
    let mut pairs = 0;
    while let Some(name) = cells.next() {
        let Some(value) = cells.next() else {
            return false;
        };
        let named = name.starts_with(|c: char| c.is_ascii_alphabetic())
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'/' | b' ' | b'-'));
        if !named || !starts_number(value.trim_start_matches('-').as_bytes()) {
            return false;
        }
        pairs += 1;
    }
    pairs >= 2
}

/// The comma-separated cells of a line, trimmed, without a trailing empty one.
fn cells(s: &str) -> impl Iterator<Item = &str> {
    s.trim().trim_end_matches(',').split(',').map(str::trim)
}

/// `global_batch_size ............. 80`: an argument dump's row, the key led to its value by
/// dots (Megatron's, DeepSpeed's).
pub(crate) fn dotted_row(s: &str) -> Option<(&str, &str)> {
    let s = s.trim();
    let (key, rest) = s.split_once(" ...")?;
    let value = rest.trim_start_matches('.').trim_start_matches(':').trim();
    let key = key.trim();
    (!key.is_empty() && !key.contains(' ') && !value.is_empty()).then_some((key, value))
}

/// `| key | value |`: a two-cell row of a settings table, its value a number or a word.
fn table_row(s: &str) -> Option<(&str, &str)> {
    let inner = s.trim().strip_prefix('|')?.strip_suffix('|')?;
    let (key, value) = inner.split_once('|')?;
    let (key, value) = (key.trim(), value.trim());
    let one_word = !value.is_empty() && !value.contains(['|', ' ']);
    (one_word && !key.is_empty() && !key.contains(['=', ':'])).then_some((key, value))
}

/// Splits on `|`, tab, `;`, ` - `, `, ` and runs of two or more spaces, outside brackets and
/// quotes. A run of spaces right after `:` or `=` is padding of a value, not a separator, and
/// `1 day, 12:59:34` stays whole.
fn segments(s: &str) -> impl Iterator<Item = &str> {
    let b = s.as_bytes();
    let mut start = 0;
    let mut i = 0;
    let mut depth = 0i32;
    let mut quote: Option<u8> = None;
    std::iter::from_fn(move || {
        while i < b.len() {
            if let Some(q) = quote {
                i = memchr::memchr(q, &b[i..]).map_or(b.len(), |k| i + k + 1);
                quote = None;
                continue;
            }
            // Most bytes are parts of words and numbers: skip them in a tight loop.
            while i < b.len() && !SEGMENT_BYTES[usize::from(b[i])] {
                i += 1;
            }
            let Some(&c) = b.get(i) else {
                break;
            };
            let sep_len = match c {
                b'\'' | b'"' if i == start || b[i - 1] == b' ' || b[i - 1] == b'{' => {
                    quote = Some(c);
                    0
                }
                b'[' | b'(' => {
                    depth += 1;
                    0
                }
                b']' | b')' => {
                    depth = (depth - 1).max(0);
                    0
                }
                _ if depth > 0 => 0,
                b'|' | b'\t' | b';' | b'{' | b'}' => 1,
                b',' if b.get(i + 1).is_none_or(|&n| n == b' ') && !after_day(&b[start..i]) => 1,
                // Padding after `key:` belongs to the value: skip the whole run.
                b' ' if i > 0 && matches!(b[i - 1], b':' | b'=') => {
                    i += b[i..].iter().take_while(|&&x| x == b' ').count();
                    continue;
                }
                b' ' if b.get(i + 1) == Some(&b' ') => {
                    b[i..].iter().take_while(|&&x| x == b' ').count()
                }
                b' ' if b.get(i + 1) == Some(&b'-') && b.get(i + 2) == Some(&b' ') => 3,
                _ => 0,
            };
            if sep_len > 0 {
                let seg = &s[start..i];
                i += sep_len;
                start = i;
                if !seg.trim().is_empty() {
                    return Some(seg);
                }
                continue;
            }
            i += 1;
        }
        if start < b.len() {
            let seg = &s[start..];
            start = b.len();
            if !seg.trim().is_empty() {
                return Some(seg);
            }
        }
        None
    })
}

/// The bytes that can open or close a quote or bracket or separate segments.
static SEGMENT_BYTES: [bool; 256] = {
    let mut table = [false; 256];
    let special = b"'\"[]()|\t;{}, ";
    let mut i = 0;
    while i < special.len() {
        table[special[i] as usize] = true;
        i += 1;
    }
    table
};

fn after_day(before: &[u8]) -> bool {
    before.ends_with(b"day") || before.ends_with(b"days")
}

fn segment_pairs<'a>(seg: &'a str, f: &mut dyn FnMut(&'a str, &'a str)) {
    let mut rest = skip(seg, b" '\",");
    // Most segments hold no bracket and no `#`: the counts written with them are not looked
    // for there.
    let marked = memchr::memchr2(b'[', b'#', seg.as_bytes()).is_some();
    while !rest.is_empty() {
        if marked && let Some((key, value, used)) = bracketed_count(rest).or_else(|| numbered(rest))
        {
            f(key, value);
            rest = skip(&rest[used..], b" '\",");
            continue;
        }
        if marked && let Some(used) = bracketed_positions(rest, f) {
            rest = skip(&rest[used..], b" '\",:");
            continue;
        }
        // `[Train][Epoch 1/26][Iter: 10/1096]lr: 0.1`, `[Epoch 0][Batch 99]`: pairs in brackets,
        // a bracketed batch a position; a tag (`[Train]`) is passed over.
        if marked
            && rest.starts_with('[')
            && let Some(close) = rest.find(']')
        {
            let inner = &rest[1..close];
            match split_key(inner) {
                Some((key, value)) if key.trim().eq_ignore_ascii_case("batch") => {
                    f("iter", skip(value, b" "));
                }
                Some(_) => {
                    for seg in segments(inner) {
                        segment_pairs(seg, f);
                    }
                }
                None => {}
            }
            // `[HCTR][20:49:17.111][INFO][RK0][main]: Iter: 100`: the colon closes the tags.
            rest = skip(&rest[close + 1..], b" '\",:");
            continue;
        }
        let b = rest.as_bytes();
        if starts_number(b) {
            // Value first: `0.5 samples/s`, `14.19it/s`, `2.83s/it`, `11ms/step`.
            let tok_end = memchr::memchr(b' ', rest.as_bytes()).unwrap_or(rest.len());
            let tok = &rest[..tok_end];
            let after = skip(&rest[tok_end..], b" ");
            let word = after.split(' ').next().unwrap_or("");
            // `Train | Epoch 1 | 143/573 | 1.45 it/sec`: a position alone in its segment.
            if tok.len() == rest.trim_end().len()
                && let Some((a, b)) = tok.split_once('/')
                && !a.is_empty()
                && !b.is_empty()
                && a.bytes().chain(b.bytes()).all(|c| c.is_ascii_digit())
            {
                f(POSITION, tok);
                return;
            }
            if let Some((_, unit, suffix)) = num::number_unit(tok)
                && unit == Unit::Other
                && suffix.contains('/')
            {
                f(suffix, tok);
                rest = after;
            } else if word.contains('/') && word.as_bytes()[0].is_ascii_alphabetic() {
                f(word, tok);
                rest = after[word.len()..].trim_start();
            } else {
                rest = after;
            }
            continue;
        }
        let Some((key, value)) = split_key(rest) else {
            return;
        };
        let key = key.trim().trim_matches(['\'', '"']);
        let value = skip(value, b" '\"");
        // `Loss at step 120: 8.4997`: the figure at a count, both in one pair.
        if let Some((figure, counter)) = key.split_once(" at ")
            && let Some((count, figure_value)) = value.split_once(": ").or(value.split_once(" is "))
            && lookup(counter) == Some(Field::Step)
            && num::integer(count).is_some()
        {
            f(counter, count);
            f(figure, figure_value.trim_start());
            return;
        }
        if !key.is_empty() {
            f(key, value);
        }
        // The next pair in the same segment starts after this value's first token
        // (`base_lr: 2.0000e-03 lr: 5.9600e-05`).
        let tok_end = memchr::memchr(b' ', value.as_bytes()).unwrap_or(value.len());
        // `config: world_size=2 batch_size=32`: an unknown key whose value is itself a pair.
        if memchr::memchr(b'=', &value.as_bytes()[..tok_end]).is_some() && lookup(key).is_none() {
            rest = value;
            continue;
        }
        // `extra_info: loss[1.67]`: an unknown key whose value is counts in brackets.
        if marked && lookup(key).is_none() && bracketed_count(value).is_some() {
            rest = value;
            continue;
        }
        // `Train: [0/300][10/390]`: an unknown key whose value is positions in brackets.
        if marked
            && value.starts_with('[')
            && lookup(key).is_none()
            && let Some(used) = bracketed_positions(value, f)
        {
            rest = skip(&value[used..], b" '\",:");
            continue;
        }
        if skip(&value[tok_end..], b" ").starts_with("day") {
            // `eta: 1 day, 2:03:04` is one value.
            return;
        }
        rest = skip(&value[tok_end..], b" '\",");
    }
}

/// A count in brackets after its name: `Epoch[0]`, `Batch [49]`, `Iter [120/938]`, MXNet's
/// `Batch [0-20]` (the batches since the epoch began: the count is 20). A batch counted this way
/// is a position, not a batch size. Returns the key, the value and the bytes used.
fn bracketed_count(s: &str) -> Option<(&str, &str, usize)> {
    let b = s.as_bytes();
    let word = b
        .iter()
        .take_while(|c| c.is_ascii_alphabetic() || **c == b'_')
        .count();
    if word == 0 {
        return None;
    }
    let open = match b.get(word..word + 2) {
        Some([b'[', _]) => word,
        Some([b' ', b'[']) => word + 1,
        _ => return None,
    };
    let close = open + memchr::memchr(b']', &b[open..])?;
    let inner = s[open + 1..close].trim();
    // A count, a range of counts, a position, or a figure (`loss[1.6742233]`).
    if !inner.starts_with(|c: char| c.is_ascii_digit())
        || !inner
            .bytes()
            .all(|c| c.is_ascii_digit() || matches!(c, b'-' | b'/' | b' ' | b'.' | b'e' | b'+'))
    {
        return None;
    }
    let value = match inner.split_once('-') {
        Some((_, to)) if !to.is_empty() => to,
        _ => inner,
    };
    let key = &s[..word];
    let key = if key.eq_ignore_ascii_case("batch") {
        "iter"
    } else {
        key
    };
    Some((key, value, close + 1))
}

/// A count written as a number: `Step #120: rate 0.0005, cross entropy 2.51` (TensorFlow's
/// speech example). Returns the key, the value and the bytes used.
fn numbered(s: &str) -> Option<(&str, &str, usize)> {
    let word = s
        .bytes()
        .take_while(|c| c.is_ascii_alphabetic() || *c == b'_')
        .count();
    let rest = s[word..].strip_prefix(" #")?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if word == 0 || digits == 0 {
        return None;
    }
    let start = word + 2;
    let end = start + digits;
    Some((&s[..word], &s[start..end], (end + 1).min(s.len())))
}

/// The key a position in brackets is given: no log prints it.
const POSITION: &str = "[position]";

/// Positions in brackets with no name: `[120/938]` is the step of its total, `[3/300][120/938]`
/// the epoch of its total and the step within it (Swin's `Train: [0/300][10/390]`, a text
/// recogniser's `[1/100000] Train loss: 4.3`). Calls `f` for each and returns the bytes used.
fn bracketed_positions<'a>(s: &'a str, f: &mut dyn FnMut(&'a str, &'a str)) -> Option<usize> {
    let digits = |t: &str| !t.trim().is_empty() && t.trim().bytes().all(|c| c.is_ascii_digit());
    // `[i/N]`, or with `alone` a bare `[e]`.
    let position = |from: usize, alone: bool| -> Option<(&'a str, usize)> {
        let inner_start = from + 1;
        if s.as_bytes().get(from) != Some(&b'[') {
            return None;
        }
        let close = inner_start + memchr::memchr(b']', &s.as_bytes()[inner_start..])?;
        let inner = s[inner_start..close].trim();
        let whole = match inner.split_once('/') {
            Some((a, b)) => digits(a) && digits(b),
            None => alone && digits(inner),
        };
        whole.then_some((inner, close + 1))
    };
    let (first, end) = position(0, true)?;
    match position(end, false) {
        Some((second, end)) => {
            f(POSITION, first);
            f(POSITION, second);
            Some(end)
        }
        // `[0]` alone is no position (a rank, an index): only `[e][i/N]` makes it an epoch.
        None if first.contains('/') => {
            f(POSITION, first);
            Some(end)
        }
        None => None,
    }
}

/// `s` without the ASCII bytes of `set` at its start.
fn skip<'a>(s: &'a str, set: &[u8]) -> &'a str {
    let n = s.bytes().take_while(|b| set.contains(b)).count();
    &s[n..]
}

fn starts_number(b: &[u8]) -> bool {
    match b {
        [c, ..] if c.is_ascii_digit() => true,
        [b'-' | b'.', c, ..] => c.is_ascii_digit(),
        _ => false,
    }
}

/// Splits `key<sep>value` where sep is `=`, `:` or a space before a number.
fn split_key(s: &str) -> Option<(&str, &str)> {
    let b = s.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'=' | b':' => return Some((&s[..i], &s[i + 1..])),
            b' ' if i > 0 && starts_value(&b[i + 1..]) => return Some((&s[..i], &s[i + 1..])),
            _ => {}
        }
    }
    None
}

fn starts_value(b: &[u8]) -> bool {
    starts_number(b)
        || matches!(b, [b'\'' | b'"', c, ..] if c.is_ascii_digit())
        || b.starts_with(b"nan")
        || b.starts_with(b"inf")
        || b.starts_with(b"-inf")
}

/// Which step figures were set; the loss rank decides between competing loss keys.
#[derive(Default)]
pub struct Collected {
    pub fields: u32,
    pub loss_rank: u8,
    pub non_finite: bool,
    /// A number written in digits that overflows (`1e999`): not a NaN the run produced but a
    /// value no run can print truthfully.
    pub overflow: bool,
    /// The line names a range of steps (`Steps 1-50: Energy=...`): a summary over many steps
    /// (an energy or timing monitor's), not one step.
    pub step_range: bool,
    /// Positions in brackets read so far (`[38/200], [1/604]`): the first is the step until a
    /// second makes it the epoch; a named step beats both.
    pub positions: u8,
    /// A key named the step (`global_step: 13099`).
    pub named_step: bool,
}

/// Stores `value` for `field` in `rec`. Returns false when the value is not usable.
pub fn apply(field: Field, value: &str, rec: &mut StepRecord, seen: &mut Collected) -> bool {
    let Some((v, unit, suffix)) = num::number_unit(value) else {
        if field == Field::Eta {
            rec.eta_s = num::duration_s(value);
            return rec.eta_s.is_some();
        }
        return false;
    };
    if !v.is_finite() {
        if starts_number(value.trim_start_matches(['\'', '"', '[', ' ']).as_bytes()) {
            seen.overflow = true;
        } else if matches!(field, Field::Loss(_) | Field::GradNorm) {
            seen.non_finite = true;
        }
        return false;
    }
    // `speed: 1.0773s/iter`: a rate's key over a time per step.
    if matches!(field, Field::SamplesPerS | Field::ItersPerS)
        && let Some(Field::TimePerStep) = vocabulary::field_of(suffix.trim())
    {
        return apply(Field::TimePerStep, value, rec, seen);
    }
    // `throughput 0.511 MT/s`, `ips: 843 tokens/s`, `Speed: 26.4 steps/s`: a rate's unit says
    // what it counts, whatever its key says.
    if matches!(
        field,
        Field::SamplesPerS | Field::TokensPerS | Field::ItersPerS
    ) && let Some((counts, scale)) = rate_unit(suffix)
    {
        let slot = match counts {
            Counts::Tokens => &mut rec.tokens_per_s,
            Counts::Steps => &mut rec.iters_per_s,
            Counts::Samples => &mut rec.samples_per_s,
        };
        *slot = Some(v * scale);
        seen.fields += 1;
        return true;
    }
    let ok = match field {
        Field::Step
            if suffix.starts_with('-') && suffix[1..].starts_with(|c: char| c.is_ascii_digit()) =>
        {
            seen.step_range = true;
            false
        }
        // `[120/938]`, `[3/300][120/938]`: a position, the step unless the line names its step.
        Field::Position => {
            if seen.positions > 0 && !seen.named_step {
                rec.epoch = rec.step.map(|s| s as f64);
            }
            seen.positions += 1;
            if seen.named_step {
                return false;
            }
            rec.step = Some(v as u64);
            rec.total = suffix.strip_prefix('/').and_then(num::integer);
            !v.is_sign_negative()
        }
        Field::Step => {
            if seen.positions > 0 && !seen.named_step {
                // The positions were the epoch's: their total is no step's.
                rec.total = None;
            }
            // A second step named (`STEP: 24/36 -- GLOBAL_STEP: 1000025`) is the one read; the
            // first's total is not its.
            let second = std::mem::replace(&mut seen.named_step, true);
            // `as` saturates: a step past u64 reads as u64::MAX, which `impossible` refuses.
            rec.step = Some(v as u64);
            match suffix.strip_prefix('/').and_then(num::integer) {
                Some(total) => rec.total = Some(total),
                None if second => rec.total = None,
                None => {}
            }
            // The sign, not the value, decides (here and below): `-0` is as negative as the
            // text says, and the shape memo (shape.rs) sees signs, not values.
            !v.is_sign_negative()
        }
        Field::Total | Field::TotalSteps => set_u64(&mut rec.total, v),
        Field::Epoch => set(&mut rec.epoch, v),
        // A clock (`Time: 0:00:20`) is a time so far or a time left, never one step's.
        Field::StepTime(_) if suffix.starts_with(':') => false,
        Field::StepTime(default) => set_opt(&mut rec.step_time_ms, duration_ms(v, unit, default)),
        // One multiplication (ms a unit over the steps), so that `Time(1000 iters): 2.358s`
        // is 2.358 ms exactly, as the shape memo reads it too.
        Field::IntervalTime(n, default) => set_opt(
            &mut rec.step_time_ms,
            num::to_ms(1.0, unit, default)
                .map(|per| v * (per / f64::from(n)))
                .filter(|ms| *ms < 1e10),
        ),
        Field::Elapsed(default) => set_opt(&mut rec.elapsed_s, {
            // `0:41:07`, `4 days, 5:06:09`, `1m 42s` (a JSON string, quoted) are clocks, not
            // a number with a unit.
            let text = value.trim().trim_matches(['"', '\'']);
            let tok = value.split([' ', ',']).next().unwrap_or("");
            let parts = text
                .as_bytes()
                .windows(2)
                .any(|w| w[0].is_ascii_alphabetic() && w[1].is_ascii_digit());
            let whole = (text.contains(':') || text.contains(' ') || parts)
                .then(|| num::duration_s(text))
                .flatten();
            if whole.is_some() {
                whole
            } else if tok.contains(':') {
                num::duration_s(tok)
            } else if unit == Unit::S || unit == Unit::None && default == Unit::S {
                // Seconds as printed: no round trip through milliseconds.
                Some(v)
            } else {
                num::to_ms(v, unit, default).map(|ms| ms / 1000.0)
            }
        }),
        Field::AvgStepTime(default) => set_opt(&mut rec.avg_step_ms, duration_ms(v, unit, default)),
        Field::DataTime(default) => set_opt(&mut rec.data_time_ms, duration_ms(v, unit, default)),
        Field::TimePerStep => {
            let per = suffix.split('/').next().unwrap_or("");
            let unit = match per {
                "us" | "µs" => Unit::Us,
                "ms" => Unit::Ms,
                _ => Unit::S,
            };
            set_opt(&mut rec.step_time_ms, duration_ms(v, unit, Unit::S))
        }
        Field::SamplesPerS => set(&mut rec.samples_per_s, scaled(v, suffix)),
        Field::ItersPerS => set(&mut rec.iters_per_s, scaled(v, suffix)),
        // `batch: [1/10000]`: a position among the batches, not a batch's size.
        Field::BatchSize if suffix.starts_with('/') => {
            return apply(Field::Step, value, rec, seen);
        }
        Field::BatchSize | Field::GlobalBatch => set(&mut rec.batch_size, v),
        Field::Loss(rank) => {
            if rank > seen.loss_rank {
                seen.loss_rank = rank;
                rec.loss = Some(v);
            }
            true
        }
        Field::Lr => set(&mut rec.lr, v),
        Field::GradNorm => set(&mut rec.grad_norm, v),
        Field::LossScale => set(&mut rec.loss_scale, v),
        Field::TokensPerS => set(&mut rec.tokens_per_s, scaled(v, suffix)),
        Field::TokensPerGpuS => set(&mut rec.tokens_per_gpu_s, scaled(v, suffix)),
        // nanoGPT prints -100% until its estimate is ready.
        Field::Mfu => !v.is_sign_negative() && set(&mut rec.mfu_pct, v),
        Field::Memory(default) => set_opt(&mut rec.memory_mb, num::to_mib(v, unit, default)),
        // `left time: 51092.2839s`: seconds as a number; `eta: 5:22:17`, a clock.
        Field::Eta if unit == Unit::S || unit == Unit::None && suffix.trim().is_empty() => {
            set(&mut rec.eta_s, v)
        }
        Field::Eta => set_opt(&mut rec.eta_s, num::duration_s(value)),
        _ => false,
    };
    if ok {
        seen.fields += 1;
    }
    ok
}

/// Stores a cache counter `field` read from `value` in `rec`; false for other fields.
pub fn apply_cache(field: Field, value: &str, rec: &mut CacheRecord) -> bool {
    if !matches!(
        field,
        Field::CacheHits | Field::CacheMisses | Field::CacheHitRate
    ) {
        return false;
    }
    let Some((v, unit, _)) = num::number_unit(value) else {
        return false;
    };
    if !v.is_finite() || v.is_sign_negative() {
        return false;
    }
    match field {
        Field::CacheHits => rec.hits = num::integer(value),
        Field::CacheMisses => rec.misses = num::integer(value),
        // `0.82` is a fraction, `82.45%` a percentage.
        Field::CacheHitRate if unit == Unit::Pct || v > 1.0 => rec.hit_rate_pct = Some(v),
        Field::CacheHitRate => rec.hit_rate_pct = Some(v * 100.0),
        _ => return false,
    }
    true
}

/// A config fact from a key and its value, when the key names one.
pub fn config_fact(field: Field, key: &str, value: &str) -> Option<ConfigFact> {
    let word = value
        .split([' ', ')', '\'', '"'])
        .next()
        .unwrap_or("")
        .trim_end_matches(',');
    let flag = || match word.to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" | "on" => Some(true),
        "false" | "0" | "no" | "off" | "none" => Some(false),
        _ => None,
    };
    let int = || word.replace(',', "").parse::<u32>().ok();
    Some(match field {
        Field::NumWorkers => ConfigFact::NumWorkers(int()?),
        Field::BatchSize => ConfigFact::BatchSize(int()?),
        Field::GlobalBatch => ConfigFact::GlobalBatch(int()?),
        Field::GradAccum => ConfigFact::GradAccum(int()?),
        Field::SeqLen => ConfigFact::SeqLen(int()?),
        Field::TokensPerStep => ConfigFact::TokensPerStep(num::integer(word)?),
        Field::WorldSize => ConfigFact::WorldSize(int()?),
        Field::GpuIds => ConfigFact::WorldSize(id_count(value)?),
        Field::Nodes => ConfigFact::Nodes(int()?),
        Field::GpusPerNode => ConfigFact::GpusPerNode(int()?),
        Field::TotalSteps => ConfigFact::TotalSteps(num::integer(word)?),
        Field::PinMemory => ConfigFact::PinMemory(flag()?),
        Field::GradientCheckpointing => ConfigFact::GradientCheckpointing(flag()?),
        Field::CudnnBenchmark => ConfigFact::CudnnBenchmark(flag()?),
        Field::AmpDtype => {
            let k = key.to_ascii_lowercase();
            if k == "fp16" || k == "bf16" {
                if flag()? {
                    ConfigFact::AmpDtype(k)
                } else {
                    return None;
                }
            } else {
                let w = word.to_ascii_lowercase();
                let w = w.trim_start_matches("torch.");
                match w {
                    "bf16" | "bfloat16" => ConfigFact::AmpDtype("bf16".into()),
                    "fp16" | "float16" | "half" | "16" | "16_mixed" | "16-mixed" => {
                        ConfigFact::AmpDtype("fp16".into())
                    }
                    "fp32" | "float32" | "32" | "no" => ConfigFact::AmpDtype("fp32".into()),
                    "bf16_mixed" | "bf16-mixed" => ConfigFact::AmpDtype("bf16".into()),
                    _ => return None,
                }
            }
        }
        _ => return None,
    })
}

/// What a rate counts, as its unit says.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Counts {
    Samples,
    Steps,
    Tokens,
}

/// What a rate's unit counts and its multiplier (`MT/s`, `122.0K tks/s`, `1.07 step/s`,
/// `259.4 samples/sec`); None for no unit or one of no count.
fn rate_unit(suffix: &str) -> Option<(Counts, f64)> {
    let mut words = suffix
        .split([' ', ',', ';', '|', '\t'])
        .filter(|w| !w.is_empty());
    let mut unit = words.next()?;
    // `122.0K tks/s`: the multiplier a word of its own.
    let apart = match unit {
        "k" | "K" => Some(1e3),
        "M" => Some(1e6),
        _ => None,
    };
    if let Some(scale) = apart {
        unit = words.next()?;
        return rate_unit(unit).map(|(counts, s)| (counts, s * scale));
    }
    let (scale, rest) = match unit.as_bytes().first()? {
        b'k' | b'K' if unit.len() > 1 && unit.as_bytes()[1] != b'/' => (1e3, &unit[1..]),
        b'M' if unit.len() > 1 && unit.as_bytes()[1] != b'/' => (1e6, &unit[1..]),
        _ => (1.0, unit),
    };
    let rest = rest.trim_start();
    let (what, per) = rest.split_once('/')?;
    if !matches!(per, "s" | "sec" | "second" | "s." | "sec.") {
        return None;
    }
    let counts = match what.to_ascii_lowercase().as_str() {
        "t" | "tok" | "toks" | "tks" | "token" | "tokens" | "word" | "words" => Counts::Tokens,
        "it" | "iter" | "iters" | "step" | "steps" | "batch" | "batches" | "update" | "updates" => {
            Counts::Steps
        }
        "sample" | "samples" | "image" | "images" | "img" | "imgs" | "instance" | "instances"
        | "example" | "examples" | "sequence" | "sequences" | "seq" | "seqs" | "sentence"
        | "sentences" => Counts::Samples,
        _ => return None,
    };
    Some((counts, scale))
}

/// How many GPU ids `range(0, 2)` or `[0, 1, 2]` names.
fn id_count(value: &str) -> Option<u32> {
    let v = value.trim();
    if let Some(args) = v.strip_prefix("range(") {
        let args = args.split(')').next()?;
        let (a, b) = args.split_once(',').unwrap_or(("0", args));
        let (a, b): (u32, u32) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
        return b.checked_sub(a).filter(|n| *n > 0);
    }
    let list = v.strip_prefix('[')?.split(']').next()?;
    let n = list.split(',').filter(|x| !x.trim().is_empty()).count();
    u32::try_from(n).ok().filter(|n| *n > 0)
}

/// `1.2kit/s`, `1.0Kit/s`: tqdm's unit_scale prefixes.
fn scaled(v: f64, suffix: &str) -> f64 {
    match suffix.as_bytes().first() {
        Some(b'k' | b'K') => v * 1e3,
        Some(b'M') => v * 1e6,
        Some(b'G') => v * 1e9,
        _ => v,
    }
}

/// A step's or a wait's length in ms; None for a figure over a hundred days, which is a clock
/// (MLPerf's `"time_ms": 1684443437908`, the Unix time) and no length at all.
fn duration_ms(v: f64, unit: Unit, default: Unit) -> Option<f64> {
    num::to_ms(v, unit, default).filter(|ms| *ms < 1e10)
}

fn set(slot: &mut Option<f64>, v: f64) -> bool {
    *slot = Some(v);
    true
}

fn set_opt(slot: &mut Option<f64>, v: Option<f64>) -> bool {
    match v {
        Some(v) => set(slot, v),
        None => false,
    }
}

fn set_u64(slot: &mut Option<u64>, v: f64) -> bool {
    if v.is_sign_negative() {
        return false;
    }
    *slot = Some(v as u64);
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::vocabulary::field_of;

    fn all(s: &str) -> Vec<(String, String)> {
        let mut out = Vec::new();
        pairs(s, &mut |k, v| {
            let v = v.split([' ', ',']).next().unwrap_or("");
            out.push((k.to_string(), v.trim_end_matches(['\'', '"']).to_string()))
        });
        out
    }

    fn kv(k: &str, v: &str) -> (String, String) {
        (k.to_string(), v.to_string())
    }

    #[test]
    fn custom_style() {
        let got = all("step 950/8880 | loss=0.1234 | lr=1.0e-04 | 0.5 samples/s | data_time=0.1ms");
        assert_eq!(
            got,
            vec![
                kv("step", "950/8880"),
                kv("loss", "0.1234"),
                kv("lr", "1.0e-04"),
                kv("samples/s", "0.5"),
                kv("data_time", "0.1ms"),
            ]
        );
    }

    #[test]
    fn python_dict_with_quoted_values() {
        let got = all("{'loss': '3.116', 'grad_norm': 2.094, 'epoch': '0.1143'}");
        assert_eq!(
            got,
            vec![
                kv("loss", "3.116"),
                kv("grad_norm", "2.094"),
                kv("epoch", "0.1143")
            ]
        );
    }

    #[test]
    fn two_pairs_in_one_segment_and_padded_values() {
        let got = all("base_lr: 2.0000e-03 lr: 5.9600e-05  eta: 1 day, 2:03:04  loss:  3.2");
        assert_eq!(
            got,
            vec![
                kv("base_lr", "2.0000e-03"),
                kv("lr", "5.9600e-05"),
                kv("eta", "1"),
                kv("loss", "3.2")
            ]
        );
    }

    #[test]
    fn pipes_with_long_keys() {
        let got = all(" elapsed time per iteration (ms): 744.0 | lm loss: 1.02E+00 | loss 3.9 |");
        assert_eq!(
            got,
            vec![
                kv("elapsed time per iteration (ms)", "744.0"),
                kv("lm loss", "1.02E+00"),
                kv("loss", "3.9")
            ]
        );
    }

    #[test]
    fn rates_glued_to_units() {
        let got = all("14.19it/s, v_num=0 - 11ms/step - loss: 0.5");
        assert_eq!(
            got,
            vec![
                kv("it/s", "14.19it/s"),
                kv("v_num", "0"),
                kv("ms/step", "11ms/step"),
                kv("loss", "0.5")
            ]
        );
    }

    #[test]
    fn fields_and_units() {
        let mut rec = StepRecord::default();
        let mut seen = Collected::default();
        for (k, v) in [
            ("time", "1.0137"),
            ("data_time", "0.1ms"),
            ("memory", "20138"),
            ("ms/step", "11ms/step"),
        ] {
            assert!(apply(field_of(k).unwrap(), v, &mut rec, &mut seen), "{k}");
        }
        assert_eq!(rec.data_time_ms, Some(0.1));
        assert_eq!(rec.memory_mb, Some(20138.0));
        assert_eq!(rec.step_time_ms, Some(11.0));
        assert!(!apply(Field::Loss(4), "nan", &mut rec, &mut seen));
        assert!(seen.non_finite);
    }
}
