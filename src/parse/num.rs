//! Numbers, units and durations as training logs print them.

use super::trace::{self, Kind, Val};

/// A unit written after a number (`0.1ms`, `9.46GiB`, `3961M`, `26.7%`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    None,
    Us,
    Ms,
    S,
    KiB,
    MiB,
    GiB,
    Pct,
    /// Anything else (`it/s`, `ms/step`, `/s`...): the caller decides from the text.
    Other,
}

/// Splits a leading number from its unit suffix: `"0.1ms"` -> `(0.1, Ms, "ms")`.
/// Accepts quotes around the value, `7,282` thousands separators, `nan`/`inf`, and a list's
/// first element (`[5e-05, 5e-05]`).
pub fn number_unit(s: &str) -> Option<(f64, Unit, &str)> {
    let s = s.trim_matches(|c| c == '\'' || c == '"' || c == '[' || c == ' ');
    // A value a library wrapped: `np.float64(-0.00013)`, `tensor(0.5031, device='cuda:0')`.
    let s = unwrapped(s).unwrap_or(s);
    let end = number_end(s);
    if end == 0 {
        let lower = s.get(..3)?;
        if lower.eq_ignore_ascii_case("nan") {
            return Some((f64::NAN, Unit::None, ""));
        }
        if lower.eq_ignore_ascii_case("inf") {
            return Some((f64::INFINITY, Unit::None, ""));
        }
        return None;
    }
    let (num, rest) = s.split_at(end);
    let value = decimal(num)?;
    trace::note(num, Kind::Decimal, Some(Val::F(value)));
    let rest = rest.trim_start_matches(['\'', '"']);
    // `4.7864 ms`, `0.15 seconds`: a unit written apart from its number.
    if let Some(apart) = rest.strip_prefix(' ') {
        let unit = unit_of(apart);
        if !matches!(unit, Unit::None | Unit::Other) {
            return Some((value, unit, rest));
        }
    }
    Some((value, unit_of(rest), rest))
}

/// The inside of `np.float64(...)`, `numpy.float32(...)`, `tensor(...)`.
fn unwrapped(s: &str) -> Option<&str> {
    let open = s.find('(')?;
    let name = &s[..open];
    let wrapper = name == "tensor"
        || name
            .strip_prefix("np.")
            .or(name.strip_prefix("numpy."))
            .is_some_and(|t| t.starts_with("float") || t.starts_with("int"));
    wrapper.then(|| &s[open + 1..])
}

/// Just the number, any unit ignored.
pub fn number(s: &str) -> Option<f64> {
    number_unit(s).map(|(v, _, _)| v)
}

/// An unsigned integer, `1,703,936` and padding allowed.
pub fn integer(s: &str) -> Option<u64> {
    let s = trimmed(s);
    let mut commas = false;
    let end = s
        .bytes()
        .take_while(|&b| {
            commas |= b == b',';
            b.is_ascii_digit() || b == b','
        })
        .count();
    let digits = &s[..end];
    if digits.is_empty() {
        return None;
    }
    let value = if commas {
        digits.replace(',', "").parse().ok()
    } else if digits.len() <= 19 {
        // Nineteen digits cannot overflow: added up here, as `parse` would, without its
        // checks per digit.
        Some(
            digits
                .bytes()
                .fold(0u64, |n, b| n * 10 + u64::from(b - b'0')),
        )
    } else {
        digits.parse().ok()
    };
    // Noted even when it fails: whether it overflows depends on the digits.
    trace::note(digits, Kind::Integer, value.map(Val::U));
    value
}

/// `s.trim()`, which decodes characters from both ends until one is not white space: a number's
/// text (`1,024`, `42`) mostly has none, seen here from its two end bytes.
fn trimmed(s: &str) -> &str {
    let printable = |b: Option<&u8>| b.is_some_and(|&b| b > b' ' && b < 0x80);
    if printable(s.as_bytes().first()) && printable(s.as_bytes().last()) {
        s
    } else {
        s.trim()
    }
}

