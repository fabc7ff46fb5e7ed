//! The wall of the production integrations: a monotonic "now" and a seed for jitter.
//!
//! The policy code never reads a clock; the tower layer and the reqwest middleware have to,
//! and this is the one place they do. `now` is time since the first call in the process,
//! which is all a [`crate::Retrier`] needs (budgets and deadlines compare differences);
//! `wall` is the calendar time an HTTP-date `Retry-After` is measured from.

use crate::nanos::Nanos;
use std::sync::OnceLock;
use std::time::{Instant, SystemTime};

static EPOCH: OnceLock<Instant> = OnceLock::new();

/// Monotonic time since the process first asked.
pub(crate) fn now() -> Nanos {
    Nanos::from(EPOCH.get_or_init(Instant::now).elapsed())
}

/// The calendar time, for a `Retry-After` given as an HTTP-date.
pub(crate) fn wall() -> SystemTime {
    SystemTime::now()
}

/// A seed for jitter when the user gives none: jitter needs to differ between processes,
/// not to be unpredictable.
pub(crate) fn seed() -> u64 {
    let t = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    (t.as_nanos() as u64) ^ u64::from(std::process::id()).rotate_left(32)
}
