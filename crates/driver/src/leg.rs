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
use std::time::Duration;
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
    /// When the request's first leg got its connection, or was handed to a breaker that
    /// holds it (the end of the driver's lag).
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
    /// Queued for the lock of a breaker whose calls run one at a time (pybreaker), its
    /// timeout not yet running.
    Locked,
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
/// `limit` (the retrier's attempt timeout, from now) covers the breaker's hold, the wait
/// for a connection and the exchange; a leg queued for the breaker's lock starts it when
/// it takes the lock, as the library starts the wrapped call only then. `first`: the
/// request's very first leg.
pub(super) fn leg<'a>(
    ctx: &'a Ctx<'a>,
    attempt: u8,
    start: Start,
    limit: Option<Duration>,
    first: bool,
) -> Leg<'a> {
    let made = Instant::now();
    Box::pin(async move {
        let mut t = Ticket {
            ctx,
            attempt,
            first,
            permit: match start {
                Start::Go(p) => p,
                Start::Held | Start::Locked => None,
            },
            sent: None,
        };
        if first && matches!(start, Start::Held | Start::Locked) {
            // The library holds the call from here: its wait is the client's latency, not
            // the driver's lag.
            let _ = ctx.first.set(made);
        }
        let mut from = made;
        if matches!(start, Start::Locked) {
            match take_turn(ctx).await {
                Some(p) => t.permit = Some(p),
                None => {
                    return LegEnd {
                        attempt,
                        outcome: REJECTED,
                        permit: None,
                    }
                }
            }
            from = Instant::now();
        }
        let deadline = limit.map(|l| from + l);
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

/// Waits for the breaker's lock, first come first woken, and asks the breaker when it
/// has it: its permit, or `None` when the breaker turns the call away (which frees the
/// lock for the next one at once).
async fn take_turn(ctx: &Ctx<'_>) -> Option<Permit> {
    loop {
        let turn = ctx.guard.turn.notified();
        tokio::pin!(turn);
        // Registered before asking, so a call ending between the two is not missed.
        turn.as_mut().enable();
        match ctx.guard.allow(ctx.now()) {
            Some(Admission::Permit(p)) => return Some(p),
            Some(Admission::Locked) => turn.await,
            Some(Admission::Rejected | Admission::Wait) | None => {
                ctx.guard.turn.notify_one();
                return None;
            }
        }
    }
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
                Some(Admission::Rejected | Admission::Locked) | None => return REJECTED,
            }
        }
    }
    let previous = ctx.passed.fetch_add(1, Ordering::Relaxed);
    (ctx.client)
        .attempt_noting(ctx.id, ctx.call, previous, None, &mut t.sent)
        .await
}
