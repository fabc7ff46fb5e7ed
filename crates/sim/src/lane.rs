//! FIFO lanes: the O(1) path for events that all wait the same fixed delay.
//!
//! A network hop (`rtt / 2`) or an attempt timeout is the same delay for every event that
//! takes it, and events are created in time order, so their due times come out already
//! sorted: a `VecDeque` is a perfect priority queue for them. Most of the simulator's
//! events go through a lane and never touch the [`crate::queue::CalendarQueue`].

use crate::queue::Entry;
use std::collections::VecDeque;

/// Events that all wait `delay` ns after they are pushed.
#[derive(Debug)]
pub struct Lane<T> {
    delay: u64,
    /// The front entry's key (`(u64::MAX, u64::MAX)` when empty), kept beside the lane so
    /// that the schedule, which compares every lane's front on every pop, reads a few
    /// hot bytes instead of each queue's buffer (with a million requests in flight the
    /// fronts of the long lanes are cache misses).
    head: (u64, u64),
    line: VecDeque<Entry<T>>,
}

const EMPTY: (u64, u64) = (u64::MAX, u64::MAX);

impl<T> Lane<T> {
    /// A lane whose events are due `delay` ns after they are pushed.
    pub fn new(delay: u64) -> Self {
        Lane {
            delay,
            head: EMPTY,
            line: VecDeque::new(),
        }
    }

    /// Queues `item` due at `now + delay`. `now` must not go backwards between calls (the
    /// simulator's clock never does); a `now` earlier than the last is raised to keep the
    /// lane sorted.
    pub fn push(&mut self, now: u64, seq: u64, item: T) {
        let mut time = now.saturating_add(self.delay);
        if let Some(last) = self.line.back() {
            time = time.max(last.time);
        }
        if self.line.is_empty() {
            self.head = (time, seq);
        }
        self.line.push_back(Entry { time, seq, item });
    }

    /// The delay of every entry, ns.
    pub fn delay(&self) -> u64 {
        self.delay
    }

    /// Whether an entry due at `time` can join the back of the line without breaking its
    /// order (the clock never goes back, so with a fixed delay it always can).
    pub fn fits(&self, time: u64) -> bool {
        self.line.back().map_or(true, |last| last.time <= time)
    }

    /// The earliest entry's `(time, seq)`.
    pub fn peek_key(&self) -> Option<(u64, u64)> {
        (self.head != EMPTY).then_some(self.head)
    }

    /// Removes the earliest entry.
    pub fn pop(&mut self) -> Option<Entry<T>> {
        let e = self.line.pop_front();
        self.head = self.line.front().map_or(EMPTY, Entry::key);
        e
    }

    /// Entries queued.
    pub fn len(&self) -> usize {
        self.line.len()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.line.is_empty()
    }
}
