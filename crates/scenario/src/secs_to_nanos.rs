//! Float seconds to a [`Duration`]: the value `Duration::from_secs_f64` gives, in a few
//! float operations for nearly every value.
//!
//! Why: the simulator converts two draws a unit (an arrival instant and a service time),
//! and std takes the float apart bit by bit (~45 instructions). Here the product
//! `secs × 10⁹` is made in `f64`: it is within half an ulp of the exact product, so its
//! nearest whole nanosecond is the exact product's, unless it lies within that distance
//! of a half. Those rare values, and products too large for a fraction to be seen, go to
//! std, which stays the one rule (nearest nanosecond, ties to even).

use std::time::Duration;

/// 2⁵²: a product from 0 up to this, added to it, is rounded to a whole number (the sum's
/// ulp is 1), and that number is the sum's mantissa bits. From here up a product keeps
/// too few fraction bits to judge the rounding by.
const WHOLE: f64 = (1u64 << 52) as f64;

/// `Duration::from_secs_f64(secs)` for a finite `secs` from 0 to `u64::MAX` seconds.
#[inline]
pub(crate) fn duration_from_secs(secs: f64) -> Duration {
    let product = secs * 1e9;
    if (0.0..WHOLE).contains(&product) {
        // The nearest whole number, ties to even, with no float → integer conversion
        // (which is many instructions with its clamping): both subtractions are exact.
        let sum = product + WHOLE;
        let nearest = sum.to_bits() - WHOLE.to_bits();
        let off = product - (sum - WHOLE);
        // The exact product is within `product · 2⁻⁵³` of `product`: twice that is margin.
        if 0.5 - off.abs() > product * f64::EPSILON {
            return Duration::from_nanos(nearest);
        }
    }
    Duration::from_secs_f64(secs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn same(secs: f64) {
        assert_eq!(
            duration_from_secs(secs),
            Duration::from_secs_f64(secs),
            "{secs:e}"
        );
    }

    #[test]
    fn ties_and_edges_are_std_s() {
        for secs in [
            0.0,
            5e-324,
            1e-10,
            4.9e-10,
            5e-10,
            1.5e-9,
            2.5e-9,
            0.5,
            1.0,
            1.000_000_000_5,
            1.000_000_001_5,
            4_503_599.627_370_495,
            4_503_599.627_370_496,
            3.153_6e7,
            1.844_674_407_370_955e19,
        ] {
            same(secs);
        }
        // Half-nanosecond steps around the limits of the fast route.
        for n in 0..4_000u64 {
            same(n as f64 * 0.5e-9);
            same(4_503_599.627_369_5 + n as f64 * 0.5e-9);
        }
    }

    proptest! {
        #[test]
        fn any_draw_is_std_s(secs in 0.0f64..1e7) {
            prop_assert_eq!(duration_from_secs(secs), Duration::from_secs_f64(secs));
        }

        #[test]
        fn any_bit_pattern_is_std_s(bits in 0u64..0x43F0_0000_0000_0000) {
            let secs = f64::from_bits(bits);
            prop_assert_eq!(duration_from_secs(secs), Duration::from_secs_f64(secs));
        }
    }
}
