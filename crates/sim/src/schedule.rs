//! The virtual clock and everything pending on it: one calendar queue for arbitrary
//! delays plus a few FIFO lanes for fixed ones, merged by `(time, seq)`.
//!
//! The schedule hands out one sequence number per insertion, whatever the store, so two
//! events due at the same nanosecond always run in the order they were scheduled: the run
//! is a pure function of the scenario and seed.

use crate::lane::{self, Lane, Ticket};
use crate::queue::{CalendarQueue, Entry};
use std::time::Duration;

/// Names one of a [`Schedule`]'s fixed-delay lanes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaneId(usize);

/// The clock and the pending events.
///
/// ```
/// use herd_sim::Schedule;
/// use std::time::Duration;
/// let mut s = Schedule::new();
/// let hop = s.add_lane(Duration::from_micros(100));
/// s.after(Duration::from_micros(100), "timer");
/// s.via(hop, "packet"); // same due time, scheduled later: runs second
/// assert_eq!(s.pop(), Some((100_000, "timer")));
/// assert_eq!(s.pop(), Some((100_000, "packet")));
/// assert_eq!(s.now(), 100_000);
/// ```
#[derive(Debug)]
pub struct Schedule<T> {
    now: u64,
    seq: u64,
    popped: u64,
    calendar: CalendarQueue<T>,
    lanes: Vec<Lane<T>>,
    /// Each lane's [`Lane::head`], side by side, so that finding the earliest event is a
    /// scan of a few contiguous numbers: it happens at every pop. Updated by every method
    /// that changes a lane.
    heads: Vec<u128>,
}

impl<T> Default for Schedule<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// Nanoseconds in `d`, saturating (a `Retry-After` of years is still a time).
pub fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

impl<T> Schedule<T> {
    /// An empty schedule at t = 0.
    pub fn new() -> Self {
        Schedule {
            now: 0,
            seq: 0,
            popped: 0,
            calendar: CalendarQueue::new(),
            lanes: Vec::new(),
            heads: Vec::new(),
        }
    }

    /// Adds a lane whose events are all due `delay` after they are scheduled.
    pub fn add_lane(&mut self, delay: Duration) -> LaneId {
        self.lanes.push(Lane::new(nanos(delay)));
        self.heads.push(lane::EMPTY);
        LaneId(self.lanes.len() - 1)
    }

    /// Virtual time, ns since the start of the run.
    pub fn now(&self) -> u64 {
        self.now
    }

    /// Events taken off the schedule so far.
    pub fn events(&self) -> u64 {
        self.popped
    }

    /// Events still pending.
    pub fn pending(&self) -> usize {
        self.calendar.len() + self.lanes.iter().map(Lane::len).sum::<usize>()
    }

    fn seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Schedules `item` at absolute time `time` ns (a time in the past means now).
    #[inline]
    pub fn at(&mut self, time: u64, item: T) {
        let seq = self.seq();
        self.calendar.push(Entry {
            time: time.max(self.now),
            seq,
            item,
        });
    }

    /// Schedules `item` after `delay`.
    pub fn after(&mut self, delay: Duration, item: T) {
        self.at(self.now.saturating_add(nanos(delay)), item);
    }

    /// Schedules `item` on `lane`, due after the lane's delay; the ticket cancels it.
    #[inline(always)]
    pub fn via(&mut self, lane: LaneId, item: T) -> Option<Ticket> {
        let seq = self.seq();
        let l = self.lanes.get_mut(lane.0)?;
        let ticket = l.push(self.now, seq, item);
        self.heads[lane.0] = l.head();
        Some(ticket)
    }

    /// Cancels the event `ticket` names on `lane` (see [`crate::lane`]), if it is still
    /// pending: it will not run.
    #[inline]
    pub fn cancel(&mut self, lane: LaneId, ticket: Ticket) {
        if let Some(l) = self.lanes.get_mut(lane.0) {
            l.cancel(ticket);
            self.heads[lane.0] = l.head();
        }
    }

    /// Schedules `item` at absolute time `time` ns (a time in the past means now): on
    /// `lane` when that keeps the lane in order (the events of a stream that comes in time
    /// order, O(1)), otherwise on the calendar. The lane's delay plays no part. Either way
    /// it runs in the same `(time, seq)` order: this is only about the cost. The ticket (on
    /// the lane only) cancels it.
    #[inline]
    pub fn at_in_order(&mut self, lane: LaneId, time: u64, item: T) -> Option<Ticket> {
        let time = time.max(self.now);
        match self.lanes.get_mut(lane.0) {
            Some(l) if l.fits(time) => {
                self.seq += 1;
                let ticket = l.push_at(time, self.seq, item);
                self.heads[lane.0] = l.head();
                Some(ticket)
            }
            _ => {
                self.at(time, item);
                None
            }
        }
    }

    /// The key of an event that the caller keeps outside the schedule (a stream with one
    /// event pending at a time, such as the arrivals), due at absolute time `time` ns (a
    /// time in the past means now): it takes the next sequence number, so it runs, by
    /// [`Schedule::pop_before`] and [`Schedule::run_outside`], exactly where it would
    /// have run had it been scheduled now.
    #[inline]
    pub fn key_outside(&mut self, time: u64) -> u128 {
        let time = time.max(self.now);
        lane::key(time, self.seq())
    }

    /// Runs the event outside the schedule whose key is `k` (from
    /// [`Schedule::key_outside`], when [`Schedule::pop_before`] said it comes first): the
    /// clock moves to its time, and it counts as an event taken off the schedule.
    #[inline]
    pub fn run_outside(&mut self, k: u128) {
        self.now = self.now.max((k >> 64) as u64);
        self.popped += 1;
    }

    /// Takes the earliest pending event and moves the clock to it.
    #[inline]
    pub fn pop(&mut self) -> Option<(u64, T)> {
        self.pop_before(lane::EMPTY)
    }

    /// Takes the earliest pending event if it comes before `outside` (the key of an event
    /// kept outside the schedule, see [`Schedule::key_outside`]; [`lane::EMPTY`] for
    /// none), and moves the clock to it.
    #[inline]
    pub fn pop_before(&mut self, outside: u128) -> Option<(u64, T)> {
        let mut best = self.calendar.head();
        let mut from = usize::MAX;
        for (i, &k) in self.heads.iter().enumerate() {
            if k < best {
                best = k;
                from = i;
            }
        }
        if best >= outside {
            return None;
        }
        let e = match self.lanes.get_mut(from) {
            Some(l) => {
                let e = l.pop();
                self.heads[from] = l.head();
                e
            }
            None => self.calendar.pop(),
        }?;
        self.now = self.now.max(e.time);
        self.popped += 1;
        Some((e.time, e.item))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_and_calendar_merge_by_time_then_insertion() {
        let mut s = Schedule::new();
        let a = s.add_lane(Duration::from_nanos(10));
        let b = s.add_lane(Duration::from_nanos(5));
        s.via(a, 1); // t 10
        s.at(5, 2); // t 5
        s.via(b, 3); // t 5, after 2
        s.at(10, 4); // t 10, after 1
        let got: Vec<_> = std::iter::from_fn(|| s.pop()).collect();
        assert_eq!(got, [(5, 2), (5, 3), (10, 1), (10, 4)]);
        assert_eq!(s.events(), 4);
        assert_eq!(s.pending(), 0);
        s.at(3, 5); // in the past: runs now
        assert_eq!(s.pop(), Some((10, 5)));
    }
}
