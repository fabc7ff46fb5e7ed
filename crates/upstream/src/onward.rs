//! A hop of a call graph (`[[hops]]`): the server calls the next hop for each request it
//! admits, and answers with how that call went.
//!
//! Only what happens *after* admission differs from a plain upstream: the fault rules,
//! the rate limit, the workers and the line are the handler's, unchanged. Admitted work
//! then holds its worker through its service time *and* through the call to the next hop,
//! as a thread-per-request service waits on its downstream call, and is answered 200 if
//! that call succeeded, or a plain 503 (no `Retry-After`) if the hop's client gave up:
//! the simulator's rule (`herd-sim`'s `Server::reply`), carried out on a socket.
//!
//! The call itself is not this crate's: it is the hop's retrying client, which lives in
//! the driver ([`Downstream`] is its face here), so herd-upstream keeps depending on no
//! client. Like a proxy's forward, the work runs detached (see [`crate::job::detached`]):
//! a caller that leaves does not stop it, and the worker is held to its end; only the
//! answer, and its count, are dropped with the handler.

use crate::capacity::Admission;
use crate::job::detached;
use crate::reply::{text_static, Reply};
use crate::shared::Shared;
use herd_scenario::ServerEvent;
use http::StatusCode;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// The way from a hop to the next one: one call per admitted request, retried as the
/// hop's client decides.
pub trait Downstream: Send + Sync + 'static {
    /// Calls the next hop for one admitted request; true when the call succeeded.
    fn call(self: Arc<Self>) -> Pin<Box<dyn Future<Output = bool> + Send + 'static>>;
}

/// What makes a server a hop of a call graph ([`crate::Options::onward`]).
#[derive(Clone)]
pub struct Onward {
    /// The hop's place in `[[hops]]`, from 0: its faults are drawn from
    /// [`herd_scenario::Seeds::hop_faults`] of it rather than from the bottom's stream.
    pub hop: usize,
    /// The call to the next hop.
    pub next: Arc<dyn Downstream>,
}

impl fmt::Debug for Onward {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Onward").field("hop", &self.hop).finish()
    }
}

/// Admitted work at a hop: `service` on the worker, then the call to the next hop, then
/// the answer (counted `Ok` or `Error503`).
pub(crate) async fn serve(
    shared: &Arc<Shared>,
    onward: &Onward,
    admitted: Admission,
    service: Duration,
    id: Option<u64>,
) -> Reply {
    let next = onward.next.clone();
    // Counted from admission to the call's end, so a run can wait until the hop has
    // nothing left on its way down before it reads the counts below it.
    // The gauge comes back with the call's result and drops after the answer is counted
    // (or with the result, unsent, when the caller has left).
    let pending = shared.stats.start_forwarding();
    let job = move || async move {
        crate::precise::sleep(service).await;
        (next.call().await, pending)
    };
    match detached(admitted, &shared.closing, job).await {
        Some((true, _pending)) => {
            shared.record(ServerEvent::Ok, id);
            shared.ok(None)
        }
        Some((false, _pending)) => {
            shared.record(ServerEvent::Error503, id);
            text_static(StatusCode::SERVICE_UNAVAILABLE, "the next hop failed\n")
        }
        // Shutting down: dropped unanswered, like every other open connection.
        None => std::future::pending().await,
    }
}
