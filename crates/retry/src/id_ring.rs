//! A map for the ids herd hands out in increasing order (units, logical requests), stored
//! as a ring indexed by `id - oldest live id`.
//!
//! Why not a hash map: ids are handed out in time order and most entries are removed soon
//! after they are inserted, so the live ones sit in a narrow, moving window. A hash map
//! scatters neighbouring ids over the whole table (with a million consumers, a cache miss
//! on every lookup); the ring keeps them in the order they were created, so the entries an
//! event touches are next to the ones the events just before it touched. The window is
//! as wide as the oldest live id is old: an entry that lives long keeps the slots after it
//! (empty or not) until it goes.
//!
//! Looked up by id, never iterated, like [`crate::id_map::IdMap`]: the order of a ring
//! could not leak into a result anyway, but nothing relies on it.

use std::collections::VecDeque;

/// Entries keyed by `u64` ids that are inserted mostly in increasing order.
///
/// ```
/// use herd_retry::id_ring::IdRing;
/// let mut r = IdRing::default();
/// r.insert(7, "a");
/// r.insert(8, "b");
/// assert_eq!(r.remove(7), Some("a"));
/// assert_eq!(r.get(7), None);
/// assert_eq!(r.get(8), Some(&"b"));
/// assert_eq!(r.len(), 1);
/// ```
#[derive(Debug, Clone)]
pub struct IdRing<V> {
    /// The id of `slots[0]`.
    base: u64,
    slots: VecDeque<Option<V>>,
    len: usize,
}

impl<V> Default for IdRing<V> {
    fn default() -> Self {
        IdRing {
            base: 0,
            slots: VecDeque::new(),
            len: 0,
        }
    }
}

impl<V> IdRing<V> {
    /// Entries held.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no entry is held.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn index(&self, id: u64) -> Option<usize> {
        let i = usize::try_from(id.checked_sub(self.base)?).ok()?;
        (i < self.slots.len()).then_some(i)
    }

    /// The entry of `id`.
    pub fn get(&self, id: u64) -> Option<&V> {
        self.slots.get(self.index(id)?)?.as_ref()
    }

    /// The entry of `id`, mutably.
    pub fn get_mut(&mut self, id: u64) -> Option<&mut V> {
        let i = self.index(id)?;
        self.slots.get_mut(i)?.as_mut()
    }

    /// Whether `id` has an entry.
    pub fn contains_key(&self, id: u64) -> bool {
        self.get(id).is_some()
    }

    /// Sets the entry of `id`, returning the one it replaces. An id below the oldest
    /// live one widens the ring at the front (correct, but not what the ring is for).
    pub fn insert(&mut self, id: u64, v: V) -> Option<V> {
        if self.slots.is_empty() {
            self.base = id;
        }
        while id < self.base {
            self.slots.push_front(None);
            self.base -= 1;
        }
        let i = usize::try_from(id - self.base).expect("an id window wider than memory");
        if i == self.slots.len() {
            // The usual case, the next id: one push, not a resize.
            self.slots.push_back(None);
        } else if i > self.slots.len() {
            self.slots.resize_with(i + 1, || None);
        }
        let old = self.slots[i].replace(v);
        if old.is_none() {
            self.len += 1;
        }
        old
    }

    /// Removes and returns the entry of `id`; the ring's front moves past the empty slots.
    pub fn remove(&mut self, id: u64) -> Option<V> {
        let i = self.index(id)?;
        let v = self.slots[i].take()?;
        self.len -= 1;
        while let Some(None) = self.slots.front() {
            self.slots.pop_front();
            self.base += 1;
        }
        Some(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(r.slots.is_empty());
        assert_eq!(r.insert(3, 1), None);
        assert_eq!(r.get_mut(3), Some(&mut 1));
        assert!(r.contains_key(3) && !r.contains_key(2));
    }
}
