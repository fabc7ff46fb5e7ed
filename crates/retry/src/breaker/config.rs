//! What a breaker is made of: when it trips, how long it stays open, and how it probes.
//! Plus the named replicas, each with the file and version it was read from.
//!
//! A replica is data, like a retry [`crate::Profile`]: the rules below are the union of
//! what the libraries do, and each library is one value of them. Where two libraries
//! differ in a detail that changes what the server receives (`>` against `>=` on a
//! threshold, whether a call that arrives while half-open is turned away or made to wait,
//! whether the counts survive a close), the detail is a field, not a comment.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

/// When a closed breaker opens.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Trip {
    /// On the `failures`-th failure in a row; a success starts the count again.
    Consecutive {
        /// Failures in a row that open it.
        failures: u32,
    },
    /// eapache go-resiliency: errors are counted while closed, successes don't reset them;
    /// the count starts again when an error comes more than `expiry` after the last
    /// counted one; it opens when the count reaches `errors`.
    ErrorsWithin {
        /// Errors that open it.
        errors: u32,
        /// How long a counted error keeps the count alive.
        expiry: Duration,
    },
    /// resilience4j `COUNT_BASED`: the failure ratio over the last `size` results, once
    /// at least `min(min_calls, size)` are in, checked after every result (a success can
    /// open it, by bringing the count up to `min_calls`).
    CountWindow {
        /// Results kept.
        size: u32,
        /// Results needed before the ratio counts.
        min_calls: u32,
        /// Opens at a failure ratio at or above this.
        ratio: f64,
    },
    /// A failure ratio over a time window with a minimum number of calls.
    TimeWindow(TimeWindow),
    /// failsafe-rs `Config::new()`: `consecutive` failures in a row, or (the other policy
    /// of its `or_else`) an exponentially weighted success rate below `success_rate` with at
    /// least `min_requests` calls counted over `window`, looked at only once `window` has
    /// passed since the breaker was (re)closed. Each rule opens for its own equal-jittered
    /// backoff, `b/2 + U{0..=b/2}` whole seconds with `b = min(base·2^k, max)`, `k` the
    /// times that rule has opened it since it last closed; when both fire, the longer wins.
    Failsafe {
        /// Failures in a row that open it.
        consecutive: u32,
        /// The success rate below which it opens.
        success_rate: f64,
        /// Calls needed in the window.
        min_requests: u32,
        /// The window (and the EWMA's time constant).
        window: Duration,
        /// The backoff's base.
        base: Duration,
        /// The backoff's cap.
        max: Duration,
    },
}

/// How a time window counts and when it is looked at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Sampling {
    /// Polly v8: `window / 10` sub-windows, each starting at the first result after the
    /// previous one ended; looked at after each failure.
    Rolling,
    /// Hystrix 1.5: buckets of `every` on a fixed grid; the breaker looks only at the
    /// health snapshot published as each bucket completes, so it opens on a bucket
    /// boundary, not on the failure that crossed the threshold.
    Snapshot {
        /// The bucket (and snapshot) interval.
        every: Duration,
    },
    /// opossum: `buckets` buckets on a fixed grid, rotated by an interval timer from the
    /// breaker's creation; the window is the current bucket and the ones before it. Every
    /// call is counted when it is fired (rejected ones too) and failures when they end;
    /// looked at after each failure. The counts are never cleared by a close.
    Fired {
        /// Buckets in the window.
        buckets: u32,
    },
}

/// A failure ratio over a time window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct TimeWindow {
    /// The window's length.
    pub window: Duration,
    /// Calls needed in the window before the ratio counts.
    pub min_calls: u32,
    /// The failure ratio that opens it.
    pub ratio: f64,
    /// Opens only strictly above `ratio` (opossum), not at it.
    pub strictly_above: bool,
    /// Hystrix compares a whole percentage, truncated.
    pub whole_percent: bool,
    /// How the window counts.
    pub sampling: Sampling,
}

/// How a half-open breaker decides.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum Probe {
    /// Any failure reopens it; this many successes close it.
    Successes(u32),
    /// resilience4j: once all `calls` have answered, a failure ratio at or above this
    /// reopens it, else it closes.
    Rate(f64),
    /// cockatiel's `halfOpenSampling`: it reopens as soon as failures exceed this fraction
    /// of `calls`, and closes once `calls` have answered without that.
    Tolerate(f64),
}

/// What happens to a call that arrives while half-open when the half-open calls are used.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OverLimit {
    /// Turned away at once, like a call while open.
    Reject,
    /// cockatiel: held until the probes decide, then admitted or rejected by the new state.
    Wait,
}

