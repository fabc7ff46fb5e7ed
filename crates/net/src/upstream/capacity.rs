//! Workers and the FIFO in front of them: who is served, who waits, who is shed.
//!
//! One small `Mutex` holds the number of busy workers and the waiting line, so the shed
//! decision ("all workers busy and the queue full") is taken atomically at arrival, and the
//! line is served strictly in arrival order. A semaphore would also be FIFO, but only from
//! the moment a waiter is first polled, and its queue length is not observable; here the
//! gauges are exact. A finished worker is handed straight to the head of the line, so the
//! busy count never dips between two requests.

use super::{lock, Stats};
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use tokio::sync::oneshot;

/// The upstream's workers and waiting line.
#[derive(Debug)]
pub(crate) struct Capacity {
    /// Most requests served at once; `None` is unlimited.
    workers: Option<usize>,
    /// Most requests waiting for a worker.
    queue_limit: usize,
    /// Busy count and waiters; held only to admit or release.
    state: Mutex<State>,
    /// Where the gauges are published.
    stats: Arc<Stats>,
}

#[derive(Debug, Default)]
struct State {
    busy: usize,
    /// Each waiter is sent its [`Worker`] when one frees up.
    waiting: VecDeque<oneshot::Sender<Worker>>,
}

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
            workers: (workers > 0).then_some(workers),
            queue_limit,
            state: Mutex::new(State::default()),
            stats,
        })
    }

    /// Admits one arriving request.
    pub(crate) fn admit(self: &Arc<Self>) -> Admission {
        let mut s = lock(&self.state);
        let admission = if self.workers.map_or(true, |w| s.busy < w) {
            s.busy += 1;
            Admission::Now(self.worker())
        } else if s.waiting.len() < self.queue_limit {
            let (tx, rx) = oneshot::channel();
            s.waiting.push_back(tx);
            Admission::Queued(rx)
        } else {
            Admission::Shed
        };
        self.publish(&s);
        admission
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
                let next = s.waiting.pop_front();
                if next.is_none() {
                    s.busy = s.busy.saturating_sub(1);
                }
                self.publish(&s);
                next
            };
            let Some(tx) = next else { return };
            // Sent outside the lock: a refused worker is dropped here, and must not re-enter.
            match tx.send(self.worker()) {
                Ok(()) => return,
                Err(mut gone) => gone.armed = false,
            }
        }
    }

    fn publish(&self, s: &State) {
        self.stats.set_gauges(s.busy, s.waiting.len());
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
    fn line_is_fifo_and_skips_departed_waiters() {
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