/// Where the leading number of `s` ends: sign, digits, `1,234` groups, fraction, exponent.
fn number_end(s: &str) -> usize {
    let b = s.as_bytes();
    let mut i = 0;
    if i < b.len() && (b[i] == b'-' || b[i] == b'+') {
        i += 1;
    }
    let digits_start = i;
    while i < b.len() {
        match b[i] {
            b'0'..=b'9' => i += 1,
            // A thousands separator only when exactly three digits follow.
            b',' if b.len() >= i + 4
                && b[i + 1..i + 4].iter().all(u8::is_ascii_digit)
                && b.get(i + 4).is_none_or(|c| !c.is_ascii_digit()) =>
            {
                i += 4
            }
            _ => break,
        }
    }
    if i < b.len() && b[i] == b'.' {
        i += 1;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
    }
    if i == digits_start || (i == digits_start + 1 && b[digits_start] == b'.') {
        return 0;
    }
    if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
        let mut j = i + 1;
        if j < b.len() && (b[j] == b'-' || b[j] == b'+') {
            j += 1;
        }
        let exp_start = j;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j > exp_start {
            i = j;
        }
    }
    i
}

/// The value of a number as `number_end` delimits it.
pub(crate) fn decimal(num: &str) -> Option<f64> {
    if let Some(v) = fast_decimal(num.as_bytes()) {
        return Some(v);
    }
    if num.contains(',') {
        num.replace(',', "").parse().ok()
    } else {
        num.parse().ok()
    }
}

/// The common case of a number as `number_end` found it, without the general parser: at most
/// 15 significant digits and a decimal exponent within 10^22, where one multiplication or
/// division of two exact values is correctly rounded (Clinger's fast path), so the result is
/// bit for bit what `str::parse` gives. Anything else (thousands separators, long mantissas)
/// returns None and takes the general path.
fn fast_decimal(b: &[u8]) -> Option<f64> {
    let (negative, b) = match b.first() {
        Some(b'-') => (true, &b[1..]),
        Some(b'+') => (false, &b[1..]),
        _ => (false, b),
    };
    // One pass over the digits, each added with no other test: the digits that count start
    // at the first that is not a zero; more than 15 of them is the general path's case (and
    // the only one where the mantissa could wrap).
    let mut mantissa: u64 = 0;
    let mut add_digits = |i: &mut usize| {
        while let Some(c) = b.get(*i).filter(|c| c.is_ascii_digit()) {
            mantissa = mantissa.wrapping_mul(10).wrapping_add(u64::from(c - b'0'));
            *i += 1;
        }
    };
    let mut i = b.iter().take_while(|c| **c == b'0').count();
    let from = i;
    add_digits(&mut i);
    let mut significant = i - from;
    let mut exp: i32 = 0;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let point = i;
        if significant == 0 {
            i += b[i..].iter().take_while(|c| **c == b'0').count();
        }
        let from = i;
        add_digits(&mut i);
        significant += i - from;
        exp = -i32::try_from(i - point).ok()?;
    }
    match &b[i..] {
        [] => {}
        [b'e' | b'E', tail @ ..] => exp = exp.checked_add(exponent(tail)?)?,
        _ => return None,
    }
    if significant > 15 {
        return None;
    }
    let v = scaled(mantissa, exp)?;
    Some(if negative { -v } else { v })
}

/// `m` times 10^`exp`, for a mantissa of at most 15 significant digits: both exact as doubles
/// within 10^±22, so one multiplication or division is correctly rounded, as `str::parse`
/// rounds (Clinger's fast path); None outside that range.
#[inline]
pub(super) fn scaled(m: u64, exp: i32) -> Option<f64> {
    let m = m as f64;
    Some(match exp {
        0 => m,
        1..=22 => m * POW10[exp as usize],
        -22..=-1 => m / POW10[(-exp) as usize],
        _ => return None,
    })
}

/// An exponent's digits as `i32::from_str` reads them (a sign, then at least one digit, and
/// nothing else), without making a `str` of them.
fn exponent(b: &[u8]) -> Option<i32> {
    let (negative, digits) = match b.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, b),
    };
    if digits.is_empty() {
        return None;
    }
    let mut n: i64 = 0;
    for &c in digits {
        if !c.is_ascii_digit() {
            return None;
        }
        n = n.checked_mul(10)?.checked_add(i64::from(c - b'0'))?;
    }
    i32::try_from(if negative { -n } else { n }).ok()
}

/// The powers of ten a double holds exactly.
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

fn unit_of(rest: &str) -> Unit {
    let word: &str = rest
        .split(|c: char| !(c.is_ascii_alphabetic() || c == '/' || c == '%' || c == 'µ'))
        .next()
        .unwrap_or("");
    match word {
        "" => Unit::None,
        "us" | "µs" => Unit::Us,
        "ms" => Unit::Ms,
        "s" | "sec" | "secs" | "second" | "seconds" => Unit::S,
        "K" | "KB" | "KiB" | "k" => Unit::KiB,
        "M" | "MB" | "MiB" => Unit::MiB,
        "G" | "GB" | "GiB" => Unit::GiB,
        "%" => Unit::Pct,
        _ => Unit::Other,
    }
}

