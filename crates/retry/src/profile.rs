//! Profiles: the *defaults* of real retry libraries, replicated as data.
//!
//! A profile is more than a delay formula: it is which outcomes are retried, on which
//! methods, how many times, and what a `Retry-After` header does. Each one below cites the
//! source it was read from. Any profile can have its jitter (and other knobs) overridden, so
//! "axios-retry without jitter" and "undici with full jitter" are one line each.
//!
//! The most-installed retry packages of Node, Python and Rust (got, ky, p-retry, stamina,
//! backoff, backon) are here too; the rules only they have (got's and ky's status lists)
//! live in the `packages` module, with the exact-sequence tests of all six.

use crate::backoff::Backoff;
use crate::budget::{BudgetConfig, ConcurrencyConfig, PercentConfig, QuotaConfig};
use crate::classify::{Failure, Method, Outcome};
use crate::jitter::Jitter;
use crate::retry_after::{AboveMax, RetryAfter, RetryAfterMode};
use std::fmt;
use std::str::FromStr;
use std::time::Duration;

mod packages;

/// A named retry profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Profile {
    /// undici's `RetryHandler` / `RetryAgent` defaults (undici 6–7, `lib/handler/retry-handler.js`):
    /// `maxRetries: 5`, `minTimeout: 500`, `timeoutFactor: 2`, `maxTimeout: 30000`, so retry
    /// `n` waits `min(500·2^(n−1), 30000)` ms with no jitter. `Retry-After` (seconds or an
    /// HTTP-date) replaces the computed delay, capped at `maxTimeout`. Retries statuses
    /// 429, 500, 502, 503, 504 and the error codes `ECONNRESET`, `ECONNREFUSED`, `EPIPE`,
    /// `UND_ERR_SOCKET` (and DNS / unreachable codes); a headers or body timeout has another
    /// code and is not retried. Only methods GET, HEAD, OPTIONS, PUT, DELETE, TRACE.
    Undici,
    /// axios-retry 4.x with `retryDelay: exponentialDelay` (read in 4.5.0's
    /// `dist/esm/index.js`, the version `adapters/node` locks): `retries: 3`; retry `n`
    /// waits `d = max(100·2^n, Retry-After)` ms plus `U[0, 0.2·d]`, uncapped: the jitter
    /// is drawn on the larger of the two, so a hint is stretched by up to 20% too
    /// ([`RetryAfterMode::FloorThenJitter`]). Its `retryAfter` reads the header with JS
    /// `Number()` (so `1.5` is 1500 ms) and falls back to `new Date()`; herd parses RFC
    /// 9110's whole seconds and HTTP-dates only, which is all herd's upstream sends.
    /// A jitter override stands for a custom `retryDelay`, which does not read the hint
    /// (see [`crate::Policy::with_jitter`]). axios-retry's own default `retryDelay` is
    /// `noDelay` (the hint alone, else 0); this profile is the `exponentialDelay` its
    /// README shows. With `shouldResetTimeout: false` (the default) axios' `timeout` covers
    /// the whole request, retries and delays included, so the profile's deadline is the
    /// client's attempt timeout ([`Profile::default_deadline`], [`crate::Strategy::for_client`]). Default condition `isNetworkOrIdempotentRequestError`:
    /// a network error (no response, code not `ECONNABORTED` / `ERR_CANCELED`, so timeouts are
    /// not retried) on any method, or 429 / 5xx on GET, HEAD, OPTIONS, PUT, DELETE.
    AxiosRetry,
    /// No retries at all.
    None,
    /// The common hand-rolled loop: up to 3 immediate retries on any failure, any method.
    Naive,
    /// A generic exponential backoff: `retries` (default 3) retries of
    /// `min(cap_ms, base_ms·factor^(n−1))` (defaults 100 ms, 2, 10 s) with `full` jitter;
    /// retries 429, 500, 502, 503, 504, connection errors and timeouts on idempotent methods,
    /// and a refused connection on any method (it never reached the server). `Retry-After`
    /// is a floor on the delay.
    Exponential,
    /// urllib3 2.x `Retry(total=3, backoff_factor=0.5, status_forcelist=(429, 500, 502,
    /// 503, 504))`, what `requests` users mount on an `HTTPAdapter` (read in urllib3
    /// 2.8.0's `util/retry.py`). `get_backoff_time` returns 0 while fewer than two
    /// consecutive errors are in the history, so the **first retry is immediate**; retry
    /// `n ≥ 2` waits `min(backoff_max, backoff_factor·2^(n−1))` s (120 s cap), with no
    /// jitter (`backoff_jitter` defaults to 0). With `respect_retry_after_header` (the
    /// default) a `Retry-After` on 413, 429 or 503 replaces the backoff, uncapped.
    /// Statuses in the forcelist retry on `allowed_methods` (DELETE, GET, HEAD, OPTIONS,
    /// PUT, TRACE); a refused connection retries on any method, a read error (a reset or a
    /// timeout after the request went out) on those methods only.
    Urllib3,
    /// hashicorp/go-retryablehttp 0.7 defaults (read in 0.7.1's `client.go`, the version
    /// Debian packages): `RetryMax 4`, `DefaultBackoff` waits `min(1 s·2^(n−1), 30 s)`
    /// (1, 2, 4, 8 s) with **no jitter**; on 429 and 503 a `Retry-After` in seconds
    /// replaces it **without a cap** (clamp it with the arm's `retry_after.max_ms`).
    /// `DefaultRetryPolicy` retries any method on any transport error (timeouts included;
    /// not redirect, scheme or certificate errors), 429, and every 5xx but 501.
    GoRetryablehttp,
    /// tenacity 9 `wait_random_exponential(multiplier=0.5, max=30)` with
    /// `stop_after_attempt(4)`, retrying 5xx responses and connection errors (not
    /// timeouts) on any method, as herd's `py-tenacity` adapter sets it up: retry `n` waits
    /// `U[0, min(30, 0.5·2^(n−1))]` s, i.e. full jitter. tenacity never reads `Retry-After`.
    Tenacity,
    // Retry packages: got, ky, p-retry, stamina, backoff, backon.
    /// got 14 defaults (read in 14.6.6's `source/core/options.ts` and
    /// `calculate-retry-delay.ts`; got 14 is the last major that runs on Node 20): `retry.limit`
    /// 2; retry `n` waits `min(1000·2^(n−1), backoffLimit) + Math.random()·noise` ms with
    /// `backoffLimit` ∞ and `noise` 100, so 1000–1100 then 2000–2100 ms
    /// ([`Jitter::Noise`]). Statuses 408, 413, 429, 500, 502, 503, 504, 521, 522, 524, but
    /// 413 only with a `Retry-After`; codes ETIMEDOUT (got's own timeouts), ECONNRESET,
    /// ECONNREFUSED, EPIPE and DNS / unreachable codes; methods GET, PUT, HEAD, DELETE,
    /// OPTIONS, TRACE. A `Retry-After` on any of those statuses replaces the delay; above
    /// `maxRetryAfter` (default: `timeout.request`, else ∞) got gives up.
    Got,
    /// ky 1 defaults (read in 1.14.3's `source/utils/normalize.ts` and `core/Ky.ts`; ky 2
    /// needs Node 22): `retry.limit` 2, `delay` `0.3·2^(n−1)` s (300, 600 ms), no jitter,
    /// `backoffLimit` ∞. Statuses 408, 413 (with a hint only), 429, 500, 502, 503, 504 on
    /// get, put, head, delete, options, trace; a network error (fetch's TypeError) on those
    /// methods too, a timeout not (`retryOnTimeout` false). A `Retry-After` on 413, 429 or
    /// 503 replaces the delay, uncapped (`maxRetryAfter` ∞), with no jitter.
    Ky,
    /// p-retry 7–9 defaults (read in `index.js`): `retries` 10, `factor` 2, `minTimeout`
    /// 1000, `maxTimeout` ∞, `randomize` false, so retry `n` waits exactly
    /// `round(1000·2^(n−1))` ms: 1, 2, 4, … 512 s. p-retry retries whatever the function
    /// throws (but an `AbortError` or a non-network `TypeError`); around fetch, as its users
    /// write it, that is any failed response (`if (!res.ok) throw`) and any network error or
    /// timeout, on any method. No `Retry-After`.
    PRetry,
    /// stamina 26 `@stamina.retry(on=httpx.HTTPError)` defaults (read in
    /// `src/stamina/_core.py`): `attempts` 10, retry `n` waits
    /// `min(wait_max, wait_initial·2^(n−1) + U(0, wait_jitter))` = `min(5, 0.1·2^(n−1) + U(0,1))`
    /// s ([`Jitter::Noise`], the cap after the jitter), so from the 7th retry on the waits
    /// are **exactly** 5 s. Around httpx with `raise_for_status()`, every failed response and
    /// transport error (timeouts included) is an `httpx.HTTPError`: any failure, any method.
    /// Its `timeout` of 45 s (tenacity's `stop_after_delay`: no retry once 45 s have passed
    /// at a failure) is not modelled; with its waits (~25 s for ten fast failures) it binds
    /// only when attempts are slow.
    Stamina,
    /// Python backoff 2.2 `@backoff.on_exception(backoff.expo, httpx.HTTPError)` (read in
    /// `backoff/_decorator.py`, `_wait_gen.py`, `_jitter.py`): `expo` yields `1·2^n` s from
    /// n = 0, `full_jitter` draws `U(0, value)`, so retry `n` waits `U[0, 2^(n−1)]` s.
    /// `max_tries` and `max_time` default to `None`: it retries **forever**. herd stands in
    /// 25 retries: the 25th is drawn from up to 2^24 s (194 days, more than any run), the
    /// 26th would be past the 365 days herd handles. Any failure, any method, as stamina.
    Backoff,
    /// backon 1 `ExponentialBuilder::default()` (read in 1.5.2's and 1.6.0's
    /// `src/backoff/exponential.rs`, the same): `min_delay` 1 s, `factor` 2, `max_delay` 60 s,
    /// `max_times` 3, no jitter: 1, 2, 4 s. `Retryable::retry` retries every error unless
    /// `.when()` says otherwise; around reqwest with `error_for_status()`, that is any
    /// failed response and any error, on any method.
    Backon,
    /// herd's recommendation, the policy its reports argue for: 3 retries of
    /// `min(5 s, 100 ms·2^(n−1))` with full jitter; the `exponential` conditions; `Retry-After`
    /// a floor clamped to 10 s, giving up on a longer hint. Used through
    /// [`crate::Strategy::new`], it also gets a percent budget (20% over 10 s, floor 10/s)
    /// and a 10 s overall deadline.
    Herd,
    /// An Envoy route `RetryPolicy` with `retry_on: 5xx,reset,connect-failure,refused-stream`
    /// (Envoy retries nothing until `retry_on` is set; this is the common setting):
    /// `num_retries` **1**; fully jittered backoff, `[0, (2^N−1)·25 ms)` capped at
    /// 10× base = **250 ms** (`route_components.proto` RetryPolicy / RetryBackOff;
    /// `router_filter.rst`). herd's backoff is `25·2^(N−1)` ms under full jitter: the same
    /// first retry, 50 ms where Envoy has 75 for a second. Any method (Envoy does not look
    /// at idempotency), `Retry-After` ignored. Its budget is Envoy's retry circuit breaker
    /// with the default `max_retries` **3** concurrent retries per cluster
    /// (`circuit_breaker.proto`): a retry counts from the failure that grants it, through
    /// its backoff, to its own answer, and one refused is not made, the caller getting the
    /// failure (`upstream_rq_retry_overflow`); see [`crate::budget::concurrency`] for what
    /// Envoy's source counts. `budget = { kind = "concurrency", budget_percent = 20,
    /// min_retry_concurrency = 3 }` is the `retry_budget` instead (envoy PR #9069).
    Envoy,
    /// Istio with no `retries` in the VirtualService (`pilot/pkg/networking/core/route/
    /// retry/retry.go` @126806a): `NumRetries` **2**, `RetryOn`
    /// `connect-failure,refused-stream,unavailable,cancelled,retriable-status-codes` with
    /// `RetriableStatusCodes` **\[503\]**, Envoy's 25 ms / 250 ms fully jittered backoff; over
    /// HTTP that is a 503 or a connection that never reached the server (a reset after the
    /// request went out, or a timeout, is not retried). Istio sets Envoy's `max_retries` to
    /// 2³²−1 (`getDefaultCircuitBreakerThresholds`), so **nothing caps retry
    /// concurrency**: the profile carries that cap ([`crate::budget::ConcurrencyConfig::ISTIO`]),
    /// which never refuses.
    IstioDefault,
    /// Linkerd ≤ 2.15 ServiceProfile retries on an `isRetryable` route: no per-request limit,
    /// only the retry budget `retryRatio` **0.2**, `minRetriesPerSecond` **10**, `ttl`
    /// **10 s** (linkerd.io/2.10/tasks/configuring-retries), Finagle's shape, so
    /// [`crate::Strategy::for_client`] gives it the percent budget with its defaults. herd
    /// caps a request at 100 retries so that a run ends; the budget binds long before.
    /// Retries 5xx and connections that never reached the server, at once (the sources
    /// read give no backoff), on any method; `Retry-After` ignored.
    LinkerdBudget,
    /// Linkerd 2.16+ `retry.linkerd.io/http: 5xx` with `retry.linkerd.io/limit` at its
    /// default **1** (linkerd.io/2.16/tasks/configuring-retries): one immediate retry of
    /// a 5xx or a connection that never reached the server, no budget.
    LinkerdLimit,
    /// The AWS SDKs' `standard` retry mode under the **2026 rules** (Retry Behavior 2.1),
    /// what botocore 1.44 does by default (`configprovider` `retry_mode` `standard`;
    /// `botocore/retries/standard.py` @0719e79) and the Rust SDK from behaviour version
    /// v2026_11_10: 3 attempts (`DEFAULT_MAX_ATTEMPTS`; DynamoDB 4, with `retries = 3`);
    /// retry `n` waits `U(0, min(20 s, 50 ms·2^(n−1)))` after a transient error
    /// (`_NON_THROTTLING_BASE_SCALE = 0.05`; DynamoDB 25 ms, with `base_ms = 25`) and
    /// `U(0, min(20 s, 1 s·2^(n−1)))` after a throttling one; a quota of 500 tokens, 14 per
    /// retry, 5 per throttling retry, that only successes refill
    /// ([`QuotaConfig::AWS_2026`]). Retries, on any method (DynamoDB is all POST): the
    /// throttling error codes ([`crate::aws::codes`]), statuses 500, 502, 503, 504,
    /// connection errors and timeouts; **not a bare 429** (boto/botocore#2635).
    /// `x-amz-retry-after` is honoured by botocore, `Retry-After` is not; herd's upstream
    /// sends neither in its AWS dialect, so the profile ignores hints.
    AwsStandard,
    /// `standard` mode under the **2.0 rules** (before 2026, and the Rust SDK before
    /// behaviour version v2026_11_10): the conditions of [`Profile::AwsStandard`], retry
    /// `n` waits `U(0, min(20 s, 1 s·2^(n−1)))` whatever the error (`ExponentialBackoff`,
    /// `_BASE = 2`, `_MAX_BACKOFF = 20`), quota 500, 5 per retry, 10 per timeout retry
    /// ([`QuotaConfig::default`]).
    AwsStandard2_0,
    /// The AWS SDKs' `adaptive` mode: [`Profile::AwsStandard`] (2026 rules) plus the
    /// client-side CUBIC rate limiter ([`crate::aws::rate_limiter`]) that, from the first
    /// throttling error on, holds **every** attempt, first attempts included, until its
    /// token bucket has a token (β 0.7, C 0.4, 0.5 s buckets smoothed 0.8, at most 2× the
    /// measured rate, 0.5/s floor). Measured against botocore 1.44: after a throttle,
    /// requests ~2.0 s apart (0.47 req/s against 1.07 for standard).
    AwsAdaptive,
    /// botocore's `legacy` mode (`botocore/data/_retry.json`, the boto3 guide's
    /// "default"): 5 attempts, retry `n` waits `rand·2^(n−1)` s with no cap, no quota;
    /// retries the throttling codes, 429, 500, 502, 503, 504, 509, connection errors and
    /// timeouts, on any method.
    AwsLegacy,
    /// A gRPC implementation's A6 retries (`grpc-core`, `grpc-js`, `grpc-go`,
    /// `grpc-go-1.33`; see [`crate::grpc`]), configured by a service config
    /// ([`crate::grpc::replica`]). Its defaults are A6's example `retryPolicy`: 4 attempts,
    /// `initialBackoff` 0.1 s, `backoffMultiplier` 2, `maxBackoff` 1 s, the
    /// implementation's jitter, `retryableStatusCodes` UNAVAILABLE (by gRPC status:
    /// [`Outcome::grpc_code`]), on any method; `grpc-retry-pushback-ms` replaces the wait.
    Grpc(crate::grpc::Implementation),
}

