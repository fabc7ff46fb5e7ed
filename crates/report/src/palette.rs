//! Arm colours: the "Tableau 10" colours, chosen to stay distinguishable from one another
//! (and mostly for colour-blind readers) on white, with its grey swapped for a dark teal so
//! that grey means only the offered rate. Past ten arms they repeat; the per-arm panels of
//! the timeline keep those arms apart anyway.
//!
//! The reference lines are kept out of the palette: the offered rate is dashed grey, the
//! capacity dashed black, incidents a pale red fill, a breaker's open periods a dark slate
//! strip, so none can be mistaken for an arm.

use plotters::style::RGBColor;

const ARMS: [RGBColor; 10] = [
    RGBColor(0x1f, 0x77, 0xb4),
    RGBColor(0xff, 0x7f, 0x0e),
    RGBColor(0x2c, 0xa0, 0x2c),
    RGBColor(0xd6, 0x27, 0x28),
    RGBColor(0x94, 0x67, 0xbd),
    RGBColor(0x8c, 0x56, 0x4b),
    RGBColor(0xe3, 0x77, 0xc2),
    RGBColor(0x00, 0x5f, 0x5f),
    RGBColor(0xbc, 0xbd, 0x22),
    RGBColor(0x17, 0xbe, 0xcf),
];

/// The colour of arm `i`.
pub fn arm(i: usize) -> RGBColor {
    ARMS[i % ARMS.len()]
}

/// The offered rate.
pub const OFFERED: RGBColor = RGBColor(0x99, 0x99, 0x99);
/// The upstream's capacity.
pub const CAPACITY: RGBColor = RGBColor(0x20, 0x20, 0x20);
/// Incident windows.
pub const INCIDENT: RGBColor = RGBColor(0xf4, 0xc7, 0xc3);
/// A breaker's open periods (a strip atop its arm's panel).
pub const BREAKER_OPEN: RGBColor = RGBColor(0x4a, 0x4a, 0x6a);
