//! One request, from arrival to answer: count it, draw its fate, carry the fate out.
//!
//! The fate comes from [`herd_scenario::Upstream::fate`], and a rate limit's verdict, taken
//! first, from [`herd_scenario::rate_limit::Limiter`]; nothing here decides a fault. A
//! rejected request is answered at once and draws no fate; a delayed one waits in its
//! handler (no worker), then meets its fate at the end of the delay, unless its client
//! left and the handler was dropped meanwhile.
//! A reset cannot be an HTTP response. On HTTP/1.1 the handler asks its connection task to
//! send the RST (through the connection's [`Reset`]) and then never completes; the
//! connection task drops it along with the connection. On HTTP/2 a reset is the request's
//! own stream's: the handler returns [`ResetStream`], and hyper answers a service error
//! with `RST_STREAM` (`INTERNAL_ERROR`) on that stream, leaving the connection and its
//! other streams alone. A gRPC call (an HTTP/2 request with `content-type:
//! application/grpc` to a `protocol = "grpc"` upstream) is answered in gRPC statuses
//! ([`crate::grpc`]); the fate, the counts and the capacity are the same.
//!
//! Work runs inline (see [`Job`]): a request spawns no task (on HTTP/2, hyper gives each
//! stream a task of its own), and a zero service time on a free worker answers without
//! touching a timer.

use crate::capacity::Admission;
use crate::conn::Reset;
use crate::forward::Forward;
use crate::job::{detached, Job};
use crate::lock;
use crate::metrics;
use crate::options::Denied;
use crate::reply::{full, text, Reply};
use crate::shared::{nanos, Shared};
use bytes::Bytes;
use herd_scenario::rate_limit::Verdict;
use herd_scenario::{Fate, HoldAnswer, ServerEvent, Shed, TargetOutcome, REQUEST_ID_HEADER};
use http::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE, WWW_AUTHENTICATE};
use http::{Method, Request, Response, StatusCode, Version};
use hyper::body::Incoming;
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

/// Prefix of the control endpoints, which are neither counted nor faulted.
const CONTROL: &str = "/__herd/";

/// Answers one request from `peer` on a connection whose reset trigger is `reset`.
pub(crate) async fn handle(
    shared: Arc<Shared>,
    reset: Arc<Reset>,
    peer: Option<IpAddr>,
    req: Request<Incoming>,
) -> Result<Reply, ResetStream> {
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
    let h2 = req.version() == Version::HTTP_2;
    // A gRPC call: its attempt number (1 for the first), which its answer carries back.
    let grpc = (shared.config.protocol.is_grpc() && crate::grpc::is_call(&req)).then(|| {
        let previous = crate::grpc::previous_attempts(&req);
        shared.stats.grpc_attempt(previous);
        previous.saturating_add(1)
    });
    if let Some(attempt) = crate::amz::declared_attempt(&req) {
        shared.stats.aws_attempt(attempt);
    }
    let mut t = shared.now();
    // Whether `Received` is counted already.
    let mut counted = false;
    if let Some(limiter) = &shared.limiter {
        let verdict = lock(limiter).check(0, nanos(t));
        match verdict {
            Verdict::Admit => {}
            Verdict::Reject => {
                shared.answered_at_once(t, ServerEvent::Limited, id, false);
                return Ok(shared.limited(grpc));
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
            shared.unavailable(grpc)
        }
        // Work that takes no time on a free worker: served and done in one instant.
        Fate::Work { service, .. }
            if service.is_zero()
                && shared.forward.is_none()
                && shared.onward.is_none()
                && shared.capacity.serve_at_once() =>
        {
            shared.answered_at_once(t, ServerEvent::Ok, id, counted);
            shared.ok(grpc)
        }
        Fate::Reset { after } => {
            received();
            crate::precise::sleep(after).await;
            shared.record(ServerEvent::Reset, id);
            return reset_request(&reset, h2).await;
        }
        Fate::Hold { until, answer } => {
            received();
            tokio::time::sleep_until(shared.epoch + until).await;
            // Counted at the window's end exactly, so every held request lands together.
            match answer {
                HoldAnswer::Reset => {
                    shared.stats.record(until, ServerEvent::Reset, id);
                    return reset_request(&reset, h2).await;
                }
                HoldAnswer::Status503 => {
                    shared.stats.record(until, ServerEvent::Error503, id);
                    shared.unavailable(grpc)
                }
            }
        }
        Fate::Work { service, stalled } => {
            received();
            match shared.capacity.admit() {
                Admission::Shed => {
                    shared.record(ServerEvent::Shed, id);
                    match shared.config.shed {
                        Shed::Reset => return reset_request(&reset, h2).await,
                        Shed::Status503 => shared.shed(grpc),
                    }
                }
                admitted => {
                    if let Some(onward) = &shared.onward {
                        return Ok(
                            crate::onward::serve(&shared, onward, admitted, service, id).await
                        );
                    }
                    if let (Some(forward), Some(req)) = (&shared.forward, req) {
                        let stall = if stalled { service } else { Duration::ZERO };
                        return Ok(proxied(&shared, forward, admitted, stall, req, peer, id).await);
                    }
                    if !Job::new(admitted, service, &shared.closing).run().await {
                        // Shutting down: the connection is about to be dropped unanswered, as
                        // every other open one is. Answering here raced with that drop, so a
                        // client sometimes got a 503 the server never counted.
                        return std::future::pending().await;
                    }
                    shared.record(ServerEvent::Ok, id);
                    shared.ok(grpc)
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

/// A reset on HTTP/2: hyper answers this service error with `RST_STREAM`
/// (`INTERNAL_ERROR`) on the request's stream.
#[derive(Debug)]
pub(crate) struct ResetStream;

impl std::fmt::Display for ResetStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("reset (injected)")
    }
}

impl std::error::Error for ResetStream {}

/// Resets the request: on HTTP/2 its stream ([`ResetStream`]); on HTTP/1.1 its connection,
/// by asking the connection task for an RST, and never completes (the task drops this
/// future).
async fn reset_request(trigger: &Reset, h2: bool) -> Result<Reply, ResetStream> {
    if h2 {
        return Err(ResetStream);
    }
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

/// Proxy mode: the request drew no fault and was admitted; after an injected stall, the
/// target answers it (see [`crate::forward`]).
async fn proxied(
    shared: &Arc<Shared>,
    forward: &Result<Arc<Forward>, Arc<str>>,
    admitted: Admission,
    stall: Duration,
    req: Request<Incoming>,
    peer: Option<IpAddr>,
    id: Option<u64>,
) -> Reply {
    let forward = match forward {
        Ok(f) => f.clone(),
        Err(why) => {
            shared.record(ServerEvent::TargetFailed, id);
            return text(
                StatusCode::BAD_GATEWAY,
                &format!(
                    "herd: {why}
"
                ),
            );
        }
    };
    let stats = shared.stats.clone();
    let pending = stats.start_forwarding();
    let job = move || async move {
        let _pending = pending;
        tokio::time::sleep(stall).await;
        forward.send(stats, req, peer).await
    };
    match detached(admitted, &shared.closing, job).await {
        Some((reply, outcome)) => {
            let ok = matches!(outcome, TargetOutcome::Answered(200..=299));
            let ev = if ok {
                ServerEvent::Ok
            } else {
                ServerEvent::TargetFailed
            };
            shared.record(ev, id);
            reply
        }
        // Shutting down: dropped unanswered, like every other open connection.
        None => std::future::pending().await,
    }
}
