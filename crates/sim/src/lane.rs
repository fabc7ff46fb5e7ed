//! FIFO lanes: the O(1) path for events that all wait the same fixed delay.
//!
//! A network hop (`rtt / 2`) or an attempt timeout is the same delay for every event that
//! takes it, and events are created in time order, so their due times come out already
//! sorted: a FIFO ring is a perfect priority queue for them. So is it for any stream of
//! events that is produced in time order whatever its delays (a consumer's timers, armed
//! in time order). Most of the simulator's events go through a lane and never touch the
//! [`crate::queue::CalendarQueue`].
//!
//! # Cancelling
//!
//! Most timers are never needed: an attempt is answered in milliseconds, long before its
//! 10 s timeout. Left in the lane, each such timer is popped as an event, only to be found
//! stale, and with a million of them pending the lane's front is a cache miss on every
//! pop. So a push returns a [`Ticket`], and [`Lane::cancel`] blanks the entry in place (it
//! was written moments ago, so it is still in cache); the lane steps over blank entries
//! when its front moves, and the schedule never sees them. Entries that are not cancelled
//! keep their `(time, seq)`, so the order of everything else is unchanged.

use crate::queue::Entry;
use std::num::NonZeroU64;

/// Names one entry pushed on a lane, for [`Lane::cancel`] on that same lane
/// (`Option<Ticket>` is 8 bytes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ticket(NonZeroU64);

/// Events that all wait `delay` ns after they are pushed.
///
/// Keys and items are kept apart (two rings in step): the front moves over cancelled
/// entries, most of a timeout lane, reading 16 bytes each rather than a whole event.
///
/// Why rings of their own rather than `VecDeque`s: every entry is named by its push count
/// (the n-th push is entry n, for good), so the front, the back and a ticket are all
/// absolute counts and an entry's place is `n & mask` on a power-of-two buffer. A pop is a
/// load and an increment, where two `VecDeque`s paid their wrap-around arithmetic twice,
/// and a cancel needs no translation from ticket to position.
#[derive(Debug)]
pub struct Lane<T> {
    delay: u64,
    /// The front entry's key as one number, `time << 64 | seq` ([`EMPTY`] when empty),
    /// kept beside the lane so that the schedule, which compares every lane's front on
    /// every pop, reads a few hot bytes instead of each queue's buffer (with a million
    /// requests in flight the fronts of the long lanes are cache misses), and compares
    /// them in one instruction or two.
    head: u128,
    /// Entry `n`'s [`key`] at `n & mask`, for `front <= n < back`; [`CANCELLED`] once
    /// cancelled. The front is never [`CANCELLED`].
    keys: Vec<u128>,
    /// Entry `n`'s item at `n & mask`, in step with `keys` (`None` outside the entries
    /// queued, and once cancelled).
    items: Vec<Option<T>>,
    /// The number of the front entry: entries popped or dropped so far.
    front: u64,
    /// The number the next push gets: entries ever pushed.
    back: u64,
    /// The due time of the last entry pushed (cancelled or not): the lane's back.
    last: u64,
    /// Entries queued and not cancelled.
    live: usize,
}

/// The head of an empty lane: later than any entry (an entry's `seq` is never `u64::MAX`).
pub const EMPTY: u128 = u128::MAX;

/// The key of a cancelled entry (no entry's `seq` is 0: the schedule counts from 1).
const CANCELLED: u128 = 0;

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
            live: 0,
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
    pub fn push(&mut self, now: u64, seq: u64, item: T) -> Ticket {
        self.push_at(now.saturating_add(self.delay), seq, item)
    }

    /// Queues `item` due at `time`, whatever the lane's delay: for a stream of events that
    /// comes in time order by itself (a time earlier than the last entry's is raised to
    /// it; [`Lane::fits`] says whether it would be). `seq` must not be 0.
    #[inline(always)]
    pub fn push_at(&mut self, time: u64, seq: u64, item: T) -> Ticket {
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
        self.live += 1;
        Ticket(NonZeroU64::MIN.saturating_add(self.back - 1))
    }

    /// Doubles the buffers (at least 16 entries), each queued entry moved to its place.
    #[cold]
    fn grow(&mut self) {
        let n = (self.keys.len() * 2).max(16);
        let mut keys = vec![CANCELLED; n];
        let mut items: Vec<Option<T>> = std::iter::repeat_with(|| None).take(n).collect();
        for e in self.front..self.back {
            let i = self.at(e);
            keys[e as usize & (n - 1)] = self.keys[i];
            items[e as usize & (n - 1)] = self.items[i].take();
        }
        self.keys = keys;
        self.items = items;
    }

    /// Cancels the entry of `ticket`, if it is still queued: it will never be popped.
    #[inline]
    pub fn cancel(&mut self, ticket: Ticket) {
        let n = ticket.0.get() - 1;
        if n < self.front || n >= self.back {
            return; // popped already (or not of this lane)
        }
        let i = self.at(n);
        if self.keys[i] != CANCELLED {
            self.keys[i] = CANCELLED;
            self.items[i] = None;
            self.live -= 1;
            if n == self.front {
                self.settle();
            }
        }
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
        self.live -= 1;
        self.settle();
        Some(Entry {
            time: (k >> 64) as u64,
            seq: k as u64,
            item,
        })
    }

    /// Notes the new front's key, first dropping cancelled entries off the front.
    #[inline]
    fn settle(&mut self) {
        if self.front == self.back {
            self.head = EMPTY;
            return;
        }
        let k = self.keys[self.at(self.front)];
        if k != CANCELLED {
            self.head = k;
        } else {
            self.drop_cancelled();
        }
    }

    /// [`Lane::settle`]'s slow path: the front is cancelled.
    fn drop_cancelled(&mut self) {
        while self.front < self.back && self.keys[self.at(self.front)] == CANCELLED {
            self.front += 1;
        }
        self.head = if self.front == self.back {
            EMPTY
        } else {
            self.keys[self.at(self.front)]
        };
    }

    /// Entries queued (cancelled ones not counted).
    pub fn len(&self) -> usize {
        self.live
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cancelled_entries_are_never_popped() {
        let mut l = Lane::new(10);
        let t: Vec<Ticket> = (0..5).map(|i| l.push(i, i, i)).collect();
        l.cancel(t[0]);
        l.cancel(t[2]);
        l.cancel(t[2]); // twice: no effect
        assert_eq!(l.len(), 3);
        assert_eq!(l.head(), key(11, 1));
        let got: Vec<_> = std::iter::from_fn(|| l.pop().map(|e| e.item)).collect();
        assert_eq!(got, [1, 3, 4]);
        l.cancel(t[4]); // popped already: no effect
        assert!(l.is_empty() && l.head() == EMPTY);
        let last = l.push(20, 9, 9);
        l.cancel(last);
        assert!(l.is_empty() && l.head() == EMPTY && l.pop().is_none());
    }

    /// Many more entries than the first buffer, cancelled here and there, popped while
    /// others are pushed: the ring grows and wraps with every entry in its place.
    #[test]
    fn grows_and_wraps_in_order() {
        let mut l = Lane::new(0);
        let mut want = std::collections::VecDeque::new();
        let mut next = 1u64;
        for round in 0..50u64 {
            for _ in 0..(round * 7) % 40 + 1 {
                let t = l.push(next, next, next);
                if next % 3 == 0 {
                    l.cancel(t);
                } else {
                    want.push_back(next);
                }
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
