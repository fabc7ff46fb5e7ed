//! Timers put off: a long timer that is nearly always over long before it is due goes on
//! its lane only if it is still needed some time after it was armed.
//!
//! # Why
//!
//! Two timers are armed for every unit of work and are over within milliseconds: the
//! attempt's timeout (10 s in `internet`), over when the answer comes, and the consumer's
//! timeout (3 s), over when the unit succeeds. On a lane, each was a push, a cancel when it
//! was over, and a step over its blank entry when the lane's front reached it: about sixty
//! instructions a unit for timers that never fire, and a lane a million entries wide.
//!
//! Here a timer is only written down (its due time, its sequence number, what it is) in a
//! FIFO; nothing is cancelled. Once it is `age` old, a sweep looks at it again: a timer
//! still needed then goes on its lane under the key it was given when armed; the others
//! (nearly all) are dropped there, each for one check.
//!
//! `age` is half the delay, at most [`AGE`] (~134 ms, past the upstream's p99 service
//! time in `internet`): by then nearly every unit is done, its unit id is still within the
//! newest 2^14 of the consumers' unit table (~164 ms of units at 100,000 a second: a
//! look-up in its ring, where an older one is a hash look-up), and the FIFO holds about a
//! tenth of a second of timers, which stays in cache. The few timers still needed at that
//! age go on their lane; if they are over later, they are popped at their due time and
//! found stale, as every timer was before timers were cancelled. (Measured, instructions a
//! unit under callgrind: 2^26 ns 2,404, 2^27 ns 2,375, 2^28 ns 2,397; see BENCHMARKS.md.)
//!
//! # Why the order is unchanged
//!
//! A timer keeps the sequence number it took when armed ([`crate::Schedule::reserve`]), so
//! on its lane it sits exactly where it would have sat had it been pushed then, and it
//! runs at the same place among events due at the same nanosecond. It reaches its lane
//! before it is due (sweeps run on a grid no coarser than `lead`, the time left at `age`,
//! so a sweep comes less than `lead` after the mark), and a timer is dropped only when
//! the owner says it could no longer do anything: it would have run as a stale no-op, or
//! been cancelled. The sweep itself only pushes timers due later, so where it runs among
//! equal-time events does not matter. Sweeps are batched on a grid (at most one a
//! millisecond per queue), so they are a few hundred thousand events in a run of tens of
//! millions, not one per timer.

use crate::schedule::{LaneId, Schedule};
use std::time::Duration;

/// The coarsest grid sweeps are rounded up to, ns (about 1 ms).
const GRAIN: u64 = 1 << 20;

/// The longest a timer waits to be looked at again, ns (about 134 ms; see the module docs).
const AGE: u64 = 1 << 27;

/// A FIFO of timers of one fixed delay, armed in time order, waiting to be swept.
///
/// Its sweeps go on a lane of their own (`lane`, a slow one), not on the calendar: they
/// come in time order, and a lone event seconds ahead on the calendar would turn its wheel
/// to that far bucket whenever nothing nearer is pending, and every event pushed after
/// that would be sorted into one crowded bucket.
#[derive(Debug)]
pub(crate) struct Deferred<T> {
    /// The lane its sweeps wait on.
    pub lane: LaneId,
    /// How long before its due time a timer is looked at again, ns.
    lead: u64,
    /// The sweep grid, ns: a power of two no larger than `lead` (so a sweep comes before
    /// every timer it is for).
    grain: u64,
    /// The timers written down, entry `n` (the n-th ever pushed) at `n & (len - 1)` for
    /// `front <= n < back`: a ring indexed by push count, as a lane's (a sweep's step is
    /// a load, a compare and an increment; `VecDeque`'s wrap-around cost twice that).
    ring: Vec<Pending<T>>,
    front: u64,
    back: u64,
    /// Whether a sweep for this queue is on the schedule.
    waking: bool,
}

/// One timer written down.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Pending<T> {
    /// When it is due, ns.
    pub due: u64,
    /// The sequence number it took when it was armed.
    pub seq: u64,
    /// What it is.
    pub item: T,
}

impl<T: Copy> Deferred<T> {
    /// A queue for timers of `delay` ns, its sweeps on a new slow lane of `s`; `None` when
    /// the delay is too short to put off (under 2 ns: no sweep could come strictly
    /// between the arming and the due time).
    pub(crate) fn new<E>(delay: u64, s: &mut Schedule<E>) -> Option<Self> {
        if delay < 2 {
            return None;
        }
        let lead = delay - (delay / 2).min(AGE);
        let lane = s.add_slow_lane(Duration::from_nanos(lead));
        // The largest power of two not above `lead`, at most `GRAIN`.
        let grain = (1u64 << (63 - lead.leading_zeros())).min(GRAIN);
        Some(Deferred {
            lane,
            lead,
            grain,
            ring: Vec::new(),
            front: 0,
            back: 0,
            waking: false,
        })
    }

