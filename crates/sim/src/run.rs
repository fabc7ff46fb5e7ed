//! One arm on the virtual clock: wire the client, the network and the upstream onto one
//! [`Schedule`], feed it the arrival schedule, and run until nothing is pending.
//!
//! Seeds are the real driver's: arrivals and faults from `scenario.seed` (so every arm
//! faces the same schedule), each logical request's jitter from the arm seed mixed with its
//! index (with `[consumers]`, with the consumers' request id). Only the clock differs.

use crate::client::{Client, Wiring, NO_OWNER};
use crate::consumers;
use crate::deferred::Deferred;
use crate::event::{Event, Hints, Swept};
use crate::guarded::{GuardOutcome, Guarded, Setup};
use crate::lane;
use crate::network::{self, Jitter};
use crate::schedule::LaneId;
use crate::schedule::{nanos, Schedule};
use crate::upstream::Server;
use herd_retry::{Retrier, Strategy};
use herd_scenario::{
    ArmFacts, ArmReport, ArmSeed, BreakerReport, Demand, HedgingReport, Recorder, Scenario,
    ScenarioError, ServerCounts, Unit, Upstream,
};
use rand_pcg::Pcg64Mcg;
use std::time::Duration;

/// What one simulated arm produced.
pub struct SimRun {
    /// The client side: every logical request, finished.
    pub recorder: Recorder,
    /// With a shard (`[load] shard`, `--shard I/N`): the client side of the shard's own
    /// logical requests (units), which its report carries for `herd merge`. The run is
    /// still the whole schedule's: the upstream's queue, rate limit and fault draws couple
    /// every request to every other, so a shard's requests meet exactly the fates they meet
    /// in the single run only when all the others run beside them.
    pub shard_recorder: Option<Recorder>,
    /// The server side, counted by the model upstream as the real one counts.
    pub counts: ServerCounts,
    /// Events the loop processed (for events/s figures).
    pub events: u64,
    /// Virtual time when the last event ran.
    pub end: Duration,
    /// Why the arrivals ended early, if they did (a trace that could not be read).
    pub error: Option<ScenarioError>,
    /// What the hedger and the breaker did, for an arm with either.
    pub guard: Option<GuardOutcome>,
    /// With `[[hops]]`: what each hop's server counted, in order from the edge down
    /// ([`SimRun::counts`] is then the bottom's, `[upstream]`'s). Empty without hops.
    pub hops: Vec<ServerCounts>,
}

