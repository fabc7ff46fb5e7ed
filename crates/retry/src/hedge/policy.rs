//! A hedging policy: how many attempts, when each goes, what a failed one does, what
//! limits them, and whether the losers are cancelled. Plus the named replicas.

use super::latency::{FinagleLatency, LatencyConfig, TowerLatency};
use crate::budget::{PercentConfig, TokenBucketConfig};
use crate::classify::{Failure, Outcome};
use crate::grpc::Codes;
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// Attempts a hedge may make, the original included (Polly's 1 + 10).
pub const MAX_ATTEMPTS: u8 = 11;

/// When the next hedge goes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Delay {
    /// A fixed delay after the previous send; zero sends every attempt at once.
    Fixed(Duration),
    /// A latency percentile, fixed for each request when it starts.
    Latency(LatencyConfig),
}

/// Which outcomes are failures that let another attempt answer instead (gRPC's
/// non-fatal codes, Polly's handled outcomes, Finagle's failed responses). Any other
/// outcome ends the request, success or not.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Handles {
    /// Every 5xx.
    pub server_errors: bool,
    /// These statuses.
    pub statuses: &'static [u16],
    /// No response (reset, refused, closed, …), the attempt timeout aside.
    pub errors: bool,
    /// The attempt timeout.
    pub timeouts: bool,
    /// These gRPC statuses (`nonFatalStatusCodes`), of a gRPC answer or of the failure a
    /// gRPC client reports for no answer ([`Outcome::grpc_code`]).
    pub grpc: Codes,
}

impl Handles {
    /// Nothing: the first answer, whatever it is, ends the request (tower's `select`).
    pub const NOTHING: Handles = Handles {
        server_errors: false,
        statuses: &[],
        errors: false,
        timeouts: false,
        grpc: Codes::EMPTY,
    };

    /// Whether `o` is a failure another attempt may still make good.
    pub fn handles(&self, o: &Outcome) -> bool {
        if !self.grpc.is_empty() && !o.is_success() && self.grpc.contains(o.grpc_code()) {
            return true;
        }
        match o {
            Outcome::Response { status, .. } => {
                (self.server_errors && (500..600).contains(status))
                    || self.statuses.contains(status)
            }
            Outcome::Failed(Failure::Timeout) => self.timeouts,
            Outcome::Failed(_) => self.errors,
        }
    }
}

/// What a handled failure does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnFailure {
    /// Send the next hedge at once (gRPC A6's non-fatal status, Polly's handled outcome).
    SendNext,
    /// Wait for the attempts still out (Finagle hands over to the other request).
    Await,
}

/// What limits hedges beyond the attempt count. Checked when a hedge is due; a hedge it
/// refuses is not sent, and none after it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Gate {
    /// Nothing (Polly, tower).
    Open,
    /// gRPC A6 `retryThrottling`, the same bucket retries use: every handled failure takes
    /// a token, every success gives back `token_ratio`, and hedges go only while the count
    /// is above half.
    Throttle(TokenBucketConfig),
    /// Finagle: a backup needs a withdrawal from its own `RetryBudget` (`maxExtraLoad`
    /// of requests over 10 s, plus 10/s) *and* from the client's retry budget, which its
    /// retries share.
    Budgets {
        /// The filter's own budget.
        own: PercentConfig,
        /// The client's `Retries.Budget`.
        client: Option<PercentConfig>,
    },
}

/// A hedging policy.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HedgePolicy {
    /// Attempts at most, the original included (2 to [`MAX_ATTEMPTS`]).
    pub max_attempts: u8,
    /// When hedges go.
    pub delay: Delay,
    /// Failures another attempt may make good.
    pub handles: Handles,
    /// What such a failure does.
    pub on_failure: OnFailure,
    /// Whether the attempts still out are cancelled when one answers. If not, they run to
    /// the end and their answers are discarded: the server does the work either way.
    pub cancel_losers: bool,
    /// The limit beyond `max_attempts`.
    pub gate: Gate,
}