/// The half-open rule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HalfOpen {
    /// Calls admitted per half-open period (`u32::MAX`: every call, as pybreaker,
    /// go-resiliency and failsafe-rs do until the first result decides).
    pub calls: u32,
    /// How the answers decide.
    pub probe: Probe,
    /// What a call beyond `calls` meets.
    pub over_limit: OverLimit,
}

impl HalfOpen {
    /// One probe, closing on its success, reopening on its failure; others rejected.
    pub const ONE: HalfOpen = HalfOpen {
        calls: 1,
        probe: Probe::Successes(1),
        over_limit: OverLimit::Reject,
    };
}

/// A breaker's configuration.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct BreakerConfig {
    /// When it opens.
    pub trip: Trip,
    /// How long it stays open (failsafe-rs draws its own; see [`Trip::Failsafe`]).
    pub open_for: Duration,
    /// Half-open only once strictly more than `open_for` has passed (`now > until`), as
    /// gobreaker, resilience4j, Hystrix and failsafe-rs compare; the others at `now ≥ until`.
    pub strictly_after: bool,
    /// The half-open rule.
    pub half_open: HalfOpen,
    /// gobreaker's generations: a result from a call admitted before the last state
    /// change is dropped. The others count it in the state it arrives in.
    pub drop_stale: bool,
    /// pybreaker's lock: `CircuitBreaker.call` runs `with self._lock: return
    /// self.state.call(func, …)`, so the breaker's lock is held for the whole wrapped call
    /// and calls through one breaker run one at a time. A call waits for the lock before
    /// the breaker is even asked ([`super::Admission::Locked`]): shared by a threaded
    /// application's requests, the breaker caps them at one call per service time, and
    /// calls that queued behind the one that opened it are turned away when their turn
    /// comes. The others let calls run side by side.
    pub one_at_a_time: bool,
}

/// A named breaker replica.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BreakerProfile {
    /// resilience4j `CircuitBreakerConfig.ofDefaults()` (2.x,
    /// `resilience4j-circuitbreaker/.../CircuitBreakerConfig.java` and
    /// `internal/CircuitBreakerStateMachine.java`): `COUNT_BASED` window of 100,
    /// `minimumNumberOfCalls` 100, `failureRateThreshold` 50% (`>=`),
    /// `waitDurationInOpenState` 60 s, left on the first `tryAcquirePermission` once
    /// `clock.instant().isAfter(retryAfterWaitDuration)`; `permittedNumberOfCallsInHalfOpenState`
    /// 10, others rejected, decided on the 10 answers at the same 50%. Slow-call rules
    /// (100% at 60 s) are not modelled: herd's attempt timeouts end calls first.
    Resilience4j,
    /// Polly v8 `CircuitBreakerStrategyOptions` (`src/Polly.Core/CircuitBreaker/CircuitBreakerConstants.cs`,
    /// `Controller/CircuitStateController.cs`, `Controller/AdvancedCircuitBehavior.cs`,
    /// `Health/RollingHealthMetrics.cs`, main 2026-08): `FailureRatio` 0.1 (`>=`) over
    /// `SamplingDuration` 30 s in ten rolling sub-windows, `MinimumThroughput` 100,
    /// `BreakDuration` 5 s, half-open when `now >= blockedUntil`; one probe, others
    /// rejected; the probe's success closes and resets the metrics.
    PollyBreaker,
    /// Hystrix 1.5 `HystrixCommandProperties` defaults and `HystrixCircuitBreaker.HystrixCircuitBreakerImpl`:
    /// `requestVolumeThreshold` 20 and `errorThresholdPercentage` 50 over the 10 s rolling
    /// window, judged on the health snapshot published every 500 ms
    /// (`metrics.healthSnapshot.intervalInMilliseconds`); `sleepWindowInMilliseconds` 5000,
    /// then one trial once `now > openedAt + 5000`; its success closes and resets the stream.
    Hystrix,
    /// sony/gobreaker v2 `Settings{}` (`v2/gobreaker.go`, v2.4.0): `ReadyToTrip` is
    /// `ConsecutiveFailures > 5` (the 6th), `Interval` 0 (closed counts never cleared),
    /// `Timeout` 60 s (`expiry.Before(now)`), `MaxRequests` 0 → 1: one half-open request,
    /// any failure reopens; results from an earlier generation are dropped.
    Gobreaker,
    /// pybreaker 1.4.1 `CircuitBreaker()` (`src/pybreaker/__init__.py`): `fail_max` 5
    /// (`counter >= fail_max`, so the 5th failure in a row), `reset_timeout` 60 s
    /// (half-open unless `now < opened_at + timeout`), `success_threshold` 1. Half-open has
    /// no admission limit: every call goes through until a result decides. The call that
    /// trips it did reach the server; it raises `CircuitBreakerError` instead of its error.
    /// `call` holds the breaker's lock for the whole call: calls through it run one at a
    /// time ([`BreakerConfig::one_at_a_time`]).
    Pybreaker,
    /// failsafe-rs 1.3.0 `Config::new()` (`src/config.rs`, `src/failure_policy.rs`,
    /// `src/state_machine.rs`, `src/backoff.rs`): 5 consecutive failures, or a success
    /// rate (EWMA over 30 s) below 80% with at least 5 requests, each opening for
    /// `equal_jittered(10 s, 300 s)`: 5–10 s the first time, doubling to 150–300 s.
    /// Half-open (`now > until`) admits every call; the first success closes, the first
    /// failure reopens.
    Failsafe,
    /// opossum 10.0.0 defaults (`lib/circuit.js`, `lib/status.js`):
    /// `errorThresholdPercentage` 50 compared strictly (`>`), `volumeThreshold` 0 (so the
    /// first call's failure opens it), `rollingCountTimeout` 10 s in 10 buckets (rejected
    /// calls count as fires), `resetTimeout` 30 s by timer; half-open lets one call through
    /// (`PENDING_CLOSE`), rejects the rest; its success closes.
    Opossum,
    /// cockatiel 4.0.0 (`src/CircuitBreakerPolicy.ts`, `src/breaker/ConsecutiveBreaker.ts`),
    /// which has no default breaker: the README's `circuitBreaker(handleAll,
    /// { halfOpenAfter: 10 * 1000, breaker: new ConsecutiveBreaker(5) })`. Opens on the
    /// 5th failure in a row; half-open once `Date.now() - openedAt >= 10 s`; the default
    /// `halfOpenSampling` `{ calls: 1, threshold: 0 }`; other calls *wait* for the probe's
    /// decision, then run (closed) or fail (reopened).
    Cockatiel,
    /// eapache go-resiliency `breaker.New(5, 1, time.Second)` (`breaker/breaker.go`, v1.7.0):
    /// 5 errors, each within 1 s of the last counted one, open it for 1 s (a timer
    /// goroutine); half-open admits every call; one success closes, any error reopens.
    GoResiliency,
}

