//! A map for the ids herd hands out in increasing order (units, logical requests), stored
//! as a ring indexed by `id - oldest id in the ring`, with the few long-lived entries
//! moved out to a hash map.
//!
//! Why not a hash map: ids are handed out in time order and most entries are removed soon
//! after they are inserted, so the live ones sit in a narrow, moving window. A hash map
//! scatters neighbouring ids over the whole table (with a million consumers, a cache miss
//! on every lookup); the ring keeps them in the order they were created, so the entries an
//! event touches are next to the ones the events just before it touched.
//!
//! Why the window is bounded: a ring is as wide as its oldest entry is old, and a few
//! entries live long (a unit that waits 30 s for its give-up, with a million more behind
//! it). A ring millions of slots wide is cold all over: the slot a new id takes was last
//! touched a lap of the buffer ago, and the front walks over slots emptied long since.
//! So the ring spans at most [`WINDOW`] ids; when a new id would make it wider, the front
//! moves up to make room and the entries it passes move to a hash map (the stragglers: a
//! few percent at most, and not the entries events touch often). The ring's buffer then
//! stays small enough to stay in cache.
//!
//! Why a fixed buffer indexed by `id & mask`: the id's slot is one mask away, with no
//! pushes and pops at the ends and no wrap-around arithmetic of a `VecDeque` on every
//! access. The buffer doubles (up to [`WINDOW`] slots) only while the span outgrows it,
//! so a small run keeps a small one.
//!
//! Looked up by id, never iterated, like [`super::id_map::IdMap`]: the order of a ring
//! could not leak into a result anyway, but nothing relies on it.

use super::id_map::IdMap;

/// How many consecutive ids the ring spans at most; older entries wait in the spill map.
/// At 100,000 new ids a second, 0.16 s: longer than most units of work and logical
/// requests live. (Measured under cachegrind on `herd sim internet`, 1.5 M units: 2^14
/// takes 29% fewer last-level cache misses than 2^15 for 0.7% more instructions, and 53%
/// fewer than 2^17.)
pub const WINDOW: usize = 1 << 14;

/// Entries keyed by `u64` ids that are inserted mostly in increasing order.
#[derive(Debug, Clone)]
pub struct IdRing<V> {
    /// The ring spans the ids `base..end` (`end - base <= slots.len()`); every slot
    /// outside the span is empty.
    base: u64,
    end: u64,
    /// The entry of id `i` of the span is at `i & (slots.len() - 1)`; the length is 0 or a
    /// power of two, at most [`WINDOW`].
    slots: Vec<Option<V>>,
    /// Entries in `slots`.
    in_ring: usize,
    /// Entries whose id is outside the span: below `base` (they spilled, or came late), or
    /// `u64::MAX`, which no span can end after.
    spilled: IdMap<V>,
}

impl<V> Default for IdRing<V> {
    fn default() -> Self {
        IdRing {
            base: 0,
            end: 0,
            slots: Vec::new(),
            in_ring: 0,
            spilled: IdMap::default(),
        }
    }
}

impl<V> IdRing<V> {
    /// Entries held.
    pub fn len(&self) -> usize {
        self.in_ring + self.spilled.len()
    }

    /// Whether no entry is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The slot of `id`, which must be in the span.
    #[inline]
    fn at(&self, id: u64) -> usize {
        id as usize & (self.slots.len() - 1)
    }

    #[inline]
    fn in_span(&self, id: u64) -> bool {
        self.base <= id && id < self.end
    }

    /// The entry of `id`.
    #[inline]
    pub fn get(&self, id: u64) -> Option<&V> {
        if self.in_span(id) {
            self.slots[self.at(id)].as_ref()
        } else if id < self.base || id == u64::MAX {
            self.spilled.get(&id)
        } else {
            None
        }
    }

    /// The entry of `id`, mutably.
    #[inline]
    pub fn get_mut(&mut self, id: u64) -> Option<&mut V> {
        if self.in_span(id) {
            let i = self.at(id);
            self.slots[i].as_mut()
        } else if id < self.base || id == u64::MAX {
            self.spilled.get_mut(&id)
        } else {
            None
        }
    }

