//! A sliding-window counter over a ring of slots, driven by a `now` the caller passes in.
//!
//! Finagle's and tower's retry budgets keep deposits and withdrawals for a TTL, split into
//! ten slots so old ones expire in steps rather than all at once. The same ring serves the
//! percent budget, the SRE retry ratio and adaptive throttling here.

use crate::nanos::Nanos;
use std::time::Duration;

/// Sums values recorded in the last `ttl`, to a resolution of `ttl / slots`.
#[derive(Clone, Debug, PartialEq)]
pub struct Window {
    slots: Vec<f64>,
    /// A slot's width, nanoseconds (at least a microsecond, at most the ttl).
    width: u64,
    /// Index of the slot that covers `epoch`.
    head: usize,
    /// Start of the head slot, as a multiple of `width` since t = 0.
    head_start: u64,
}

impl Window {
    /// A window of `ttl` in `slots` slots (both at least 1).
    pub fn new(ttl: Duration, slots: usize) -> Self {
        let slots = slots.max(1);
        let width = (ttl / slots as u32).max(Duration::from_micros(1));
        Window {
            slots: vec![0.0; slots],
            width: Nanos::from(width).0,
            head: 0,
            head_start: 0,
        }
    }

    fn advance(&mut self, now: Nanos) {
        let idx = now.0 / self.width;
        if idx <= self.head_start {
            return;
        }
        let steps = (idx - self.head_start).min(self.slots.len() as u64);
        for _ in 0..steps {
            self.head = (self.head + 1) % self.slots.len();
            self.slots[self.head] = 0.0;
        }
        self.head_start = idx;
    }

    /// Adds `x` at `now`. A `now` earlier than the latest seen is counted in the current slot.
    pub fn add(&mut self, now: Nanos, x: f64) {
        self.advance(now);
        self.slots[self.head] += x;
    }

    /// The sum over the window ending at `now`.
    pub fn sum(&mut self, now: Nanos) -> f64 {
        self.advance(now);
        self.slots.iter().sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Nanos {
        Nanos(x * 1_000_000)
    }

    #[test]
    fn expires_in_slot_steps() {
        let mut w = Window::new(Duration::from_secs(1), 10);
        w.add(ms(0), 1.0);
        w.add(ms(450), 2.0);
        assert_eq!(w.sum(ms(999)), 3.0);
        assert_eq!(w.sum(ms(1000)), 2.0, "the first slot has expired");
        assert_eq!(w.sum(ms(1399)), 2.0);
        assert_eq!(w.sum(ms(1400)), 0.0, "its slot [400, 500) has expired too");
        w.add(ms(100_000), 5.0);
        assert_eq!(w.sum(ms(100_000)), 5.0);
    }
}
