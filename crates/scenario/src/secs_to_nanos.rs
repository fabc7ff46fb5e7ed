//! Float seconds to whole nanoseconds: the value `Duration::from_secs_f64` gives, in a few
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

/// `Duration::from_secs_f64(secs)` in whole nanoseconds, for a finite `secs` from 0 to
/// `u64::MAX` seconds, saturating at `u64::MAX` nanoseconds (584 years). In nanoseconds
/// because the simulator's clock counts them: a `Duration` made here and taken apart there
/// is a division and a multiplication for nothing.
#[inline]
pub(crate) fn nanos_from_secs(secs: f64) -> u64 {
    match fast_nanos(secs) {
        Some(n) => n,
        None => u64::try_from(Duration::from_secs_f64(secs).as_nanos()).unwrap_or(u64::MAX),
    }
}

/// The nearest whole nanosecond to `secs × 10⁹` by the fast route, or `None` where std
/// must decide (a product near a half, or too large to see a fraction in).
#[inline]
fn fast_nanos(secs: f64) -> Option<u64> {
    let product = secs * 1e9;
    if (0.0..WHOLE).contains(&product) {
        // The nearest whole number, ties to even, with no float → integer conversion
        // (which is many instructions with its clamping): both subtractions are exact.
        let sum = product + WHOLE;
        let nearest = sum.to_bits() - WHOLE.to_bits();
        let off = product - (sum - WHOLE);
        // The exact product is within `product · 2⁻⁵³` of `product`: twice that is margin.
        if 0.5 - off.abs() > product * f64::EPSILON {
            return Some(nearest);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// std's nanoseconds, saturating at `u64::MAX`.
    fn std_s(secs: f64) -> u64 {
        u64::try_from(Duration::from_secs_f64(secs).as_nanos()).unwrap_or(u64::MAX)
    }

    fn same(secs: f64) {
        assert_eq!(nanos_from_secs(secs), std_s(secs), "{secs:e}");
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
            prop_assert_eq!(nanos_from_secs(secs), std_s(secs));
        }

        #[test]
        fn nanos_are_std_s_up_to_u64_nanos(secs in 0.0f64..1.844_674_407e10) {
            let std = Duration::from_secs_f64(secs);
            prop_assert_eq!(u128::from(nanos_from_secs(secs)), std.as_nanos());
        }

        #[test]
        fn any_bit_pattern_is_std_s(bits in 0u64..0x43F0_0000_0000_0000) {
            let secs = f64::from_bits(bits);
            prop_assert_eq!(nanos_from_secs(secs), std_s(secs));
        }
    }
}
