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
//! - only the bucket being drained is a heap, so ordering work is paid per bucket
//!   (`log` of the events due within one bucket width, not of everything pending);
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
    /// Every entry whose bucket is at or before `cursor`, as a heap.
    current: BinaryHeap<Entry<T>>,
    /// Buckets `cursor + 1 ..= cursor + mask`, unsorted, at index `bucket & mask`.
    wheel: Vec<Vec<Entry<T>>>,
    /// Bit `i` set when `wheel[i]` is non-empty.
    occupied: Vec<u64>,
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
            current: BinaryHeap::new(),
            wheel: (0..n).map(|_| Vec::new()).collect(),
            occupied: vec![0; n / 64],
            in_wheel: 0,
            far: BinaryHeap::new(),
        }
    }

    /// Entries queued.
    pub fn len(&self) -> usize {
        self.current.len() + self.in_wheel + self.far.len()
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
            self.wheel[i].push(e);
            self.occupied[i / 64] |= 1 << (i % 64);
            self.in_wheel += 1;
        } else {
            self.far.push(e);
        }
    }

    /// The earliest entry, turning the wheel to it if needed.
    #[inline]
    pub fn peek(&mut self) -> Option<&Entry<T>> {
        if self.current.is_empty() {
            self.advance();
        }
        self.current.peek()
    }

    /// Removes and returns the earliest entry.
    #[inline]
    pub fn pop(&mut self) -> Option<Entry<T>> {
        if self.current.is_empty() {
            self.advance();
        }
        self.current.pop()
    }

    /// Moves the cursor to the next non-empty bucket and makes it the current heap.
    fn advance(&mut self) {
        if self.in_wheel > 0 {
            let from = (self.cursor & self.mask) as usize;
            let Some(i) = self.next_occupied(from) else {
                return;
            };
            self.cursor += (i as u64).wrapping_sub(from as u64) & self.mask;
            self.occupied[i / 64] &= !(1 << (i % 64));
            let bucket = std::mem::take(&mut self.wheel[i]);
            self.in_wheel -= bucket.len();
            let spent = std::mem::replace(&mut self.current, BinaryHeap::from(bucket));
            // Keep the emptied heap's allocation for the bucket that will reuse the slot.
            self.wheel[i] = spent.into_vec();
        } else if let Some(top) = self.far.peek() {
            self.cursor = top.time >> self.shift;
        } else {
            return;
        }
        self.pull_far();
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

    /// Interleaved pushes and pops, never into the past, against a `BinaryHeap` reference,
    /// for several geometries (tiny rings force traffic through `far`).
    #[test]
    fn matches_a_binary_heap_on_random_workloads() {
        for (seed, shift, ring) in [(1, 4, 6), (2, 10, 6), (3, 20, 14), (4, 0, 8), (5, 16, 10)] {
            let mut rng = Pcg64Mcg::seed_from_u64(seed);
            let mut q = CalendarQueue::with_geometry(shift, ring);
            let mut reference = BinaryHeap::new();
            let (mut now, mut seq) = (0u64, 0u64);
            for step in 0..200_000 {
                let pushes = if step % 1000 < 500 { 2 } else { 1 };
                for _ in 0..pushes {
                    let delay = match rng.random_range(0..10) {
                        0 => 0,
                        1..=6 => rng.random_range(0..2_000_000),
                        7 | 8 => rng.random_range(0..5_000_000_000),
                        _ => rng.random_range(0..1u64 << 40),
                    };
                    let t = now + delay;
                    q.push(Entry {
                        time: t,
                        seq,
                        item: seq,
                    });
                    reference.push(Reverse((t, seq)));
                    seq += 1;
                }
                if rng.random_bool(0.6) {
                    let got = q.pop().map(|e| (e.time, e.item));
                    let want = reference.pop().map(|Reverse(k)| k);
                    assert_eq!(got, want, "seed {seed} step {step}");
                    if let Some((t, _)) = got {
                        now = t;
                    }
                }
                assert_eq!(q.len(), reference.len());
            }
            while let Some(Reverse(k)) = reference.pop() {
                assert_eq!(q.pop().map(|e| e.key()), Some(k), "seed {seed} drain");
            }
            assert!(q.pop().is_none());
        }
    }
}
