//! One arm on the virtual clock: wire the client, the network and the upstream onto one
//! [`Schedule`], feed it the arrival schedule, and run until nothing is pending.
//!
//! Seeds are the real driver's: arrivals and faults from `scenario.seed` (so every arm
//! faces the same schedule), each logical request's jitter from the arm seed mixed with its
//! index (with `[consumers]`, with the consumers' request id). Only the clock differs.

use crate::client::{Client, Wiring, NO_OWNER};
use crate::consumers;
use crate::event::Event;
use crate::network;
use crate::schedule::{nanos, Schedule};
use crate::upstream::Server;
use herd_retry::Retrier;
use herd_scenario::{ArmReport, Demand, Recorder, Scenario, ScenarioError, ServerCounts};
use std::time::Duration;

/// What one simulated arm produced.
pub struct SimRun {
    /// The client side: every logical request, finished.
    pub recorder: Recorder,
    /// The server side, counted by the model upstream as the real one counts.
    pub counts: ServerCounts,
    /// Events the loop processed (for events/s figures).
    pub events: u64,
    /// Virtual time when the last event ran.
    pub end: Duration,
    /// Why the arrivals ended early, if they did (a trace that could not be read).
    pub error: Option<ScenarioError>,
}

impl SimRun {
    /// The arm's report entry, as `herd bench` builds it.
    pub fn report(&self, scenario: &Scenario, index: usize) -> ArmReport {
        let arm = &scenario.arms[index];
        let policy = arm.strategy().map(|s| s.to_string()).unwrap_or_default();
        self.recorder
            .finish(&arm.id, &policy, &self.counts, scenario)
    }
}

/// Simulates arm `index` of `scenario`. With a trace, the trace is streamed; a trace that
/// cannot be read (it changed since [`herd_scenario::trace::resolve`] checked it) ends the
/// arrivals early and is reported in [`SimRun::error`].
///
/// # Panics
/// If `index` is not an arm of `scenario`, or its arm runs a real client
/// ([`herd_scenario::ArmClient::is_replica`] is false): a caller's bug, not bad input.
pub fn simulate(scenario: &Scenario, index: usize) -> SimRun {
    let arm = &scenario.arms[index];
    let mut s = Schedule::new();
    let up = s.add_lane(network::one_way());
    let down = s.add_lane(network::one_way());
    let timeouts = scenario.client.attempt_timeout.map(|t| s.add_lane(t));
    let upstream = &scenario.upstream;
    let retry_after =
        (upstream.retry_after_s > 0).then(|| Duration::from_secs(upstream.retry_after_s));
    let mut server = Server::new(upstream, scenario.seeds(), down);
    let mut client = Client::new(
        Retrier::new(
            arm.strategy()
                .expect("the simulator runs replica arms only (herd sim refuses the others)"),
        ),
        scenario.load.method,
        scenario.client.pool_max_connections,
        scenario.client.attempt_timeout,
        retry_after,
        Wiring { up, timeouts },
    );
    let arm_seed = scenario.arm_seed(index);
    let (mut demand, mut error) = match Demand::new(scenario) {
        Ok(d) => (d, None),
        Err(e) => (Demand::Closed, Some(e)),
    };
    let mut consumers = match (&scenario.consumers, arm.consumers) {
        (Some(c), Some(rules)) => Some(consumers::Driver::new(
            &mut s,
            rules,
            c.count,
            scenario.load.requests,
            arm_seed,
        )),
        _ => None,
    };
    if let Some(c) = &mut consumers {
        c.start(&mut s, &mut client, scenario.seeds());
    }
    let mut arrivals = demand.by_ref().enumerate();
    let mut next = arrivals.next();
    if let Some((_, u)) = next {
        s.at(nanos(u.at), Event::Arrive);
    }
    while let Some((_, ev)) = s.pop() {
        match ev {
            Event::Arrive => {
                if let Some((i, u)) = next.take() {
                    match &mut consumers {
                        Some(c) => c.arrive(&mut s, &mut client, u.consumer),
                        None => {
                            let rng = arm_seed.request(i as u64);
                            client.begin(&mut s, rng, NO_OWNER);
                        }
                    }
                }
                next = arrivals.next();
                if let Some((_, u)) = next {
                    s.at(nanos(u.at), Event::Arrive);
                }
            }
            Event::Retry(id) => client.retry(&mut s, id),
            Event::AtServer(a) => server.arrive(&mut s, a),
            Event::ServerDone { attempt, what } => server.finish(&mut s, attempt, what),
            Event::AtClient { attempt, answer } => client.answered(&mut s, attempt, answer),
            Event::Timeout(id) => client.timed_out(&mut s, id),
            Event::Consumer(timer) => {
                if let Some(c) = &mut consumers {
                    c.fire(&mut s, &mut client, timer);
                }
            }
        }
        if let Some(c) = &mut consumers {
            c.collect(&mut s, &mut client);
        }
    }
    if error.is_none() {
        error = demand.take_error();
    }
    let recorder = match consumers {
        Some(c) => c.into_recorder(&client),
        None => client.into_recorder(),
    };
    SimRun {
        recorder,
        counts: server.into_counts(),
        events: s.events(),
        end: Duration::from_nanos(s.now()),
        error,
    }
}
