//! A hasher for maps keyed by small integers (a rank, a source index) that are looked up once
//! a line: one multiply-fold per word instead of SipHash's rounds. The keys come from the
//! user's own files, so no adversary chooses them.

use std::hash::{BuildHasherDefault, Hasher};

/// Hashes with `IntHasher`.
pub type IntHash = BuildHasherDefault<IntHasher>;

#[derive(Default)]
pub struct IntHasher(u64);

impl IntHasher {
    fn add(&mut self, w: u64) {
        let m = u128::from(self.0 ^ w) * 0x9e37_79b9_7f4a_7c15;
        self.0 = (m as u64) ^ (m >> 64) as u64;
    }
}

impl Hasher for IntHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut b = [0u8; 8];
            b[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(b));
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::hash::BuildHasher;

    #[test]
    fn nearby_keys_spread_over_the_table() {
        // Ranks 0..4096 of sources 0..4: the low bits a table indexes by all differ enough.
        let h = IntHash::default();
        let low: HashSet<u64> = (0..4usize)
            .flat_map(|s| (0..4096u32).map(move |r| (s, r)))
            .map(|k| h.hash_one(k) & 0xffff)
            .collect();
        assert!(low.len() > 14_000, "{} distinct of 16384", low.len());
    }
}
