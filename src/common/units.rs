//! Numbers as people read them, shared by every sink: milliseconds, shares, durations, bytes.

use crate::common::dates::civil_from_days;

/// Milliseconds, switching to seconds above 10 s.
pub fn ms(v: f64) -> String {
    if v >= 10_000.0 {
        format!("{} s", Fixed(v / 1000.0, 2))
    } else {
        format!("{} ms", Fixed(v, 1))
    }
}

pub fn pct(v: f64) -> String {
    let mut out = String::with_capacity(8);
    Fixed(v * 100.0, 1).push_to(&mut out);
    out.push('%');
    out
}

/// What fixing a cause could give, `share` being the part of each step's time it takes: the
/// one wording every sink uses. Removing 98% of a step makes it 98% shorter, which is 50
/// times as fast, not "98% faster" nor "0.98x faster".
pub fn gain_words(share: f64) -> String {
    let share = share.clamp(0.0, 0.999);
    let times = 1.0 / (1.0 - share);
    let times = if times >= 10.0 {
        format!("{times:.0}x")
    } else {
        format!("{times:.2}x")
    };
    format!(
        "fixed: steps up to {:.0}% shorter, {times} as fast",
        share * 100.0
    )
}

/// A count and its noun, singular for one: `1 DataLoader worker`, `4 DataLoader workers`.
pub fn count(n: f64, noun: &str) -> String {
    if n == 1.0 {
        format!("1 {noun}")
    } else {
        format!("{} {noun}s", Fixed(n, 0))
    }
}

/// Three significant figures, without a float's noise.
pub fn num(v: f64) -> String {
    let a = v.abs();
    if a >= 1000.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else if a >= 0.1 || a == 0.0 {
        format!("{v:.3}")
    } else {
        format!("{v:.3e}")
    }
}

pub fn duration(s: f64) -> String {
    let s = s.max(0.0).round() as u64;
    let (d, h, m, sec) = (s / 86_400, s / 3600 % 24, s / 60 % 60, s % 60);
    if d > 0 {
        format!("{d}d {h:02}:{m:02}:{sec:02}")
    } else {
        format!("{h}:{m:02}:{sec:02}")
    }
}

/// A moment as the log's clock gives it: `2026-11-21 10:00:03` for a date (log timestamps are
/// read without a zone, so none is claimed), or `+0:12:34` into a run whose log had no times.
pub fn clock(t: f64) -> String {
    let mut out = String::with_capacity(19);
    push_clock(&mut out, t);
    out
}

/// `clock` at the end of `out`, its digits written without the formatting machinery (which
/// took 2,700 instructions a time, a fifth of printing an alert line).
pub fn push_clock(out: &mut String, t: f64) {
    // Before 1973 is not a date a training log writes: a timeline made of step times.
    if t < 1e8 {
        out.push('+');
        out.push_str(&duration(t));
        return;
    }
    let secs = t.floor() as i64;
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    // As `{y:04}` writes a year: the sign counts in the width.
    if y < 0 {
        out.push('-');
        push_padded(out, y.unsigned_abs(), 3);
    } else {
        push_padded(out, y.unsigned_abs(), 4);
    }
    let rest = rest.unsigned_abs();
    for (sep, n) in [
        ('-', u64::from(m)),
        ('-', u64::from(d)),
        (' ', rest / 3600),
        (':', rest / 60 % 60),
        (':', rest % 60),
    ] {
        out.push(sep);
        push_padded(out, n, 2);
    }
}

/// `n` in decimal at the end of `out`, zero-padded to `width` digits (as `{n:0width$}`).
pub fn push_padded(out: &mut String, n: u64, width: usize) {
    // Writing to a String does not fail.
    let _ = write_padded(out, n, width);
}

/// `push_padded` to any writer: a `String`, or a formatter (`Fixed`'s digits).
fn write_padded(out: &mut impl std::fmt::Write, n: u64, width: usize) -> std::fmt::Result {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    let mut v = n;
    loop {
        at -= 1;
        digits[at] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    for _ in (digits.len() - at)..width {
        out.write_char('0')?;
    }
    digits[at..]
        .iter()
        .try_for_each(|&b| out.write_char(char::from(b)))
}

/// `v` with a fixed number of decimals, as `{:.N}` writes it (no width): `Fixed(v, 1)` in a
/// format string is `{v:.1}`. Where one multiplication decides the rounding (every value
/// but the very large, and those whose product lands on a half), the digits are written as
/// an integer's: the float formatting took about 600 instructions a number, nearly half the
/// cost of rewording an alert, which a rule does every 10 steps.
#[derive(Clone, Copy, Debug)]
pub struct Fixed(pub f64, pub u32);

impl Fixed {
    /// The number at the end of `out`, without the formatting machinery: for words rewritten
    /// at every few steps, where a `format!` of a few pieces cost more than its numbers.
    pub fn push_to(self, out: &mut String) {
        // Writing to a String does not fail.
        let _ = self.write_to(out);
    }

    fn write_to(self, out: &mut impl std::fmt::Write) -> std::fmt::Result {
        let Fixed(v, decimals) = self;
        let Some(n) = rounded(v, decimals) else {
            return write!(out, "{v:.*}", decimals as usize);
        };
        if v.is_sign_negative() {
            out.write_char('-')?;
        }
        let unit = 10u64.pow(decimals);
        write_padded(out, n / unit, 1)?;
        if decimals > 0 {
            out.write_char('.')?;
            write_padded(out, n % unit, decimals as usize)?;
        }
        Ok(())
    }
}

impl std::fmt::Display for Fixed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.write_to(f)
    }
}