/// A named hedging replica.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HedgeProfile {
    /// gRPC A6 `hedgingPolicy` (grpc/proposal `A6-client-retries.md`; grpc-java
    /// `RetriableStream`), with the spec's example: `maxAttempts` 4 (the client caps it at
    /// 5), `hedgingDelay` 0.5 s, `nonFatalStatusCodes` UNAVAILABLE, INTERNAL, ABORTED
    /// (HTTP 503, 500, 409; no response is UNAVAILABLE, a deadline is fatal), and
    /// `retryThrottling` 10 tokens, ratio 0.1. A non-fatal answer sends the next hedge at
    /// once; `grpc-retry-pushback-ms` delays it or stops hedging; any other answer commits
    /// and cancels the rest. The throttle is checked when a hedge is due, as the spec says;
    /// grpc-java checks it when it schedules the hedge, one delay earlier.
    GrpcHedging,
    /// Polly v8 `HedgingStrategyOptions` (`src/Polly.Core/Hedging/HedgingConstants.cs`,
    /// `docs/strategies/hedging.md`): `MaxHedgedAttempts` 1 (so 2 attempts), `Delay` 2 s,
    /// `ShouldHandle` any exception but cancellation: an error or timeout sends the next
    /// hedge at once; an HTTP response, even a 503, is accepted. The others are cancelled.
    PollyHedging,
    /// Finagle `MethodBuilder.idempotent(0.01)` over HTTP (finagle-core
    /// `client/BackupRequestFilter.scala`, `util/WindowedPercentileHistogram.scala`;
    /// finagle-http `MethodBuilder.scala`): one backup at the p99 (≥ 1 ms, from 3 × 10 s
    /// buckets, refreshed every 3 s; none at or past 2000 ms), a 1% + 10/s budget and the
    /// client's 20% + 10/s budget, `ServerErrorsAsFailures`, and `sendInterrupts = false`:
    /// the loser is not cancelled.
    FinagleBackup,
    /// tower 0.5 `hedge::Hedge` (`tower/src/hedge/`), with its own tests' settings
    /// (`tower/tests/hedge/main.rs`): one hedge at the p90 of the previous 60 s period once
    /// it holds 10 latencies; the first answer wins, an error included; the loser is dropped.
    TowerHedge,
}

impl HedgeProfile {
    /// Every replica.
    pub const ALL: [HedgeProfile; 4] = [
        HedgeProfile::GrpcHedging,
        HedgeProfile::PollyHedging,
        HedgeProfile::FinagleBackup,
        HedgeProfile::TowerHedge,
    ];

    /// The scenario spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            HedgeProfile::GrpcHedging => "grpc-hedging",
            HedgeProfile::PollyHedging => "polly-hedging",
            HedgeProfile::FinagleBackup => "finagle-backup",
            HedgeProfile::TowerHedge => "tower-hedge",
        }
    }
}

impl fmt::Display for HedgeProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for HedgeProfile {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        HedgeProfile::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| {
                let names: Vec<_> = HedgeProfile::ALL.iter().map(|p| p.as_str()).collect();
                format!(
                    "unknown hedging profile `{s}` (known: {})",
                    names.join(", ")
                )
            })
    }
}

/// gRPC's non-fatal example codes as HTTP statuses: UNAVAILABLE, INTERNAL, ABORTED.
const GRPC_NON_FATAL: &[u16] = &[503, 500, 409];

impl HedgePolicy {
    /// A replica's defaults.
    pub fn new(profile: HedgeProfile) -> HedgePolicy {
        match profile {
            HedgeProfile::GrpcHedging => HedgePolicy {
                max_attempts: 4,
                delay: Delay::Fixed(Duration::from_millis(500)),
                handles: Handles {
                    server_errors: false,
                    statuses: GRPC_NON_FATAL,
                    errors: true,
                    timeouts: false,
                    grpc: Codes::EMPTY,
                },
                on_failure: OnFailure::SendNext,
                cancel_losers: true,
                gate: Gate::Throttle(TokenBucketConfig::default()),
            },
            HedgeProfile::PollyHedging => HedgePolicy {
                max_attempts: 2,
                delay: Delay::Fixed(Duration::from_secs(2)),
                handles: Handles {
                    errors: true,
                    timeouts: true,
                    ..Handles::NOTHING
                },
                on_failure: OnFailure::SendNext,
                cancel_losers: true,
                gate: Gate::Open,
            },
            HedgeProfile::FinagleBackup => HedgePolicy::finagle(0.01),
            HedgeProfile::TowerHedge => HedgePolicy {
                max_attempts: 2,
                delay: Delay::Latency(LatencyConfig::Tower(TowerLatency {
                    min_data_points: 10,
                    percentile: 0.9,
                    period: Duration::from_secs(60),
                })),
                handles: Handles::NOTHING,
                on_failure: OnFailure::Await,
                cancel_losers: true,
                gate: Gate::Open,
            },
        }
    }

