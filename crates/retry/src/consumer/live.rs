//! A unit's live logical requests, for the one rule that reads them: `Abandon` cancels
//! them at a timeout and at give-up. `Reissue` leaves them to finish, so under it nothing
//! is kept. Under `Abandon` a unit has one live request at a time, so the first is held
//! inline and only a second one would allocate: with a million consumers, a heap list per
//! unit was an allocation, and a cache miss, on every unit. The rest are behind one
//! pointer (16 bytes in all, not 32) because every unit, under either rule, carries a
//! `Live` in the consumers' unit table, where a narrower entry is more units per cache line.

/// Live request ids in the order they were sent.
#[derive(Debug, Default)]
pub(super) struct Live {
    /// The oldest, or [`NONE`].
    first: u64,
    /// The others, oldest first (`None`: none, nearly always). Boxed on purpose, though a
    /// `Vec` is already on the heap: one word in every unit's entry rather than three.
    #[allow(clippy::box_collection)]
    rest: Option<Box<Vec<u64>>>,
}

/// No request (ids count up from 0 and never reach it).
const NONE: u64 = u64::MAX;

impl Live {
    pub(super) fn new() -> Self {
        Live {
            first: NONE,
            rest: None,
        }
    }

    #[inline]
    pub(super) fn push(&mut self, request: u64) {
        if self.first == NONE {
            self.first = request;
        } else {
            self.rest.get_or_insert_with(Box::default).push(request);
        }
    }

    /// Forgets `request`, keeping the others in order.
    #[inline]
    pub(super) fn remove(&mut self, request: u64) {
        if self.first == request {
            self.first = match &mut self.rest {
                Some(rest) if !rest.is_empty() => rest.remove(0),
                _ => NONE,
            };
        } else if let Some(rest) = &mut self.rest {
            rest.retain(|r| *r != request);
        }
    }

    /// The requests, oldest first.
    pub(super) fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        (self.first != NONE)
            .then_some(self.first)
            .into_iter()
            .chain(self.rest.iter().flat_map(|r| r.iter().copied()))
    }

    /// Takes every request, oldest first, leaving none.
    pub(super) fn take(&mut self) -> Vec<u64> {
        let all = self.iter().collect();
        *self = Live::new();
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stays_two_words() {
        assert_eq!(std::mem::size_of::<Live>(), 16);
    }

    #[test]
    fn keeps_the_order_sent() {
        let mut l = Live::new();
        assert_eq!(l.iter().count(), 0);
        for r in [4, 5, 6, 7] {
            l.push(r);
        }
        l.remove(4);
        l.remove(6);
        assert_eq!(l.iter().collect::<Vec<_>>(), [5, 7]);
        l.remove(9);
        assert_eq!(l.take(), [5, 7]);
        assert_eq!(l.iter().count(), 0);
        l.push(8);
        assert_eq!(l.iter().collect::<Vec<_>>(), [8]);
    }
}