impl SimRun {
    /// The arm's report entry, as `herd bench` builds it.
    pub fn report(&self, scenario: &Scenario, index: usize) -> ArmReport {
        let arm = &scenario.arms[index];
        let policy = arm.strategy().map(|s| s.to_string()).unwrap_or_default();
        let guard = self.guard.as_ref();
        let facts = ArmFacts {
            policy,
            hedging: guard.and_then(|g| {
                (g.hedge.as_ref())
                    .map(|h| HedgingReport::of(h, g.tally.hedges_sent, g.tally.stale_answers))
            }),
            breaker: guard
                .and_then(|g| (g.breaker.as_ref()).map(|b| BreakerReport::of(b, &g.transitions))),
            ..ArmFacts::default()
        };
        let mut report = (self.recorder).finish(&arm.id, &self.counts, scenario, facts);
        report.hops = (self.recorder).hop_reports(scenario, &self.hops, &self.counts);
        report
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
    if !scenario.hops.is_empty() {
        return crate::chain::simulate(scenario, index);
    }
    let (mut demand, mut error) = match Demand::new(scenario) {
        Ok(d) => (d, None),
        Err(e) => (Demand::Closed, Some(e)),
    };
    let mut arm = Arm::wire(scenario, index);
    let mut feed = Feed::start(&mut arm.s, demand.by_ref());
    loop {
        if let Some((_, ev)) = arm.s.pop_before(feed.key) {
            if arm.handle(ev) {
                arm.collect();
            }
        } else if feed.key != lane::EMPTY {
            arm.s.run_outside(feed.key);
            if let Some(unit) = feed.due() {
                arm.arrive(unit);
            }
            feed.schedule_next(&mut arm.s);
            arm.collect();
        } else {
            break; // nothing pending, nothing left to arrive
        }
    }
    if error.is_none() {
        error = demand.take_error();
    }
    arm.into_run(error)
}

/// The arrival schedule, one arrival pending at a time (a trace is streamed).
///
/// The pending arrival is kept here, outside the schedule, under the key the schedule
/// gives it ([`Schedule::key_outside`]): the loop runs it when it comes before every
/// event the schedule holds ([`Schedule::pop_before`]), in the same `(time, seq)` order as
/// if it had waited in a lane of its own (as it once did), without the push and the pop,
/// and with one lane fewer for every pop to compare.
pub(crate) struct Feed<I: Iterator<Item = Unit>> {
    units: std::iter::Enumerate<I>,
    next: Option<(usize, Unit)>,
    /// The pending arrival's key, [`lane::EMPTY`] when there is none.
    pub(crate) key: u128,
}

impl<I: Iterator<Item = Unit>> Feed<I> {
    /// Schedules the first arrival.
    pub(crate) fn start(s: &mut Schedule<Event>, units: I) -> Self {
        let mut feed = Feed {
            units: units.enumerate(),
            next: None,
            key: lane::EMPTY,
        };
        feed.schedule_next(s);
        feed
    }

    /// The arrival due now, with its index.
    pub(crate) fn due(&mut self) -> Option<(usize, Unit)> {
        self.next.take()
    }

    /// Schedules the arrival after the one just handled (after it, so that its events
    /// keep their order at equal instants). Always inlined: once a unit, from one place in
    /// the loop.
    #[inline(always)]
    pub(crate) fn schedule_next(&mut self, s: &mut Schedule<Event>) {
        self.next = self.units.next();
        self.key = match &self.next {
            Some((_, u)) => s.key_outside(u.at_ns),
            None => lane::EMPTY,
        };
    }
}

/// One arm wired onto one schedule: client → network → upstream → network → client, and
/// the consumers above the client if the scenario has them.
pub(crate) struct Arm<'a> {
    pub(crate) s: Schedule<Event>,
    pub(crate) server: Server<'a>,
    pub(crate) client: Client,
    /// The client of an arm with `hedge` or `breaker`, which then takes every client
    /// event (`client` stays idle); `None` for every other arm, whose events cost one
    /// untaken branch more.
    guarded: Option<Box<Guarded>>,
    consumers: Option<consumers::Driver>,
    arm_seed: ArmSeed,
    /// The run's shard, if any: which units' requests are recorded twice.
    shard: Option<herd_scenario::Shard>,
}

