//! The scenario file as written: serde types that mirror the TOML, with defaults.
//!
//! Unknown keys are rejected (`deny_unknown_fields`), so a typo is an error, not a silently
//! ignored setting. Numbers are read wide (`f64`, `i64`) so that a negative or fractional
//! value reaches [`crate::parse`], which explains what is wrong with it, instead of failing
//! with serde's generic "expected u64".

use serde::Deserialize;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawScenario {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default = "default_seed")]
    pub seed: i64,
    #[serde(default)]
    pub load: RawLoad,
    #[serde(default)]
    pub client: RawClient,
    #[serde(default)]
    pub upstream: RawUpstream,
    #[serde(default)]
    pub arms: Vec<RawArm>,
    pub consumers: Option<RawConsumers>,
    #[serde(default)]
    pub network: RawNetwork,
    #[serde(default)]
    pub hops: Vec<RawHop>,
}

/// `[[hops]]`: a layer between the arms and `[upstream]` (see [`crate::hop`]).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawHop {
    pub id: String,
    #[serde(default)]
    pub server: RawUpstream,
    pub client: RawArm,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct RawNetwork {
    pub rtt_ms: f64,
    pub jitter_ms: f64,
}

impl Default for RawNetwork {
    fn default() -> Self {
        RawNetwork {
            rtt_ms: 0.2,
            jitter_ms: 0.0,
        }
    }
}

