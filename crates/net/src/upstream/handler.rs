//! One request, from arrival to answer: count it, draw its fate, carry the fate out.
//!
//! The fate comes from [`herd_scenario::Upstream::fate`], and a rate limit's verdict, taken
//! first, from [`herd_scenario::rate_limit::Limiter`]; nothing here decides a fault. A
//! rejected request is answered at once and draws no fate; a delayed one waits in its
//! handler (no worker), then meets its fate at the end of the delay, unless its client
//! left and the handler was dropped meanwhile.
//! A reset cannot be an HTTP response, so the handler asks its connection task to send the
//! RST (through the connection's [`Reset`]) and then never completes; the connection task
//! drops it along with the connection. Work runs inline (see [`Job`]): a request spawns no
//! task, and a zero service time on a free worker answers without touching a timer.

use super::capacity::{Admission, Capacity};
use super::conn::Reset;
use super::forward::{self, Forward};
use super::job::Job;
use super::metrics;
use super::options::{Admin, Denied};
use super::{lock, Stats};
use bytes::Bytes;
use herd_scenario::rate_limit::{Limiter, Verdict};
use herd_scenario::{Fate, HoldAnswer, ServerEvent, Shed, REQUEST_ID_HEADER};
use http::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER, WWW_AUTHENTICATE};
use http::{Method, Request, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use rand_pcg::Pcg64Mcg;
use std::convert::Infallible;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::watch;
use tokio::time::Instant;

/// The response type of every request: herd's own answers, or a target's streamed.
pub(crate) type Reply = Response<BoxBody<Bytes, hyper::Error>>;

/// Prefix of the control endpoints, which are neither counted nor faulted.
const CONTROL: &str = "/__herd/";

/// What every connection of one server shares.
#[derive(Debug)]
pub(crate) struct Shared {
    /// The fault and capacity configuration.
    config: herd_scenario::Upstream,
    /// `config`'s service-time distribution, built once rather than at every request.
    service: herd_scenario::fault::ServiceSampler,
    /// t = 0.
    epoch: Instant,
    /// The one fault RNG: fates are drawn in arrival order from a single seeded stream.
    rng: Mutex<Pcg64Mcg>,
    /// The rate limit in front of everything, if configured.
    limiter: Option<Mutex<Limiter>>,
    /// Counts and gauges.
    pub(super) stats: Arc<Stats>,
    /// Workers and their queue.
    capacity: Arc<Capacity>,
    /// Resolves (with an error) when the server shuts down; detached work stops then.
    pub(super) closing: watch::Receiver<()>,
    /// Proxy mode: the way to the target, or why there is none (every request that would
    /// be forwarded is then answered 502 with the reason).
    forward: Option<Result<Arc<Forward>, Arc<str>>>,
    /// Who may read the control endpoints.
    admin: Admin,
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
        }
    }

    /// Time since the epoch.
    fn now(&self) -> Duration {
        Instant::now().saturating_duration_since(self.epoch)
    }

    pub(super) fn record(&self, ev: ServerEvent, id: Option<u64>) {
        self.stats.record(self.now(), ev, id);
    }

    /// A 503 as the fault rules mean it, with `Retry-After` when configured.
    fn unavailable(&self) -> Reply {
        let mut r = text_static(StatusCode::SERVICE_UNAVAILABLE, "unavailable (injected)\n");
        if self.config.retry_after_s > 0 {
            r.headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from(self.config.retry_after_s));
        }
        r
    }

    /// A rejection by the rate limit: its status, with its `Retry-After` when configured.
    fn limited(&self) -> Reply {
        let Some(rule) = &self.config.rate_limit else {
            return text_static(StatusCode::SERVICE_UNAVAILABLE, "rate limited\n");
        };
        let status = StatusCode::from_u16(rule.status).unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
        let mut r = text_static(status, "rate limited\n");
        if rule.retry_after_s > 0 {
            r.headers_mut()
                .insert(RETRY_AFTER, HeaderValue::from(rule.retry_after_s));
        }
        r
    }

    /// Counts `ev` at `t` for a request answered in the same instant it reached the fault
    /// rules: with its arrival, under one lock, unless the arrival was counted already (a
    /// request the rate limit delayed).
    fn answered_at_once(&self, t: Duration, ev: ServerEvent, id: Option<u64>, counted: bool) {
        if counted {
            self.stats.record(t, ev, id);
        } else {
            self.stats.record_answered_at_once(t, ev, id);
        }
    }
}