/// Converts a time to milliseconds; `default` is the unit when none is written.
pub fn to_ms(value: f64, unit: Unit, default: Unit) -> Option<f64> {
    let unit = if unit == Unit::None { default } else { unit };
    match unit {
        Unit::Us => Some(value / 1000.0),
        Unit::Ms => Some(value),
        Unit::S => Some(value * 1000.0),
        _ => None,
    }
}

/// Converts a memory size to MiB; `default` is the unit when none is written.
pub fn to_mib(value: f64, unit: Unit, default: Unit) -> Option<f64> {
    let unit = if unit == Unit::None { default } else { unit };
    match unit {
        Unit::KiB => Some(value / 1024.0),
        Unit::MiB => Some(value),
        Unit::GiB => Some(value * 1024.0),
        _ => None,
    }
}

/// A duration in seconds: `4:27:58`, `01:23`, `218:49:50`, `1 day, 12:59:34`, `37 days, 5:46:17`,
/// `1:42:12.36`, `23.4s`, `10s`. `N/A`, `?` and anything else give `None`.
pub fn duration_s(text: &str) -> Option<f64> {
    let value = match clock_s(text.as_bytes()) {
        Clock::Secs(secs) => secs,
        Clock::Refused => return None,
        Clock::Other => spelled_duration_s(text)?,
    };
    trace::note(text, Kind::Duration, Some(Val::F(value)));
    Some(value)
}

/// What `clock_s` made of a duration.
enum Clock {
    Secs(f64),
    /// A clock that does not read (an empty part: `1::2`, `:5`).
    Refused,
    /// Not a bare clock: `spelled_duration_s` reads it.
    Other,
}

/// A bare clock (`01:23`, `4:27:58`, `1:42:12.36`: digits, dots and at least one colon,
/// nothing else), the duration progress bars print on every line, read without the
/// searches for days and units: it reads as `spelled_duration_s` reads it, with parts of
/// up to 15 digits added up directly (exact, as `parse` is below 2^53).
fn clock_s(b: &[u8]) -> Clock {
    let clock = !b.is_empty()
        && b.iter()
            .all(|&c| c.is_ascii_digit() || c == b':' || c == b'.')
        && b.contains(&b':');
    if !clock {
        return Clock::Other;
    }
    let mut total = 0.0;
    for part in b.split(|&c| c == b':') {
        let v = if part.is_empty() {
            return Clock::Refused;
        } else if part.len() <= 15 && !part.contains(&b'.') {
            part.iter().fold(0u64, |n, &c| n * 10 + u64::from(c - b'0')) as f64
        } else {
            // Only digits, dots and colons are here: a part is valid UTF-8.
            match std::str::from_utf8(part)
                .ok()
                .and_then(|p| p.parse::<f64>().ok())
            {
                Some(v) => v,
                None => return Clock::Refused,
            }
        };
        total = total * 60.0 + v;
    }
    // As the spelled form adds its days (none here): `0.0 + secs`.
    Clock::Secs(0.0 * 86_400.0 + total)
}

/// Any other duration: days, units, padding, a `<` before the time left.
fn spelled_duration_s(text: &str) -> Option<f64> {
    let s = text.trim().trim_start_matches('<');
    if let Some(secs) = units_s(s) {
        return Some(secs);
    }
    let (days, clock) = match s.split_once(" day") {
        Some((d, rest)) => {
            let rest = rest.trim_start_matches('s').trim_start_matches(',').trim();
            (d.trim().parse::<f64>().ok()?, rest)
        }
        None => (0.0, s),
    };
    let clock = clock
        .split(|c: char| c.is_whitespace() || c == ',' || c == ']')
        .next()?;
    let secs = if clock.contains(':') {
        let mut total = 0.0;
        for part in clock.split(':') {
            if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
                return None;
            }
            total = total * 60.0 + part.parse::<f64>().ok()?;
        }
        total
    } else {
        let (v, unit, _) = number_unit(clock)?;
        to_ms(v, unit, Unit::S)? / 1000.0
    };
    Some(days * 86_400.0 + secs)
}

