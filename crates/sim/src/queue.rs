//! The calendar queue: the simulator's store of events with arbitrary delays.
//!
//! # Why not a binary heap
//!
//! A heap costs `O(log n)` cache-missing steps per operation on *all* pending events; at a
//! million pending events that is what limits a simulator (measured here: 11.7M events/s
//! at 10k pending but 2.0M at 1M). Most events here are due within a few seconds,
//! so time is cut into buckets of `2^shift` ns on a ring of `2^k` buckets (a timing wheel):
//!
//! - an event due in a future bucket on the ring is pushed onto that bucket's `Vec`, O(1);
//! - only the bucket being drained is ordered, and only a little at a time: it is cut
//!   into 64 sub-buckets (16 µs at the simulator's geometry), and each sub-bucket is
//!   sorted when the cursor reaches it (see `Drain`), so ordering work is paid on the
//!   few events due within one sub-bucket, not on everything pending;
//! - events beyond the ring's horizon wait in a `far` heap and move onto the ring once,
//!   when the ring turns far enough to hold them;
//! - a bitmap of non-empty buckets lets the cursor skip idle stretches 64 buckets a word.
//!
//! Order is total and deterministic: by time, then by the sequence number the caller gives
//! (the [`crate::Schedule`] hands out one per insertion), so equal times pop in insertion
//! order and a run is byte-for-byte repeatable.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// One scheduled item: due at `time` (ns), ordered among equals by `seq`.
#[derive(Debug)]
pub struct Entry<T> {
    /// When it is due, ns of virtual time.
    pub time: u64,
    /// Tie-breaker: lower pops first at equal `time`.
    pub seq: u64,
    /// The payload.
    pub item: T,
}

impl<T> Entry<T> {
    /// The ordering key.
    pub fn key(&self) -> (u64, u64) {
        (self.time, self.seq)
    }

    /// The ordering key as one number (one compare instead of a branch per field).
    fn wide_key(&self) -> u128 {
        u128::from(self.time) << 64 | u128::from(self.seq)
    }
}

impl<T> PartialEq for Entry<T> {
    fn eq(&self, o: &Self) -> bool {
        self.key() == o.key()
    }
}
impl<T> Eq for Entry<T> {}
impl<T> PartialOrd for Entry<T> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<T> Ord for Entry<T> {
    /// Reversed, so that `BinaryHeap` (a max-heap) pops the earliest entry.
    fn cmp(&self, o: &Self) -> Ordering {
        o.wide_key().cmp(&self.wide_key())
    }
}

/// A min-queue of [`Entry`]s by `(time, seq)`, bucketed on a timing wheel.
///
/// ```
/// use herd_sim::queue::{CalendarQueue, Entry};
/// let mut q = CalendarQueue::new();
/// q.push(Entry { time: 5_000_000_000, seq: 0, item: "late" });
/// q.push(Entry { time: 10, seq: 2, item: "b" });
/// q.push(Entry { time: 10, seq: 1, item: "a" });
/// let order: Vec<_> = std::iter::from_fn(|| q.pop().map(|e| e.item)).collect();
/// assert_eq!(order, ["a", "b", "late"]);
/// ```
#[derive(Debug)]
pub struct CalendarQueue<T> {
    /// log2 of a bucket's width in ns.
    shift: u32,
    /// Ring size − 1 (the ring has a power-of-two number of buckets).
    mask: u64,
    /// Absolute number (`time >> shift`) of the bucket in `current`.
    cursor: u64,
    /// Every entry whose bucket is at or before `cursor`.
    current: Drain<T>,
    /// Buckets `cursor + 1 ..= cursor + mask`, unsorted, at index `bucket & mask`.
    wheel: Vec<Vec<Entry<T>>>,
    /// Bit `i` set when `wheel[i]` is non-empty.
    occupied: Vec<u64>,
    /// The allocations of buckets drained, for the next buckets to fill: a slot that
    /// starts empty takes one rather than growing from nothing, so the ring's buffers are
    /// the few dozen that the buckets in use need, reused while still warm, rather than
    /// one per slot (16,384 of them, each grown step by step the first time round).
    spare: Vec<Vec<Entry<T>>>,
    /// Entries on the wheel.
    in_wheel: usize,
    /// Entries beyond the ring's horizon.
    far: BinaryHeap<Entry<T>>,
}

impl<T> Default for CalendarQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> CalendarQueue<T> {
    /// The simulator's geometry: ~1.05 ms buckets (2^20 ns) on a ring of 16384, a horizon of
    /// ~17 s, which holds attempt timeouts, service times and most backoffs.
    pub fn new() -> Self {
        Self::with_geometry(20, 14)
    }

