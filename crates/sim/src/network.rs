//! The network between the client and the upstream: a fixed one-way delay, half of the
//! scenario's `[network] rtt_ms`.
//!
//! `herd bench` runs on loopback, where a round trip is tens of microseconds plus the
//! runtimes' scheduling; the default 0.2 ms is a documented, slightly pessimistic stand-in
//! for that, and `rtt_ms = 0` removes the network (for queueing-theory checks). A fixed
//! delay keeps each direction a FIFO [`crate::lane`], so nothing is reordered on the wire.
//! Connection set-up after a reset is not modelled separately (on loopback it is one more
//! round trip, below the histogram's interest).

use herd_scenario::Network;
use std::time::Duration;

/// One way: client to upstream, or back (half the round trip, rounded down to the ns).
pub fn one_way(network: &Network) -> Duration {
    network.rtt / 2
}