    /// Sets the entry of `id`, returning the one it replaces. An id below the ring goes to
    /// the spill map (correct, but not what the ring is for).
    #[inline(always)]
    pub fn insert(&mut self, id: u64, v: V) -> Option<V> {
        // Nearly always the id after the newest, in a ring that holds entries and has a
        // slot for it within the window: that slot is empty (it is outside the span), and
        // nothing else moves.
        if id == self.end
            && self.in_ring != 0
            && id - self.base < self.slots.len() as u64
            && id != u64::MAX
        {
            let i = self.at(id);
            self.slots[i] = Some(v);
            self.end = id + 1;
            self.in_ring += 1;
            return None;
        }
        self.insert_other(id, v)
    }

    /// [`IdRing::insert`] of any other id.
    #[inline]
    fn insert_other(&mut self, id: u64, v: V) -> Option<V> {
        // An empty ring starts again at `id`, but never goes back below ids that spilled:
        // every id in the spill map stays below `base`.
        if self.in_ring == 0 && id >= self.base {
            self.base = id;
            self.end = id;
        }
        if id < self.base || id == u64::MAX {
            return self.spilled.insert(id, v);
        }
        if id >= self.end {
            if id - self.base >= WINDOW as u64 {
                self.make_room(id);
            }
            let span = (id + 1 - self.base) as usize;
            if span > self.slots.len() {
                self.grow(span);
            }
            self.end = id + 1;
        }
        let i = self.at(id);
        let old = self.slots[i].replace(v);
        if old.is_none() {
            self.in_ring += 1;
        }
        old
    }

    /// Removes and returns the entry of `id`; the ring's front moves past the empty slots.
    #[inline]
    pub fn remove(&mut self, id: u64) -> Option<V> {
        if !self.in_span(id) {
            if id < self.base || id == u64::MAX {
                return self.spilled.remove(&id);
            }
            return None;
        }
        let i = self.at(id);
        let v = self.slots[i].take()?;
        self.in_ring -= 1;
        if id == self.base {
            self.trim();
        }
        Some(v)
    }

    /// Moves the front up so that the span can take `id` (`id - base >= WINDOW`): the
    /// entries it passes spill.
    fn make_room(&mut self, id: u64) {
        let new_base = id + 1 - WINDOW as u64;
        let stop = self.end.min(new_base);
        while self.base < stop {
            let i = self.at(self.base);
            if let Some(v) = self.slots[i].take() {
                self.in_ring -= 1;
                self.spilled.insert(self.base, v);
            }
            self.base += 1;
        }
        self.base = new_base;
        self.end = self.end.max(new_base);
        self.trim();
    }

    /// A buffer of at least `span` slots (a power of two, at most [`WINDOW`]), the entries
    /// moved to their new places.
    fn grow(&mut self, span: usize) {
        let n = span.next_power_of_two().clamp(16, WINDOW);
        let mut slots: Vec<Option<V>> = Vec::with_capacity(n);
        slots.resize_with(n, || None);
        if !self.slots.is_empty() {
            for id in self.base..self.end {
                let i = self.at(id);
                slots[id as usize & (n - 1)] = self.slots[i].take();
            }
        }
        self.slots = slots;
    }

