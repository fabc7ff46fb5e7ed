//! The retry loop of the production integrations, written once for both the tower layer
//! and the reqwest middleware: attempt, classify, [`Retrier::decide`], sleep, repeat.
//!
//! Cancellation is the future's: dropping the caller's future drops the pending backoff
//! sleep and the in-flight attempt with it (this is what herd's `abandon` models).

use crate::classify::{Failure, Method, Outcome};
use crate::clock;
use crate::policy::Decision;
use crate::retrier::{Counters, Retrier, Strategy};
use rand::SeedableRng;
use rand_pcg::Pcg64Mcg;
use std::future::Future;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// Every setting of a layer or middleware, kept whole so that a setter changes one of them
/// and the shared state is always made from all of them ([`Shared::new`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Settings {
    pub(crate) strategy: Strategy,
    /// The jitter's seed; `None`: seeded from the clock.
    pub(crate) seed: Option<u64>,
    pub(crate) attempt_timeout: Option<Duration>,
}

impl Settings {
    /// A strategy with no seed and no attempt timeout.
    pub(crate) fn new(strategy: Strategy) -> Self {
        Settings {
            strategy,
            seed: None,
            attempt_timeout: None,
        }
    }
}

/// State shared by all requests of one client.
#[derive(Debug)]
pub(crate) struct Shared {
    settings: Settings,
    retrier: Mutex<Retrier>,
    rng: Mutex<Pcg64Mcg>,
}

/// How a logical request ended.
pub(crate) enum Ended<T, E> {
    /// The last attempt's own result (a success, or the final failure).
    Done(Result<T, E>),
    /// The last attempt hit the attempt timeout (or the deadline).
    TimedOut,
    /// The client's throttle refused to send.
    Throttled,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl Shared {
    /// Fresh budget, counters and RNG for `settings`.
    pub(crate) fn new(settings: Settings) -> Self {
        Shared {
            retrier: Mutex::new(Retrier::new(settings.strategy)),
            rng: Mutex::new(Pcg64Mcg::seed_from_u64(
                settings.seed.unwrap_or_else(clock::seed),
            )),
            settings,
        }
    }

    /// The settings this state was made from.
    pub(crate) fn settings(&self) -> Settings {
        self.settings
    }

    pub(crate) fn counters(&self) -> Counters {
        lock(&self.retrier).counters()
    }

    /// Runs one logical request. `attempt` makes the next attempt's future, or an error
    /// when the request cannot be sent (again): a streaming body cannot be cloned. Then the
    /// first attempt fails with that error and a retry returns the previous result.
    /// `classify` reads each attempt's result.
    pub(crate) async fn run<T, E, F, Fut>(
        &self,
        method: Method,
        mut attempt: F,
        classify: impl Fn(&Result<T, E>) -> Outcome,
    ) -> Ended<T, E>
    where
        F: FnMut() -> Result<Fut, E>,
        Fut: Future<Output = Result<T, E>>,
    {
        let mut req = lock(&self.retrier).begin(clock::now());
        let mut last: Option<Ended<T, E>> = None;
        loop {
            let (admitted, timeout) = {
                let mut r = lock(&self.retrier);
                let mut rng = lock(&self.rng);
                (
                    r.admit(&mut req, clock::now(), &mut *rng),
                    r.attempt_timeout(&req, clock::now(), self.settings.attempt_timeout),
                )
            };
            let (outcome, result) = if !admitted {
                (Outcome::Failed(Failure::Throttled), Ended::Throttled)
            } else {
                let fut = match attempt() {
                    Ok(f) => f,
                    Err(e) => return last.unwrap_or(Ended::Done(Err(e))),
                };
                let res = match timeout {
                    Some(t) => tokio::time::timeout(t, fut).await.ok(),
                    None => Some(fut.await),
                };
                match res {
                    Some(r) => (classify(&r), Ended::Done(r)),
                    None => (Outcome::Failed(Failure::Timeout), Ended::TimedOut),
                }
            };
            let decision = {
                let mut r = lock(&self.retrier);
                let mut rng = lock(&self.rng);
                r.decide(&mut req, method, &outcome, clock::now(), &mut *rng)
            };
            match decision {
                Decision::Retry { after } => {
                    last = Some(result);
                    tokio::time::sleep(after).await;
                }
                _ => return result,
            }
        }
    }
}
