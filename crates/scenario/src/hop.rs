//! A call graph's intermediate layers: the services between the arms (the edge clients
//! being compared) and the faulty `[upstream]` at the bottom.
//!
//! The retry storm an SRE meets is rarely one client: an edge app retries a service whose
//! sidecar retries a service whose SDK retries the database, and the attempts multiply
//! (three layers of three attempts put 27 requests on the bottom for one at the top). So a
//! hop is exactly the two things that multiply: a server with its own capacity and
//! faults (the [`Upstream`] type, so workers, queue, shedding and fault rules are the
//! ones `[upstream]` has, not a copy), and a client toward the next hop (a [`Strategy`],
//! parsed by the same code as an arm's, so any profile, budget or deadline an arm can
//! take a hop can take too). A scenario without hops is the single hop herd always ran.

use crate::model::Upstream;
use herd_retry::Strategy;

/// One intermediate layer of a call graph, in order from the edge down.
#[derive(Clone, Debug, PartialEq)]
pub struct Hop {
    /// Identifier, unique among the scenario's hops (reports name the hop by it).
    pub id: String,
    /// `server = { ... }`: what the hop serves with, any `[upstream]` key but `target`.
    /// A request it admits holds its worker for its service time *and* for the call to
    /// the next hop (a thread-per-request service waits on its downstream call), and is
    /// answered 200 if that call succeeded, 503 if the hop's client gave up.
    pub server: Upstream,
    /// `client = { policy = ..., ... }`: how the hop calls the next one, any replica
    /// arm key but `id`, `hedge`, `breaker` and `consumers`.
    pub client: Strategy,
}
