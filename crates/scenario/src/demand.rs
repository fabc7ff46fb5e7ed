//! Demand: when each unit of work arrives and at which consumer, from whichever source
//! the scenario names (generated from the seed, or a trace), as one iterator.
//!
//! Without `[consumers]` a unit *is* a logical request and the consumer is always 0, so
//! the drivers have one arrival loop whatever the source. With `[consumers]` and a rate,
//! the per-consumer Poisson streams are generated as their superposition (one Poisson
//! stream at `count × rate`, each arrival assigned to a uniformly drawn consumer), which is
//! the same process in distribution and costs one draw per unit however many consumers
//! there are. A closed loop (`think_ms`) has no schedule: its units are started by
//! [`herd_retry::Consumers`] as earlier ones finish, so its demand here is empty.

use crate::arrival::Arrivals;
use crate::error::ScenarioError;
use crate::model::{Arrival, Scenario};
use crate::trace::TraceReader;
use herd_retry::Method;
use rand::Rng;
use rand_pcg::Pcg64Mcg;
use std::fs::File;
use std::io::BufReader;
use std::sync::Arc;
use std::time::Duration;

/// One unit of work.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Unit {
    /// When it arrives, in nanoseconds from the start of the run: the simulator's clock
    /// counts nanoseconds, and a generated instant is drawn as nanoseconds
    /// ([`Arrivals::next_nanos`]); [`Unit::at`] is the same instant as a [`Duration`].
    pub at_ns: u64,
    /// The consumer it arrives at (0 without `[consumers]`).
    pub consumer: u32,
    /// Its request's method, when a trace says (else `[load] method`).
    pub method: Option<Method>,
    /// Its request's path and query, when a trace says (else `/`).
    pub path: Option<Arc<str>>,
}

impl Unit {
    /// When it arrives, from the start of the run.
    #[inline]
    pub fn at(&self) -> Duration {
        Duration::from_nanos(self.at_ns)
    }

    /// The method its request is sent with: the trace's, else `default` (`[load] method`).
    pub fn method_or(&self, default: Method) -> Method {
        self.method.unwrap_or(default)
    }
}

/// The scenario's units, in arrival order.
pub enum Demand {
    /// Generated from the seed.
    Generated {
        /// The arrival instants.
        arrivals: Arrivals,
        /// Consumers to spread them over (1 without `[consumers]`).
        consumers: u32,
        /// How they are spread.
        kind: Arrival,
        /// Draws the consumer of a Poisson arrival.
        rng: Pcg64Mcg,
        /// Units so far (round robin for constant arrivals).
        n: u64,
    },
    /// Replayed from a trace, capped at `left` lines.
    Trace {
        /// The streamed file.
        reader: Box<TraceReader<BufReader<File>>>,
        /// Lines still to take.
        left: u64,
    },
    /// A closed loop: no schedule.
    Closed,
}

impl Demand {
    /// The demand of `scenario` (a trace is opened, not read).
    pub fn new(scenario: &Scenario) -> Result<Demand, ScenarioError> {
        let load = &scenario.load;
        if let Some(t) = &load.trace {
            return Ok(Demand::Trace {
                reader: Box::new(TraceReader::open(t)?),
                left: load.requests,
            });
        }
        let consumers = match &scenario.consumers {
            Some(c) if c.rules.think().is_some() => return Ok(Demand::Closed),
            Some(c) => c.count,
            None => 1,
        };
        Ok(Demand::generated(
            load.arrival,
            load.rate,
            load.requests,
            consumers,
            scenario.seed,
        ))
    }

    /// `requests` units at `rate` per second in all, spread over `consumers`, seeded: what
    /// a scenario without a trace offers, and what `herd trace synth` writes down.
    pub fn generated(kind: Arrival, rate: f64, requests: u64, consumers: u32, seed: u64) -> Self {
        Demand::Generated {
            arrivals: Arrivals::new(kind, rate, requests, seed),
            consumers: consumers.max(1),
            kind,
            rng: crate::Seeds(seed).consumer_pick(),
            n: 0,
        }
    }

    /// A trace error that ended the stream early, if one did (a file changed since it was
    /// scanned).
    pub fn take_error(&mut self) -> Option<ScenarioError> {
        match self {
            Demand::Trace { reader, .. } => reader.take_error(),
            _ => None,
        }
    }
}

impl Iterator for Demand {
    type Item = Unit;
    #[inline]
    fn next(&mut self) -> Option<Unit> {
        match self {
            Demand::Generated {
                arrivals,
                consumers,
                kind,
                rng,
                n,
            } => {
                let at_ns = arrivals.next_nanos()?;
                let consumer = match (*consumers, *kind) {
                    (1, _) => 0,
                    (c, Arrival::Constant) => (*n % u64::from(c)) as u32,
                    (c, Arrival::Poisson) => rng.random_range(0..c),
                };
                *n += 1;
                Some(Unit {
                    at_ns,
                    consumer,
                    method: None,
                    path: None,
                })
            }
            Demand::Trace { reader, left } => {
                if *left == 0 {
                    return None;
                }
                *left -= 1;
                let l = reader.next()?;
                Some(Unit {
                    // A trace's instant is a `BoundedDuration` (a year at most): exact.
                    at_ns: u64::try_from(l.at.as_nanos()).unwrap_or(u64::MAX),
                    consumer: u32::try_from(l.consumer).unwrap_or(u32::MAX),
                    method: l.method,
                    path: l.path,
                })
            }
            Demand::Closed => None,
        }
    }
}