impl<'a> Arm<'a> {
    /// The plain link ([`Plain::wire`]) to the upstream (with `[[hops]]`, to the first
    /// hop), then the guarded client and the consumers, who start their first units.
    pub(crate) fn wire(scenario: &'a Scenario, index: usize) -> Self {
        let arm = &scenario.arms[index];
        let strategy = arm
            .strategy()
            .expect("the simulator runs replica arms only (herd sim refuses the others)");
        // The server the arm calls: the first hop of a call graph, else the upstream.
        let (config, faults, link) = match scenario.hops.first() {
            Some(h) => (&h.server, scenario.seeds().hop_faults(0), Some(0)),
            None => (&scenario.upstream, scenario.seeds().faults(), None),
        };
        let Plain {
            mut s,
            mut server,
            mut client,
            up,
            one_way,
            retry_after,
        } = Plain::wire(scenario, strategy, config, faults, link);
        if !scenario.hops.is_empty() {
            server = server.forwarding();
        }
        let arm_seed = scenario.arm_seed(index);
        let shard = scenario.load.shard;
        if shard.is_some() {
            client.shard_recorder();
        }
        let guarded = arm.is_guarded().then(|| {
            let mut g = Box::new(Guarded::new(
                Retrier::new(strategy),
                arm.hedge,
                arm.breaker,
                Setup {
                    method: scenario.load.method,
                    slots: scenario.client.pool_max_connections,
                    timeout: scenario.client.attempt_timeout,
                    hints: retry_after,
                    up,
                    one_way,
                    jitter: client.take_jitter(),
                    breaker_rng: arm_seed.breaker(),
                },
            ));
            if shard.is_some() {
                g.shard_recorder();
            }
            g
        });
        let mut consumers = match (&scenario.consumers, arm.consumers) {
            (Some(c), Some(rules)) => Some(consumers::Driver::new(
                &mut s,
                rules,
                c.count,
                scenario.load.requests,
                arm_seed,
                shard,
            )),
            _ => None,
        };
        if let Some(c) = &mut consumers {
            c.start(&mut s, &mut client, scenario.seeds());
        }
        Arm {
            s,
            server,
            client,
            guarded,
            consumers,
            arm_seed,
            shard,
        }
    }

    /// Unit `i` of the schedule arrives: at its consumer, or straight at the client.
    pub(crate) fn arrive(&mut self, (i, unit): (usize, Unit)) {
        match &mut self.consumers {
            Some(c) => c.arrive(&mut self.s, &mut self.client, unit.consumer),
            None => {
                let rng = self.arm_seed.request(i as u64);
                let mine = self.shard.map_or(true, |s| s.owns(i as u64, &unit, false));
                match &mut self.guarded {
                    None => {
                        self.client
                            .begin(&mut self.s, rng, NO_OWNER, unit.method, mine);
                    }
                    Some(g) => g.begin(&mut self.s, rng, unit.method, mine),
                }
            }
        }
    }

    /// Every event but an arrival goes to the one part it concerns. Returns whether a
    /// request may have finished (so the consumers have something to collect): never after
    /// the upstream's events or a sweep, two of the three events of nearly every unit.
    pub(crate) fn handle(&mut self, ev: Event) -> bool {
        let s = &mut self.s;
        if let Some(g) = &mut self.guarded {
            match ev {
                Event::Retry(id) => g.retry(s, id),
                Event::Hedge(id) => g.hedge_timer(s, id),
                Event::AtServer(a) => self.server.arrive(s, a),
                Event::ServerDone { attempt, what } => {
                    let attempt = g.seen_by_upstream(attempt);
                    self.server.finish(s, attempt, what);
                }
                Event::AtClient { attempt, answer } => g.answered(s, attempt, answer),
                Event::Timeout(id) => g.timed_out(s, id),
                Event::Consumer(_) | Event::Sweep(_) => {}
            }
            return false;
        }
        match ev {
            Event::Retry(id) => self.client.retry(s, id),
            Event::AtServer(a) => {
                self.server.arrive(s, a);
                return false;
            }
            Event::ServerDone { attempt, what } => {
                let attempt = self.client.seen_by_upstream(attempt);
                self.server.finish(s, attempt, what);
                return false;
            }
            Event::AtClient { attempt, answer } => self.client.answered(s, attempt, answer),
            Event::Timeout(id) => self.client.timed_out(s, id),
            Event::Hedge(_) => {}
            Event::Consumer(timer) => {
                if let Some(c) = &mut self.consumers {
                    c.fire(s, &mut self.client, timer);
                }
            }
            Event::Sweep(Swept::Attempts) => {
                self.client.sweep(s);
                return false;
            }
            Event::Sweep(Swept::Consumers) => {
                if let Some(c) = &mut self.consumers {
                    c.sweep(s);
                }
                return false;
            }
        }
        true
    }

    /// The consumers take the requests that finished (and act on them).
    pub(crate) fn collect(&mut self) {
        if let Some(c) = &mut self.consumers {
            c.collect(&mut self.s, &mut self.client);
        }
    }