impl Profile {
    /// All profile names, as accepted by `FromStr`.
    pub const NAMES: &'static [&'static str] = &[
        "undici",
        "axios-retry",
        "none",
        "naive",
        "exponential",
        "herd",
        "urllib3",
        "go-retryablehttp",
        "tenacity",
        "envoy",
        "istio-default",
        "linkerd-budget",
        "linkerd-limit",
        "aws-standard",
        "aws-standard-2.0",
        "aws-adaptive",
        "aws-legacy",
        "got",
        "ky",
        "p-retry",
        "stamina",
        "backoff",
        "backon",
        "grpc-core",
        "grpc-js",
        "grpc-go",
        "grpc-go-1.33",
    ];

    /// The profile's name.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Undici => "undici",
            Profile::AxiosRetry => "axios-retry",
            Profile::None => "none",
            Profile::Naive => "naive",
            Profile::Exponential => "exponential",
            Profile::Herd => "herd",
            Profile::Urllib3 => "urllib3",
            Profile::GoRetryablehttp => "go-retryablehttp",
            Profile::Tenacity => "tenacity",
            Profile::Envoy => "envoy",
            Profile::IstioDefault => "istio-default",
            Profile::LinkerdBudget => "linkerd-budget",
            Profile::LinkerdLimit => "linkerd-limit",
            Profile::AwsStandard => "aws-standard",
            Profile::AwsStandard2_0 => "aws-standard-2.0",
            Profile::AwsAdaptive => "aws-adaptive",
            Profile::AwsLegacy => "aws-legacy",
            Profile::Got => "got",
            Profile::Ky => "ky",
            Profile::PRetry => "p-retry",
            Profile::Stamina => "stamina",
            Profile::Backoff => "backoff",
            Profile::Backon => "backon",
            Profile::Grpc(i) => i.name(),
        }
    }

    /// How many retries the library makes by default.
    pub fn default_retries(self) -> u32 {
        match self {
            Profile::Undici => 5,
            Profile::AxiosRetry
            | Profile::Naive
            | Profile::Exponential
            | Profile::Herd
            | Profile::Urllib3
            | Profile::Tenacity => 3,
            Profile::GoRetryablehttp | Profile::AwsLegacy => 4,
            Profile::AwsStandard | Profile::AwsStandard2_0 | Profile::AwsAdaptive => 2,
            Profile::None => 0,
            Profile::Envoy | Profile::LinkerdLimit => 1,
            Profile::IstioDefault => 2,
            Profile::LinkerdBudget => 100,
            Profile::Got | Profile::Ky => 2,
            Profile::PRetry => 10,
            Profile::Stamina => 9,
            Profile::Backoff => 25,
            Profile::Backon => 3,
            Profile::Grpc(_) => 3,
        }
    }

    /// The library's default backoff.
    pub fn default_backoff(self) -> Backoff {
        let ms = Duration::from_millis;
        match self {
            Profile::Undici => Backoff {
                base: ms(500),
                factor: 2.0,
                cap: ms(30_000),
                offset: 0,
                jitter: Jitter::None,
            },
            Profile::AxiosRetry => Backoff {
                base: ms(100),
                factor: 2.0,
                cap: Duration::MAX,
                offset: 1,
                jitter: Jitter::Additive(0.2),
            },
            Profile::Envoy | Profile::IstioDefault => Backoff {
                base: ms(25),
                factor: 2.0,
                cap: ms(250),
                offset: 0,
                jitter: Jitter::Full,
            },
            Profile::None | Profile::Naive | Profile::LinkerdBudget | Profile::LinkerdLimit => {
                Backoff {
                    base: Duration::ZERO,
                    factor: 1.0,
                    cap: Duration::ZERO,
                    offset: 0,
                    jitter: Jitter::None,
                }
            }
            Profile::Exponential => Backoff {
                base: ms(100),
                factor: 2.0,
                cap: ms(10_000),
                offset: 0,
                jitter: Jitter::Full,
            },
            Profile::Herd => Backoff {
                base: ms(100),
                factor: 2.0,
                cap: ms(5_000),
                offset: 0,
                jitter: Jitter::Full,
            },
            Profile::Urllib3 => Backoff {
                base: ms(500),
                factor: 2.0,
                cap: ms(120_000),
                offset: 0,
                jitter: Jitter::None,
            },
            Profile::GoRetryablehttp => Backoff {
                base: ms(1_000),
                factor: 2.0,
                cap: ms(30_000),
                offset: 0,
                jitter: Jitter::None,
            },
            Profile::Tenacity => Backoff {
                base: ms(500),
                factor: 2.0,
                cap: ms(30_000),
                offset: 0,
                jitter: Jitter::Full,
            },
            Profile::Got
            | Profile::Ky
            | Profile::PRetry
            | Profile::Stamina
            | Profile::Backoff
            | Profile::Backon => packages::default_backoff(self),
            Profile::AwsStandard | Profile::AwsAdaptive => Backoff {
                base: ms(50),
                ..AWS_THROTTLING_BACKOFF
            },
            Profile::AwsStandard2_0 => AWS_THROTTLING_BACKOFF,
            Profile::AwsLegacy => Backoff {
                cap: Duration::MAX,
                ..AWS_THROTTLING_BACKOFF
            },
            Profile::Grpc(i) => crate::grpc::example_backoff(i),
        }
    }

    /// The backoff after a throttling error (by error code), where the library has a
    /// separate one: the 2026 AWS rules back off from 1 s, not 50 ms. `None`: the
    /// profile's backoff applies to every error.
    pub fn throttling_backoff(self) -> Option<Backoff> {
        match self {
            Profile::AwsStandard | Profile::AwsAdaptive => Some(AWS_THROTTLING_BACKOFF),
            _ => None,
        }
    }

    /// The budget the library keeps per client object: herd's percent budget (20% over
    /// 10 s, floor 10/s); the AWS SDKs' retry quota (2026 rules, or 2.0), with adaptive
    /// mode's rate limiter; Envoy's retry circuit breaker per cluster (3 concurrent
    /// retries; Istio's 2³²−1); none for the others.
    pub fn default_budget(self) -> Option<BudgetConfig> {
        match self {
            Profile::Envoy => Some(BudgetConfig::Concurrency(ConcurrencyConfig::default())),
            Profile::IstioDefault => Some(BudgetConfig::Concurrency(ConcurrencyConfig::ISTIO)),
            // herd's recommendation and Linkerd's ServiceProfile retries come with the
            // percent budget (Finagle's shape, which Linkerd's defaults match).
            Profile::Herd | Profile::LinkerdBudget => {
                Some(BudgetConfig::Percent(PercentConfig::default()))
            }
            Profile::AwsStandard => Some(BudgetConfig::Quota(QuotaConfig::AWS_2026)),
            Profile::AwsStandard2_0 => Some(BudgetConfig::Quota(QuotaConfig::default())),
            Profile::AwsAdaptive => Some(BudgetConfig::AwsAdaptive(QuotaConfig::AWS_2026)),
            _ => None,
        }
    }

    /// Retries before this one go out at once, whatever the backoff: urllib3 waits only
    /// from the second consecutive error on. 1 for every other profile.
    pub fn first_backoff_retry(self) -> u32 {
        match self {
            Profile::Urllib3 => 2,
            _ => 1,
        }
    }

    /// Whether the library reads a `Retry-After` hint on this outcome at all: urllib3
    /// only on 413, 429 and 503, go-retryablehttp only on 429 and 503; the others on any
    /// response they retry.
    pub fn reads_retry_after(self, outcome: &Outcome) -> bool {
        match (self, outcome) {
            (Profile::Urllib3, Outcome::Response { status, .. }) => {
                matches!(status, 413 | 429 | 503)
            }
            (Profile::GoRetryablehttp, Outcome::Response { status, .. }) => {
                matches!(status, 429 | 503)
            }
            (Profile::Ky, Outcome::Response { status, .. }) => matches!(status, 413 | 429 | 503),
            _ => true,
        }
    }

    /// The overall deadline of a request under this profile, for a client whose attempts
    /// time out after `attempt_timeout`. axios' `timeout` covers the whole request, retries
    /// and delays included (`shouldResetTimeout: false`, axios-retry's default), so under
    /// axios-retry the attempt timeout is the deadline too; herd's profile has its 10 s; the
    /// other libraries have none.
    pub fn default_deadline(self, attempt_timeout: Option<Duration>) -> Option<Duration> {
        match self {
            Profile::AxiosRetry => attempt_timeout,
            Profile::Herd => Some(Duration::from_secs(10)),
            _ => None,
        }
    }

    /// What a `Retry-After` hint does under this profile by default.
    pub fn default_retry_after(self) -> RetryAfter {
        let wait = |mode, max| RetryAfter {
            mode,
            min: Duration::ZERO,
            max,
            above_max: AboveMax::WaitMax,
        };
        match self {
            Profile::Undici => wait(RetryAfterMode::Replace, Duration::from_millis(30_000)),
            Profile::AxiosRetry => wait(RetryAfterMode::FloorThenJitter, Duration::MAX),
            Profile::Exponential => wait(RetryAfterMode::Floor, Duration::MAX),
            Profile::Herd => RetryAfter {
                mode: RetryAfterMode::Floor,
                min: Duration::ZERO,
                max: Duration::from_secs(10),
                above_max: AboveMax::GiveUp,
            },
            Profile::Urllib3 | Profile::GoRetryablehttp => {
                wait(RetryAfterMode::Replace, Duration::MAX)
            }
            Profile::None
            | Profile::Naive
            | Profile::Tenacity
            | Profile::Envoy
            | Profile::IstioDefault
            | Profile::LinkerdBudget
            | Profile::LinkerdLimit
            | Profile::AwsStandard
            | Profile::AwsStandard2_0
            | Profile::AwsAdaptive
            | Profile::AwsLegacy => RetryAfter::IGNORE,
            Profile::Got | Profile::Ky => wait(RetryAfterMode::Replace, Duration::MAX),
            Profile::PRetry | Profile::Stamina | Profile::Backoff | Profile::Backon => {
                RetryAfter::IGNORE
            }
            // `grpc-retry-pushback-ms`, uncapped.
            Profile::Grpc(_) => wait(RetryAfterMode::Replace, Duration::MAX),
        }
    }

    /// Whether this profile's library would retry `outcome` of a `method` request
    /// (ignoring how many retries are left).
    pub fn is_retryable(self, method: Method, outcome: &Outcome) -> bool {
        match (self, outcome) {
            (_, o) if o.is_success() => false,
            (Profile::None, _) => false,
            (Profile::Naive, _) => true,
            (Profile::Got, o) => packages::got_retries(method, o),
            (Profile::Ky, o) => packages::ky_retries(method, o),
            (Profile::PRetry | Profile::Stamina | Profile::Backoff | Profile::Backon, _) => true,
            // A6's example `retryableStatusCodes`; a policy holds the configured ones.
            (Profile::Grpc(_), o) => o.grpc_code() == crate::grpc::Code::UNAVAILABLE,
            (Profile::Undici, Outcome::Response { status, .. }) => {
                method.is_idempotent() && matches!(status, 429 | 500 | 502 | 503 | 504)
            }
            (Profile::Undici, Outcome::Failed(f)) => {
                method.is_idempotent() && f.is_connection_error()
            }
            (Profile::AxiosRetry, Outcome::Response { status, .. }) => {
                axios_idempotent(method) && (*status == 429 || (500..=599).contains(status))
            }
            (Profile::AxiosRetry, Outcome::Failed(f)) => f.is_connection_error(),
            (Profile::Exponential | Profile::Herd, Outcome::Response { status, .. }) => {
                method.is_idempotent() && matches!(status, 429 | 500 | 502 | 503 | 504)
            }
            (Profile::Exponential | Profile::Herd | Profile::Urllib3, Outcome::Failed(f)) => {
                !f.may_have_reached_server()
                    || (method.is_idempotent()
                        && (f.is_connection_error() || *f == Failure::Timeout))
            }
            (Profile::Urllib3, Outcome::Response { status, .. }) => {
                method.is_idempotent() && matches!(status, 413 | 429 | 500 | 502 | 503 | 504)
            }
            (Profile::GoRetryablehttp, Outcome::Response { status, .. }) => {
                *status == 429 || *status == 0 || (*status >= 500 && *status != 501)
            }
            (Profile::GoRetryablehttp, Outcome::Failed(_)) => true,
            (Profile::Tenacity, Outcome::Response { status, .. }) => *status >= 500,
            (Profile::Tenacity, Outcome::Failed(f)) => f.is_connection_error(),
            (Profile::Envoy, Outcome::Response { status, .. }) => *status >= 500,
            (Profile::Envoy, Outcome::Failed(f)) => {
                f.is_connection_error() || *f == Failure::Timeout
            }
            (Profile::IstioDefault, Outcome::Response { status, .. }) => *status == 503,
            (
                Profile::IstioDefault | Profile::LinkerdBudget | Profile::LinkerdLimit,
                Outcome::Failed(f),
            ) => !f.may_have_reached_server(),
            (Profile::LinkerdBudget | Profile::LinkerdLimit, Outcome::Response { status, .. }) => {
                (500..=599).contains(status)
            }
            (
                Profile::AwsStandard | Profile::AwsStandard2_0 | Profile::AwsAdaptive,
                Outcome::Response {
                    status, throttling, ..
                },
            ) => *throttling || matches!(status, 500 | 502 | 503 | 504),
            (
                Profile::AwsLegacy,
                Outcome::Response {
                    status, throttling, ..
                },
            ) => *throttling || matches!(status, 429 | 500 | 502 | 503 | 504 | 509),
            (
                Profile::AwsStandard
                | Profile::AwsStandard2_0
                | Profile::AwsAdaptive
                | Profile::AwsLegacy,
                Outcome::Failed(f),
            ) => f.is_connection_error() || *f == Failure::Timeout,
        }
    }
}

