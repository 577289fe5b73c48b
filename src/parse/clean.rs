//! Raw record bytes to text that is safe to parse and to show: lossy UTF-8, no escape sequences,
//! no control characters.

/// Returns the record as text. The fast path borrows the bytes when they are valid UTF-8 with no
/// control characters (the common case); otherwise the cleaned text is built in `buf`.
pub fn clean<'a>(raw: &'a [u8], buf: &'a mut String) -> &'a str {
    // 0xC2 starts every UTF-8 encoded C1 control (U+0080..U+009F), such as the 8-bit CSI;
    // 0xC3 starts U+00C0..U+00FF, which every mojibake of CJK text contains.
    // A fold without early exit compiles to vector code; lines are short.
    let suspect = raw.iter().fold(false, |acc, &b| {
        acc | is_control(b) | (b.wrapping_sub(0xc2) < 2)
    });
    if !suspect && let Ok(s) = std::str::from_utf8(raw) {
        return s;
    }
    buf.clear();
    // Most suspect lines are valid UTF-8 with colours: checked at vector speed, where the
    // lossy decode walks them in chunks.
    let lossy;
    let text = match std::str::from_utf8(raw) {
        Ok(text) => text,
        Err(_) => {
            lossy = String::from_utf8_lossy(raw);
            &*lossy
        }
    };
    match repair_mojibake(text) {
        Some(fixed) => strip_into::<true>(&fixed, buf),
        None => strip_into::<true>(text, buf),
    }
    buf
}

/// cp1252's characters for bytes 0x80..0x9F; the bytes it leaves undefined decode as latin-1.
const CP1252_HIGH: [char; 32] = [
    '€', '\u{81}', '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', '\u{8d}', 'Ž', '\u{8f}',
    '\u{90}', '‘', '’', '“', '”', '•', '–', '—', '˜', '™', 'š', '›', 'œ', '\u{9d}', 'ž', 'Ÿ',
];

/// Undoes the classic wrong decode: UTF-8 bytes read as cp1252 (or latin-1) and written out
/// again as UTF-8 (`前向` becomes `å‰å‘`). Only a line that maps back to bytes and then
/// decodes as UTF-8 with some non-ASCII text is repaired; real latin-1 text (`café`) is not
/// valid UTF-8 once mapped back, so it stays as it is.
///
/// A copy that went through such a decode often lost the bytes cp1252 leaves undefined (0x81,
/// 0x8d, 0x8f, 0x90, 0x9d) and the invisible soft hyphen (0xad): `前` comes back as `å‰`,
/// one byte short. Such a line is repaired too when most of what it decodes to is whole
/// characters; each broken one becomes `\u{fffd}`, which labels.rs matches as any character.
fn repair_mojibake(text: &str) -> Option<String> {
    if text.is_ascii() {
        return None;
    }
    let mut bytes = Vec::with_capacity(text.len());
    let mut high = false;
    for c in text.chars() {
        let b = match u32::from(c) {
            0..=0x7f => c as u8,
            0xa0..=0xff => c as u8,
            _ => {
                let i = CP1252_HIGH.iter().position(|&x| x == c)?;
                0x80 + i as u8
            }
        };
        high |= b >= 0x80;
        bytes.push(b);
    }
    if !high {
        return None;
    }
    match String::from_utf8(bytes) {
        Ok(fixed) => Some(fixed),
        Err(e) => {
            let (fixed, lost, whole) = decode_filling(e.as_bytes());
            // A latin-1 word (`café`) never decodes to a whole character once mapped back,
            // so it is never taken for mojibake.
            (whole >= 1 && lost <= whole).then_some(fixed)
        }
    }
}

/// Bytes a cp1252 round trip loses: the five it leaves undefined, and the invisible soft
/// hyphen that copies drop.
const DROPPED: [u8; 6] = [0x81, 0x8d, 0x8f, 0x90, 0x9d, 0xad];

