//! Every random stream of a run, derived from the scenario seed in one place.
//!
//! A run draws from several independent streams: the arrival instants, which consumer a
//! unit goes to, the consumers' closed-loop start offsets, the upstream's fates, and each
//! logical request's jitter. The simulator and the real driver must derive them the same
//! way, or "same seed, same run" would hold in one and not the other; so neither derives
//! them itself. Arms share the scenario's arrival and fault streams (they face the same
//! schedule) but each has a jitter stream of its own, split per logical request so that a
//! request's delays do not depend on how many requests retried before it.

use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;

/// Odd constants that spread one seed into unrelated streams (Fibonacci hashing and
/// xorshift multipliers; any odd 64-bit constant would do, but these are fixed so that
/// reports stay byte-identical across versions).
const ARM: u64 = 0x9E37_79B9_7F4A_7C15;
const REQUEST: u64 = 0x2545_F491_4F6C_DD1D;
const ARRIVALS: u64 = 0xA77_1BA1;
const CONSUMER_PICK: u64 = 0xC0_75_0E_35;
const CONSUMER_START: u64 = 0x7417_C0DE;
const HOP: u64 = 0xD6E8_FEB8_6659_FD93;
const NETWORK: u64 = 0x0E7A_11E7;

/// The streams of one scenario seed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seeds(pub u64);

impl Seeds {
    /// The upstream's fate stream: one per upstream, drawn in arrival order.
    pub fn faults(self) -> Pcg64Mcg {
        Pcg64Mcg::seed_from_u64(self.0)
    }

    /// The arrival instants.
    pub fn arrivals(self) -> Pcg64Mcg {
        Pcg64Mcg::seed_from_u64(self.0 ^ ARRIVALS)
    }

    /// Which consumer a generated unit goes to.
    pub fn consumer_pick(self) -> Pcg64Mcg {
        Pcg64Mcg::seed_from_u64(self.0 ^ CONSUMER_PICK)
    }

    /// The consumers' closed-loop start offsets.
    pub fn consumer_start(self) -> Pcg64Mcg {
        Pcg64Mcg::seed_from_u64(self.0 ^ CONSUMER_START)
    }

    /// The simulated network's jitter (`[network] jitter_ms`) on one way of the link to one
    /// server: `[upstream]` (`None`) or hop `hop` (`[[hops]]` entry `hop`, from 0); the
    /// requests' way there (`back` false, drawn in the order the client sends) or the
    /// answers' way back (drawn in the order the server answers). The real driver has no
    /// such streams: its network is whatever the machine's is.
    pub fn network(self, hop: Option<usize>, back: bool) -> Pcg64Mcg {
        let hop = hop.map_or(0, |h| (h as u64 + 1).wrapping_mul(HOP).rotate_left(29));
        let way = if back { REQUEST.rotate_left(7) } else { 0 };
        Pcg64Mcg::seed_from_u64(self.0 ^ NETWORK ^ hop ^ way)
    }

    /// The fate stream of hop `hop` of a call graph (`[[hops]]` entry `hop`, from 0);
    /// the bottom, `[upstream]`, keeps [`Seeds::faults`].
    pub fn hop_faults(self, hop: usize) -> Pcg64Mcg {
        Pcg64Mcg::seed_from_u64(self.0 ^ (hop as u64 + 1).wrapping_mul(HOP))
    }

    /// Arm `index`'s jitter streams.
    pub fn arm(self, index: usize) -> ArmSeed {
        ArmSeed(self.0 ^ (index as u64 + 1).wrapping_mul(ARM))
    }
}

/// One arm's jitter seed, split per logical request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArmSeed(pub u64);

impl ArmSeed {
    /// The jitter stream of logical request `id` (its arrival index, or the consumers'
    /// request id).
    #[inline]
    pub fn request(self, id: u64) -> Pcg64Mcg {
        Pcg64Mcg::seed_from_u64(self.0 ^ id.wrapping_mul(REQUEST))
    }

    /// The jitter streams of hop `hop`'s client under this arm, split per request the
    /// hop's client makes (numbered in the order they begin).
    pub fn hop(self, hop: usize) -> ArmSeed {
        ArmSeed(self.0 ^ (hop as u64 + 1).wrapping_mul(HOP).rotate_left(17))
    }

    /// The arm's breaker's stream (failsafe-rs' jittered open time): the stream of a
    /// logical request index no request has, so it shares no draw with any of them.
    pub fn breaker(self) -> Pcg64Mcg {
        self.request(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngCore;

    #[test]
    fn streams_are_fixed_and_distinct() {
        let s = Seeds(42);
        let firsts = [
            s.faults().next_u64(),
            s.arrivals().next_u64(),
            s.consumer_pick().next_u64(),
            s.consumer_start().next_u64(),
            s.network(None, false).next_u64(),
            s.network(None, true).next_u64(),
            s.network(Some(0), false).next_u64(),
            s.arm(0).request(0).next_u64(),
            s.arm(0).request(1).next_u64(),
            s.arm(1).request(0).next_u64(),
        ];
        for (i, a) in firsts.iter().enumerate() {
            for b in &firsts[i + 1..] {
                assert_ne!(a, b);
            }
        }
        assert_eq!(
            Seeds(42).arm(3).request(9).next_u64(),
            s.arm(3).request(9).next_u64()
        );
    }
}
