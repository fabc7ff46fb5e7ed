//! One wire attempt of a guarded logical request (a *leg*): past the breaker, on a
//! connection, back with its outcome; or dropped half-way, when the hedger cancels it.
//!
//! A leg is a future the round owns, not a task: cancelling it is dropping it, at the
//! instant the hedger says so, which closes its connection (the upstream has counted the
//! request when it arrived, and work it admitted runs to the end) and, through its
//! [`Ticket`], hands the breaker the call's end at once, as the simulator's client does.

use super::guard::Guard;
use super::{Call, HttpClient};
use herd_retry::breaker::{Admission, Permit, CANCELLED, REJECTED};
use herd_retry::{Failure, Outcome};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;
use tokio::time::Instant;

/// What one logical request's legs share.
pub(super) struct Ctx<'a> {
    pub client: &'a HttpClient,
    pub guard: &'a Guard,
    pub call: &'a Call,
    pub id: u64,
    pub epoch: Instant,
    /// Legs past the breaker: the request's client attempts.
    pub passed: AtomicU32,
    /// When the request's first leg got its connection (the end of the driver's lag).
    pub first: OnceLock<Instant>,
}

impl Ctx<'_> {
    /// Nanoseconds since the run's t = 0, the hedger's and the breaker's clock.
    pub fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }
}

/// A leg's end.
pub(super) struct LegEnd {
    pub attempt: u8,
    pub outcome: Outcome,
    /// The breaker's ticket, for the result to go back with.
    pub permit: Option<Permit>,
}

/// A leg in flight.
pub(super) type Leg<'a> = Pin<Box<dyn Future<Output = LegEnd> + Send + 'a>>;

/// How a leg starts.
#[derive(Clone, Copy)]
pub(super) enum Start {
    /// Straight to a connection, with the breaker's permit if there is a breaker.
    Go(Option<Permit>),
    /// Held by cockatiel's half-open breaker until its state changes.
    Held,
}

/// What a leg leaves behind however it ends: a hedge that got a connection is counted
/// sent, and a permit not handed back with a result goes back as [`CANCELLED`].
struct Ticket<'a> {
    ctx: &'a Ctx<'a>,
    attempt: u8,
    first: bool,
    permit: Option<Permit>,
    sent: Option<Instant>,
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        if let Some(s) = self.sent {
            if self.attempt > 0 {
                (self.ctx.guard.hedges_sent).fetch_add(1, Ordering::Relaxed);
            }
            if self.first {
                let _ = self.ctx.first.set(s);
            }
        }
        if let Some(p) = self.permit.take() {
            self.ctx.guard.record(Some(p), self.ctx.now(), &CANCELLED);
        }
    }
}

/// Attempt `attempt` of a round: `start` says where it stands with the breaker, and
/// `deadline` (the retrier's attempt timeout) covers the breaker's hold, the wait for a
/// connection and the exchange. `first`: the request's very first leg.
pub(super) fn leg<'a>(
    ctx: &'a Ctx<'a>,
    attempt: u8,
    start: Start,
    deadline: Option<Instant>,
    first: bool,
) -> Leg<'a> {
    Box::pin(async move {
        let mut t = Ticket {
            ctx,
            attempt,
            first,
            permit: match start {
                Start::Go(p) => p,
                Start::Held => None,
            },
            sent: None,
        };
        let body = run(ctx, matches!(start, Start::Held), &mut t);
        let outcome = match deadline {
            Some(d) => tokio::time::timeout_at(d, body)
                .await
                .unwrap_or(Outcome::Failed(Failure::Timeout)),
            None => body.await,
        };
        LegEnd {
            attempt,
            outcome,
            permit: t.permit.take(),
        }
    })
}

/// The leg's way: the breaker's hold, if any, then the exchange.
async fn run(ctx: &Ctx<'_>, held: bool, t: &mut Ticket<'_>) -> Outcome {
    if held {
        loop {
            let woken = ctx.guard.wake.notified();
            tokio::pin!(woken);
            // Registered before asking, so a change between the two is not missed.
            woken.as_mut().enable();
            match ctx.guard.allow(ctx.now()) {
                Some(Admission::Permit(p)) => {
                    t.permit = Some(p);
                    break;
                }
                Some(Admission::Wait) => woken.await,
                Some(Admission::Rejected) | None => return REJECTED,
            }
        }
    }
    let previous = ctx.passed.fetch_add(1, Ordering::Relaxed);
    (ctx.client)
        .attempt_noting(ctx.id, ctx.call, previous, None, &mut t.sent)
        .await
}
