//! What every connection of one server shares: the fault configuration and its one RNG,
//! the counts, the workers, the way to a target, and who may read the control endpoints.

use crate::capacity::Capacity;
use crate::forward::Forward;
use crate::onward::Onward;
use crate::options::Admin;
use crate::reply::{text_static, worded, Reply};
use crate::Stats;
use herd_scenario::protocol::pushback_ms;
use herd_scenario::rate_limit::Limiter;
use herd_scenario::{GrpcStatus, ServerEvent};
use http::header::{HeaderValue, RETRY_AFTER};
use http::StatusCode;
use rand_pcg::Pcg64Mcg;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// What every connection of one server shares.
#[derive(Debug)]
pub(crate) struct Shared {
    /// The fault and capacity configuration.
    pub(crate) config: herd_scenario::Upstream,
    /// `config`'s service-time distribution, built once rather than at every request.
    pub(crate) service: herd_scenario::fault::ServiceSampler,
    /// t = 0.
    pub(crate) epoch: Instant,
    /// The one fault RNG: fates are drawn in arrival order from a single seeded stream.
    pub(crate) rng: Mutex<Pcg64Mcg>,
    /// The rate limit in front of everything, if configured.
    pub(crate) limiter: Option<Mutex<Limiter>>,
    /// Counts and gauges.
    pub(crate) stats: Arc<Stats>,
    /// Workers and their queue.
    pub(crate) capacity: Arc<Capacity>,
    /// Resolves (with an error) when the server shuts down; detached work stops then.
    pub(crate) closing: watch::Receiver<()>,
    /// Proxy mode: the way to the target, or why there is none (every request that would
    /// be forwarded is then answered 502 with the reason).
    pub(crate) forward: Option<Result<Arc<Forward>, Arc<str>>>,
    /// Who may read the control endpoints.
    pub(crate) admin: Admin,
    /// A hop of a call graph: where admitted work goes next (see [`crate::onward`]).
    pub(crate) onward: Option<Onward>,
}

impl Shared {
    pub(crate) fn new(
        config: herd_scenario::Upstream,
        seed: u64,
        epoch: Instant,
        stats: Arc<Stats>,
        closing: watch::Receiver<()>,
        admin: Admin,
    ) -> Self {
        let capacity = Capacity::new(config.workers, config.queue_limit, stats.clone());
        let forward = config.target.as_ref().map(|t| {
            stats.enable_target();
            Forward::new(t).map(Arc::new).map_err(|e| {
                tracing::error!("{}", e.0);
                Arc::from(e.0)
            })
        });
        Shared {
            service: config.service_time.sampler(),
            limiter: config
                .rate_limit
                .as_ref()
                .map(|r| Mutex::new(Limiter::new(r))),
            config,
            epoch,
            rng: Mutex::new(herd_scenario::Seeds(seed).faults()),
            stats,
            capacity,
            closing,
            forward,
            admin,
            onward: None,
        }
    }

    /// The server as a hop of a call graph when `onward` is set: its fates come from the
    /// hop's own stream of scenario seed `seed` ([`herd_scenario::Seeds::hop_faults`]), as
    /// in the simulator.
    pub(crate) fn onward(mut self, onward: Option<Onward>, seed: u64) -> Self {
        if let Some(o) = &onward {
            self.rng = Mutex::new(herd_scenario::Seeds(seed).hop_faults(o.hop));
        }
        self.onward = onward;
        self
    }

    /// Time since the epoch.
    pub(crate) fn now(&self) -> Duration {
        Instant::now().saturating_duration_since(self.epoch)
    }

    pub(crate) fn record(&self, ev: ServerEvent, id: Option<u64>) {
        self.stats.record(self.now(), ev, id);
    }

    /// A 503 as the fault rules mean it, with `Retry-After` when configured; to a gRPC
    /// call (`grpc`: its attempt number), UNAVAILABLE with the same wait as `grpc-retry-pushback-ms`.
    pub(crate) fn unavailable(&self, grpc: Option<u64>) -> Reply {
        if let Some(attempt) = grpc {
            let pushback = pushback_ms(self.config.retry_after_s);
            return crate::grpc::error(GrpcStatus::UNAVAILABLE, pushback, attempt);
        }
        let mut r = match self.config.dialect.unavailable() {
            Some(w) => worded(w),
            None => text_static(StatusCode::SERVICE_UNAVAILABLE, "unavailable (injected)\n"),
        };
        if self.config.retry_after_s > 0 {
            r.headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from(self.config.retry_after_s));
        }
        r
    }

    /// Turned away over capacity with `shed = "503"`: to a gRPC call, UNAVAILABLE.
    pub(crate) fn shed(&self, grpc: Option<u64>) -> Reply {
        if let Some(attempt) = grpc {
            return crate::grpc::error(GrpcStatus::SHED, None, attempt);
        }
        text_static(StatusCode::SERVICE_UNAVAILABLE, "shed\n")
    }

    /// A rejection by the rate limit: its status, with its `Retry-After` when configured.
    pub(crate) fn limited(&self, grpc: Option<u64>) -> Reply {
        if let Some(attempt) = grpc {
            let pushback =
                (self.config.rate_limit.as_ref()).and_then(|r| pushback_ms(r.retry_after_s));
            return crate::grpc::error(GrpcStatus::LIMITED, pushback, attempt);
        }
        let Some(rule) = &self.config.rate_limit else {
            return text_static(StatusCode::SERVICE_UNAVAILABLE, "rate limited\n");
        };
        let status = StatusCode::from_u16(rule.status).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
        let mut r = match self.config.dialect.limited() {
            Some(w) => worded(w),
            None => text_static(status, "rate limited\n"),
        };
        if rule.retry_after_s > 0 {
            r.headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from(rule.retry_after_s));
        }
        r
    }

    /// A success, in the upstream's dialect (to a gRPC call, `grpc-status: 0`).
    pub(crate) fn ok(&self, grpc: Option<u64>) -> Reply {
        if let Some(attempt) = grpc {
            return crate::grpc::ok(attempt);
        }
        match self.config.dialect.ok() {
            Some(w) => worded(w),
            None => text_static(StatusCode::OK, "ok\n"),
        }
    }

    /// Counts `ev` at `t` for a request answered in the same instant it reached the fault
    /// rules: with its arrival, under one lock, unless the arrival was counted already (a
    /// request the rate limit delayed).
    pub(crate) fn answered_at_once(
        &self,
        t: Duration,
        ev: ServerEvent,
        id: Option<u64>,
        counted: bool,
    ) {
        if counted {
            self.stats.record(t, ev, id);
        } else {
            self.stats.record_answered_at_once(t, ev, id);
        }
    }
}

/// Nanoseconds in `d`, saturating (the limiter's clock).
pub(crate) fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}