/// Decodes UTF-8 that lost some bytes: a character one byte short is completed with the lost
/// byte that makes it a character of the timing-label vocabulary (labels.rs), else it becomes
/// `\u{fffd}`. Returns the text, the characters lost, and the multi-byte ones decoded.
fn decode_filling(bytes: &[u8]) -> (String, usize, usize) {
    let mut out = String::with_capacity(bytes.len());
    let (mut lost, mut i) = (0, 0);
    while i < bytes.len() {
        let e = match std::str::from_utf8(&bytes[i..]) {
            Ok(s) => {
                out.push_str(s);
                break;
            }
            Err(e) => e,
        };
        let good = e.valid_up_to();
        out.push_str(std::str::from_utf8(&bytes[i..i + good]).unwrap_or_default());
        i += good;
        let bad = e.error_len().unwrap_or(bytes.len() - i).max(1);
        match complete(&bytes[i..i + bad]) {
            Some(c) => out.push(c),
            None => {
                out.push('\u{fffd}');
                lost += 1;
            }
        }
        i += bad;
    }
    let whole = out
        .chars()
        .filter(|c| u32::from(*c) >= 0x80 && *c != '\u{fffd}')
        .count();
    (out, lost, whole)
}

/// The label character `part` (a lead byte and what is left of its sequence) was before one
/// byte was lost, if exactly one lost byte at one place makes such a character.
fn complete(part: &[u8]) -> Option<char> {
    let need = match part.first()? {
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        _ => return None,
    };
    if part.len() + 1 != need {
        return None;
    }
    let mut found = None;
    for at in 1..need {
        for b in DROPPED {
            let mut seq = [0u8; 4];
            seq[..at].copy_from_slice(&part[..at]);
            seq[at] = b;
            seq[at + 1..need].copy_from_slice(&part[at..]);
            let c = std::str::from_utf8(&seq[..need])
                .ok()
                .and_then(|s| s.chars().next())
                .filter(|c| super::labels::known_char(*c));
            if let Some(c) = c {
                if found.is_some_and(|f| f != c) {
                    return None;
                }
                found = Some(c);
            }
        }
    }
    found
}

/// Tab is kept: mmcv separates its fields with one.
fn is_control(b: u8) -> bool {
    (b < 0x20 && b != b'\t') || b == 0x7f
}

/// Removes ANSI/VT escape sequences (CSI, OSC, DCS and two-byte escapes), C1 controls and every
/// other control character but tab. Backspace is dropped, as a terminal would have overdrawn.
/// Text between control characters is copied in runs (`kept_runs`).
fn strip_into<const SKIP: bool>(text: &str, out: &mut String) {
    kept_runs::<SKIP>(text, &mut |from, to| out.push_str(&text[from..to]));
}

/// The runs of `text` that `strip_into` keeps, in order, as byte ranges (`keep(from, to)`,
/// on character bounds; some empty). `SKIP` passes over 16 bytes at a time while none of
/// them can start a control (without it, byte by byte: the reference a test compares
/// against).
fn kept_runs<const SKIP: bool>(text: &str, keep: &mut impl FnMut(usize, usize)) {
    const STRIDE: usize = 16;
    let b = text.as_bytes();
    let mut i = 0;
    let mut run = 0;
    while i < b.len() {
        if SKIP
            && let Some(chunk) = b.get(i..i + STRIDE)
            // Without early exit, as in `clean`: vector code.
            && !chunk.iter().fold(false, |acc, &c| acc | is_control(c) | (c == 0xc2))
        {
            i += STRIDE;
            continue;
        }
        let c = b[i];
        let c1 = c == 0xc2 && b.get(i + 1).is_some_and(|n| (0x80..=0x9f).contains(n));
        if !is_control(c) && !c1 {
            i += 1;
            continue;
        }
        keep(run, i);
        i = if c == 0x1b {
            escape_end(text, i)
        } else if c1 {
            i + 2
        } else {
            i + 1
        };
        run = i;
    }
    keep(run, b.len());
}

