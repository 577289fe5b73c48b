//! LevelDB's log format, in which W&B's `.wandb` files (and SwanLab's run files) frame their
//! records: a 7-byte file header (a 4-byte ident such as `:W&B`, a 2-byte magic, a version
//! byte), then 32 KiB blocks of fragments. A fragment is a 7-byte header (a CRC-32 of its type
//! byte and its data, little endian; the data's length, little endian; its type: 1 whole,
//! 2 first, 3 middle, 4 last) and its data; a block's tail too short for a header is zeros. A
//! record is one whole fragment, or a first, middles and a last, which may span blocks.
//!
//! Reading is resumable at any record boundary, so a file still being written is read as it
//! grows: a record whose fragments are not all there yet waits for its bytes. A damaged
//! fragment is named by its byte and skipped, and reading goes on at the next block, as
//! LevelDB's own reader recovers.

use std::borrow::Cow;

pub const FILE_HEADER: usize = 7;
pub const BLOCK: usize = 32 * 1024;
const HEADER: usize = 7;

const FULL: u8 = 1;
const FIRST: u8 = 2;
const LAST: u8 = 4;

/// The records read from one pass over the bytes.
#[derive(Debug, Default)]
pub struct Records<'a> {
    /// Each whole record with the offset of its first fragment.
    pub records: Vec<(u64, Cow<'a, [u8]>)>,
    /// Where the next pass begins: the end of the last whole record (or of the skipped
    /// damage after it). Bytes after it are a record not yet whole.
    pub consumed: usize,
    /// What could not be read, each naming its byte.
    pub problems: Vec<String>,
}

/// The file's ident (`:W&B`), when it is long enough to have one.
pub fn ident(bytes: &[u8]) -> Option<&[u8]> {
    bytes.get(..4)
}

/// The records from `start` (the file header's end, or an earlier pass's `consumed`) on.
pub fn records(bytes: &[u8], start: usize) -> Records<'_> {
    records_at(bytes, 0, start)
}

/// As `records`, for the file's bytes from offset `base` on (a block's start: a file being
/// written is read from the block its unread part begins in). Offsets are the file's.
pub fn records_at(bytes: &[u8], base: usize, start: usize) -> Records<'_> {
    debug_assert!(base.is_multiple_of(BLOCK) && start >= base);
    let mut out = Records {
        consumed: start.max(FILE_HEADER),
        ..Records::default()
    };
    // The bytes at the file's offsets `from..to`, when they are there.
    let at = |from: usize, to: usize| bytes.get(from.checked_sub(base)?..to.checked_sub(base)?);
    let end = base + bytes.len();
    let mut pos = out.consumed;
    // A record begun in earlier fragments: its offset and data so far.
    let mut pending: Option<(usize, Vec<u8>)> = None;
    while pos < end {
        let left = BLOCK - pos % BLOCK;
        if left < HEADER {
            // The block's tail: zeros by the format.
            let Some(tail) = at(pos, pos + left) else {
                break;
            };
            if tail.iter().any(|&b| b != 0) {
                out.problems
                    .push(format!("byte {pos}: a block's tail is not zeros"));
            }
            pos += left;
            if pending.is_none() {
                out.consumed = pos;
            }
            continue;
        }
        let Some(head) = at(pos, pos + HEADER) else {
            break;
        };
        let crc = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
        let len = usize::from(u16::from_le_bytes([head[4], head[5]]));
        let kind = head[6];
        if kind == 0 && len == 0 && crc == 0 {
            // Zeros where a fragment would be: space a writer set aside and has not filled
            // (or the rest of a block it padded). Nothing after it in this block is read.
            if at(pos, end.min(pos + left)).is_some_and(|z| z.iter().all(|&b| b == 0)) {
                if pos + left > end {
                    break;
                }
                pos += left;
                if pending.is_none() {
                    out.consumed = pos;
                }
                continue;
            }
        }
        if HEADER + len > left || !(FULL..=LAST).contains(&kind) {
            out.problems.push(format!(
                "byte {pos}: not a record's header (type {kind}, {len} bytes); reading goes on \
                 at the next block"
            ));
            pending = None;
            pos += left;
            out.consumed = pos;
            continue;
        }
        let Some(data) = at(pos + HEADER, pos + HEADER + len) else {
            break;
        };
        let end = pos + HEADER + len;
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&[kind]);
        hasher.update(data);
        if hasher.finalize() != crc {
            out.problems.push(format!(
                "byte {pos}: a record's checksum does not match; skipped"
            ));
            pending = None;
            pos = end;
            out.consumed = pos;
            continue;
        }
        match (kind, pending.take()) {
            (FULL, earlier) => {
                if let Some((at, _)) = earlier {
                    out.problems
                        .push(format!("byte {at}: a record with no last part; skipped"));
                }
                out.records.push((pos as u64, Cow::Borrowed(data)));
            }
            (FIRST, earlier) => {
                if let Some((at, _)) = earlier {
                    out.problems
                        .push(format!("byte {at}: a record with no last part; skipped"));
                }
                pending = Some((pos, data.to_vec()));
            }
            (LAST, Some((at, mut so_far))) => {
                so_far.extend_from_slice(data);
                out.records.push((at as u64, Cow::Owned(so_far)));
            }
            // A middle (the kind was checked to be 1 to 4).
            (_, Some((at, mut so_far))) => {
                so_far.extend_from_slice(data);
                pending = Some((at, so_far));
            }
            (_, None) => out.problems.push(format!(
                "byte {pos}: the rest of a record whose start is lost; skipped"
            )),
        }
        pos = end;
        if pending.is_none() {
            out.consumed = pos;
        }
    }
    out
}

