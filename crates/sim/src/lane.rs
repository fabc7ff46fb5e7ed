//! FIFO lanes: the O(1) path for events that all wait the same fixed delay.
//!
//! A network hop (`rtt / 2`) or an attempt timeout is the same delay for every event that
//! takes it, and events are created in time order, so their due times come out already
//! sorted: a FIFO ring is a perfect priority queue for them. So is it for any stream of
//! events that is produced in time order whatever its delays (a consumer's timers, armed
//! in time order). Most of the simulator's events go through a lane and never touch the
//! [`crate::queue::CalendarQueue`].
//!
//! # No cancelling
//!
//! Most long timers are never needed: an attempt is answered in milliseconds, long before
//! its 10 s timeout. Lanes once took a ticket per push and blanked a cancelled entry in
//! place; now such timers are written down first and reach a lane only if still needed
//! some time later (the simulator's `deferred` module), so nothing on a lane is ever
//! cancelled, and a lane is a plain FIFO: a pop is a load and an increment, with no blank
//! entries to step over. A timer that is over by the time it is due is popped and found
//! stale by its owner, which does nothing.

use crate::queue::Entry;

/// Events that all wait `delay` ns after they are pushed.
///
/// Keys and items are kept apart (two rings in step), so that the next front's key, read
/// at every pop for the schedule's head, is 16 bytes beside the others.
///
/// Why rings of their own rather than `VecDeque`s: every entry is named by its push count
/// (the n-th push is entry n, for good), so the front and the back are absolute counts and
/// an entry's place is `n & mask` on a power-of-two buffer. A pop is a load and an
/// increment, where two `VecDeque`s paid their wrap-around arithmetic twice.
#[derive(Debug)]
pub struct Lane<T> {
    delay: u64,
    /// The front entry's key as one number, `time << 64 | seq` ([`EMPTY`] when empty),
    /// kept beside the lane so that the schedule, which compares every lane's front on
    /// every pop, reads a few hot bytes instead of each queue's buffer, and compares them
    /// in one instruction or two.
    head: u128,
    /// Entry `n`'s [`key`] at `n & mask`, for `front <= n < back`.
    keys: Vec<u128>,
    /// Entry `n`'s item at `n & mask`, in step with `keys` (`None` outside the entries
    /// queued).
    items: Vec<Option<T>>,
    /// The number of the front entry: entries popped so far.
    front: u64,
    /// The number the next push gets: entries ever pushed.
    back: u64,
    /// The due time of the last entry pushed: the lane's back.
    last: u64,
}

/// The head of an empty lane: later than any entry (an entry's `seq` is never `u64::MAX`).
pub const EMPTY: u128 = u128::MAX;

/// `(time, seq)` as one number that orders the same way.
#[inline]
pub fn key(time: u64, seq: u64) -> u128 {
    u128::from(time) << 64 | u128::from(seq)
}

impl<T> Lane<T> {
    /// A lane whose events are due `delay` ns after they are pushed.
    pub fn new(delay: u64) -> Self {
        Lane {
            delay,
            head: EMPTY,
            keys: Vec::new(),
            items: Vec::new(),
            front: 0,
            back: 0,
            last: 0,
        }
    }

    /// Where entry `n` sits in the buffers (which must not be empty).
    #[inline]
    fn at(&self, n: u64) -> usize {
        n as usize & (self.keys.len() - 1)
    }

    /// Queues `item` due at `now + delay`. `now` must not go backwards between calls (the
    /// simulator's clock never does); a `now` earlier than the last is raised to keep the
    /// lane sorted.
    #[inline]
    pub fn push(&mut self, now: u64, seq: u64, item: T) {
        self.push_at(now.saturating_add(self.delay), seq, item)
    }