impl BreakerProfile {
    /// Every replica.
    pub const ALL: [BreakerProfile; 9] = [
        BreakerProfile::Resilience4j,
        BreakerProfile::PollyBreaker,
        BreakerProfile::Hystrix,
        BreakerProfile::Gobreaker,
        BreakerProfile::Pybreaker,
        BreakerProfile::Failsafe,
        BreakerProfile::Opossum,
        BreakerProfile::Cockatiel,
        BreakerProfile::GoResiliency,
    ];

    /// The scenario spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            BreakerProfile::Resilience4j => "resilience4j",
            BreakerProfile::PollyBreaker => "polly-breaker",
            BreakerProfile::Hystrix => "hystrix",
            BreakerProfile::Gobreaker => "gobreaker",
            BreakerProfile::Pybreaker => "pybreaker",
            BreakerProfile::Failsafe => "failsafe",
            BreakerProfile::Opossum => "opossum",
            BreakerProfile::Cockatiel => "cockatiel",
            BreakerProfile::GoResiliency => "go-resiliency",
        }
    }
}

impl fmt::Display for BreakerProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for BreakerProfile {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        BreakerProfile::ALL
            .into_iter()
            .find(|p| p.as_str() == s)
            .ok_or_else(|| {
                let names: Vec<_> = BreakerProfile::ALL.iter().map(|p| p.as_str()).collect();
                format!("unknown breaker `{s}` (known: {})", names.join(", "))
            })
    }
}

const fn secs(s: u64) -> Duration {
    Duration::from_secs(s)
}

