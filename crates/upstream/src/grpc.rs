//! gRPC over h2c: unary calls to any service and method, with raw bytes (no protobuf, no
//! protoc), answered by the scenario's fates in gRPC's words ([`herd_scenario::protocol`]).
//!
//! A call is an HTTP/2 `POST /Service/Method` with `content-type: application/grpc` and a
//! body of length-prefixed messages (a flag byte, a 4-byte big-endian length, the bytes).
//! The upstream does not read the message: the fate does not depend on it. A success is
//! 200 with one empty message and the trailer `grpc-status: 0`; every error is
//! *Trailers-Only*, a single HEADERS frame that ends the stream, because a gRPC client
//! commits a call (and stops retrying it) once it has response headers. A reset is the
//! stream's own `RST_STREAM` (see [`crate::handler`]), not the connection's.
//!
//! A6 clients send `grpc-previous-rpc-attempts` on every retry and hedge, so the upstream
//! counts attempts by their number without the client's help ([`crate::Stats`]), and
//! tells the client which attempt it answered in the `x-herd-attempt` trailer: gRPC
//! libraries do not expose their attempt count, but they do return the trailers of the
//! answer that ended a call, which is how herd's adapters report `attempts`.

use crate::reply::{full, Reply};
use bytes::Bytes;
use herd_scenario::GrpcStatus;
use http::header::{HeaderMap, HeaderValue, CONTENT_TYPE};
use http::{Request, Response};
use http_body_util::BodyExt;

/// `content-type` of every gRPC answer.
fn grpc_type() -> HeaderValue {
    HeaderValue::from_static("application/grpc")
}

/// One empty message: not compressed, length 0.
const EMPTY_MESSAGE: &[u8] = &[0, 0, 0, 0, 0];

/// The header a retry or hedge carries: how many attempts went before it.
pub(crate) const PREVIOUS_ATTEMPTS: &str = "grpc-previous-rpc-attempts";

/// The trailer that tells a client which attempt (1 for the first) an answer is to.
pub const ATTEMPT_TRAILER: &str = "x-herd-attempt";

/// Whether `req` is a gRPC call (`content-type: application/grpc`, with or without a
/// `+proto` / `+json` suffix).
pub(crate) fn is_call<B>(req: &Request<B>) -> bool {
    req.headers()
        .get(CONTENT_TYPE)
        .is_some_and(|v| v.as_bytes().starts_with(b"application/grpc"))
}

/// Attempts before this one, from `grpc-previous-rpc-attempts` (absent or unreadable: 0,
/// a first attempt).
pub(crate) fn previous_attempts<B>(req: &Request<B>) -> u64 {
    req.headers()
        .get(PREVIOUS_ATTEMPTS)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0)
}

/// A success to attempt `attempt` (1 for the first): headers, one empty message, then
/// the trailers `grpc-status: 0` and [`ATTEMPT_TRAILER`].
pub(crate) fn ok(attempt: u64) -> Reply {
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from_static("0"));
    trailers.insert(ATTEMPT_TRAILER, HeaderValue::from(attempt));
    let body = full(Bytes::from_static(EMPTY_MESSAGE))
        .with_trailers(std::future::ready(Some(Ok(trailers))))
        .boxed();
    let mut r = Response::new(body);
    r.headers_mut().insert(CONTENT_TYPE, grpc_type());
    r
}

/// An error to attempt `attempt`, Trailers-Only: 200 and `grpc-status`, `grpc-message`,
/// [`ATTEMPT_TRAILER`] and, when the scenario sets a `Retry-After`,
/// `grpc-retry-pushback-ms`, all in the one HEADERS frame that ends the stream (the body
/// is empty).
pub(crate) fn error(status: GrpcStatus, pushback_ms: Option<u64>, attempt: u64) -> Reply {
    let mut r = Response::new(full(Bytes::new()));
    let h = r.headers_mut();
    h.insert(CONTENT_TYPE, grpc_type());
    h.insert("grpc-status", HeaderValue::from(u16::from(status.code)));
    h.insert("grpc-message", HeaderValue::from_static(status.message));
    h.insert(ATTEMPT_TRAILER, HeaderValue::from(attempt));
    if let Some(ms) = pushback_ms {
        h.insert("grpc-retry-pushback-ms", HeaderValue::from(ms));
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    #[tokio::test]
    async fn a_success_is_one_empty_message_then_status_0() {
        let mut body = ok(2).into_body();
        assert!(!hyper::body::Body::is_end_stream(&body));
        let data = body.frame().await.unwrap().unwrap().into_data().unwrap();
        assert_eq!(&data[..], EMPTY_MESSAGE);
        let trailers = body
            .frame()
            .await
            .unwrap()
            .unwrap()
            .into_trailers()
            .unwrap();
        assert_eq!(trailers["grpc-status"], "0");
        assert_eq!(trailers[ATTEMPT_TRAILER], "2");
        assert!(body.frame().await.is_none());
    }

    #[test]
    fn an_error_is_trailers_only() {
        let r = error(GrpcStatus::UNAVAILABLE, Some(2000), 1);
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()["grpc-status"], "14");
        assert_eq!(r.headers()["grpc-retry-pushback-ms"], "2000");
        assert_eq!(r.headers()[CONTENT_TYPE], "application/grpc");
        assert_eq!(r.headers()[ATTEMPT_TRAILER], "1");
        assert!(hyper::body::Body::is_end_stream(r.body()));
        let r = error(GrpcStatus::LIMITED, None, 3);
        assert_eq!(r.headers()["grpc-status"], "8");
        assert!(r.headers().get("grpc-retry-pushback-ms").is_none());
    }

    #[test]
    fn reads_the_attempt_number() {
        let req = |v: Option<&str>| {
            let mut b = Request::builder().header(CONTENT_TYPE, "application/grpc+proto");
            if let Some(v) = v {
                b = b.header(PREVIOUS_ATTEMPTS, v);
            }
            b.body(()).unwrap()
        };
        assert!(is_call(&req(None)));
        assert_eq!(previous_attempts(&req(None)), 0);
        assert_eq!(previous_attempts(&req(Some("3"))), 3);
        assert_eq!(previous_attempts(&req(Some("x"))), 0);
    }
}