/// Nanoseconds in `d`, saturating (the limiter's clock).
fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// Answers one request from `peer` on a connection whose reset trigger is `reset`.
pub(crate) async fn handle(
    shared: Arc<Shared>,
    reset: Arc<Reset>,
    peer: Option<IpAddr>,
    req: Request<Incoming>,
) -> Result<Reply, Infallible> {
    let path = req.uri().path();
    if path.starts_with(CONTROL) || path == metrics::PATH {
        let authorization = req.headers().get(AUTHORIZATION).map(HeaderValue::as_bytes);
        return Ok(match shared.admin.check(authorization) {
            Ok(()) if path == metrics::PATH => metrics_reply(&shared, &req),
            Ok(()) => control(&shared, &req),
            Err(denied) => refused(denied),
        });
    }
    let id = request_id(&req);
    let mut t = shared.now();
    // Whether `Received` is counted already.
    let mut counted = false;
    if let Some(limiter) = &shared.limiter {
        let verdict = lock(limiter).check(0, nanos(t));
        match verdict {
            Verdict::Admit => {}
            Verdict::Reject => {
                shared.answered_at_once(t, ServerEvent::Limited, id, false);
                return Ok(shared.limited());
            }
            Verdict::Delay(d) => {
                shared.stats.record(t, ServerEvent::Received, id);
                counted = true;
                // The fault rules see the request at the end of its delay, to the
                // nanosecond, as the simulator does.
                t = t.saturating_add(Duration::from_nanos(d));
                crate::precise::sleep_until(shared.epoch + t).await;
            }
        }
    }
    let fate = shared
        .config
        .fate_with(&shared.service, t, &mut *lock(&shared.rng));
    // Kept only for a target; otherwise hyper drains any body it can to keep the
    // connection alive.
    let req = match (&fate, &shared.forward) {
        (Fate::Work { .. }, Some(_)) => Some(req),
        _ => None,
    };
    // Counted before anything is waited for; an answer given in the same instant is
    // counted with the arrival, under one lock.
    let received = || {
        if !counted {
            shared.stats.record(t, ServerEvent::Received, id)
        }
    };
    Ok(match fate {
        Fate::Error503 => {
            shared.answered_at_once(t, ServerEvent::Error503, id, counted);
            shared.unavailable()
        }
        // Work that takes no time on a free worker: served and done in one instant.
        Fate::Work { service, .. }
            if service.is_zero() && shared.forward.is_none() && shared.capacity.serve_at_once() =>
        {
            shared.answered_at_once(t, ServerEvent::Ok, id, counted);
            text_static(StatusCode::OK, "ok\n")
        }
        Fate::Reset { after } => {
            received();
            crate::precise::sleep(after).await;
            shared.record(ServerEvent::Reset, id);
            return reset_connection(&reset).await;
        }
        Fate::Hold { until, answer } => {
            received();
            tokio::time::sleep_until(shared.epoch + until).await;
            // Counted at the window's end exactly, so every held request lands together.
            match answer {
                HoldAnswer::Reset => {
                    shared.stats.record(until, ServerEvent::Reset, id);
                    return reset_connection(&reset).await;
                }
                HoldAnswer::Status503 => {
                    shared.stats.record(until, ServerEvent::Error503, id);
                    shared.unavailable()
                }
            }
        }
        Fate::Work { service, stalled } => {
            received();
            match shared.capacity.admit() {
                Admission::Shed => {
                    shared.record(ServerEvent::Shed, id);
                    match shared.config.shed {
                        Shed::Reset => return reset_connection(&reset).await,
                        Shed::Status503 => text(StatusCode::SERVICE_UNAVAILABLE, "shed\n"),
                    }
                }
                admitted => {
                    if let (Some(forward), Some(req)) = (&shared.forward, req) {
                        let stall = if stalled { service } else { Duration::ZERO };
                        return Ok(forward::proxied(
                            &shared, forward, admitted, stall, req, peer, id,
                        )
                        .await);
                    }
                    if !Job::new(admitted, service, &shared.closing).run().await {
                        // Shutting down: the connection is about to be dropped unanswered, as
                        // every other open one is. Answering here raced with that drop, so a
                        // client sometimes got a 503 the server never counted.
                        return std::future::pending().await;
                    }
                    shared.record(ServerEvent::Ok, id);
                    text_static(StatusCode::OK, "ok\n")
                }
            }
        }
    })
}

