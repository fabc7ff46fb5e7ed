//! How a driving thread gives its arrivals to the workers that send them.
//!
//! A task spawned per arrival cost an allocation the size of a whole logical request's
//! future (nearly 2 KB: above what the allocator serves from its fast per-thread caches),
//! a copy of that future into it, and the runtime's bookkeeping to own and join it; at
//! tens of thousands of arrivals a second that was a tenth of the driver's CPU. So a lane
//! keeps its workers: a worker carries out one logical request at a time, from its first
//! attempt to its count, then takes the next. The lane hands an arrival to an idle
//! worker, and starts a new worker only when none is idle, so there are as many workers
//! as there were ever logical requests in flight at once (the backlog caps that), and
//! after the first moments of a run a new arrival costs no allocation of its own.
//!
//! Nothing about the load changes: an arrival still starts at its instant whatever the
//! others are doing (open loop), since a busy worker never holds it back: another one
//! takes it.

use std::collections::VecDeque;
use std::future::poll_fn;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Poll, Waker};

/// Jobs waiting for a worker, and the workers waiting for a job.
pub(super) struct Handoff<T> {
    state: Mutex<State<T>>,
}

struct State<T> {
    jobs: VecDeque<T>,
    /// Per worker (by its number), its waker while it waits for a job.
    waiting: Vec<Option<Waker>>,
    /// The numbers of waiting workers, the last to wait on top. A worker that stopped
    /// waiting (it found a job when it was polled for another reason) may still be listed:
    /// its `waiting` entry is empty, and it is skipped.
    idle: Vec<usize>,
    /// No more jobs will come: a worker that finds none ends.
    closed: bool,
}

/// A worker's number in its [`Handoff`].
#[derive(Clone, Copy, Debug)]
pub(super) struct WorkerId(usize);

impl<T> Handoff<T> {
    /// No jobs and no workers yet.
    pub fn new() -> Arc<Self> {
        Arc::new(Handoff {
            state: Mutex::new(State {
                jobs: VecDeque::new(),
                waiting: Vec::new(),
                idle: Vec::new(),
                closed: false,
            }),
        })
    }

    fn state(&self) -> MutexGuard<'_, State<T>> {
        self.state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// A number for a new worker.
    pub fn enlist(&self) -> WorkerId {
        let mut s = self.state();
        s.waiting.push(None);
        WorkerId(s.waiting.len() - 1)
    }

    /// Queues `job` and wakes a waiting worker for it. False: no worker is waiting, so
    /// the caller starts one (the job goes to whichever worker is free first).
    pub fn give(&self, job: T) -> bool {
        let mut s = self.state();
        s.jobs.push_back(job);
        while let Some(id) = s.idle.pop() {
            if let Some(w) = s.waiting[id].take() {
                drop(s);
                w.wake();
                return true;
            }
        }
        false
    }

    /// No more jobs: the workers end once the queue is empty.
    pub fn close(&self) {
        let waiting: Vec<Waker> = {
            let mut s = self.state();
            s.closed = true;
            s.idle.clear();
            s.waiting.iter_mut().filter_map(Option::take).collect()
        };
        waiting.into_iter().for_each(Waker::wake);
    }

    /// The next job for worker `me`, in the order given; `None` once closed and empty.
    ///
    /// A waiting worker can be polled without having been woken for a job: the sockets
    /// of the requests it carried out before still hold its waker. So a worker is listed
    /// once however often it is polled, and a wake-up meant for it always reaches a
    /// worker that is free.
    pub async fn take(&self, me: WorkerId) -> Option<T> {
        poll_fn(|cx| {
            let mut s = self.state();
            if let Some(job) = s.jobs.pop_front() {
                s.waiting[me.0] = None;
                return Poll::Ready(Some(job));
            }
            if s.closed {
                return Poll::Ready(None);
            }
            if s.waiting[me.0].replace(cx.waker().clone()).is_none() {
                s.idle.push(me.0);
            }
            Poll::Pending
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::Future;

    #[tokio::test]
    async fn jobs_go_out_in_order_and_workers_end_at_close() {
        let h = Handoff::new();
        let (a, b) = (h.enlist(), h.enlist());
        assert!(!h.give(1), "no worker is waiting yet");
        assert!(!h.give(2));
        assert_eq!(h.take(a).await, Some(1));
        assert_eq!(h.take(a).await, Some(2));
        let waiting = tokio::spawn({
            let h = h.clone();
            async move { h.take(a).await }
        });
        tokio::task::yield_now().await;
        while h.state().waiting.iter().all(Option::is_none) {
            tokio::task::yield_now().await;
        }
        assert!(h.give(3), "the waiting worker takes it");
        assert_eq!(waiting.await.expect("worker"), Some(3));
        let ending = tokio::spawn({
            let h = h.clone();
            async move { h.take(b).await }
        });
        while h.state().waiting.iter().all(Option::is_none) {
            tokio::task::yield_now().await;
        }
        h.close();
        assert_eq!(ending.await.expect("worker"), None);
        assert_eq!(h.take(a).await, None);
    }

    /// A waiting worker polled again (a stale wake-up from a socket it used) stays
    /// listed once: the next job wakes it, and the one after finds nobody waiting.
    #[test]
    fn a_worker_polled_twice_is_listed_once() {
        let h: Arc<Handoff<u32>> = Handoff::new();
        let me = h.enlist();
        let mut take = Box::pin(h.take(me));
        struct Noop;
        impl std::task::Wake for Noop {
            fn wake(self: Arc<Self>) {}
        }
        let waker = Waker::from(Arc::new(Noop));
        let mut cx = std::task::Context::from_waker(&waker);
        assert!(take.as_mut().poll(&mut cx).is_pending());
        assert!(take.as_mut().poll(&mut cx).is_pending());
        assert!(h.give(1), "the waiting worker is woken");
        assert!(!h.give(2), "nobody else is waiting");
        assert_eq!(take.as_mut().poll(&mut cx), Poll::Ready(Some(1)));
    }
}