impl BreakerConfig {
    /// A replica's defaults.
    pub fn new(profile: BreakerProfile) -> BreakerConfig {
        match profile {
            BreakerProfile::Resilience4j => BreakerConfig {
                trip: Trip::CountWindow {
                    size: 100,
                    min_calls: 100,
                    ratio: 0.5,
                },
                open_for: secs(60),
                strictly_after: true,
                half_open: HalfOpen {
                    calls: 10,
                    probe: Probe::Rate(0.5),
                    over_limit: OverLimit::Reject,
                },
                drop_stale: false,
                one_at_a_time: false,
            },
            BreakerProfile::PollyBreaker => BreakerConfig {
                trip: Trip::TimeWindow(TimeWindow {
                    window: secs(30),
                    min_calls: 100,
                    ratio: 0.1,
                    strictly_above: false,
                    whole_percent: false,
                    sampling: Sampling::Rolling,
                }),
                open_for: secs(5),
                strictly_after: false,
                half_open: HalfOpen::ONE,
                drop_stale: false,
                one_at_a_time: false,
            },
            BreakerProfile::Hystrix => BreakerConfig {
                trip: Trip::TimeWindow(TimeWindow {
                    window: secs(10),
                    min_calls: 20,
                    ratio: 0.5,
                    strictly_above: false,
                    whole_percent: true,
                    sampling: Sampling::Snapshot {
                        every: Duration::from_millis(500),
                    },
                }),
                open_for: secs(5),
                strictly_after: true,
                half_open: HalfOpen::ONE,
                drop_stale: false,
                one_at_a_time: false,
            },
            BreakerProfile::Gobreaker => BreakerConfig {
                trip: Trip::Consecutive { failures: 6 },
                open_for: secs(60),
                strictly_after: true,
                half_open: HalfOpen::ONE,
                drop_stale: true,
                one_at_a_time: false,
            },
            BreakerProfile::Pybreaker => BreakerConfig {
                trip: Trip::Consecutive { failures: 5 },
                open_for: secs(60),
                strictly_after: false,
                half_open: HalfOpen {
                    calls: u32::MAX,
                    ..HalfOpen::ONE
                },
                drop_stale: false,
                one_at_a_time: true,
            },
            BreakerProfile::Failsafe => BreakerConfig {
                trip: Trip::Failsafe {
                    consecutive: 5,
                    success_rate: 0.8,
                    min_requests: 5,
                    window: secs(30),
                    base: secs(10),
                    max: secs(300),
                },
                open_for: secs(10),
                strictly_after: true,
                half_open: HalfOpen {
                    calls: u32::MAX,
                    ..HalfOpen::ONE
                },
                drop_stale: false,
                one_at_a_time: false,
            },
            BreakerProfile::Opossum => BreakerConfig {
                trip: Trip::TimeWindow(TimeWindow {
                    window: secs(10),
                    min_calls: 0,
                    ratio: 0.5,
                    strictly_above: true,
                    whole_percent: false,
                    sampling: Sampling::Fired { buckets: 10 },
                }),
                open_for: secs(30),
                strictly_after: false,
                half_open: HalfOpen::ONE,
                drop_stale: false,
                one_at_a_time: false,
            },
            BreakerProfile::Cockatiel => BreakerConfig {
                trip: Trip::Consecutive { failures: 5 },
                open_for: secs(10),
                strictly_after: false,
                half_open: HalfOpen {
                    calls: 1,
                    probe: Probe::Tolerate(0.0),
                    over_limit: OverLimit::Wait,
                },
                drop_stale: false,
                one_at_a_time: false,
            },
            BreakerProfile::GoResiliency => BreakerConfig::go_resiliency(5, 1, secs(1)),
        }
    }

    /// eapache go-resiliency's `breaker.New(errorThreshold, successThreshold, timeout)`.
    pub fn go_resiliency(errors: u32, successes: u32, timeout: Duration) -> BreakerConfig {
        BreakerConfig {
            trip: Trip::ErrorsWithin {
                errors,
                expiry: timeout,
            },
            open_for: timeout,
            strictly_after: false,
            half_open: HalfOpen {
                calls: u32::MAX,
                probe: Probe::Successes(successes),
                over_limit: OverLimit::Reject,
            },
            drop_stale: false,
            one_at_a_time: false,
        }
    }

    /// pybreaker's `CircuitBreaker(fail_max, reset_timeout)`.
    pub fn pybreaker(fail_max: u32, reset_timeout: Duration) -> BreakerConfig {
        BreakerConfig {
            trip: Trip::Consecutive { failures: fail_max },
            open_for: reset_timeout,
            ..BreakerConfig::new(BreakerProfile::Pybreaker)
        }
    }

