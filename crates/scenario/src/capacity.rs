//! Workers and the FIFO in front of them, as one pure state machine: who is served, who
//! waits, who is shed.
//!
//! The fault rules ([`crate::fault`]) say a request needs a worker; this says when it gets
//! one. It is the only copy of that rule: the simulator's upstream drives it on the virtual
//! clock, the real upstream drives it under a `Mutex` with a channel per waiter, and a
//! front that queues (a proxy) can drive it too. It holds no clock and no runtime, so every
//! caller gets the same answer for the same sequence of calls.
//!
//! # The rules
//!
//! - [`Capacity::admit`]: a free worker takes the request at once; otherwise it waits at
//!   the back of a line of at most `queue_limit`; otherwise it is shed. The decision is
//!   taken at arrival and never revisited.
//! - [`Capacity::finish`]: a worker that finishes is handed straight to the head of the
//!   line, so the busy count never dips between two requests and the line is served
//!   strictly in arrival order.
//! - **A queued request whose client has left keeps its place and is served.** A server
//!   learns that a connection closed only when it reads or writes on it; a request waiting
//!   for a worker does neither, so a thread-pool server takes it from its queue and works
//!   on it like any other (and only fails when it writes the answer). That wasted work is
//!   the load behind a metastable failure (a queue longer than the client timeout serves
//!   nobody), and measuring it is herd's job, so neither herd upstream calls
//!   [`Capacity::leave`] when a client leaves.
//! - [`Capacity::leave`] is for the server itself giving up on queued work (a shutdown, or
//!   a front that does watch its clients): the request loses its place and never takes a
//!   worker.
//!
//! ```
//! use herd_scenario::capacity::{Admitted, Capacity};
//! let mut c = Capacity::new(1, 1);
//! assert_eq!(c.admit('a'), Admitted::Now('a'));
//! assert_eq!(c.admit('b'), Admitted::Queued);
//! assert_eq!(c.admit('c'), Admitted::Shed('c'));
//! assert_eq!(c.finish(), Some('b')); // a's worker goes straight to b
//! assert_eq!(c.finish(), None);
//! assert_eq!((c.busy(), c.queued()), (0, 0));
//! ```

use std::collections::VecDeque;

/// What admission decided for one arriving request, with its ticket back when the caller
/// acts on it now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admitted<T> {
    /// A worker was free and is now busy with this ticket.
    Now(T),
    /// In line; [`Capacity::finish`] hands the ticket back when a worker takes it.
    Queued,
    /// No free worker and no room in line.
    Shed(T),
}

/// Where an arriving request goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Place {
    Worker,
    Line,
    Shed,
}

/// Busy workers and the line waiting for them; `T` is whatever the caller needs to start
/// a request later (an id, a job, a channel).
#[derive(Clone, Debug)]
pub struct Capacity<T> {
    /// Most requests served at once; `None` is unlimited.
    workers: Option<usize>,
    /// Most requests waiting for a worker.
    queue_limit: usize,
    busy: usize,
    line: VecDeque<T>,
}

impl<T> Capacity<T> {
    /// `workers` at once (0: unlimited, and then nothing ever waits), at most
    /// `queue_limit` waiting.
    pub fn new(workers: usize, queue_limit: usize) -> Self {
        Capacity {
            workers: (workers > 0).then_some(workers),
            queue_limit,
            busy: 0,
            line: VecDeque::new(),
        }
    }

    /// One request arrives with `ticket`.
    pub fn admit(&mut self, ticket: T) -> Admitted<T> {
        match self.place() {
            Place::Worker => {
                self.busy += 1;
                Admitted::Now(ticket)
            }
            Place::Line => {
                self.line.push_back(ticket);
                Admitted::Queued
            }
            Place::Shed => Admitted::Shed(ticket),
        }
    }

    /// [`Capacity::admit`] for a ticket that costs something to make (a channel): it is
    /// made only when the request has to wait in line.
    pub fn admit_with(&mut self, ticket: impl FnOnce() -> T) -> Admitted<()> {
        match self.place() {
            Place::Worker => {
                self.busy += 1;
                Admitted::Now(())
            }
            Place::Line => {
                self.line.push_back(ticket());
                Admitted::Queued
            }
            Place::Shed => Admitted::Shed(()),
        }
    }

    /// Whether a request arriving now would find a free worker (and so be served at
    /// once, nobody being in line then), without admitting it: a request whose work
    /// takes no time is served and done in the same instant, leaving the counts as they
    /// were.
    pub fn has_free_worker(&self) -> bool {
        self.place() == Place::Worker
    }

    /// Where a request arriving now goes: the one admission rule.
    fn place(&self) -> Place {
        if self.workers.map_or(true, |w| self.busy < w) {
            Place::Worker
        } else if self.line.len() < self.queue_limit {
            Place::Line
        } else {
            Place::Shed
        }
    }

    /// A busy worker finishes. Returns the ticket at the head of the line, which that
    /// worker starts on now (the busy count stays); with nobody waiting the worker goes
    /// idle. A finish with no busy worker (a caller's slip) changes nothing.
    pub fn finish(&mut self) -> Option<T> {
        if self.busy == 0 {
            return None;
        }
        let next = self.line.pop_front();
        if next.is_none() {
            self.busy -= 1;
        }
        next
    }

