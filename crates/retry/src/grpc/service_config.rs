//! A gRPC service config (gRFC A6), read from the JSON a gRPC user passes to their channel:
//! `{"methodConfig": [{"name": [{}], "retryPolicy": {...}}], "retryThrottling": {...}}`.
//!
//! Only what retries and hedges need is read: the method config that applies to the call
//! herd makes, and `retryThrottling`. Other keys (`loadBalancingConfig`, `timeout`,
//! `waitForReady`, …) are accepted and left alone, as a channel would leave alone what it
//! does not use. The checks are A6's, the ones every implementation makes before it
//! accepts a config; a config they would refuse, herd refuses, naming the key.

use super::code::{Code, Codes};
use crate::budget::TokenBucketConfig;
use serde_json::Value;
use std::time::Duration;

/// Attempts a client allows whatever the config says (`maxAttempts` above it is cut to
/// it): 5 in C-core, grpc-go and grpc-js (grpc-js's `grpc-node.retry_max_attempts_limit`
/// default), as A6 says.
pub const MAX_ATTEMPTS_LIMIT: u8 = 5;

/// The service herd calls when the config names none (`"name": [{}]`).
pub const DEFAULT_SERVICE: &str = "herd.Herd";
/// The method herd calls when the config names none.
pub const DEFAULT_METHOD: &str = "Call";

/// A `retryPolicy`, checked.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RetryPolicy {
    /// `maxAttempts`, the original included, cut to [`MAX_ATTEMPTS_LIMIT`].
    pub max_attempts: u8,
    /// `initialBackoff`.
    pub initial_backoff: Duration,
    /// `maxBackoff`.
    pub max_backoff: Duration,
    /// `backoffMultiplier`.
    pub multiplier: f64,
    /// `retryableStatusCodes`.
    pub retryable: Codes,
}

/// A `hedgingPolicy`, checked.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HedgingPolicy {
    /// `maxAttempts`, the original included, cut to [`MAX_ATTEMPTS_LIMIT`].
    pub max_attempts: u8,
    /// `hedgingDelay` (absent: 0, every attempt at once).
    pub delay: Duration,
    /// `nonFatalStatusCodes` (absent: none).
    pub non_fatal: Codes,
}

/// What the method config of the called method asks for.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum MethodPolicy {
    /// Neither: no retries (only transparent ones, which herd's upstream never causes).
    #[default]
    None,
    /// `retryPolicy`.
    Retry(RetryPolicy),
    /// `hedgingPolicy`.
    Hedging(HedgingPolicy),
}

/// The parts of a service config that decide retries and hedges.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServiceConfig {
    /// The service herd calls: the first name of the first method config, or
    /// [`DEFAULT_SERVICE`].
    pub service: String,
    /// The method herd calls: that name's `method`, or [`DEFAULT_METHOD`].
    pub method: String,
    /// The policy that applies to that call, by A6's lookup (the exact method, then its
    /// service, then the default `{}`).
    pub policy: MethodPolicy,
    /// `retryThrottling`.
    pub throttling: Option<TokenBucketConfig>,
}

/// A service config no gRPC channel would accept.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ServiceConfigError {
    /// The text is not JSON.
    #[error("the service config is not JSON: {0}")]
    Json(String),
    /// A key has a value A6 does not allow.
    #[error("service config `{path}`: {message}")]
    Invalid {
        /// Where, as a JSON path (`methodConfig[0].retryPolicy.maxAttempts`).
        path: String,
        /// What is wrong.
        message: String,
    },
}

type R<T> = Result<T, ServiceConfigError>;

fn bad<T>(path: &str, message: impl Into<String>) -> R<T> {
    Err(ServiceConfigError::Invalid {
        path: path.to_owned(),
        message: message.into(),
    })
}

impl ServiceConfig {
    /// Reads the JSON text of a service config.
    pub fn parse(json: &str) -> R<ServiceConfig> {
        let v: Value =
            serde_json::from_str(json).map_err(|e| ServiceConfigError::Json(e.to_string()))?;
        ServiceConfig::from_value(&v)
    }

