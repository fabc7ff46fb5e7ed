//! One logical request of a replica arm: attempts through the arm's [`Retrier`] until it
//! says stop, beside [`super::attempt`], which carries out one attempt.
//!
//! It is shared by the plain lanes and the consumers (both spawn it per request), so it
//! lives below both rather than in either.

use super::{Call, HttpClient};
use herd_retry::{Decision, Failure, Nanos, Outcome, Request, Retrier};
use rand_pcg::Pcg64Mcg;
use std::sync::Mutex;
use tokio::time::Instant;

/// One logical request, `call`: attempts until the arm's [`Retrier`] says stop (which
/// retries it by `call`'s method). Returns (succeeded, attempts). The retrier is shared by
/// the arm's requests (its budget is client-wide); its clock is time since the run's epoch.
/// `sent` gets the instant the first attempt went to a connection.
pub(super) async fn logical(
    client: &HttpClient,
    retrier: &Mutex<Retrier>,
    epoch: Instant,
    call: &Call,
    id: u64,
    mut rng: Pcg64Mcg,
    sent: &mut Option<Instant>,
) -> (bool, u32) {
    let now = || Nanos::from(epoch.elapsed());
    let lock = || {
        retrier
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    };
    let mut live = Live {
        retrier,
        req: lock().begin(now()),
        done: false,
    };
    let req = &mut live;
    let mut attempts = 0;
    loop {
        // The client's rate limiter (AWS adaptive mode) may hold any attempt, first ones too.
        loop {
            let wait = lock().pace(now());
            if wait.is_zero() {
                break;
            }
            tokio::time::sleep_until(Instant::now() + wait).await;
        }
        let (admitted, remaining) = {
            let mut r = lock();
            (
                r.admit(&mut req.req, now(), &mut rng),
                r.attempt_timeout(&req.req, now(), client.timeout()),
            )
        };
        let outcome = if admitted {
            attempts += 1;
            (client.attempt_noting(id, call, attempts - 1, remaining, sent)).await
        } else {
            Outcome::Failed(Failure::Throttled)
        };
        let decision = lock().decide(&mut req.req, call.method, &outcome, now(), &mut rng);
        req.done = !matches!(decision, Decision::Retry { .. });
        match decision {
            Decision::Success => return (true, attempts),
            Decision::Retry { after } => back_off(after).await,
            Decision::GiveUp(_) => return (false, attempts),
        }
    }
}

/// Waits out a retry's delay. A delay of zero (an immediate retry) is not waited for at
/// all: tokio's timer rounds every deadline up to its next millisecond tick, so even
/// `sleep(0)` parked the retry for half a millisecond on average, a hidden delay that made
/// immediate retries on the socket slower than the same retries in the simulator (where
/// they go out at once) and changed which of a rate limiter's tokens they caught. Longer
/// delays keep the timer: its ≤ 1 ms is small beside them.
pub(super) async fn back_off(after: std::time::Duration) {
    if !after.is_zero() {
        tokio::time::sleep_until(Instant::now() + after).await;
    }
}

/// A logical request between [`Retrier::begin`] and its last [`Retrier::decide`]: if its
/// future is dropped in between (a consumer cancelled it), the retrier hears of it
/// ([`Retrier::abandon`]), so that a concurrency cap gets back the attempt on the wire and
/// the retry it held, as the simulator's client does on a cancel.
struct Live<'a> {
    retrier: &'a Mutex<Retrier>,
    req: Request,
    /// The retrier ended the request.
    done: bool,
}

impl Drop for Live<'_> {
    fn drop(&mut self) {
        if !self.done {
            let mut r = (self.retrier.lock()).unwrap_or_else(|poisoned| poisoned.into_inner());
            r.abandon(&mut self.req);
        }
    }
}
