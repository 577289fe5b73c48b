//! TFRecord framing, as TensorBoard's event files use it: each record is its length (u64,
//! little-endian), the masked CRC32C of those 8 bytes, the data, and the masked CRC32C of the
//! data. A file being written may end inside a record: that record waits for its bytes. A
//! record whose data fails its check is named by offset and skipped (its length is sound); a
//! length that fails its check leaves no way to the next record, so reading stops there.

/// The records read, and where reading stopped.
#[derive(Debug, Default, PartialEq)]
pub struct Frames<'a> {
    /// Each record's offset in the bytes and its data.
    pub records: Vec<(u64, &'a [u8])>,
    /// Bytes taken: the start of a record not yet whole (or the end).
    pub consumed: usize,
    /// What could not be read, with offsets.
    pub problems: Vec<String>,
    /// A length failed its check: nothing after it can be read.
    pub stuck: bool,
}

/// The mask TensorFlow puts on a CRC32C so that a CRC of data holding CRCs stays strong.
fn masked(data: &[u8]) -> u32 {
    let crc = crc32c::crc32c(data);
    crc.rotate_right(15).wrapping_add(0xa282_ead8)
}

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut w = [0u8; 4];
    w.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(w)
}

/// The whole records in `bytes` (which start at a record); `base` is their offset in the file.
pub fn frames(bytes: &[u8], base: u64) -> Frames<'_> {
    let mut out = Frames::default();
    let mut at = 0;
    while bytes.len() - at >= 12 {
        let head = &bytes[at..at + 8];
        if masked(head) != u32_at(bytes, at + 8) {
            out.problems.push(format!(
                "byte {}: a record length that fails its checksum; the rest of the file cannot \
                 be read",
                base + at as u64
            ));
            out.stuck = true;
            break;
        }
        let mut len = [0u8; 8];
        len.copy_from_slice(head);
        let len = u64::from_le_bytes(len);
        let Some(end) = usize::try_from(len)
            .ok()
            .and_then(|l| (at + 12).checked_add(l)?.checked_add(4))
        else {
            out.problems.push(format!(
                "byte {}: a record of {len} bytes",
                base + at as u64
            ));
            out.stuck = true;
            break;
        };
        if end > bytes.len() {
            // Not written whole yet.
            break;
        }
        let data = &bytes[at + 12..end - 4];
        if masked(data) == u32_at(bytes, end - 4) {
            out.records.push((base + at as u64, data));
        } else {
            out.problems.push(format!(
                "byte {}: a record whose data fails its checksum (skipped)",
                base + at as u64
            ));
        }
        at = end;
    }
    out.consumed = at;
    out
}

/// One record framed, as a writer would: for tests.
#[cfg(test)]
pub fn frame(data: &[u8]) -> Vec<u8> {
    let len = (data.len() as u64).to_le_bytes();
    let mut out = len.to_vec();
    out.extend_from_slice(&masked(&len).to_le_bytes());
    out.extend_from_slice(data);
    out.extend_from_slice(&masked(data).to_le_bytes());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_records_are_read_a_torn_one_waits_and_a_bad_one_is_named() {
        let mut file = frame(b"first");
        file.extend(frame(b"second"));
        let third = frame(b"third record");
        file.extend(&third[..10]);
        let f = frames(&file, 0);
        assert_eq!(f.records, vec![(0, &b"first"[..]), (21, &b"second"[..])]);
        assert_eq!(f.consumed, 43, "the torn record is not taken");
        assert!(f.problems.is_empty() && !f.stuck);

        // The data of the second record damaged: named by offset, the third still read.
        let mut bad = frame(b"first");
        let mut second = frame(b"second");
        second[13] ^= 0x40;
        bad.extend(second);
        bad.extend(frame(b"third"));
        let f = frames(&bad, 100);
        assert_eq!(f.records.len(), 2);
        assert_eq!(f.records[1].1, b"third");
        assert_eq!(f.problems.len(), 1);
        assert!(f.problems[0].starts_with("byte 121: "), "{:?}", f.problems);

        // A damaged length: reading stops there.
        let mut bad = frame(b"first");
        let mut second = frame(b"second");
        second[0] ^= 1;
        bad.extend(second);
        let f = frames(&bad, 0);
        assert_eq!(f.records.len(), 1);
        assert!(f.stuck && f.problems[0].contains("length"));
    }

    #[test]
    fn the_checksum_is_crc32c() {
        // Its check value (RFC 3720); the mask is checked by reading real event files.
        assert_eq!(crc32c::crc32c(b"123456789"), 0xe306_9283);
    }
}