/// The AWS SDKs' exponential backoff with full jitter, base 1 s, cap 20 s: the 2.0 rules'
/// for every error, the 2026 rules' for throttling errors.
const AWS_THROTTLING_BACKOFF: Backoff = Backoff {
    base: Duration::from_secs(1),
    factor: 2.0,
    cap: Duration::from_secs(20),
    offset: 0,
    jitter: Jitter::Full,
};

/// axios-retry's `IDEMPOTENT_HTTP_METHODS`: get, head, options, put, delete (no TRACE).
fn axios_idempotent(m: Method) -> bool {
    matches!(
        m,
        Method::Get | Method::Head | Method::Options | Method::Put | Method::Delete
    )
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Profile {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(match s {
            "undici" => Profile::Undici,
            "axios-retry" | "axios" => Profile::AxiosRetry,
            "none" => Profile::None,
            "naive" => Profile::Naive,
            "exponential" => Profile::Exponential,
            "herd" => Profile::Herd,
            "urllib3" | "requests" => Profile::Urllib3,
            "go-retryablehttp" | "retryablehttp" => Profile::GoRetryablehttp,
            "tenacity" => Profile::Tenacity,
            "envoy" => Profile::Envoy,
            "istio-default" | "istio" => Profile::IstioDefault,
            "linkerd-budget" => Profile::LinkerdBudget,
            "linkerd-limit" | "linkerd" => Profile::LinkerdLimit,
            "aws-standard" | "botocore" | "boto3" => Profile::AwsStandard,
            "aws-standard-2.0" => Profile::AwsStandard2_0,
            "aws-adaptive" => Profile::AwsAdaptive,
            "aws-legacy" => Profile::AwsLegacy,
            "got" => Profile::Got,
            "ky" => Profile::Ky,
            "p-retry" => Profile::PRetry,
            "stamina" => Profile::Stamina,
            "backoff" => Profile::Backoff,
            "backon" => Profile::Backon,
            "grpcio" => Profile::Grpc(crate::grpc::Implementation::Core),
            name => match crate::grpc::Implementation::from_name(name) {
                Some(i) => Profile::Grpc(i),
                None => {
                    return Err(format!(
                        "unknown policy `{s}` (expected one of: {})",
                        Profile::NAMES.join(", ")
                    ))
                }
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::Failure::*;

    fn s(code: u16) -> Outcome {
        Outcome::status(code)
    }

    #[test]
    fn undici_conditions() {
        let p = Profile::Undici;
        for code in [429, 500, 502, 503, 504] {
            assert!(p.is_retryable(Method::Get, &s(code)), "{code}");
            assert!(!p.is_retryable(Method::Post, &s(code)), "{code} POST");
        }
        for code in [200, 400, 404, 501, 505] {
            assert!(!p.is_retryable(Method::Get, &s(code)), "{code}");
        }
        for f in [Reset, Refused, BrokenPipe, Closed] {
            assert!(p.is_retryable(Method::Trace, &Outcome::Failed(f)));
            assert!(!p.is_retryable(Method::Post, &Outcome::Failed(f)));
        }
        assert!(!p.is_retryable(Method::Get, &Outcome::Failed(Timeout)));
    }

    #[test]
    fn axios_conditions() {
        let p = Profile::AxiosRetry;
        for code in [429, 500, 501, 503, 599] {
            assert!(p.is_retryable(Method::Get, &s(code)), "{code}");
            assert!(!p.is_retryable(Method::Post, &s(code)), "{code} POST");
        }
        assert!(
            !p.is_retryable(Method::Trace, &s(503)),
            "TRACE is not in axios' list"
        );
        assert!(!p.is_retryable(Method::Get, &s(408)));
        // Network errors retry on any method; timeouts (ECONNABORTED) never.
        assert!(p.is_retryable(Method::Post, &Outcome::Failed(Reset)));
        assert!(!p.is_retryable(Method::Get, &Outcome::Failed(Timeout)));
    }

    #[test]
    fn generic_conditions() {
        let p = Profile::Exponential;
        assert!(p.is_retryable(Method::Get, &Outcome::Failed(Timeout)));
        assert!(!p.is_retryable(Method::Post, &Outcome::Failed(Timeout)));
        assert!(p.is_retryable(Method::Post, &Outcome::Failed(Refused)));
        assert!(!p.is_retryable(Method::Post, &Outcome::Failed(Reset)));
        assert!(Profile::Naive.is_retryable(Method::Post, &s(400)));
        assert!(!Profile::Naive.is_retryable(Method::Post, &s(200)));
        assert!(!Profile::None.is_retryable(Method::Get, &s(503)));
    }

    /// Every retry's delay when each attempt fails with `outcome` (seed 1).
    fn delays(profile: Profile, outcome: &Outcome) -> Vec<u128> {
        use crate::policy::{Decision, Policy, RetryState};
        use rand::SeedableRng;
        let policy = Policy::new(profile);
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(1);
        let mut state = RetryState::default();
        let mut out = Vec::new();
        while let Decision::Retry { after } =
            policy.decide(&mut state, Method::Get, outcome, &mut rng)
        {
            out.push(after.as_millis());
        }
        out
    }

    fn hinted(status: u16, secs: u64) -> Outcome {
        Outcome::Response {
            status,
            retry_after: Some(Duration::from_secs(secs)),
            throttling: false,
            grpc_status: None,
        }
    }

    #[test]
    fn urllib3_retries_the_first_time_at_once() {
        // urllib3 2.8 util/retry.py get_backoff_time: 0 while len(history) <= 1, then
        // backoff_factor * 2 ** (n - 1), capped at backoff_max (120 s).
        assert_eq!(delays(Profile::Urllib3, &s(503)), [0, 1000, 2000]);
        // Retry-After on 413/429/503 replaces the backoff (sleep_for_retry), uncapped.
        assert_eq!(delays(Profile::Urllib3, &hinted(503, 300)), [300_000; 3]);
        // On a 502 it is not read: the backoff applies.
        assert_eq!(delays(Profile::Urllib3, &hinted(502, 7)), [0, 1000, 2000]);
        let p = Profile::Urllib3;
        assert!(!p.is_retryable(Method::Post, &s(503)));
        assert!(p.is_retryable(Method::Trace, &s(413)));
        assert!(p.is_retryable(Method::Post, &Outcome::Failed(Refused)));
        assert!(!p.is_retryable(Method::Post, &Outcome::Failed(Reset)));
        assert!(p.is_retryable(Method::Get, &Outcome::Failed(Timeout)));
    }

    #[test]
    fn go_retryablehttp_waits_1_2_4_8_s_and_honours_any_retry_after() {
        // go-retryablehttp 0.7.1 client.go DefaultBackoff: 2^attemptNum * RetryWaitMin,
        // attemptNum from 0, capped at RetryWaitMax (30 s).
        assert_eq!(
            delays(Profile::GoRetryablehttp, &s(503)),
            [1000, 2000, 4000, 8000]
        );
        // Retry-After seconds on 429/503 replace it, with no cap.
        assert_eq!(
            delays(Profile::GoRetryablehttp, &hinted(429, 3600)),
            [3_600_000; 4]
        );
        assert_eq!(
            delays(Profile::GoRetryablehttp, &hinted(500, 9)),
            [1000, 2000, 4000, 8000]
        );
        let p = Profile::GoRetryablehttp;
        assert!(p.is_retryable(Method::Post, &s(500)));
        assert!(!p.is_retryable(Method::Get, &s(501)));
        assert!(p.is_retryable(Method::Post, &Outcome::Failed(Timeout)));
        assert!(!p.is_retryable(Method::Get, &s(404)));
    }

    #[test]
    fn tenacity_draws_full_jitter_and_ignores_retry_after() {
        let d = delays(Profile::Tenacity, &hinted(503, 60));
        assert_eq!(d.len(), 3);
        for (n, ms) in d.iter().enumerate() {
            assert!(*ms <= 500 << n, "retry {}: {ms} ms", n + 1);
        }
        assert!(Profile::Tenacity.is_retryable(Method::Post, &s(503)));
        assert!(!Profile::Tenacity.is_retryable(Method::Get, &Outcome::Failed(Timeout)));
    }

    #[test]
    fn mesh_replicas_retry_what_their_defaults_name() {
        let istio = Profile::IstioDefault;
        assert!(istio.is_retryable(Method::Post, &s(503)));
        assert!(!istio.is_retryable(Method::Get, &s(500)));
        assert!(istio.is_retryable(Method::Post, &Outcome::Failed(Refused)));
        assert!(!istio.is_retryable(Method::Get, &Outcome::Failed(Reset)));
        assert!(!istio.is_retryable(Method::Get, &Outcome::Failed(Timeout)));
        assert_eq!(delays(istio, &s(503)).len(), 2);
        for (n, ms) in delays(Profile::Envoy, &s(502)).iter().enumerate() {
            assert!(*ms <= 25 << n, "retry {}: {ms} ms", n + 1);
        }
        assert_eq!(delays(Profile::Envoy, &s(502)).len(), 1);
        assert!(Profile::Envoy.is_retryable(Method::Post, &Outcome::Failed(Timeout)));
        assert_eq!(delays(Profile::LinkerdLimit, &s(500)), [0]);
        assert_eq!(delays(Profile::LinkerdBudget, &s(500)).len(), 100);
        assert!(!Profile::LinkerdLimit.is_retryable(Method::Get, &s(429)));
    }

    #[test]
    fn names_round_trip() {
        for n in Profile::NAMES {
            assert_eq!(n.parse::<Profile>().unwrap().name(), *n);
        }
        assert!("undicci".parse::<Profile>().is_err());
    }
}