/// Records framed as a writer frames them, after a file header with `ident`: for tests.
#[cfg(test)]
pub fn frame(ident: &[u8; 4], records: &[Vec<u8>]) -> Vec<u8> {
    let mut out = ident.to_vec();
    out.extend_from_slice(&[0xE1, 0xBE, 0]);
    for data in records {
        let mut rest: &[u8] = data;
        let mut first = true;
        loop {
            let left = BLOCK - out.len() % BLOCK;
            if left < HEADER {
                out.resize(out.len() + left, 0);
                continue;
            }
            let room = left - HEADER;
            let take = rest.len().min(room);
            let last = take == rest.len();
            let kind = match (first, last) {
                (true, true) => FULL,
                (true, false) => FIRST,
                (false, false) => 3,
                (false, true) => LAST,
            };
            let mut hasher = crc32fast::Hasher::new();
            hasher.update(&[kind]);
            hasher.update(&rest[..take]);
            out.extend_from_slice(&hasher.finalize().to_le_bytes());
            out.extend_from_slice(&(take as u16).to_le_bytes());
            out.push(kind);
            out.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
            first = false;
            if last {
                break;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_span_blocks_and_a_torn_one_waits_for_its_bytes() {
        let big = vec![7u8; 50_000];
        let small = b"hello".to_vec();
        let file = frame(b":W&B", &[small.clone(), big.clone(), small.clone()]);
        let r = records(&file, 0);
        assert!(r.problems.is_empty(), "{:?}", r.problems);
        let got: Vec<&[u8]> = r.records.iter().map(|(_, d)| d.as_ref()).collect();
        assert_eq!(got, vec![&small[..], &big[..], &small[..]]);
        assert_eq!(r.consumed, file.len());
        // Cut inside the big record: only the first is whole, and the next pass from where
        // this one stopped reads the rest once the bytes are there.
        let cut = &file[..40_000];
        let r = records(cut, 0);
        assert_eq!(r.records.len(), 1);
        assert!(r.problems.is_empty());
        let again = records(&file, r.consumed);
        assert_eq!(again.records.len(), 2);
        assert_eq!(again.records[0].1.as_ref(), &big[..]);
    }

    #[test]
    fn a_damaged_fragment_is_named_and_reading_goes_on() {
        let file = frame(
            b":W&B",
            &[b"one".to_vec(), b"two".to_vec(), b"three".to_vec()],
        );
        let mut bad = file.clone();
        // The second record's data: its checksum no longer matches.
        bad[FILE_HEADER + HEADER + 3 + HEADER] ^= 0xff;
        let r = records(&bad, 0);
        let got: Vec<&[u8]> = r.records.iter().map(|(_, d)| d.as_ref()).collect();
        assert_eq!(got, vec![&b"one"[..], &b"three"[..]]);
        assert_eq!(r.problems.len(), 1);
        assert!(r.problems[0].starts_with("byte 17:"), "{:?}", r.problems);
    }

    #[test]
    fn a_pass_reads_from_the_block_its_unread_part_begins_in() {
        let big = vec![7u8; 40_000];
        let file = frame(b":W&B", &[big, b"tail".to_vec()]);
        let whole = records(&file, 0);
        let (tail_at, _) = &whole.records[1];
        let cut = *tail_at as usize;
        let first = records(&file[..cut], 0);
        assert_eq!(first.records.len(), 1);
        assert_eq!(first.consumed, cut);
        let base = cut - cut % BLOCK;
        let next = records_at(&file[base..], base, first.consumed);
        let got: Vec<&[u8]> = next.records.iter().map(|(_, d)| d.as_ref()).collect();
        assert_eq!(got, vec![&b"tail"[..]]);
        assert_eq!(next.records[0].0, *tail_at);
        assert_eq!(next.consumed, file.len());
    }
}
