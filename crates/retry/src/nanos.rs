//! The one type for "when" on herd-retry's API: an instant on the caller's clock, in
//! nanoseconds from that clock's zero.
//!
//! Nothing here reads a clock, so every call that depends on time takes `now` as an
//! argument, and the simulator's virtual clock, a tokio driver and a production client
//! pass their own. The simulator's clock counts nanoseconds in a `u64`: an instant that is
//! that `u64` costs it nothing at the millions of calls a run makes, where a `Duration`
//! (twice as wide, seconds and nanoseconds apart) would be made and taken apart at each.
//! Lengths of time (a backoff delay, a timeout, a budget's window) stay `Duration`s: an
//! instant plus a `Duration` is an instant.

use std::ops::Add;
use std::time::Duration;

/// An instant: nanoseconds since the caller's clock began (the start of a run, or the
/// first reading in a process). Any monotonic clock will do; a `u64` holds 584 years.
///
/// ```
/// use herd_retry::Nanos;
/// use std::time::Duration;
/// let t = Nanos::from(Duration::from_millis(3));
/// assert_eq!(t, Nanos(3_000_000));
/// assert_eq!(t + Duration::from_millis(1), Nanos(4_000_000));
/// assert_eq!(Duration::from(t), Duration::from_millis(3));
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Nanos(pub u64);

impl Nanos {
    /// The clock's zero.
    pub const ZERO: Nanos = Nanos(0);

    /// The time since the clock's zero, as a `Duration`.
    #[inline]
    pub fn as_duration(self) -> Duration {
        Duration::from_nanos(self.0)
    }
}

impl From<Duration> for Nanos {
    /// The instant `d` after the clock's zero, saturating at 584 years.
    #[inline]
    fn from(d: Duration) -> Nanos {
        Nanos(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
    }
}

impl From<Nanos> for Duration {
    #[inline]
    fn from(t: Nanos) -> Duration {
        t.as_duration()
    }
}

impl Add<Duration> for Nanos {
    type Output = Nanos;

    /// The instant `d` later, saturating at the end of the clock.
    #[inline]
    fn add(self, d: Duration) -> Nanos {
        Nanos(self.0.saturating_add(Nanos::from(d).0))
    }
}
