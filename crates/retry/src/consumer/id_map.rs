//! A `HashMap` for the ids herd hands out itself (units, requests): sequential `u64`s that
//! no adversary chooses.
//!
//! std's default hasher (SipHash with a random key) protects against hash flooding, which
//! internal counters cannot cause, and costs ~20 ns a lookup; with a million consumers the
//! simulator does several lookups per event. One multiplication by an odd constant
//! (Fibonacci hashing) spreads sequential ids over the high bits hashbrown indexes by, and
//! keeps the map deterministic (no random key), which the simulator's byte-identical
//! output does not rely on (it never iterates a map) but is glad of.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A map keyed by herd's own `u64` ids.
pub type IdMap<V> = HashMap<u64, V, BuildHasherDefault<IdHasher>>;

/// The hasher of [`IdMap`]: for `u64` keys only (other writes are folded in, slowly).
#[derive(Clone, Copy, Debug, Default)]
pub struct IdHasher(u64);

/// 2^64 / φ, odd.
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

impl Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(GOLDEN);
        }
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0 ^ n).wrapping_mul(GOLDEN);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn sequential_ids_spread_over_the_high_bits() {
        let b = BuildHasherDefault::<IdHasher>::default();
        // hashbrown takes its 7-bit tag from the top of the hash: sequential ids must not
        // share it.
        let tags: std::collections::BTreeSet<u64> =
            (0..128u64).map(|i| b.hash_one(i) >> 57).collect();
        assert!(tags.len() > 64, "{} distinct tags", tags.len());
        let mut m: IdMap<u32> = IdMap::default();
        for i in 0..10_000u64 {
            m.insert(i, i as u32);
        }
        assert!((0..10_000u64).all(|i| m[&i] == i as u32));
    }
}
