//! A trusted shape's numbers read straight from their digits.
//!
//! The lines of one shape differ only in their numbers' digits, so a place that held a plain
//! number when the shape was learned (`2.3456`, `-0.5`, `1200`) holds digits at the same
//! bytes on every later line, with its sign and point where they were. Such a place is read
//! by adding up those digits, with no search for where the number ends, its exponent or its
//! thousands separators (a fifth of the parser thread's instructions on the bench's mixed log
//! went there). Every byte is checked as it is added; a place that does not fit its layout is
//! read as the parser reads it.

use super::num::scaled;
use super::trace::{Kind, Val};

/// How a place's digits are laid out, taken from the text the shape was learned from.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum Digits {
    /// Nothing but `len` digits, 1 to 19, read as an integer.
    Integer { len: usize },
    /// An optional `-`, then `len` bytes: 1 to 15 digits with a point at `point` (counted
    /// after the sign) or none, read as a float. With so few digits the mantissa and the
    /// power of ten are exact, so one division gives the correctly rounded value
    /// (`num::scaled`), as `num::decimal` and `str::parse` give it.
    Decimal {
        negative: bool,
        point: Option<usize>,
        len: usize,
    },
    /// Digits and colons, `len` bytes with a colon at each set bit of `colons` and digits
    /// between (`00:12`, `1:18:43`): a clock, as progress bars print their times. Read as
    /// `num::duration_s` reads one: each part, at most 15 digits, is exact.
    Clock { len: usize, colons: u64 },
    /// Anything else: read as the parser reads it.
    Other,
}

impl Digits {
    /// The layout of `text`, a place the parser read as `kind`.
    pub(super) fn of(kind: Kind, text: &str) -> Digits {
        let b = text.as_bytes();
        let digits = |b: &[u8]| b.iter().all(u8::is_ascii_digit);
        match kind {
            Kind::Integer if (1..=19).contains(&b.len()) && digits(b) => {
                Digits::Integer { len: b.len() }
            }
            Kind::Decimal | Kind::Float => {
                let (negative, body) = match b.split_first() {
                    Some((b'-', rest)) => (true, rest),
                    _ => (false, b),
                };
                let point = body.iter().position(|&c| c == b'.');
                let (whole, fraction) = match point {
                    Some(p) => (&body[..p], &body[p + 1..]),
                    None => (body, &[][..]),
                };
                let count = whole.len() + fraction.len();
                if (1..=15).contains(&count) && digits(whole) && digits(fraction) {
                    Digits::Decimal {
                        negative,
                        point,
                        len: body.len(),
                    }
                } else {
                    Digits::Other
                }
            }
            Kind::Duration
                if b.len() <= 64
                    && b.contains(&b':')
                    && b.split(|&c| c == b':')
                        .all(|part| (1..=15).contains(&part.len()) && digits(part)) =>
            {
                let colons = (0..b.len())
                    .filter(|&i| b[i] == b':')
                    .fold(0u64, |m, i| m | 1 << i);
                Digits::Clock {
                    len: b.len(),
                    colons,
                }
            }
            _ => Digits::Other,
        }
    }

    /// The place's value, or None when `text` (its bytes) does not fit this layout (then the
    /// parser's own reading applies). A place's text is as long as the one the layout was
    /// taken from; one of another length does not fit (a longer one could overflow the sum,
    /// an empty one would read as 0 where the parser reads nothing).
    pub(super) fn read(self, text: &[u8]) -> Option<Val> {
        match self {
            Digits::Integer { len } if text.len() != len => None,
            Digits::Integer { .. } => {
                let mut n = 0u64;
                for &c in text {
                    n = n * 10 + u64::from(digit(c)?);
                }
                Some(Val::U(n))
            }
            Digits::Decimal {
                negative,
                point,
                len,
            } => {
                let body = match (negative, text.split_first()) {
                    (true, Some((b'-', rest))) => rest,
                    (false, _) => text,
                    (true, _) => return None,
                };
                if body.len() != len {
                    return None;
                }
                let mut m = 0u64;
                for (i, &c) in body.iter().enumerate() {
                    if Some(i) == point {
                        if c != b'.' {
                            return None;
                        }
                    } else {
                        m = m * 10 + u64::from(digit(c)?);
                    }
                }
                // The layout's point is within its length.
                let fraction = match point {
                    Some(p) => body.len().checked_sub(p + 1)?,
                    None => 0,
                };
                // At most 15 digits: a fraction's length fits an i32.
                let v = scaled(m, -(fraction as i32))?;
                Some(Val::F(if negative { -v } else { v }))
            }
            Digits::Clock { len, .. } if text.len() != len => None,
            Digits::Clock { colons, .. } => {
                let (mut total, mut part) = (0.0, 0u64);
                for (i, &c) in text.iter().enumerate() {
                    if colons >> i & 1 == 1 {
                        if c != b':' {
                            return None;
                        }
                        total = total * 60.0 + part as f64;
                        part = 0;
                    } else {
                        part = part * 10 + u64::from(digit(c)?);
                    }
                }
                Some(Val::F(total * 60.0 + part as f64))
            }
            Digits::Other => None,
        }
    }
}