fn default_seed() -> i64 {
    1
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct RawLoad {
    /// `None`: 1000, or with a trace, every line.
    pub requests: Option<i64>,
    /// `None`: 100, or what `[consumers]` or the trace implies.
    pub rate: Option<f64>,
    /// `None`: poisson.
    pub arrival: Option<String>,
    pub method: String,
    pub trace: Option<String>,
    pub time_scale: Option<f64>,
    /// `None`: [`crate::DEFAULT_BACKLOG`].
    pub backlog: Option<i64>,
    /// `None`: the driver picks by rate.
    pub lanes: Option<i64>,
    /// `None`: [`crate::DEFAULT_COALESCE`].
    pub coalesce_us: Option<i64>,
}

impl Default for RawLoad {
    fn default() -> Self {
        RawLoad {
            requests: None,
            rate: None,
            arrival: None,
            method: "GET".into(),
            trace: None,
            time_scale: None,
            backlog: None,
            lanes: None,
            coalesce_us: None,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawConsumers {
    pub count: i64,
    pub rate: Option<f64>,
    pub think_ms: Option<f64>,
    pub timeout_ms: f64,
    #[serde(default = "reissue")]
    pub on_timeout: String,
    #[serde(default)]
    pub max_in_flight: i64,
    #[serde(default = "thirty_s")]
    pub give_up_ms: f64,
}

fn reissue() -> String {
    "reissue".into()
}

fn thirty_s() -> f64 {
    30_000.0
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct RawClient {
    pub pool_max_connections: i64,
    pub preconnect: i64,
    pub attempt_timeout_ms: f64,
    pub connections: i64,
}

impl Default for RawClient {
    fn default() -> Self {
        RawClient {
            pool_max_connections: 256,
            preconnect: 0,
            attempt_timeout_ms: 0.0,
            connections: 1,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct RawUpstream {
    pub error_rate: f64,
    pub retry_after_s: i64,
    pub reset_rate: f64,
    pub reset_after_ms: f64,
    pub stall_rate: f64,
    pub stall_ms: f64,
    pub service_time: RawServiceTime,
    pub workers: i64,
    pub queue_limit: i64,
    pub shed: String,
    pub incidents: Vec<RawIncident>,
    pub rate_limit: Option<RawRateLimit>,
    pub target: Option<String>,
    pub dialect: Option<String>,
    pub protocol: Option<String>,
    pub connect_timeout_ms: Option<f64>,
    pub answer_timeout_ms: Option<f64>,
    pub settle_ms: Option<f64>,
    pub calibrated: Option<String>,
    pub tls: Option<String>,
    pub tls_cert: Option<String>,
    pub tls_key: Option<String>,
    pub target_ca: Option<String>,
    pub target_insecure: Option<bool>,
}

impl Default for RawUpstream {
    fn default() -> Self {
        RawUpstream {
            error_rate: 0.0,
            retry_after_s: 0,
            reset_rate: 0.0,
            reset_after_ms: 0.0,
            stall_rate: 0.0,
            stall_ms: 0.0,
            service_time: RawServiceTime::default(),
            workers: 0,
            queue_limit: 0,
            shed: "reset".into(),
            incidents: vec![],
            rate_limit: None,
            target: None,
            dialect: None,
            protocol: None,
            connect_timeout_ms: None,
            answer_timeout_ms: None,
            settle_ms: None,
            calibrated: None,
            tls: None,
            tls_cert: None,
            tls_key: None,
            target_ca: None,
            target_insecure: None,
        }
    }
}

/// `[upstream.rate_limit]`, nginx's `limit_req` in herd's keys.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRateLimit {
    pub rate: RawRate,
    #[serde(default)]
    pub burst: i64,
    #[serde(default)]
    pub nodelay: bool,
    pub delay: Option<i64>,
    #[serde(default = "status_503")]
    pub status: i64,
    #[serde(default)]
    pub retry_after_s: i64,
    #[serde(default = "global")]
    pub key: String,
}

fn status_503() -> i64 {
    503
}

fn global() -> String {
    "global".into()
}

/// `rate = 200` (requests per second) or nginx's `rate = "200r/s"` / `"30r/m"`.
/// Deserialized by hand, so a wrong type says what is expected.
#[derive(Debug)]
pub(crate) enum RawRate {
    PerSecond(f64),
    Nginx(String),
}

impl<'de> Deserialize<'de> for RawRate {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = RawRate;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("requests per second (a number), or nginx's \"200r/s\" or \"30r/m\"")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Self::Value, E> {
                Ok(RawRate::PerSecond(v as f64))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Self::Value, E> {
                Ok(RawRate::PerSecond(v as f64))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Self::Value, E> {
                Ok(RawRate::PerSecond(v))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(RawRate::Nginx(v.to_owned()))
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawServiceTime {
    pub dist: String,
    pub ms: Option<f64>,
    pub mean_ms: Option<f64>,
    pub median_ms: Option<f64>,
    pub p99_ms: Option<f64>,
}

impl Default for RawServiceTime {
    fn default() -> Self {
        RawServiceTime {
            dist: "constant".into(),
            ms: Some(1.0),
            mean_ms: None,
            median_ms: None,
            p99_ms: None,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawIncident {
    pub start_ms: f64,
    pub duration_ms: f64,
    pub error_rate: Option<f64>,
    pub reset_rate: Option<f64>,
    #[serde(default = "one")]
    pub slowdown: f64,
    #[serde(default)]
    pub hold: bool,
    #[serde(default = "reset")]
    pub hold_answer: String,
}

fn one() -> f64 {
    1.0
}

fn reset() -> String {
    "reset".into()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawArm {
    /// Empty when not written: an arm then fails the check that it has an id; a hop's
    /// client takes the hop's.
    #[serde(default)]
    pub id: String,
    pub policy: Option<String>,
    pub client: Option<RawArmClient>,
    pub options: Option<toml::Table>,
    pub jitter: Option<RawJitter>,
    pub retries: Option<i64>,
    pub base_ms: Option<f64>,
    pub factor: Option<f64>,
    pub cap_ms: Option<f64>,
    pub budget: Option<RawBudget>,
    pub retry_after: Option<RawRetryAfter>,
    pub deadline_ms: Option<f64>,
    pub consumers: Option<RawArmConsumers>,
    pub hedge: Option<RawHedge>,
    pub breaker: Option<RawBreaker>,
}

/// `hedge = { profile = "...", ... }`: a hedging replica and the settings it overrides.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawHedge {
    pub profile: String,
    pub delay_ms: Option<f64>,
    pub max_attempts: Option<i64>,
    pub max_extra_load: Option<f64>,
    pub percentile: Option<f64>,
    pub min_data_points: Option<i64>,
    pub cancel_losers: Option<bool>,
    pub throttle: Option<bool>,
    pub max_tokens: Option<f64>,
    pub token_ratio: Option<f64>,
}

/// `breaker = { profile = "...", ... }`: a breaker replica and the settings it overrides.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawBreaker {
    pub profile: String,
    pub failures: Option<i64>,
    pub ratio: Option<f64>,
    pub min_calls: Option<i64>,
    pub window: Option<i64>,
    pub window_ms: Option<f64>,
    pub open_ms: Option<f64>,
    pub half_open_calls: Option<i64>,
    pub successes: Option<i64>,
}

/// `client = "node-undici"` or `client = { command = [...], cwd = "..." }`. Deserialized by
/// hand rather than `untagged`, so a misspelt key in the table is named
/// (``unknown field `commnd`, expected `command` or `cwd` ``).
#[derive(Clone, Debug)]
pub(crate) enum RawArmClient {
    Name(String),
    Command(RawCommand),
}

impl<'de> Deserialize<'de> for RawArmClient {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = RawArmClient;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a client id or a table { command = [...], cwd = \"...\" }")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Self::Value, E> {
                Ok(RawArmClient::Name(v.to_owned()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                m: A,
            ) -> Result<Self::Value, A::Error> {
                RawCommand::deserialize(serde::de::value::MapAccessDeserializer::new(m))
                    .map(RawArmClient::Command)
            }
        }
        d.deserialize_any(V)
    }
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawCommand {
    pub command: Vec<String>,
    pub cwd: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawArmConsumers {
    pub timeout_ms: Option<f64>,
    pub on_timeout: Option<String>,
    pub max_in_flight: Option<i64>,
    pub give_up_ms: Option<f64>,
}

/// `budget = { kind = "...", ... }`: serde picks the variant by `kind` and refuses a key
/// that does not belong to it, so an unknown kind or a misplaced knob is a parse error
/// naming the kinds or the knobs, never a silent fallback.
#[derive(Debug, Deserialize)]
#[serde(tag = "kind")]
pub(crate) enum RawBudget {
    /// No budget: removes a profile's default one.
    #[serde(rename = "none")]
    None(RawNoBudget),
    /// Finagle's / tower's percent budget.
    #[serde(rename = "percent")]
    Percent(RawPercent),
    /// gRPC's token bucket (A6).
    #[serde(rename = "token-bucket")]
    TokenBucket(RawTokenBucket),
    /// AWS SDKs' retry quota.
    #[serde(rename = "quota")]
    Quota(RawQuota),
    /// A ratio of retries to requests over a window.
    #[serde(rename = "ratio")]
    Ratio(RawRatio),
    /// Google SRE's adaptive throttling.
    #[serde(rename = "adaptive")]
    Adaptive(RawAdaptive),
    /// Envoy's retry circuit breaker: `max_retries`, or a `retry_budget`.
    #[serde(rename = "concurrency")]
    Concurrency(RawConcurrency),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawConcurrency {
    pub max_retries: Option<i64>,
    pub budget_percent: Option<f64>,
    pub min_retry_concurrency: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawNoBudget {}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawPercent {
    pub percent: Option<f64>,
    pub ttl_ms: Option<f64>,
    pub min_per_sec: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawTokenBucket {
    pub max_tokens: Option<f64>,
    pub token_ratio: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawQuota {
    pub initial: Option<i64>,
    pub retry_cost: Option<i64>,
    pub timeout_cost: Option<i64>,
    pub success_increment: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRatio {
    pub ratio: Option<f64>,
    pub window_ms: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawAdaptive {
    pub k: Option<f64>,
    pub window_ms: Option<f64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawRetryAfter {
    pub min_ms: Option<f64>,
    pub max_ms: Option<f64>,
    pub above_max: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub(crate) enum RawJitter {
    Name(String),
    Table(RawJitterTable),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawJitterTable {
    pub kind: String,
    pub factor: Option<f64>,
}
