//! Admitted work, carried out to its end even when its handler is dropped.
//!
//! A real server does not notice a closed connection while it computes, and the wasted work
//! of abandoned attempts is load herd is there to measure; so a request that got a worker
//! (or a place in line) keeps it for its whole service time whatever its client does.
//!
//! # Why not a task per request
//!
//! The obvious way, spawning the work and awaiting its end, costs a task, a channel and a
//! cross-thread wake for every request, most of whose clients never leave. Here the work
//! runs inline in the handler, on the connection's task; only if the handler is dropped
//! before the work is done (its client left, or hyper gave up on the connection) does
//! [`Job`]'s `Drop` move what is left into a task of its own. The common path spawns
//! nothing, and a zero service time on a free worker does not even touch a timer.
//!
//! A forward to a proxy's target has no length known in advance and its answer is needed, so
//! it goes through [`detached`] instead: the same rule (the worker is held to the end, the
//! client's leaving changes nothing, a shutdown stops it), carried out in a task.

use super::capacity::{Admission, Worker};
use crate::precise;
use std::future::Future;
use std::time::Duration;
use tokio::sync::{oneshot, watch};
use tokio::time::Instant;

/// One admitted request's work; see the module docs.
pub(crate) struct Job {
    /// What is left to do; `None` once done.
    stage: Option<Stage>,
    /// Resolves (with an error) when the server shuts down; work stops then.
    closing: watch::Receiver<()>,
    /// Dropped unfinished, the rest goes on in a task of its own; false for that task's
    /// own job, which a runtime shutting down may drop (re-spawning it there would spawn
    /// without end: a closed runtime drops every new task at once).
    carry_on: bool,
}

enum Stage {
    /// In line, for `service` once a worker arrives.
    Waiting {
        line: oneshot::Receiver<Worker>,
        service: Duration,
    },
    /// Holding a worker until `until` (dropping the stage frees it).
    Serving { _worker: Worker, until: Instant },
}

impl Job {
    /// Work for `service` on the worker `admitted` got or will get. `Shed` is not work:
    /// the job is done at once.
    pub(crate) fn new(
        admitted: Admission,
        service: Duration,
        closing: &watch::Receiver<()>,
    ) -> Self {
        let stage = match admitted {
            Admission::Now(worker) => Some(Stage::Serving {
                _worker: worker,
                until: Instant::now() + service,
            }),
            Admission::Queued(line) => Some(Stage::Waiting { line, service }),
            Admission::Shed => None,
        };
        Job {
            stage,
            closing: closing.clone(),
            carry_on: true,
        }
    }

    /// Does the work. True when it is done; false if the server shut down first.
    pub(crate) async fn run(&mut self) -> bool {
        if let Some(Stage::Waiting { line, service }) = &mut self.stage {
            let service = *service;
            let worker = tokio::select! {
                _ = self.closing.changed() => return self.abandon(),
                w = line => w,
            };
            let Ok(worker) = worker else {
                // The capacity's sender went away without a worker: shutting down.
                return self.abandon();
            };
            self.stage = Some(Stage::Serving {
                _worker: worker,
                until: Instant::now() + service,
            });
        }
        if let Some(Stage::Serving { until, .. }) = &self.stage {
            let until = *until;
            if until > Instant::now() {
                tokio::select! {
                    _ = self.closing.changed() => return self.abandon(),
                    () = precise::sleep_until(until) => {}
                }
            }
        }
        self.stage = None; // frees the worker
        true
    }

    /// The server is shutting down: the work stops here (and is not carried on by `Drop`).
    fn abandon(&mut self) -> bool {
        self.stage = None;
        false
    }
}

impl Drop for Job {
    /// Dropped unfinished: what is left goes on in a task of its own (see the module docs).
    fn drop(&mut self) {
        let Some(stage) = self.stage.take() else {
            return;
        };
        if !self.carry_on {
            return;
        }
        // Outside a runtime (it is going away), the worker is simply freed.
        let Ok(rt) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let mut rest = Job {
            stage: Some(stage),
            closing: self.closing.clone(),
            carry_on: false,
        };
        rt.spawn(async move {
            rest.run().await;
        });
    }
}

/// Runs `make`'s work on the worker `admitted` got or will get, in a task of its own, so it
/// holds its worker until done even if the client leaves and hyper drops the handler.
/// `None` if the request was shed or the server shut down first.
pub(crate) async fn detached<T: Send + 'static, F: Future<Output = T> + Send + 'static>(
    admitted: Admission,
    closing: &watch::Receiver<()>,
    make: impl FnOnce() -> F + Send + 'static,
) -> Option<T> {
    let (done, finished) = oneshot::channel::<T>();
    let mut closing = closing.clone();
    tokio::spawn(async move {
        let serve = async {
            let _worker = match admitted {
                Admission::Now(w) => w,
                Admission::Queued(line) => line.await.ok()?,
                Admission::Shed => return None,
            };
            // Made only now: queued work starts (a stall's sleep is timed) when it gets a
            // worker.
            Some(make().await)
        };
        tokio::select! {
            _ = closing.changed() => {}
            out = serve => if let Some(out) = out { let _ = done.send(out); },
        }
    });
    finished.await.ok()
}
