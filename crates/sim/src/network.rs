//! The network between the client and the upstream: a one-way delay of half the
//! scenario's `[network] rtt_ms`, plus, with `jitter_ms`, an exponentially distributed
//! extra drawn for each trip.
//!
//! `herd bench` runs on loopback, where a round trip is tens of microseconds plus the
//! runtimes' scheduling; the default 0.2 ms is a documented, slightly pessimistic stand-in
//! for that, and `rtt_ms = 0` removes the network (for queueing-theory checks). A fixed
//! delay keeps each direction a FIFO [`crate::lane`], so nothing is reordered on the wire.
//! A jittered trip goes on the calendar instead (trips then overtake one another, as
//! requests on different connections do); without jitter nothing is drawn, so a scenario
//! without it runs exactly as before it existed.
//! Connection set-up after a reset is not modelled separately (on loopback it is one more
//! round trip, below the histogram's interest).

use crate::schedule::{nanos, LaneId, Schedule};
use herd_scenario::fault::ServiceSampler;
use herd_scenario::{Network, ServiceTime};
use rand_pcg::Pcg64Mcg;
use std::time::Duration;

/// One way: client to upstream, or back (half the round trip, rounded down to the ns).
pub fn one_way(network: &Network) -> Duration {
    network.rtt / 2
}

/// The extra delays of one way of one link ([`Network::jitter`]), and the stream they are
/// drawn from.
pub(crate) struct Jitter {
    extra: ServiceSampler,
    rng: Pcg64Mcg,
    one_way: u64,
}

impl Jitter {
    /// The jitter of `network`, drawn from `rng`; `None` when it has none.
    pub(crate) fn of(network: &Network, rng: Pcg64Mcg) -> Option<Jitter> {
        (!network.jitter.is_zero()).then(|| Jitter {
            extra: ServiceTime::Exponential {
                mean_ms: network.jitter.as_secs_f64() * 1000.0,
            }
            .sampler(),
            rng,
            one_way: nanos(one_way(network)),
        })
    }
}

/// Sends an event one way: `make(extra)` arrives after the lane's delay (`one_way`) plus
/// `extra`, the jitter drawn for this trip (0 without jitter, when the event goes on
/// `lane`).
#[inline]
pub(crate) fn travel<T>(
    s: &mut Schedule<T>,
    lane: LaneId,
    jitter: Option<&mut Jitter>,
    make: impl FnOnce(u64) -> T,
) {
    match jitter {
        None => s.via(lane, make(0)),
        Some(j) => {
            let extra = j.extra.sample_nanos(&mut j.rng);
            let at = s.now().saturating_add(j.one_way).saturating_add(extra);
            s.at(at, make(extra));
        }
    }
}