    /// Reads a service config already parsed as JSON.
    pub fn from_value(v: &Value) -> R<ServiceConfig> {
        let Some(top) = v.as_object() else {
            return bad("", "must be a JSON object");
        };
        let configs: &[Value] = match top.get("methodConfig") {
            None => &[],
            Some(Value::Array(a)) => a,
            Some(_) => return bad("methodConfig", "must be an array"),
        };
        let mut names = Vec::new();
        let mut policies = Vec::new();
        for (i, mc) in configs.iter().enumerate() {
            let at = format!("methodConfig[{i}]");
            let Some(mc) = mc.as_object() else {
                return bad(&at, "must be an object");
            };
            let policy = match (mc.get("retryPolicy"), mc.get("hedgingPolicy")) {
                (Some(_), Some(_)) => {
                    return bad(
                        &at,
                        "has both `retryPolicy` and `hedgingPolicy`; A6 allows one",
                    )
                }
                (Some(r), None) => {
                    MethodPolicy::Retry(retry_policy(&format!("{at}.retryPolicy"), r)?)
                }
                (None, Some(h)) => {
                    MethodPolicy::Hedging(hedging_policy(&format!("{at}.hedgingPolicy"), h)?)
                }
                (None, None) => MethodPolicy::None,
            };
            let list: &[Value] = match mc.get("name") {
                None => &[],
                Some(Value::Array(a)) => a,
                Some(_) => return bad(&format!("{at}.name"), "must be an array"),
            };
            for (j, n) in list.iter().enumerate() {
                let at = format!("{at}.name[{j}]");
                let Some(n) = n.as_object() else {
                    return bad(&at, "must be an object");
                };
                let text = |k: &str| -> R<Option<String>> {
                    match n.get(k) {
                        None => Ok(None),
                        Some(Value::String(s)) if s.is_empty() => Ok(None),
                        Some(Value::String(s)) => Ok(Some(s.clone())),
                        Some(_) => bad(&format!("{at}.{k}"), "must be a string"),
                    }
                };
                let (service, method) = (text("service")?, text("method")?);
                if service.is_none() && method.is_some() {
                    return bad(&at, "names a `method` without its `service`");
                }
                names.push((service, method, i));
            }
            policies.push(policy);
        }
        let (service, method) = match names.first() {
            Some((s, m, _)) => (
                s.clone().unwrap_or_else(|| DEFAULT_SERVICE.to_owned()),
                m.clone().unwrap_or_else(|| DEFAULT_METHOD.to_owned()),
            ),
            None => (DEFAULT_SERVICE.to_owned(), DEFAULT_METHOD.to_owned()),
        };
        // A6's lookup: the exact method, then the whole service, then the default.
        let exact = names
            .iter()
            .find(|(s, m, _)| s.as_deref() == Some(&service) && m.as_deref() == Some(&method));
        let whole = names
            .iter()
            .find(|(s, m, _)| s.as_deref() == Some(&service) && m.is_none());
        let default = names.iter().find(|(s, m, _)| s.is_none() && m.is_none());
        let policy = exact
            .or(whole)
            .or(default)
            .map_or(MethodPolicy::None, |(_, _, i)| policies[*i]);
        let throttling = match top.get("retryThrottling") {
            None => None,
            Some(t) => Some(throttling("retryThrottling", t)?),
        };
        Ok(ServiceConfig {
            service,
            method,
            policy,
            throttling,
        })
    }

    /// No service config: herd's default call, no retries.
    pub fn default_call() -> ServiceConfig {
        ServiceConfig {
            service: DEFAULT_SERVICE.to_owned(),
            method: DEFAULT_METHOD.to_owned(),
            policy: MethodPolicy::None,
            throttling: None,
        }
    }

    /// The path of the call herd makes: `/service/method`.
    pub fn path(&self) -> String {
        format!("/{}/{}", self.service, self.method)
    }
}

fn object<'v>(path: &str, v: &'v Value) -> R<&'v serde_json::Map<String, Value>> {
    v.as_object()
        .map_or_else(|| bad(path, "must be an object"), Ok)
}

fn attempts(path: &str, v: Option<&Value>) -> R<u8> {
    let at = format!("{path}.maxAttempts");
    let Some(v) = v else {
        return bad(&at, "is required");
    };
    // JSON numbers and, as protobuf's JSON mapping allows, numbers in strings.
    let n = match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.parse::<f64>().ok(),
        _ => None,
    };
    match n {
        Some(n) if n.fract() == 0.0 && n >= 2.0 => Ok(n.min(f64::from(MAX_ATTEMPTS_LIMIT)) as u8),
        _ => bad(
            &at,
            format!("must be a whole number of at least 2, got {v}"),
        ),
    }
}