    /// Buckets of `2^shift` ns on a ring of `2^ring_log2` buckets (at least 64, so the
    /// bitmap is whole words; smaller values are raised to 64).
    pub fn with_geometry(shift: u32, ring_log2: u32) -> Self {
        let shift = shift.min(63);
        let n = 1usize << ring_log2.clamp(6, 30);
        CalendarQueue {
            shift,
            mask: n as u64 - 1,
            cursor: 0,
            current: Drain::new(shift),
            wheel: (0..n).map(|_| Vec::new()).collect(),
            occupied: vec![0; n / 64],
            spare: Vec::new(),
            in_wheel: 0,
            far: BinaryHeap::new(),
        }
    }

    /// Entries queued.
    pub fn len(&self) -> usize {
        self.current.len + self.in_wheel + self.far.len()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Queues `e`. Any time is accepted, even one before the last popped entry (it then
    /// pops next, in `(time, seq)` order with the others in the current bucket).
    #[inline]
    pub fn push(&mut self, e: Entry<T>) {
        let b = e.time >> self.shift;
        if b <= self.cursor {
            self.current.push(e);
        } else if b - self.cursor <= self.mask {
            let i = (b & self.mask) as usize;
            let bucket = &mut self.wheel[i];
            if bucket.capacity() == 0 {
                if let Some(v) = self.spare.pop() {
                    *bucket = v;
                }
            }
            bucket.push(e);
            self.occupied[i / 64] |= 1 << (i % 64);
            self.in_wheel += 1;
        } else {
            self.far.push(e);
        }
    }

    /// The earliest entry, turning the wheel to it if needed.
    #[inline]
    pub fn peek(&mut self) -> Option<&Entry<T>> {
        if self.current.len == 0 {
            self.advance();
        }
        self.current.peek()
    }

    /// The earliest entry's key, `time << 64 | seq` ([`crate::lane::key`]), or
    /// [`crate::lane::EMPTY`]: [`CalendarQueue::peek`] without reading the entry.
    #[inline]
    pub fn head(&mut self) -> u128 {
        if self.current.len == 0 {
            self.advance();
        }
        self.current.head
    }

    /// Removes and returns the earliest entry.
    #[inline]
    pub fn pop(&mut self) -> Option<Entry<T>> {
        if self.current.len == 0 {
            self.advance();
        }
        self.current.pop()
    }

    /// Moves the cursor to the next non-empty bucket and makes it the current one.
    fn advance(&mut self) {
        if self.in_wheel > 0 {
            let from = (self.cursor & self.mask) as usize;
            let Some(i) = self.next_occupied(from) else {
                return;
            };
            self.cursor += (i as u64).wrapping_sub(from as u64) & self.mask;
            self.occupied[i / 64] &= !(1 << (i % 64));
            self.current.start(self.cursor);
            let mut bucket = std::mem::take(&mut self.wheel[i]);
            self.in_wheel -= bucket.len();
            for e in bucket.drain(..) {
                self.current.push(e);
            }
            // Keep the emptied bucket's allocation for the next bucket to fill.
            self.spare.push(bucket);
        } else if let Some(top) = self.far.peek() {
            self.cursor = top.time >> self.shift;
            self.current.start(self.cursor);
        } else {
            return;
        }
        self.pull_far();
        self.current.settle();
    }

    /// Moves far entries that the ring now covers onto it (or into the current heap).
    fn pull_far(&mut self) {
        while let Some(top) = self.far.peek() {
            if (top.time >> self.shift).saturating_sub(self.cursor) > self.mask {
                return;
            }
            if let Some(e) = self.far.pop() {
                self.push(e);
            }
        }
    }

    /// The first occupied ring index after `from`, going round once.
    fn next_occupied(&self, from: usize) -> Option<usize> {
        let n = self.wheel.len();
        let mut i = (from + 1) & self.mask as usize;
        let mut scanned = 0;
        while scanned < n + 64 {
            let bits = self.occupied[i / 64] >> (i % 64);
            if bits != 0 {
                return Some(i + bits.trailing_zeros() as usize);
            }
            let step = 64 - i % 64;
            i = (i + step) & self.mask as usize;
            scanned += step;
        }
        None
    }
}

/// The bucket being drained, cut into `2^bits` sub-buckets of `2^(shift - bits)` ns.
///
/// Why not a binary heap of the whole bucket: at 100,000 units/s a 1 ms bucket holds a
/// hundred or more events (mostly the upstream's service completions, whose times are
/// spread at random), and a heap pays `log2` of that in sifts of 40-byte entries at every
/// pop. Cut 64 ways, a sub-bucket holds a few entries; it is sorted (latest first) when
/// the drain reaches it and then popped from its end, so a pop is one `Vec::pop`, and the
/// ordering work is a sort of a few entries. An entry pushed into the sub-bucket being
/// drained (or before it: the past, which pops next) is inserted in its sorted place; one
/// pushed into a later sub-bucket waits there unsorted. Entries due at one instant (the
/// end of a hold) all land in one sub-bucket and are sorted once, in `O(n log n)`.
#[derive(Debug)]
struct Drain<T> {
    /// log2 of a sub-bucket's width in ns.
    sub_shift: u32,
    /// log2 of the number of sub-buckets.
    bits: u32,
    /// Absolute number (`time >> sub_shift`) of `subs[0]`.
    first: u64,
    subs: Vec<Vec<Entry<T>>>,
    /// Bit `j` set when `subs[j]` holds entries not yet sorted: only ever for `j > at`
    /// while `ready`.
    pending: u64,
    /// The sub-bucket being drained: every earlier one is empty.
    at: usize,
    /// Whether `subs[at]` is sorted, latest first (false while a bucket is poured in).
    ready: bool,
    /// While `ready`, the key of the earliest entry, [`crate::lane::EMPTY`] when there is
    /// none: what the schedule compares with its lanes' heads at every pop.
    head: u128,
    len: usize,
}

impl<T> Drain<T> {
    fn new(shift: u32) -> Self {
        let bits = shift.min(6);
        Drain {
            sub_shift: shift - bits,
            bits,
            first: 0,
            subs: (0..1 << bits).map(|_| Vec::new()).collect(),
            pending: 0,
            at: 0,
            ready: true,
            head: crate::lane::EMPTY,
            len: 0,
        }
    }

    /// Starts pouring in bucket `bucket` (the drain must be empty); [`Drain::settle`] ends it.
    #[inline]
    fn start(&mut self, bucket: u64) {
        self.first = bucket << self.bits;
        self.at = 0;
        self.ready = false;
    }

    /// Ready to pop again after [`Drain::start`] and the pushes that followed it.
    #[inline]
    fn settle(&mut self) {
        self.ready = true;
        self.next();
    }

    #[inline(always)]
    fn push(&mut self, e: Entry<T>) {
        let j = (e.time >> self.sub_shift)
            .saturating_sub(self.first)
            .min((1 << self.bits) - 1) as usize;
        let mut j = j.max(self.at);
        self.len += 1;
        if self.ready {
            if self.subs[self.at].is_empty() {
                // Nothing is left anywhere (`pending` is 0): start from `j`.
                self.at = j;
            }
            j = j.max(self.at);
            if j == self.at {
                let k = e.wide_key();
                let v = &mut self.subs[j];
                let i = v.partition_point(|x| x.wide_key() > k);
                v.insert(i, e);
                self.head = self.head.min(k);
                return;
            }
        }
        self.subs[j].push(e);
        self.pending |= 1 << j;
    }

    /// Moves to the first sub-bucket with entries not yet sorted, sorts it and notes its
    /// head (`subs[at]` must be empty, or unsorted and marked pending).
    fn next(&mut self) {
        if self.pending == 0 {
            self.head = crate::lane::EMPTY;
            return;
        }
        let j = self.pending.trailing_zeros() as usize;
        self.pending &= !(1 << j);
        self.at = j;
        let v = &mut self.subs[j];
        v.sort_unstable_by_key(|e| std::cmp::Reverse(e.wide_key()));
        self.head = v.last().map_or(crate::lane::EMPTY, Entry::wide_key);
    }

    #[inline]
    fn peek(&self) -> Option<&Entry<T>> {
        self.subs[self.at].last()
    }

    #[inline]
    fn pop(&mut self) -> Option<Entry<T>> {
        let v = &mut self.subs[self.at];
        let e = v.pop()?;
        self.len -= 1;
        match v.last() {
            Some(x) => self.head = x.wide_key(),
            None => self.next(),
        }
        Some(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_pcg::Pcg64Mcg;
    use std::cmp::Reverse;

    fn drain<T>(q: &mut CalendarQueue<T>) -> Vec<(u64, u64)> {
        std::iter::from_fn(|| q.pop().map(|e| e.key())).collect()
    }

    #[test]
    fn orders_by_time_then_sequence() {
        let mut q = CalendarQueue::with_geometry(4, 6);
        let keys = [
            (50, 3),
            (50, 1),
            (7, 9),
            (100_000, 0),
            (50, 2),
            (0, 8),
            (16, 4),
        ];
        for (t, s) in keys {
            q.push(Entry {
                time: t,
                seq: s,
                item: (),
            });
        }
        assert_eq!(q.len(), keys.len());
        let mut want = keys.to_vec();
        want.sort();
        assert_eq!(drain(&mut q), want);
        assert!(q.is_empty() && q.pop().is_none());
    }

    #[test]
    fn ties_pop_in_insertion_order_across_the_ring_and_far() {
        let mut q = CalendarQueue::with_geometry(3, 6);
        // Same instant, one in the current bucket, the rest queued later from far away.
        for s in 0..100u64 {
            q.push(Entry {
                time: 1 << 20,
                seq: s,
                item: s,
            });
        }
        let items: Vec<_> = std::iter::from_fn(|| q.pop().map(|e| e.item)).collect();
        assert_eq!(items, (0..100).collect::<Vec<_>>());
    }

    #[test]
    fn pushing_before_the_cursor_still_pops_first() {
        let mut q = CalendarQueue::with_geometry(4, 6);
        q.push(Entry {
            time: 1000,
            seq: 0,
            item: (),
        });
        assert_eq!(q.peek().map(|e| e.time), Some(1000));
        q.push(Entry {
            time: 20,
            seq: 1,
            item: (),
        });
        assert_eq!(drain(&mut q), [(20, 1), (1000, 0)]);
    }

    /// A calendar queue and a `BinaryHeap` fed the same entries, popped side by side.
    struct Twin {
        q: CalendarQueue<u64>,
        reference: BinaryHeap<Reverse<(u64, u64)>>,
        seq: u64,
    }

    impl Twin {
        fn new(shift: u32, ring: u32) -> Twin {
            Twin {
                q: CalendarQueue::with_geometry(shift, ring),
                reference: BinaryHeap::new(),
                seq: 0,
            }
        }

        fn push(&mut self, time: u64) {
            let seq = self.seq;
            self.q.push(Entry {
                time,
                seq,
                item: seq,
            });
            self.reference.push(Reverse((time, seq)));
            self.seq += 1;
        }

        /// Pops both and requires the same entry; its time, if any.
        fn pop(&mut self, what: &str) -> Option<u64> {
            let got = self.q.pop().map(|e| (e.time, e.item));
            let want = self.reference.pop().map(|Reverse(k)| k);
            assert_eq!(got, want, "{what}");
            assert_eq!(self.q.len(), self.reference.len(), "{what}");
            got.map(|(t, _)| t)
        }

        fn drain(&mut self, what: &str) {
            while !self.reference.is_empty() {
                self.pop(what);
            }
            assert!(self.q.pop().is_none(), "{what}");
        }
    }

    /// Interleaved pushes and pops, never into the past, against a `BinaryHeap` reference,
    /// for several geometries (tiny rings force traffic through `far`).
    #[test]
    fn matches_a_binary_heap_on_random_workloads() {
        for (seed, shift, ring) in [(1, 4, 6), (2, 10, 6), (3, 20, 14), (4, 0, 8), (5, 16, 10)] {
            let mut rng = Pcg64Mcg::seed_from_u64(seed);
            let mut twin = Twin::new(shift, ring);
            let mut now = 0u64;
            for step in 0..200_000 {
                let pushes = if step % 1000 < 500 { 2 } else { 1 };
                for _ in 0..pushes {
                    let delay = match rng.random_range(0..10) {
                        0 => 0,
                        1..=6 => rng.random_range(0..2_000_000),
                        7 | 8 => rng.random_range(0..5_000_000_000),
                        _ => rng.random_range(0..1u64 << 40),
                    };
                    twin.push(now + delay);
                }
                if rng.random_bool(0.6) {
                    if let Some(t) = twin.pop(&format!("seed {seed} step {step}")) {
                        now = t;
                    }
                }
            }
            twin.drain(&format!("seed {seed} drain"));
        }
    }

    /// Pushes into the past and bursts at one instant (a hold's end) among ordinary
    /// traffic: the drain's sorted inserts and its one-sort-per-sub-bucket path.
    #[test]
    fn past_times_and_bursts_match_a_binary_heap() {
        for (seed, shift, ring) in [(6, 20, 14), (7, 4, 6), (8, 10, 8)] {
            let mut rng = Pcg64Mcg::seed_from_u64(seed);
            let mut twin = Twin::new(shift, ring);
            let mut now = 0u64;
            for step in 0..50_000 {
                let n = if step % 5000 == 0 { 500 } else { 1 };
                let burst = now + rng.random_range(0..3_000_000);
                for _ in 0..n {
                    let t = match rng.random_range(0..10) {
                        0 => now.saturating_sub(rng.random_range(0..2_000_000)),
                        _ if n > 1 => burst,
                        _ => now + rng.random_range(0..4_000_000),
                    };
                    twin.push(t);
                }
                if rng.random_bool(0.55) {
                    if let Some(t) = twin.pop(&format!("seed {seed} step {step}")) {
                        now = now.max(t);
                    }
                }
            }
            twin.drain(&format!("seed {seed} drain"));
        }
    }
}