/// `|v|` times 10^`decimals`, rounded to the nearest integer as the exact product rounds;
/// None where the computed product is a half (a tie, or a product rounded onto one), or
/// does not fit.
fn rounded(v: f64, decimals: u32) -> Option<u64> {
    if decimals > 9 || !v.is_finite() {
        return None;
    }
    // 10^decimals is exact. Below 2^52 every integer and half is a float, and rounding keeps
    // order, so the computed product lies on the exact one's side of each of them, or on it.
    let s = v.abs() * 10f64.powi(decimals as i32);
    if s >= 4.0e15 {
        return None;
    }
    let whole = s.floor();
    let fraction = s - whole;
    (fraction != 0.5).then(|| whole as u64 + u64::from(fraction > 0.5))
}

/// Bytes in GiB, or MiB below one GiB.
pub fn gib(bytes: u64) -> String {
    let b = bytes as f64;
    if b >= 1024.0 * 1024.0 * 1024.0 {
        format!("{:.1} GiB", b / 1024.0 / 1024.0 / 1024.0)
    } else {
        format!("{:.0} MiB", b / 1024.0 / 1024.0)
    }
}

/// Bytes per second in GB/s, or MB/s below one GB/s.
pub fn rate(bytes_per_s: f64) -> String {
    if bytes_per_s >= 1e9 {
        format!("{:.1} GB/s", bytes_per_s / 1e9)
    } else {
        format!("{:.1} MB/s", bytes_per_s / 1e6)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Strategy;

    #[test]
    fn a_gain_is_a_shorter_step_and_how_many_times_as_fast() {
        assert_eq!(
            gain_words(0.98),
            "fixed: steps up to 98% shorter, 50x as fast"
        );
        assert_eq!(
            gain_words(0.1),
            "fixed: steps up to 10% shorter, 1.11x as fast"
        );
        // A share the cause cannot have is held under the whole step.
        assert!(gain_words(1.7).contains("up to 100% shorter, 1000x as fast"));
    }

    /// `clock` as it was written with the formatting machinery: the reference.
    fn clock_formatted(t: f64) -> String {
        if t < 1e8 {
            return format!("+{}", duration(t));
        }
        let secs = t.floor() as i64;
        let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
        let (y, m, d) = civil_from_days(days);
        format!(
            "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
            rest / 3600,
            rest / 60 % 60,
            rest % 60
        )
    }

    proptest::proptest! {
        // A failing case is printed, not saved beside the sources.
        #![proptest_config(proptest::prelude::ProptestConfig {
            failure_persistence: None,
            ..proptest::prelude::ProptestConfig::with_cases(2048)
        })]
        #[test]
        fn fixed_writes_what_the_formatting_wrote(
            v in proptest::prop_oneof![
                -1e4..1e4f64,
                // Halves and near-halves of every number of decimals.
                (-10_000i64..10_000, 0u32..5).prop_map(|(n, d)| (n as f64 + 0.5) / 10f64.powi(d as i32)),
                (-10_000i64..10_000, 0u32..5, -3i64..3).prop_map(|(n, d, ulps)| {
                    let half = (n as f64 + 0.5) / 10f64.powi(d as i32);
                    f64::from_bits((half.to_bits() as i64 + ulps) as u64)
                }),
                proptest::num::f64::ANY,
            ],
            decimals in 0u32..12,
        ) {
            let mut pushed = String::from("x");
            Fixed(v, decimals).push_to(&mut pushed);
            proptest::prop_assert_eq!(&pushed[1..], format!("{v:.*}", decimals as usize));
            proptest::prop_assert_eq!(
                Fixed(v, decimals).to_string(),
                format!("{v:.*}", decimals as usize)
            );
        }

        #[test]
        fn clock_writes_what_the_formatting_wrote(
            t in proptest::prop_oneof![0.0..1e8f64, 1e8..4e9f64, 4e9..1e15f64, proptest::num::f64::ANY],
            n in proptest::num::u64::ANY,
            width in 0usize..22,
        ) {
            proptest::prop_assert_eq!(clock(t), clock_formatted(t));
            let mut padded = String::new();
            push_padded(&mut padded, n, width);
            proptest::prop_assert_eq!(padded, format!("{n:0width$}"));
        }
    }

    #[test]
    fn clock_reads_dates_and_run_offsets() {
        assert_eq!(clock(0.0 + 754.0), "+0:12:34");
        assert_eq!(clock(1_701_224_370.0), "2023-11-29 02:19:30");
        assert_eq!(clock(951_782_400.5), "2000-02-29 00:00:00");
        assert_eq!(clock(1_795_267_200.0), "2026-11-21 13:20:00");
    }
}
