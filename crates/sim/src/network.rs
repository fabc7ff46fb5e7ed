//! The network between the client and the upstream: a fixed one-way delay.
//!
//! `herd bench` runs on loopback, where a round trip is tens of microseconds plus the
//! runtimes' scheduling; 0.2 ms is a documented, slightly pessimistic stand-in for that.
//! The issue's `[network] rtt_ms` key will replace this constant; until then every run
//! uses it. Connection set-up after a reset is not modelled separately (on loopback it is
//! one more round trip, below the histogram's interest).

use std::time::Duration;

/// Round-trip time between the client and the upstream.
pub const RTT: Duration = Duration::from_micros(200);

/// One way: client to upstream, or back.
pub fn one_way() -> Duration {
    RTT / 2
}