    /// When a timer due at `due` is looked at again: `lead` before it, rounded up to the
    /// grid (so still before it, see `grain`).
    #[inline]
    fn wake_for(&self, due: u64) -> u64 {
        due.saturating_sub(self.lead) | (self.grain - 1)
    }

    /// Writes down a timer due at `due` that took sequence number `seq`. Returns the time
    /// of the sweep to put on the schedule, if none is there yet.
    #[inline(always)]
    pub(crate) fn push(&mut self, due: u64, seq: u64, item: T) -> Option<u64> {
        let p = Pending { due, seq, item };
        if (self.back - self.front) as usize == self.ring.len() {
            self.grow(p);
        }
        let i = self.back as usize & (self.ring.len() - 1);
        self.ring[i] = p;
        self.back += 1;
        if self.waking {
            return None;
        }
        self.waking = true;
        Some(self.wake_for(due))
    }

    /// A sweep at `now`: hands every timer whose time to be looked at has come to `look`
    /// (which pushes it on its lane if it is still needed), in the order they were armed.
    /// Returns the time of the next sweep, if any timer is left.
    #[inline]
    pub(crate) fn sweep(&mut self, now: u64, mut look: impl FnMut(Pending<T>)) -> Option<u64> {
        // `due - lead <= now`, without a subtraction per timer.
        let last = now.saturating_add(self.lead);
        let mask = self.ring.len().wrapping_sub(1);
        while self.front < self.back {
            let p = self.ring[self.front as usize & mask];
            if p.due > last {
                return Some(self.wake_for(p.due));
            }
            self.front += 1;
            look(p);
        }
        self.waking = false;
        None
    }

    /// Doubles the ring (at least 1024 entries), each timer moved to its place; slots not
    /// in use hold copies of `fill` (never read before they are written).
    #[cold]
    fn grow(&mut self, fill: Pending<T>) {
        let n = (self.ring.len() * 2).max(1024);
        let old = self.ring.len().wrapping_sub(1);
        let mut ring = Vec::with_capacity(n);
        ring.extend((self.front..self.back).map(|e| self.ring[e as usize & old]));
        ring.resize(n, fill);
        // The queued timers sit from slot 0: turn the ring so that each is at `n & mask`.
        ring.rotate_right((self.front & (n as u64 - 1)) as usize);
        self.ring = ring;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweeps_come_before_every_timer_and_keep_the_order() {
        let mut s = Schedule::<()>::new();
        let mut d = Deferred::new(10_000_000, &mut s).unwrap(); // 10 ms: lead 5 ms
        let wake = d.push(12_000_000, 1, 'a').unwrap();
        assert!((7_000_000..12_000_000).contains(&wake));
        assert_eq!(d.push(12_500_000, 2, 'b'), None); // a sweep is pending already
        d.push(30_000_000, 3, 'c');
        let mut seen = Vec::new();
        let next = d.sweep(wake, |p| seen.push((p.due, p.seq, p.item)));
        assert_eq!(seen, [(12_000_000, 1, 'a')]);
        assert!((7_500_000..12_500_000).contains(&next.unwrap()));
        let next = d.sweep(next.unwrap(), |p| seen.push((p.due, p.seq, p.item)));
        assert_eq!(seen, [(12_000_000, 1, 'a'), (12_500_000, 2, 'b')]);
        let next = next.unwrap();
        assert!((25_000_000..30_000_000).contains(&next));
        assert_eq!(d.sweep(next, |p| seen.push((p.due, p.seq, p.item))), None);
        assert_eq!(seen.len(), 3);
        // The queue wakes again.
        assert!(d.push(40_000_000, 4, 'd').is_some());
        // Thousands queued and swept while the ring grows and wraps: all in order.
        let mut want = std::collections::VecDeque::from([40_000_000]);
        let mut got = Vec::new();
        for i in 1..5000u64 {
            d.push(40_000_000 + i, 4 + i, 'e');
            want.push_back(40_000_000 + i);
            if i % 700 == 0 {
                d.sweep(35_000_000 + i, |p| got.push(p.due));
            }
        }
        d.sweep(u64::MAX / 2, |p| got.push(p.due));
        assert_eq!(got, Vec::from(want));
        assert!(Deferred::<()>::new(1, &mut s).is_none());
        let tiny = Deferred::<()>::new(2, &mut s).unwrap(); // lead 1 ns, grain 1 ns
        assert_eq!(tiny.wake_for(100), 99);
    }
}
