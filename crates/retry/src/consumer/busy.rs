//! The consumers with something going on under a cap: each one's live logical requests
//! (counted against `max_in_flight`) and its line of waiting units, in one entry.
//!
//! Why one map and not two: under a cap every unit asks both questions at its consumer
//! (is there room? is anybody waiting?) when it arrives, and again when its request ends
//! (one fewer live, is there a line to move?). With the count and the line in two maps
//! that was about six hash look-ups a unit; with both in one entry it is one at the
//! arrival and one at the end, and the answer "nobody waits here" comes with the second,
//! so the end of a request at a consumer without a line asks nothing more.
//!
//! Why a map of the few consumers with an entry rather than an array of all: with a
//! million consumers, each active for milliseconds every few seconds, an array was a
//! cache miss on every unit; the map of the active ones (a few thousand) stays in cache.
//! Without a cap nothing is counted and nobody waits, so the map stays empty and costs
//! nothing.

use super::id_map::IdMap;
use std::collections::hash_map::Entry;
use std::collections::VecDeque;

/// One consumer's live requests and waiting units; kept only while either is non-zero.
#[derive(Debug, Default)]
struct Busy {
    in_flight: u32,
    line: VecDeque<u64>,
}

/// The consumers that have live requests counted or units waiting, by consumer.
#[derive(Debug)]
pub(super) struct BusyConsumers {
    /// The cap on live logical requests per consumer (`0`: none, and the map stays empty).
    cap: u32,
    map: IdMap<Busy>,
}

impl BusyConsumers {
    pub(super) fn new(cap: u32) -> Self {
        BusyConsumers {
            cap,
            map: IdMap::default(),
        }
    }

    /// Whether no consumer has an entry (always so without a cap).
    #[inline]
    pub(super) fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// A new unit arrives at `consumer`: counted as sent if the consumer has room and
    /// nobody waits there (`true`), else put at the back of its line (`false`). One look-up.
    #[inline]
    pub(super) fn admit(&mut self, consumer: u32, unit: u64) -> bool {
        if self.cap == 0 {
            return true;
        }
        let b = self.map.entry(u64::from(consumer)).or_default();
        if b.in_flight < self.cap && b.line.is_empty() {
            b.in_flight += 1;
            true
        } else {
            b.line.push_back(unit);
            false
        }
    }

    /// Whether `consumer` may send a unit now: it has room and, unless the unit is a
    /// re-send (which goes ahead of the line), nobody waits there.
    #[inline]
    pub(super) fn may_send(&self, consumer: u32, resend: bool) -> bool {
        if self.map.is_empty() {
            return true; // nothing counted, nobody waits (always so without a cap)
        }
        match self.map.get(&u64::from(consumer)) {
            Some(b) => b.in_flight < self.cap && (resend || b.line.is_empty()),
            None => true,
        }
    }

    /// Counts a logical request of `consumer` sent.
    #[inline]
    pub(super) fn count_send(&mut self, consumer: u32) {
        if self.cap > 0 {
            self.map.entry(u64::from(consumer)).or_default().in_flight += 1;
        }
    }

    /// Puts `unit` in `consumer`'s line: at the front if it is a re-send.
    pub(super) fn line_up(&mut self, consumer: u32, unit: u64, resend: bool) {
        let line = &mut self.map.entry(u64::from(consumer)).or_default().line;
        if resend {
            line.push_front(unit);
        } else {
            line.push_back(unit);
        }
    }

    /// One of `consumer`'s live requests is over (finished or cancelled). Returns whether
    /// units wait at `consumer` (if none do, there is nothing to move up).
    #[inline]
    pub(super) fn release(&mut self, consumer: u32) -> bool {
        if self.map.is_empty() {
            return false; // nobody counted (always so without a cap): no hashing
        }
        match self.map.entry(u64::from(consumer)) {
            Entry::Occupied(mut o) => {
                let b = o.get_mut();
                b.in_flight = b.in_flight.saturating_sub(1);
                if !b.line.is_empty() {
                    return true;
                }
                if b.in_flight == 0 {
                    o.remove();
                }
                false
            }
            Entry::Vacant(_) => false,
        }
    }

    /// Takes the unit at the front of `consumer`'s line if it has room to send it.
    #[inline]
    pub(super) fn next_waiting(&mut self, consumer: u32) -> Option<u64> {
        let Entry::Occupied(mut o) = self.map.entry(u64::from(consumer)) else {
            return None;
        };
        let b = o.get_mut();
        if b.in_flight >= self.cap {
            return None;
        }
        let unit = b.line.pop_front();
        if b.line.is_empty() && b.in_flight == 0 {
            o.remove();
        }
        unit
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_lives_while_its_consumer_has_a_request_or_a_line() {
        let mut b = BusyConsumers::new(1);
        assert!(b.admit(7, 100)); // room: counted
        assert!(!b.admit(7, 101)); // at the cap: lined up
        assert!(!b.may_send(7, false) && !b.may_send(7, true));
        assert!(b.may_send(8, false)); // another consumer
        assert!(b.release(7)); // a line waits
        assert_eq!(b.next_waiting(7), Some(101));
        b.count_send(7);
        assert_eq!(b.next_waiting(7), None); // no room (and no line)
        assert!(!b.release(7));
        assert!(b.is_empty());
        // Without a cap nothing is counted and nobody waits.
        let mut free = BusyConsumers::new(0);
        assert!(free.admit(1, 1) && free.admit(1, 2) && free.may_send(1, false));
        free.count_send(1);
        assert!(!free.release(1) && free.is_empty());
    }
}