    /// The server gives up on a queued request (not called when a client leaves; see the
    /// module docs): the first ticket in line equal to `ticket` leaves it. Returns whether
    /// one did.
    pub fn leave(&mut self, ticket: &T) -> bool
    where
        T: PartialEq,
    {
        match self.line.iter().position(|t| t == ticket) {
            Some(i) => self.line.remove(i).is_some(),
            None => false,
        }
    }

    /// Workers busy now.
    pub fn busy(&self) -> usize {
        self.busy
    }

    /// Requests waiting for a worker now.
    pub fn queued(&self) -> usize {
        self.line.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use Admitted::{Now, Queued, Shed};

    /// One step of a sequence and what it must return.
    enum Step {
        Admit(u32, Admitted<u32>),
        Finish(Option<u32>),
        Leave(u32, bool),
        Gauges(usize, usize),
    }
    use Step::*;

    fn run(workers: usize, queue: usize, steps: &[Step]) {
        let mut c = Capacity::new(workers, queue);
        for (i, step) in steps.iter().enumerate() {
            match step {
                Admit(t, want) => assert_eq!(c.admit(*t), *want, "step {i}"),
                Finish(want) => assert_eq!(c.finish(), *want, "step {i}"),
                Leave(t, want) => assert_eq!(c.leave(t), *want, "step {i}"),
                Gauges(b, q) => assert_eq!((c.busy(), c.queued()), (*b, *q), "step {i}"),
            }
        }
    }

    #[test]
    fn serves_queues_then_sheds() {
        run(
            2,
            2,
            &[
                Admit(1, Now(1)),
                Admit(2, Now(2)),
                Admit(3, Queued),
                Admit(4, Queued),
                Admit(5, Shed(5)),
                Gauges(2, 2),
                Finish(Some(3)),
                Gauges(2, 1),
                Admit(6, Queued),
                Admit(7, Shed(7)),
                Finish(Some(4)),
                Finish(Some(6)),
                Gauges(2, 0),
                Finish(None),
                Gauges(1, 0),
                Admit(8, Now(8)),
                Finish(None),
                Finish(None),
                Gauges(0, 0),
            ],
        );
    }

    #[test]
    fn leaving_gives_up_the_place_and_never_takes_a_worker() {
        run(
            1,
            3,
            &[
                Admit(1, Now(1)),
                Admit(2, Queued),
                Admit(3, Queued),
                Admit(4, Queued),
                Admit(5, Shed(5)),
                Leave(3, true),
                Leave(3, false),
                Leave(1, false), // on a worker, not in line
                Gauges(1, 2),
                Admit(6, Queued), // the place freed
                Finish(Some(2)),
                Finish(Some(4)),
                Finish(Some(6)),
                Finish(None),
                Gauges(0, 0),
            ],
        );
    }

    /// `admit_with` and `has_free_worker` follow `admit`'s rule step for step, and the
    /// lazy ticket is made exactly when the request waits in line.
    #[test]
    fn the_lazy_admission_and_the_free_worker_query_follow_the_rule() {
        let (mut eager, mut lazy) = (Capacity::new(3, 2), Capacity::new(3, 2));
        let mut x = 7u32;
        for t in 0..2000u32 {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            if x >> 16 & 1 == 0 {
                let free = eager.has_free_worker();
                let mut made = false;
                let got = lazy.admit_with(|| {
                    made = true;
                    t
                });
                let want = eager.admit(t);
                assert_eq!(free, matches!(want, Now(_)), "step {t}");
                assert_eq!(made, want == Queued, "step {t}");
                let same = matches!(
                    (want, got),
                    (Now(_), Now(())) | (Queued, Queued) | (Shed(_), Shed(()))
                );
                assert!(same, "step {t}: {want:?} vs {got:?}");
            } else {
                assert_eq!(eager.finish(), lazy.finish(), "step {t}");
            }
            assert_eq!((eager.busy(), eager.queued()), (lazy.busy(), lazy.queued()));
        }
    }

    #[test]
    fn unlimited_workers_never_queue_or_shed() {
        let mut c = Capacity::new(0, 0);
        for t in 0..1000u32 {
            assert_eq!(c.admit(t), Now(t));
        }
        assert_eq!((c.busy(), c.queued()), (1000, 0));
        for _ in 0..1000 {
            assert_eq!(c.finish(), None);
        }
        assert_eq!((c.busy(), c.queued()), (0, 0));
    }

    #[test]
    fn no_queue_sheds_as_soon_as_workers_are_busy() {
        run(
            1,
            0,
            &[
                Admit(1, Now(1)),
                Admit(2, Shed(2)),
                Finish(None),
                Admit(3, Now(3)),
            ],
        );
    }

    #[test]
    fn a_stray_finish_changes_nothing() {
        run(
            1,
            1,
            &[
                Finish(None),
                Gauges(0, 0),
                Admit(1, Now(1)),
                Admit(2, Queued),
                Gauges(1, 1),
            ],
        );
    }
}
