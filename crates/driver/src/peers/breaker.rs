//! failsafe-rs 1.3's circuit breaker as an arm, beside herd's `failsafe` replica.
//!
//! `failsafe::Config::new().build()`, the library's defaults: open on 5 failures in a row
//! or on a success rate under 80% over 30 s, for an equal-jittered backoff of 10 s to
//! 300 s. One breaker per arm, shared by its requests, each request one call through it
//! and no retries. The wrapped call fails on what herd's breakers count as a failure
//! ([`herd_retry::breaker::is_failure`]: no response, 408, 429 or a 5xx), as code that
//! raises on such a status does. A rejected call never reaches the server.

use super::counted::{self, Counted};
use super::HyperClient;
use crate::Call;
use failsafe::futures::CircuitBreaker;
use failsafe::{backoff, failure_policy, Config, StateMachine};
use herd_retry::breaker::is_failure;
use herd_retry::Outcome;
use http_body_util::BodyExt;
use std::time::Duration;
use tower::Service;

/// The arm's configuration in words.
pub(super) const DESCRIBE: &str = "failsafe-rs 1.3 Config::new() defaults: opens on 5 failures in a row or < 80% success over 30 s, for 10-300 s equal-jittered; one call per request, no retries";

type Policy = failure_policy::OrElse<
    failure_policy::SuccessRateOverTimeWindow<backoff::EqualJittered>,
    failure_policy::ConsecutiveFailures<backoff::EqualJittered>,
>;

/// failsafe-rs' breaker around hyper-util's client.
pub struct FailsafePeer {
    breaker: StateMachine<Policy, ()>,
    client: Counted,
    uri: http::Uri,
}

/// Why a call failed, as the wrapped code raises it.
enum Raised {
    Status,
    Error,
}

impl FailsafePeer {
    pub(super) fn new(client: HyperClient, uri: http::Uri, timeout: Option<Duration>) -> Self {
        FailsafePeer {
            breaker: Config::new().build(),
            client: Counted { client, timeout },
            uri,
        }
    }

    pub(super) async fn call(&self, id: u64, call: &Call) -> (bool, u32) {
        let Some((req, _)) = counted::request(id, call, &self.uri) else {
            return (false, 0);
        };
        let mut client = self.client.clone();
        let attempt = async move {
            let resp = client.call(req).await.map_err(|_| Raised::Error)?;
            if is_failure(&Outcome::status(resp.status().as_u16())) {
                return Err(Raised::Status);
            }
            let ok = resp.status().is_success() && resp.into_body().collect().await.is_ok();
            Ok::<bool, Raised>(ok)
        };
        match self.breaker.call(attempt).await {
            Ok(ok) => (ok, 1),
            Err(failsafe::Error::Inner(Raised::Status | Raised::Error)) => (false, 1),
            Err(failsafe::Error::Rejected) => (false, 0),
        }
    }
}
