//! The virtual clock and everything pending on it: one calendar queue for arbitrary
//! delays plus a few FIFO lanes for fixed ones, merged by `(time, seq)`.
//!
//! The schedule hands out one sequence number per insertion, whatever the store, so two
//! events due at the same nanosecond always run in the order they were scheduled: the run
//! is a pure function of the scenario and seed.
//!
//! # Slow lanes
//!
//! Every pop compares the calendar's head with each lane's. Some lanes are rarely the
//! next due: long timers (an attempt's 10 s timeout, a consumer's 3 s one, its 30 s
//! give-up, the sweeps of the timers written down first). Those are added with
//! [`Schedule::add_slow_lane`]: their heads are compared with the rest as one, the
//! earliest of them, which is worked out again only after one of their heads changed (a
//! push into an empty slow lane or a pop at a front), not at every pop. Which kind a lane
//! is changes what a pop costs, never what it returns.

use crate::lane::{self, Lane};
use crate::queue::{CalendarQueue, Entry};
use std::time::Duration;

/// Names one of a [`Schedule`]'s fixed-delay lanes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LaneId {
    index: usize,
    slow: bool,
}

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
    /// The slow lanes (see the module docs).
    slow: Vec<Lane<T>>,
    /// Each slow lane's head as `slow_best` last saw it.
    slow_heads: Vec<u128>,
    /// The earliest of `slow_heads` and its lane, while `!slow_dirty`.
    slow_best: u128,
    slow_from: usize,
    /// Whether a slow lane's head changed since `slow_best` was worked out.
    slow_dirty: bool,
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
            slow: Vec::new(),
            slow_heads: Vec::new(),
            slow_best: lane::EMPTY,
            slow_from: 0,
            slow_dirty: false,
        }
    }

    /// Adds a lane whose events are all due `delay` after they are scheduled.
    pub fn add_lane(&mut self, delay: Duration) -> LaneId {
        self.lanes.push(Lane::new(nanos(delay)));
        self.heads.push(lane::EMPTY);
        LaneId {
            index: self.lanes.len() - 1,
            slow: false,
        }
    }

    /// Adds a lane like [`Schedule::add_lane`], for events that are rarely the next due
    /// (see the module docs).
    pub fn add_slow_lane(&mut self, delay: Duration) -> LaneId {
        self.slow.push(Lane::new(nanos(delay)));
        self.slow_heads.push(lane::EMPTY);
        LaneId {
            index: self.slow.len() - 1,
            slow: true,
        }
    }

    #[inline(always)]
    fn lane_mut(&mut self, id: LaneId) -> Option<&mut Lane<T>> {
        if id.slow {
            self.slow.get_mut(id.index)
        } else {
            self.lanes.get_mut(id.index)
        }
    }

    /// Notes the head of lane `id` after a change to it.
    #[inline(always)]
    fn noted(&mut self, id: LaneId) {
        if id.slow {
            let h = self.slow[id.index].head();
            if h != self.slow_heads[id.index] {
                self.slow_heads[id.index] = h;
                self.slow_dirty = true;
            }
        } else {
            self.heads[id.index] = self.lanes[id.index].head();
        }
    }

    /// Works out the earliest head of the slow lanes again.
    #[cold]
    fn settle_slow(&mut self) {
        self.slow_dirty = false;
        self.slow_best = lane::EMPTY;
        for (i, &k) in self.slow_heads.iter().enumerate() {
            if k < self.slow_best {
                self.slow_best = k;
                self.slow_from = i;
            }
        }
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
        let lanes = self.lanes.iter().chain(&self.slow);
        self.calendar.len() + lanes.map(Lane::len).sum::<usize>()
    }

    fn seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }

    /// Schedules `item` at absolute time `time` ns (a time in the past means now).
    #[inline(always)]
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

    /// Schedules `item` on `lane`, due after the lane's delay.
    #[inline(always)]
    pub fn via(&mut self, lane: LaneId, item: T) {
        let seq = self.seq();
        let now = self.now;
        if let Some(l) = self.lane_mut(lane) {
            l.push(now, seq, item);
            self.noted(lane);
        }
    }

    /// Schedules `item` at absolute time `time` ns (a time in the past means now): on
    /// `lane` when that keeps the lane in order (the events of a stream that comes in time
    /// order, O(1)), otherwise on the calendar. The lane's delay plays no part. Either way
    /// it runs in the same `(time, seq)` order: this is only about the cost. Always
    /// inlined: the consumers' timers took ~15 instructions of call and spills around it.
    #[inline(always)]
    pub fn at_in_order(&mut self, lane: LaneId, time: u64, item: T) {
        let time = time.max(self.now);
        let seq = self.seq + 1;
        match self.lane_mut(lane) {
            Some(l) if l.fits(time) => {
                l.push_at(time, seq, item);
                self.seq = seq;
                self.noted(lane);
            }
            _ => self.at(time, item),
        }
    }

    /// Takes the next sequence number for an event that goes on the schedule later, with
    /// [`Schedule::at_in_order_reserved`] (a timer written down first and put on its lane only
    /// if still needed, see the `deferred` module): it runs where it would
    /// have run had it been scheduled now.
    #[inline(always)]
    pub fn reserve(&mut self) -> u64 {
        self.seq()
    }

    /// [`Schedule::at_in_order`] for an event whose sequence number `seq` was taken
    /// earlier by [`Schedule::reserve`]. Its sequence number may be older than those of
    /// entries already on the lane, so it joins the lane only when it is due strictly
    /// after the lane's last entry (an equal time goes on the calendar, in order there).
    #[inline]
    pub fn at_in_order_reserved(&mut self, lane: LaneId, time: u64, seq: u64, item: T) {
        let time = time.max(self.now);
        match self.lane_mut(lane) {
            Some(l) if l.fits_after(time) => {
                l.push_at(time, seq, item);
                self.noted(lane);
            }
            _ => self.calendar.push(Entry { time, seq, item }),
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

    /// The key of the earliest pending event, [`lane::EMPTY`] when there is none, without
    /// taking it: what a loop over several schedules (the links of a call graph, see
    /// `crate::chain`) compares to pick the next one.
    pub fn next_key(&mut self) -> u128 {
        let mut best = self.calendar.head();
        for &k in &self.heads {
            best = best.min(k);
        }
        if self.slow_dirty {
            self.settle_slow();
        }
        best.min(self.slow_best)
    }

    /// Moves the clock to `time` ns if it is earlier: another schedule's event at `time`
    /// acts on this one (a hop's call begins, a hop's call ends). Never moves it back.
    pub fn advance_to(&mut self, time: u64) {
        self.now = self.now.max(time);
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
        if self.slow_dirty {
            self.settle_slow();
        }
        let slow = self.slow_best < best;
        if slow {
            best = self.slow_best;
        }
        if best >= outside {
            return None;
        }
        let e = if slow {
            let id = LaneId {
                index: self.slow_from,
                slow: true,
            };
            let e = self.slow[id.index].pop();
            self.noted(id);
            e
        } else if let Some(l) = self.lanes.get_mut(from) {
            let e = l.pop();
            self.heads[from] = l.head();
            e
        } else {
            self.calendar.pop()
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

    /// Slow lanes, an event kept outside and events pushed later with a sequence number
    /// taken earlier pop in the same `(time, seq)` order as the rest.
    #[test]
    fn slow_lanes_and_outside_events_keep_the_order() {
        let mut s = Schedule::new();
        let fast = s.add_lane(Duration::from_nanos(5));
        let slow = s.add_slow_lane(Duration::from_nanos(10));
        let slower = s.add_slow_lane(Duration::from_nanos(20));
        let early = s.reserve(); // t 10, before 1
        s.via(slow, 1); // t 10
        s.via(slower, 2); // t 20
        s.via(fast, 3); // t 5
        s.via(slow, 4); // t 10, after 1
        let outside = s.key_outside(10); // t 10, after 4
        s.at(10, 6); // t 10, after the outside one
        s.at_in_order_reserved(slow, 10, early, 0); // behind 4 on the lane: on the calendar
        assert_eq!(s.pop_before(outside), Some((5, 3)));
        assert_eq!(s.pop_before(outside), Some((10, 0)));
        assert_eq!(s.pop_before(outside), Some((10, 1)));
        assert_eq!(s.pop_before(outside), Some((10, 4)));
        assert_eq!(s.pop_before(outside), None);
        s.run_outside(outside);
        let got: Vec<_> = std::iter::from_fn(|| s.pop()).collect();
        assert_eq!(got, [(10, 6), (20, 2)]);
        assert_eq!((s.events(), s.pending(), s.now()), (7, 0, 20));
    }
}