fn digit(c: u8) -> Option<u8> {
    let d = c.wrapping_sub(b'0');
    (d < 10).then_some(d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::shape::read_as;
    use proptest::prelude::*;

    fn same(a: Option<Val>, b: Option<Val>) -> bool {
        match (a, b) {
            (Some(a), Some(b)) => a.same(b),
            (None, None) => true,
            _ => false,
        }
    }

    #[test]
    fn plain_numbers_are_laid_out_and_the_rest_is_left_to_the_parser() {
        assert_eq!(
            Digits::of(Kind::Integer, "1200"),
            Digits::Integer { len: 4 }
        );
        assert_eq!(
            Digits::of(Kind::Decimal, "-0.5"),
            Digits::Decimal {
                negative: true,
                point: Some(1),
                len: 3
            }
        );
        for (kind, text) in [
            (Kind::Integer, "1,200"),
            (Kind::Integer, "12345678901234567890"),
            (Kind::Decimal, "1e-05"),
            (Kind::Decimal, "+1.5"),
            (Kind::Decimal, "1234567890.1234567"),
            (Kind::Decimal, "."),
            (Kind::Duration, "1:42:12.36"),
            (Kind::Duration, "1::2"),
            (Kind::Duration, ":5"),
            (Kind::Duration, "12"),
            (Kind::Duration, "1 day, 3:46:40"),
            (Kind::Duration, "1234567890123456:00"),
            (Kind::Timestamp, "2024"),
        ] {
            assert_eq!(Digits::of(kind, text), Digits::Other, "{text}");
        }
        let d = Digits::of(Kind::Decimal, "2.34");
        assert!(same(d.read(b"7.05"), Some(Val::F(7.05))));
        assert!(d.read(b"7,05").is_none());
        assert!(d.read(b"-7.0").is_none());
        // Another length, down to no digit at all (the parser reads no number there).
        assert!(d.read(b"17.05").is_none());
        let clock = Digits::of(Kind::Duration, "01:23");
        assert_eq!(
            clock,
            Digits::Clock {
                len: 5,
                colons: 0b100
            }
        );
        assert!(same(clock.read(b"12:34"), Some(Val::F(754.0))));
        assert!(clock.read(b"1:234").is_none());
        assert!(clock.read(b"1:2:3").is_none());
        let negative = Digits::of(Kind::Decimal, "-0");
        let integer = Digits::of(Kind::Integer, "7");
        for (layout, text) in [(negative, "-"), (d, "."), (integer, ""), (integer, "77")] {
            assert!(
                layout.read(text.as_bytes()).is_none(),
                "{layout:?} {text:?}"
            );
        }
    }

    proptest! {
        // A failing case is printed, not saved beside the sources.
        #![proptest_config(ProptestConfig {
            failure_persistence: None,
            cases: 2048,
            ..ProptestConfig::default()
        })]
        /// A place learned from `template` and read from any text of its length gives what the
        /// parser's reading gives, or leaves the text to it.
        #[test]
        fn a_place_reads_as_the_parser_reads_it(
            template in "-?[0-9]{0,18}([.][0-9]{0,18})?|[0-9,.e+-]{1,8}",
            other in "[0-9]{1,40}|[-0-9.,e+ ]{1,40}",
            float in any::<bool>(),
        ) {
            let kinds = if float {
                [Kind::Decimal, Kind::Float]
            } else {
                [Kind::Integer, Kind::Integer]
            };
            for kind in kinds {
                let layout = Digits::of(kind, &template);
                // A line of the shape: the template's bytes, some of its digits changed.
                let mut line: Vec<u8> = template.bytes().collect();
                for (c, o) in line.iter_mut().zip(other.bytes().cycle()) {
                    if c.is_ascii_digit() || o == b'-' || o == b',' {
                        *c = o;
                    }
                }
                let line = String::from_utf8(line).unwrap();
                for text in [template.as_str(), line.as_str(), other.as_str()] {
                    if let Some(v) = layout.read(text.as_bytes()) {
                        prop_assert!(
                            same(Some(v), read_as(kind, text)),
                            "{:?} {:?} read {:?}: {:?}, the parser {:?}",
                            kind, layout, text, v, read_as(kind, text)
                        );
                    }
                }
                if layout != Digits::Other {
                    prop_assert!(layout.read(template.as_bytes()).is_some(), "{:?}", template);
                }
            }
        }

        /// A clock's layout reads any text of its length as `duration_s` reads it, or leaves
        /// the text to it.
        #[test]
        fn a_clock_reads_as_the_parser_reads_it(
            template in "[0-9]{1,16}(:[0-9]{1,16}){0,3}|[0-9:. ]{1,12}",
            other in "[0-9]{1,40}|[0-9:.]{1,40}",
        ) {
            let layout = Digits::of(Kind::Duration, &template);
            let mut line: Vec<u8> = template.bytes().collect();
            for (c, o) in line.iter_mut().zip(other.bytes().cycle()) {
                if c.is_ascii_digit() || o == b':' {
                    *c = o;
                }
            }
            let line = String::from_utf8(line).unwrap();
            for text in [template.as_str(), line.as_str(), other.as_str()] {
                if let Some(v) = layout.read(text.as_bytes()) {
                    let parsed = read_as(Kind::Duration, text);
                    prop_assert!(
                        same(Some(v), parsed),
                        "{:?} read {:?}: {:?}, the parser {:?}", layout, text, v, parsed
                    );
                }
            }
            if layout != Digits::Other {
                prop_assert!(layout.read(template.as_bytes()).is_some(), "{:?}", template);
            }
        }
    }
}
