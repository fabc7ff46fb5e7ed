//! # herd-sim
//!
//! herd's discrete-event simulator: the *same* scenario, the *same* fault rules
//! ([`herd_scenario::Upstream::fate`]) and the *same* retry policies
//! ([`herd_retry::Policy::decide`]) as `herd bench`, on a virtual clock instead of a socket.
//! It writes into the same [`herd_scenario::Recorder`] and [`herd_scenario::ServerCounts`],
//! so one report path serves both modes.
//!
//! ## Why a simulator, and why it must be trusted
//!
//! A real run cannot explore a million clients or an hour of incident in a minute; a
//! simulator can, but only if its numbers mean the same thing. So nothing here decides a
//! fault or a retry: the model only carries out what the shared code decides, in the order
//! the real upstream and driver do (the `upstream` and `client` modules say, step by step,
//! which `herd-upstream` and `herd-driver` code they mirror). It is checked against `herd bench` and against queueing theory (M/M/c) in its
//! tests, and its upstream alone ([`upstream_fates`]) against the real one, request by
//! request.
//!
//! ## Determinism
//!
//! A run is a pure function of the scenario (seed included): no wall clock, no thread
//! timing, no hash-order iteration; events due at the same nanosecond run in the order they
//! were scheduled. Same scenario, same bytes.
//!
//! ## Scale
//!
//! Events live in a [`queue::CalendarQueue`] (a timing wheel with a heap per bucket, see its
//! docs for why not one binary heap) and in FIFO [`lane`]s for the fixed delays (network
//! hops, attempt and consumer timeouts) and the streams that come in time order
//! (arrivals), which cover most events at O(1); a long timer that is nearly always over
//! before it is due (the timeout of an attempt, answered in milliseconds) is written down
//! first and reaches its lane only if it is still needed ~0.1 s later, so it is neither
//! queued nor popped. Per-request state is a
//! fixed-size slot reused after the request finishes; metrics stream into histograms and
//! 100 ms buckets.
//!
//! [`run_arms`] runs every arm of a scenario on the machine's cores (`herd sim`), and
//! [`run_many`] every arm of many (`herd tune`); see [`engine`].
//!
//! ```
//! let scenario = herd_scenario::load("seed-quick").unwrap().scenario;
//! let run = herd_sim::simulate(&scenario, 0);
//! assert_eq!(run.recorder.len(), scenario.load.requests);
//! let report = run.report(&scenario, 0);
//! assert!(report.load_multiplier >= 1.0);
//! ```

mod chain;
mod client;
mod consumers;
mod deferred;
pub mod engine;
mod event;
mod fates;
mod guarded;
pub mod lane;
pub mod network;
pub mod queue;
mod run;
pub mod schedule;
mod upstream;

pub use engine::{run_arms, run_many, Stop};
pub use fates::{upstream_fates, Arrival, Fated, Reply};
pub use guarded::{GuardOutcome, GuardTally};
pub use run::{simulate, SimRun};
pub use schedule::{LaneId, Schedule};
