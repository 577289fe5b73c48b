//! The shapes of the lines nothing read. A log repeats a few hundred line shapes with new
//! numbers; folding the numbers out of the lines steptop skipped and counting what is left
//! shows a user at once what was not understood, with one example each to write a pattern
//! from.

use std::collections::BTreeMap;
use std::sync::Arc;

/// Shapes counted per file; lines of later new shapes are only counted together.
const SHAPES_KEPT: usize = 256;
/// Characters of a shape and of an example kept.
const SHAPE_CHARS: usize = 120;
const EXAMPLE_CHARS: usize = 200;

/// One shape: how many lines had it, and the first of them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Shape {
    pub count: u64,
    pub line: u64,
    pub example: String,
}

/// The unparsed lines of one file, by shape.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UnparsedShapes {
    shapes: BTreeMap<String, Shape>,
    /// Lines whose shape came after `SHAPES_KEPT` others.
    pub others: u64,
}

impl UnparsedShapes {
    /// Counts line `line`, cleaned text `text`, under its shape.
    pub fn add(&mut self, line: u64, text: &str) {
        // The shape is built on the stack: a new String only for a shape not seen before
        // (a log repeats a few, and this runs for every line nothing read).
        with_shape(text, |key| self.add_shaped(line, key, || example(text)));
    }

    /// Counts line `line` under its shape `key` (`with_shape` of its cleaned text, made
    /// elsewhere); `example` gives its example when the shape is new.
    pub fn add_shaped(&mut self, line: u64, key: &str, example: impl FnOnce() -> String) {
        if key.is_empty() {
            return;
        }
        if let Some(s) = self.shapes.get_mut(key) {
            s.count += 1;
            return;
        }
        if self.shapes.len() >= SHAPES_KEPT {
            self.others += 1;
            return;
        }
        self.shapes.insert(
            key.to_string(),
            Shape {
                count: 1,
                line,
                example: example(),
            },
        );
    }

    /// Every shape with its count and example, in no order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Shape)> {
        self.shapes.iter().map(|(k, s)| (k.as_str(), s))
    }
}

/// A line with every number folded to `N` and runs of spaces to one, given to `f`:
/// `Epoch 3 train acc 0.93 (12.1 s)` is `Epoch N train acc N (N s)`.
pub fn with_shape<R>(text: &str, f: impl FnOnce(&str) -> R) -> R {
    let b = text.trim().as_bytes();
    let mut out = [0u8; SHAPE_CHARS];
    let mut n = 0;
    let mut i = 0;
    while i < b.len() && n < SHAPE_CHARS {
        let c = b[i];
        if c.is_ascii_digit() {
            // A number: digits with a decimal point and an exponent (`1.5e-4`).
            while i < b.len()
                && (b[i].is_ascii_digit()
                    || b[i] == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit))
            {
                i += 1;
            }
            if i + 1 < b.len() && matches!(b[i], b'e' | b'E') {
                let sign = usize::from(matches!(b[i + 1], b'+' | b'-'));
                if b.get(i + 1 + sign).is_some_and(u8::is_ascii_digit) {
                    i += 1 + sign;
                    while i < b.len() && b[i].is_ascii_digit() {
                        i += 1;
                    }
                }
            }
            out[n] = b'N';
            n += 1;
        } else if c.is_ascii_whitespace() {
            if n == 0 || out[n - 1] != b' ' {
                out[n] = b' ';
                n += 1;
            }
            i += 1;
        } else {
            out[n] = c;
            n += 1;
            i += 1;
        }
    }
    // Cut on a byte count: a multi-byte character cut in half is replaced, not split.
    match std::str::from_utf8(&out[..n]) {
        Ok(shape) => f(shape.trim_end()),
        Err(_) => f(String::from_utf8_lossy(&out[..n]).trim_end()),
    }
}

/// What a shape keeps of its first line (cleaned): its first `EXAMPLE_CHARS` characters.
pub fn example(text: &str) -> String {
    cut(text.trim(), EXAMPLE_CHARS).to_string()
}

/// The line's shape (`with_shape` of its cleaned text), as the feed counts an unparsed line
/// under: shared, as the lines of one shape pass it on.
pub fn unparsed_shape(raw: &[u8]) -> Arc<str> {
    let mut buf = String::new();
    with_shape(crate::parse::clean::clean(raw, &mut buf), |key| {
        Arc::from(key)
    })
}

/// The first `n` characters of `s`.
fn cut(s: &str, n: usize) -> &str {
    s.char_indices().nth(n).map_or(s, |(i, _)| &s[..i])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_fold_and_lines_of_one_shape_count_together() {
        assert_eq!(
            with_shape(
                "Epoch 3 train acc 0.93  (12.1 s, lr 1.5e-4)",
                str::to_string
            ),
            "Epoch N train acc N (N s, lr N)"
        );
        let mut u = UnparsedShapes::default();
        u.add(7, "Saving model to ckpt_100.pt");
        u.add(9, "Saving model to ckpt_200.pt");
        u.add(10, "   ");
        let shapes: Vec<_> = u.iter().collect();
        assert_eq!(shapes.len(), 1);
        let (key, s) = shapes[0];
        assert_eq!(key, "Saving model to ckpt_N.pt");
        assert_eq!((s.count, s.line), (2, 7));
        assert_eq!(s.example, "Saving model to ckpt_100.pt");
    }

    #[test]
    fn shapes_are_bounded() {
        let mut u = UnparsedShapes::default();
        for i in 0..SHAPES_KEPT + 10 {
            u.add(
                i as u64,
                &format!(
                    "shape{} x",
                    char::from(b'a' + (i % 26) as u8)
                        .to_string()
                        .repeat(i / 26 + 1)
                ),
            );
        }
        assert_eq!(u.iter().count(), SHAPES_KEPT);
        assert_eq!(u.others, 10);
    }
}