/// A protobuf JSON `Duration`: decimal seconds with an `s` (`"0.1s"`, `"1s"`).
fn duration(path: &str, v: Option<&Value>, required: bool) -> R<Option<Duration>> {
    let Some(v) = v else {
        return if required {
            bad(path, "is required")
        } else {
            Ok(None)
        };
    };
    let parsed = v.as_str().and_then(|s| {
        let secs = s.strip_suffix('s')?;
        let (whole, frac) = secs.split_once('.').unwrap_or((secs, ""));
        let digits = |x: &str| x.bytes().all(|b| b.is_ascii_digit());
        if whole.is_empty() || !digits(whole) || !digits(frac) || frac.len() > 9 {
            return None;
        }
        Duration::try_from_secs_f64(secs.parse::<f64>().ok()?).ok()
    });
    match parsed {
        Some(d) => Ok(Some(d)),
        None => bad(
            path,
            format!("must be a duration in seconds such as \"0.1s\", got {v}"),
        ),
    }
}

fn positive(path: &str, d: Option<Duration>) -> R<Duration> {
    match d {
        Some(d) if !d.is_zero() => Ok(d),
        _ => bad(path, "must be greater than 0s"),
    }
}

fn codes(path: &str, v: Option<&Value>, required: bool) -> R<Codes> {
    let list: &[Value] = match v {
        None if required => return bad(path, "is required"),
        None => &[],
        Some(Value::Array(a)) => a,
        Some(_) => return bad(path, "must be an array of status codes"),
    };
    let mut set = Codes::EMPTY;
    for (i, c) in list.iter().enumerate() {
        let code = match c {
            Value::String(s) => Code::from_name(s),
            Value::Number(n) => n.as_u64().filter(|n| *n <= 16).map(|n| Code(n as u8)),
            _ => None,
        };
        match code {
            Some(code) => set = set.with(code),
            None => {
                return bad(
                    &format!("{path}[{i}]"),
                    format!("must be a status code name such as \"UNAVAILABLE\" or a number from 0 to 16, got {c}"),
                )
            }
        }
    }
    if required && set.is_empty() {
        return bad(path, "must list at least one status code");
    }
    Ok(set)
}

fn retry_policy(path: &str, v: &Value) -> R<RetryPolicy> {
    let o = object(path, v)?;
    let max_attempts = attempts(path, o.get("maxAttempts"))?;
    let ib = format!("{path}.initialBackoff");
    let mb = format!("{path}.maxBackoff");
    let initial_backoff = positive(&ib, duration(&ib, o.get("initialBackoff"), true)?)?;
    let max_backoff = positive(&mb, duration(&mb, o.get("maxBackoff"), true)?)?;
    let bm = format!("{path}.backoffMultiplier");
    let multiplier = match o.get("backoffMultiplier").and_then(Value::as_f64) {
        Some(m) if m > 0.0 && m.is_finite() => m,
        Some(m) => return bad(&bm, format!("must be greater than 0, got {m}")),
        None => return bad(&bm, "is required (a number greater than 0)"),
    };
    let retryable = codes(
        &format!("{path}.retryableStatusCodes"),
        o.get("retryableStatusCodes"),
        true,
    )?;
    Ok(RetryPolicy {
        max_attempts,
        initial_backoff,
        max_backoff,
        multiplier,
        retryable,
    })
}

fn hedging_policy(path: &str, v: &Value) -> R<HedgingPolicy> {
    let o = object(path, v)?;
    let max_attempts = attempts(path, o.get("maxAttempts"))?;
    let hd = format!("{path}.hedgingDelay");
    let delay = duration(&hd, o.get("hedgingDelay"), false)?.unwrap_or(Duration::ZERO);
    let non_fatal = codes(
        &format!("{path}.nonFatalStatusCodes"),
        o.get("nonFatalStatusCodes"),
        false,
    )?;
    Ok(HedgingPolicy {
        max_attempts,
        delay,
        non_fatal,
    })
}

fn throttling(path: &str, v: &Value) -> R<TokenBucketConfig> {
    let o = object(path, v)?;
    let num = |k: &str| -> R<f64> {
        match o.get(k).and_then(Value::as_f64) {
            Some(x) => Ok(x),
            None => bad(&format!("{path}.{k}"), "is required (a number)"),
        }
    };
    let (max_tokens, token_ratio) = (num("maxTokens")?, num("tokenRatio")?);
    TokenBucketConfig::new(max_tokens, token_ratio).or_else(|_| {
        bad(
            path,
            format!(
                "`maxTokens` must be in (0, 1000] and `tokenRatio` in (0, 1], got {max_tokens} and {token_ratio}"
            ),
        )
    })
}