    pub(crate) fn into_run(self, error: Option<ScenarioError>) -> SimRun {
        let ((recorder, shard_recorder), guard) = match (self.consumers, self.guarded) {
            (_, Some(g)) => {
                let (r, shard, o) = g.finish();
                ((r, shard), Some(o))
            }
            (Some(c), None) => (c.into_recorder(&self.client), None),
            (None, None) => (self.client.into_recorder(), None),
        };
        SimRun {
            recorder,
            shard_recorder,
            counts: self.server.into_counts(),
            events: self.s.events(),
            end: Duration::from_nanos(self.s.now()),
            error,
            guard,
            hops: Vec::new(),
        }
    }
}

/// One plain link of a run on its own schedule: a client with a strategy calling a
/// server, the network between them, and the client's attempt timeouts. An arm's link
/// adds the guarded client and the consumers on top; a hop's is this alone.
pub(crate) struct Plain<'a> {
    pub(crate) s: Schedule<Event>,
    pub(crate) server: Server<'a>,
    pub(crate) client: Client,
    /// Client → server lane.
    pub(crate) up: LaneId,
    /// The one-way network delay, ns.
    pub(crate) one_way: u64,
    /// The hints the server's 503s and rate-limit rejections carry.
    pub(crate) retry_after: Hints,
}

impl<'a> Plain<'a> {
    /// Lanes first (the network, then attempt timeouts), then the server (`config`,
    /// drawing its fates from `faults`) and the client, on the link to `[upstream]`
    /// (`link` `None`) or to hop `link`'s server (whose network jitter streams they draw,
    /// if the scenario has jitter). Both network hops share one
    /// lane: they have the same delay, so the events of both come out of it in
    /// `(time, seq)` order together, exactly as from two, and the schedule compares one
    /// lane's head fewer at every pop.
    pub(crate) fn wire(
        scenario: &Scenario,
        strategy: Strategy,
        config: &'a Upstream,
        faults: Pcg64Mcg,
        link: Option<usize>,
    ) -> Self {
        let mut s = Schedule::new();
        let one_way = network::one_way(&scenario.network);
        let net = s.add_lane(one_way);
        let (up, down) = (net, net);
        // A slow lane (see `crate::schedule`): an answer cancels its attempt's timeout.
        let timeouts = scenario.client.attempt_timeout.map(|t| s.add_slow_lane(t));
        // Where full attempt timeouts wait before they go on `timeouts`, if they do.
        let deferred = (scenario.client.attempt_timeout)
            .filter(|_| timeouts.is_some())
            .and_then(|t| Deferred::new(nanos(t), &mut s));
        let hint = |s: u64| (s > 0).then(|| Duration::from_secs(s));
        let retry_after = Hints {
            unavailable: hint(config.retry_after_s),
            limited: config.rate_limit.and_then(|r| hint(r.retry_after_s)),
            grpc: config.protocol.is_grpc(),
        };
        let jitter = |back| Jitter::of(&scenario.network, scenario.seeds().network(link, back));
        let server = Server::new(config, faults, down).jittered(jitter(true));
        let client = Client::new(
            Retrier::new(strategy),
            scenario.load.method,
            scenario.client.pool_max_connections,
            scenario.client.attempt_timeout,
            retry_after,
            Wiring {
                up,
                timeouts,
                one_way: nanos(one_way),
                jitter: jitter(false),
                deferred,
            },
        );
        Plain {
            s,
            server,
            client,
            up,
            one_way: nanos(one_way),
            retry_after,
        }
    }

    /// The link as an [`Arm`] with neither a guarded client nor consumers: a hop's.
    pub(crate) fn into_arm(self, arm_seed: ArmSeed) -> Arm<'a> {
        Arm {
            s: self.s,
            server: self.server,
            client: self.client,
            guarded: None,
            consumers: None,
            arm_seed,
            shard: None,
        }
    }
}