/// Where the text `clean` makes of `raw` lies in it, when `raw` is valid UTF-8 with nothing
/// to repair and cleaning only takes bytes out (escape sequences, controls): the byte ranges
/// kept, in order, none empty. None when the text is made otherwise (a repair, a lossy
/// decode). An escape sequence ends at the same byte whatever digits it holds (`\x1b[32m`,
/// `\x1b[31m`), so the lines of one shape keep the same ranges (`shape::TextAt`).
pub(crate) fn kept_spans(raw: &[u8]) -> Option<Vec<(usize, usize)>> {
    let text = std::str::from_utf8(raw).ok()?;
    if repair_mojibake(text).is_some() {
        return None;
    }
    let mut spans = Vec::new();
    kept_runs::<true>(text, &mut |from, to| {
        if from < to {
            spans.push((from, to));
        }
    });
    Some(spans)
}

/// Where the escape sequence starting at `esc` ends (always on a character boundary).
fn escape_end(text: &str, esc: usize) -> usize {
    let b = text.as_bytes();
    let char_end = |at: usize| at + text[at..].chars().next().map_or(0, char::len_utf8);
    let mut j = esc + 2;
    match b.get(esc + 1) {
        None => esc + 1,
        // CSI: parameters and intermediates, then one final byte in @..~.
        Some(b'[') => {
            while j < b.len() {
                j = char_end(j);
                if (b'@'..=b'~').contains(&b[j - 1]) {
                    break;
                }
            }
            j
        }
        // OSC, DCS, SOS, PM, APC: up to BEL or ST (ESC \).
        Some(b']' | b'P' | b'X' | b'^' | b'_') => {
            while j < b.len() {
                let c = b[j];
                j = char_end(j);
                if c == 0x07 {
                    break;
                }
                if c == 0x1b {
                    if b.get(j) == Some(&b'\\') {
                        j += 1;
                    }
                    break;
                }
            }
            j
        }
        // Two-byte escapes with a charset designator (ESC ( B ...): one more character.
        Some(b'(' | b')' | b'*' | b'+') if j < b.len() => char_end(j),
        // Any other escape (ESC 7, ESC M): the escape and the character after it.
        _ => char_end(esc + 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cleaned(raw: &[u8]) -> String {
        let mut buf = String::new();
        clean(raw, &mut buf).to_string()
    }

    #[test]
    fn skipping_plain_chunks_strips_the_same() {
        let pieces: [&[u8]; 9] = [
            b"\x1b[32m",
            b"\x1b[0m",
            b"\xc2\x9b1m",
            b"caf\xc3\xa9",
            b"\t",
            b"\x1b]0;title\x07",
            b"\x08",
            "━━╸──".as_bytes(),
            b"\xc2\xa0",
        ];
        for at in 0..40 {
            for piece in pieces {
                for tail in [0, 3, 17, 33] {
                    let mut line = vec![b'a'; at];
                    line.extend_from_slice(piece);
                    line.extend(std::iter::repeat_n(b'z', tail));
                    line.extend_from_slice(piece);
                    let text = String::from_utf8_lossy(&line);
                    let (mut fast, mut reference) = (String::new(), String::new());
                    strip_into::<true>(&text, &mut fast);
                    strip_into::<false>(&text, &mut reference);
                    assert_eq!(fast, reference, "{text:?}");
                }
            }
        }
    }

    #[test]
    fn kept_spans_give_the_cleaned_text_and_do_not_move_with_the_digits() {
        let lines: [&[u8]; 6] = [
            b"\x1b[32m[09/12 14:02:18 d2.utils.events]: \x1b[0m iter: 19  total_loss: 2.207",
            b"\x1b[31mstep: 14  \x1b[38;2;180;60;0mgrad\x1b[39m\x1b[K",
            b"epoch 3 \x08\x08 45%|\x1b]0;title 7\x07 12/100",
            b"a\x1b7b 1\xc2\x9b1m 2",
            "loss 0.5 \u{1b}[1m前向 12ms\u{1b}[0m".as_bytes(),
            b"\x1b[3",
        ];
        for raw in lines {
            let spans = kept_spans(raw).expect("spans");
            let joined: Vec<u8> = spans
                .iter()
                .flat_map(|&(a, b)| raw[a..b].to_vec())
                .collect();
            assert_eq!(String::from_utf8(joined).unwrap(), cleaned(raw), "{raw:?}");
            // Other digits, as another line of the shape has them: the same ranges.
            let other: Vec<u8> = raw
                .iter()
                .map(|&c| {
                    if c.is_ascii_digit() {
                        b'0' + (c - b'0' + 7) % 10
                    } else {
                        c
                    }
                })
                .collect();
            assert_eq!(kept_spans(&other), Some(spans), "{raw:?}");
        }
        // A repair or a lossy decode makes its text: no spans.
        assert_eq!(kept_spans("\u{1b}[0mloss å‰å‘".as_bytes()), None);
        assert_eq!(kept_spans(b"\x1b[0mloss \xff"), None);
    }

    #[test]
    fn plain_text_is_borrowed_unchanged() {
        let mut buf = String::new();
        let s = clean(b"step 1\tloss=2", &mut buf);
        assert_eq!(s, "step 1\tloss=2");
        assert!(buf.is_empty());
    }

    #[test]
    fn colours_and_erase_are_removed() {
        assert_eq!(
            cleaned(b"\x1b[31mstep: 14  \x1b[38;2;180;60;0mgrad\x1b[39m\x1b[K"),
            "step: 14  grad"
        );
    }

    #[test]
    fn cut_and_odd_escapes_end_where_a_terminal_would_end_them() {
        assert_eq!(cleaned("a\x1b(éb".as_bytes()), "ab");
        assert_eq!(cleaned(b"a\x1b7b"), "ab");
        assert_eq!(cleaned("a\x1bé".as_bytes()), "a");
        assert_eq!(cleaned(b"a\x1b"), "a");
        assert_eq!(cleaned(b"a\x1b[31"), "a");
        assert_eq!(cleaned("a\x1b[3é1mb".as_bytes()), "ab");
        assert_eq!(cleaned(b"a\x1b]0;t"), "a");
        assert_eq!(cleaned("x\u{9b}y".as_bytes()), "xy");
    }

    #[test]
    fn osc_clipboard_and_title_sequences_are_removed() {
        assert_eq!(cleaned(b"a\x1b]52;c;ZXZpbA==\x07b"), "ab");
        assert_eq!(cleaned(b"a\x1b]0;title\x1b\\b"), "ab");
    }

    #[test]
    fn invalid_utf8_nul_and_backspace_never_fail() {
        assert_eq!(cleaned(b"lo\xffss\x00=1\x08"), "lo\u{fffd}ss=1");
    }

    #[test]
    fn mojibake_is_repaired_and_latin1_is_kept() {
        let mangled: String = "前向传播 阶段1 : 97.9ms"
            .bytes()
            .map(|b| {
                if b < 0x80 {
                    b as char
                } else if b < 0xa0 {
                    CP1252_HIGH[usize::from(b - 0x80)]
                } else {
                    b as char
                }
            })
            .collect();
        assert_ne!(mangled, "前向传播 阶段1 : 97.9ms");
        assert_eq!(cleaned(mangled.as_bytes()), "前向传播 阶段1 : 97.9ms");
        assert_eq!(cleaned("café crème".as_bytes()), "café crème");
    }

    #[test]
    fn mojibake_that_lost_bytes_is_repaired_with_markers() {
        // Seed 002's lines, verbatim: the undefined cp1252 bytes and the soft hyphen are gone.
        assert_eq!(
            cleaned("å‰å‘ä¼\u{a0}æ’æ€»è€—æ—¶    : 1805.28ms (50.0%)".as_bytes()),
            "前向传播总耗时    : 1805.28ms (50.0%)"
        );
        assert_eq!(
            cleaned("VRTå¤„ç†          : 1799.99ms (49.9%)".as_bytes()),
            "VRT处理          : 1799.99ms (49.9%)"
        );
        // A character no label word holds stays lost, marked.
        assert_eq!(cleaned("çšçš„".as_bytes()), "\u{fffd}的");
        assert_eq!(cleaned("naïve Größe".as_bytes()), "naïve Größe");
    }

    #[test]
    fn c1_controls_are_removed() {
        assert_eq!(cleaned("a\u{9b}31mb".as_bytes()), "a31mb");
    }
}