/// The logical request's id, from [`REQUEST_ID_HEADER`] (absent or unreadable: none).
fn request_id<B>(req: &Request<B>) -> Option<u64> {
    req.headers()
        .get(REQUEST_ID_HEADER)?
        .to_str()
        .ok()?
        .parse()
        .ok()
}

/// Asks the connection task for an RST; never completes (the task drops this future).
async fn reset_connection(trigger: &Reset) -> Result<Reply, Infallible> {
    trigger.fire();
    std::future::pending().await
}

/// A control request [`Admin`] turned away: off looks like no endpoint at all.
fn refused(denied: Denied) -> Reply {
    match denied {
        Denied::Off => text(StatusCode::NOT_FOUND, "not found\n"),
        Denied::Unauthorized => {
            let mut r = text(StatusCode::UNAUTHORIZED, "a bearer token is required\n");
            r.headers_mut()
                .insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            r
        }
    }
}

/// The `/__herd/` endpoints.
fn control<B>(shared: &Shared, req: &Request<B>) -> Reply {
    match (req.method(), req.uri().path()) {
        (&Method::GET, "/__herd/stats") => match serde_json::to_vec(&shared.stats.report()) {
            Ok(body) => {
                let mut r = Response::new(full(Bytes::from(body)));
                r.headers_mut()
                    .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
                r
            }
            Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, &format!("{e}\n")),
        },
        (_, "/__herd/stats") => text(StatusCode::METHOD_NOT_ALLOWED, "GET only\n"),
        _ => text(StatusCode::NOT_FOUND, "unknown control endpoint\n"),
    }
}

/// `/metrics`, which like the control endpoints is neither counted nor faulted.
fn metrics_reply<B>(shared: &Shared, req: &Request<B>) -> Reply {
    if req.method() != Method::GET {
        return text(StatusCode::METHOD_NOT_ALLOWED, "GET only\n");
    }
    let mut r = Response::new(full(Bytes::from(metrics::render(&shared.stats))));
    r.headers_mut().insert(
        CONTENT_TYPE,
        HeaderValue::from_static(metrics::CONTENT_TYPE),
    );
    r
}

/// A plain-text answer from herd itself.
pub(crate) fn text(status: StatusCode, body: &str) -> Reply {
    text_bytes(status, Bytes::copy_from_slice(body.as_bytes()))
}

/// [`text`] with a body fixed at compile time, which needs no copy.
fn text_static(status: StatusCode, body: &'static str) -> Reply {
    text_bytes(status, Bytes::from_static(body.as_bytes()))
}

fn text_bytes(status: StatusCode, body: Bytes) -> Reply {
    let mut r = Response::new(full(body));
    *r.status_mut() = status;
    r.headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    r
}

/// A whole body, in the reply's body type.
fn full(b: Bytes) -> BoxBody<Bytes, hyper::Error> {
    Full::new(b).map_err(|never| match never {}).boxed()
}