    /// Checks what the state machine relies on.
    pub fn validate(&self) -> Result<(), BreakerError> {
        let ratio_ok = |r: f64| (0.0..=1.0).contains(&r);
        match self.trip {
            Trip::Consecutive { failures: 0 } | Trip::ErrorsWithin { errors: 0, .. } => {
                return Err(BreakerError::ZeroThreshold)
            }
            Trip::CountWindow { size: 0, .. } => return Err(BreakerError::ZeroWindow),
            Trip::CountWindow { ratio, .. } if !ratio_ok(ratio) => {
                return Err(BreakerError::Ratio(ratio))
            }
            Trip::TimeWindow(w) => {
                if w.window.is_zero() {
                    return Err(BreakerError::ZeroWindow);
                }
                if !ratio_ok(w.ratio) {
                    return Err(BreakerError::Ratio(w.ratio));
                }
                match w.sampling {
                    Sampling::Snapshot { every } if every.is_zero() || every > w.window => {
                        return Err(BreakerError::ZeroWindow)
                    }
                    Sampling::Fired { buckets: 0 } => return Err(BreakerError::ZeroWindow),
                    _ => {}
                }
            }
            Trip::Failsafe {
                consecutive,
                success_rate,
                window,
                base,
                max,
                ..
            } => {
                if consecutive == 0 {
                    return Err(BreakerError::ZeroThreshold);
                }
                if !ratio_ok(success_rate) {
                    return Err(BreakerError::Ratio(success_rate));
                }
                if window.as_millis() < 5 || base.as_secs() == 0 || max < base {
                    return Err(BreakerError::ZeroWindow);
                }
            }
            _ => {}
        }
        if self.half_open.calls == 0 {
            return Err(BreakerError::ZeroThreshold);
        }
        match self.half_open.probe {
            Probe::Successes(0) => Err(BreakerError::ZeroThreshold),
            Probe::Rate(r) | Probe::Tolerate(r) if !ratio_ok(r) => Err(BreakerError::Ratio(r)),
            Probe::Rate(_) | Probe::Tolerate(_) if self.half_open.calls == u32::MAX => {
                Err(BreakerError::UnboundedSample)
            }
            _ => Ok(()),
        }
    }
}

impl fmt::Display for BreakerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.trip {
            Trip::Consecutive { failures } => write!(f, "opens on the {failures}th failure in a row")?,
            Trip::ErrorsWithin { errors, expiry } => write!(
                f,
                "opens on {errors} errors each within {}ms of the last",
                expiry.as_millis()
            )?,
            Trip::CountWindow { size, min_calls, ratio } => write!(
                f,
                "opens at {}% failures of the last {size} calls (at least {min_calls})",
                ratio * 100.0
            )?,
            Trip::TimeWindow(w) => write!(
                f,
                "opens at {}{}% failures over {}s (at least {} calls)",
                if w.strictly_above { ">" } else { "≥" },
                w.ratio * 100.0,
                w.window.as_secs_f64(),
                w.min_calls
            )?,
            Trip::Failsafe { consecutive, success_rate, min_requests, window, base, max } => write!(
                f,
                "opens on {consecutive} failures in a row or a success rate under {}% over {}s (at least {min_requests}), for {}–{}s jittered",
                success_rate * 100.0,
                window.as_secs(),
                base.as_secs() / 2,
                max.as_secs()
            )?,
        }
        if !matches!(self.trip, Trip::Failsafe { .. }) {
            write!(f, ", open {}ms", self.open_for.as_millis())?;
        }
        let h = self.half_open;
        match h.calls {
            u32::MAX => write!(f, ", half-open admits every call")?,
            n => write!(f, ", half-open admits {n}")?,
        }
        match h.probe {
            Probe::Successes(n) => write!(f, ", {n} success(es) close, a failure reopens"),
            Probe::Rate(r) => write!(f, ", reopens at ≥{}% failures of them", r * 100.0),
            Probe::Tolerate(r) => write!(f, ", reopens above {}% failures of them", r * 100.0),
        }?;
        if h.over_limit == OverLimit::Wait {
            write!(f, ", others wait for the decision")?;
        }
        if self.one_at_a_time {
            write!(f, "; calls hold its lock, one at a time")?;
        }
        Ok(())
    }
}

/// A configuration the breaker cannot run, from [`BreakerConfig::validate`].
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum BreakerError {
    /// A count that must be at least 1 is 0.
    ZeroThreshold,
    /// A window, bucket or backoff is empty or inconsistent.
    ZeroWindow,
    /// A ratio outside [0, 1].
    Ratio(f64),
    /// A ratio-judged half-open state must admit a bounded number of calls.
    UnboundedSample,
}

impl fmt::Display for BreakerError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BreakerError::ZeroThreshold => {
                f.write_str("a breaker threshold or half-open count must be at least 1")
            }
            BreakerError::ZeroWindow => f.write_str(
                "a breaker window, bucket or backoff must be longer than 0 and consistent",
            ),
            BreakerError::Ratio(r) => write!(f, "a breaker ratio must be within [0, 1], got {r}"),
            BreakerError::UnboundedSample => {
                f.write_str("a half-open rule judged on a ratio needs a bounded number of calls")
            }
        }
    }
}

impl std::error::Error for BreakerError {}