    /// Finagle's HTTP `MethodBuilder.idempotent(max_extra_load)`.
    pub fn finagle(max_extra_load: f64) -> HedgePolicy {
        HedgePolicy {
            max_attempts: 2,
            delay: Delay::Latency(LatencyConfig::Finagle(FinagleLatency::new(max_extra_load))),
            handles: Handles {
                server_errors: true,
                statuses: &[],
                errors: true,
                timeouts: true,
                grpc: Codes::EMPTY,
            },
            on_failure: OnFailure::Await,
            cancel_losers: false,
            gate: Gate::Budgets {
                // An out-of-range load keeps the default here; `validate` names it.
                own: {
                    let d = PercentConfig::default();
                    PercentConfig::new(d.ttl(), d.min_per_sec(), max_extra_load).unwrap_or(d)
                },
                client: Some(PercentConfig::default()),
            },
        }
    }

    /// Checks what the state machine relies on.
    pub fn validate(&self) -> Result<(), HedgeError> {
        if !(2..=MAX_ATTEMPTS).contains(&self.max_attempts) {
            return Err(HedgeError::MaxAttempts(self.max_attempts));
        }
        if let Delay::Latency(LatencyConfig::Finagle(f)) = self.delay {
            if !(0.0..1.0).contains(&f.max_extra_load) {
                return Err(HedgeError::Ratio(f.max_extra_load));
            }
        }
        if let Delay::Latency(LatencyConfig::Tower(t)) = self.delay {
            if !(0.0..=1.0).contains(&t.percentile) {
                return Err(HedgeError::Ratio(t.percentile));
            }
        }
        Ok(())
    }
}

impl fmt::Display for HedgePolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "up to {} attempts", self.max_attempts)?;
        match self.delay {
            Delay::Fixed(d) if d.is_zero() => write!(f, ", all at once")?,
            Delay::Fixed(d) => write!(f, ", one every {}ms", d.as_millis())?,
            Delay::Latency(LatencyConfig::Finagle(l)) => write!(
                f,
                ", at the p{} latency (≥{}ms)",
                100.0 * (1.0 - l.max_extra_load),
                l.min_ms
            )?,
            Delay::Latency(LatencyConfig::Tower(t)) => write!(
                f,
                ", at the p{} latency of the last {}s (≥{} points)",
                100.0 * t.percentile,
                t.period.as_secs(),
                t.min_data_points
            )?,
        }
        match self.on_failure {
            OnFailure::SendNext => write!(f, ", a handled failure sends the next at once")?,
            OnFailure::Await => write!(f, ", a handled failure waits for the others")?,
        }
        match self.gate {
            Gate::Open => {}
            Gate::Throttle(t) => write!(
                f,
                ", throttled ({} tokens, ratio {})",
                t.max_tokens(),
                t.token_ratio()
            )?,
            Gate::Budgets { own, client } => {
                write!(
                    f,
                    ", budget {}% + {}/s",
                    own.percent() * 100.0,
                    own.min_per_sec()
                )?;
                if let Some(c) = client {
                    write!(
                        f,
                        " and the client's {}% + {}/s",
                        c.percent() * 100.0,
                        c.min_per_sec()
                    )?;
                }
            }
        }
        f.write_str(if self.cancel_losers {
            ", losers cancelled"
        } else {
            ", losers run on"
        })
    }
}

/// A hedging policy that cannot work, from [`HedgePolicy::validate`].
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum HedgeError {
    /// `max_attempts` outside 2..=11.
    MaxAttempts(u8),
    /// A load fraction or percentile outside its range.
    Ratio(f64),
}

impl fmt::Display for HedgeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HedgeError::MaxAttempts(n) => write!(
                f,
                "hedging max_attempts must be within 2..={MAX_ATTEMPTS}, got {n}"
            ),
            HedgeError::Ratio(r) => write!(
                f,
                "a hedging load fraction or percentile must be within [0, 1), got {r}"
            ),
        }
    }
}

impl std::error::Error for HedgeError {}
