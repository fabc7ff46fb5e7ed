//! # herd-scenario
//!
//! The scenario format and everything that is the same whether a scenario runs on a real
//! socket or in the simulator: the validated model, the fault rules, the embedded
//! scenarios, and the report (histograms, 100 ms timelines, table and JSON).

pub mod arrival;
pub mod capacity;
pub mod clients;
pub mod counts;
pub mod demand;
pub mod dialect;
pub mod duration;
pub mod embedded;
pub mod error;
pub mod fault;
pub mod first_retry;
mod guard_spec;
pub mod hop;
pub mod hop_closed_form;
pub mod hop_table;
pub mod mergeable;
pub mod model;
pub mod parse;
pub mod policy_spec;
pub mod protocol;
pub mod rate_limit;
mod raw;
pub mod record;
pub mod recovery;
pub mod report;
mod secs_to_nanos;
pub mod seeds;
pub mod shard;
pub mod span;
mod strategy_spec;
pub mod table;
pub mod target;
pub mod target_counts;
pub mod tls;
pub mod trace;

pub use arrival::Arrivals;
pub use clients::{external_client, ExternalClient, Runtime, EXTERNAL_CLIENTS};
pub use counts::{ServerBucket, ServerCounts, ServerEvent, BUCKET};
pub use demand::{Demand, Unit};
pub use dialect::Dialect;
pub use duration::{BoundedDuration, DurationError, MAX_DURATION, MAX_NANOS};
pub use embedded::load;
pub use error::ScenarioError;
pub use fault::Fate;
pub use first_retry::{FirstRetrySummary, REQUEST_ID_HEADER};
pub use hop::Hop;
pub use mergeable::{ArmShard, ServerScope, ShardSection};
pub use model::*;
pub use parse::parse;
pub use policy_spec::PolicySpec;
pub use protocol::{GrpcStatus, Protocol};
pub use rate_limit::RateLimit;
pub use record::{ArmFacts, ConsumerTally, LogicalRecord, Recorder, RecorderParts};
pub use report::{
    ArmReport, BreakerReport, HedgingReport, HopReport, LagSummary, Latency, Report, StatusClasses,
    StopNote, TargetErrors, TargetInfo,
};
pub use seeds::{ArmSeed, Seeds};
pub use shard::{Shard, ShardError};
pub use target::{Target, TargetUrl};
pub use target_counts::{TargetCounts, TargetOutcome};
pub use tls::{ServeTls, TargetTrust};
