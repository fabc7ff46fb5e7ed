//! Workers and the FIFO in front of them, on tokio: the rule is
//! [`herd_scenario::capacity::Capacity`] (shared with the simulator); this wraps it for
//! concurrent handlers.
//!
//! One small `Mutex` holds the pure core, so the shed decision ("all workers busy and the
//! queue full") is taken atomically at arrival, and the line is served strictly in arrival
//! order. Each waiter is a oneshot channel on which its [`Worker`] arrives. A semaphore
//! would also be FIFO, but only from the moment a waiter is first polled, and its queue
//! length is not observable; here the gauges are exact.
//!
//! A waiter lives in the request's work task, not in its hyper handler, so a client that
//! leaves does not take its request out of line (the core's rule). Only a shutdown drops
//! waiters; a worker handed to a dropped waiter finishes at once and passes on.

use super::{lock, Stats};
use herd_scenario::capacity::{self, Admitted};
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

/// The upstream's workers and waiting line.
#[derive(Debug)]
pub(crate) struct Capacity {
    /// Busy count and waiters (each sent its [`Worker`] when one frees up); held only to
    /// admit or release.
    state: Mutex<State>,
    /// Where the gauges are published.
    stats: Arc<Stats>,
}

type State = capacity::Capacity<oneshot::Sender<Worker>>;

/// The outcome of admission, decided at arrival.
#[derive(Debug)]
pub(crate) enum Admission {
    /// A worker was free.
    Now(Worker),
    /// In line; the worker arrives on this channel.
    Queued(oneshot::Receiver<Worker>),
    /// No worker and no room in line.
    Shed,
}

/// One busy worker. Dropping it frees the worker (or hands it to the next in line).
#[derive(Debug)]
pub(crate) struct Worker {
    capacity: Arc<Capacity>,
    /// False for a worker that was never taken (its waiter had gone): dropping it is a no-op.
    armed: bool,
}

impl Capacity {
    /// `workers` at once (0: unlimited), at most `queue_limit` waiting.
    pub(crate) fn new(workers: usize, queue_limit: usize, stats: Arc<Stats>) -> Arc<Self> {
        Arc::new(Capacity {
            state: Mutex::new(State::new(workers, queue_limit)),
            stats,
        })
    }

    /// Admits one arriving request. The channel a waiter needs is made only for one
    /// that waits: most requests find a free worker.
    pub(crate) fn admit(self: &Arc<Self>) -> Admission {
        let mut waiting = None;
        let mut s = lock(&self.state);
        let admission = match s.admit_with(|| {
            let (tx, rx) = oneshot::channel();
            waiting = Some(rx);
            tx
        }) {
            Admitted::Now(()) => Admission::Now(self.worker()),
            Admitted::Queued => waiting.map_or(Admission::Shed, Admission::Queued),
            Admitted::Shed(()) => Admission::Shed,
        };
        self.publish(&s);
        admission
    }

    /// Whether a request whose work takes no time can be served now without admitting
    /// it: with a worker free, taking it and giving it back in the same instant would
    /// leave everything as it was. False: it is admitted like any other.
    pub(crate) fn serve_at_once(&self) -> bool {
        lock(&self.state).has_free_worker()
    }

    fn worker(self: &Arc<Self>) -> Worker {
        Worker {
            capacity: self.clone(),
            armed: true,
        }
    }

    /// Frees one worker: to the head of the line if anyone waits, else back to idle.
    fn release(self: &Arc<Self>) {
        loop {
            let next = {
                let mut s = lock(&self.state);
                let next = s.finish();
                self.publish(&s);
                next
            };
            let Some(tx) = next else { return };
            // Sent outside the lock: a refused worker is dropped here, and must not re-enter.
            // A refused worker (its waiter dropped at shutdown) finishes at once: loop.
            match tx.send(self.worker()) {
                Ok(()) => return,
                Err(mut gone) => gone.armed = false,
            }
        }
    }

    fn publish(&self, s: &State) {
        self.stats.set_gauges(s.busy(), s.queued());
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        if self.armed {
            self.capacity.release();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cap(workers: usize, queue: usize) -> (Arc<Capacity>, Arc<Stats>) {
        let stats = Arc::new(Stats::new());
        (Capacity::new(workers, queue, stats.clone()), stats)
    }

    #[test]
    fn serves_queues_then_sheds() {
        let (c, stats) = cap(1, 1);
        let a = c.admit();
        assert!(matches!(a, Admission::Now(_)));
        let Admission::Queued(mut rx) = c.admit() else {
            panic!("second should queue")
        };
        assert!(matches!(c.admit(), Admission::Shed));
        assert_eq!((stats.in_flight(), stats.queued()), (1, 1));
        drop(a);
        let b = rx.try_recv().expect("handed over");
        assert_eq!((stats.in_flight(), stats.queued()), (1, 0));
        drop(b);
        assert_eq!((stats.in_flight(), stats.queued()), (0, 0));
    }

    #[test]
    fn line_is_fifo_and_skips_waiters_dropped_at_shutdown() {
        let (c, stats) = cap(1, 3);
        let first = c.admit();
        let Admission::Queued(gone) = c.admit() else {
            panic!()
        };
        let Admission::Queued(mut second) = c.admit() else {
            panic!()
        };
        let Admission::Queued(mut third) = c.admit() else {
            panic!()
        };
        drop(gone);
        drop(first);
        let w = second.try_recv().expect("second in line served next");
        assert!(third.try_recv().is_err());
        drop(w);
        let w = third.try_recv().expect("then third");
        assert_eq!((stats.in_flight(), stats.queued()), (1, 0));
        drop(w);
        assert_eq!((stats.in_flight(), stats.queued()), (0, 0));
    }

    #[test]
    fn unlimited_never_queues() {
        let (c, stats) = cap(0, 0);
        let held: Vec<_> = (0..100).map(|_| c.admit()).collect();
        assert!(held.iter().all(|a| matches!(a, Admission::Now(_))));
        assert_eq!(stats.in_flight(), 100);
        drop(held);
        assert_eq!(stats.in_flight(), 0);
    }
}