    /// Moves the front past the empty slots.
    fn trim(&mut self) {
        while self.base < self.end && self.slots[self.at(self.base)].is_none() {
            self.base += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_map_by_id() {
        let mut r = IdRing::default();
        r.insert(7, "a");
        r.insert(8, "b");
        assert_eq!(r.remove(7), Some("a"));
        assert_eq!(r.get(7), None);
        assert_eq!(r.get(8), Some(&"b"));
        assert_eq!(r.len(), 1);
    }

    #[test]
    fn behaves_as_a_map_whatever_the_order() {
        let mut r = IdRing::default();
        let mut m = std::collections::BTreeMap::new();
        let mut x: u64 = 1;
        for step in 0..20_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let id = step / 2 + (x >> 60); // mostly increasing, some out of order
            if x >> 63 == 0 {
                assert_eq!(r.insert(id, step), m.insert(id, step));
            } else {
                let old = id.saturating_sub(x >> 58 & 31);
                assert_eq!(r.remove(old), m.remove(&old));
            }
            assert_eq!(r.len(), m.len());
            assert_eq!(r.get(id), m.get(&id));
        }
        // Emptied, the ring holds no slot.
        let ids: Vec<u64> = m.keys().copied().collect();
        for id in ids {
            assert_eq!(r.remove(id), m.remove(&id));
        }
        assert!(r.is_empty());
        assert_eq!(r.base, r.end);
        assert_eq!(r.insert(3, 1), None);
        assert_eq!(r.get_mut(3), Some(&mut 1));
        assert!(r.get(3).is_some() && r.get(2).is_none());
    }

    #[test]
    fn behaves_as_a_map_when_entries_spill() {
        let mut r = IdRing::default();
        let mut m = std::collections::BTreeMap::new();
        let mut x: u64 = 7;
        let mut next = 0u64;
        for step in 0..200_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            match x >> 61 {
                // Mostly the next id; now and then one far back or far ahead.
                0..=3 => {
                    next += 1 + (x >> 59 & 1);
                    assert_eq!(r.insert(next, step), m.insert(next, step));
                }
                4 => {
                    let id = next.saturating_sub(x >> 40 & 0xF_FFFF);
                    assert_eq!(r.insert(id, step), m.insert(id, step));
                }
                5 if x & 0xFF == 0 => {
                    next += WINDOW as u64 + (x >> 50 & 0xFFF);
                    assert_eq!(r.insert(next, step), m.insert(next, step));
                }
                _ => {
                    let id = next.saturating_sub(x >> 44 & 0x7FFF);
                    assert_eq!(r.remove(id), m.remove(&id));
                }
            }
            assert_eq!(r.len(), m.len());
            let probe = next.saturating_sub(x >> 30 & 0x3_FFFF);
            assert_eq!(r.get(probe), m.get(&probe), "step {step}");
        }
        let ids: Vec<u64> = m.keys().copied().collect();
        for id in ids {
            assert_eq!(r.remove(id), m.remove(&id));
        }
        assert!(r.is_empty());
    }

    #[test]
    fn an_emptied_ring_never_hides_a_spilled_entry() {
        let mut r = IdRing::default();
        let w = WINDOW as u64;
        for id in 10..=10 + w {
            r.insert(id, id); // 10 spills
        }
        for id in 11..=10 + w {
            r.remove(id); // the ring empties
        }
        r.insert(5, 5); // below a spilled id, into an empty ring
        assert_eq!((r.get(10), r.get(5), r.len()), (Some(&10), Some(&5), 2));
    }

    #[test]
    fn long_lived_entries_spill_and_the_ring_stays_narrow() {
        let mut r = IdRing::default();
        let n = 3 * WINDOW as u64;
        for id in 0..n {
            r.insert(id, id);
            // Most entries go soon; one in a thousand stays.
            if id >= 5 && (id - 5) % 1000 != 0 {
                r.remove(id - 5);
            }
        }
        assert!(r.slots.len() <= WINDOW);
        assert!(!r.spilled.is_empty());
        for id in (0..n).step_by(1000) {
            assert_eq!(r.get(id), Some(&id), "{id}");
        }
        let before = r.len();
        assert_eq!(r.remove(0), Some(0));
        assert_eq!(r.len(), before - 1);
        // An id far ahead of the ring spills the ring whole.
        r.insert(n + 10 * WINDOW as u64, 8);
        assert_eq!(r.get(n - 1), Some(&(n - 1)));
        assert_eq!(r.remove(n + 10 * WINDOW as u64), Some(8));
        r.insert(u64::MAX - 1, 7);
        assert_eq!(r.get(n - 1), Some(&(n - 1)));
        assert_eq!(r.get(u64::MAX - 1), Some(&7));
        assert_eq!(r.remove(u64::MAX - 1), Some(7));
    }
}