    /// Queues `item` due at `time`, whatever the lane's delay: for a stream of events that
    /// comes in time order by itself (a time earlier than the last entry's is raised to
    /// it; [`Lane::fits`] says whether it would be).
    #[inline(always)]
    pub fn push_at(&mut self, time: u64, seq: u64, item: T) {
        let queued = self.back - self.front;
        let time = if queued == 0 {
            time
        } else {
            time.max(self.last)
        };
        self.last = time;
        let k = key(time, seq);
        if queued == 0 {
            self.head = k;
        }
        if queued as usize == self.keys.len() {
            self.grow();
        }
        let i = self.at(self.back);
        self.keys[i] = k;
        self.items[i] = Some(item);
        self.back += 1;
    }

    /// Doubles the buffers (at least 16 entries), each queued entry moved to its place.
    #[cold]
    fn grow(&mut self) {
        let n = (self.keys.len() * 2).max(16);
        let mut keys = vec![EMPTY; n];
        let mut items: Vec<Option<T>> = std::iter::repeat_with(|| None).take(n).collect();
        for e in self.front..self.back {
            let i = self.at(e);
            keys[e as usize & (n - 1)] = self.keys[i];
            items[e as usize & (n - 1)] = self.items[i].take();
        }
        self.keys = keys;
        self.items = items;
    }

    /// The delay of every entry, ns.
    pub fn delay(&self) -> u64 {
        self.delay
    }

    /// Whether an entry due at `time` can join the back of the line without breaking its
    /// order (the clock never goes back, so with a fixed delay it always can).
    #[inline]
    pub fn fits(&self, time: u64) -> bool {
        self.back == self.front || self.last <= time
    }

    /// Whether an entry due at `time` can join the back of the line whatever its sequence
    /// number: the line is empty, or `time` is later than its last entry's.
    #[inline]
    pub fn fits_after(&self, time: u64) -> bool {
        self.back == self.front || self.last < time
    }

    /// The earliest entry's key as [`key`] makes it, [`EMPTY`] when there is none.
    #[inline]
    pub fn head(&self) -> u128 {
        self.head
    }

    /// Removes the earliest entry.
    #[inline]
    pub fn pop(&mut self) -> Option<Entry<T>> {
        if self.front == self.back {
            return None;
        }
        let i = self.at(self.front);
        let k = self.keys[i];
        let item = self.items[i].take()?;
        self.front += 1;
        self.head = if self.front == self.back {
            EMPTY
        } else {
            self.keys[self.at(self.front)]
        };
        Some(Entry {
            time: (k >> 64) as u64,
            seq: k as u64,
            item,
        })
    }

    /// Entries queued.
    pub fn len(&self) -> usize {
        (self.back - self.front) as usize
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.back == self.front
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pops_in_push_order_due_after_the_delay() {
        let mut l = Lane::new(10);
        for i in 0..5 {
            l.push(i, i + 1, i);
        }
        assert_eq!((l.len(), l.head()), (5, key(10, 1)));
        let got: Vec<_> = std::iter::from_fn(|| l.pop().map(|e| (e.time, e.item))).collect();
        assert_eq!(got, [(10, 0), (11, 1), (12, 2), (13, 3), (14, 4)]);
        assert!(l.is_empty() && l.head() == EMPTY && l.pop().is_none());
        l.push_at(3, 9, 9); // empty: any time goes
        assert!(!l.fits(2) && l.fits(3));
    }

    /// Many more entries than the first buffer, popped while others are pushed: the ring
    /// grows and wraps with every entry in its place.
    #[test]
    fn grows_and_wraps_in_order() {
        let mut l = Lane::new(0);
        let mut want = std::collections::VecDeque::new();
        let mut next = 1u64;
        for round in 0..50u64 {
            for _ in 0..(round * 7) % 40 + 1 {
                l.push(next, next, next);
                want.push_back(next);
                next += 1;
            }
            for _ in 0..(round * 5) % 30 {
                assert_eq!(l.pop().map(|e| e.item), want.pop_front());
            }
            assert_eq!(l.len(), want.len());
        }
        let rest: Vec<_> = std::iter::from_fn(|| l.pop().map(|e| e.item)).collect();
        assert_eq!(rest, Vec::from(want));
    }
}