/// A duration spelled in two or more parts, each a number and its unit: `45m 22s`, `01m01s`,
/// `1h 2m 3s`, `2 days 3 hours`.
fn units_s(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    let (mut i, mut parts, mut total) = (0, 0, 0.0);
    while i < b.len() {
        if b[i] == b' ' {
            i += 1;
            continue;
        }
        let start = i;
        while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
            i += 1;
        }
        let v: f64 = s[start..i].parse().ok()?;
        while i < b.len() && b[i] == b' ' {
            i += 1;
        }
        let unit_start = i;
        while i < b.len() && b[i].is_ascii_alphabetic() {
            i += 1;
        }
        let scale = match &s[unit_start..i] {
            "d" | "day" | "days" => 86_400.0,
            "h" | "hr" | "hrs" | "hour" | "hours" => 3_600.0,
            "m" | "min" | "mins" | "minute" | "minutes" => 60.0,
            "s" | "sec" | "secs" | "second" | "seconds" => 1.0,
            _ => return None,
        };
        total += v * scale;
        parts += 1;
    }
    (parts >= 2).then_some(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_spelled_in_parts() {
        assert_eq!(duration_s("45m 22s"), Some(2722.0));
        assert_eq!(duration_s("01m01s"), Some(61.0));
        assert_eq!(duration_s("1h 2m 3s"), Some(3723.0));
        assert_eq!(
            duration_s("4 days, 5:06:09"),
            Some(4.0 * 86_400.0 + 18_369.0)
        );
        assert_eq!(duration_s("12m of"), None);
    }

    #[test]
    fn numbers_with_units() {
        assert_eq!(number_unit("0.1ms"), Some((0.1, Unit::Ms, "ms")));
        assert_eq!(number_unit("1.0e-04"), Some((1.0e-4, Unit::None, "")));
        assert_eq!(number_unit("9.46GiB(64.99%)").map(|x| x.1), Some(Unit::GiB));
        assert_eq!(
            number_unit("3961M").map(|x| (x.0, x.1)),
            Some((3961.0, Unit::MiB))
        );
        assert_eq!(number_unit("'3.116'").map(|x| x.0), Some(3.116));
        assert_eq!(number_unit("7,282").map(|x| x.0), Some(7282.0));
        assert_eq!(number_unit("[5e-05, 5e-05]").map(|x| x.0), Some(5e-5));
        assert_eq!(number_unit("2.83s/it").map(|x| x.2), Some("s/it"));
        assert!(number_unit("nan").is_some_and(|x| x.0.is_nan()));
        assert_eq!(number_unit("N/A"), None);
        assert_eq!(number_unit("-0.2338").map(|x| x.0), Some(-0.2338));
        assert_eq!(number_unit("1.872e+04").map(|x| x.0), Some(18720.0));
    }

    #[test]
    fn a_comma_between_values_is_not_a_thousands_separator() {
        assert_eq!(number_unit("1,5").map(|x| x.0), Some(1.0));
        assert_eq!(number_unit("0.5,").map(|x| x.0), Some(0.5));
    }

    #[test]
    fn durations() {
        assert_eq!(duration_s("4:27:58"), Some(16078.0));
        assert_eq!(duration_s("01:44"), Some(104.0));
        assert_eq!(duration_s("1 day, 12:59:34"), Some(86_400.0 + 46_774.0));
        assert_eq!(
            duration_s("37 days, 5:46:17"),
            Some(37.0 * 86_400.0 + 20_777.0)
        );
        assert_eq!(duration_s("23.4s"), Some(23.4));
        assert_eq!(duration_s("N/A"), None);
        assert_eq!(duration_s("?"), None);
        assert_eq!(duration_s("1:42:12.36"), Some(6132.36));
        assert_eq!(duration_s("1::2"), None);
        assert_eq!(duration_s("1:2.3.4"), None);
        assert_eq!(duration_s(" 01:44"), Some(104.0));
    }

    #[test]
    fn integers() {
        assert_eq!(integer("1,703,936"), Some(1_703_936));
        assert_eq!(integer("  42]"), Some(42));
        assert_eq!(integer("x"), None);
        // Up to the longest that cannot overflow, and past it, as `parse` reads them.
        assert_eq!(
            integer("9999999999999999999"),
            Some(9_999_999_999_999_999_999)
        );
        assert_eq!(integer("18446744073709551615"), Some(u64::MAX));
        assert_eq!(integer("18446744073709551616"), None);
        assert_eq!(integer("00000000000000000000042"), Some(42));
    }

    /// The fast path as it was, a byte at a time with a test per byte: the reference the
    /// one that scans its parts is held to, on any text. Its add is checked here (a wrap
    /// there needs 20 digits, past the 15 either way), so that a debug build cannot panic.
    fn fast_decimal_before(b: &[u8]) -> Option<f64> {
        let (negative, b) = match b.first() {
            Some(b'-') => (true, &b[1..]),
            Some(b'+') => (false, &b[1..]),
            _ => (false, b),
        };
        let mut mantissa: u64 = 0;
        let mut digits = 0u32;
        let mut exp: i32 = 0;
        let mut i = 0;
        let mut in_fraction = false;
        while i < b.len() {
            match b[i] {
                c @ b'0'..=b'9' => {
                    if mantissa > 0 || c != b'0' {
                        digits += 1;
                    }
                    mantissa = mantissa.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
                    if in_fraction {
                        exp -= 1;
                    }
                }
                b'.' if !in_fraction => in_fraction = true,
                b'e' | b'E' => {
                    let tail = std::str::from_utf8(&b[i + 1..]).ok()?;
                    exp = exp.checked_add(tail.parse::<i32>().ok()?)?;
                    break;
                }
                _ => return None,
            }
            i += 1;
        }
        if digits > 15 {
            return None;
        }
        let m = mantissa as f64;
        let v = match exp {
            0 => m,
            1..=22 => m * POW10[exp as usize],
            -22..=-1 => m / POW10[(-exp) as usize],
            _ => return None,
        };
        Some(if negative { -v } else { v })
    }

    proptest::proptest! {
        // A failing case is printed, not saved beside the sources.
        #![proptest_config(proptest::prelude::ProptestConfig {
            failure_persistence: None,
            ..proptest::prelude::ProptestConfig::default()
        })]
        #[test]
        fn a_bare_clock_reads_as_any_duration_does(t in "[0-9]{0,18}(:[0-9.]{0,18}){0,3}|[0-9:. ]{0,12}|[0-9:.<a-z ,]{0,16}") {
            // The spelled reader is the duration reader as it was, for every text.
            let (got, want) = (duration_s(&t), spelled_duration_s(&t));
            proptest::prop_assert_eq!(got.map(f64::to_bits), want.map(f64::to_bits), "{}", t);
        }

        #[test]
        fn a_number_is_trimmed_as_str_trim_does(t in "[ \t\u{b}\u{a0}\u{3000}\u{85}]{0,2}[0-9,]{0,8}[ \t\u{b}\u{a0}\u{3000}\u{85}\\]x]{0,2}") {
            proptest::prop_assert_eq!(trimmed(&t), t.trim());
            let reference = {
                let s = t.trim();
                let end = s.bytes().take_while(|b| b.is_ascii_digit() || *b == b',').count();
                let digits = &s[..end];
                (!digits.is_empty()).then(|| digits.replace(',', "").parse::<u64>().ok()).flatten()
            };
            proptest::prop_assert_eq!(integer(&t), reference, "{}", t);
        }

        #[test]
        fn the_fast_path_reads_what_it_read_a_byte_at_a_time(t in "[-+]?[0-9]{0,20}([.][0-9]{0,20})?([eE][-+]?[0-9]{0,12})?|[-+.eE0-9a ,]{0,24}") {
            let (got, want) = (fast_decimal(t.as_bytes()), fast_decimal_before(t.as_bytes()));
            proptest::prop_assert_eq!(got.map(f64::to_bits), want.map(f64::to_bits), "{}", t);
        }
    }

    #[test]
    fn the_fast_path_gives_the_bits_the_general_parser_gives() {
        // A deterministic spread of the shapes logs print: signs, fractions, exponents,
        // leading and trailing zeros, up to 20 digits.
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let mut fast = 0;
        for _ in 0..200_000 {
            let mut t = String::new();
            match next(3) {
                0 => t.push('-'),
                1 => t.push('+'),
                _ => {}
            }
            for _ in 0..=next(10) {
                t.push(char::from(b'0' + next(10) as u8));
            }
            if next(2) == 0 {
                t.push('.');
                for _ in 0..next(12) {
                    t.push(char::from(b'0' + next(10) as u8));
                }
            }
            if next(3) == 0 {
                t.push_str(["e", "E", "e-", "e+"][next(4) as usize]);
                t.push_str(&next(30).to_string());
            }
            let want: f64 = t.parse().unwrap();
            if let Some(got) = fast_decimal(t.as_bytes()) {
                fast += 1;
                assert_eq!(got.to_bits(), want.to_bits(), "{t}");
            }
        }
        assert!(fast > 100_000, "the fast path took only {fast}");
    }
}
